/* cb_exceptions.c: the exception notifications (seed 002). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "calls.h"

/* ---- exceptions ---- */

HRESULT cb_ExceptionThrown(ICorProfilerCallback *self, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionThrown, object, cls, name);
    return S_OK;
}

HRESULT cb_ExceptionSearchFunctionEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchFunctionEnter, FUNCTION(id, 1));
    return S_OK;
}
HRESULT cb_ExceptionSearchFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionSearchFunctionLeave);
    return S_OK;
}
HRESULT cb_ExceptionSearchFilterEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchFilterEnter, FUNCTION(id, 1));
    return S_OK;
}
HRESULT cb_ExceptionSearchFilterLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionSearchFilterLeave);
    return S_OK;
}
HRESULT cb_ExceptionSearchCatcherFound(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchCatcherFound, FUNCTION(id, 1));
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
    return S_OK;
}
HRESULT cb_ExceptionUnwindFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    calls_unwind_leave();
    REC0(ExceptionUnwindFunctionLeave);
    return S_OK;
}
HRESULT cb_ExceptionUnwindFinallyEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionUnwindFinallyEnter, FUNCTION(id, 1));
    return S_OK;
}
HRESULT cb_ExceptionUnwindFinallyLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionUnwindFinallyLeave);
    return S_OK;
}
HRESULT cb_ExceptionCatcherEnter(ICorProfilerCallback *self, FunctionID id, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionCatcherEnter, FUNCTION(id, 1), object, cls, name);
    return S_OK;
}
HRESULT cb_ExceptionCatcherLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCatcherLeave);
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

