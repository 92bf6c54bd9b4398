/* report_calls.c: the calls report of `dnprof report`: the functions that take
 * the most time by themselves and with what they call, the hottest call paths,
 * and, with --tree, the call tree pruned below a threshold; --json gives every
 * function and the whole tree for tools. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "dnp_text.h"
#include "export.h"
#include "idmap.h"
#include "report.h"
#include "settings.h"

#define NAME_MAX_LEN 2048

/* A --calls=counts trace: no times, so no time columns (they would all say 0). */
#define COUNTS_ONLY(ct) ((ct)->has_config && (ct)->mode == DNP_CALLS_COUNTS)

static const char *mode_text(uint64_t mode) {
    switch (mode) {
    case DNP_CALLS_SAMPLED: return "exact counts, and times from samples of the calls' stack (--calls)";
    case DNP_CALLS_TIMED: return "counts and times, each call timed (--calls=timed)";
    case DNP_CALLS_ARGS: return "counts, times, arguments and return values (--args)";
    case DNP_CALLS_TIMELINE: return "counts, times and the timeline of every call (--timeline)";
    case DNP_CALLS_COUNTS: return "call counts and call paths, no times (--calls=counts)";
    default: return NULL;
    }
}

/* --calls' times from samples: how many, and what was left out. */
static void put_sampled_note(const dnp_calltree *ct, FILE *out) {
    char a[32], b[32], c[32];
    uint64_t n = ct->calls_samples;
    fprintf(out,
            "note: times are estimates from %s samples of each thread's %s time at %s Hz, each charged to the "
            "call path on top of the agent's shadow stack (a path with n samples: about +-2*sqrt(n) of them); "
            "counts are exact\n",
            cli_fmt_count(n, a), ct->calls_clock == DNP_SAMPLE_WALL ? "elapsed" : "CPU",
            cli_fmt_count(ct->calls_rate, b));
    if (ct->calls_in_agent || ct->calls_outside || ct->calls_in_jit) {
        char d[32];
        fprintf(out,
                "note: left out of the times: %s samples (%.1f%%) in dnprof's own hooks and callbacks, %s (%.1f%%) "
                "while the JIT compiled a method (the runtime's work, not the method's), %s with no hooked method on "
                "the thread's stack\n",
                cli_fmt_count(ct->calls_in_agent, a), n ? 100.0 * (double)ct->calls_in_agent / (double)n : 0.0,
                cli_fmt_count(ct->calls_in_jit, d), n ? 100.0 * (double)ct->calls_in_jit / (double)n : 0.0,
                cli_fmt_count(ct->calls_outside, c));
    }
}

static void no_call_data(const dnp_calltree *ct, const char *path) {
    char holds[512];
    if (calls_say_why_none(ct, path))
        return;
    if (!*report_holds_text(ct->holds, holds, sizeof holds)) /* the event log of a plain dnprof run */
        snprintf(holds, sizeof holds, "; the events it holds: dnprof print %s", path);
    error("%s: this trace has no call data: record it with dnprof run --calls or --sample%s", path, holds);
}

static double pct(uint64_t v, uint64_t total) {
    return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* ---- text ---- */

/* "[libcoreclr.so+0x4b0210]", "[libcoreclr.so]": native code of a library
 * named by address, without a symbol: the library's name in lib. */
static int unnamed_native(const char *name, char *lib, size_t cap) {
    return name && name[0] == '[' && dnp_frame_library(name, lib, cap) > 0;
}

/* A note when a tenth or more of the sampled time is in one library's code
 * without names: how to get them (the runtime's symbols ship apart). */
static void put_unnamed_note(const dnp_calltree *ct, FILE *out) {
    enum { LIBS = 32 };
    struct {
        char name[64];
        uint64_t ns;
    } libs[LIBS];
    size_t nlibs = 0, best = 0;
    uint64_t total = ct->all.nnodes ? ct->all.nodes[0].total_ns : 0;
    char lib[64];
    for (uint32_t i = 1; i < ct->all.nnodes; i++) {
        const dnp_ct_node *nd = &ct->all.nodes[i];
        if (nd->func || !nd->self_ns || !unnamed_native(dnp_trace_string(ct->t, nd->name), lib, sizeof lib))
            continue;
        size_t k = 0;
        while (k < nlibs && strcmp(libs[k].name, lib) != 0)
            k++;
        if (k == nlibs && nlibs == LIBS)
            continue;
        if (k == nlibs) {
            snprintf(libs[k].name, sizeof libs[k].name, "%s", lib);
            libs[nlibs++].ns = 0;
        }
        libs[k].ns += nd->self_ns;
        if (libs[k].ns > libs[best].ns)
            best = k;
    }
    if (!total || !nlibs || libs[best].ns * 10 < total)
        return;
    const char *name = libs[best].name;
    int runtime = !strncmp(name, "libcoreclr", 10) || !strncmp(name, "libclrjit", 9);
    fprintf(out, "note: %.1f%% of the time is in code of %s without names ([%s+0x...]): ",
            report_pct(libs[best].ns, total), name, name);
    if (runtime)
        fprintf(out, "the runtime ships its symbols apart; dotnet-symbol --symbols DIR/%s (DIR: the runtime's, from "
                     "dotnet --list-runtimes) puts them beside it, and later recordings name its functions "
                     "(docs/sampling.md)\n", name);
    else if (!strncmp(name, "linux-vdso", 10) || !strncmp(name, "linux-gate", 10) || !strcmp(name, "[vdso]"))
        fputs("that is the kernel's vDSO, which reads the clock (clock_gettime, gettimeofday: Stopwatch, "
              "DateTime.UtcNow) and the CPU number without a system call, so the program reads the clock that much; "
              "its inner functions are named only in the kernel's debug package (vdso64.so), not in a library's "
              "(docs/sampling.md)\n", out);
    else if (!strstr(name, ".so")) /* an executable in a .NET process: the host, the runtime inside a single file */
        fprintf(out, "it is the program's executable, the .NET host (a single-file app holds the runtime in it), whose "
                     "symbols ship apart; dotnet-symbol --symbols PATH/%s puts them beside it, and later recordings "
                     "name its functions (docs/sampling.md)\n", name);
    else
        fputs("install its debug symbols (Debian, Ubuntu: the library's -dbgsym or -dbg package, as libc6-dbg for "
              "libc.so.6), and later recordings name its functions (docs/sampling.md)\n", out);
}

/* The header's lines of sampled stacks: the rate, and what to know of the samples. */
static void put_sampled_header(const dnp_calltree *ct, FILE *out) {
    char a[32], b[32], c[32], d[32];
    fprintf(out, "recorded: sampled stacks (--sample=%s, %llu Hz): times are samples x %s, estimates\n",
            report_sample_word(ct->sample_mode), (unsigned long long)ct->sample_rate,
            report_fmt_ns(ct->sample_period_ns, a));
    if (ct->samples_dropped)
        fprintf(out, "note: %s samples were dropped (a thread's buffer was full)\n",
                cli_fmt_count(ct->samples_dropped, b));
    if (ct->sample_instants && ct->sample_periods >= ct->sample_instants + ct->sample_instants / 4)
        fprintf(out, "note: %s samples were taken; the counts below are the %s periods they stand for (%s), so a "
                     "share is as precise as %s samples (docs/sampling.md)\n",
                cli_fmt_count(ct->sample_instants, b), cli_fmt_count(ct->sample_periods, c),
                ct->sample_mode == 2 ? "wall mode takes the threads in turn: a sample weighs the periods since its "
                                       "thread's last"
                                     : "the clock is tick-grained: a sample weighs 1 + its timer's overruns",
                cli_fmt_count(ct->sample_instants, d));
    if (ct->sample_mode == DNP_SAMPLE_WALL) {
        uint64_t waiting = 0;
        for (uint32_t i = 1; i < ct->all.nnodes; i++) {
            const dnp_ct_node *nd = &ct->all.nodes[i];
            const char *name = nd->func ? NULL : dnp_trace_string(ct->t, nd->name);
            if (name && !strcmp(name, "[waiting]"))
                waiting += nd->self_ns;
        }
        if (waiting)
            fprintf(out, "note: wall clock: [waiting] is the threads' time blocked, %.1f%% of it here; dnprof report "
                         "--waits adds it up by the managed frames that waited\n",
                    100.0 * (double)waiting / (double)(ct->all.nodes[0].total_ns ? ct->all.nodes[0].total_ns : 1));
    }
    put_unnamed_note(ct, out);
    uint64_t deep = 0; /* the samples of stacks cut at the agent's depth: their root says so */
    const char *deep_name = NULL;
    for (uint32_t i = 1; i < ct->all.nnodes; i++) {
        const dnp_ct_node *nd = &ct->all.nodes[i];
        const char *name = nd->func || nd->parent ? NULL : dnp_trace_string(ct->t, nd->name);
        if (name && !strncmp(name, "[deeper than ", 13))
            deep += nd->total_ns, deep_name = name;
    }
    if (deep)
        fprintf(out, "note: %.1f%% of the time is in stacks deeper than the agent walks (deep recursion): their "
                     "innermost frames are kept under a root %s, and their outer ones, toward Main, are not in "
                     "this trace\n",
                100.0 * (double)deep / (double)(ct->all.nodes[0].total_ns ? ct->all.nodes[0].total_ns : 1), deep_name);
    if (ct->async_stacks && !ct->physical)
        fputs("note: async stacks: a resumed async method is under the async methods that awaited it, "
              "not the thread pool (--physical: the threads' own stacks; docs/async.md)\n", out);
    else if (ct->async_stacks)
        fputs("note: --physical: the threads' own stacks, a resumed async method under the thread pool\n", out);
}

static void put_header(const dnp_calltree *ct, const dnp_ct_tree *tr, const report_opts *o, FILE *out) {
    const dnp_trace *t = ct->t;
    char a[32], b[32], c[32], pid[64];
    fprintf(out, "dnprof report: %s\n", o->path ? o->path : "trace");
    fprintf(out, "process %s: ", report_process_label(t, pid, sizeof pid));
    cli_put_text(out, t->cmdline && *t->cmdline ? t->cmdline : "?", 0);
    if (t->runtime && *t->runtime) {
        fputs(" (", out);
        cli_put_text(out, t->runtime, 0);
        fputc(')', out);
    }
    fputc('\n', out);
    if (ct->has_config) {
        const char *m = mode_text(ct->mode);
        if (m)
            fprintf(out, "recorded: %s", m);
        else
            fprintf(out, "recorded: calls mode %llu", (unsigned long long)ct->mode);
        fputs(ct->all_code ? ", all code (--all-code)" : ", the program's own code", out);
        if (ct->include && *ct->include) {
            fputs(", include '", out);
            cli_put_text(out, ct->include, 0);
            fputc('\'', out);
        }
        if (ct->exclude && *ct->exclude) {
            fputs(", exclude '", out);
            cli_put_text(out, ct->exclude, 0);
            fputc('\'', out);
        }
        fputc('\n', out);
        if (!ct->all_code)
            fprintf(out,
                    "note: recorded without --all-code: code the filter leaves out (by default the framework's) is "
                    "not hooked, and its time counts as its callers'; hooked methods are kept from inlining "
                    "and precompiled code, so their counts are exact%s\n",
                    ct->include && *ct->include ? ", but for framework methods named by --include (marked +: "
                                                  "a lower bound)" : "");
    }
    if (ct->sample_nodes)
        put_sampled_header(ct, out);
    if (ct->from_timeline)
        fputs("note: no CallNode totals in this trace: the tree is rebuilt from the enter/leave timeline\n", out);
    if (t->status != DNP_TRACE_COMPLETE)
        fprintf(out, "note: the trace is not complete (%s): totals are those of the agent's last flush\n",
                t->status_text[0] ? t->status_text : "no end record");
    if (ct->hook_threads && ct->hook_calls) {
        double per = (ct->hook_inner_ns + ct->hook_outer_ns) / (double)ct->hook_calls;
        fprintf(out,
                "note: times are net of the enter/leave hooks' own cost, measured by the agent on each thread "
                "as it ran: %.1f ns per call (%.1f ns inside the callee, %.1f ns in its caller), %s in all, "
                "taken out\n",
                per, ct->hook_inner_ns / (double)ct->hook_calls, ct->hook_outer_ns / (double)ct->hook_calls,
                report_fmt_ns((uint64_t)(ct->hook_inner_ns + ct->hook_outer_ns), a));
    }
    if (ct->cpu_wait_ns)
        fprintf(out, "note: %s the threads spent waiting for a CPU (run queue) is left out of the times\n",
                report_fmt_ns(ct->cpu_wait_ns, b));
    if (ct->has_config && ct->mode == DNP_CALLS_COUNTS)
        fputs("note: recorded with --calls=counts: exact counts and call paths, no times\n", out);
    if (ct->calls_clock)
        put_sampled_note(ct, out);
    if (ct->orphans)
        fprintf(out, "note: %s call paths lost their caller (a torn trace) and are shown under the root\n",
                cli_fmt_count(ct->orphans, a));
    if (ct->unmatched || ct->open_at_end)
        fprintf(out, "note: timeline: %s leaves without an enter, %s calls still open at the end\n",
                cli_fmt_count(ct->unmatched, a), cli_fmt_count(ct->open_at_end, b));

    uint64_t calls = 0;
    for (uint32_t i = 1; i < tr->nnodes; i++)
        calls += tr->nodes[i].calls;
    char label[512];
    dnp_export_thread_label(tr, label, sizeof label);
    uint64_t stacks = 0; /* the distinct stacks sampled: the paths with samples of their own */
    for (uint32_t i = 1; i < tr->nnodes; i++)
        stacks += tr->nodes[i].self_ns != 0;
    if (ct->sample_nodes && ct->sample_period_ns)
        fprintf(out, "%s: %s samples of %s distinct stacks, about %s", label,
                cli_fmt_count(tr->nodes[0].total_ns / ct->sample_period_ns, a), cli_fmt_count(stacks, b),
                report_fmt_ns(tr->nodes[0].total_ns, c));
    else if (COUNTS_ONLY(ct))
        fprintf(out, "%s: %s calls in %s call paths", label, cli_fmt_count(calls, a), cli_fmt_count(tr->nnodes - 1, b));
    else if (ct->calls_clock)
        fprintf(out, "%s: %s calls in %s call paths, %s of %s time in hooked code", label, cli_fmt_count(calls, a),
                cli_fmt_count(tr->nnodes - 1, b), report_fmt_ns(tr->nodes[0].total_ns, c),
                ct->calls_clock == DNP_SAMPLE_WALL ? "elapsed" : "CPU");
    else
        fprintf(out, "%s: %s calls in %s call paths, %s in hooked code", label, cli_fmt_count(calls, a),
                cli_fmt_count(tr->nnodes - 1, b), report_fmt_ns(tr->nodes[0].total_ns, c));
    if (tr == &ct->all && ct->nthreads > 1)
        fprintf(out, " (summed over %s threads)", CLI_COUNT(ct->nthreads));
    fputc('\n', out);
}

/* ---- below the resolution of the hooks' cost ----
 *
 * The report takes the hooks' own cost out of every time (calltree.c,
 * fix_hooks): per call, the inner part from the callee, both parts of every
 * call below from its callers' totals. That cost is measured, not known: it
 * moves with the machine from one measurement to the next, the inner part is a
 * midpoint (+-2 ns), the outer part can hide behind a caller's work. A time
 * from which more was taken out than is left is mostly the error of that
 * subtraction (a Fib of a few ns per call came out at 0.02 ns): it is marked
 * "~" in the text and "belowResolution" in the JSON (docs/reports.md). The
 * rule: a path's or function's total is below the resolution when it is less
 * than the hooks' whole cost (inner and outer, the trace's mean per call) for
 * its calls and every call below them. The whole, not the inner part alone:
 * where a pair's cost divides between callee and caller depends on the code
 * around the hook (out-of-order execution hides either end), so an error of
 * any part of it can land in the callee. */
typedef struct resolution {
    double in, out;   /* the hooks' mean cost per call, ns; both 0: nothing is marked */
    uint64_t *sub;    /* by node: calls in its subtree, its own included */
    dnp_idmap fh;     /* function key -> index in fbelow */
    uint8_t *fbelow;  /* by function (the order of dnp_ct_functions) */
    double *fcost;    /* by function: the hooks' cost taken out of its total */
    uint32_t *active; /* by function: frames of it on the walk's path */
    int noted;        /* the note was printed */
} resolution;

static double res_cost(const resolution *r, uint32_t n) {
    return (r->in + r->out) * (double)r->sub[n];
}

static int res_node_below(const resolution *r, const dnp_ct_tree *tr, uint32_t n) {
    if (!r || !r->sub || n == 0 || !tr->nodes[n].calls)
        return 0;
    return (double)tr->nodes[n].total_ns < res_cost(r, n);
}

static int res_func_below(const resolution *r, const dnp_ct_func *f) {
    uint32_t k;
    if (!r || !r->fbelow || !dnp_idmap_get(&r->fh, dnp_ct_frame_key(f->func, f->name), 0, &k))
        return 0;
    return r->fbelow[k];
}

static int res_sub_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    resolution *r = ctx;
    if (enter)
        return 0;
    uint64_t s = tr->nodes[n].calls;
    for (uint32_t c = tr->nodes[n].first_child; c; c = tr->nodes[c].next_sibling)
        s += r->sub[c];
    r->sub[n] = s;
    return 0;
}

static int res_func_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    resolution *r = ctx;
    uint32_t k;
    if (n == 0 || !dnp_idmap_get(&r->fh, dnp_ct_frame_key(tr->nodes[n].func, tr->nodes[n].name), 0, &k))
        return 0;
    if (!enter)
        r->active[k]--;
    else if (r->active[k]++ == 0) /* its outermost frame on this path: where its total is counted */
        r->fcost[k] += res_cost(r, n);
    return 0;
}

static void res_free(resolution *r) {
    free(r->sub);
    free(r->fbelow);
    free(r->fcost);
    free(r->active);
    dnp_idmap_release(&r->fh);
    memset(r, 0, sizeof *r);
}

/* Nothing is marked when the times were not corrected (no CallsOverhead, a
 * timeline, samples, counts) or memory is short. */
static void res_init(resolution *r, const dnp_calltree *ct, const dnp_ct_tree *tr, const dnp_ct_func *f, size_t nf) {
    memset(r, 0, sizeof *r);
    if (!ct->hook_threads || !ct->hook_calls || ct->from_timeline || ct->sample_nodes || COUNTS_ONLY(ct) ||
        !tr->nnodes)
        return;
    r->in = ct->hook_inner_ns / (double)ct->hook_calls;
    r->out = ct->hook_outer_ns / (double)ct->hook_calls;
    r->sub = calloc(tr->nnodes, sizeof *r->sub);
    r->fbelow = calloc(nf ? nf : 1, sizeof *r->fbelow);
    r->fcost = calloc(nf ? nf : 1, sizeof *r->fcost);
    r->active = calloc(nf ? nf : 1, sizeof *r->active);
    int ok = r->sub && r->fbelow && r->fcost && r->active;
    for (size_t i = 0; ok && i < nf; i++)
        ok = dnp_idmap_put(&r->fh, dnp_ct_frame_key(f[i].func, f[i].name), 0, (uint32_t)i) == 0;
    if (!ok) {
        res_free(r);
        return;
    }
    dnp_ct_walk(tr, res_sub_visit, r);
    dnp_ct_walk(tr, res_func_visit, r);
    for (size_t i = 0; i < nf; i++)
        r->fbelow[i] = f[i].calls && (double)f[i].total_ns < r->fcost[i];
}

/* A time, "~" before it when it is below the resolution. */
static const char *fmt_mark(uint64_t ns, int below, char *buf) {
    char t[32];
    size_t len = strlen(report_fmt_ns(ns, t)), at = below ? 1 : 0;
    if (len > 30)
        len = 30;
    buf[0] = '~';
    memcpy(buf + at, t, len);
    buf[at + len] = 0;
    return buf;
}

static void put_res_note(resolution *r, FILE *out) {
    if (r->noted++) { /* the full note once per report, then a pointer to it */
        fputs("~ below the resolution of --calls (see the note above)\n", out);
        return;
    }
    fprintf(out,
            "~ below the resolution of --calls: less time is left than the hooks' cost (%.1f ns a call) of its "
            "calls and of the calls below it, so the figure is mostly that cost's error; "
            "record such methods with dnprof run --sample\n",
            r->in + r->out);
}

/* What a node's count counts: calls (--calls) or samples (--sample). */
#define CALLS_UNIT(ct) ((ct)->sample_nodes ? "samples" : "calls")

/* Whether a hooked method's count may fall short: a framework method that
 * --include named (without --all-code) is also called from framework code
 * precompiled with it inlined, before any profiler ran (docs/calls.md). Its
 * count is a lower bound: "+" after it in the text, "callsLowerBound" in the
 * JSON. Every other hooked method is kept from inlining: its count is exact. */
static int count_lower_bound(const dnp_calltree *ct, uint64_t func, uint64_t name_id) {
    if (ct->sample_nodes || !ct->has_config || ct->all_code || !ct->include || !*ct->include)
        return 0;
    char name[NAME_MAX_LEN];
    const char *s = dnp_export_name(ct, func, name_id, name, sizeof name);
    return dnp_is_framework_name(s);
}

/* A count, "+" after it when it is a lower bound. */
static const char *fmt_count_mark(uint64_t n, int lower, char *buf) {
    cli_fmt_count(n, buf);
    if (lower)
        strcat(buf, "+");
    return buf;
}

static void put_func_table(const dnp_calltree *ct, resolution *r, const dnp_ct_func *f, size_t n, unsigned top,
                           uint64_t total, const char *title, FILE *out) {
    char a[32], b[32], c[32], name[NAME_MAX_LEN];
    int counts = COUNTS_ONLY(ct);
    fprintf(out, "\n%s\n", title);
    if (counts)
        fprintf(out, "%14s  %s\n", CALLS_UNIT(ct), "function");
    else
        fprintf(out, "%10s %6s %10s %6s %14s  %s\n", "self", "%", "total", "%", CALLS_UNIT(ct), "function");
    int marked = 0, lower_marked = 0;
    for (size_t i = 0; i < n && i < top; i++) {
        int below = res_func_below(r, &f[i]), lower = count_lower_bound(ct, f[i].func, f[i].name);
        marked |= below;
        lower_marked |= lower;
        if (counts)
            fprintf(out, "%14s  ", fmt_count_mark(f[i].calls, lower, c));
        else
            fprintf(out, "%10s %5.1f%% %10s %5.1f%% %14s  ", fmt_mark(f[i].self_ns, below, a),
                    pct(f[i].self_ns, total), fmt_mark(f[i].total_ns, below, b), pct(f[i].total_ns, total),
                    fmt_count_mark(f[i].calls, lower, c));
        cli_put_text(out, dnp_export_name(ct, f[i].func, f[i].name, name, sizeof name), 0);
        fputc('\n', out);
    }
    if (n > top)
        fprintf(out, "%*s  ... and %zu more (--top N to see more)\n", counts ? 14 : 10 + 1 + 6 + 1 + 10 + 1 + 6 + 1 + 14,
                "", n - top);
    if (marked)
        put_res_note(r, out);
    if (lower_marked)
        fputs("+ a lower bound: a framework method named by --include is also called, unseen, from framework "
              "code precompiled with it inlined; --all-code makes its count exact\n",
              out);
}

static int by_total(const void *x, const void *y) {
    const dnp_ct_func *a = x, *b = y;
    if (a->total_ns != b->total_ns)
        return a->total_ns > b->total_ns ? -1 : 1;
    if (a->self_ns != b->self_ns)
        return a->self_ns > b->self_ns ? -1 : 1;
    return a->func < b->func ? -1 : a->func > b->func;
}

static int by_calls(const void *x, const void *y) {
    const dnp_ct_func *a = x, *b = y;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    return a->func < b->func ? -1 : a->func > b->func;
}

static const dnp_ct_tree *sort_tree;

static int by_node_calls(const void *x, const void *y) {
    const dnp_ct_node *a = &sort_tree->nodes[*(const uint32_t *)x], *b = &sort_tree->nodes[*(const uint32_t *)y];
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int by_node_self(const void *x, const void *y) {
    const dnp_ct_node *a = &sort_tree->nodes[*(const uint32_t *)x], *b = &sort_tree->nodes[*(const uint32_t *)y];
    if (a->self_ns != b->self_ns)
        return a->self_ns > b->self_ns ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

/* One frame identity for every report (calltree.h): a managed function by
 * its id, native code by library and symbol (its name). */
static int same_frame(const dnp_ct_node *a, const dnp_ct_node *b) {
    return dnp_ct_frame_key(a->func, a->name) == dnp_ct_frame_key(b->func, b->name);
}

/* The path from the root to n, " > " between frames, runs of one function as "F (xN)". */
static void put_path(const dnp_calltree *ct, const dnp_ct_tree *tr, uint32_t n, FILE *out) {
    uint32_t depth = tr->nodes[n].depth;
    uint32_t *chain = malloc((depth ? depth : 1) * sizeof *chain);
    if (!chain)
        return;
    for (uint32_t k = depth, m = n; k-- > 0; m = tr->nodes[m].parent)
        chain[k] = m;
    /* runs of the same function */
    uint32_t nruns = 0;
    for (uint32_t k = 0; k < depth; k++)
        if (k == 0 || !same_frame(&tr->nodes[chain[k]], &tr->nodes[chain[k - 1]]))
            nruns++;
    uint32_t run = 0;
    char name[NAME_MAX_LEN];
    for (uint32_t k = 0; k < depth;) {
        uint32_t j = k;
        while (j < depth && same_frame(&tr->nodes[chain[j]], &tr->nodes[chain[k]]))
            j++;
        if (nruns > 12 && run == 3)
            fputs(" > ...", out);
        if (nruns <= 12 || run < 3 || run >= nruns - 8) {
            const dnp_ct_node *node = &tr->nodes[chain[k]];
            fputs(run ? " > " : "", out);
            cli_put_text(out, dnp_export_name(ct, node->func, node->name, name, sizeof name), 0);
            if (j - k > 1)
                fprintf(out, " (x%u)", j - k);
        }
        run++;
        k = j;
    }
    free(chain);
}

static void put_paths(const dnp_calltree *ct, resolution *r, const dnp_ct_tree *tr, unsigned top, FILE *out) {
    uint64_t total = tr->nodes[0].total_ns;
    uint32_t n = tr->nnodes - 1;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i + 1;
    int counts = COUNTS_ONLY(ct);
    sort_tree = tr;
    qsort(order, n, sizeof *order, counts ? by_node_calls : by_node_self);
    char a[32], c[32];
    if (counts) {
        fputs("\nmost called paths (by calls of the last frame)\n", out);
        fprintf(out, "%14s  %s\n", CALLS_UNIT(ct), "path");
    } else {
        fputs("\nhottest call paths (by self time of the last frame)\n", out);
        fprintf(out, "%10s %6s %14s  %s\n", "self", "%", CALLS_UNIT(ct), "path");
    }
    int marked = 0;
    for (uint32_t i = 0; i < n && i < top && (counts ? tr->nodes[order[i]].calls : tr->nodes[order[i]].self_ns);
         i++) {
        const dnp_ct_node *node = &tr->nodes[order[i]];
        int below = res_node_below(r, tr, order[i]);
        marked |= below;
        if (counts)
            fprintf(out, "%14s  ", cli_fmt_count(node->calls, c));
        else
            fprintf(out, "%10s %5.1f%% %14s  ", fmt_mark(node->self_ns, below, a), pct(node->self_ns, total),
                    cli_fmt_count(node->calls, c));
        put_path(ct, tr, order[i], out);
        fputc('\n', out);
    }
    free(order);
    if (marked)
        put_res_note(r, out);
}

typedef struct tree_printer {
    const dnp_calltree *ct;
    resolution *r;
    FILE *out;
    uint64_t total, min;
    int marked;
} tree_printer;

static void put_hidden(tree_printer *p, const dnp_ct_tree *tr, uint32_t parent) {
    uint64_t ns = 0, count = 0;
    for (uint32_t c = tr->nodes[parent].first_child; c; c = tr->nodes[c].next_sibling) {
        if (tr->nodes[c].total_ns < p->min) {
            ns += tr->nodes[c].total_ns;
            count++;
        }
    }
    if (!count)
        return;
    char a[32], b[32];
    fprintf(p->out, "%10s %5.1f%% %10s %14s  %*s... %s more below the threshold\n", report_fmt_ns(ns, a), pct(ns, p->total),
            "", "", (int)(2 * tr->nodes[parent].depth), "", cli_fmt_count(count, b));
}

static int tree_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    tree_printer *p = ctx;
    const dnp_ct_node *node = &tr->nodes[n];
    int shown = n == 0 || node->total_ns >= p->min;
    if (!enter) {
        if (shown)
            put_hidden(p, tr, n);
        return 0;
    }
    if (!shown)
        return 0;
    if (n == 0)
        return 0;
    /* a shown node's ancestors are shown: children are sorted, and a parent's total >= a child's */
    char a[32], b[32], c[32], name[NAME_MAX_LEN];
    if (COUNTS_ONLY(p->ct))
        fprintf(p->out, "%14s  %*s", cli_fmt_count(node->calls, c), (int)(2 * (node->depth - 1)), "");
    else {
        int below = res_node_below(p->r, tr, n);
        p->marked |= below;
        fprintf(p->out, "%10s %5.1f%% %10s %14s  %*s", fmt_mark(node->total_ns, below, a),
                pct(node->total_ns, p->total), fmt_mark(node->self_ns, below, b), cli_fmt_count(node->calls, c),
                (int)(2 * (node->depth - 1)), "");
    }
    cli_put_text(p->out, dnp_export_name(p->ct, node->func, node->name, name, sizeof name), 0);
    if (node->tailcalls)
        fprintf(p->out, "  [%s tail calls]", cli_fmt_count(node->tailcalls, a));
    fputc('\n', p->out);
    return ferror(p->out) ? -1 : 0;
}

static void put_tree(const dnp_calltree *ct, resolution *r, const dnp_ct_tree *tr, double threshold,
                     FILE *out) {
    tree_printer p = {ct, r, out, tr->nodes[0].total_ns, 0, 0};
    p.min = (uint64_t)((double)p.total * threshold / 100.0);
    char label[512], a[32];
    dnp_export_thread_label(tr, label, sizeof label);
    if (COUNTS_ONLY(ct)) { /* no times to prune by: every path */
        p.min = 0;
        fprintf(out, "\ncall tree, %s (every path: --calls=counts has no times to prune by)\n", label);
        fprintf(out, "%14s  %s\n", CALLS_UNIT(ct), "function");
        dnp_ct_walk(tr, tree_visit, &p);
        return;
    }
    fprintf(out, "\ncall tree, %s (paths below %.2g%% of %s hidden)\n", label, threshold, report_fmt_ns(p.total, a));
    fprintf(out, "%10s %6s %10s %14s  %s\n", "total", "%", "self", CALLS_UNIT(ct), "function");
    dnp_ct_walk(tr, tree_visit, &p);
    if (p.marked)
        put_res_note(r, out);
}

/* ---- JSON ---- */

typedef struct json_tree {
    const dnp_calltree *ct;
    const resolution *r;
    FILE *out;
} json_tree;

static void json_func_fields(const dnp_calltree *ct, uint64_t func, uint64_t name, FILE *out) {
    char buf[NAME_MAX_LEN], raw[64];
    fprintf(out, "\"id\":\"0x%llx\",\"name\":", (unsigned long long)func);
    dnp_export_json_str(out, dnp_export_name(ct, func, name, buf, sizeof buf), 0);
    fputs(",\"raw\":", out);
    const char *r = dnp_trace_string(ct->t, name);
    dnp_export_json_str(out, r && *r ? r : dnp_ct_raw_name(ct, func, name, raw, sizeof raw), 0);
}

static int json_tree_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    json_tree *j = ctx;
    const dnp_ct_node *node = &tr->nodes[n];
    if (!enter) {
        fputs("]}", j->out);
        return ferror(j->out) ? -1 : 0;
    }
    if (n && tr->nodes[node->parent].first_child != n)
        fputc(',', j->out);
    fputc('{', j->out);
    if (n) {
        json_func_fields(j->ct, node->func, node->name, j->out);
        fputc(',', j->out);
    } else {
        char label[512];
        dnp_export_thread_label(tr, label, sizeof label);
        fputs("\"name\":", j->out);
        dnp_export_json_str(j->out, label, 0);
        fputc(',', j->out);
    }
    fprintf(j->out, "\"calls\":%llu,\"tailcalls\":%llu,\"selfNs\":%llu,\"totalNs\":%llu,", (unsigned long long)node->calls,
            (unsigned long long)node->tailcalls, (unsigned long long)node->self_ns, (unsigned long long)node->total_ns);
    if (n)
        fprintf(j->out, "\"belowResolution\":%s,", res_node_below(j->r, tr, n) ? "true" : "false");
    fputs("\"children\":[", j->out);
    return 0;
}

static int put_json(const dnp_calltree *ct, const resolution *r, const dnp_ct_tree *tr, const dnp_ct_func *f,
                    size_t nf, const report_opts *o, FILE *out) {
    const dnp_trace *t = ct->t;
    fputs("{\"trace\":", out);
    dnp_export_json_str(out, o->path, 0);
    fprintf(out, ",\"complete\":%s,\"pid\":%llu,", t->status == DNP_TRACE_COMPLETE ? "true" : "false",
            (unsigned long long)t->pid);
    if (t->host_pid)
        fprintf(out, "\"hostPid\":%llu,", (unsigned long long)t->host_pid);
    fputs("\"command\":", out);
    dnp_export_json_str(out, t->cmdline, 0);
    fputs(",\"runtime\":", out);
    dnp_export_json_str(out, t->runtime, 0);
    report_json_recorded(ct, out);
    fprintf(out, ",\"hooks\":{\"calls\":%llu,\"innerNs\":%.0f,\"outerNs\":%.0f,\"cpuWaitNs\":%llu}",
            (unsigned long long)ct->hook_calls, ct->hook_inner_ns, ct->hook_outer_ns,
            (unsigned long long)ct->cpu_wait_ns);
    if (ct->sample_nodes)
        fprintf(out, ",\"sampled\":{\"mode\":%llu,\"rateHz\":%llu,\"periodNs\":%llu,\"dropped\":%llu,"
                     "\"samplesTaken\":%llu,\"periods\":%llu}",
                (unsigned long long)ct->sample_mode, (unsigned long long)ct->sample_rate,
                (unsigned long long)ct->sample_period_ns, (unsigned long long)ct->samples_dropped,
                (unsigned long long)ct->sample_instants, (unsigned long long)ct->sample_periods);
    fprintf(out, ",\"source\":\"%s\",\"totalNs\":%llu,\"threads\":[",
            ct->from_timeline ? "timeline" : ct->sample_nodes ? "SampleNode" : "CallNode",
            (unsigned long long)tr->nodes[0].total_ns);
    for (size_t i = 0; i < ct->nthreads; i++) {
        const dnp_ct_tree *th = &ct->threads[i];
        fprintf(out, "%s{\"thread\":%u,\"osTid\":%llu,\"name\":", i ? "," : "", th->thread,
                (unsigned long long)th->os_tid);
        dnp_export_json_str(out, th->name, 0);
        fprintf(out, ",\"totalNs\":%llu}", (unsigned long long)th->nodes[0].total_ns);
    }
    fputs("],\n\"functions\":[", out);
    for (size_t i = 0; i < nf; i++) {
        fputs(i ? ",\n{" : "\n{", out);
        json_func_fields(ct, f[i].func, f[i].name, out);
        fprintf(out,
                ",\"calls\":%llu,\"callsLowerBound\":%s,\"tailcalls\":%llu,\"selfNs\":%llu,\"totalNs\":%llu,"
                "\"belowResolution\":%s}",
                (unsigned long long)f[i].calls, count_lower_bound(ct, f[i].func, f[i].name) ? "true" : "false",
                (unsigned long long)f[i].tailcalls, (unsigned long long)f[i].self_ns,
                (unsigned long long)f[i].total_ns, res_func_below(r, &f[i]) ? "true" : "false");
    }
    fputs("],\n\"tree\":", out);
    json_tree j = {ct, r, out};
    int rc = dnp_ct_walk(tr, json_tree_visit, &j);
    if (traced_count(o->traced)) {
        fputs(",\n", out);
        traced_json(o->traced, out);
    }
    fputs("}\n", out);
    return rc;
}

int calls_open(const char *path, int reread, calls_input *in) {
    char err[512];
    memset(in, 0, sizeof *in);
    if (!dnp_setting_env_value(DNP_SET_NO_STREAM)) {
        if (dnp_trace_stream_open(path, &in->s, err, sizeof err) != 0) {
            error("%s", err);
            return 1;
        }
        if (!reread || dnp_trace_stream_rereadable(in->s)) {
            in->streamed = 1;
            if (dnp_calltree_build_stream(in->s, &in->ct, err, sizeof err) != 0) {
                error("%s: %s", path, err);
                calls_close(in);
                return 1;
            }
            const dnp_trace *t = dnp_trace_stream_trace(in->s);
            if (t->status != DNP_TRACE_COMPLETE)
                warning("%s: %s", path, t->status_text[0] ? t->status_text : "the trace is not complete");
            return 0;
        }
        dnp_trace_stream_close(in->s); /* a pipe read twice: load it instead (it has not been read yet) */
        in->s = NULL;
    }
    if (dnp_trace_load(path, &in->t, err, sizeof err) != 0) {
        error("%s", err);
        return 1;
    }
    if (in->t->status != DNP_TRACE_COMPLETE)
        warning("%s: %s", path, in->t->status_text[0] ? in->t->status_text : "the trace is not complete");
    if (dnp_calltree_build(in->t, &in->ct, err, sizeof err) != 0) {
        error("%s: %s", path, err);
        calls_close(in);
        return 1;
    }
    return 0;
}

void calls_close(calls_input *in) {
    dnp_calltree_free(in->ct);
    dnp_trace_stream_close(in->s);
    dnp_trace_free(in->t);
    memset(in, 0, sizeof *in);
}

int report_calls(const dnp_calltree *ct, const report_opts *o, FILE *out) {
    if (!dnp_calltree_has_data(ct)) {
        no_call_data(ct, o->path);
        return 1;
    }
    const dnp_ct_tree *tr = &ct->all;
    if (o->has_thread) {
        tr = dnp_ct_find_thread(ct, o->thread);
        if (!tr) {
            char list[256] = "";
            size_t len = 0;
            for (size_t i = 0; i < ct->nthreads && len < sizeof list - 32; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%u", i ? ", " : "", ct->threads[i].thread);
            error("%s: no thread %llu with call data (--thread takes one of: %s, or an OS thread id)", o->path,
                  (unsigned long long)o->thread, list);
            return 1;
        }
    }
    dnp_ct_func *f = NULL;
    size_t nf = 0;
    if (dnp_ct_functions(tr, &f, &nf) != 0) {
        error("out of memory");
        return 1;
    }
    /* A function's samples are the samples it is in, counted once as its total
     * time is: a stack that holds it twice is one sample, not two. */
    if (ct->sample_nodes)
        for (size_t i = 0; i < nf; i++)
            f[i].calls = f[i].outer_calls;
    int rc = 0;
    resolution res;
    res_init(&res, ct, tr, f, nf);
    if (o->json) {
        rc = put_json(ct, &res, tr, f, nf, o, out);
    } else {
        uint64_t total = tr->nodes[0].total_ns;
        int counts = ct->has_config && ct->mode == 4;
        put_header(ct, tr, o, out);
        if (!counts) { /* f is by self time: those with none are in the table by total below */
            size_t ns = 0;
            while (ns < nf && f[ns].self_ns)
                ns++;
            put_func_table(ct, &res, f, ns ? ns : nf, o->top, total,
                           "top functions by self time (time in the function itself)", out);
        }
        dnp_ct_func *byt = malloc((nf ? nf : 1) * sizeof *byt);
        if (byt && counts) {
            memcpy(byt, f, nf * sizeof *byt);
            qsort(byt, nf, sizeof *byt, by_calls);
            put_func_table(ct, &res, byt, nf, o->top, total, "top functions by calls", out);
            free(byt);
        } else if (byt) {
            memcpy(byt, f, nf * sizeof *byt);
            size_t roots = ct->sample_nodes ? report_drop_roots(tr, byt, nf) : 0, nb = nf - roots;
            qsort(byt, nb, sizeof *byt, by_total);
            put_func_table(ct, &res, byt, nb, o->top, total,
                           roots ? "top functions by total time (with what they call; recursion counted once; "
                                   "without the native frames that start every thread)"
                                 : "top functions by total time (with what they call; recursion counted once)",
                           out);
            free(byt);
        }
        put_paths(ct, &res, tr, o->top, out);
        if (o->tree)
            put_tree(ct, &res, tr, o->threshold, out);
        if (traced_count(o->traced))
            traced_text(o->traced, o->top, out);
    }
    res_free(&res);
    free(f);
    if (fflush(out) != 0 || ferror(out) || rc != 0) {
        if (errno != EPIPE)
            error("cannot write the report: %s", strerror(errno ? errno : EIO));
        return 1;
    }
    return 0;
}
