/* attach.c: a profiler attached to a running process
 * (docs/design-notes.md#attach): the callbacks of ICorProfilerCallback3.
 *
 * InitializeForAttach copies what it needs from the trigger's blob (the runtime
 * frees it afterwards), keeps only the event flags an attached profiler may set
 * (COR_PRF_ALLOWABLE_AFTER_ATTACH), opens the trace and the control socket.
 * ProfilerAttachComplete records what already exists (catchup.c). A detach is
 * asked for on the control socket (control.c); ProfilerDetachSucceeded, the
 * last call the runtime makes before it unloads the library, completes the
 * trace and stops every thread of the agent. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attach_blob.h"
#include "settings.h"
#include "callbacks.h"
#include "catchup.h"
#include "control.h"
#include "profiler.h"
#include "rejit.h"

/* The trigger pid and what was dropped, for the trace's notes. */
static uint32_t g_trigger_pid;
static char g_dropped[256];
static int g_log_fd = -1; /* the log in the control directory while attached (agent_say_front_end) */

/* cfg->events from the blob's text, reduced to what an attached profiler may
 * have; what it loses is said in g_dropped. -1 if the text does not parse. */
static int allowed_events(const char *text, agent_config *cfg) {
    dnp_event_config ev;
    char err[512];
    if (dnp_events_parse(text, &ev, err, sizeof err) < 0) {
        agent_say("the attach request's events: %s; the agent does not attach", err);
        return -1;
    }
    dnp_attach_events a;
    dnp_events_after_attach(&ev, &a);
    g_dropped[0] = 0;
    if (a.dropped) {
        /* Families wholly lost, and those that keep part of their flags. */
        char w[200] = "", p[100] = "";
        if (a.whole)
            dnp_families_format(a.whole, w, sizeof w);
        if (a.part)
            dnp_families_format(a.part, p, sizeof p);
        snprintf(g_dropped, sizeof g_dropped, "flags 0x%08x (%s%s%s%s)", a.dropped, w,
                 a.whole && a.part ? "; " : "", a.part ? "part of " : "", p);
    }
    /* The reduced set travels as a hex mask, which dnp_events_parse reads back. */
    snprintf(cfg->events, sizeof cfg->events, "0x%x", a.mask);
    return 0;
}

static HRESULT initialize(IUnknown *unk, const dnp_attach_blob *blob) {
    agent_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (allowed_events(blob->events, &cfg) < 0)
        return E_INVALIDARG;
    snprintf(cfg.output, sizeof cfg.output, "%s", blob->output);
    cfg.flush_ms = blob->flush_ms;
    cfg.alloc = blob->alloc != 0;
    cfg.exc_stacks = blob->exc_stacks != 0; /* not the target's environment */
    cfg.sample = (int)blob->sample;
    cfg.sample_rate = blob->sample_rate;
    /* the sampler's settings the blob does not carry: their defaults, not the
     * target's environment */
    cfg.sample_unwind = (int)dnp_setting_default(DNP_SET_SAMPLE_UNWIND);
    cfg.sample_wall_threads = (int)dnp_setting_default(DNP_SET_SAMPLE_WALL_THREADS);
    cfg.sample_timers = (int)dnp_setting_default(DNP_SET_SAMPLE_TIMERS);
    cfg.locks = (int)blob->locks;
    cfg.lock_slice_us = dnp_setting_default(DNP_SET_LOCKS_SLICE_US);
    cfg.gc = blob->gc != 0;
    cfg.threadpool = blob->threadpool <= 2 ? (int)blob->threadpool : 1;
    cfg.every_ms = blob->every_ms; /* windows (windows.h) */
    snprintf(cfg.window_dir, sizeof cfg.window_dir, "%s", blob->window_dir);
    cfg.window_keep = blob->window_keep;
    snprintf(cfg.trace, sizeof cfg.trace, "%s", blob->trace); /* --trace (rejit.c) */
    g_trigger_pid = blob->trigger_pid;
    cfg.host_pid = blob->host_pid; /* the trace's PROCESS record keeps it */
    HRESULT hr = agent_start(unk, &cfg, 1);
    if (FAILED(hr)) {
        recorder_release();
        agent_release();
        return hr;
    }
    if (g_dropped[0])
        rec_note(1, "not available to an attached profiler, not recorded: %s", g_dropped);
    if (control_start(blob->control_dir) < 0) {
        atomic_store(&g_agent.active, 0);
        if (AGENT_HAS_INFO(SetEventMask2))
            INFO_CALL(SetEventMask2, 0, 0);
        else
            INFO_CALL(SetEventMask, 0);
        rec_note(2, "the control socket could not be created; the agent does not attach");
        recorder_close();
        recorder_release();
        agent_release();
        return E_FAIL;
    }
    return S_OK;
}

HRESULT cb_InitializeForAttach(ICorProfilerCallback *self, IUnknown *pCorProfilerInfoUnk,
                               void *pvClientData, UINT cbClientData) {
    (void)self;
    static dnp_attach_blob blob; /* a copy: the runtime frees the client data after this call */
    char err[512];
    if (dnp_attach_blob_parse(pvClientData, cbClientData, &blob, err, sizeof err) < 0) {
        agent_say("refusing the attach request: %s", err);
        return E_INVALIDARG;
    }
    if (control_dir_check(blob.control_dir) < 0)
        return E_FAIL;
    char log[DNP_BLOB_DIR_MAX + 64];
    snprintf(log, sizeof log, DNP_CONTROL_LOG_FMT, blob.control_dir, (long)getpid());
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    agent_say_copy_to(fd);
    HRESULT hr = initialize(pCorProfilerInfoUnk, &blob);
    agent_say_copy_to(-1);
    if (SUCCEEDED(hr) && fd >= 0) {
        /* From now on what the agent says goes to dnprof attach, not into the
         * program's stderr: the same log, printed as the recording ends. */
        agent_say_front_end(fd);
        g_log_fd = fd;
    } else if (fd >= 0) {
        close(fd);
    }
    return hr;
}

HRESULT cb_ProfilerAttachComplete(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ProfilerAttachComplete);
    if (g_trigger_pid)
        rec_note(0, "attached by dnprof (pid %u)", (unsigned)g_trigger_pid);
    catchup_record();
    rejit_attach_complete(); /* --trace: the methods of the modules already loaded */
    return S_OK;
}

void attach_stay_inert(void) {
    if (atomic_load(&g_agent.active))
        rec_note(1, "the agent stays loaded but inert: the runtime does not unload a profiler that used ReJIT");
    atomic_store(&g_agent.active, 0);
    recorder_close();
    agent_say_front_end(-1);
    if (g_log_fd >= 0)
        close(g_log_fd);
    g_log_fd = -1;
}

/* No call into the runtime may be made here (ICorProfilerCallback3 docs), and
 * nothing of the agent may run after the return: the library is unloaded. */
HRESULT cb_ProfilerDetachSucceeded(ICorProfilerCallback *self) {
    (void)self;
    if (atomic_load(&g_agent.active))
        REC0(ProfilerDetachSucceeded);
    atomic_store(&g_agent.active, 0);
    uint64_t events = recorder_events();
    recorder_close();
    char final[64];
    snprintf(final, sizeof final, DNP_CONTROL_DETACHED " %llu", (unsigned long long)events);
    control_stop(final);
    agent_say_front_end(-1);
    if (g_log_fd >= 0)
        close(g_log_fd);
    g_log_fd = -1;
    recorder_release();
    agent_release();
    return S_OK;
}
