/* cb_exceptions.c: the exception notifications (docs/design-notes.md#exceptions). Each records its
 * event, then moves the thread's exception state machine (exceptions.h). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "calls.h"
#include "exceptions.h"

/* ---- exceptions ---- */

/* A step into a function (or a catcher found in one) and a step out: recorded,
 * then the state machine moves. */
#define STEP_IN(name)                                                            \
    HRESULT cb_##name(ICorProfilerCallback *self, FunctionID id) {               \
        ACTIVE();                                                                \
        REC(name, FUNCTION(id, 1));                                              \
        exceptions_step(DNP_EV_##name, id, 0);                                   \
        return S_OK;                                                             \
    }
#define STEP_OUT(name)                                                           \
    HRESULT cb_##name(ICorProfilerCallback *self) {                              \
        ACTIVE();                                                                \
        REC0(name);                                                              \
        exceptions_step(DNP_EV_##name, 0, 0);                                    \
        return S_OK;                                                             \
    }
/* The OS handler's: recorded only (their argument is unused by the runtime). */
#define OS_HANDLER(name)                                                         \
    HRESULT cb_##name(ICorProfilerCallback *self, UINT_PTR unused) {             \
        ACTIVE();                                                                \
        (void)unused;                                                            \
        REC0(name);                                                              \
        return S_OK;                                                             \
    }

HRESULT cb_ExceptionThrown(ICorProfilerCallback *self, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionThrown, object, cls, name);
    exceptions_thrown(object);
    return S_OK;
}

STEP_IN(ExceptionSearchFunctionEnter)
STEP_OUT(ExceptionSearchFunctionLeave)
STEP_IN(ExceptionSearchFilterEnter)
STEP_OUT(ExceptionSearchFilterLeave)
STEP_IN(ExceptionSearchCatcherFound)
OS_HANDLER(ExceptionOSHandlerEnter)
OS_HANDLER(ExceptionOSHandlerLeave)
STEP_IN(ExceptionUnwindFunctionEnter)

HRESULT cb_ExceptionUnwindFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionUnwindFunctionLeave);
    /* .NET 9+ also sends one that leaves no frame, when a first pass ends with
     * no managed catcher (exc_machine.h): the call stack is left alone then. */
    if (exceptions_step(DNP_EV_ExceptionUnwindFunctionLeave, 0, 0))
        calls_unwind_leave();
    return S_OK;
}

STEP_IN(ExceptionUnwindFinallyEnter)
STEP_OUT(ExceptionUnwindFinallyLeave)

HRESULT cb_ExceptionCatcherEnter(ICorProfilerCallback *self, FunctionID id, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionCatcherEnter, FUNCTION(id, 1), object, cls, name);
    exceptions_step(DNP_EV_ExceptionCatcherEnter, id, object);
    return S_OK;
}

STEP_OUT(ExceptionCatcherLeave)
CB_REC0(ExceptionCLRCatcherFound)
CB_REC0(ExceptionCLRCatcherExecute)

