/* test_export.c: call trees from synthetic traces (CallNode totals, the last one
 * of a node winning; the enter/leave timeline), and the exports parsed back:
 * folded stacks against golden files, speedscope and Chrome JSON through a
 * strict parser, the HTML flame graph's data; totals agree everywhere. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calltree.h"
#include "export.h"
#include "json_check.h"
#include "synth.h"
#include "test.h"

#ifndef DNPROF_GOLDEN_DIR
#define DNPROF_GOLDEN_DIR "tests/unit/golden"
#endif

enum { F_MAIN = 0x10, F_WORK = 0x20, F_FIB = 0x30, F_LAMBDA = 0x40, F_RUN = 0x50 };

static const char *tmp_file(const char *name) {
    static char path[512];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/dnprof-export-%d-%s", base && *base ? base : "/tmp", (int)getpid(), name);
    return path;
}

typedef struct names {
    uint64_t main, work, fib, lambda, run;
} names;

static void add_names(synth *s, names *n) {
    n->main = synth_string(s, "Ns.P::Main");
    n->work = synth_string(s, "Ns.P::Work");
    n->fib = synth_string(s, "Ns.P::Fib");
    n->lambda = synth_string(s, "Ns.P+<>c::<Main>b__0_0");
    n->run = synth_string(s, "Ns.P+<Run>d__1::MoveNext");
}

static void call_node(synth *s, uint32_t thread, uint64_t t, uint64_t tid, uint64_t node, uint64_t parent,
                      uint64_t func, uint64_t name, uint64_t calls, uint64_t incl, uint64_t excl, uint64_t tail) {
    uint64_t v[DNP_NV_CallNode] = {tid, node, parent, func, name, calls, incl, excl, tail};
    synth_event(s, thread, t, DNP_EV_CallNode, v);
}

/* Two threads (OS 1001 and 1002) with CallNode totals; earlier, smaller totals
 * come first, the final ones at "shutdown" from a third thread:
 *   1001: Main(1000/100) > Work(600/200) > Fib(400/150) > Fib(250/250)
 *                        > lambda in Main(300/300)
 *   1002: Run (async)(500/100) > Work(400/400)            (total/self ns) */
static const char *write_calls_trace(void) {
    const char *path = tmp_file("calls.trace");
    synth *s = synth_open(path, 4242, "dotnet calls.dll");
    if (!s)
        return NULL;
    names n;
    add_names(s, &n);
    uint64_t inc = synth_string(s, "Ns.*");
    synth_thread(s, 1, 1001);
    synth_thread(s, 2, 1002);
    synth_thread(s, 3, 1003);
    uint64_t cfg[DNP_NV_CallsConfig] = {1, 0, inc, 0};
    synth_event(s, 1, 1, DNP_EV_CallsConfig, cfg);
    /* early, partial totals */
    call_node(s, 1, 100, 1001, 5, 1, F_LAMBDA, n.lambda, 1, 60, 60, 0); /* before its parent */
    call_node(s, 1, 110, 1001, 1, 0, F_MAIN, n.main, 1, 200, 20, 0);
    call_node(s, 1, 120, 1001, 2, 1, F_WORK, n.work, 3, 100, 50, 0);
    call_node(s, 2, 130, 1002, 1, 0, F_RUN, 0, 1, 50, 10, 0); /* no name yet */
    /* final totals, written at shutdown by another thread */
    call_node(s, 3, 1000, 1001, 1, 0, F_MAIN, n.main, 1, 1000, 100, 0);
    call_node(s, 3, 1000, 1001, 2, 1, F_WORK, n.work, 10, 600, 200, 0);
    call_node(s, 3, 1000, 1001, 3, 2, F_FIB, n.fib, 10, 400, 150, 0);
    call_node(s, 3, 1000, 1001, 4, 3, F_FIB, n.fib, 20, 250, 250, 5);
    call_node(s, 3, 1000, 1001, 5, 1, F_LAMBDA, n.lambda, 5, 300, 300, 0);
    call_node(s, 3, 1000, 1002, 1, 0, F_RUN, n.run, 2, 500, 100, 0);
    call_node(s, 3, 1000, 1002, 2, 1, F_WORK, n.work, 4, 400, 400, 0);
    return synth_close(s, 1) == 0 ? path : NULL;
}

/* One thread (OS 2001) with the enter/leave timeline (times in ns):
 *   Main 0-100 [args "x=1"]: Work 10-40 [returns "42"], Fib 50-60 (tail call to) Work 60-70
 *   A 110-140 (unwound): B 120-130 (unwound)
 *   C 150-170: D 160-(repaired at C's leave)
 *   E 180-(open at the end; the thread's last event is at 200) */
static const char *write_timeline_trace(void) {
    const char *path = tmp_file("timeline.trace");
    synth *s = synth_open(path, 4343, "dotnet timeline.dll");
    if (!s)
        return NULL;
    names n;
    add_names(s, &n);
    uint64_t a = synth_string(s, "Ns.P::A"), b = synth_string(s, "Ns.P::B"), c = synth_string(s, "Ns.P::C"),
             d = synth_string(s, "Ns.P::D"), e = synth_string(s, "Ns.P::E");
    uint64_t args = synth_string(s, "x=1"), ret = synth_string(s, "42");
    synth_thread(s, 1, 2001);
    struct { uint64_t t; dnp_event_kind k; uint64_t f, name; } ev[] = {
        {0, DNP_EV_MethodEnter, F_MAIN, n.main},   {0, DNP_EV_MethodArgs, args, 0},
        {10, DNP_EV_MethodEnter, F_WORK, n.work},  {40, DNP_EV_MethodReturn, ret, 0},
        {40, DNP_EV_MethodLeave, F_WORK, n.work},  {50, DNP_EV_MethodEnter, F_FIB, n.fib},
        {60, DNP_EV_MethodTailcall, F_FIB, n.fib}, {60, DNP_EV_MethodEnter, F_WORK, n.work},
        {70, DNP_EV_MethodLeave, F_WORK, n.work},  {100, DNP_EV_MethodLeave, F_MAIN, n.main},
        {110, DNP_EV_MethodEnter, 0xA, a},         {120, DNP_EV_MethodEnter, 0xB, b},
        {130, DNP_EV_MethodUnwind, 0xB, b},        {140, DNP_EV_MethodUnwind, 0xA, a},
        {150, DNP_EV_MethodEnter, 0xC, c},         {160, DNP_EV_MethodEnter, 0xD, d},
        {170, DNP_EV_MethodLeave, 0xC, c},         {175, DNP_EV_MethodLeave, 0x99, 0}, /* unmatched */
        {180, DNP_EV_MethodEnter, 0xE, e},         {200, DNP_EV_GarbageCollectionFinished, 0, 0},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        uint64_t v[2] = {ev[i].f, ev[i].name};
        synth_event(s, 1, ev[i].t, ev[i].k, v);
    }
    return synth_close(s, 1) == 0 ? path : NULL;
}

static dnp_trace *load(const char *path) {
    dnp_trace *t = NULL;
    char err[256];
    if (!path || dnp_trace_load(path, &t, err, sizeof err) != 0) {
        fprintf(stderr, "export: cannot load %s: %s\n", path ? path : "(no trace)", path ? err : "");
        return NULL;
    }
    return t;
}

static dnp_calltree *build(const dnp_trace *t) {
    dnp_calltree *ct = NULL;
    char err[256];
    if (dnp_calltree_build(t, &ct, err, sizeof err) != 0) {
        fprintf(stderr, "export: %s\n", err);
        return NULL;
    }
    return ct;
}

/* The child of node n in tr for func, or 0. */
static uint32_t child(const dnp_ct_tree *tr, uint32_t n, uint64_t func) {
    for (uint32_t c = tr->nodes[n].first_child; c; c = tr->nodes[c].next_sibling)
        if (tr->nodes[c].func == func)
            return c;
    return 0;
}

static const dnp_ct_func *func_of(const dnp_ct_func *f, size_t n, uint64_t func) {
    for (size_t i = 0; i < n; i++)
        if (f[i].func == func)
            return &f[i];
    return NULL;
}

/* Runs an exporter into memory; NUL-terminated text to free(). */
static char *export_text(int (*fn)(const dnp_calltree *, FILE *, const dnp_export_opts *), const dnp_calltree *ct,
                         const dnp_export_opts *o, size_t *len) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    int rc = fn(ct, f, o);
    fclose(f);
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

/* Compares text with tests/unit/golden/name, exactly; DNPROF_GOLDEN_UPDATE=1
 * (tests/unit/golden/update.sh) rewrites the file instead. */
static int golden(const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", DNPROF_GOLDEN_DIR, name);
    const char *update = getenv("DNPROF_GOLDEN_UPDATE");
    if (update && *update && strcmp(update, "0") != 0) {
        FILE *f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "golden: cannot write %s\n", path);
            return -1;
        }
        fprintf(stderr, "golden: rewrote %s\n", path);
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "golden: cannot read %s (DNPROF_GOLDEN_UPDATE=1 creates it)\n", path);
        return -1;
    }
    char *want = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 4096 + 1 > cap) {
            char *g = realloc(want, cap = cap * 2 + 8192);
            if (!g)
                break;
            want = g;
        }
        got = fread(want + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    if (!want)
        return -1;
    want[n] = 0;
    int same = strcmp(want, text) == 0;
    free(want);
    if (!same) {
        const char *actual = tmp_file(name);
        FILE *a = fopen(actual, "w");
        if (a) {
            fputs(text, a);
            fclose(a);
            char cmd[2200];
            snprintf(cmd, sizeof cmd, "diff -u '%s' '%s' >&2", path, actual);
            if (system(cmd) == -1)
                fprintf(stderr, "golden: %s differs\n", path);
            unlink(actual);
        }
        fprintf(stderr, "golden: %s differs (if the change is intended: tests/unit/golden/update.sh)\n", path);
        return -1;
    }
    return 0;
}

/* ---- the tree from CallNodes ---- */

TEST(export_tree_from_call_nodes) {
    const char *path = write_calls_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    ASSERT(dnp_calltree_has_data(ct));
    ASSERT(!ct->from_timeline);
    ASSERT(ct->has_config);
    ASSERT_EQ(ct->mode, 1);
    ASSERT(!ct->all_code);
    ASSERT_STREQ(ct->include, "Ns.*");
    ASSERT_EQ(ct->orphans, 0);

    ASSERT_EQ(ct->nthreads, 2);
    ASSERT_EQ(ct->threads[0].os_tid, 1001);
    ASSERT_EQ(ct->threads[0].thread, 1);
    ASSERT_EQ(ct->threads[1].os_tid, 1002);
    ASSERT_EQ(ct->threads[1].thread, 2);
    ASSERT_EQ(dnp_ct_find_thread(ct, 2), &ct->threads[1]);
    ASSERT_EQ(dnp_ct_find_thread(ct, 1001), &ct->threads[0]);
    ASSERT_EQ(dnp_ct_find_thread(ct, 77), NULL);

    /* the last CallNode of each node counts */
    const dnp_ct_tree *t1 = &ct->threads[0];
    ASSERT_EQ(t1->nnodes, 6);
    ASSERT_EQ(t1->nodes[0].total_ns, 1000);
    uint32_t main_ = child(t1, 0, F_MAIN), work = child(t1, main_, F_WORK), lambda = child(t1, main_, F_LAMBDA);
    ASSERT(main_);
    ASSERT(work);
    ASSERT(lambda);
    ASSERT_EQ(t1->nodes[work].calls, 10);
    ASSERT_EQ(t1->nodes[work].total_ns, 600);
    ASSERT_EQ(t1->nodes[work].self_ns, 200);
    ASSERT_EQ(t1->nodes[lambda].calls, 5);
    ASSERT_EQ(t1->nodes[lambda].total_ns, 300);
    ASSERT_EQ(t1->nodes[main_].first_child, work); /* the heavier child first */
    uint32_t fib = child(t1, work, F_FIB), fib2 = child(t1, fib, F_FIB);
    ASSERT(fib);
    ASSERT(fib2);
    ASSERT_EQ(t1->nodes[fib2].depth, 4);
    ASSERT_EQ(t1->nodes[fib2].tailcalls, 5);
    /* a name that came only with the last CallNode */
    uint32_t run = child(&ct->threads[1], 0, F_RUN);
    ASSERT(run);
    ASSERT_STREQ(dnp_trace_string(t, ct->threads[1].nodes[run].name), "Ns.P+<Run>d__1::MoveNext");

    /* all threads merged */
    const dnp_ct_tree *all = &ct->all;
    ASSERT_EQ(all->nodes[0].total_ns, 1500);
    ASSERT_EQ(all->nnodes, 8);
    ASSERT_EQ(all->nodes[all->nodes[0].first_child].func, F_MAIN);

    dnp_ct_func *f;
    size_t nf;
    ASSERT_EQ(dnp_ct_functions(all, &f, &nf), 0);
    ASSERT_EQ(nf, 5);
    ASSERT_EQ(f[0].func, F_WORK); /* sorted by self time */
    const dnp_ct_func *w = func_of(f, nf, F_WORK), *fb = func_of(f, nf, F_FIB), *m = func_of(f, nf, F_MAIN);
    ASSERT(w);
    ASSERT(fb);
    ASSERT(m);
    ASSERT_EQ(w->calls, 14);
    ASSERT_EQ(w->self_ns, 600);
    ASSERT_EQ(w->total_ns, 1000);
    ASSERT_EQ(fb->calls, 30);
    ASSERT_EQ(fb->self_ns, 400);
    ASSERT_EQ(fb->total_ns, 400); /* recursion counted once */
    ASSERT_EQ(fb->tailcalls, 5);
    ASSERT_EQ(m->total_ns, 1000);
    uint64_t self = 0;
    for (size_t i = 0; i < nf; i++)
        self += f[i].self_ns;
    ASSERT_EQ(self, all->nodes[0].total_ns);
    free(f);

    char buf[256];
    ASSERT_STREQ(dnp_export_name(ct, F_RUN, ct->threads[1].nodes[run].name, buf, sizeof buf), "Ns.P::Run (async)");
    ASSERT_STREQ(dnp_export_name(ct, 0x77, 0, buf, sizeof buf), "<function 0x77>");
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

TEST(export_damaged_parents) {
    const char *path = tmp_file("damaged.trace");
    synth *s = synth_open(path, 1, NULL);
    ASSERT_NE(s, NULL);
    uint64_t nm = synth_string(s, "X::Y");
    synth_thread(s, 1, 7);
    call_node(s, 1, 10, 7, 1, 9, 0x1, nm, 1, 10, 10, 0); /* parent 9 never comes */
    call_node(s, 1, 10, 7, 2, 3, 0x2, nm, 1, 10, 10, 0); /* 2 and 3: a cycle */
    call_node(s, 1, 10, 7, 3, 2, 0x3, nm, 1, 10, 10, 0);
    call_node(s, 1, 10, 7, 4, 4, 0x4, nm, 1, 10, 10, 0); /* its own parent */
    ASSERT_EQ(synth_close(s, 0), 0);
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    ASSERT_EQ(ct->orphans, 3);
    ASSERT_EQ(ct->threads[0].nnodes, 5);
    /* 1, 4, and the cycle broken at one node, whose total then holds its own
     * 10 and its child's 10 (a total is at least self + children). */
    ASSERT_EQ(ct->all.nodes[0].total_ns, 10 + 10 + 20);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

TEST(export_no_call_data) {
    const char *path = tmp_file("nocalls.trace");
    synth *s = synth_open(path, 1, NULL);
    ASSERT_NE(s, NULL);
    synth_thread(s, 1, 7);
    uint64_t v[2] = {0x1, 0};
    synth_event(s, 1, 10, DNP_EV_GarbageCollectionStarted, v);
    ASSERT_EQ(synth_close(s, 1), 0);
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    ASSERT(!dnp_calltree_has_data(ct));
    ASSERT_EQ(ct->nthreads, 0);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

/* A recursion 50,000 deep: everything is iterative. */
TEST(export_deep_recursion) {
    enum { DEPTH = 50000 };
    const char *path = tmp_file("deep.trace");
    synth *s = synth_open(path, 1, NULL);
    ASSERT_NE(s, NULL);
    uint64_t nm = synth_string(s, "Ns.P::Recurse");
    synth_thread(s, 1, 7);
    for (uint64_t k = 1; k <= DEPTH; k++)
        call_node(s, 1, 10, 7, k, k - 1, F_FIB, nm, 1, 1000000 - k, k == DEPTH ? 1000000 - k : 0, 0);
    ASSERT_EQ(synth_close(s, 1), 0);
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    ASSERT_EQ(ct->all.nnodes, DEPTH + 1);
    dnp_ct_func *f;
    size_t nf;
    ASSERT_EQ(dnp_ct_functions(&ct->all, &f, &nf), 0);
    ASSERT_EQ(nf, 1);
    ASSERT_EQ(f[0].calls, DEPTH);
    ASSERT_EQ(f[0].total_ns, 1000000 - 1);
    free(f);
    size_t len;
    char *folded = export_text(dnp_export_folded, ct, NULL, &len);
    ASSERT_NE(folded, NULL);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += folded[i] == '\n';
    ASSERT_EQ(lines, 1); /* only the deepest frame has self time */
    ASSERT_EQ(len, DEPTH * strlen("Ns.P::Recurse;") + strlen(" 950000\n") - 1);
    free(folded);
    char *js = export_text(dnp_export_speedscope, ct, NULL, &len);
    ASSERT_NE(js, NULL);
    char err[128];
    jv *doc = json_parse(js, len, err, sizeof err);
    if (!doc)
        fprintf(stderr, "speedscope: %s\n", err);
    ASSERT_NE(doc, NULL);
    json_free(doc);
    free(js);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

/* ---- the tree from the timeline ---- */

TEST(export_tree_from_timeline) {
    const char *path = write_timeline_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    ASSERT(ct->from_timeline);
    ASSERT(!ct->has_config);
    ASSERT_EQ(ct->timeline_events, 17);
    ASSERT_EQ(ct->unmatched, 1);
    ASSERT_EQ(ct->open_at_end, 1);
    ASSERT_EQ(ct->nthreads, 1);
    const dnp_ct_tree *tr = &ct->threads[0];
    ASSERT_EQ(tr->os_tid, 2001);
    ASSERT_EQ(tr->nodes[0].total_ns, 100 + 30 + 20 + 20);
    uint32_t m = child(tr, 0, F_MAIN), w = child(tr, m, F_WORK), fb = child(tr, m, F_FIB);
    ASSERT(m);
    ASSERT(w);
    ASSERT(fb);
    ASSERT_EQ(tr->nodes[m].total_ns, 100);
    ASSERT_EQ(tr->nodes[m].self_ns, 50);
    ASSERT_EQ(tr->nodes[w].calls, 2);
    ASSERT_EQ(tr->nodes[w].total_ns, 40);
    ASSERT_EQ(tr->nodes[fb].tailcalls, 1);
    ASSERT_EQ(tr->nodes[fb].total_ns, 10);
    uint32_t a = child(tr, 0, 0xA), b = child(tr, a, 0xB), c = child(tr, 0, 0xC), d = child(tr, c, 0xD),
             e = child(tr, 0, 0xE);
    ASSERT(a);
    ASSERT(b);
    ASSERT(c);
    ASSERT(d);
    ASSERT(e);
    ASSERT_EQ(tr->nodes[a].self_ns, 20);
    ASSERT_EQ(tr->nodes[d].total_ns, 10);
    ASSERT_EQ(tr->nodes[c].self_ns, 10);
    ASSERT_EQ(tr->nodes[e].total_ns, 20);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

/* ---- exports ---- */

TEST(export_folded_golden) {
    const char *path = write_calls_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    char *text = export_text(dnp_export_folded, ct, NULL, NULL);
    ASSERT_NE(text, NULL);
    ASSERT_EQ(golden("calls.folded", text), 0);
    /* the numbers add up to the total */
    uint64_t sum = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        ASSERT_NE(nl, NULL);
        char *sp = nl;
        while (sp > line && sp[-1] != ' ')
            sp--;
        sum += strtoull(sp, NULL, 10);
        line = nl + 1;
    }
    ASSERT_EQ(sum, ct->all.nodes[0].total_ns);
    free(text);

    dnp_export_opts o = {0};
    o.weight_calls = 1;
    text = export_text(dnp_export_folded, ct, &o, NULL);
    ASSERT_NE(text, NULL);
    ASSERT_EQ(golden("calls-weight-calls.folded", text), 0);
    free(text);

    o.weight_calls = 0;
    o.tree = &ct->threads[1];
    text = export_text(dnp_export_folded, ct, &o, NULL);
    ASSERT_NE(text, NULL);
    ASSERT_EQ(golden("calls-thread-2.folded", text), 0);
    free(text);

    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);

    path = write_timeline_trace();
    t = load(path);
    ASSERT_NE(t, NULL);
    ct = build(t);
    ASSERT_NE(ct, NULL);
    text = export_text(dnp_export_folded, ct, NULL, NULL);
    ASSERT_NE(text, NULL);
    ASSERT_EQ(golden("timeline.folded", text), 0);
    free(text);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

static int check_frame(const jv *frames, const jv *idx) {
    return idx && idx->type == JV_NUM && idx->num >= 0 && (size_t)idx->num < frames->n;
}

TEST(export_speedscope_sampled) {
    const char *path = write_calls_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    size_t len;
    char *text = export_text(dnp_export_speedscope, ct, NULL, &len);
    ASSERT_NE(text, NULL);
    char err[128];
    jv *doc = json_parse(text, len, err, sizeof err);
    if (!doc)
        fprintf(stderr, "speedscope: %s\n", err);
    ASSERT_NE(doc, NULL);
    ASSERT_STREQ(json_str(doc, "$schema"), "https://www.speedscope.app/file-format-schema.json");
    ASSERT_STREQ(json_str(doc, "name"), "dotnet calls.dll");
    const jv *frames = json_get(json_get(doc, "shared"), "frames");
    ASSERT(frames);
    ASSERT_EQ(frames->type, JV_ARR);
    ASSERT_EQ(frames->n, 5);
    int async_seen = 0;
    for (size_t i = 0; i < frames->n; i++) {
        const char *nm = json_str(json_at(frames, i), "name");
        ASSERT_NE(nm, NULL);
        if (!strcmp(nm, "Ns.P::Run (async)")) {
            ASSERT_STREQ(json_str(json_at(frames, i), "file"), "Ns.P+<Run>d__1::MoveNext");
            async_seen = 1;
        }
    }
    ASSERT(async_seen);
    const jv *profiles = json_get(doc, "profiles");
    ASSERT(profiles);
    ASSERT_EQ(profiles->n, 3); /* all threads, then each */
    ASSERT_STREQ(json_str(json_at(profiles, 0), "name"), "all threads");
    ASSERT_STREQ(json_str(json_at(profiles, 1), "name"), "thread 1 (tid 1001)");
    uint64_t want[3] = {1500, 1000, 500};
    for (size_t p = 0; p < 3; p++) {
        const jv *pr = json_at(profiles, p);
        ASSERT_STREQ(json_str(pr, "type"), "sampled");
        ASSERT_STREQ(json_str(pr, "unit"), "nanoseconds");
        const jv *samples = json_get(pr, "samples"), *weights = json_get(pr, "weights");
        ASSERT(samples);
        ASSERT(weights);
        ASSERT_EQ(samples->n, weights->n);
        uint64_t sum = 0;
        for (size_t i = 0; i < weights->n; i++) {
            sum += (uint64_t)json_at(weights, i)->num;
            const jv *st = json_at(samples, i);
            ASSERT(st);
            ASSERT_EQ(st->type, JV_ARR);
            ASSERT_GT(st->n, 0);
            for (size_t k = 0; k < st->n; k++)
                ASSERT(check_frame(frames, json_at(st, k)));
        }
        ASSERT_EQ(sum, want[p]);
        ASSERT_EQ((uint64_t)json_num(pr, "endValue"), want[p]);
    }
    json_free(doc);
    free(text);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

TEST(export_speedscope_evented) {
    const char *path = write_timeline_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    size_t len;
    char *text = export_text(dnp_export_speedscope, ct, NULL, &len);
    ASSERT_NE(text, NULL);
    char err[128];
    jv *doc = json_parse(text, len, err, sizeof err);
    if (!doc)
        fprintf(stderr, "speedscope: %s\n", err);
    ASSERT_NE(doc, NULL);
    const jv *frames = json_get(json_get(doc, "shared"), "frames");
    const jv *profiles = json_get(doc, "profiles");
    ASSERT(frames);
    ASSERT(profiles);
    ASSERT_EQ(profiles->n, 1);
    const jv *pr = json_at(profiles, 0);
    ASSERT_STREQ(json_str(pr, "type"), "evented");
    const jv *events = json_get(pr, "events");
    ASSERT(events);
    ASSERT_EQ(events->n, 2 * 9);
    /* balanced, in time order, each close the frame last opened */
    int stack[32], depth = 0;
    double at = -1;
    for (size_t i = 0; i < events->n; i++) {
        const jv *ev = json_at(events, i);
        const char *type = json_str(ev, "type");
        ASSERT(type);
        ASSERT(check_frame(frames, json_get(ev, "frame")));
        int fr = (int)json_num(ev, "frame");
        ASSERT_GE(json_num(ev, "at"), at);
        at = json_num(ev, "at");
        if (!strcmp(type, "O")) {
            ASSERT_LT(depth, 32);
            stack[depth++] = fr;
        } else {
            ASSERT_STREQ(type, "C");
            ASSERT_GT(depth, 0);
            ASSERT_EQ(stack[depth - 1], fr);
            depth--;
        }
    }
    ASSERT_EQ(depth, 0);
    ASSERT_EQ((uint64_t)json_num(pr, "startValue"), 0);
    ASSERT_EQ((uint64_t)json_num(pr, "endValue"), 200);
    json_free(doc);
    free(text);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

/* The "X" events of a Chrome trace with their thread, or -1 with a line. */
static long count_x(const jv *events, double tid, double *dur_sum) {
    long n = 0;
    for (size_t i = 0; i < events->n; i++) {
        const jv *ev = json_at(events, i);
        const char *ph = json_str(ev, "ph");
        if (!ph || !json_str(ev, "name"))
            return -1;
        if (strcmp(ph, "X") != 0 || json_num(ev, "tid") != tid)
            continue;
        if (json_num(ev, "ts") < 0 || json_num(ev, "dur") < 0)
            return -1;
        n++;
        *dur_sum += json_num(ev, "dur");
    }
    return n;
}

TEST(export_chrome) {
    /* laid out from the tree */
    const char *path = write_calls_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    size_t len;
    char *text = export_text(dnp_export_chrome, ct, NULL, &len);
    ASSERT_NE(text, NULL);
    char err[128];
    jv *doc = json_parse(text, len, err, sizeof err);
    if (!doc)
        fprintf(stderr, "chrome: %s\n", err);
    ASSERT_NE(doc, NULL);
    const jv *events = json_get(doc, "traceEvents");
    ASSERT(events);
    ASSERT_EQ(events->type, JV_ARR);
    double dur = 0;
    ASSERT_EQ(count_x(events, 1001, &dur), 5);
    ASSERT_EQ(count_x(events, 1002, &dur), 2);
    int named = 0;
    for (size_t i = 0; i < events->n; i++) {
        const jv *ev = json_at(events, i);
        if (!strcmp(json_str(ev, "ph"), "M") && !strcmp(json_str(ev, "name"), "thread_name"))
            named++;
        /* the laid-out children of Main sit inside it: Main 0-1 us, Work 0-0.6, lambda 0.6-0.9 */
        if (!strcmp(json_str(ev, "ph"), "X") && !strcmp(json_str(ev, "name"), "lambda in Ns.P::Main")) {
            ASSERT_GT(json_num(ev, "ts"), 0.599);
            ASSERT_LT(json_num(ev, "ts"), 0.601);
            ASSERT_GT(json_num(ev, "dur"), 0.299);
            ASSERT_LT(json_num(ev, "dur"), 0.301);
            ASSERT_STREQ(json_str(json_get(ev, "args"), "raw"), "Ns.P+<>c::<Main>b__0_0");
        }
    }
    ASSERT_EQ(named, 2);
    json_free(doc);
    free(text);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);

    /* from the timeline: every call, its arguments and return value */
    path = write_timeline_trace();
    t = load(path);
    ASSERT_NE(t, NULL);
    ct = build(t);
    ASSERT_NE(ct, NULL);
    text = export_text(dnp_export_chrome, ct, NULL, &len);
    ASSERT_NE(text, NULL);
    doc = json_parse(text, len, err, sizeof err);
    if (!doc)
        fprintf(stderr, "chrome: %s\n", err);
    ASSERT_NE(doc, NULL);
    events = json_get(doc, "traceEvents");
    dur = 0;
    ASSERT_EQ(count_x(events, 2001, &dur), 9);
    int main_seen = 0, work_seen = 0;
    for (size_t i = 0; i < events->n; i++) {
        const jv *ev = json_at(events, i);
        const jv *args = json_get(ev, "args");
        if (!strcmp(json_str(ev, "name"), "Ns.P::Main")) {
            ASSERT_STREQ(json_str(args, "arguments"), "x=1");
            ASSERT_GT(json_num(ev, "dur"), 0.0999);
            ASSERT_LT(json_num(ev, "dur"), 0.1001);
            main_seen = 1;
        }
        if (!strcmp(json_str(ev, "name"), "Ns.P::Work") && json_str(args, "return")) {
            ASSERT_STREQ(json_str(args, "return"), "42");
            work_seen = 1;
        }
        if (!strcmp(json_str(ev, "name"), "Ns.P::E"))
            ASSERT_STREQ(json_str(args, "end"), "open at end");
    }
    ASSERT(main_seen);
    ASSERT(work_seen);
    json_free(doc);
    free(text);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

TEST(export_flamegraph_html) {
    const char *path = write_calls_trace();
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    size_t len;
    char *html = export_text(dnp_export_flamegraph, ct, NULL, &len);
    ASSERT_NE(html, NULL);
    ASSERT_EQ(strncmp(html, "<!DOCTYPE html>", 15), 0);
    ASSERT_EQ(strstr(html, "http://"), NULL);
    ASSERT_EQ(strstr(html, "https://"), NULL); /* nothing from the network */
    ASSERT_EQ(strstr(html, "<script src"), NULL);
    ASSERT_EQ(strstr(html, "<link"), NULL);
    const char *open = "<script type=\"application/json\" id=\"data\">";
    char *start = strstr(html, open);
    ASSERT_NE(start, NULL);
    start += strlen(open);
    char *end = strstr(start, "</script>");
    ASSERT_NE(end, NULL);
    char err[128];
    jv *doc = json_parse(start, (size_t)(end - start), err, sizeof err);
    if (!doc)
        fprintf(stderr, "flamegraph data: %s\n", err);
    ASSERT_NE(doc, NULL);
    ASSERT_STREQ(json_str(doc, "title"), "dotnet calls.dll");
    const jv *trees = json_get(doc, "trees"), *names = json_get(doc, "names"), *raws = json_get(doc, "raws");
    ASSERT(trees);
    ASSERT_EQ(trees->n, 3);
    ASSERT(names);
    ASSERT(raws);
    ASSERT_EQ(names->n, 5);
    ASSERT_EQ(raws->n, 5);
    const jv *n = json_get(json_at(trees, 0), "n");
    ASSERT(n);
    ASSERT_EQ(n->n, 5 * 8);
    ASSERT_EQ((uint64_t)json_at(n, 2)->num, 1500); /* the root's total */
    /* parents come before their children; self times add up to the total */
    uint64_t self = 0;
    for (size_t k = 1; k < 8; k++) {
        ASSERT_GE(json_at(n, 5 * k)->num, 0);
        ASSERT_LT(json_at(n, 5 * k)->num, (double)k);
        ASSERT_GE(json_at(n, 5 * k + 1)->num, 0);
        ASSERT_LT(json_at(n, 5 * k + 1)->num, 5);
        self += (uint64_t)json_at(n, 5 * k + 3)->num;
    }
    ASSERT_EQ(self, 1500);
    json_free(doc);
    free(html);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

TEST(export_json_strings) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ASSERT_NE(f, NULL);
    dnp_export_json_str(f, "a\"b\\c\n\x01 caf\xc3\xa9 \xff </script>", 0);
    fputc(' ', f);
    dnp_export_json_str(f, "</script>&", 1);
    fputc(' ', f);
    dnp_export_json_str(f, NULL, 0);
    fclose(f);
    ASSERT_STREQ(buf, "\"a\\\"b\\\\c\\n\\u0001 caf\xc3\xa9 \\ufffd </script>\" \"\\u003c/script\\u003e\\u0026\" null");
    free(buf);
    char err[64];
    const char *bad[] = {"[1,]", "{\"a\":01}", "\"\\x\"", "[\"\xff\"]", "{} {}", "\"\\ud800\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jv *v = json_parse(bad[i], strlen(bad[i]), err, sizeof err);
        if (v)
            fprintf(stderr, "json_check accepted %s\n", bad[i]);
        ASSERT_EQ(v, NULL);
    }
    const char *good = " {\"a\":[1,-2.5e3,true,null,\"\\u00e9\\ud83d\\ude00\"]} ";
    jv *v = json_parse(good, strlen(good), err, sizeof err);
    ASSERT_NE(v, NULL);
    ASSERT_STREQ(json_at(json_get(v, "a"), 4)->str, "\xc3\xa9\xf0\x9f\x98\x80");
    json_free(v);
    return 0;
}

/* ---- the streaming path gives what the in-memory path gives ---- */

/* Three threads with the timeline, written one thread after the other though
 * their times overlap, so that file order is not time order across threads;
 * several chunks each. */
static const char *write_threads_timeline_trace(void) {
    const char *path = tmp_file("threads.trace");
    synth *s = synth_open(path, 4444, "dotnet threads.dll");
    if (!s)
        return NULL;
    names n;
    add_names(s, &n);
    uint64_t fn[5] = {F_MAIN, F_WORK, F_FIB, F_LAMBDA, F_RUN}, nm[5] = {n.main, n.work, n.fib, n.lambda, n.run};
    uint64_t worker = synth_string(s, "Worker");
    for (uint32_t t = 1; t <= 3; t++)
        synth_thread(s, t, 3000 + t);
    uint64_t assign[2] = {0x77, 3002}, name[2] = {0x77, worker};
    synth_event(s, 2, 0, DNP_EV_ThreadAssignedToOSThread, assign);
    synth_event(s, 2, 0, DNP_EV_ThreadNameChanged, name);
    static const uint32_t order[3] = {2, 3, 1};
    for (int k = 0; k < 3; k++) {
        uint32_t t = order[k];
        uint64_t now = 5 + t, stack[8];
        int depth = 0;
        uint64_t r = 12345 + t;
        for (int i = 0; i < 24000; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            now += 1 + (r >> 60);
            uint64_t v[2];
            if (depth && (depth == 8 || (r >> 33) % 3 == 0)) {
                int f = (int)stack[--depth];
                v[0] = fn[f];
                v[1] = nm[f];
                synth_event(s, t, now, (r >> 40) % 7 ? DNP_EV_MethodLeave : DNP_EV_MethodTailcall, v);
            } else {
                int f = (int)((r >> 20) % 5);
                stack[depth++] = (uint64_t)f;
                v[0] = fn[f];
                v[1] = nm[f];
                synth_event(s, t, now, DNP_EV_MethodEnter, v);
            }
        }
    }
    return synth_close(s, 0) == 0 ? path : NULL;
}

/* text's lines, sorted (the Chrome events of several threads come in time
 * order from a loaded trace, in file order from a stream). */
static int by_line(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
static char *sorted_lines(const char *text) {
    size_t n = 0, len = strlen(text);
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    char *copy = strdup(text), **lines = malloc((n + 1) * sizeof *lines), *out = malloc(len + 2);
    if (!copy || !lines || !out)
        return NULL;
    size_t k = 0;
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        lines[k++] = l;
    qsort(lines, k, sizeof *lines, by_line);
    char *o = out;
    for (size_t i = 0; i < k; i++) {
        size_t l = strlen(lines[i]);
        memcpy(o, lines[i], l);
        o += l;
        *o++ = '\n';
    }
    *o = 0;
    free(copy);
    free(lines);
    return out;
}

static int same_text(const char *what, const char *a, const char *b) {
    if (a && b && !strcmp(a, b))
        return 1;
    fprintf(stderr, "export: %s: the streamed output differs from the in-memory one\n", what);
    return 0;
}

static int compare_paths(const char *path, int sort_chrome) {
    dnp_trace *t = load(path);
    dnp_calltree *mem = t ? build(t) : NULL, *str = NULL;
    dnp_trace_stream *s = NULL;
    char err[256];
    if (!mem || dnp_trace_stream_open(path, &s, err, sizeof err) != 0 ||
        dnp_calltree_build_stream(s, &str, err, sizeof err) != 0)
        return 0;
    int ok = mem->nthreads == str->nthreads && mem->call_nodes == str->call_nodes &&
             mem->timeline_events == str->timeline_events && mem->from_timeline == str->from_timeline &&
             mem->unmatched == str->unmatched && mem->open_at_end == str->open_at_end &&
             mem->orphans == str->orphans && mem->all.nnodes == str->all.nnodes;
    int (*fns[4])(const dnp_calltree *, FILE *, const dnp_export_opts *) = {
        dnp_export_folded, dnp_export_speedscope, dnp_export_chrome, dnp_export_flamegraph};
    static const char *const fn_names[4] = {"folded", "speedscope", "chrome", "flamegraph"};
    for (int i = 0; i < 4 && ok; i++) {
        char *a = export_text(fns[i], mem, NULL, NULL), *b = export_text(fns[i], str, NULL, NULL);
        if (i == 2 && sort_chrome && a && b) {
            char *sa = sorted_lines(a), *sb = sorted_lines(b);
            free(a);
            free(b);
            a = sa;
            b = sb;
        }
        ok = same_text(fn_names[i], a, b);
        free(a);
        free(b);
    }
    dnp_export_opts o = {0};
    o.weight_calls = 1;
    for (size_t k = 0; k <= mem->nthreads && ok; k++) {
        dnp_export_opts om = o, os = o;
        om.tree = k ? &mem->threads[k - 1] : NULL;
        os.tree = k ? &str->threads[k - 1] : NULL;
        om.weight_calls = os.weight_calls = (int)(k & 1);
        char *a = export_text(dnp_export_folded, mem, &om, NULL), *b = export_text(dnp_export_folded, str, &os, NULL);
        ok = same_text("folded, one thread", a, b);
        free(a);
        free(b);
    }
    dnp_calltree_free(mem);
    dnp_calltree_free(str);
    dnp_trace_stream_close(s);
    dnp_trace_free(t);
    return ok;
}

TEST(export_stream_same_output) {
    const char *path = write_calls_trace();
    ASSERT(path);
    ASSERT(compare_paths(path, 0));
    unlink(path);
    path = write_timeline_trace();
    ASSERT(path);
    ASSERT(compare_paths(path, 0));
    unlink(path);
    path = write_threads_timeline_trace();
    ASSERT(path);
    ASSERT(compare_paths(path, 1));
    unlink(path);
    return 0;
}

#ifdef DNPROF_BIN
/* The output of `dnprof ARGS path`, streamed or (DNPROF_NO_STREAM=1) loaded whole. */
static char *run_dnprof(const char *args, const char *path, int whole) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' %s '%s' 2>/dev/null", whole ? "DNPROF_NO_STREAM=1" : "DNPROF_NO_STREAM=",
             DNPROF_BIN, args, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    char tmp[65536];
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            buf = realloc(buf, cap);
            if (!buf)
                break;
        }
        memcpy(buf + n, tmp, got);
        n += got;
    }
    pclose(p);
    if (buf)
        buf[n] = 0;
    return buf ? buf : strdup("");
}

TEST(export_stream_cli_same_output) {
    static const char *const cmds[] = {
        "report", "report --json", "report --tree --threshold 0", "report --thread 1 --top 3",
        "convert --format folded -o -", "convert --format folded --weight calls -o -",
        "convert --format speedscope -o -", "convert --format chrome -o -", "convert --format flamegraph -o -",
    };
    const char *(*writers[3])(void) = {write_calls_trace, write_timeline_trace, write_threads_timeline_trace};
    for (int w = 0; w < 3; w++) {
        const char *path = writers[w]();
        ASSERT(path);
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            char *a = run_dnprof(cmds[i], path, 1), *b = run_dnprof(cmds[i], path, 0);
            ASSERT(a);
            ASSERT(b);
            ASSERT_GT(strlen(a), 20);
            if (w == 2 && strstr(cmds[i], "chrome")) {
                char *sa = sorted_lines(a), *sb = sorted_lines(b);
                free(a);
                free(b);
                a = sa;
                b = sb;
            }
            if (!same_text(cmds[i], a, b))
                fprintf(stderr, "  (trace %d)\n", w);
            ASSERT(!strcmp(a, b));
            free(a);
            free(b);
        }
        if (!getenv("DNPROF_KEEP_TRACES"))
            unlink(path);
    }
    return 0;
}

/* Exports are written as traces are (docs/agent.md): 0600 under a umask of
 * 022, and a symbolic link at the output path is replaced, not written through. */
TEST(export_cli_output_private) {
    const char *path = write_calls_trace();
    ASSERT(path);
    char out[512], victim[512], cmd[2048];
    snprintf(out, sizeof out, "%s.folded", path);
    snprintf(victim, sizeof victim, "%s.victim", path);
    static const char *const formats[] = {"folded", "speedscope", "chrome", "flamegraph", "pprof"};
    mode_t old = umask(022);
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        unlink(out);
        snprintf(cmd, sizeof cmd, "'%s' convert --format %s -o '%s' '%s' 2>/dev/null", DNPROF_BIN, formats[i], out,
                 path);
        ASSERT_EQ(system(cmd), 0);
        struct stat st;
        ASSERT_EQ(lstat(out, &st), 0);
        ASSERT(S_ISREG(st.st_mode));
        ASSERT_EQ(st.st_mode & 07777, 0600);
    }
    FILE *v = fopen(victim, "w");
    ASSERT(v);
    fputs("not yours\n", v);
    fclose(v);
    unlink(out);
    ASSERT_EQ(symlink(victim, out), 0);
    snprintf(cmd, sizeof cmd, "'%s' convert --format folded -o '%s' '%s' 2>/dev/null", DNPROF_BIN, out, path);
    ASSERT_EQ(system(cmd), 0);
    umask(old);
    struct stat st;
    ASSERT_EQ(lstat(out, &st), 0);
    ASSERT(S_ISREG(st.st_mode)); /* the link replaced */
    ASSERT_EQ(st.st_mode & 07777, 0600);
    char got[64] = "";
    v = fopen(victim, "r");
    ASSERT(v);
    ASSERT(fgets(got, sizeof got, v));
    fclose(v);
    ASSERT_STREQ(got, "not yours\n"); /* and not followed */
    unlink(victim);
    unlink(out);
    unlink(path);
    return 0;
}
#endif

/* A thread still in a frame when the trace ends (a worker blocked in a wait):
 * the frame never left, so its CallNode holds no time, but the calls it
 * finished do. Its total, and the thread's, cover them: no function takes
 * more than 100% of the time in hooked code. */
TEST(export_open_frames) {
    const char *path = tmp_file("open.trace");
    synth *s = synth_open(path, 1, NULL);
    ASSERT_NE(s, NULL);
    uint64_t start = synth_string(s, "T::Start"), wait = synth_string(s, "T::Wait");
    synth_thread(s, 1, 7);
    call_node(s, 1, 10, 7, 1, 0, 0x1, start, 1, 0, 0, 0); /* open: no time yet */
    call_node(s, 1, 10, 7, 2, 1, 0x2, wait, 5, 900, 900, 0);
    ASSERT_EQ(synth_close(s, 0), 0);
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    ASSERT_EQ(ct->threads[0].nodes[0].total_ns, 900);
    ASSERT_EQ(ct->all.nodes[0].total_ns, 900);
    dnp_ct_func *f = NULL;
    size_t nf = 0;
    ASSERT_EQ(dnp_ct_functions(&ct->all, &f, &nf), 0);
    for (size_t i = 0; i < nf; i++)
        ASSERT(f[i].self_ns <= ct->all.nodes[0].total_ns && f[i].total_ns <= ct->all.nodes[0].total_ns);
    free(f);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

static int count_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    (void)tr;
    if (enter && n)
        ++*(int *)ctx;
    return 0;
}

/* --min-percent: paths under the threshold leave the walk, their time stays
 * with their caller, and the totals do not change. */
TEST(export_prune) {
    const char *path = tmp_file("prune.trace");
    synth *s = synth_open(path, 1, NULL);
    ASSERT_NE(s, NULL);
    uint64_t a = synth_string(s, "P::A"), b = synth_string(s, "P::B"), c = synth_string(s, "P::C");
    synth_thread(s, 1, 7);
    call_node(s, 1, 10, 7, 1, 0, 0x1, a, 1, 1000, 100, 0);
    call_node(s, 1, 10, 7, 2, 1, 0x2, b, 1, 800, 800, 0);
    call_node(s, 1, 10, 7, 3, 1, 0x3, c, 1, 100, 100, 0);
    ASSERT_EQ(synth_close(s, 0), 0);
    dnp_trace *t = load(path);
    ASSERT_NE(t, NULL);
    dnp_calltree *ct = build(t);
    ASSERT_NE(ct, NULL);
    int before = 0, after = 0;
    dnp_ct_walk(&ct->all, count_visit, &before);
    ASSERT_EQ(dnp_ct_prune(ct, 0.15), 2); /* C, in the merged tree and in its thread's */
    dnp_ct_walk(&ct->all, count_visit, &after);
    ASSERT_EQ(before, 3);
    ASSERT_EQ(after, 2);
    ASSERT_EQ(ct->all.nodes[0].total_ns, 1000);
    uint64_t self = 0;
    dnp_ct_func *f = NULL;
    size_t nf = 0;
    ASSERT_EQ(dnp_ct_functions(&ct->all, &f, &nf), 0);
    for (size_t i = 0; i < nf; i++)
        self += f[i].self_ns;
    free(f);
    ASSERT_EQ(self, 1000); /* A's self now holds C's 100 */
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}
