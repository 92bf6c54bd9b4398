/* cb_runtime.c: JIT, threads, remoting, transitions, suspensions, COM interop,
 * ReJIT, dynamic methods and EventPipe callbacks. */
#include <stdio.h>
#include <string.h>

#include "eventpipe.h"
#include "callbacks.h"
#include "inlining.h"
#include "sampler.h"
#include "utf16.h"

/* ---- JIT ---- */

/* The mask may hold the JIT and cache bits for inlining.c's decisions alone:
 * their events are recorded only when their family was asked for. */
#define RECORDED(fam)                                                            \
    do {                                                                         \
        if (!(g_agent.events.families & (1u << DNP_FAM_##fam)))                  \
            return S_OK;                                                         \
    } while (0)

HRESULT cb_JITCompilationStarted(ICorProfilerCallback *self, FunctionID id, BOOL safe) {
    ACTIVE();
    sampler_jit_started(id); /* [JIT] frames of sampled stacks */
    RECORDED(JIT);
    REC(JITCompilationStarted, FUNCTION(id, 1), (uint64_t)(safe != 0));
    return S_OK;
}

HRESULT cb_JITCompilationFinished(ICorProfilerCallback *self, FunctionID id, HRESULT hr,
                                      BOOL safe) {
    ACTIVE();
    sampler_jit_finished();
    RECORDED(JIT);
    REC(JITCompilationFinished, FUNCTION(id, 1), HR(hr), (uint64_t)(safe != 0));
    return S_OK;
}

HRESULT cb_JITCachedFunctionSearchStarted(ICorProfilerCallback *self, FunctionID id,
                                              BOOL *pbUseCachedFunction) {
    if (pbUseCachedFunction) /* precompiled code has no hooks: not for a hooked method */
        *pbUseCachedFunction = inlining_precompiled_allowed(id);
    ACTIVE();
    RECORDED(CACHE);
    REC(JITCachedFunctionSearchStarted, FUNCTION(id, 1));
    return S_OK;
}

HRESULT cb_JITCachedFunctionSearchFinished(ICorProfilerCallback *self, FunctionID id,
                                               COR_PRF_JIT_CACHE result) {
    ACTIVE();
    RECORDED(CACHE);
    REC(JITCachedFunctionSearchFinished, FUNCTION(id, 1), (uint64_t)(uint32_t)result);
    return S_OK;
}

HRESULT cb_JITFunctionPitched(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    RECORDED(JIT);
    REC(JITFunctionPitched, FUNCTION(id, 1));
    return S_OK;
}

HRESULT cb_JITInlining(ICorProfilerCallback *self, FunctionID caller, FunctionID callee,
                           BOOL *pfShouldInline) {
    if (pfShouldInline) /* an inlined method has no hooks: not a hooked one */
        *pfShouldInline = inlining_allowed(callee);
    ACTIVE();
    RECORDED(JIT);
    REC(JITInlining, FUNCTION(caller, 1), FUNCTION(callee, 1));
    return S_OK;
}

/* ---- threads ---- */

HRESULT cb_ThreadCreated(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(ThreadCreated, id);
    return S_OK;
}

HRESULT cb_ThreadDestroyed(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(ThreadDestroyed, id);
    return S_OK;
}

HRESULT cb_ThreadAssignedToOSThread(ICorProfilerCallback *self, ThreadID id, DWORD os) {
    ACTIVE();
    REC(ThreadAssignedToOSThread, id, os);
    sampler_thread_started();
    return S_OK;
}

HRESULT cb_ThreadNameChanged(ICorProfilerCallback *self, ThreadID id, ULONG cch, WCHAR *name) {
    ACTIVE();
    char utf8[1024];
    size_t len = name ? dnp_utf16_to_utf8(name, cch, utf8, sizeof utf8) : 0;
    REC(ThreadNameChanged, id, name ? rec_string(utf8, len) : 0);
    return S_OK;
}

/* ---- remoting: .NET Framework only; recorded if a runtime ever raises them ---- */

HRESULT cb_RemotingClientInvocationStarted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingClientInvocationStarted);
    return S_OK;
}
HRESULT cb_RemotingClientSendingMessage(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingClientSendingMessage, (uint64_t)(async != 0));
    return S_OK;
}
HRESULT cb_RemotingClientReceivingReply(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingClientReceivingReply, (uint64_t)(async != 0));
    return S_OK;
}
HRESULT cb_RemotingClientInvocationFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingClientInvocationFinished);
    return S_OK;
}
HRESULT cb_RemotingServerReceivingMessage(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingServerReceivingMessage, (uint64_t)(async != 0));
    return S_OK;
}
HRESULT cb_RemotingServerInvocationStarted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingServerInvocationStarted);
    return S_OK;
}
HRESULT cb_RemotingServerInvocationReturned(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingServerInvocationReturned);
    return S_OK;
}
HRESULT cb_RemotingServerSendingReply(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingServerSendingReply, (uint64_t)(async != 0));
    return S_OK;
}

/* ---- transitions ---- */

HRESULT cb_UnmanagedToManagedTransition(ICorProfilerCallback *self, FunctionID id,
                                            COR_PRF_TRANSITION_REASON reason) {
    ACTIVE();
    REC(UnmanagedToManagedTransition, FUNCTION(id, 1), (uint64_t)(uint32_t)reason);
    return S_OK;
}

HRESULT cb_ManagedToUnmanagedTransition(ICorProfilerCallback *self, FunctionID id,
                                            COR_PRF_TRANSITION_REASON reason) {
    ACTIVE();
    REC(ManagedToUnmanagedTransition, FUNCTION(id, 1), (uint64_t)(uint32_t)reason);
    return S_OK;
}

/* ---- suspensions ---- */

HRESULT cb_RuntimeSuspendStarted(ICorProfilerCallback *self, COR_PRF_SUSPEND_REASON reason) {
    ACTIVE();
    REC(RuntimeSuspendStarted, (uint64_t)(uint32_t)reason);
    return S_OK;
}
HRESULT cb_RuntimeSuspendFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeSuspendFinished);
    return S_OK;
}
HRESULT cb_RuntimeSuspendAborted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeSuspendAborted);
    return S_OK;
}
HRESULT cb_RuntimeResumeStarted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeResumeStarted);
    return S_OK;
}
HRESULT cb_RuntimeResumeFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeResumeFinished);
    return S_OK;
}
HRESULT cb_RuntimeThreadSuspended(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(RuntimeThreadSuspended, id);
    return S_OK;
}
HRESULT cb_RuntimeThreadResumed(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(RuntimeThreadResumed, id);
    return S_OK;
}

/* ---- COM interop ---- */

HRESULT cb_COMClassicVTableCreated(ICorProfilerCallback *self, ClassID cls, REFGUID iid,
                                       void *vtable, ULONG slots) {
    ACTIVE();
    (void)iid;
    REC(COMClassicVTableCreated, CLASS(cls, 1), (uint64_t)(uintptr_t)vtable, slots);
    return S_OK;
}

HRESULT cb_COMClassicVTableDestroyed(ICorProfilerCallback *self, ClassID cls, REFGUID iid,
                                         void *vtable) {
    ACTIVE();
    (void)iid;
    REC(COMClassicVTableDestroyed, CLASS(cls, 1), (uint64_t)(uintptr_t)vtable);
    return S_OK;
}

/* ---- ReJIT, dynamic methods, EventPipe (Callback4..10) ---- */

HRESULT cb_ReJITCompilationStarted(ICorProfilerCallback *self, FunctionID id, ReJITID rejit,
                                       BOOL safe) {
    ACTIVE();
    REC(ReJITCompilationStarted, FUNCTION(id, 1), rejit, (uint64_t)(safe != 0));
    return S_OK;
}

HRESULT cb_GetReJITParameters(ICorProfilerCallback *self, ModuleID module, mdMethodDef method,
                                  ICorProfilerFunctionControl *control) {
    ACTIVE();
    (void)control;
    REC(GetReJITParameters, MODULE(module, 1), method);
    return S_OK;
}

HRESULT cb_ReJITCompilationFinished(ICorProfilerCallback *self, FunctionID id, ReJITID rejit,
                                        HRESULT hr, BOOL safe) {
    ACTIVE();
    REC(ReJITCompilationFinished, FUNCTION(id, 1), rejit, HR(hr), (uint64_t)(safe != 0));
    return S_OK;
}

HRESULT cb_ReJITError(ICorProfilerCallback *self, ModuleID module, mdMethodDef method,
                          FunctionID id, HRESULT hr) {
    ACTIVE();
    REC(ReJITError, MODULE(module, 1), method, FUNCTION(id, 1), HR(hr));
    return S_OK;
}

HRESULT cb_GetAssemblyReferences(ICorProfilerCallback *self, const WCHAR *path,
                                     ICorProfilerAssemblyReferenceProvider *provider) {
    ACTIVE();
    (void)provider;
    char utf8[2048];
    size_t len = path ? dnp_utf16_to_utf8(path, DNP_UTF16_NUL, utf8, sizeof utf8) : 0;
    REC(GetAssemblyReferences, path ? rec_string(utf8, len) : 0);
    return S_OK;
}

HRESULT cb_ModuleInMemorySymbolsUpdated(ICorProfilerCallback *self, ModuleID module) {
    ACTIVE();
    REC(ModuleInMemorySymbolsUpdated, MODULE(module, 1));
    return S_OK;
}

HRESULT cb_DynamicMethodJITCompilationStarted(ICorProfilerCallback *self, FunctionID id,
                                                  BOOL safe, LPCBYTE il, ULONG il_len) {
    ACTIVE();
    sampler_jit_started(id);
    RECORDED(JIT);
    (void)il;
    REC(DynamicMethodJITCompilationStarted, FUNCTION(id, 1), (uint64_t)(safe != 0), il_len);
    return S_OK;
}

HRESULT cb_DynamicMethodJITCompilationFinished(ICorProfilerCallback *self, FunctionID id,
                                                   HRESULT hr, BOOL safe) {
    ACTIVE();
    sampler_jit_finished();
    RECORDED(JIT);
    REC(DynamicMethodJITCompilationFinished, FUNCTION(id, 1), HR(hr), (uint64_t)(safe != 0));
    return S_OK;
}

HRESULT cb_DynamicMethodUnloaded(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(DynamicMethodUnloaded, FUNCTION(id, 0));
    names_forget(NAMES_FUNCTION, id);
    sampler_code_unloaded();
    return S_OK;
}

HRESULT cb_EventPipeEventDelivered(ICorProfilerCallback *self, EVENTPIPE_PROVIDER provider,
                                       DWORD event_id, DWORD event_version, ULONG meta_len,
                                       LPCBYTE meta, ULONG data_len, LPCBYTE data,
                                       LPCGUID activity, LPCGUID related, ThreadID thread,
                                       ULONG nframes, UINT_PTR *frames) {
    ACTIVE();
    (void)meta_len, (void)meta, (void)activity, (void)related, (void)thread;
    ep_event e = {event_id, event_version, data, data_len, nframes, frames, provider};
    if (ep_deliver(&e))
        return S_OK;
    REC(EventPipeEventDelivered, provider, event_id, event_version);
    return S_OK;
}

HRESULT cb_EventPipeProviderCreated(ICorProfilerCallback *self, EVENTPIPE_PROVIDER provider) {
    ACTIVE();
    REC(EventPipeProviderCreated, provider);
    return S_OK;
}

HRESULT cb_LoadAsNotificationOnly(ICorProfilerCallback *self, BOOL *pbNotificationOnly) {
    (void)self;
    if (pbNotificationOnly)
        *pbNotificationOnly = 0;
    return S_OK;
}

