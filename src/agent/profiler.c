/* profiler.c: the profiler object, ICorProfilerCallback..11, and what each
 * callback records (DNProfiler's, docs/design-notes.md#event-log: every callback the mask enables, with
 * the names of what it is about).
 *
 * Every callback is free-threaded and returns S_OK whatever happens: a failure
 * inside dnprof never reaches the runtime or the program. Names are resolved
 * only where the runtime allows it: an ID is unusable at *Started. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "callbacks.h"
#include "profiler.h"
#include "config.h"
#include "names.h"
#include "recorder.h"
#include "async.h"
#include "calls.h"
#include "il.h"
#include "rejit.h"
#include "inlining.h"
#include "control.h"
#include "heap.h"
#include "exceptions.h"
#include "alloc_sampling.h"
#include "locks.h"
#include "gc_stats.h"
#include "pool_state.h"
#include "threadpool.h"
#include "eventpipe.h"
#include "sampler.h"
#include "session.h"
#include "stop_signal.h"
#include "thread_mem.h"
#include "utf16.h"
#include "windows.h"

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
    dnp_utf16_name(wver, 128, len, ver, sizeof ver);
    snprintf(out, cap, "%s %u.%u.%u.%u%s%.120s%s", type == 2 ? "CoreCLR" : "CLR", major, minor, build,
             qfe, ver[0] ? " (" : "", ver, ver[0] ? ")" : "");
}

/* What goes into the windows besides what the modules add themselves
 * (windows.h): exceptions by type; with windows, what dnprof top shows besides
 * (docs/top.md): throw sites, each collection, lock waits by site; only what
 * was asked for. */
static void join_windows(const agent_config *cfg) {
    if (g_agent.events.families & (1u << DNP_FAM_EXCEPTIONS))
        window_register_event(DNP_EV_ExceptionThrown); /* exceptions by type, per window */
    if (!cfg->every_ms)
        return;
    if (cfg->exc_stacks)
        window_register_event(DNP_EV_ExceptionDetails);
    if (cfg->gc) {
        window_register_event(DNP_EV_GcSizes);
        window_register_event(DNP_EV_GcCollection);
    }
    if (cfg->threadpool == 1)
        window_register_event(DNP_EV_ThreadPoolCounters); /* once a second: the pool's counters */
    if (cfg->threadpool == 2) {
        window_register_event(DNP_EV_ThreadPoolState); /* each window's end: dnprof top's pool line */
        window_register_event(DNP_EV_ThreadPoolBlocked);
        window_register_flush(pool_state_flush);
    }
    if (cfg->locks) {
        window_register_event(DNP_EV_LockSite);
        window_register_flush(locks_flush_all); /* each window's waits, whole */
    }
    if (cfg->calls != CALLS_MODE_OFF && !cfg->sample)
        window_register_flush(calls_window_flush); /* each window's calls (a sampled tree's nodes would collide) */
}

HRESULT agent_start(IUnknown *unk, const agent_config *cfg, int attached) {
    if (get_info(unk) < 0) {
        agent_say("this runtime offers no ICorProfilerInfo3 or later; dnprof needs .NET Core 3.1 "
                  "or later, so it steps aside");
        say_session_line("error", "the runtime offers no ICorProfilerInfo3 or later");
        return E_FAIL;
    }
    g_agent.config = *cfg;
    g_agent.attached = attached;
    char err[512];
    if (dnp_events_parse(cfg->events, &g_agent.events, err, sizeof err) < 0) {
        agent_say("%s: %s; the agent does not start, the program runs without it",
                  attached ? "the attach request's events" : DNP_ENV_EVENTS, err);
        say_session_line("error", err);
        return E_FAIL;
    }
    uint32_t mask = g_agent.events.mask, high = g_agent.events.mask_high;
    if (calls_configure(cfg, &mask, &high) < 0) {
        say_session_line("error", "the method enter/leave settings were refused");
        return E_FAIL;
    }
    async_configure(cfg, &mask); /* before inlining: both keep hooked methods whole */
    inlining_configure(cfg, &mask);
    il_configure(cfg, &mask); /* --il */
    rejit_configure(cfg, &mask); /* --trace */
    exceptions_configure(cfg, &mask, &high);
    ep_reset();
    alloc_configure(cfg, &mask, &high);
    locks_configure(cfg, &mask, &high);
    gc_stats_configure(cfg, &high);   /* --gc */
    threadpool_configure(cfg, &high); /* --threadpool */
    sampler_configure(cfg, &mask, &high);
    names_init();
    recorder_options opt = {cfg->output, cfg->exclusive, cfg->flush_ms, cfg->output_alt};
    if (recorder_open(&opt) < 0)
        return E_FAIL;
    if (opt.path != cfg->output) /* another program under the SDK had taken the first */
        snprintf(g_agent.config.output, sizeof g_agent.config.output, "%s", opt.path);
    say_session_line("trace", g_agent.config.output);

    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    char cmdline[4096], runtime[256];
    config_cmdline(cmdline, sizeof cmdline);
    runtime_text(runtime, sizeof runtime);
    say_session_line("cmdline", cmdline);
    rec_process(recorder_now(), (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec,
                cmdline, runtime, attached, cfg->host_pid);
    exceptions_note_runtime();

    HRESULT hr = AGENT_HAS_INFO(SetEventMask2) ? INFO_CALL(SetEventMask2, mask, high)
                                               : INFO_CALL(SetEventMask, mask);
    if (attached && (uint32_t)hr == 0x80131376u /* CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE */ &&
        (mask & COR_PRF_MONITOR_GC)) {
        /* docs/design-notes.md#attach-gc: background GC was on when the program started, and a profiler
         * that arrives late cannot monitor it. Record the rest. */
        mask &= ~(uint32_t)COR_PRF_MONITOR_GC;
        high &= ~(uint32_t)(COR_PRF_HIGH_BASIC_GC | COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS);
        g_agent.events.mask = mask;
        g_agent.events.families &= ~(1u << DNP_FAM_GC);
        agent_say("gc events are not available: the program runs with background GC, which a "
                  "profiler can only see from start-up (dnprof run); recording the rest");
        rec_note(1, "gc events not recorded: the program runs with background (concurrent) GC");
        hr = AGENT_HAS_INFO(SetEventMask2) ? INFO_CALL(SetEventMask2, mask, high)
                                           : INFO_CALL(SetEventMask, mask);
    }
    if (FAILED(hr)) {
        const char *name = dnp_hresult_name((uint32_t)hr);
        agent_say("the runtime refused the event mask 0x%08x/0x%x (%s 0x%08x); the agent steps "
                  "aside, the program runs without it",
                  mask, high, name ? name : "error", (unsigned)hr);
        rec_note(2, "the runtime refused the event mask 0x%08x: 0x%08x", mask, (unsigned)hr);
        say_session_line("error", "the runtime refused the event mask");
        recorder_close();
        return E_FAIL;
    }
    if (calls_install() < 0) {
        say_session_line("error", "the runtime refused the enter/leave hooks");
        recorder_close();
        return E_FAIL;
    }
    async_install();
    atomic_store(&g_agent.active, 1);
    if (attached)
        REC(InitializeForAttach, (uint64_t)g_agent.info_version, mask, high);
    else
        REC(Initialize, (uint64_t)g_agent.info_version, mask, high);
    ep_start(); /* a session that cannot start said why; the rest records */
    recorder_set_tick(ep_flush_stale); /* sums a second old written as the program runs */
    sampler_start(cfg); /* a sampler that cannot start said why; the rest records */
    join_windows(cfg);
    windows_start(cfg, cmdline, runtime, attached);
    say_session_line("started", runtime);
    return S_OK;
}

static __thread int t_tid;

int agent_tid(void) {
    if (!t_tid)
        t_tid = (int)gettid();
    return t_tid;
}

static void tid_in_child(void) {
    t_tid = 0; /* the forking thread, the child's only one, has another id there */
}

__attribute__((constructor)) static void agent_tid_init(void) {
    pthread_atfork(NULL, NULL, tid_in_child);
}

/* The process may exit without Shutdown (Environment.Exit paths, a host that
 * skips it): whatever is buffered is written when the library is unloaded or the
 * process exits normally. */
__attribute__((destructor)) static void agent_at_exit(void) {
    if (atomic_load(&g_agent.active))
        ep_flush_all();
    if (atomic_load(&g_agent.active))
        recorder_flush_all();
}

HRESULT cb_Initialize(ICorProfilerCallback *self, IUnknown *pICorProfilerInfoUnk) {
    (void)self;
    /* First: whatever is said from here on goes to the front end, if there is one. */
    if (config_sdk_aside())
        return E_FAIL; /* the SDK's own process under dotnet run: nothing asked of it, nothing said */
    say_session_open(config_session_dir(), config_say_stderr());
    agent_config cfg;
    config_from_env(&cfg);
    HRESULT hr = agent_start(pICorProfilerInfoUnk, &cfg, 0);
    /* Heap snapshots on request (dnprof snapshot PID) need the GC's heap walk. */
    if (SUCCEEDED(hr) && (g_agent.events.mask & COR_PRF_MONITOR_GC))
        control_start_run();
    if (SUCCEEDED(hr))
        stop_signal_install(); /* Ctrl-C, SIGTERM: what the agent holds is written first */
    return hr;
}

void agent_stop_background(int exiting) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    windows_stop(); /* the last window, while the sampler still answers */
    sampler_stop(exiting);
    pthread_mutex_unlock(&mu);
}

static atomic_int finishing; /* Shutdown or a signal's end: the last writes are made once */

void agent_finish_on_signal(int sig) {
    if (!atomic_load(&g_agent.active) || atomic_exchange(&finishing, 1))
        return;
    rec_note(1, "the program was ended by %s: what the agent held was written before the signal took its course",
             sig == SIGINT ? "SIGINT (Ctrl-C)" : sig == SIGQUIT ? "SIGQUIT" : sig == SIGTERM ? "SIGTERM"
             : sig == SIGHUP ? "SIGHUP" : "a signal");
    agent_stop_background(1);
    calls_shutdown(); /* the trees read racily, as at Shutdown */
    async_shutdown();
    rejit_finish(0);
    ep_flush_all(); /* the session stays: stopping it is a call into the runtime */
    atomic_store(&g_agent.active, 0);
    recorder_close();
}

HRESULT cb_Shutdown(ICorProfilerCallback *self) {
    ACTIVE();
    if (atomic_exchange(&finishing, 1))
        return S_OK; /* a signal's end wrote everything (stop_signal.c) */
    agent_stop_background(1);
    heap_at_shutdown();
    if (!g_agent.attached)
        control_stop(NULL); /* the run-mode socket (heap snapshots) */
    calls_shutdown();
    async_shutdown();
    rejit_finish(0); /* --trace: what the probes counted */
    ep_stop();
    REC0(Shutdown);
    atomic_store(&g_agent.active, 0);
    recorder_close();
    return S_OK;
}

/* ---- the object ---- */

/* Every slot of callback.def must have its function above: a missing one fails
 * the build here, never the program at run time. */
static const ICorProfilerCallbackVtbl callback_vtbl = {
    .QueryInterface = QueryInterface,
    .AddRef = AddRef,
    .Release = Release,
#define DNP_CALLBACK(ver, name, params) .name = cb_##name,
#include "callback.def"
#undef DNP_CALLBACK
};

static atomic_int created; /* pick first; reset by a detach */

void agent_release(void) {
    atomic_store(&g_agent.active, 0);
    thread_mem_release(); /* no callback runs now: every thread's caches go */
    g_agent.info = NULL; /* the runtime's, no longer to be called (ProfilerDetachSucceeded) */
    g_agent.info_version = 0;
    g_agent.attached = 0;
    atomic_store(&created, 0);
}

HRESULT agent_create(REFIID riid, void **out) {
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

