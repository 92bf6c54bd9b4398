/* cb_runtime.c: JIT, threads, remoting, transitions, suspensions, COM interop,
 * ReJIT, dynamic methods and EventPipe callbacks. */
#include <stdio.h>
#include <string.h>

#include "eventpipe.h"
#include "async.h"
#include "callbacks.h"
#include "il.h"
#include "inlining.h"
#include "rejit.h"
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
    async_jit_started(id); /* a resume gets its probe before it is compiled */
    sampler_jit_started(id); /* [JIT] frames of sampled stacks */
    if (g_agent.events.families & (1u << DNP_FAM_JIT))
        REC(JITCompilationStarted, FUNCTION(id, 1), (uint64_t)(safe != 0));
    il_jit_started(id); /* --il: its body, right after */
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

CB_REC(ThreadCreated, (ICorProfilerCallback *self, ThreadID id), id)

HRESULT cb_ThreadDestroyed(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(ThreadDestroyed, id);
    sampler_thread_ending(id);
    return S_OK;
}

HRESULT cb_ThreadAssignedToOSThread(ICorProfilerCallback *self, ThreadID id, DWORD os) {
    ACTIVE();
    REC(ThreadAssignedToOSThread, id, os);
    sampler_thread_started(os);
    rejit_lock_start(); /* --locks: before any thread can contend */
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

/* A message sent or received: whether it is asynchronous (the cookie is not recorded). */
#define REMOTING_MESSAGE(name)                                                   \
    HRESULT cb_##name(ICorProfilerCallback *self, GUID *cookie, BOOL async) {    \
        ACTIVE();                                                                \
        (void)cookie;                                                            \
        REC(name, (uint64_t)(async != 0));                                       \
        return S_OK;                                                             \
    }

CB_REC0(RemotingClientInvocationStarted)
REMOTING_MESSAGE(RemotingClientSendingMessage)
REMOTING_MESSAGE(RemotingClientReceivingReply)
CB_REC0(RemotingClientInvocationFinished)
REMOTING_MESSAGE(RemotingServerReceivingMessage)
CB_REC0(RemotingServerInvocationStarted)
CB_REC0(RemotingServerInvocationReturned)
REMOTING_MESSAGE(RemotingServerSendingReply)

/* ---- transitions ---- */

CB_REC(UnmanagedToManagedTransition, (ICorProfilerCallback *self, FunctionID id, COR_PRF_TRANSITION_REASON reason),
       FUNCTION(id, 1), (uint64_t)(uint32_t)reason)

CB_REC(ManagedToUnmanagedTransition, (ICorProfilerCallback *self, FunctionID id, COR_PRF_TRANSITION_REASON reason),
       FUNCTION(id, 1), (uint64_t)(uint32_t)reason)

/* ---- suspensions ---- */

/* The mask may hold the suspensions for async stacks alone (async.h: objects
 * move only while the runtime is suspended): their events are recorded only
 * when their family was asked for. */

/* A suspension's callback: hook first (the async stacks' count, or nothing),
 * then its event when its family was asked for. */
#define CB_SUSPEND(name, params, hook, ...)                                      \
    HRESULT cb_##name params {                                                   \
        ACTIVE();                                                                \
        hook;                                                                    \
        RECORDED(SUSPENDS);                                                      \
        REC(name, __VA_ARGS__);                                                  \
        return S_OK;                                                             \
    }
#define CB_SUSPEND0(name, hook)                                                  \
    HRESULT cb_##name(ICorProfilerCallback *self) {                              \
        ACTIVE();                                                                \
        hook;                                                                    \
        RECORDED(SUSPENDS);                                                      \
        REC0(name);                                                              \
        return S_OK;                                                             \
    }

CB_SUSPEND(RuntimeSuspendStarted, (ICorProfilerCallback *self, COR_PRF_SUSPEND_REASON reason),
           (async_suspension(), sampler_suspend_started((int)reason)), (uint64_t)(uint32_t)reason)
CB_SUSPEND0(RuntimeSuspendFinished, (void)0)
CB_SUSPEND0(RuntimeSuspendAborted, (async_suspension(), sampler_suspend_ended()))
CB_SUSPEND0(RuntimeResumeStarted, sampler_suspend_ended())
CB_SUSPEND0(RuntimeResumeFinished, async_suspension())
CB_SUSPEND(RuntimeThreadSuspended, (ICorProfilerCallback *self, ThreadID id), (void)0, id)
CB_SUSPEND(RuntimeThreadResumed, (ICorProfilerCallback *self, ThreadID id), (void)0, id)

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

CB_REC(ReJITCompilationStarted, (ICorProfilerCallback *self, FunctionID id, ReJITID rejit, BOOL safe),
       FUNCTION(id, 1), rejit, (uint64_t)(safe != 0))

HRESULT cb_GetReJITParameters(ICorProfilerCallback *self, ModuleID module, mdMethodDef method,
                                  ICorProfilerFunctionControl *control) {
    ACTIVE();
    if (g_agent.events.families & (1u << DNP_FAM_JIT))
        REC(GetReJITParameters, MODULE(module, 1), method);
    rejit_parameters(module, method, control); /* --trace: the rewritten body */
    return S_OK;
}

CB_REC(ReJITCompilationFinished, (ICorProfilerCallback *self, FunctionID id, ReJITID rejit, HRESULT hr, BOOL safe),
       FUNCTION(id, 1), rejit, HR(hr), (uint64_t)(safe != 0))

HRESULT cb_ReJITError(ICorProfilerCallback *self, ModuleID module, mdMethodDef method, FunctionID id, HRESULT hr) {
    ACTIVE();
    REC(ReJITError, MODULE(module, 1), method, FUNCTION(id, 1), HR(hr));
    rejit_error(module, method, hr);
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

CB_REC(ModuleInMemorySymbolsUpdated, (ICorProfilerCallback *self, ModuleID module), MODULE(module, 1))

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
    (void)activity, (void)related, (void)thread;
    ep_event e = {event_id, event_version, data, data_len, nframes, frames, provider, meta, meta_len};
    if (ep_deliver(&e))
        return S_OK;
    REC(EventPipeEventDelivered, provider, event_id, event_version);
    return S_OK;
}

CB_REC(EventPipeProviderCreated, (ICorProfilerCallback *self, EVENTPIPE_PROVIDER provider), provider)

HRESULT cb_LoadAsNotificationOnly(ICorProfilerCallback *self, BOOL *pbNotificationOnly) {
    (void)self;
    if (pbNotificationOnly)
        *pbNotificationOnly = 0;
    return S_OK;
}

