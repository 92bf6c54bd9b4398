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
#include "sdk_process.h"
#include "families.h"
#include "run_windows.h"
#include "session.h"
#include "trace_reader.h"

/* The end of run's help: the last options, the examples. */
static void run_help_tail(void) {
    fputs("  -q, --quiet         print no summary at the end\n"
          "  -h, --help          print this help\n"
          "\n"
          "PROGRAM may be 'dotnet run', 'dotnet test' or 'dotnet watch': the SDK's own\n"
          "processes (MSBuild, the compiler) are then left out, and the program it starts\n"
          "writes the trace.\n"
          "\n"
          "examples:\n"
          "  dnprof run -- dotnet app.dll arg1\n"
          "  dnprof run --sample -o app.trace -- dotnet run --project src/App -c Release\n"
          "  dnprof run --events classes,jit,exceptions -o app.trace -- dotnet app.dll\n"
          "  dnprof run --calls --include 'MyApp.*' -o app.trace -- dotnet app.dll\n"
          "  dnprof run --sample --rate 1000 -o app.trace -- dotnet app.dll\n"
          "  dnprof run --il 'MyApp.Orders::*' -o app.trace -- dotnet app.dll\n"
          "  dnprof run --every 10s --alloc -o profiles/ --keep 60 -- dotnet app.dll\n"
          "  dnprof run --every 15s --pyroscope http://pyroscope:4040 --label env=prod -- dotnet app.dll\n"
          "  dnprof run --every 15s --otlp http://otel-collector:4318 -- dotnet app.dll\n"
          "  dnprof print app.trace\n",
          stdout);
}

/* run's options that choose methods: hooked, their IL, traced. */
static void run_help_methods(void) {
    fputs(
          "      --include GLOB  only functions whose Namespace.Class::Method matches GLOB\n"
          "                      (* any text, ? one character); repeatable\n"
          "      --exclude GLOB  not these functions; repeatable\n"
          "      --all-code      framework code too, not only the program's own assemblies:\n"
          "                      disables inlining and precompiled (ReadyToRun) code, so the\n"
          "                      program runs slower (--include, --exclude and --all-code\n"
          "                      imply --calls)\n"
          "      --il PATTERN    the IL body of each method whose Namespace.Class::Method\n"
          "                      matches a glob of PATTERN (comma-separated), as it is\n"
          "                      first JIT-compiled: header, clauses, bytes, and the names\n"
          "                      of its tokens (dnprof print shows it disassembled under\n"
          "                      its JITCompilationStarted; docs/il.md); repeatable; adds\n"
          "                      jit to the events\n"
          "      --trace PATTERN the methods whose Namespace.Class::Method matches a glob\n"
          "                      of PATTERN (comma-separated; repeatable) re-JIT-compiled\n"
          "                      with a probe at entry and at every exit (exceptions too):\n"
          "                      exact calls, total, mean, p50, p99 and max time per\n"
          "                      method and per caller, added up in the agent (dnprof\n"
          "                      report; docs/calls.md);\n"
          "                      every other method runs untouched\n",
          stdout);
}

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
          "                      pid (default: dnprof-<pid>.trace in the current directory)\n",
          stdout);
    printf("      --flush-ms N    how often the agent writes its buffers out, in ms (%u-%u)\n",
           dnp_settings[DNP_SET_FLUSH_MS].min, dnp_settings[DNP_SET_FLUSH_MS].max);
    fputs(
          "      --exceptions    every exception's story: the exception events, its message\n"
          "                      and HResult, and a stack snapshot at each throw (read the\n"
          "                      stories with dnprof print --exceptions or dnprof report\n"
          "                      --exceptions); with --events, added to those families\n"
          "      --calls         every call of managed code: exact call counts per call path,\n"
          "                      and CPU times from samples of the calls' own stack (no bias\n"
          "                      on small methods; how often: --rate); read them with\n"
          "                      dnprof report, dnprof convert (with the default events less\n"
          "                      gc, which would slow the program down: --events default\n"
          "                      brings it back)\n"
          "      --calls=timed   each call timed by the clock instead: per-call latency\n"
          "                      (waits included), biased on methods of a few ns\n"
          "      --calls=counts  exact call counts and call paths only, no times (cheapest)\n"
          "      --timeline      --calls, and every enter and leave in time order too\n"
          "      --args          --timeline with the arguments and return values (slow)\n",
          stdout);
    run_help_methods();
    fputs(
          "      --alloc         sampled allocations: bytes by type and by allocating call\n"
          "                      path, from the runtime's own sampling (about one sample\n"
          "                      per 100 KiB; cheap enough for production; read them with\n"
          "                      dnprof report --alloc, dnprof convert); without --events,\n"
          "                      with the threads' names only (no gc events, no heap walk)\n"
          "      --locks         lock contention: the time threads waited for locks, by\n"
          "                      waiting stack, locked type and owner thread, and a\n"
          "                      System.Threading.Lock's spinning too (.NET 9+); cheap\n"
          "                      enough for production (read with dnprof report --locks,\n"
          "                      dnprof convert; docs/waits.md)\n"
          "      --locks=waits   also waits on WaitHandles and Monitor.Wait (.NET 9+; costs\n"
          "                      more: the runtime raises them from managed code)\n"
          "      --gc            every collection: generation, reason, type, time to suspend,\n"
          "                      pause, heap by generation before and after, bytes promoted,\n"
          "                      from the runtime's GC events (cheap: a few events per GC;\n"
          "                      dnprof report --gc; docs/waits.md); without --events, with\n"
          "                      the threads' names only\n"
          "      --threadpool    the thread pool's changes of its worker count, starvation\n"
          "                      among them (dnprof report --threadpool; with --wall, where\n"
          "                      the pool's threads were blocked)\n"
          "      --sample[=MODE] sample the stacks of every thread, HZ times a second, with\n"
          "                      signals and no stop of the runtime (docs/sampling.md); MODE\n"
          "                      cpu (the default: by CPU time used), wall (by elapsed time,\n"
          "                      running or waiting) or suspend (the runtime's own stack walks,\n"
          "                      stopping it every time); read with dnprof report, convert;\n"
          "                      native code by its unwind tables, GC and JIT as frames,\n"
          "                      async methods under their awaiting callers (docs/async.md)\n",
          stdout);
    printf("      --rate HZ       samples per second and thread (default %u, with --calls %u;\n"
           "                      at most %u)\n",
           dnp_setting_default(DNP_SET_SAMPLE_RATE), dnp_setting_default(DNP_SET_CALLS_RATE),
           dnp_settings[DNP_SET_SAMPLE_RATE].max);
    fputs(
          "      --cpu, --wall   --sample=cpu, --sample=wall\n"
          "      --stubs         with --sample: the runtime's stubs named ([stub FixupPrecode]),\n"
          "                      from its perf map (DOTNET_PerfMapEnabled=3, removed after)\n"
          "      --heap-at exit  a heap snapshot as the program ends (docs/heap.md; read it\n"
          "                      with dnprof heap report); adds gc to the events\n"
          "      --heap-output FILE  the snapshot file, with --heap-at; %p in it becomes the\n"
          "                      pid (default: dnprof-<pid>.dnheap in the current directory)\n"
          "      --every TIME    continuous profiling (docs/production.md): every TIME (10s,\n"
          "                      500ms, 1m) what --sample, --alloc, --exceptions, --locks\n"
          "                      or --calls=counts added up becomes one pprof per type\n"
          "                      (cpu or wall, alloc, exception, lock, calls), written\n"
          "                      to -o DIR and/or pushed; alone,\n"
          "                      --every samples CPU time; the trace itself is not kept\n"
          "      --keep N        with --every -o DIR: the newest N files of each type only\n"
          "      --pyroscope URL with --every: push each window to Grafana Pyroscope's\n"
          "                      ingest API; secrets from " DNP_ENV_PUSH_TOKEN ", " DNP_ENV_PUSH_BASIC "\n"
          "                      or " DNP_ENV_PUSH_TENANT " (or their _FILE), never arguments\n"
          "      --otlp URL      with --every: push each window to an OpenTelemetry\n"
          "                      Collector (OTLP/HTTP profiles, /v1development/profiles\n"
          "                      added to a URL without a path); --otlp env: the URL of\n"
          "                      OTEL_EXPORTER_OTLP_[PROFILES_]ENDPOINT; headers from\n"
          "                      OTEL_EXPORTER_OTLP_HEADERS; OTEL_RESOURCE_ATTRIBUTES\n"
          "      --label K=V     a label of every profile pushed; repeatable\n"
          "      --service NAME  the service_name pushed (default: OTEL_SERVICE_NAME with\n"
          "                      --otlp, else the program's name)\n"
          "      --push-timeout TIME  per request (default 10s); 2 retries with backoff\n",
          stdout);
    run_help_tail();
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

void cli_next_step(const cli_recorded *r, const char *path) {
    const char *first = NULL, *also[6];
    int n = 0, waits = (r->locks != 0) + (r->gc != 0) + (r->threadpool != 0);
    const char *asked[] = {r->profile ? "" : NULL,          r->exceptions ? "--exceptions" : NULL,
                           r->alloc ? "--alloc" : NULL,     r->locks ? "--locks" : NULL,
                           r->gc ? "--gc" : NULL,           r->threadpool ? "--threadpool" : NULL,
                           waits > 1 ? "--waits" : NULL};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++)
        if (asked[i] && !first)
            first = asked[i];
        else if (asked[i] && n < 6)
            also[n++] = asked[i];
    if (!first) {
        fprintf(stderr, "dnprof: read it with: dnprof print %s\n", cli_short_path(path));
        return;
    }
    fprintf(stderr, "dnprof: read it with: dnprof report%s%s %s", *first ? " " : "", first, cli_short_path(path));
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? ", " : " (also report ", also[i]);
    fputs(n ? ")\n" : "\n", stderr);
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

/* What the run says at its end; the path of the program's own trace, when it
 * was summarized, into shown (else ""). */
static void report(const cli_launch *l, char *const argv[], int quiet, char *shown, size_t cap) {
    char cmd[1024], who[700];
    cli_fmt_argv(argv, cmd, sizeof cmd);
    cli_session_agent *agents = NULL;
    int n = cli_session_read(l->session, &agents);
    const cli_session_agent *root = NULL;
    for (int i = 0; i < n; i++) /* under the SDK, the program that took the trace's path */
        if (agents[i].pid == (long)l->pid || (l->sdk_aside && !strcmp(agents[i].trace, l->trace)))
            root = &agents[i];
    print_agent_messages(agents, n, root ? root->pid : (long)l->pid);

    if (n <= 0 && l->sdk_aside)
        error("'%s' started no .NET program (its build failed, or it ran none): no trace", cmd);
    else if (n <= 0)
        error("the agent never started (no .NET runtime loaded it); to see why, run: dnprof doctor -- %s", cmd);
    else if (root && root->error[0] && !root->started)
        error("the agent did not record: %s; to see why, run: dnprof doctor -- %s", root->error, cmd);
    else if (root && root->error[0])
        error("the agent stopped recording: %s", root->error);

    shown[0] = 0;
    if (!quiet) {
        if (root && (root->started || !root->error[0])) {
            summarize(root->trace[0] ? root->trace : l->trace, NULL,
                      root->error[0] ? "the agent stopped recording, as said above" : NULL);
            snprintf(shown, cap, "%s", root->trace[0] ? root->trace : l->trace);
        } else if (!root && access(l->trace, F_OK) == 0) {
            summarize(l->trace, NULL, NULL);
            snprintf(shown, cap, "%s", l->trace);
        }
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

/* ---- options and modes ---- */

typedef struct run_opts {
    const char *events, *output, *flush_ms;
    const char *sample, *rate;                /* --sample[=MODE], --cpu, --wall; --rate */
    int stubs, stubs_map;                     /* --stubs; the runtime's perf map asked for by dnprof */
    int exceptions, alloc, quiet;
    int locks;                                /* --locks: 1, --locks=waits: 2 */
    int gc, threadpool;                       /* --gc, --threadpool (docs/waits.md) */
    int calls, all_code;                      /* calls: 0, 1 --calls, 2 --timeline, 3 --args, 4 --calls=counts,
                                                 5 --calls=timed */
    char include[1024], exclude[1024];
    char il[1024];                            /* --il: the methods whose IL bodies are recorded */
    char trace[1024];                         /* --trace: the methods re-JIT-compiled with probes */
    const char *heap_at, *heap_output;        /* heap snapshot (docs/heap.md) */
    char heap_path[PATH_MAX];                 /* --heap-output made absolute */
    char events_buf[1100];
    const char *every;                        /* --every: continuous profiling (run_windows.c) */
    char every_ms[24];
    window_follow wf;                         /* -o DIR, --keep, --pyroscope, --label, --service */
} run_opts;

/* One mode of dnprof run: whether it was asked for, the event families it
 * needs when --events is not given (NULL: it does not choose them), those it
 * adds to an explicit --events too, and what it sets in the agent's
 * environment (0, or the exit code of a usage error). A flag that asks for one
 * thing records that thing and what it needs, never a heap walk by surprise. */
typedef struct run_mode {
    const char *name;
    int (*asked)(const run_opts *o);
    const char *needs, *adds;
    int (*apply)(run_opts *o);
} run_mode;

static int sample_asked(const run_opts *o) { return o->sample != NULL; }
static int exceptions_asked(const run_opts *o) { return o->exceptions; }
static int alloc_asked(const run_opts *o) { return o->alloc; }
static int calls_asked(const run_opts *o) { return o->calls != 0; }
static int heap_asked(const run_opts *o) { return o->heap_at != NULL; }
static int locks_asked(const run_opts *o) { return o->locks; }
static int gc_asked(const run_opts *o) { return o->gc; }
static int threadpool_asked(const run_opts *o) { return o->threadpool; }
static int gc_apply(run_opts *o) { (void)o; return cli_setting_set(DNP_SET_GC, "1") ? 1 : 0; }
static int threadpool_apply(run_opts *o) { (void)o; return cli_setting_set(DNP_SET_THREADPOOL, "1") ? 1 : 0; }
static int every_asked(const run_opts *o) { return o->every != NULL; }
static int il_asked(const run_opts *o) { return o->il[0] != 0; }
static int il_apply(run_opts *o) { return cli_setting_set(DNP_SET_IL, o->il) ? 1 : 0; }
static int trace_asked(const run_opts *o) { return o->trace[0] != 0; }
static int trace_apply(run_opts *o) { return cli_setting_set(DNP_SET_TRACE, o->trace) ? 1 : 0; }

static int every_apply(run_opts *o) {
    return cli_setting_set(DNP_SET_EVERY, o->every_ms) ? 1 : 0;
}

static int sample_apply(run_opts *o) {
    unsigned hz = dnp_setting_default(DNP_SET_SAMPLE_RATE);
    const dnp_setting *r = &dnp_settings[DNP_SET_SAMPLE_RATE];
    if (o->rate && dnp_setting_parse(DNP_SET_SAMPLE_RATE, o->rate, &hz) < 0)
        return usage_error("run", "--rate wants samples per second from %u to %u, not '%s'", r->min, r->max,
                           o->rate);
    char text[32];
    snprintf(text, sizeof text, "%u", hz);
    return cli_setting_set(DNP_SET_SAMPLE, o->sample) || cli_setting_set(DNP_SET_SAMPLE_RATE, text) ? 1 : 0;
}

static int exceptions_apply(run_opts *o) {
    (void)o;
    return cli_setting_set(DNP_SET_EXC_STACKS, "1") ? 1 : 0;
}

static int alloc_apply(run_opts *o) {
    (void)o;
    return cli_setting_set(DNP_SET_ALLOC, "1") ? 1 : 0;
}

static int locks_apply(run_opts *o) {
    return cli_setting_set(DNP_SET_LOCKS, o->locks == 2 ? "waits" : "1") ? 1 : 0;
}

static int calls_apply(run_opts *o) {
    static const char *const words[] = {NULL, "1", "timeline", "args", "counts", "timed"};
    unsigned hz;
    if (o->rate && dnp_setting_parse(DNP_SET_CALLS_RATE, o->rate, &hz) < 0)
        return usage_error("run", "--rate wants samples per second from %u to %u, not '%s'",
                           dnp_settings[DNP_SET_CALLS_RATE].min, dnp_settings[DNP_SET_CALLS_RATE].max, o->rate);
    if (o->rate && o->calls != 1)
        return usage_error("run", "--rate sets how often --sample or --calls samples; --calls=%s times nothing "
                                  "by samples", words[o->calls]);
    if (cli_setting_set(DNP_SET_CALLS, words[o->calls]) || (o->rate && cli_setting_set(DNP_SET_CALLS_RATE, o->rate)) || (o->include[0] && cli_setting_set(DNP_SET_INCLUDE, o->include)) ||
        (o->exclude[0] && cli_setting_set(DNP_SET_EXCLUDE, o->exclude)) ||
        (o->all_code && cli_setting_set(DNP_SET_ALL_CODE, "1")))
        return 1;
    return 0;
}

static int heap_apply(run_opts *o) {
    if (o->heap_output && !*o->heap_output)
        return usage_error("run", "--heap-output wants a file name");
    char *hp = o->heap_path;
    if (cli_abs_path(o->heap_output ? o->heap_output : "dnprof-%p.dnheap", hp, sizeof o->heap_path) != 0)
        return error("cannot use the snapshot path '%s': it is too long", o->heap_output), 1;
    /* Replaced, not written through a symbolic link, as -o (the agent opens it as given). */
    if (!strstr(hp, "%p") && unlink(hp) != 0 && errno != ENOENT)
        return error("cannot replace '%s': %s", o->heap_output, strerror(errno)), 1;
    return cli_setting_set(DNP_SET_HEAP_AT, o->heap_at) || cli_setting_set(DNP_SET_HEAP_OUTPUT, hp) ? 1 : 0;
}

/* In this order: the events of the first modes come first. The gc family makes
 * the runtime walk the heap after every GC and report each moved range: it
 * would weigh on the times --calls measures (docs/calls.md) and fill an --alloc
 * or --exceptions trace with what it did not ask for. The heap snapshot needs
 * it, also where --calls left it out. */
static const run_mode run_modes[] = {
    {"sample", sample_asked, "threads", NULL, sample_apply},          /* the threads' names */
    {"exceptions", exceptions_asked, "exceptions,threads", "exceptions,threads", exceptions_apply},
    {"alloc", alloc_asked, "threads", NULL, alloc_apply},             /* sites carry their names */
    {"calls", calls_asked, "default,-gc", NULL, calls_apply},
    {"heap", heap_asked, NULL, "gc", heap_apply},
    {"locks", locks_asked, "threads", NULL, locks_apply},             /* the owners' and waiters' names */
    /* GC statistics and the thread pool come from the runtime's events, not the gc family */
    {"gc", gc_asked, "threads", NULL, gc_apply},
    {"threadpool", threadpool_asked, "threads", NULL, threadpool_apply},
    {"il", il_asked, "jit", "jit", il_apply},                         /* each body right after its JIT event */
    {"trace", trace_asked, "runtime", NULL, trace_apply},             /* the sums alone */
    {"every", every_asked, NULL, NULL, every_apply},                  /* windows of the modes above */
};
#define NMODES (sizeof run_modes / sizeof run_modes[0])

/* Appends the comma-separated words of add to buf, each once. 0 or -1 (too long). */
static int add_families(char *buf, size_t cap, const char *add) {
    for (const char *p = add; p && *p;) {
        size_t n = strcspn(p, ",");
        int have = 0;
        for (const char *q = buf; *q;) {
            size_t m = strcspn(q, ",");
            have |= m == n && strncmp(q, p, n) == 0;
            q += m + (q[m] == ',');
        }
        size_t len = strlen(buf);
        if (!have && len + n + 2 > cap)
            return -1;
        if (!have)
            snprintf(buf + len, cap - len, "%s%.*s", len ? "," : "", (int)n, p);
        p += n + (p[n] == ',');
    }
    return 0;
}

/* The events to record: --events, or without it what the modes asked for
 * need; then what they add (NULL, nothing asked: the default, which has it). */
static int choose_events(run_opts *o) {
    char *buf = o->events_buf;
    size_t cap = sizeof o->events_buf;
    buf[0] = 0;
    if (o->events && !*o->events)
        o->events = NULL;
    if (o->events && strlen(o->events) > 1000)
        return usage_error("run", "--events is too long");
    if (o->events)
        snprintf(buf, cap, "%s", o->events);
    for (size_t i = 0; i < NMODES && !o->events; i++)
        if (run_modes[i].asked(o))
            add_families(buf, cap, run_modes[i].needs);
    for (size_t i = 0; i < NMODES && buf[0]; i++)
        if (run_modes[i].asked(o) && add_families(buf, cap, run_modes[i].adds) < 0)
            return usage_error("run", "--events is too long");
    if (buf[0])
        o->events = buf;
    return 0;
}

/* One pattern of --include (which 0), --exclude (1), --il (2) or --trace (3) added to its list. */
static int add_pattern(run_opts *o, int which, const char *pat) {
    char *list = which == 0 ? o->include : which == 1 ? o->exclude : which == 2 ? o->il : o->trace;
    const char *flag = which == 0 ? "--include" : which == 1 ? "--exclude" : which == 2 ? "--il" : "--trace";
    _Static_assert(sizeof o->il == sizeof o->include && sizeof o->exclude == sizeof o->include &&
                       sizeof o->trace == sizeof o->include, "one size");
    if (which >= 2 && pat[strspn(pat, ", ")] == 0)
        return usage_error("run", "%s wants method patterns such as 'MyApp.Orders::*' (comma-separated), not '%s'",
                           flag, pat);
    if (!*pat || (which < 2 && strchr(pat, ',')))
        return usage_error("run", "%s wants one pattern such as 'MyApp.*' (repeat the flag for more), not '%s'", flag,
                           pat);
    size_t len = strlen(list);
    if (len + 1 + strlen(pat) >= sizeof o->include)
        return usage_error("run", "the %s patterns add up to more than %zu characters", flag, sizeof o->include - 1);
    snprintf(list + len, sizeof o->include - len, "%s%s", len ? "," : "", pat);
    return 0;
}

enum { OPT_FLUSH = 256, OPT_EXCEPTIONS = 300, OPT_CALLS = 320, OPT_TIMELINE, OPT_ARGS, OPT_INCLUDE, OPT_EXCLUDE,
       OPT_ALL_CODE, OPT_ALLOC = 340, OPT_HEAP_AT, OPT_HEAP_OUTPUT, OPT_SAMPLE, OPT_RATE, OPT_CPU, OPT_WALL,
       OPT_STUBS,
       OPT_LOCKS = 360, OPT_GC = 380, OPT_THREADPOOL, OPT_IL = 390, OPT_TRACE,
       OPT_EVERY = 400, OPT_KEEP, /* then the sinks' options in windows_cli.h's order */
       OPT_PYROSCOPE = OPT_KEEP + WOPT_PYROSCOPE, OPT_LABEL = OPT_KEEP + WOPT_LABEL,
       OPT_SERVICE = OPT_KEEP + WOPT_SERVICE, OPT_PUSH_TIMEOUT = OPT_KEEP + WOPT_PUSH_TIMEOUT,
       OPT_OTLP = OPT_KEEP + WOPT_OTLP,
       OPT_HELP_ASKED = 1000 };

/* --every and its sinks' options: 0, or an exit code. */
static int take_every_option(run_opts *o, int c) {
    long long ms;
    if (c != OPT_EVERY)
        return window_take_option("run", &o->wf, c - OPT_KEEP, optarg);
    if ((ms = cli_parse_duration(optarg)) < 100 || ms > 86400000)
        return usage_error("run", "--every wants a window length from 100ms to 24h (10s, 1m), not '%s'", optarg);
    o->every = optarg;
    snprintf(o->every_ms, sizeof o->every_ms, "%lld", ms);
    return 0;
}

/* One option into o: 0, or an exit code. */
static int take_option(run_opts *o, int c, char **argv) {
    unsigned mode;
    switch (c) {
    case 'e': o->events = optarg; return 0;
    case 'o': o->output = optarg; return 0;
    case OPT_FLUSH: o->flush_ms = optarg; return 0;
    case OPT_EXCEPTIONS: o->exceptions = 1; return 0;
    case OPT_CALLS:
        if (optarg && strcmp(optarg, "counts") != 0 && strcmp(optarg, "timed") != 0)
            return usage_error("run", "--calls takes no value, 'counts' or 'timed' (--calls=timed), not '%s'",
                               optarg);
        mode = !optarg ? 1 : optarg[0] == 'c' ? 4 : 5;
        o->calls = !o->calls || o->calls == 1 || o->calls >= 4 ? (int)mode : o->calls;
        return 0;
    case OPT_TIMELINE: o->calls = o->calls == 3 ? 3 : 2; return 0;
    case OPT_ARGS: o->calls = 3; return 0;
    case OPT_INCLUDE:
    case OPT_EXCLUDE: return add_pattern(o, c == OPT_INCLUDE ? 0 : 1, optarg);
    case OPT_IL: return add_pattern(o, 2, optarg);
    case OPT_TRACE: return add_pattern(o, 3, optarg);
    case OPT_ALL_CODE: o->all_code = 1; return 0;
    case OPT_ALLOC: o->alloc = 1; return 0;
    case OPT_LOCKS:
        if (optarg && strcmp(optarg, "waits") != 0)
            return usage_error("run", "--locks takes no value or 'waits' (--locks=waits), not '%s'", optarg);
        o->locks = optarg || o->locks == 2 ? 2 : 1;
        return 0;
    case OPT_GC: o->gc = 1; return 0;
    case OPT_THREADPOOL: o->threadpool = 1; return 0;
    case OPT_HEAP_AT:
        if (strcmp(optarg, "exit") != 0)
            return usage_error("run", "--heap-at takes exit (a snapshot as the program ends), "
                                      "not '%s'; dnprof snapshot PID takes one at any time",
                               optarg);
        o->heap_at = optarg;
        return 0;
    case OPT_HEAP_OUTPUT: o->heap_output = optarg; return 0;
    case OPT_SAMPLE:
        o->sample = optarg ? optarg : o->sample ? o->sample : "cpu";
        if (dnp_setting_parse(DNP_SET_SAMPLE, o->sample, &mode) < 0 || mode == 0)
            return usage_error("run", "--sample takes cpu, wall or suspend, not '%s'", o->sample);
        return 0;
    case OPT_RATE: o->rate = optarg; return 0;
    case OPT_CPU: o->sample = "cpu"; return 0;
    case OPT_WALL: o->sample = "wall"; return 0;
    case OPT_STUBS: o->stubs = 1; return 0;
    case OPT_EVERY: case OPT_KEEP: case OPT_PYROSCOPE: case OPT_LABEL: case OPT_SERVICE:
    case OPT_PUSH_TIMEOUT: case OPT_OTLP: return take_every_option(o, c);
    case 'q': o->quiet = 1; return 0;
    case 'h': run_help(); return OPT_HELP_ASKED;
    default: return cli_bad_option("run", argv, c);
    }
}

/* --every: what it windows, where the windows go (-o is then a directory). */
static int check_every(run_opts *o) {
    window_follow *f = &o->wf;
    if (!o->every)
        return window_check_no_every("run", f);
    if (o->calls && o->calls != DNP_CALLS_COUNTS)
        return usage_error("run", "--every cuts --calls=counts into windows (exact counts by call path), not calls "
                                  "with times: --calls=counts");
    if (o->il[0])
        return usage_error("run", "--il records IL bodies into the trace, which --every does not keep");
    if (o->trace[0])
        return usage_error("run", "--trace writes its sums into the trace, which --every does not keep");
    if (!o->sample && !o->alloc && !o->exceptions && !o->calls)
        o->sample = "cpu";
    f->out_dir = o->output;
    o->output = NULL; /* the trace goes into the session directory, and with it */
    f->quiet = o->quiet;
    return window_check_options("run", f);
}

/* Fills o from argv and checks what goes together; 0, or an exit code. */
static int parse_run_options(int argc, char **argv, run_opts *o) {
    static const struct option longopts[] = {
        {"events", required_argument, NULL, 'e'}, {"output", required_argument, NULL, 'o'},
        {"flush-ms", required_argument, NULL, OPT_FLUSH}, {"quiet", no_argument, NULL, 'q'},
        {"exceptions", no_argument, NULL, OPT_EXCEPTIONS},
        {"calls", optional_argument, NULL, OPT_CALLS}, {"timeline", no_argument, NULL, OPT_TIMELINE},
        {"args", no_argument, NULL, OPT_ARGS}, {"include", required_argument, NULL, OPT_INCLUDE},
        {"exclude", required_argument, NULL, OPT_EXCLUDE}, {"all-code", no_argument, NULL, OPT_ALL_CODE},
        {"alloc", no_argument, NULL, OPT_ALLOC},        {"locks", optional_argument, NULL, OPT_LOCKS},
        {"gc", no_argument, NULL, OPT_GC}, {"threadpool", no_argument, NULL, OPT_THREADPOOL},
        {"heap-at", required_argument, NULL, OPT_HEAP_AT},
        {"heap-output", required_argument, NULL, OPT_HEAP_OUTPUT},
        {"sample", optional_argument, NULL, OPT_SAMPLE}, {"rate", required_argument, NULL, OPT_RATE},
        {"cpu", no_argument, NULL, OPT_CPU}, {"wall", no_argument, NULL, OPT_WALL},
        {"stubs", no_argument, NULL, OPT_STUBS},
        {"every", required_argument, NULL, OPT_EVERY}, {"keep", required_argument, NULL, OPT_KEEP},
        {"pyroscope", required_argument, NULL, OPT_PYROSCOPE}, {"label", required_argument, NULL, OPT_LABEL},
        {"service", required_argument, NULL, OPT_SERVICE}, {"il", required_argument, NULL, OPT_IL},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"push-timeout", required_argument, NULL, OPT_PUSH_TIMEOUT}, {"otlp", required_argument, NULL, OPT_OTLP},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int c, rc;
    while ((c = getopt_long(argc, argv, "+:e:o:qh", longopts, NULL)) != -1)
        if ((rc = take_option(o, c, argv)) != 0)
            return rc;
    if (optind >= argc)
        return usage_error("run", "no program given: dnprof run [options] -- PROGRAM [ARGS...]");
    if (cli_events_name_calls(o->events))
        return usage_error("run", "--events calls records nothing by itself: the calls come with --calls "
                                  "(or --calls=counts, --timeline, --args)");
    if (o->sample && (o->calls || o->include[0] || o->exclude[0] || o->all_code))
        return usage_error("run", "--sample and --calls (--timeline, --args, --include, --exclude, --all-code) "
                                  "measure the same time two ways: use one at a time");
    if (!o->calls && (o->include[0] || o->exclude[0] || o->all_code))
        o->calls = 1;
    if (o->rate && !o->sample && !o->calls)
        o->sample = "cpu";
    if (o->stubs && !o->sample)
        return usage_error("run", "--stubs names the runtime's stubs in sampled stacks: it goes with --sample");
    if (o->heap_output && !o->heap_at)
        return usage_error("run", "--heap-output goes with --heap-at exit");
    return check_every(o);
}

/* ---- the trace's place, the run, the report ---- */

/* -o made absolute into out_abs and replaced (unlinked), and the trace's
 * directory writable. 0 or 1. */
static int prepare_output(const char *output, char *out_abs, size_t cap) {
    if (output) {
        if (cli_abs_path(output, out_abs, cap) != 0) {
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
        snprintf(dir, sizeof dir, "%s", out_abs);
        char *slash = strrchr(dir, '/');
        slash[slash == dir] = 0;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        error("cannot write the trace in '%s': %s%s", cli_short_path(dir), strerror(errno),
              output ? "" : " (use -o to put it elsewhere)");
        return 1;
    }
    return 0;
}

/* The root process's heap snapshot (%p: its pid), said. */
static void report_heap(const char *tmpl, long pid) {
    char hp[PATH_MAX], text[32];
    size_t n = 0;
    snprintf(text, sizeof text, "%ld", pid);
    for (const char *q = tmpl; *q && n + strlen(text) + 1 < sizeof hp; q++) {
        if (q[0] == '%' && q[1] == 'p') {
            memcpy(hp + n, text, strlen(text));
            n += strlen(text);
            q++;
        } else {
            hp[n++] = *q;
        }
    }
    hp[n] = 0;
    if (access(hp, F_OK) == 0)
        fprintf(stderr, "dnprof: heap snapshot %s (dnprof heap report %s)\n", cli_short_path(hp), cli_short_path(hp));
    else
        error("no heap snapshot was taken at exit (%s): the program ended without the "
              "runtime's Shutdown, or the agent said why above",
              cli_short_path(hp));
}

/* Runs prog with the agent and reports; dnprof run's exit code. */
static int launch(const run_opts *o, const char *agent, const char *out_abs, char **prog) {
    const char *off[CLI_DISABLING_MAX];
    int noff = cli_disabling_vars(off);
    for (int i = 0; i < noff; i++)
        warning("%s=%s is set: the runtime will not load the agent (unset %s)", off[i], getenv(off[i]), off[i]);

    char session[PATH_MAX];
    if (cli_session_create(session, sizeof session) != 0)
        return 1;
    cli_launch l;
    memset(&l, 0, sizeof l);
    l.agent = agent;
    l.events = o->events && *o->events ? o->events : DNP_EVENTS_DEFAULT;
    l.output = o->output ? out_abs : NULL;
    l.flush_ms = o->flush_ms;
    l.session = session;
    l.sdk_aside = dnp_sdk_starts_program(prog);
    if (l.sdk_aside && !o->quiet)
        fprintf(stderr, "dnprof: '%s %s' builds, then starts the program: the SDK's own processes are not "
                        "recorded, the program is\n", prog[0], prog[1]);
    char in_session[PATH_MAX + 32];
    static run_windows rw;
    if (o->every) {
        snprintf(in_session, sizeof in_session, "%s/dnprof-%%p.trace", session);
        l.output = in_session;
        rw.f = o->wf;
        if (run_windows_start(&rw, session) != 0) {
            cli_session_remove(session);
            return 1;
        }
    }
    int ran = cli_launch_run(&l, prog);
    run_windows_finish(&rw);
    if (o->stubs_map && l.pid > 0) { /* the perf map the runtime wrote for --stubs */
        const char *dir = getenv("DOTNET_PerfMapJitDumpPath");
        char map[PATH_MAX];
        snprintf(map, sizeof map, "%s/perf-%ld.map", dir && *dir ? dir : "/tmp", (long)l.pid);
        unlink(map);
    }
    if (ran != 0) {
        cli_session_remove(session);
        return 1;
    }
    if (l.exec_errno) {
        error("cannot run '%s': %s", prog[0], strerror(l.exec_errno));
        cli_session_remove(session);
        return CLI_EXIT_NOEXEC;
    }
    if (WIFSIGNALED(l.status) && !o->quiet && WTERMSIG(l.status) == SIGABRT)
        error("'%s' aborted (signal %d, SIGABRT: how .NET ends a program on an unhandled exception, "
              "Environment.FailFast or a stack overflow; %s)", prog[0], SIGABRT,
              o->exceptions ? "dnprof report --exceptions tells which exception"
                            : o->sample ? "dnprof run --exceptions records which exception, and keeps the samples "
                                          "up to it"
                                        : "dnprof run --exceptions records which exception");
    else if (WIFSIGNALED(l.status) && !o->quiet && WTERMSIG(l.status) != SIGINT && WTERMSIG(l.status) != SIGPIPE)
        error("'%s' was killed by signal %d (%s)", prog[0], WTERMSIG(l.status), strsignal(WTERMSIG(l.status)));
    char shown[PATH_MAX];
    report(&l, prog, o->quiet || o->every, shown, sizeof shown);
    if (shown[0]) {
        cli_recorded rec = {o->sample || o->calls || o->trace[0], o->exceptions, o->alloc, o->locks, o->gc,
                            o->threadpool};
        cli_next_step(&rec, shown);
    }
    if (o->heap_at && !o->quiet)
        report_heap(o->heap_path, (long)l.pid);
    cli_session_remove(session);
    return cli_exit_code(l.status);
}

int cmd_run(int argc, char **argv) {
    static run_opts o; /* the environment keeps pointers into it until the exec */
    memset(&o, 0, sizeof o);
    int rc = parse_run_options(argc, argv, &o);
    if (rc)
        return rc == OPT_HELP_ASKED ? 0 : rc;
    char **prog = argv + optind;
    if ((rc = choose_events(&o)) != 0)
        return rc;
    for (size_t i = 0; i < NMODES; i++)
        if (run_modes[i].asked(&o) && (rc = run_modes[i].apply(&o)) != 0)
            return rc;
    char err[512];
    dnp_event_config cfg;
    if (dnp_events_parse(o.events, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "dnprof run: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    unsigned ms;
    const dnp_setting *f = &dnp_settings[DNP_SET_FLUSH_MS];
    if (o.flush_ms && dnp_setting_parse(DNP_SET_FLUSH_MS, o.flush_ms, &ms) < 0)
        return usage_error("run", "--flush-ms wants milliseconds from %u to %u, not '%s'", f->min, f->max, o.flush_ms);
    if (o.output && !*o.output)
        return usage_error("run", "--output wants a file name");
    int missing = cli_check_program("run", prog);
    if (missing)
        return missing;
    cli_agent agent;
    if (cli_agent_find(&agent, err, sizeof err) != 0) {
        error("%s", err);
        return 1;
    }
    char out_abs[PATH_MAX];
    if (prepare_output(o.output, out_abs, sizeof out_abs) != 0)
        return 1;
    if (o.stubs && !getenv("DOTNET_PerfMapEnabled")) { /* the user's own perf map stays theirs */
        setenv("DOTNET_PerfMapEnabled", "3", 1);
        o.stubs_map = 1;
    }
    return launch(&o, agent.path, out_abs, prog);
}
