/* test_top.c: `dnprof top`'s model and batch output (src/cli/top_model.c,
 * top_batch.c): the tables stay bounded however many names come (the rest
 * folded into "other"), they sort as asked, the JSON of an interval is
 * valid whatever bytes the names hold, and a library's code without names is
 * one row whose total counts a stack once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_check.h"
#include "synth.h"
#include "test.h"
#include "top.h"
#include "trace_format.h"

TEST(top_table_bounded) {
    top_table t;
    memset(&t, 0, sizeof t);
    char name[64];
    for (int i = 0; i < TOP_MAX_KEYS + 904; i++) {
        snprintf(name, sizeof name, "Ns.Type%d::Method", i);
        top_table_add(&t, name, 2, 1);
    }
    ASSERT_EQ(t.n, (size_t)TOP_MAX_KEYS);
    ASSERT_EQ(t.other_keys, 904u);
    ASSERT_EQ(t.other_a, 2u * 904);
    top_table_add(&t, "Ns.Type7::Method", 10, 0); /* a name it holds: added to its row */
    const top_row *rows[3];
    ASSERT_EQ(top_table_sorted(&t, 0, rows, 3), 3u);
    ASSERT_STREQ(rows[0]->name, "Ns.Type7::Method");
    ASSERT_EQ(rows[0]->a, 12u);
    top_table_clear(&t);
    ASSERT_EQ(t.n, 0u);
    top_table_add(&t, "a", 1, 5);
    top_table_add(&t, "b", 3, 1);
    ASSERT_EQ(top_table_sorted(&t, 1, rows, 3), 2u); /* by the second column */
    ASSERT_STREQ(rows[0]->name, "a");
    ASSERT_EQ(top_table_sorted(&t, 0, rows, 3), 2u);
    ASSERT_STREQ(rows[0]->name, "b");
    top_table_free(&t);
    return 0;
}

TEST(top_json_valid) {
    static top_model m;
    top_model_init(&m, 4242);
    snprintf(m.cmdline, sizeof m.cmdline, "dotnet \"odd\"\napp.dll");
    m.intervals = 2;
    m.cur.duration_ns = m.all.duration_ns = 1000000000ull;
    m.cur.samples = m.all.samples = 10;
    m.cur.exceptions = m.all.exceptions = 5;
    m.gc_on = 1;
    top_table_add(&m.cur.t[TOP_CPU], "Ns.C::M\x01\xff", 7, 9);
    top_table_add(&m.cur.t[TOP_CPU], "Ns.C::Other", 3, 3);
    top_table_add(&m.cur.t[TOP_EXC], "System.InvalidOperationException", 5, 0);
    top_table_add(&m.all.t[TOP_CPU], "Ns.C::M\x01\xff", 7, 9);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_NE(f, NULL);
    top_show s = {0};
    top_print_json(f, &m, &s);
    fclose(f);
    ASSERT_EQ(buf[len - 1], '\n');
    ASSERT_EQ(memchr(buf, '\n', len - 1), NULL); /* one line */
    char err[256];
    jv *o = json_parse(buf, len, err, sizeof err);
    if (!o)
        fprintf(stderr, "%s\n%s\n", err, buf);
    ASSERT_NE(o, NULL);
    ASSERT_EQ(json_num(o, "pid"), 4242.0);
    ASSERT_EQ(json_num(o, "interval"), 2.0);
    const jv *last = json_get(o, "last");
    ASSERT_NE(last, NULL);
    ASSERT_EQ(json_num(last, "exceptions_per_s"), 5.0);
    ASSERT_NE(json_get(last, "gc"), NULL);
    ASSERT_EQ(json_get(last, "locks")->type, JV_NULL);
    const jv *methods = json_get(last, "methods");
    ASSERT_EQ(methods->n, 2u);
    ASSERT_EQ(json_num(json_at(methods, 0), "self_percent"), 70.0);
    ASSERT_STREQ(json_str(json_at(methods, 1), "name"), "Ns.C::Other");
    json_free(o);
    free(buf);
    top_model_free(&m);
    return 0;
}

/* The pool's counters: "pool N threads, queue M" in the header, within 80
 * columns at the widest figures, and threadpoolThreads/threadpoolQueue in the
 * JSON (null before the first counters). */
TEST(top_pool_header_and_json) {
    static top_model m;
    top_model_init(&m, 4242);
    m.intervals = 1;
    m.cur.duration_ns = 1000000000ull;
    char h[TOP_HEADER_LINES][512];
    top_header(&m, h);
    ASSERT_STREQ(h[4], "pool n/a  locks: n/a (top --locks)");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    top_show s = {0};
    top_print_json(f, &m, &s);
    fclose(f);
    char err[256];
    jv *o = json_parse(buf, len, err, sizeof err);
    ASSERT_NE(o, NULL);
    ASSERT_EQ(json_get(o, "threadpoolThreads")->type, JV_NULL);
    ASSERT_EQ(json_get(o, "threadpoolQueue")->type, JV_NULL);
    json_free(o);
    free(buf);

    m.tp_threads = 6;
    m.tp_queue = 40;
    top_header(&m, h);
    ASSERT_STREQ(h[4], "pool 6 threads, queue 40  locks: n/a (top --locks)");
    buf = NULL;
    f = open_memstream(&buf, &len);
    top_print_json(f, &m, &s);
    fclose(f);
    o = json_parse(buf, len, err, sizeof err);
    ASSERT_NE(o, NULL);
    ASSERT_EQ(json_num(o, "threadpoolThreads"), 6.0);
    ASSERT_EQ(json_num(o, "threadpoolQueue"), 40.0);
    json_free(o);
    free(buf);

    /* wide: a big pool, a long queue, many contentions */
    m.tp_threads = 32767;
    m.tp_queue = 9999999;
    m.locks_on = 1;
    m.cur.lock_count = 99999;
    m.cur.lock_wait_ns = 99999000000ull;
    top_header(&m, h);
    ASSERT_LE(strlen(h[4]), 80u);
    ASSERT_NE(strstr(h[4], "pool 32767 threads, queue 9999999"), NULL);
    top_model_free(&m);
    return 0;
}

/* A window of one thread's sampled stacks (nodes: node, parent, func, the
 * name's index in names, samples, self samples), at 100 Hz, read into m: 0 or
 * -1 having said why. */
static int library_window(const char *const *names, int nnames, const uint64_t (*nodes)[6], int nnodes,
                          top_model *m) {
    char path[] = "/tmp/dnprof-top-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    synth *w = synth_open(path, 4242, "dotnet top.dll");
    if (!w)
        return -1;
    uint64_t sid[8] = {0};
    for (int i = 0; i < nnames && i < 8; i++)
        sid[i] = synth_string(w, names[i]);
    synth_thread(w, 1, 1001);
    const uint64_t period = 10000000;
    uint64_t cfg[3] = {1, 100, period};
    synth_event(w, 1, 0, DNP_EV_SampleConfig, cfg);
    for (int i = 0; i < nnodes; i++) {
        const uint64_t *n = nodes[i];
        uint64_t v[9] = {1001, n[0], n[1], n[2], sid[n[3]], n[4], n[4] * period, n[5] * period, n[5]};
        synth_event(w, 1, 1000 + (uint64_t)i, DNP_EV_SampleNode, v);
    }
    if (synth_close(w, 1) != 0)
        return -1;
    top_model_init(m, 4242);
    char err[256] = "";
    int rc = top_model_window(m, path, err, sizeof err);
    unlink(path);
    if (rc)
        fprintf(stderr, "%s\n", err);
    return rc;
}

/* The CPU table's row of name in m: its self and total samples; 0, or -1 when
 * there is none. */
static int cpu_row(const top_model *m, const char *name, uint64_t *self, uint64_t *total) {
    const top_table *t = &m->cur.t[TOP_CPU];
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name)) {
            *self = t->rows[i].a;
            *total = t->rows[i].b;
            return 0;
        }
    return -1;
}

/* A window whose stacks go through two functions of libcoreclr.so without
 * names: the row of the library (folded, "[libcoreclr.so]") counts a sample
 * once in its total, however many of its functions the stack holds: Run (10
 * samples) > [libcoreclr.so+0x10] (10, 2 its own) > [libcoreclr.so+0x20] (8). */
TEST(top_library_total_once) {
    static const char *const names[] = {"App.P::Run", "[libcoreclr.so+0x10]", "[libcoreclr.so+0x20]"};
    static const uint64_t nodes[][6] = {{1, 0, 0x100, 0, 10, 0}, {2, 1, 0, 1, 10, 2}, {3, 2, 0, 2, 8, 8}};
    static top_model m;
    ASSERT_EQ(library_window(names, 3, nodes, 3, &m), 0);
    uint64_t self = 0, total = 0;
    ASSERT_EQ(cpu_row(&m, "[libcoreclr.so]", &self, &total), 0);
    ASSERT_EQ(self, 10);
    ASSERT_EQ(total, 10);
    top_model_free(&m);
    return 0;
}

/* The frames that start every thread (libc's, the runtime's thread start)
 * are not each "100% by total": a library's total is its code called from
 * managed code, once per stack, and the samples of its rootward frames that
 * never reach managed code (12 samples: 10 through Run, 4 of them in a
 * runtime helper Run calls, 2 in the thread start's own code). */
TEST(top_library_total_without_thread_roots) {
    static const char *const names[] = {"App.P::Run", "[libc.so.6+0x1]", "[libcoreclr.so+0x30]",
                                        "[libcoreclr.so+0x10]"};
    static const uint64_t nodes[][6] = {
        {1, 0, 0, 1, 12, 0}, {2, 1, 0, 2, 12, 2}, {3, 2, 0x100, 0, 10, 6}, {4, 3, 0, 3, 4, 4}};
    static top_model m;
    ASSERT_EQ(library_window(names, 4, nodes, 4, &m), 0);
    uint64_t self = 0, total = 0;
    ASSERT_EQ(cpu_row(&m, "[libcoreclr.so]", &self, &total), 0);
    ASSERT_EQ(self, 6);  /* the helper's 4, the thread start's 2 */
    ASSERT_EQ(total, 6); /* the same, not 12 */
    ASSERT_EQ(cpu_row(&m, "[libc.so.6]", &self, &total), 0);
    ASSERT_EQ(total, 2); /* the stacks that never reached managed code */
    top_model_free(&m);
    return 0;
}
