/* attach.h: the attach machinery of `dnprof attach` (cmd_attach.c), shared with
 * `dnprof top PID` (cmd_top.c): the options, loading the agent with them
 * (attach_begin), and ending as the recording ended (attach_end): a detach
 * when we stop it, nothing to do when the program exited or was detached from
 * elsewhere. */
#ifndef DNP_ATTACH_H
#define DNP_ATTACH_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach_blob.h"
#include "ipc.h"
#include "windows_cli.h"

/* The options of loading the agent, and -q and -h, as attach's and snapshot's
 * --help give them. */
#define DNP_HELP_LOADING_OPTIONS \
    "      --timeout SECONDS how long the runtime may take to load the agent (default 10)\n" \
    "      --agent-path PATH the libdnprof.so already in the program's file system (in a\n" \
    "                        container: PATH as the program sees it, e.g. baked into the\n" \
    "                        image), loaded from there: nothing is copied or removed;\n" \
    "                        it must be this release's agent (docs/containers.md)\n" \
    "  -q, --quiet           print nothing but errors\n" \
    "  -h, --help            print this help\n"

typedef struct attach_opts {
    const char *events, *output;
    long long duration_ms; /* -1: until stopped */
    uint64_t flush_ms, timeout_s;
    int quiet;
    int alloc;             /* --alloc: sampled allocations */
    int locks;             /* --locks: lock contention (1), =waits: and waits (2) */
    int exceptions;        /* --exceptions: stories, with a stack at each throw */
    int gc, threadpool;    /* --gc, --threadpool: the runtime's GC and thread-pool events */
    int sample;            /* --sample: 0 off, 1 cpu, 2 wall, 3 suspend */
    uint64_t sample_rate;  /* --rate, 0 for the default */
    const char *agent_path; /* --agent-path: the agent as the program sees it, already there */
    pid_t pid;
    unsigned every_ms;     /* --every: windows (run_windows.h), 0 none */
    char trace[1024];      /* --trace: the methods re-JIT-compiled with probes, "" none */
    window_follow wf;      /* their sinks */
} attach_opts;

/* An agent attached by attach_begin. */
typedef struct attach_live {
    ipc_proc proc;         /* the process, before anything was created for it */
    char out_abs[PATH_MAX];
    dnp_attach_blob blob;
    long log_offset;       /* the agent's log, said so far */
    int fd;                /* its control socket */
} attach_live;

/* How a recording ended. */
typedef enum { END_STOP, END_EXITED, END_DETACHED_ELSEWHERE, END_INERT_ELSEWHERE } record_end;

/* Checks the target (it exists, it has no agent), loads the agent with o into
 * it (the trace at o->output, else def in the current directory; with
 * o->every_ms the windows beside the trace) and connects to its control
 * socket. 0, or -1 after saying why in one line (not .NET, no permission, ...). */
int attach_begin(const attach_opts *o, const char *def, attach_live *a);
/* Ends as it ended: detaches the agent on END_STOP (and waits for it to be
 * unloaded), says the agent's last messages, brings the trace out of a
 * container. 0, or 1 after saying why. */
int attach_end(const attach_opts *o, attach_live *a, record_end how);

#endif
