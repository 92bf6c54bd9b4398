/* profiler.c: the profiler object, ICorProfilerCallback..11, and what each
 * callback records (seed 000's DNProfiler: every callback the mask enables, with
 * the names of what it is about).
 *
 * Every callback is free-threaded and returns S_OK whatever happens: a failure
 * inside dnprof never reaches the runtime or the program. Names are resolved
 * only where the runtime allows it: an ID is unusable at *Started. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"
#include "names.h"
#include "recorder.h"
#include "session.h"

dnp_agent g_agent;

void agent_say(const char *fmt, ...) {
    char line[1024];
    int n = snprintf(line, sizeof line, "dnprof: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    n += m;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(2, line, (size_t)n);
    (void)w;
}

/* ---- recording helpers ---- */

#define ACTIVE()                                                                 \
    do {                                                                         \
        (void)self;                                                              \
        if (!atomic_load_explicit(&g_agent.active, memory_order_relaxed))        \
            return S_OK;                                                         \
    } while (0)

/* Records an event; the value count is checked against events.def at compile time. */
#define REC(kind, ...)                                                           \
    do {                                                                         \
        const uint64_t v_[] = {__VA_ARGS__};                                     \
        _Static_assert(sizeof v_ / sizeof v_[0] == DNP_NV_##kind, #kind);        \
        rec_event(DNP_EV_##kind, v_, sizeof v_ / sizeof v_[0]);                  \
    } while (0)
#define REC0(kind)                                                               \
    do {                                                                         \
        _Static_assert(DNP_NV_##kind == 0, #kind);                               \
        rec_event(DNP_EV_##kind, NULL, 0);                                       \
    } while (0)

/* An entity field: its ID and the number of its name (resolve: 0 = cache only). */
#define ENT(kind, id, resolve) (uint64_t)(id), (uint64_t)names_get(kind, (id), (resolve))
#define APPDOMAIN(id, r) ENT(NAMES_APPDOMAIN, id, r)
#define ASSEMBLY(id, r) ENT(NAMES_ASSEMBLY, id, r)
#define MODULE(id, r) ENT(NAMES_MODULE, id, r)
#define CLASS(id, r) ENT(NAMES_CLASS, id, r)
#define FUNCTION(id, r) ENT(NAMES_FUNCTION, id, r)
#define HR(hr) (uint64_t)(uint32_t)(hr)

/* ---- IUnknown ---- */

static HRESULT QueryInterface(ICorProfilerCallback *self, REFIID riid, void **ppv) {
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    int ok = dnp_guid_equal(riid, &IID_IUnknown);
    for (int v = 1; v <= 11 && !ok; v++)
        ok = dnp_guid_equal(riid, &IID_ICorProfilerCallback[v]);
    if (!ok)
        return E_NOINTERFACE;
    *ppv = self;
    self->lpVtbl->AddRef(self);
    return S_OK;
}

static ULONG AddRef(ICorProfilerCallback *self) {
    (void)self;
    return (ULONG)atomic_fetch_add(&g_agent.refs, 1) + 1;
}

static ULONG Release(ICorProfilerCallback *self) {
    (void)self;
    return (ULONG)atomic_fetch_sub(&g_agent.refs, 1) - 1;
}

/* ---- start and stop ---- */

static int get_info(IUnknown *unk) {
    for (int v = 15; v >= 3; v--) {
        void *p = NULL;
        if (unk->lpVtbl->QueryInterface(unk, &IID_ICorProfilerInfo[v], &p) == S_OK && p) {
            g_agent.info = p;
            g_agent.info_version = v;
            return 0;
        }
    }
    return -1;
}

static void runtime_text(char *out, size_t cap) {
    USHORT id = 0, major = 0, minor = 0, build = 0, qfe = 0;
    COR_PRF_RUNTIME_TYPE type = 0;
    WCHAR wver[128];
    ULONG len = 0;
    snprintf(out, cap, "unknown runtime");
    if (FAILED(INFO_CALL(GetRuntimeInformation, &id, &type, &major, &minor, &build, &qfe, 128, &len,
                         wver)))
        return;
    char ver[256];
    names_utf16_to_utf8(wver, len && len <= 128 ? len - 1 : (size_t)-1, ver, sizeof ver);
    snprintf(out, cap, "%s %u.%u.%u.%u%s%.120s%s", type == 2 ? "CoreCLR" : "CLR", major, minor, build,
             qfe, ver[0] ? " (" : "", ver, ver[0] ? ")" : "");
}

static HRESULT agent_start(IUnknown *unk, int attached) {
    if (get_info(unk) < 0) {
        agent_say("this runtime offers no ICorProfilerInfo3 or later; dnprof needs .NET Core 3.1 "
                  "or later, so it steps aside");
        return E_FAIL;
    }
    char err[512];
    const char *events = getenv(DNP_ENV_EVENTS);
    if (dnp_events_parse(events, &g_agent.events, err, sizeof err) < 0) {
        agent_say(DNP_ENV_EVENTS ": %s; the agent does not start, the program runs without it", err);
        return E_FAIL;
    }
    char path[4096];
    int exclusive = 0;
    config_output_path(path, sizeof path, &exclusive);
    names_init();
    recorder_options opt = {path, exclusive, config_flush_ms(), getenv(DNP_ENV_SESSION)};
    if (recorder_open(&opt) < 0)
        return E_FAIL;

    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    char cmdline[4096], runtime[256];
    config_cmdline(cmdline, sizeof cmdline);
    runtime_text(runtime, sizeof runtime);
    recorder_session_line("cmdline", cmdline);
    rec_process(recorder_now(), (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec,
                cmdline, runtime, attached);

    uint32_t mask = g_agent.events.mask, high = g_agent.events.mask_high;
    HRESULT hr = AGENT_HAS_INFO(SetEventMask2) ? INFO_CALL(SetEventMask2, mask, high)
                                               : INFO_CALL(SetEventMask, mask);
    if (FAILED(hr)) {
        const char *name = dnp_hresult_name((uint32_t)hr);
        agent_say("the runtime refused the event mask 0x%08x/0x%x (%s 0x%08x); the agent steps "
                  "aside, the program runs without it",
                  mask, high, name ? name : "error", (unsigned)hr);
        rec_note(2, "the runtime refused the event mask 0x%08x: 0x%08x", mask, (unsigned)hr);
        recorder_session_line("error", "the runtime refused the event mask");
        recorder_close();
        return E_FAIL;
    }
    atomic_store(&g_agent.active, 1);
    if (attached)
        REC(InitializeForAttach, (uint64_t)g_agent.info_version, mask, high);
    else
        REC(Initialize, (uint64_t)g_agent.info_version, mask, high);
    recorder_session_line("started", runtime);
    return S_OK;
}

/* The process may exit without Shutdown (Environment.Exit paths, a host that
 * skips it): whatever is buffered is written when the library is unloaded or the
 * process exits normally. */
__attribute__((destructor)) static void agent_at_exit(void) {
    if (atomic_load(&g_agent.active))
        recorder_flush_all();
}

static HRESULT Initialize(ICorProfilerCallback *self, IUnknown *pICorProfilerInfoUnk) {
    (void)self;
    return agent_start(pICorProfilerInfoUnk, 0);
}

static HRESULT Shutdown(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(Shutdown);
    atomic_store(&g_agent.active, 0);
    recorder_close();
    return S_OK;
}

static HRESULT InitializeForAttach(ICorProfilerCallback *self, IUnknown *pCorProfilerInfoUnk,
                                   void *pvClientData, UINT cbClientData) {
    (void)self;
    (void)pvClientData;
    (void)cbClientData;
    return agent_start(pCorProfilerInfoUnk, 1);
}

static HRESULT ProfilerAttachComplete(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ProfilerAttachComplete);
    return S_OK;
}

static HRESULT ProfilerDetachSucceeded(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ProfilerDetachSucceeded);
    atomic_store(&g_agent.active, 0);
    recorder_close();
    return S_OK;
}

/* ---- app domains, assemblies, modules, classes ---- */

static HRESULT AppDomainCreationStarted(ICorProfilerCallback *self, AppDomainID id) {
    ACTIVE();
    REC(AppDomainCreationStarted, APPDOMAIN(id, 0));
    return S_OK;
}

static HRESULT AppDomainCreationFinished(ICorProfilerCallback *self, AppDomainID id, HRESULT hr) {
    ACTIVE();
    REC(AppDomainCreationFinished, APPDOMAIN(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

static HRESULT AppDomainShutdownStarted(ICorProfilerCallback *self, AppDomainID id) {
    ACTIVE();
    REC(AppDomainShutdownStarted, APPDOMAIN(id, 1));
    return S_OK;
}

static HRESULT AppDomainShutdownFinished(ICorProfilerCallback *self, AppDomainID id, HRESULT hr) {
    ACTIVE();
    REC(AppDomainShutdownFinished, APPDOMAIN(id, 0), HR(hr));
    names_forget(NAMES_APPDOMAIN, id);
    return S_OK;
}

static HRESULT AssemblyLoadStarted(ICorProfilerCallback *self, AssemblyID id) {
    ACTIVE();
    REC(AssemblyLoadStarted, ASSEMBLY(id, 0));
    return S_OK;
}

static HRESULT AssemblyLoadFinished(ICorProfilerCallback *self, AssemblyID id, HRESULT hr) {
    ACTIVE();
    REC(AssemblyLoadFinished, ASSEMBLY(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

static HRESULT AssemblyUnloadStarted(ICorProfilerCallback *self, AssemblyID id) {
    ACTIVE();
    REC(AssemblyUnloadStarted, ASSEMBLY(id, 1));
    return S_OK;
}

static HRESULT AssemblyUnloadFinished(ICorProfilerCallback *self, AssemblyID id, HRESULT hr) {
    ACTIVE();
    REC(AssemblyUnloadFinished, ASSEMBLY(id, 0), HR(hr));
    names_forget(NAMES_ASSEMBLY, id);
    return S_OK;
}

static HRESULT ModuleLoadStarted(ICorProfilerCallback *self, ModuleID id) {
    ACTIVE();
    REC(ModuleLoadStarted, MODULE(id, 0));
    return S_OK;
}

static HRESULT ModuleLoadFinished(ICorProfilerCallback *self, ModuleID id, HRESULT hr) {
    ACTIVE();
    REC(ModuleLoadFinished, MODULE(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

static HRESULT ModuleUnloadStarted(ICorProfilerCallback *self, ModuleID id) {
    ACTIVE();
    REC(ModuleUnloadStarted, MODULE(id, 1));
    return S_OK;
}

static HRESULT ModuleUnloadFinished(ICorProfilerCallback *self, ModuleID id, HRESULT hr) {
    ACTIVE();
    REC(ModuleUnloadFinished, MODULE(id, 0), HR(hr));
    names_forget_module(id);
    return S_OK;
}

static HRESULT ModuleAttachedToAssembly(ICorProfilerCallback *self, ModuleID module,
                                        AssemblyID assembly) {
    ACTIVE();
    REC(ModuleAttachedToAssembly, MODULE(module, 1), ASSEMBLY(assembly, 1));
    return S_OK;
}

static HRESULT ClassLoadStarted(ICorProfilerCallback *self, ClassID id) {
    ACTIVE();
    REC(ClassLoadStarted, CLASS(id, 0));
    return S_OK;
}

static HRESULT ClassLoadFinished(ICorProfilerCallback *self, ClassID id, HRESULT hr) {
    ACTIVE();
    REC(ClassLoadFinished, CLASS(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

static HRESULT ClassUnloadStarted(ICorProfilerCallback *self, ClassID id) {
    ACTIVE();
    REC(ClassUnloadStarted, CLASS(id, 1));
    return S_OK;
}

static HRESULT ClassUnloadFinished(ICorProfilerCallback *self, ClassID id, HRESULT hr) {
    ACTIVE();
    REC(ClassUnloadFinished, CLASS(id, 0), HR(hr));
    names_forget(NAMES_CLASS, id);
    return S_OK;
}

static HRESULT FunctionUnloadStarted(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(FunctionUnloadStarted, FUNCTION(id, 1));
    names_forget(NAMES_FUNCTION, id);
    return S_OK;
}

/* ---- JIT ---- */

static HRESULT JITCompilationStarted(ICorProfilerCallback *self, FunctionID id, BOOL safe) {
    ACTIVE();
    REC(JITCompilationStarted, FUNCTION(id, 1), (uint64_t)(safe != 0));
    return S_OK;
}

static HRESULT JITCompilationFinished(ICorProfilerCallback *self, FunctionID id, HRESULT hr,
                                      BOOL safe) {
    ACTIVE();
    REC(JITCompilationFinished, FUNCTION(id, 1), HR(hr), (uint64_t)(safe != 0));
    return S_OK;
}

static HRESULT JITCachedFunctionSearchStarted(ICorProfilerCallback *self, FunctionID id,
                                              BOOL *pbUseCachedFunction) {
    if (pbUseCachedFunction)
        *pbUseCachedFunction = 1; /* never change what the runtime would do */
    ACTIVE();
    REC(JITCachedFunctionSearchStarted, FUNCTION(id, 1));
    return S_OK;
}

static HRESULT JITCachedFunctionSearchFinished(ICorProfilerCallback *self, FunctionID id,
                                               COR_PRF_JIT_CACHE result) {
    ACTIVE();
    REC(JITCachedFunctionSearchFinished, FUNCTION(id, 1), (uint64_t)(uint32_t)result);
    return S_OK;
}

static HRESULT JITFunctionPitched(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(JITFunctionPitched, FUNCTION(id, 1));
    return S_OK;
}

static HRESULT JITInlining(ICorProfilerCallback *self, FunctionID caller, FunctionID callee,
                           BOOL *pfShouldInline) {
    if (pfShouldInline)
        *pfShouldInline = 1;
    ACTIVE();
    REC(JITInlining, FUNCTION(caller, 1), FUNCTION(callee, 1));
    return S_OK;
}

/* ---- threads ---- */

static HRESULT ThreadCreated(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(ThreadCreated, id);
    return S_OK;
}

static HRESULT ThreadDestroyed(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(ThreadDestroyed, id);
    return S_OK;
}

static HRESULT ThreadAssignedToOSThread(ICorProfilerCallback *self, ThreadID id, DWORD os) {
    ACTIVE();
    REC(ThreadAssignedToOSThread, id, os);
    return S_OK;
}

static HRESULT ThreadNameChanged(ICorProfilerCallback *self, ThreadID id, ULONG cch, WCHAR *name) {
    ACTIVE();
    char utf8[1024];
    size_t len = name ? names_utf16_to_utf8(name, cch, utf8, sizeof utf8) : 0;
    REC(ThreadNameChanged, id, name ? rec_string(utf8, len) : 0);
    return S_OK;
}

/* ---- remoting: .NET Framework only; recorded if a runtime ever raises them ---- */

static HRESULT RemotingClientInvocationStarted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingClientInvocationStarted);
    return S_OK;
}
static HRESULT RemotingClientSendingMessage(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingClientSendingMessage, (uint64_t)(async != 0));
    return S_OK;
}
static HRESULT RemotingClientReceivingReply(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingClientReceivingReply, (uint64_t)(async != 0));
    return S_OK;
}
static HRESULT RemotingClientInvocationFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingClientInvocationFinished);
    return S_OK;
}
static HRESULT RemotingServerReceivingMessage(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingServerReceivingMessage, (uint64_t)(async != 0));
    return S_OK;
}
static HRESULT RemotingServerInvocationStarted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingServerInvocationStarted);
    return S_OK;
}
static HRESULT RemotingServerInvocationReturned(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RemotingServerInvocationReturned);
    return S_OK;
}
static HRESULT RemotingServerSendingReply(ICorProfilerCallback *self, GUID *cookie, BOOL async) {
    ACTIVE();
    (void)cookie;
    REC(RemotingServerSendingReply, (uint64_t)(async != 0));
    return S_OK;
}

/* ---- transitions ---- */

static HRESULT UnmanagedToManagedTransition(ICorProfilerCallback *self, FunctionID id,
                                            COR_PRF_TRANSITION_REASON reason) {
    ACTIVE();
    REC(UnmanagedToManagedTransition, FUNCTION(id, 1), (uint64_t)(uint32_t)reason);
    return S_OK;
}

static HRESULT ManagedToUnmanagedTransition(ICorProfilerCallback *self, FunctionID id,
                                            COR_PRF_TRANSITION_REASON reason) {
    ACTIVE();
    REC(ManagedToUnmanagedTransition, FUNCTION(id, 1), (uint64_t)(uint32_t)reason);
    return S_OK;
}

/* ---- suspensions ---- */

static HRESULT RuntimeSuspendStarted(ICorProfilerCallback *self, COR_PRF_SUSPEND_REASON reason) {
    ACTIVE();
    REC(RuntimeSuspendStarted, (uint64_t)(uint32_t)reason);
    return S_OK;
}
static HRESULT RuntimeSuspendFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeSuspendFinished);
    return S_OK;
}
static HRESULT RuntimeSuspendAborted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeSuspendAborted);
    return S_OK;
}
static HRESULT RuntimeResumeStarted(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeResumeStarted);
    return S_OK;
}
static HRESULT RuntimeResumeFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(RuntimeResumeFinished);
    return S_OK;
}
static HRESULT RuntimeThreadSuspended(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(RuntimeThreadSuspended, id);
    return S_OK;
}
static HRESULT RuntimeThreadResumed(ICorProfilerCallback *self, ThreadID id) {
    ACTIVE();
    REC(RuntimeThreadResumed, id);
    return S_OK;
}

/* ---- GC and the heap ---- */

static uint64_t sum_ulong(const ULONG *a, ULONG n) {
    uint64_t s = 0;
    for (ULONG i = 0; a && i < n; i++)
        s += a[i];
    return s;
}

static uint64_t sum_size(const SIZE_T *a, ULONG n) {
    uint64_t s = 0;
    for (ULONG i = 0; a && i < n; i++)
        s += a[i];
    return s;
}

static HRESULT MovedReferences(ICorProfilerCallback *self, ULONG n, ObjectID *old_start,
                               ObjectID *new_start, ULONG *len) {
    ACTIVE();
    (void)old_start;
    (void)new_start;
    REC(MovedReferences, n, sum_ulong(len, n));
    return S_OK;
}

static HRESULT MovedReferences2(ICorProfilerCallback *self, ULONG n, ObjectID *old_start,
                                ObjectID *new_start, SIZE_T *len) {
    ACTIVE();
    (void)old_start;
    (void)new_start;
    REC(MovedReferences2, n, sum_size(len, n));
    return S_OK;
}

static HRESULT SurvivingReferences(ICorProfilerCallback *self, ULONG n, ObjectID *start, ULONG *len) {
    ACTIVE();
    (void)start;
    REC(SurvivingReferences, n, sum_ulong(len, n));
    return S_OK;
}

static HRESULT SurvivingReferences2(ICorProfilerCallback *self, ULONG n, ObjectID *start,
                                    SIZE_T *len) {
    ACTIVE();
    (void)start;
    REC(SurvivingReferences2, n, sum_size(len, n));
    return S_OK;
}

static HRESULT ObjectAllocated(ICorProfilerCallback *self, ObjectID object, ClassID cls) {
    ACTIVE();
    REC(ObjectAllocated, object, CLASS(cls, 1));
    return S_OK;
}

static HRESULT ObjectsAllocatedByClass(ICorProfilerCallback *self, ULONG n, ClassID *classes,
                                       ULONG *counts) {
    ACTIVE();
    (void)classes;
    REC(ObjectsAllocatedByClass, n, sum_ulong(counts, n));
    return S_OK;
}

static HRESULT ObjectReferences(ICorProfilerCallback *self, ObjectID object, ClassID cls, ULONG n,
                                ObjectID *refs) {
    ACTIVE();
    (void)refs;
    REC(ObjectReferences, object, CLASS(cls, 1), n);
    return S_OK;
}

static HRESULT RootReferences(ICorProfilerCallback *self, ULONG n, ObjectID *refs) {
    ACTIVE();
    (void)refs;
    REC(RootReferences, n);
    return S_OK;
}

static HRESULT RootReferences2(ICorProfilerCallback *self, ULONG n, ObjectID *refs,
                               COR_PRF_GC_ROOT_KIND *kinds, COR_PRF_GC_ROOT_FLAGS *flags,
                               UINT_PTR *ids) {
    ACTIVE();
    (void)refs;
    (void)kinds;
    (void)flags;
    (void)ids;
    REC(RootReferences2, n);
    return S_OK;
}

static HRESULT GarbageCollectionStarted(ICorProfilerCallback *self, int n, BOOL *collected,
                                        COR_PRF_GC_REASON reason) {
    ACTIVE();
    uint64_t gens = 0;
    for (int i = 0; collected && i < n && i < 64; i++)
        if (collected[i])
            gens |= 1ull << i;
    REC(GarbageCollectionStarted, gens, (uint64_t)(uint32_t)reason);
    return S_OK;
}

static HRESULT GarbageCollectionFinished(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(GarbageCollectionFinished);
    return S_OK;
}

static HRESULT FinalizeableObjectQueued(ICorProfilerCallback *self, DWORD flags, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(FinalizeableObjectQueued, object, cls, name, flags);
    return S_OK;
}

static HRESULT HandleCreated(ICorProfilerCallback *self, GCHandleID handle, ObjectID object) {
    ACTIVE();
    REC(HandleCreated, handle, object);
    return S_OK;
}

static HRESULT HandleDestroyed(ICorProfilerCallback *self, GCHandleID handle) {
    ACTIVE();
    REC(HandleDestroyed, handle);
    return S_OK;
}

static HRESULT ConditionalWeakTableElementReferences(ICorProfilerCallback *self, ULONG n,
                                                     ObjectID *keys, ObjectID *values,
                                                     GCHandleID *ids) {
    ACTIVE();
    (void)keys;
    (void)values;
    (void)ids;
    REC(ConditionalWeakTableElementReferences, n);
    return S_OK;
}

/* ---- exceptions ---- */

static HRESULT ExceptionThrown(ICorProfilerCallback *self, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionThrown, object, cls, name);
    return S_OK;
}

static HRESULT ExceptionSearchFunctionEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchFunctionEnter, FUNCTION(id, 1));
    return S_OK;
}
static HRESULT ExceptionSearchFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionSearchFunctionLeave);
    return S_OK;
}
static HRESULT ExceptionSearchFilterEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchFilterEnter, FUNCTION(id, 1));
    return S_OK;
}
static HRESULT ExceptionSearchFilterLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionSearchFilterLeave);
    return S_OK;
}
static HRESULT ExceptionSearchCatcherFound(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionSearchCatcherFound, FUNCTION(id, 1));
    return S_OK;
}
static HRESULT ExceptionOSHandlerEnter(ICorProfilerCallback *self, UINT_PTR unused) {
    ACTIVE();
    (void)unused;
    REC0(ExceptionOSHandlerEnter);
    return S_OK;
}
static HRESULT ExceptionOSHandlerLeave(ICorProfilerCallback *self, UINT_PTR unused) {
    ACTIVE();
    (void)unused;
    REC0(ExceptionOSHandlerLeave);
    return S_OK;
}
static HRESULT ExceptionUnwindFunctionEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionUnwindFunctionEnter, FUNCTION(id, 1));
    return S_OK;
}
static HRESULT ExceptionUnwindFunctionLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionUnwindFunctionLeave);
    return S_OK;
}
static HRESULT ExceptionUnwindFinallyEnter(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(ExceptionUnwindFinallyEnter, FUNCTION(id, 1));
    return S_OK;
}
static HRESULT ExceptionUnwindFinallyLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionUnwindFinallyLeave);
    return S_OK;
}
static HRESULT ExceptionCatcherEnter(ICorProfilerCallback *self, FunctionID id, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(ExceptionCatcherEnter, FUNCTION(id, 1), object, cls, name);
    return S_OK;
}
static HRESULT ExceptionCatcherLeave(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCatcherLeave);
    return S_OK;
}
static HRESULT ExceptionCLRCatcherFound(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCLRCatcherFound);
    return S_OK;
}
static HRESULT ExceptionCLRCatcherExecute(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ExceptionCLRCatcherExecute);
    return S_OK;
}

/* ---- COM interop ---- */

static HRESULT COMClassicVTableCreated(ICorProfilerCallback *self, ClassID cls, REFGUID iid,
                                       void *vtable, ULONG slots) {
    ACTIVE();
    (void)iid;
    REC(COMClassicVTableCreated, CLASS(cls, 1), (uint64_t)(uintptr_t)vtable, slots);
    return S_OK;
}

static HRESULT COMClassicVTableDestroyed(ICorProfilerCallback *self, ClassID cls, REFGUID iid,
                                         void *vtable) {
    ACTIVE();
    (void)iid;
    REC(COMClassicVTableDestroyed, CLASS(cls, 1), (uint64_t)(uintptr_t)vtable);
    return S_OK;
}

/* ---- ReJIT, dynamic methods, EventPipe (Callback4..10) ---- */

static HRESULT ReJITCompilationStarted(ICorProfilerCallback *self, FunctionID id, ReJITID rejit,
                                       BOOL safe) {
    ACTIVE();
    REC(ReJITCompilationStarted, FUNCTION(id, 1), rejit, (uint64_t)(safe != 0));
    return S_OK;
}

static HRESULT GetReJITParameters(ICorProfilerCallback *self, ModuleID module, mdMethodDef method,
                                  ICorProfilerFunctionControl *control) {
    ACTIVE();
    (void)control;
    REC(GetReJITParameters, MODULE(module, 1), method);
    return S_OK;
}

static HRESULT ReJITCompilationFinished(ICorProfilerCallback *self, FunctionID id, ReJITID rejit,
                                        HRESULT hr, BOOL safe) {
    ACTIVE();
    REC(ReJITCompilationFinished, FUNCTION(id, 1), rejit, HR(hr), (uint64_t)(safe != 0));
    return S_OK;
}

static HRESULT ReJITError(ICorProfilerCallback *self, ModuleID module, mdMethodDef method,
                          FunctionID id, HRESULT hr) {
    ACTIVE();
    REC(ReJITError, MODULE(module, 1), method, FUNCTION(id, 1), HR(hr));
    return S_OK;
}

static HRESULT GetAssemblyReferences(ICorProfilerCallback *self, const WCHAR *path,
                                     ICorProfilerAssemblyReferenceProvider *provider) {
    ACTIVE();
    (void)provider;
    char utf8[2048];
    size_t len = path ? names_utf16_to_utf8(path, (size_t)-1, utf8, sizeof utf8) : 0;
    REC(GetAssemblyReferences, path ? rec_string(utf8, len) : 0);
    return S_OK;
}

static HRESULT ModuleInMemorySymbolsUpdated(ICorProfilerCallback *self, ModuleID module) {
    ACTIVE();
    REC(ModuleInMemorySymbolsUpdated, MODULE(module, 1));
    return S_OK;
}

static HRESULT DynamicMethodJITCompilationStarted(ICorProfilerCallback *self, FunctionID id,
                                                  BOOL safe, LPCBYTE il, ULONG il_len) {
    ACTIVE();
    (void)il;
    REC(DynamicMethodJITCompilationStarted, FUNCTION(id, 1), (uint64_t)(safe != 0), il_len);
    return S_OK;
}

static HRESULT DynamicMethodJITCompilationFinished(ICorProfilerCallback *self, FunctionID id,
                                                   HRESULT hr, BOOL safe) {
    ACTIVE();
    REC(DynamicMethodJITCompilationFinished, FUNCTION(id, 1), HR(hr), (uint64_t)(safe != 0));
    return S_OK;
}

static HRESULT DynamicMethodUnloaded(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(DynamicMethodUnloaded, FUNCTION(id, 0));
    names_forget(NAMES_FUNCTION, id);
    return S_OK;
}

static HRESULT EventPipeEventDelivered(ICorProfilerCallback *self, EVENTPIPE_PROVIDER provider,
                                       DWORD event_id, DWORD event_version, ULONG meta_len,
                                       LPCBYTE meta, ULONG data_len, LPCBYTE data,
                                       LPCGUID activity, LPCGUID related, ThreadID thread,
                                       ULONG nframes, UINT_PTR *frames) {
    ACTIVE();
    (void)meta_len, (void)meta, (void)data_len, (void)data, (void)activity, (void)related;
    (void)thread, (void)nframes, (void)frames;
    REC(EventPipeEventDelivered, provider, event_id, event_version);
    return S_OK;
}

static HRESULT EventPipeProviderCreated(ICorProfilerCallback *self, EVENTPIPE_PROVIDER provider) {
    ACTIVE();
    REC(EventPipeProviderCreated, provider);
    return S_OK;
}

static HRESULT LoadAsNotificationOnly(ICorProfilerCallback *self, BOOL *pbNotificationOnly) {
    (void)self;
    if (pbNotificationOnly)
        *pbNotificationOnly = 0;
    return S_OK;
}

/* ---- the object ---- */

/* Every slot of callback.def must have its function above: a missing one fails
 * the build here, never the program at run time. */
static const ICorProfilerCallbackVtbl callback_vtbl = {
    .QueryInterface = QueryInterface,
    .AddRef = AddRef,
    .Release = Release,
#define DNP_CALLBACK(ver, name, params) .name = name,
#include "callback.def"
#undef DNP_CALLBACK
};

HRESULT agent_create(REFIID riid, void **out) {
    static atomic_int created;
    if (atomic_exchange(&created, 1)) {
        static atomic_int said;
        if (!atomic_exchange(&said, 1))
            agent_say("another runtime in this process asked for the profiler; dnprof profiles "
                      "the first runtime only (side by side: pick first)");
        return E_FAIL;
    }
    g_agent.callback.lpVtbl = &callback_vtbl;
    atomic_store(&g_agent.refs, 0);
    HRESULT hr = QueryInterface(&g_agent.callback, riid, out);
    if (FAILED(hr))
        atomic_store(&created, 0);
    return hr;
}
