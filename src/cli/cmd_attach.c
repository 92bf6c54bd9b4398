/* cmd_attach.c: `dnprof attach PID`: the trigger process of docs/design-notes.md#attach. Sends the
 * runtime of a running program the diagnostics IPC's AttachProfiler command
 * with the agent's path and the configuration blob (attach_blob.h), then
 * records until Ctrl-C, --duration or `dnprof detach`, detaches the agent
 * through its control socket, and says what was recorded, as `dnprof run` does. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "attach_blob.h"
#include "cli.h"
#include "families.h"
#include "ipc.h"
#include "run_windows.h"
#include "session.h"

static void attach_help(void) {
    fputs("usage: dnprof attach [options] PID\n"
          "\n"
          "Loads dnprof's agent into a .NET program that is already running and records\n"
          "what its runtime does from now on, until Ctrl-C, the --duration, or\n"
          "'dnprof detach PID' from elsewhere. Then the agent detaches and the runtime\n"
          "unloads it: the program runs on as before, and can be attached to again.\n"
          "The trace starts with what already existed (app domains, assemblies, modules,\n"
          "threads). 'dnprof ps' lists the processes you can attach to. A program in a\n"
          "container is attached to by the pid the host sees, as root (docs/containers.md).\n"
          "\n"
          "options:\n"
          "  -e, --events LIST     what to record (default: default). An attached profiler\n"
          "                        can have only:\n"
          "                          appdomains, assemblies, modules, classes, jit,\n"
          "                          threads, suspends, gc, exceptions\n"
          "                        (default and all mean those). alloc, transitions, cache,\n"
          "                        functions and ccw need flags the runtime accepts only at\n"
          "                        start-up: use dnprof run for them. gc needs a program\n"
          "                        without background GC (DOTNET_gcConcurrent=0, or server GC)\n"
          "      --exceptions      each exception's story: records exceptions,threads (added\n"
          "                        to --events) and a stack snapshot at each throw (then\n"
          "                        'dnprof print --exceptions', 'dnprof report --exceptions')\n"
          "  -o, --output FILE     the trace file, replaced if it exists (default:\n"
          "                        dnprof-<pid>.trace in the current directory); the program\n"
          "                        writes it, so its user must be able to\n"
          "  -d, --duration TIME   record this long, then detach: 30s, 500ms, 2m, 1h (the\n"
          "                        recording's length, from the attach to the detach\n"
          "                        request; the runtime then takes about 0.3 s to unload)\n"
          "      --flush-ms N      how often the agent writes its buffers out, in ms\n"
          "      --alloc           sampled allocations by type and call path, through the\n"
          "                        runtime's own sampling (cheap; dnprof report --alloc);\n"
          "                        without --events, with the threads' names only\n"
          "      --locks[=waits]   lock contention: time waited by waiting stack, locked\n"
          "                        type and owner thread (dnprof report --locks,\n"
          "                        docs/waits.md); =waits: WaitHandle waits too (.NET 9+)\n"
          "      --gc              every collection: generation, reason, type, pause, heap\n"
          "                        sizes, from the runtime's GC events (works with\n"
          "                        background GC, unlike the gc family; dnprof report --gc)\n"
          "      --threadpool      the thread pool's worker-count changes, starvation among\n"
          "                        them (dnprof report --threadpool)\n"
          "      --sample[=MODE]   sample every thread's stack, HZ times a second, without\n"
          "                        stopping the runtime (docs/sampling.md); MODE cpu (the\n"
          "                        default), wall or suspend; read with dnprof report\n",
          stdout);
    printf("      --rate HZ         samples per second and thread (default %u, at most %u)\n",
           dnp_setting_default(DNP_SET_SAMPLE_RATE), dnp_settings[DNP_SET_SAMPLE_RATE].max);
    fputs(
          "      --cpu, --wall     --sample=cpu, --sample=wall\n"
          "      --trace PATTERN   the methods whose Namespace.Class::Method matches a glob\n"
          "                        of PATTERN (comma-separated; repeatable) re-JIT-compiled\n"
          "                        with a probe at entry and every exit (exceptions too),\n"
          "                        their callers that inlined them too: exact calls, total,\n"
          "                        mean, p50, p99, max per method and caller (dnprof report;\n"
          "                        docs/calls.md). At the end they run their original code\n"
          "                        again, but the runtime keeps the agent loaded, inert\n"
          "                        (it unloads no profiler that used ReJIT; docs/attach.md)\n"
          "      --every TIME      continuous profiling, as dnprof run --every: every TIME\n"
          "                        one pprof per type to -o DIR, --pyroscope URL and/or\n"
          "                        --otlp URL (an OpenTelemetry Collector's OTLP/HTTP;\n"
          "                        env: OTEL_EXPORTER_OTLP_ENDPOINT's)\n"
          "                        (with --keep N, --label K=V, --service NAME,\n"
          "                        --push-timeout TIME; docs/production.md); alone, --every\n"
          "                        samples CPU time; the trace itself is not kept\n"
          DNP_HELP_LOADING_OPTIONS
          "\n"
          "--calls, --timeline, --args, --include, --exclude and --all-code are dnprof run's:\n"
          "the runtime installs enter/leave hooks only when a program starts.\n"
          "\n"
          "examples:\n"
          "  dnprof ps\n"
          "  dnprof attach 4242 --duration 30s -o app.trace\n"
          "  dnprof attach 4242 --sample --duration 30s -o app.trace && dnprof report app.trace\n"
          "  dnprof attach 4242 --events classes,jit,exceptions     (Ctrl-C to stop)\n"
          "  dnprof attach 4242 --every 10s --pyroscope http://pyroscope:4040 --label env=prod\n"
          "  dnprof attach 4242 --every 10s --otlp http://otel-collector:4318\n"
          "  dnprof attach 4242 --trace 'MyApp.Orders::Place*' --duration 1m && dnprof report\n"
          "  dnprof print app.trace\n",
          stdout);
}

/* "30s", "500ms", "2m", "1h", "30" (seconds) -> milliseconds; -1 if not a duration. */
static long long parse_duration(const char *text) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !(v > 0) || !isfinite(v))
        return -1;
    double ms;
    if (!*end || !strcmp(end, "s"))
        ms = v * 1000;
    else if (!strcmp(end, "ms"))
        ms = v;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        ms = v * 60000;
    else if (!strcmp(end, "h"))
        ms = v * 3600000;
    else
        return -1;
    return ms >= 1 && ms < 1e12 ? (long long)ms : -1;
}

/* Checks --events against what an attached profiler may have. Families named
 * outright (or mask bits) that are wholly unavailable are an error; "all" and
 * "default" quietly mean what is available. Returns 0, or CLI_EXIT_USAGE
 * after saying which flags and what to do. *left_out: families dropped. */
static int check_events(const char *text, uint32_t *families, char *left_out, size_t cap) {
    dnp_event_config cfg;
    char err[512];
    left_out[0] = 0;
    if (dnp_events_parse(text, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "dnprof attach: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    dnp_attach_events a;
    dnp_events_after_attach(&cfg, &a);
    char flags[512], fams[256];
    if (cfg.from_mask && a.dropped) {
        fprintf(stderr,
                "dnprof attach: --events mask 0x%08x: %s cannot be set after an attach "
                "(COR_PRF_ALLOWABLE_AFTER_ATTACH is 0x%08x); use dnprof run for them\n",
                cfg.mask, dnp_prf_flags_format(a.dropped, 0, flags, sizeof flags),
                (unsigned)COR_PRF_ALLOWABLE_AFTER_ATTACH);
        return CLI_EXIT_USAGE;
    }
    uint32_t refused = cfg.named & a.whole;
    if (refused) {
        fprintf(stderr,
                "dnprof attach: --events %s: not available to an attached profiler: they need "
                "%s, which the runtime accepts only at start-up (COR_PRF_ALLOWABLE_AFTER_ATTACH); "
                "record them with dnprof run, or leave them out\n",
                dnp_families_format(refused, fams, sizeof fams),
                dnp_prf_flags_format(dnp_families_mask(refused), 0, flags, sizeof flags));
        return CLI_EXIT_USAGE;
    }
    if (a.whole)
        dnp_families_format(a.whole, left_out, cap);
    *families = cfg.families & ~a.whole;
    return 0;
}

/* ---- options ---- */

/* dnprof run's options that only a profiler loaded at start-up can have: the
 * runtime installs enter/leave hooks (COR_PRF_MONITOR_ENTERLEAVE) only then.
 * attach knows them so that it says so, not "unknown option". */
static const struct {
    const char *name;
    int has_arg;
} startup_only[] = {
    {"calls", no_argument},       {"timeline", no_argument},        {"args", no_argument},
    {"include", required_argument}, {"exclude", required_argument}, {"all-code", no_argument},
};
#define NSTARTUP (sizeof startup_only / sizeof startup_only[0])

enum { OPT_FLUSH = 256, OPT_TIMEOUT, OPT_ALLOC, OPT_EXCEPTIONS, OPT_SAMPLE, OPT_RATE, OPT_CPU, OPT_WALL, OPT_LOCKS,
       OPT_GC = 380, OPT_THREADPOOL, OPT_AGENT_PATH = 390, OPT_TRACE,
       OPT_EVERY = 400, OPT_WIN = 410, /* + the sinks' options of windows_cli.h */
       OPT_STARTUP_ONLY = 512 };

static const struct option attach_options[] = {
    {"events", required_argument, NULL, 'e'},   {"output", required_argument, NULL, 'o'},
    {"duration", required_argument, NULL, 'd'}, {"flush-ms", required_argument, NULL, OPT_FLUSH},
    {"timeout", required_argument, NULL, OPT_TIMEOUT}, {"alloc", no_argument, NULL, OPT_ALLOC},
    {"exceptions", no_argument, NULL, OPT_EXCEPTIONS}, {"locks", optional_argument, NULL, OPT_LOCKS},
    {"sample", optional_argument, NULL, OPT_SAMPLE}, {"rate", required_argument, NULL, OPT_RATE},
    {"cpu", no_argument, NULL, OPT_CPU},        {"wall", no_argument, NULL, OPT_WALL},
    {"gc", no_argument, NULL, OPT_GC},          {"threadpool", no_argument, NULL, OPT_THREADPOOL},
    {"quiet", no_argument, NULL, 'q'},          {"help", no_argument, NULL, 'h'},
    {"agent-path", required_argument, NULL, OPT_AGENT_PATH}, {"trace", required_argument, NULL, OPT_TRACE},
    {"every", required_argument, NULL, OPT_EVERY}, {"keep", required_argument, NULL, OPT_WIN + WOPT_KEEP},
    {"pyroscope", required_argument, NULL, OPT_WIN + WOPT_PYROSCOPE},
    {"label", required_argument, NULL, OPT_WIN + WOPT_LABEL},
    {"service", required_argument, NULL, OPT_WIN + WOPT_SERVICE},
    {"push-timeout", required_argument, NULL, OPT_WIN + WOPT_PUSH_TIMEOUT},
    {"otlp", required_argument, NULL, OPT_WIN + WOPT_OTLP},
};
#define NOPTIONS (sizeof attach_options / sizeof attach_options[0])

static int startup_only_error(const char *name) {
    fprintf(stderr,
            "dnprof attach: --%s: the runtime installs enter/leave hooks only when a program "
            "starts (COR_PRF_MONITOR_ENTERLEAVE cannot be set after an attach): record calls "
            "with dnprof run --calls -- PROGRAM, or see where a running program spends its "
            "time by sampling (dnprof attach --sample)\n",
            name);
    return CLI_EXIT_USAGE;
}

/* --every and its sinks' options: 0 or an exit code; -1 for another option. */
static int take_window_option(attach_opts *o, int c) {
    if (c >= OPT_WIN && c <= OPT_WIN + WOPT_LAST)
        return window_take_option("attach", &o->wf, c - OPT_WIN, optarg);
    if (c != OPT_EVERY)
        return -1;
    long long ms = cli_parse_duration(optarg);
    if (ms < 100 || ms > 86400000)
        return usage_error("attach", "--every wants a window length from 100ms to 24h (10s, 1m), not '%s'", optarg);
    o->every_ms = (unsigned)ms;
    return 0;
}

/* --every: the sinks, and what is windowed (alone: CPU samples); -o is then
 * the profiles' directory. 0 or an exit code. */
static int check_every(attach_opts *o) {
    window_follow *f = &o->wf;
    if (!o->every_ms)
        return window_check_no_every("attach", f);
    if (!o->sample && !o->alloc && !o->exceptions) {
        o->sample = 1;
        if (!o->events)
            o->events = "threads";
    }
    f->out_dir = o->output;
    o->output = NULL;
    f->quiet = o->quiet;
    return window_check_options("attach", f);
}

/* One --trace PATTERN added to o->trace; 0, or the exit code of a usage error. */
static int add_trace(attach_opts *o, const char *pat) {
    size_t len = strlen(o->trace);
    if (pat[strspn(pat, ", ")] == 0)
        return usage_error("attach", "--trace wants method patterns such as 'MyApp.Orders::*', not '%s'", pat);
    if (len + 1 + strlen(pat) >= sizeof o->trace)
        return usage_error("attach", "the --trace patterns add up to more than %zu characters", sizeof o->trace - 1);
    snprintf(o->trace + len, sizeof o->trace - len, "%s%s", len ? "," : "", pat);
    return 0;
}

/* The events of the modes when --events is not given: what each asks for and
 * what it needs, never the default families (their gc heap walk) by surprise. */
static int mode_events(attach_opts *o) {
    if (o->trace[0] && o->every_ms)
        return usage_error("attach", "--trace writes its sums into the trace, which --every does not keep");
    if (o->trace[0] && !o->events && !(o->sample || o->alloc || o->locks || o->gc || o->threadpool))
        o->events = "modules"; /* the sums alone, and the modules the methods live in */
    if ((o->sample || o->alloc || o->locks || o->gc || o->threadpool) && !o->events)
        o->events = "threads"; /* the threads' names (lock owners); alloc sites carry their own */
    return 0;
}

/* Fills o from argv; 0, or the exit code of a usage error. */
static int parse_options(int argc, char **argv, attach_opts *o) {
    static struct option longopts[NOPTIONS + NSTARTUP + 1];
    for (size_t i = 0; i < NOPTIONS; i++)
        longopts[i] = attach_options[i];
    for (size_t i = 0; i < NSTARTUP; i++)
        longopts[NOPTIONS + i] =
            (struct option){startup_only[i].name, startup_only[i].has_arg, NULL, OPT_STARTUP_ONLY + (int)i};
    memset(o, 0, sizeof *o);
    o->duration_ms = -1;
    o->timeout_s = 10;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":e:o:d:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': o->events = optarg; break;
        case 'o': o->output = optarg; break;
        case 'd':
            if ((o->duration_ms = parse_duration(optarg)) < 0)
                return usage_error("attach", "--duration wants a time such as 30s, 500ms, 2m, not '%s'",
                                   optarg);
            break;
        case OPT_ALLOC: o->alloc = 1; break;
        case OPT_LOCKS:
            if (optarg && strcmp(optarg, "waits") != 0)
                return usage_error("attach", "--locks takes no value or 'waits' (--locks=waits), not '%s'", optarg);
            o->locks = optarg || o->locks == 2 ? 2 : 1;
            break;
        case OPT_EXCEPTIONS: o->exceptions = 1; break;
        case OPT_GC: o->gc = 1; break;
        case OPT_THREADPOOL: o->threadpool = 1; break;
        case OPT_SAMPLE: {
            unsigned mode = o->sample ? (unsigned)o->sample : 1;
            if (optarg && (dnp_setting_parse(DNP_SET_SAMPLE, optarg, &mode) < 0 || mode == 0))
                return usage_error("attach", "--sample takes cpu, wall or suspend, not '%s'", optarg);
            o->sample = (int)mode;
            break;
        }
        case OPT_CPU: o->sample = 1; break;
        case OPT_WALL: o->sample = 2; break;
        case OPT_RATE:
            if (cli_parse_u64(optarg, &o->sample_rate) != 0 || o->sample_rate < dnp_settings[DNP_SET_SAMPLE_RATE].min ||
                o->sample_rate > dnp_settings[DNP_SET_SAMPLE_RATE].max)
                return usage_error("attach", "--rate wants samples per second from %u to %u, not '%s'",
                                   dnp_settings[DNP_SET_SAMPLE_RATE].min, dnp_settings[DNP_SET_SAMPLE_RATE].max, optarg);
            if (!o->sample)
                o->sample = 1;
            break;
        case OPT_FLUSH:
            if (cli_parse_u64(optarg, &o->flush_ms) != 0 || o->flush_ms < dnp_settings[DNP_SET_FLUSH_MS].min ||
                o->flush_ms > dnp_settings[DNP_SET_FLUSH_MS].max)
                return usage_error("attach", "--flush-ms wants milliseconds from %u to %u, not '%s'",
                                   dnp_settings[DNP_SET_FLUSH_MS].min, dnp_settings[DNP_SET_FLUSH_MS].max, optarg);
            break;
        case OPT_TIMEOUT:
            if ((rc = cli_timeout_option("attach", optarg, 600, &o->timeout_s)) != 0)
                return rc;
            break;
        case OPT_TRACE:
            if ((rc = add_trace(o, optarg)) != 0)
                return rc;
            break;
        case OPT_AGENT_PATH:
            if ((rc = cli_agent_path_option("attach", optarg, &o->agent_path)) != 0)
                return rc;
            break;
        case 'q': o->quiet = 1; break;
        case 'h': attach_help(); return CLI_HELP_SHOWN;
        default:
            if ((rc = take_window_option(o, c)) >= 0) {
                if (rc)
                    return rc;
                break;
            }
            if (c >= OPT_STARTUP_ONLY && c < OPT_STARTUP_ONLY + (int)NSTARTUP)
                return startup_only_error(startup_only[c - OPT_STARTUP_ONLY].name);
            return cli_bad_option("attach", argv, c);
        }
    }
    int bad = cli_one_pid("attach", "attach to itself", argc, argv, &o->pid);
    if (bad)
        return bad;
    if (o->output && !*o->output)
        return usage_error("attach", "--output wants a file name");
    if (cli_events_name_calls(o->events))
        return usage_error("attach", "--events calls: the runtime installs enter/leave hooks only when a "
                                     "program starts: record calls with dnprof run --calls, or sample a running "
                                     "program (dnprof attach --sample)");
    if ((rc = mode_events(o)) != 0)
        return rc;
    if (o->exceptions) {
        /* As dnprof run --exceptions: the exception events, the threads' names,
         * and the stacks, which the agent takes from the blob. */
        static char exc_events[DNP_BLOB_EVENTS_MAX];
        if (o->events && strlen(o->events) > DNP_BLOB_EVENTS_MAX - 32)
            return usage_error("attach", "--events is too long");
        snprintf(exc_events, sizeof exc_events, "%s%sexceptions,threads", o->events && *o->events ? o->events : "",
                 o->events && *o->events ? "," : "");
        o->events = exc_events;
    }
    return 0;
}

/* ---- before the attach ---- */

/* The process exists and has no agent yet. */
static int check_target(pid_t pid, ipc_proc *proc) {
    if (ipc_proc_read(pid, proc) < 0)
        return error("no such process: %d (dnprof ps lists the .NET processes you can attach to)", (int)pid);
    ctl_sweep(proc->uid); /* control sockets that killed agents left behind */
    if (proc->has_agent == 1) {
        /* an earlier snapshot's agent, or a detach, on its way out */
        if (ctl_wait_detaching(pid, proc->uid, 30000) > 0 && ipc_proc_read(pid, proc) < 0)
            return error("no such process: %d (it exited)", (int)pid);
    }
    if (proc->has_agent != 1)
        return 0;
    char sock[PATH_MAX];
    int attached = ctl_socket_path(pid, proc->uid, DNP_CONTROL_SOCKET_FMT, sock, sizeof sock) == 0 &&
                   ctl_socket_live(sock, pid) != 0;
    if (attached)
        return error("pid %d (%s) already has dnprof's agent attached: stop that recording first "
                     "(dnprof detach %d)",
                     (int)pid, proc->comm, (int)pid);
    return error("pid %d (%s) already has dnprof's agent, loaded at start-up (dnprof run), or left "
                 "loaded and inert by an attach with --trace (docs/attach.md): a runtime takes one "
                 "profiler at a time, until the program exits",
                 (int)pid, proc->comm);
}

/* Asks the runtime of o->pid to load the agent with the configuration blob.
 * 0 once the agent is in (InitializeForAttach returned), or -1 after saying why. */
static int request_attach(const attach_opts *o, const ipc_proc *proc, const char *out_abs,
                          dnp_attach_blob *blob) {
    memset(blob, 0, sizeof *blob);
    snprintf(blob->events, sizeof blob->events, "%s", o->events && *o->events ? o->events : DNP_EVENTS_DEFAULT);
    snprintf(blob->output, sizeof blob->output, "%s", out_abs);
    blob->flush_ms = (uint32_t)o->flush_ms;
    blob->alloc = (uint32_t)o->alloc;
    blob->locks = (uint32_t)o->locks;
    blob->exc_stacks = (uint32_t)o->exceptions;
    blob->sample = (uint32_t)o->sample;
    blob->sample_rate = (uint32_t)o->sample_rate;
    blob->gc = (uint32_t)o->gc;
    blob->threadpool = (uint32_t)o->threadpool;
    blob->every_ms = o->every_ms;
    snprintf(blob->trace, sizeof blob->trace, "%s", o->trace);
    if (o->every_ms) /* the windows go beside the trace, in the directory dnprof follows */
        snprintf(blob->window_dir, sizeof blob->window_dir, "%.*s", (int)(strrchr(out_abs, '/') - out_abs), out_abs);
    return handshake_attach(o->pid, proc->uid, (uint32_t)o->timeout_s, blob);
}

/* ---- recording ---- */

/* Waits for a signal, the end (until, monotonic ms; -1: none), a detach from
 * elsewhere, or the process's end, whichever comes first. */
static record_end record(int fd, long long until) {
    while (!cli_stop_signal) {
        int wait = -1;
        if (until >= 0) {
            long long left = until - ipc_now_ms();
            if (left <= 0)
                break;
            wait = left > 1000 ? 1000 : (int)left;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, wait) <= 0)
            continue;
        char line[256];
        int got = ctl_read_line(fd, line, sizeof line, 5000);
        if (got == 0)
            return END_EXITED;
        if (got == 1 && strncmp(line, DNP_CONTROL_DETACHED " ", sizeof DNP_CONTROL_DETACHED) == 0)
            return strstr(line, " " DNP_CONTROL_INERT) ? END_INERT_ELSEWHERE
                                                        : END_DETACHED_ELSEWHERE; /* dnprof detach, from elsewhere */
    }
    return END_STOP;
}

/* Ends the recording as it ended: detaches the agent when we stop it. 0 or 1. */
static int finish(pid_t pid, int fd, record_end how, int quiet) {
    if (how == END_EXITED) {
        close(fd);
        /* The socket closes as the process exits; give it a moment to be gone. */
        ipc_proc p;
        long long give_up = ipc_now_ms() + 3000;
        while (ipc_proc_read(pid, &p) == 0 && ipc_now_ms() < give_up)
            usleep(10000);
        if (ipc_proc_read(pid, &p) != 0)
            fprintf(stderr, "dnprof: pid %d exited while attached\n", (int)pid);
        else
            error("the agent in pid %d closed its control socket", (int)pid);
        return 0;
    }
    if (how == END_INERT_ELSEWHERE) {
        close(fd);
        handshake_detached(pid, 2, quiet, "");
        return 0;
    }
    if (how == END_DETACHED_ELSEWHERE) {
        close(fd);
        if (ctl_wait_unloaded(pid, 30000) < 0)
            warning("pid %d: the trace is complete, but the agent is not unloaded yet", (int)pid);
        if (!quiet)
            fprintf(stderr, "dnprof: pid %d: detached (dnprof detach)\n", (int)pid);
        return 0;
    }
    if (!quiet && cli_stop_signal)
        fprintf(stderr, "\ndnprof: detaching from pid %d...\n", (int)pid);
    char err[IPC_ERR_MAX];
    uint64_t n = 0;
    int d = ctl_detach(pid, fd, 30000, &n, err, sizeof err);
    close(fd);
    if (d < 0) {
        error("%s", err);
        return 1;
    }
    handshake_detached(pid, d, quiet, "while attached");
    return 0;
}

static void say_recording(const attach_opts *o, const ipc_proc *proc, uint32_t families,
                          const char *left_out, const char *out_abs) {
    char fams[256];
    dnp_families_format(families & ~(1u << DNP_FAM_RUNTIME), fams, sizeof fams);
    char what[256] = "", mode[16];
    if (o->sample)
        snprintf(what, sizeof what, ", stack samples (%s, %llu Hz)",
                 dnp_setting_word(DNP_SET_SAMPLE, (unsigned)o->sample, mode, sizeof mode),
                 (unsigned long long)(o->sample_rate ? o->sample_rate : dnp_setting_default(DNP_SET_SAMPLE_RATE)));
    if (o->alloc)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", sampled allocations");
    if (o->locks)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", lock contention");
    if (o->gc)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", GC statistics");
    if (o->threadpool)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", thread-pool adjustments");
    if (o->trace[0])
        snprintf(what + strlen(what), sizeof what - strlen(what), ", the calls of %.60s%s", o->trace,
                 strlen(o->trace) > 60 ? "..." : "");
    fprintf(stderr, "dnprof: attached to pid %d (%s): recording %s%s into %s", (int)o->pid, proc->comm, fams,
            what, cli_short_path(out_abs));
    if (o->duration_ms >= 0)
        fprintf(stderr, " for %g s\n", (double)o->duration_ms / 1000); /* as given: 1200 s, 2.5 s */
    else
        fprintf(stderr, "; Ctrl-C or dnprof detach %d stops\n", (int)o->pid);
    if (left_out[0])
        fprintf(stderr, "dnprof: left out (an attached profiler cannot have them; dnprof run can): %s\n",
                left_out);
}

int attach_begin(const attach_opts *o, const char *def, attach_live *a) {
    memset(a, 0, sizeof *a);
    a->fd = -1;
    handshake_agent_path(o->agent_path);
    if (check_target(o->pid, &a->proc) < 0 ||
        handshake_output(o->output, def, "trace", a->out_abs, sizeof a->out_abs) < 0 ||
        request_attach(o, &a->proc, a->out_abs, &a->blob) < 0)
        return -1;
    /* the agent writes its messages there until it detaches */
    ctl_agent_log_from(a->blob.control_dir, o->pid, o->quiet, &a->log_offset, 0);
    a->fd = handshake_connect(o->pid);
    return a->fd < 0 ? -1 : 0;
}

int attach_end(const attach_opts *o, attach_live *a, record_end how) {
    int finished = finish(o->pid, a->fd, how, o->quiet);
    a->fd = -1;
    ctl_agent_log_from(a->blob.control_dir, o->pid, o->quiet, &a->log_offset, 1);
    return handshake_bring_back(o->pid, a->blob.output, a->out_abs) != 0 || finished != 0 ? 1 : 0;
}

/* Attaches, records (following the windows, with --every) and detaches: the exit code. */
static int attach_and_record(const attach_opts *op, uint32_t families, const char *left_out, const char *def,
                             const char *wdir, run_windows *rw) {
    attach_opts o = *op;
    static attach_live a;
    if (attach_begin(&o, def, &a) != 0)
        return 1;
    /* The recording began as the runtime answered (InitializeForAttach had
     * returned): a duration is the recording's length, counted from here. */
    long long until = o.duration_ms >= 0 ? ipc_now_ms() + o.duration_ms : -1;
    cli_catch_stop_signals();
    if (!o.quiet)
        say_recording(&o, &a.proc, families, left_out, a.out_abs);
    static char follow[PATH_MAX]; /* wdir, or in a container the windows' directory there */
    if (o.every_ms && (handshake_windows_dir(o.pid, &a.blob, follow, sizeof follow) != 0 ||
                       run_windows_start(rw, follow) != 0))
        o.every_ms = 0; /* said why; the recording goes on into the trace */
    record_end how = record(a.fd, until);
    int rc = attach_end(&o, &a, how);
    run_windows_finish(rw); /* the agent wrote its last window before it detached */
    if (o.every_ms && strcmp(follow, wdir) != 0)
        cli_session_remove(follow); /* in the container: what the agent left there */
    if (rc != 0)
        return 1;
    if (!o.quiet && !o.every_ms) {
        cli_trace_summary(a.out_abs, NULL);
        cli_recorded rec = {o.sample || o.trace[0], o.exceptions, o.alloc, o.locks, o.gc, o.threadpool};
        cli_next_step(&rec, a.out_abs);
    }
    return 0;
}

int cmd_attach(int argc, char **argv) {
    static attach_opts o;
    int rc;
    if ((rc = parse_options(argc, argv, &o)) != 0 || (rc = check_every(&o)) != 0)
        return cli_done(rc);
    uint32_t families = 0;
    char left_out[256];
    if ((rc = check_events(o.events, &families, left_out, sizeof left_out)) != 0)
        return rc;
    char def[64];
    snprintf(def, sizeof def, "dnprof-%d.trace", (int)o.pid);
    static char wdir[PATH_MAX], in_wdir[PATH_MAX + 80];
    static run_windows rw;
    if (o.every_ms) { /* the trace and the windows in a private directory, removed at the end */
        if (cli_session_create(wdir, sizeof wdir) != 0)
            return 1;
        snprintf(in_wdir, sizeof in_wdir, "%s/%s", wdir, def);
        o.output = in_wdir;
        rw.f = o.wf;
    }
    rc = attach_and_record(&o, families, left_out, def, wdir, &rw);
    if (o.every_ms)
        cli_session_remove(wdir);
    return rc;
}
