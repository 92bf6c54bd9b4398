/* cmd_run.c: `dnprof run`: runs a program with the agent loaded, then says in
 * one line per trace what was recorded. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "families.h"
#include "session.h"
#include "trace_reader.h"

static void run_help(void) {
    fputs("usage: dnprof run [options] [--] PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM with dnprof's agent loaded into the .NET runtime and records what\n"
          "the runtime does into a trace. The program keeps its terminal, input and output;\n"
          "dnprof exits with its exit code and then prints one line per trace it wrote\n"
          "(.NET programs it starts are recorded too, each into a trace of its own).\n"
          "\n"
          "options:\n"
          "  -e, --events LIST   what to record, comma-separated (default: default, which is\n"
          "                      every family but alloc and transitions). Families:\n",
          stdout);
    cli_print_families(stdout, "                        ");
    fputs("                      also all, default, -NAME to leave one out (all,-gc), or a\n"
          "                      COR_PRF_MONITOR mask in hex (0x1A7FFFF)\n"
          "  -o, --output FILE   the trace file, replaced if it exists; %p in it becomes the\n"
          "                      pid (default: dnprof-<pid>.trace in the current directory)\n"
          "      --flush-ms N    how often the agent writes its buffers out, in ms (1-59999)\n"
          "      --exceptions    every exception's story: the exception events, its message\n"
          "                      and HResult, and a stack snapshot at each throw (read the\n"
          "                      stories with dnprof print --exceptions or dnprof report\n"
          "                      --exceptions); with --events, added to those families\n"
          "      --calls         every call of managed code: exact call counts and times\n"
          "                      per call path (read them with dnprof report, dnprof convert)\n"
          "                      (with the default events less gc, which would slow the\n"
          "                      program down: --events default brings it back)\n"
          "      --calls=counts  exact call counts and call paths only, no clock (cheaper)\n"
          "      --timeline      --calls, and every enter and leave in time order too\n"
          "      --args          --timeline with the arguments and return values (slow)\n"
          "      --include GLOB  only functions whose Namespace.Class::Method matches GLOB\n"
          "                      (* any text, ? one character); repeatable\n"
          "      --exclude GLOB  not these functions; repeatable\n"
          "      --all-code      framework code too, not only the program's own assemblies:\n"
          "                      disables inlining and precompiled (ReadyToRun) code, so the\n"
          "                      program runs slower (--include, --exclude and --all-code\n"
          "                      imply --calls)\n"
          "      --alloc         sampled allocations: bytes by type and by allocating call\n"
          "                      path, from the runtime's own sampling (about one sample\n"
          "                      per 100 KiB; cheap enough for production; read them with\n"
          "                      dnprof report --alloc, dnprof convert)\n"
          "      --sample[=MODE] sample the stacks of every thread, HZ times a second, with\n"
          "                      signals and no stop of the runtime (docs/sampling.md); MODE\n"
          "                      cpu (the default: by CPU time used), wall (by elapsed time,\n"
          "                      running or waiting) or suspend (the runtime's own stack walks,\n"
          "                      stopping it every time); read with dnprof report, convert\n"
          "      --rate HZ       samples per second and thread (default 100, at most 10000)\n"
          "      --cpu, --wall   --sample=cpu, --sample=wall\n"
          "      --heap-at exit  a heap snapshot as the program ends (docs/heap.md; read it\n"
          "                      with dnprof heap report); adds gc to the events\n"
          "      --heap-output FILE  the snapshot file, with --heap-at; %p in it becomes the\n"
          "                      pid (default: dnprof-<pid>.dnheap in the current directory)\n"
          "  -q, --quiet         print no summary at the end\n"
          "  -h, --help          print this help\n"
          "\n"
          "examples:\n"
          "  dnprof run -- dotnet app.dll arg1\n"
          "  dnprof run --events classes,jit,exceptions -o app.trace -- dotnet app.dll\n"
          "  dnprof run --calls --include 'MyApp.*' -o app.trace -- dotnet app.dll\n"
          "  dnprof run --sample --rate 1000 -o app.trace -- dotnet app.dll\n"
          "  dnprof print app.trace\n",
          stdout);
}

static const char *status_word(dnp_trace_status s) {
    switch (s) {
    case DNP_TRACE_COMPLETE: return "complete";
    case DNP_TRACE_OPEN: return "open";
    case DNP_TRACE_TRUNCATED: return "truncated";
    case DNP_TRACE_CORRUPT: return "corrupt";
    }
    return "?";
}

/* "dnprof: trace PATH[ (who)]: N events, T s, status", from one streaming pass
 * over the trace: memory bounded by a chunk and the strings, not the events.
 * cause: why the trace is not complete, when the agent said it (it knows better
 * than the reader's guess). */
static void summarize(const char *path, const char *who, const char *cause) {
    dnp_trace_stream *s = NULL;
    char err[256];
    char label[PATH_MAX + 700];
    snprintf(label, sizeof label, "%s%s%s%s", cli_short_path(path), who ? " (" : "", who ? who : "",
             who ? ")" : "");
    if (dnp_trace_stream_open(path, &s, err, sizeof err) != 0) {
        error("trace %s: %s", label, err);
        return;
    }
    uint64_t n = 0, last = 0;
    dnp_trace_event e;
    int got;
    while ((got = dnp_trace_stream_next(s, &e)) > 0) {
        n++;
        if (e.time_ns > last)
            last = e.time_ns;
    }
    if (got < 0) {
        error("trace %s: %s", label, dnp_trace_stream_error(s));
        dnp_trace_stream_close(s);
        return;
    }
    const dnp_trace *t = dnp_trace_stream_trace(s);
    uint64_t origin = dnp_trace_stream_origin(s);
    double secs = n && last > origin ? (double)(last - origin) / 1e9 : 0.0;
    fprintf(stderr, "dnprof: trace %s: %s events, %.2f s, %s", label, CLI_COUNT(n), secs,
            status_word(t->status));
    if (t->status != DNP_TRACE_COMPLETE && (cause || t->status_text[0]))
        fprintf(stderr, " (%s)", cause ? cause : t->status_text);
    if (t->lost)
        fprintf(stderr, ", %s lost", CLI_COUNT(t->lost));
    fputc('\n', stderr);
    dnp_trace_stream_close(s);
}

void cli_trace_summary(const char *path, const char *who) {
    summarize(path, who, NULL);
}

/* The agents' messages: with a session they go there, not to the program's
 * stderr (src/agent/say.h). A line that only repeats an agent's error is left to
 * report(). */
static void print_agent_messages(const cli_session_agent *agents, int n, long root_pid) {
    for (int i = 0; i < n; i++) {
        const cli_session_agent *a = &agents[i];
        for (const char *p = a->said; *p;) {
            const char *nl = strchr(p, '\n');
            int len = nl ? (int)(nl - p) : (int)strlen(p);
            char line[sizeof a->said];
            snprintf(line, sizeof line, "%.*s", len, p);
            int repeat = a->error[0] && strstr(line, a->error);
            if (!repeat && a->pid == root_pid)
                fprintf(stderr, "dnprof: %s\n", line);
            else if (!repeat)
                fprintf(stderr, "dnprof: pid %ld: %s\n", a->pid, line);
            p += len + (nl != NULL);
        }
    }
}

static void report(const cli_launch *l, char *const argv[], int quiet) {
    char cmd[1024], who[700];
    cli_fmt_argv(argv, cmd, sizeof cmd);
    cli_session_agent *agents = NULL;
    int n = cli_session_read(l->session, &agents);
    const cli_session_agent *root = NULL;
    for (int i = 0; i < n; i++)
        if (agents[i].pid == (long)l->pid)
            root = &agents[i];
    print_agent_messages(agents, n, (long)l->pid);

    if (n <= 0)
        error("the agent never started (no .NET runtime loaded it); to see why, run: dnprof doctor -- %s", cmd);
    else if (root && root->error[0] && !root->started)
        error("the agent did not record: %s; to see why, run: dnprof doctor -- %s", root->error, cmd);
    else if (root && root->error[0])
        error("the agent stopped recording: %s", root->error);

    if (!quiet) {
        if (root && (root->started || !root->error[0]))
            summarize(root->trace[0] ? root->trace : l->trace, NULL,
                      root->error[0] ? "the agent stopped recording, as said above" : NULL);
        else if (!root && access(l->trace, F_OK) == 0)
            summarize(l->trace, NULL, NULL);
        for (int i = 0; i < n; i++) {
            const cli_session_agent *a = &agents[i];
            if (a == root)
                continue;
            snprintf(who, sizeof who, "pid %ld%s%.80s", a->pid, a->cmdline[0] ? ": " : "", a->cmdline);
            if (a->error[0])
                error("%s: %s: %s", who, a->started ? "recording stopped" : "not recorded", a->error);
            if (a->trace[0] && (a->started || !a->error[0]))
                summarize(a->trace, who, a->error[0] ? "the agent stopped recording, as said above" : NULL);
        }
    }
    free(agents);
}

int cmd_run(int argc, char **argv) {
    enum { OPT_FLUSH = 256, OPT_EXCEPTIONS = 300, OPT_CALLS = 320, OPT_TIMELINE, OPT_ARGS, OPT_INCLUDE, OPT_EXCLUDE,
           OPT_ALL_CODE, OPT_ALLOC = 340, OPT_HEAP_AT, OPT_HEAP_OUTPUT, OPT_SAMPLE, OPT_RATE, OPT_CPU,
           OPT_WALL };
    static const struct option longopts[] = {
        {"events", required_argument, NULL, 'e'}, {"output", required_argument, NULL, 'o'},
        {"flush-ms", required_argument, NULL, OPT_FLUSH}, {"quiet", no_argument, NULL, 'q'},
        {"exceptions", no_argument, NULL, OPT_EXCEPTIONS},
        {"calls", optional_argument, NULL, OPT_CALLS}, {"timeline", no_argument, NULL, OPT_TIMELINE},
        {"args", no_argument, NULL, OPT_ARGS}, {"include", required_argument, NULL, OPT_INCLUDE},
        {"exclude", required_argument, NULL, OPT_EXCLUDE}, {"all-code", no_argument, NULL, OPT_ALL_CODE},
        {"alloc", no_argument, NULL, OPT_ALLOC},
        {"heap-at", required_argument, NULL, OPT_HEAP_AT},
        {"heap-output", required_argument, NULL, OPT_HEAP_OUTPUT},
        {"sample", optional_argument, NULL, OPT_SAMPLE}, {"rate", required_argument, NULL, OPT_RATE},
        {"cpu", no_argument, NULL, OPT_CPU}, {"wall", no_argument, NULL, OPT_WALL},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *sample = NULL, *rate = NULL;
    const char *events = NULL, *output = NULL, *flush_ms = NULL;
    int exceptions = 0;
    char exc_events[1100];
    int calls = 0, all_code = 0; /* calls: 0, 1 --calls, 2 --timeline, 3 --args, 4 --calls=counts */
    char include[1024] = "", exclude[1024] = "";
    int quiet = 0, alloc = 0, c;
    const char *heap_at = NULL, *heap_output = NULL; /* heap snapshot (docs/heap.md) */
    char heap_events[1100];
    while ((c = getopt_long(argc, argv, "+:e:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': events = optarg; break;
        case 'o': output = optarg; break;
        case OPT_FLUSH: flush_ms = optarg; break;
        case OPT_EXCEPTIONS: exceptions = 1; break;
        case OPT_CALLS:
            if (optarg && strcmp(optarg, "counts") != 0)
                return usage_error("run", "--calls takes no value or 'counts' (--calls=counts), not '%s'",
                                   optarg);
            calls = !calls || (calls == 4 && !optarg) ? (optarg ? 4 : 1) : calls;
            break;
        case OPT_TIMELINE: calls = calls == 3 ? 3 : 2; break;
        case OPT_ARGS: calls = 3; break;
        case OPT_INCLUDE:
        case OPT_EXCLUDE: {
            char *list = c == OPT_INCLUDE ? include : exclude;
            const char *flag = c == OPT_INCLUDE ? "--include" : "--exclude";
            if (!*optarg || strchr(optarg, ','))
                return usage_error("run", "%s wants one pattern such as 'MyApp.*' (repeat the flag for more), not '%s'",
                                   flag, optarg);
            size_t len = strlen(list);
            if (len + 1 + strlen(optarg) >= sizeof include)
                return usage_error("run", "the %s patterns add up to more than %zu characters", flag,
                                   sizeof include - 1);
            snprintf(list + len, sizeof include - len, "%s%s", len ? "," : "", optarg);
            break;
        }
        case OPT_ALL_CODE: all_code = 1; break;
        case OPT_ALLOC: alloc = 1; break;
        case OPT_HEAP_AT:
            if (strcmp(optarg, "exit") != 0)
                return usage_error("run", "--heap-at takes exit (a snapshot as the program ends), "
                                          "not '%s'; dnprof snapshot PID takes one at any time",
                                   optarg);
            heap_at = optarg;
            break;
        case OPT_HEAP_OUTPUT: heap_output = optarg; break;
        case OPT_SAMPLE:
            sample = optarg ? optarg : sample ? sample : "cpu";
            if (strcmp(sample, "cpu") != 0 && strcmp(sample, "wall") != 0 && strcmp(sample, "suspend") != 0)
                return usage_error("run", "--sample takes cpu, wall or suspend, not '%s'", sample);
            break;
        case OPT_RATE: rate = optarg; break;
        case OPT_CPU: sample = "cpu"; break;
        case OPT_WALL: sample = "wall"; break;
        case 'q': quiet = 1; break;
        case 'h': run_help(); return 0;
        default: return cli_bad_option("run", argv, c);
        }
    }
    if (optind >= argc)
        return usage_error("run", "no program given: dnprof run [options] -- PROGRAM [ARGS...]");
    if (cli_events_name_calls(events))
        return usage_error("run", "--events calls records nothing by itself: the calls come with --calls "
                                  "(or --calls=counts, --timeline, --args)");
    char **prog = argv + optind;

    if (rate && !sample)
        sample = "cpu";
    if (sample && (calls || include[0] || exclude[0] || all_code))
        return usage_error("run", "--sample and --calls (--timeline, --args, --include, --exclude, --all-code) "
                                  "measure the same time two ways: use one at a time");
    if (sample) {
        uint64_t hz = 100;
        if (rate && (cli_parse_u64(rate, &hz) != 0 || hz == 0 || hz > 10000))
            return usage_error("run", "--rate wants samples per second from 1 to 10000, not '%s'", rate);
        char text[32];
        snprintf(text, sizeof text, "%llu", (unsigned long long)hz);
        setenv(DNP_ENV_SAMPLE, sample, 1);
        setenv(DNP_ENV_SAMPLE_RATE, text, 1);
        if (!events)
            events = "threads"; /* the threads' names; nothing else unless asked */
    }
    if (exceptions) {
        /* The exception events, and the threads' names for the stories. */
        if (events && strlen(events) > 1000)
            return usage_error("run", "--events is too long");
        snprintf(exc_events, sizeof exc_events, "%s%sexceptions,threads", events && *events ? events : "",
                 events && *events ? "," : "");
        events = exc_events;
        setenv(DNP_ENV_EXC_STACKS, "1", 1);
    }
    if (alloc)
        setenv(DNP_ENV_ALLOC, "1", 1);
    if (!calls && (include[0] || exclude[0] || all_code))
        calls = 1;
    if (calls) {
        static const char *const modes[] = {NULL, "1", "timeline", "args", "counts"};
        setenv(DNP_ENV_CALLS, modes[calls], 1);
        /* The gc family makes the runtime walk the heap after every GC and
         * report each moved range: it would weigh on the times measured
         * (docs/calls.md). Asked for by name, it is recorded. */
        if (!events)
            events = "default,-gc";
        if (include[0])
            setenv(DNP_ENV_INCLUDE, include, 1);
        if (exclude[0])
            setenv(DNP_ENV_EXCLUDE, exclude, 1);
        if (all_code)
            setenv(DNP_ENV_ALL_CODE, "1", 1);
    }
    if (heap_output && !heap_at)
        return usage_error("run", "--heap-output goes with --heap-at exit");
    if (heap_at) {
        /* The GC's heap walk needs the gc events, also where --calls left them
         * out of its default (after the calls block, which sets that default). */
        char hp[PATH_MAX];
        if (heap_output && !*heap_output)
            return usage_error("run", "--heap-output wants a file name");
        if (cli_abs_path(heap_output ? heap_output : "dnprof-%p.dnheap", hp, sizeof hp) != 0) {
            error("cannot use the snapshot path '%s': it is too long", heap_output);
            return 1;
        }
        /* Replaced, not written through a symbolic link, as -o (the agent opens it as given). */
        if (!strstr(hp, "%p") && unlink(hp) != 0 && errno != ENOENT) {
            error("cannot replace '%s': %s", heap_output, strerror(errno));
            return 1;
        }
        if (events && strlen(events) > 1000)
            return usage_error("run", "--events is too long");
        if (events && *events) {
            snprintf(heap_events, sizeof heap_events, "%s,gc", events);
            events = heap_events;
        }
        setenv(DNP_ENV_HEAP_AT, heap_at, 1);
        setenv(DNP_ENV_HEAP_OUTPUT, hp, 1);
    }
    char err[512];
    dnp_event_config cfg;
    if (dnp_events_parse(events, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "dnprof run: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    uint64_t ms;
    if (flush_ms && (cli_parse_u64(flush_ms, &ms) != 0 || ms == 0 || ms >= 60000))
        return usage_error("run", "--flush-ms wants milliseconds from 1 to 59999, not '%s'", flush_ms);

    cli_agent agent;
    if (cli_agent_find(&agent, err, sizeof err) != 0) {
        error("%s", err);
        return 1;
    }

    char out_abs[PATH_MAX];
    if (output) {
        if (!*output)
            return usage_error("run", "--output wants a file name");
        if (cli_abs_path(output, out_abs, sizeof out_abs) != 0) {
            error("cannot use the trace path '%s': it is too long", output);
            return 1;
        }
        if (!strstr(out_abs, "%p") && unlink(out_abs) != 0 && errno != ENOENT) {
            error("cannot replace '%s': %s", output, strerror(errno));
            return 1;
        }
    }
    char dir[PATH_MAX] = ".";
    if (output) { /* out_abs is absolute: it has a slash */
        memcpy(dir, out_abs, sizeof dir);
        char *slash = strrchr(dir, '/');
        slash[slash == dir] = 0;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        error("cannot write the trace in '%s': %s%s", cli_short_path(dir), strerror(errno),
              output ? "" : " (use -o to put it elsewhere)");
        return 1;
    }

    const char *off[CLI_DISABLING_MAX];
    int noff = cli_disabling_vars(off);
    for (int i = 0; i < noff; i++)
        warning("%s=%s is set: the runtime will not load the agent (unset %s)", off[i], getenv(off[i]),
                off[i]);

    char session[PATH_MAX];
    if (cli_session_create(session, sizeof session) != 0)
        return 1;

    cli_launch l;
    memset(&l, 0, sizeof l);
    l.agent = agent.path;
    l.events = events && *events ? events : DNP_EVENTS_DEFAULT;
    l.output = output ? out_abs : NULL;
    l.flush_ms = flush_ms;
    l.session = session;
    if (cli_launch_run(&l, prog) != 0) {
        cli_session_remove(session);
        return 1;
    }
    if (l.exec_errno) {
        error("cannot run '%s': %s", prog[0], strerror(l.exec_errno));
        cli_session_remove(session);
        return CLI_EXIT_NOEXEC;
    }

    if (WIFSIGNALED(l.status) && !quiet && WTERMSIG(l.status) != SIGINT && WTERMSIG(l.status) != SIGPIPE)
        error("'%s' was killed by signal %d (%s)", prog[0], WTERMSIG(l.status), strsignal(WTERMSIG(l.status)));
    report(&l, prog, quiet);
    if (heap_at && !quiet) {
        /* The root process's snapshot (%p: its pid). */
        char hp[PATH_MAX], pid[32];
        const char *tmpl = getenv("DNPROF_HEAP_OUTPUT");
        size_t n = 0;
        snprintf(pid, sizeof pid, "%ld", (long)l.pid);
        for (const char *q = tmpl ? tmpl : ""; *q && n + strlen(pid) + 1 < sizeof hp; q++) {
            if (q[0] == '%' && q[1] == 'p') {
                memcpy(hp + n, pid, strlen(pid));
                n += strlen(pid);
                q++;
            } else {
                hp[n++] = *q;
            }
        }
        hp[n] = 0;
        if (access(hp, F_OK) == 0)
            fprintf(stderr, "dnprof: heap snapshot %s (dnprof heap report %s)\n", cli_short_path(hp),
                    cli_short_path(hp));
        else
            error("no heap snapshot was taken at exit (%s): the program ended without the "
                  "runtime's Shutdown, or the agent said why above",
                  cli_short_path(hp));
    }
    cli_session_remove(session);
    return cli_exit_code(l.status);
}
