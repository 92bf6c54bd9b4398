/* cmd_attach.c: `dnprof attach PID`: the trigger process of seed 003. Sends the
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

#include "attach_blob.h"
#include "cli.h"
#include "families.h"
#include "ipc.h"
#include "session.h"

/* corprof.idl (.NET Core): what SetEventMask accepts after an attach. */
#define ALLOWABLE_AFTER_ATTACH 0x106502FEu

static const struct {
    uint32_t bit;
    const char *name;
} flag_names[] = {
    {0x1, "MONITOR_FUNCTION_UNLOADS"},     {0x2, "MONITOR_CLASS_LOADS"},
    {0x4, "MONITOR_MODULE_LOADS"},         {0x8, "MONITOR_ASSEMBLY_LOADS"},
    {0x10, "MONITOR_APPDOMAIN_LOADS"},     {0x20, "MONITOR_JIT_COMPILATION"},
    {0x40, "MONITOR_EXCEPTIONS"},          {0x80, "MONITOR_GC"},
    {0x100, "MONITOR_OBJECT_ALLOCATED"},   {0x200, "MONITOR_THREADS"},
    {0x400, "MONITOR_REMOTING"},           {0x800, "MONITOR_CODE_TRANSITIONS"},
    {0x1000, "MONITOR_ENTERLEAVE"},        {0x2000, "MONITOR_CCW"},
    {0x4000, "MONITOR_REMOTING_COOKIE"},   {0x8000, "MONITOR_REMOTING_ASYNC"},
    {0x10000, "MONITOR_SUSPENDS"},         {0x20000, "MONITOR_CACHE_SEARCHES"},
    {0x40000, "ENABLE_REJIT"},             {0x80000, "ENABLE_INPROC_DEBUGGING"},
    {0x100000, "ENABLE_JIT_MAPS"},         {0x200000, "DISABLE_INLINING"},
    {0x400000, "DISABLE_OPTIMIZATIONS"},   {0x800000, "ENABLE_OBJECT_ALLOCATED"},
    {0x1000000, "MONITOR_CLR_EXCEPTIONS"}, {0x2000000, "ENABLE_FUNCTION_ARGS"},
    {0x4000000, "ENABLE_FUNCTION_RETVAL"}, {0x8000000, "ENABLE_FRAME_INFO"},
    {0x10000000, "ENABLE_STACK_SNAPSHOT"}, {0x20000000, "USE_PROFILE_IMAGES"},
    {0x40000000, "DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST"},
    {0x80000000u, "DISABLE_ALL_NGEN_IMAGES"},
};

static void flags_text(uint32_t mask, char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++) {
        if (!(mask & flag_names[i].bit))
            continue;
        int n = snprintf(out + len, cap - len, "%sCOR_PRF_%s", len ? ", " : "", flag_names[i].name);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
}

static void attach_help(void) {
    fputs("usage: dnprof attach [options] PID\n"
          "\n"
          "Loads dnprof's agent into a .NET program that is already running and records\n"
          "what its runtime does from now on, until Ctrl-C, the --duration, or\n"
          "'dnprof detach PID' from elsewhere. Then the agent detaches and the runtime\n"
          "unloads it: the program runs on as before, and can be attached to again.\n"
          "The trace starts with what already existed (app domains, assemblies, modules,\n"
          "threads). 'dnprof ps' lists the processes you can attach to.\n"
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
          "  -o, --output FILE     the trace file, replaced if it exists (default:\n"
          "                        dnprof-<pid>.trace in the current directory); the program\n"
          "                        writes it, so its user must be able to\n"
          "  -d, --duration TIME   record this long, then detach: 30s, 500ms, 2m, 1h\n"
          "      --flush-ms N      how often the agent writes its buffers out, in ms\n"
          "      --sample[=MODE]   sample every thread's stack, HZ times a second, without\n"
          "                        stopping the runtime (docs/sampling.md); MODE cpu (the\n"
          "                        default), wall or suspend; read with dnprof report\n"
          "      --rate HZ         samples per second and thread (default 100, at most 10000)\n"
          "      --cpu, --wall     --sample=cpu, --sample=wall\n"
          "      --timeout SECONDS how long the runtime may take to load the agent (default 10)\n"
          "  -q, --quiet           print nothing but errors\n"
          "  -h, --help            print this help\n"
          "\n"
          "examples:\n"
          "  dnprof ps\n"
          "  dnprof attach 4242 --duration 30s -o app.trace\n"
          "  dnprof attach 4242 --sample --duration 30s -o app.trace && dnprof report app.trace\n"
          "  dnprof attach 4242 --events classes,jit,exceptions     (Ctrl-C to stop)\n"
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
    uint32_t refused_fams = 0, refused_bits = 0;
    const char *p = text ? text : "";
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *w = p;
        while (len && (*w == ' ' || *w == '\t'))
            w++, len--;
        while (len && (w[len - 1] == ' ' || w[len - 1] == '\t'))
            len--;
        if (len > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
            refused_bits |= cfg.mask & ~ALLOWABLE_AFTER_ATTACH;
        } else if (len && w[0] != '-') {
            int f = dnp_family_lookup(w, len);
            if (f >= 0) {
                uint32_t m = dnp_families_mask(1u << f);
                if (m && !(m & ALLOWABLE_AFTER_ATTACH)) {
                    refused_fams |= 1u << f;
                    refused_bits |= m;
                }
            }
        }
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    if (refused_bits) {
        char flags[512], fams[256];
        flags_text(refused_bits, flags, sizeof flags);
        if (refused_fams)
            fprintf(stderr,
                    "dnprof attach: --events %s: not available to an attached profiler: they need "
                    "%s, which the runtime accepts only at start-up (COR_PRF_ALLOWABLE_AFTER_ATTACH); "
                    "record them with dnprof run, or leave them out\n",
                    dnp_families_format(refused_fams, fams, sizeof fams), flags);
        else
            fprintf(stderr,
                    "dnprof attach: --events mask 0x%08x: %s cannot be set after an attach "
                    "(COR_PRF_ALLOWABLE_AFTER_ATTACH is 0x%08x); use dnprof run for them\n",
                    cfg.mask, flags, ALLOWABLE_AFTER_ATTACH);
        return CLI_EXIT_USAGE;
    }
    uint32_t dropped = 0;
    for (int f = 0; f < DNP_FAM_COUNT; f++) {
        uint32_t m = dnp_families_mask(1u << f);
        if ((cfg.families & (1u << f)) && m && !(m & ALLOWABLE_AFTER_ATTACH))
            dropped |= 1u << f;
    }
    if (dropped)
        dnp_families_format(dropped, left_out, cap);
    *families = cfg.families & ~dropped;
    return 0;
}

static volatile sig_atomic_t g_signal;

static void on_signal(int sig) {
    g_signal = sig;
}

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Prints what the agent said while attaching (its log in the control
 * directory) and removes the log. */
static void agent_log(const char *dir, pid_t pid, int quiet) {
    char path[256];
    snprintf(path, sizeof path, DNP_CONTROL_LOG_FMT, dir, (long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f))
        if (!quiet)
            fprintf(stderr, "%s%s", strncmp(line, "dnprof: ", 8) ? "dnprof: " : "", line);
    fclose(f);
    unlink(path);
}

int cmd_attach(int argc, char **argv) {
    enum { OPT_FLUSH = 256, OPT_TIMEOUT, OPT_SAMPLE = 340, OPT_RATE, OPT_CPU, OPT_WALL };
    static const struct option longopts[] = {
        {"events", required_argument, NULL, 'e'},   {"output", required_argument, NULL, 'o'},
        {"duration", required_argument, NULL, 'd'}, {"flush-ms", required_argument, NULL, OPT_FLUSH},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"sample", optional_argument, NULL, OPT_SAMPLE}, {"rate", required_argument, NULL, OPT_RATE},
        {"cpu", no_argument, NULL, OPT_CPU}, {"wall", no_argument, NULL, OPT_WALL},
        {"quiet", no_argument, NULL, 'q'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *events = NULL, *output = NULL;
    long long duration_ms = -1;
    uint64_t flush_ms = 0, timeout_s = 10, sample_rate = 0;
    int quiet = 0, c, sample = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":e:o:d:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': events = optarg; break;
        case 'o': output = optarg; break;
        case 'd':
            if ((duration_ms = parse_duration(optarg)) < 0)
                return usage_error("attach", "--duration wants a time such as 30s, 500ms, 2m, not '%s'",
                                   optarg);
            break;
        case OPT_FLUSH:
            if (cli_parse_u64(optarg, &flush_ms) != 0 || flush_ms == 0 || flush_ms >= 60000)
                return usage_error("attach", "--flush-ms wants milliseconds from 1 to 59999, not '%s'",
                                   optarg);
            break;
        case OPT_TIMEOUT:
            if (cli_parse_u64(optarg, &timeout_s) != 0 || timeout_s == 0 || timeout_s > 600)
                return usage_error("attach", "--timeout wants seconds from 1 to 600, not '%s'", optarg);
            break;
        case OPT_SAMPLE:
            if (!optarg || strcmp(optarg, "cpu") == 0)
                sample = sample ? sample : 1;
            else if (strcmp(optarg, "wall") == 0)
                sample = 2;
            else if (strcmp(optarg, "suspend") == 0)
                sample = 3;
            else
                return usage_error("attach", "--sample takes cpu, wall or suspend, not '%s'", optarg);
            break;
        case OPT_CPU: sample = 1; break;
        case OPT_WALL: sample = 2; break;
        case OPT_RATE:
            if (cli_parse_u64(optarg, &sample_rate) != 0 || sample_rate == 0 || sample_rate > 10000)
                return usage_error("attach", "--rate wants samples per second from 1 to 10000, not '%s'", optarg);
            if (!sample)
                sample = 1;
            break;
        case 'q': quiet = 1; break;
        case 'h': attach_help(); return 0;
        default: return cli_bad_option("attach", argv, c);
        }
    }
    if (optind != argc - 1)
        return usage_error("attach", optind >= argc ? "which process? dnprof attach PID (dnprof ps lists them)"
                                                    : "one process at a time: dnprof attach [options] PID");
    pid_t pid = 0;
    if (cli_parse_pid("attach", argv[optind], &pid) != 0)
        return CLI_EXIT_USAGE;
    if (pid == getpid())
        return usage_error("attach", "dnprof cannot attach to itself");

    if (sample && !events)
        events = "threads"; /* the threads' names; nothing else unless asked */
    uint32_t families = 0;
    char left_out[256];
    int rc = check_events(events, &families, left_out, sizeof left_out);
    if (rc)
        return rc;

    char err[IPC_ERR_MAX];
    cli_agent agent;
    if (cli_agent_find(&agent, err, sizeof err) != 0) {
        error("%s", err);
        return 1;
    }

    /* The process, before anything is created for it. */
    ipc_proc proc;
    if (ipc_proc_read(pid, &proc) < 0) {
        error("no such process: %d (dnprof ps lists the .NET processes you can attach to)", (int)pid);
        return 1;
    }
    int probe = ipc_connect(pid, err, sizeof err);
    if (probe < 0) {
        error("%s", err);
        return 1;
    }
    close(probe);
    if (proc.has_agent == 1) {
        char dir[128], sock[256], e2[256];
        int attached = ctl_dir(proc.uid, 0, dir, sizeof dir, e2, sizeof e2) == 0 &&
                       snprintf(sock, sizeof sock, DNP_CONTROL_SOCKET_FMT, dir, (long)pid) > 0 &&
                       access(sock, F_OK) == 0;
        if (attached)
            error("pid %d (%s) already has dnprof's agent attached: stop that recording first "
                  "(dnprof detach %d)",
                  (int)pid, proc.comm, (int)pid);
        else
            error("pid %d (%s) already has dnprof's agent, loaded at start-up (dnprof run): it "
                  "records until the program exits, and a runtime takes one profiler at a time",
                  (int)pid, proc.comm);
        return 1;
    }

    char out_abs[PATH_MAX], def[64];
    snprintf(def, sizeof def, "dnprof-%d.trace", (int)pid);
    if (output && !*output)
        return usage_error("attach", "--output wants a file name");
    if (cli_abs_path(output ? output : def, out_abs, sizeof out_abs) != 0 ||
        strlen(out_abs) >= DNP_BLOB_PATH_MAX) {
        error("cannot use the trace path '%s': it is too long", output ? output : def);
        return 1;
    }
    char out_dir[PATH_MAX];
    memcpy(out_dir, out_abs, sizeof out_dir);
    char *slash = strrchr(out_dir, '/');
    slash[slash == out_dir] = 0;
    if (access(out_dir, W_OK | X_OK) != 0) {
        error("cannot write the trace in '%s': %s%s", cli_short_path(out_dir), strerror(errno),
              output ? "" : " (use -o to put it elsewhere)");
        return 1;
    }

    dnp_attach_blob blob;
    memset(&blob, 0, sizeof blob);
    snprintf(blob.events, sizeof blob.events, "%s",
             events && *events ? events : DNP_EVENTS_DEFAULT);
    blob.sample = (uint32_t)sample;
    blob.sample_rate = (uint32_t)sample_rate;
    snprintf(blob.output, sizeof blob.output, "%s", out_abs);
    blob.flush_ms = (uint32_t)flush_ms;
    blob.trigger_pid = (uint32_t)getpid();
    if (ctl_dir(proc.uid, 1, blob.control_dir, sizeof blob.control_dir, err, sizeof err) < 0) {
        error("%s", err);
        return 1;
    }
    char log[256];
    snprintf(log, sizeof log, DNP_CONTROL_LOG_FMT, blob.control_dir, (long)pid);
    unlink(log);
    static uint8_t wire[DNP_BLOB_MAX];
    long wire_len = dnp_attach_blob_encode(&blob, wire, sizeof wire);
    if (wire_len < 0) {
        error("the attach request does not fit (--events or -o too long)");
        return 1;
    }

    uint32_t hr = 0;
    if (ipc_attach_profiler(pid, (uint32_t)timeout_s * 1000, DNP_CLSID_TEXT, agent.path, wire,
                            (size_t)wire_len, &hr, err, sizeof err) < 0) {
        error("%s", err);
        return 1;
    }
    if (hr != 0) {
        agent_log(blob.control_dir, pid, 0);
        ipc_attach_hr_text(hr, pid, agent.path, err, sizeof err);
        error("%s", err);
        return 1;
    }
    agent_log(blob.control_dir, pid, quiet);

    char ctl_err[IPC_ERR_MAX];
    int fd = ctl_connect(pid, ctl_err, sizeof ctl_err);
    if (fd < 0) {
        error("the agent is in pid %d, but its control socket does not answer: %s", (int)pid, ctl_err);
        return 1;
    }
    catch_signals();
    if (!quiet) {
        char fams[256];
        dnp_families_format(families & ~(1u << DNP_FAM_RUNTIME), fams, sizeof fams);
        fprintf(stderr, "dnprof: attached to pid %d (%s): recording %s into %s", (int)pid, proc.comm,
                fams, cli_short_path(out_abs));
        if (duration_ms >= 0)
            fprintf(stderr, " for %.3g s\n", (double)duration_ms / 1000);
        else
            fprintf(stderr, "; Ctrl-C or dnprof detach %d stops\n", (int)pid);
        if (left_out[0])
            fprintf(stderr,
                    "dnprof: left out (an attached profiler cannot have them; dnprof run can): %s\n",
                    left_out);
    }

    /* Record until a signal, the duration, a detach from elsewhere, or the end. */
    long long until = duration_ms >= 0 ? ipc_now_ms() + duration_ms : -1;
    int ended = 0, detached_elsewhere = 0;
    while (!g_signal) {
        int wait = -1;
        if (until >= 0) {
            long long left = until - ipc_now_ms();
            if (left <= 0)
                break;
            wait = left > 1000 ? 1000 : (int)left;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, wait);
        if (r <= 0)
            continue;
        char line[256];
        int got = ctl_read_line(fd, line, sizeof line, 5000);
        if (got == 0) {
            ended = 1;
            break;
        }
        if (got == 1 && strncmp(line, DNP_CONTROL_DETACHED " ", sizeof DNP_CONTROL_DETACHED) == 0) {
            detached_elsewhere = 1; /* dnprof detach, from elsewhere */
            break;
        }
    }
    if (ended) {
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
    } else if (detached_elsewhere) {
        close(fd);
        if (ctl_wait_unloaded(pid, 30000) < 0)
            warning("pid %d: the trace is complete, but the agent is not unloaded yet", (int)pid);
        if (!quiet)
            fprintf(stderr, "dnprof: pid %d: detached (dnprof detach)\n", (int)pid);
    } else {
        if (!quiet && g_signal)
            fprintf(stderr, "\ndnprof: detaching from pid %d...\n", (int)pid);
        uint64_t n = 0;
        int d = ctl_detach(pid, fd, 30000, &n, err, sizeof err);
        close(fd);
        if (d < 0) {
            error("%s", err);
            return 1;
        }
        if (d == 1)
            fprintf(stderr, "dnprof: pid %d exited while attached\n", (int)pid);
        else if (!quiet)
            fprintf(stderr, "dnprof: detached from pid %d; the agent is unloaded\n", (int)pid);
    }
    if (!quiet)
        cli_trace_summary(out_abs, NULL);
    return 0;
}
