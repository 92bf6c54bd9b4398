/* cb_exceptions.c: the exception notifications (docs/design-notes.md#exceptions). Each records its
 * event, then moves the thread's exception state machine (exceptions.h). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "calls.h"
#include "exceptions.h"

/* ---- exceptions ---- */

HRESULT cb_ExceptionThrown(ICorProfilerCallback *self, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionThrown, object, cls, name);
    exceptions_thrown(object);
    return S_OK;
}

HRESULT cb_ExceptionSearchFunctionEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchFunctionEnter, FUNCTION(id, 1));
    exceptions_step(DNP_EV_ExceptionSearchFunctionEnter, id, 0);
    return S_OK;
}
HRESULT cb_ExceptionSearchFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionSearchFunctionLeave);
    exceptions_step(DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    return S_OK;
}
HRESULT cb_ExceptionSearchFilterEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchFilterEnter, FUNCTION(id, 1));
    exceptions_step(DNP_EV_ExceptionSearchFilterEnter, id, 0);
    return S_OK;
}
HRESULT cb_ExceptionSearchFilterLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionSearchFilterLeave);
    exceptions_step(DNP_EV_ExceptionSearchFilterLeave, 0, 0);
    return S_OK;
}
HRESULT cb_ExceptionSearchCatcherFound(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchCatcherFound, FUNCTION(id, 1));
    exceptions_step(DNP_EV_ExceptionSearchCatcherFound, id, 0);
    return S_OK;
}
HRESULT cb_ExceptionOSHandlerEnter(ICorProfilerCallback *self, UINT_PTR unused) {
    ACTIVE();
    (void)unused;
    REC0(ExceptionOSHandlerEnter);
    return S_OK;
}
HRESULT cb_ExceptionOSHandlerLeave(ICorProfilerCallback *self, UINT_PTR unused) {
    ACTIVE();
    (void)unused;
    REC0(ExceptionOSHandlerLeave);
    return S_OK;
}
HRESULT cb_ExceptionUnwindFunctionEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionUnwindFunctionEnter, FUNCTION(id, 1));
    exceptions_step(DNP_EV_ExceptionUnwindFunctionEnter, id, 0);
    return S_OK;
}
HRESULT cb_ExceptionUnwindFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionUnwindFunctionLeave);
    /* .NET 9+ also sends one that leaves no frame, when a first pass ends with
     * no managed catcher (exc_machine.h): the call stack is left alone then. */
    if (exceptions_step(DNP_EV_ExceptionUnwindFunctionLeave, 0, 0))
        calls_unwind_leave();
    return S_OK;
}
HRESULT cb_ExceptionUnwindFinallyEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionUnwindFinallyEnter, FUNCTION(id, 1));
    exceptions_step(DNP_EV_ExceptionUnwindFinallyEnter, id, 0);
    return S_OK;
}
HRESULT cb_ExceptionUnwindFinallyLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionUnwindFinallyLeave);
    exceptions_step(DNP_EV_ExceptionUnwindFinallyLeave, 0, 0);
    return S_OK;
}
HRESULT cb_ExceptionCatcherEnter(ICorProfilerCallback *self, FunctionID id, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionCatcherEnter, FUNCTION(id, 1), object, cls, name);
    exceptions_step(DNP_EV_ExceptionCatcherEnter, id, object);
    return S_OK;
}
HRESULT cb_ExceptionCatcherLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCatcherLeave);
    exceptions_step(DNP_EV_ExceptionCatcherLeave, 0, 0);
    return S_OK;
}
HRESULT cb_ExceptionCLRCatcherFound(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCLRCatcherFound);
    return S_OK;
}
HRESULT cb_ExceptionCLRCatcherExecute(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCLRCatcherExecute);
    return S_OK;
}

