/* cmd_report.c: `dnprof report`: what a trace adds up to. The calls report by
 * default (report_calls.c); --exceptions the exceptions report. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "report.h"
#include "trace_reader.h"

static void report_help(void) {
    fputs("usage: dnprof report [options] FILE\n"
          "\n"
          "Adds up a trace recorded with 'dnprof run --calls' (or with --sample, where\n"
          "times are samples x the period: estimates): the functions that take the most\n"
          "time by themselves (self) and with what they call (total), how often they were\n"
          "called (with --calls=counts: only that) and their share of all the time, then\n"
          "the hottest call paths. Names are shown as they were written: an async method's\n"
          "state machine as 'Foo (async)', a lambda as 'lambda in Main' (--json keeps the\n"
          "compiler's name in \"raw\").\n"
          "A trace of 'dnprof run/attach --trace PATTERN' adds a section of the traced\n"
          "methods: exact calls, total, mean, p50, p99 and max time of each, and the same\n"
          "by caller under it (alone when the trace has no other call data).\n"
          "\n"
          "options:\n"
          "      --top N          how many functions and paths to list (default 20); with\n"
          "                       --exceptions, rows per table (default all)\n"
          "      --tree           also print the call tree, indented\n"
          "      --threshold PCT  hide tree paths below PCT percent of the total (default 0.5)\n"
          "      --thread N       only this thread: dnprof's thread number (print's first\n"
          "                       column) or an OS thread id (default: all threads merged)\n"
          "      --json           every function and the whole tree as JSON, for tools\n"
          "                       (with --trace's methods in \"traced\")\n"
          "      --physical       sampled stacks as the threads had them: a resumed async\n"
          "                       method under the thread pool, not under the async methods\n"
          "                       that awaited it (the default view; docs/async.md)\n"
          "      --exceptions     the exceptions report instead\n"
          "      --alloc          the sampled allocations report instead (dnprof run --alloc):\n"
          "                       estimated bytes and objects by type, top allocating paths\n"
          "      --locks          the lock contention report instead (dnprof run --locks):\n"
          "                       time waited by lock type, waiting site and owner thread,\n"
          "                       the top contended stacks; \"no contention\" when none\n"
          "      --gc             the GC report instead (dnprof run --gc): a line per\n"
          "                       collection (and the generation GC.Collect asked for, when\n"
          "                       the GC took it further; with --top N the N longest pauses),\n"
          "                       then pauses by generation and reason\n"
          "      --threadpool     the thread-pool report instead (dnprof run --threadpool):\n"
          "                       starvation, threads blocked on tasks (sync over async), and\n"
          "                       with --wall where the pool's threads waited\n"
          "      --waits          where the time waited went, on one page: lock contention,\n"
          "                       GC pauses, starvation, blocked stacks from --sample=wall;\n"
          "                       a line for each part not recorded, with its flag\n"
          "  -h, --help           print this help\n"
          "\n"
          "examples:\n"
          "  dnprof run --calls -o app.trace -- dotnet app.dll\n"
          "  dnprof report app.trace\n"
          "  dnprof report --tree --threshold 2 app.trace\n"
          "  dnprof report --json app.trace | jq '.functions[:5]'\n"
          "  dnprof attach 4242 --trace 'MyApp.Orders::*' -d 30s -o app.trace; dnprof report app.trace\n"
          "  dnprof run --locks -o app.trace -- dotnet app.dll; dnprof report --locks app.trace\n"
          "  dnprof convert --format flamegraph app.trace   (see dnprof convert --help)\n",
          stdout);
}

/* The report that the flags ask for, of the trace at o->path: the exit code. */
static int dispatch(report_opts *o, int exceptions, int alloc, int locks, int gc, int threadpool, int waits,
                    int top_given) {
    if (alloc + exceptions + locks + gc + threadpool + waits > 1)
        return usage_error("report", "--alloc, --exceptions, --locks, --gc, --threadpool or --waits: one report at a time");
    if (waits && (o->tree || o->has_thread))
        return usage_error("report", "--tree and --thread are for the calls report, not --waits");
    if (waits)
        return report_waits(o->path, o->json, top_given ? o->top : 5, stdout);
    if (locks) {
        if (o->tree || o->has_thread)
            return usage_error("report", "--tree and --thread are for the calls report; for the "
                                         "waits as a tree: dnprof convert --format flamegraph");
        locks_profile *p;
        if (locks_open(o->path, &p) != 0)
            return 1;
        int rc = report_locks(p, o, stdout);
        locks_free(p);
        return rc;
    }
    if ((gc || threadpool) && (o->tree || o->has_thread))
        return usage_error("report", "--tree and --thread are for the calls report, not --gc or --threadpool");
    if (gc)
        return report_gc(o->path, o->json, top_given ? o->top : 0, stdout);
    if (threadpool)
        return report_threadpool(o->path, o->json, top_given ? o->top : 5, stdout);
    if (alloc) {
        if (o->tree || o->has_thread)
            return usage_error("report", "--tree and --thread are for the calls report; for the "
                                         "allocations as a tree: dnprof convert --format flamegraph");
        alloc_profile *p;
        if (alloc_open(o->path, &p) != 0)
            return 1;
        int rc = report_alloc(p, o, stdout);
        alloc_free(p);
        return rc;
    }
    if (!exceptions) { /* streamed: memory bounded by the call trees, not the events */
        traced_set *ts = NULL;
        if (traced_read(o->path, &ts) != 0)
            return 1;
        o->traced = ts;
        calls_input in;
        int rc = 1;
        if (calls_open(o->path, 0, &in) == 0) {
            if (traced_count(ts) && !dnp_calltree_has_data(in.ct) && !o->tree && !o->has_thread)
                rc = report_traced_only(ts, o, stdout); /* dnprof run/attach --trace alone */
            else
                rc = report_calls(in.ct, o, stdout);
            calls_close(&in);
        }
        traced_free(ts);
        return rc;
    }
    if (o->tree || o->has_thread)
        return usage_error("report", "--tree and --thread are for the calls report; for one thread's "
                                     "exceptions: dnprof print --exceptions");
    /* streamed too: memory bounded by the stories */
    return report_exceptions(o->path, o->json, top_given ? o->top : 0, stdout);
}

int cmd_report(int argc, char **argv) {
    enum { OPT_TOP = 256, OPT_TREE, OPT_THRESHOLD, OPT_THREAD, OPT_JSON, OPT_EXCEPTIONS, OPT_ALLOC = 340, OPT_LOCKS = 360,
           OPT_GC = 400, OPT_THREADPOOL, OPT_WAITS, OPT_PHYSICAL };
    static const struct option longopts[] = {
        {"top", required_argument, NULL, OPT_TOP},   {"tree", no_argument, NULL, OPT_TREE},
        {"threshold", required_argument, NULL, OPT_THRESHOLD}, {"thread", required_argument, NULL, OPT_THREAD},
        {"json", no_argument, NULL, OPT_JSON},       {"exceptions", no_argument, NULL, OPT_EXCEPTIONS},
        {"alloc", no_argument, NULL, OPT_ALLOC},     {"locks", no_argument, NULL, OPT_LOCKS},
        {"gc", no_argument, NULL, OPT_GC},           {"threadpool", no_argument, NULL, OPT_THREADPOOL},
        {"waits", no_argument, NULL, OPT_WAITS},     {"physical", no_argument, NULL, OPT_PHYSICAL},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
    report_opts o;
    memset(&o, 0, sizeof o);
    o.top = 20;
    o.threshold = 0.5;
    int exceptions = 0, alloc = 0, locks = 0, gc = 0, threadpool = 0, waits = 0, threshold_given = 0, top_given = 0, c;
    uint64_t v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_TOP:
            if (cli_parse_u64(optarg, &v) != 0 || v == 0 || v > 1000000)
                return usage_error("report", "--top wants a number from 1 to 1000000, not '%s'", optarg);
            o.top = (unsigned)v;
            top_given = 1;
            break;
        case OPT_TREE: o.tree = 1; break;
        case OPT_THRESHOLD: {
            char *end;
            double d = strtod(optarg, &end);
            if (end == optarg || *end || !(d >= 0.0 && d <= 100.0))
                return usage_error("report", "--threshold wants a percentage from 0 to 100, not '%s'", optarg);
            o.threshold = d;
            threshold_given = 1;
            break;
        }
        case OPT_THREAD:
            if (cli_parse_u64(optarg, &o.thread) != 0 || o.thread == 0)
                return usage_error("report", "--thread wants a thread number or an OS thread id, not '%s'", optarg);
            o.has_thread = 1;
            break;
        case OPT_JSON: o.json = 1; break;
        case OPT_EXCEPTIONS: exceptions = 1; break;
        case OPT_ALLOC: alloc = 1; break;
        case OPT_LOCKS: locks = 1; break;
        case OPT_GC: gc = 1; break;
        case OPT_THREADPOOL: threadpool = 1; break;
        case OPT_WAITS: waits = 1; break;
        case OPT_PHYSICAL: dnp_calltree_set_physical(1); break;
        case 'h': report_help(); return 0;
        default: return cli_bad_option("report", argv, c);
        }
    }
    int bad = cli_one_file("report", "dnprof report [options] FILE", argc, argv, &o.path);
    if (bad)
        return bad;
    if (threshold_given && !o.tree)
        return usage_error("report", "--threshold prunes the tree: give --tree too");
    if (cli_not_a_snapshot(o.path))
        return 1;

    return dispatch(&o, exceptions, alloc, locks, gc, threadpool, waits, top_given);
}
