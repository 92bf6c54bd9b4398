/* test_report_gc.c: dnprof report --gc and --threadpool on synthetic traces:
 * percentiles by nearest rank, the share of time paused, and a figure whose
 * event the runtime did not send shown as "-" / null with a line saying so,
 * never as zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_check.h"
#include "synth.h"
#include "test.h"

#ifdef DNPROF_BIN
static char *run(const char *args, const char *path) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>&1", DNPROF_BIN, args, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    while (out && n + 1 < cap) {
        size_t k = fread(out + n, 1, cap - 1 - n, p);
        if (!k)
            break;
        n += k;
    }
    pclose(p);
    if (out)
        out[n] = 0;
    return out;
}

/* The JSON a report printed, parsed; NULL having said why. */
/* ok, having shown text when it is not; text freed. */
static int said(char *text, int ok) {
    if (!ok)
        fprintf(stderr, "%s\n", text);
    free(text);
    return ok;
}

static jv *run_json(const char *args, const char *path) {
    char *json = run(args, path);
    if (!json)
        return NULL;
    char err[256];
    jv *j = json_parse(json, strlen(json), err, sizeof err);
    if (!j)
        fprintf(stderr, "%s\n%s\n", err, json);
    free(json);
    return j;
}

/* A trace of process 4242 whose GC statistics began (.NET 10), on thread 1. */
static synth *gc_synth_open(const char *path) {
    synth *s = synth_open(path, 4242, "dotnet app.dll");
    if (!s)
        return NULL;
    synth_thread(s, 1, 4242);
    uint64_t cfg[] = {10, 1};
    synth_event(s, 1, 0, DNP_EV_GcConfig, cfg);
    return s;
}

/* Five gen0 collections (allocation), one second apart: pauses 1, 2, 3, 4 ms
 * and one without its suspension events; the third without GCPerHeapHistory. */
static int write_gc_trace(const char *path) {
    synth *s = gc_synth_open(path);
    if (!s)
        return -1;
    for (uint64_t i = 1; i <= 5; i++) {
        uint64_t t = i * 1000000000ull, pause = i < 5 ? i * 1000000 : 0;
        uint64_t before[] = {i, 0, 4000, 100, 200, 300, 400, 50, 0};
        uint64_t after[] = {i, 1, 10, 110, 210, 300, 400, 120};
        if (i != 3)
            synth_event(s, 1, t, DNP_EV_GcSizes, before);
        synth_event(s, 1, t, DNP_EV_GcSizes, after);
        uint64_t gc[] = {i, 0, 0, 0, i < 5 ? 0x3f : 0x13, 500000, 10000, pause};
        synth_event(s, 1, t, DNP_EV_GcCollection, gc);
    }
    return synth_close(s, 1);
}

TEST(report_gc_percentiles_and_missing) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-report-gc-%d.trace", (int)getpid());
    ASSERT_EQ(write_gc_trace(path), 0);
    jv *j = run_json("report --gc --json", path);
    ASSERT_NE(j, NULL);
    ASSERT_EQ(json_num(j, "collections"), 5);
    const jv *missing = json_get(j, "missing");
    ASSERT_EQ(json_num(missing, "pause"), 1);
    ASSERT_EQ(json_num(missing, "before"), 1);
    const jv *gcs = json_get(j, "gcs");
    ASSERT_EQ(json_get(json_at(gcs, 4), "pauseNs")->type, JV_NULL);
    ASSERT_EQ(json_get(json_at(gcs, 4), "suspendNs")->type, JV_NULL);
    ASSERT_EQ(json_get(json_at(gcs, 2), "before")->type, JV_NULL);
    ASSERT_EQ(json_num(json_get(json_at(gcs, 0), "after"), "total"), 10 + 110 + 210 + 300 + 400);
    const jv *groups = json_get(j, "groups"), *all = json_at(groups, groups->n - 1);
    ASSERT_EQ(json_num(all, "count"), 5);
    ASSERT_EQ(json_num(all, "paused"), 4);
    ASSERT_EQ(json_num(all, "p50Ns"), 2000000);
    ASSERT_EQ(json_num(all, "p95Ns"), 4000000);
    ASSERT_EQ(json_num(all, "maxNs"), 4000000);
    ASSERT_EQ(json_num(all, "totalPauseNs"), 10000000);
    double share = json_num(all, "pausedShare"); /* 10 ms over the 5 s recorded */
    ASSERT_GT(share, 0.0019);
    ASSERT_LT(share, 0.0021);
    json_free(j);
    char *text = run("report --gc", path);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "1 collection without a pause") && strstr(text, "without the heap before") &&
             strstr(text, "small-object allocation");
    ASSERT(said(text, ok));
    unlink(path);
    return 0;
}

/* Two induced collections, the second raised from gen 0 to gen 1 (GcRaised
 * before its GcCollection: gen1's budget, low card efficiency): the row says
 * the generation asked for, the JSON its from, budget and conditions; the
 * first, not raised, has "raised": null. */
TEST(report_gc_raised) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-report-gc-raised-%d.trace", (int)getpid());
    synth *s = gc_synth_open(path);
    ASSERT_NE(s, NULL);
    uint64_t first[] = {1, 0, 1, 0, 0x1f, 500000, 10000, 1000000};
    synth_event(s, 1, 1000000000ull, DNP_EV_GcCollection, first);
    uint64_t raised[] = {2, 0, 1, 0x14, 1u << 5};
    synth_event(s, 1, 2000000000ull, DNP_EV_GcRaised, raised);
    uint64_t second[] = {2, 1, 1, 0, 0x1f, 500000, 10000, 2000000};
    synth_event(s, 1, 2000000000ull, DNP_EV_GcCollection, second);
    ASSERT_EQ(synth_close(s, 1), 0);
    jv *j = run_json("report --gc --json", path);
    ASSERT_NE(j, NULL);
    const jv *gcs = json_get(j, "gcs");
    ASSERT_EQ(json_get(json_at(gcs, 0), "raised")->type, JV_NULL);
    const jv *r = json_get(json_at(gcs, 1), "raised");
    ASSERT_EQ(json_num(r, "from"), 0);
    ASSERT_EQ(json_num(r, "budgetGeneration"), 1);
    const jv *c = json_get(r, "conditions");
    ASSERT(c && c->n == 1 && json_at(c, 0)->type == JV_STR && !strcmp(json_at(c, 0)->str, "low_card_efficiency"));
    json_free(j);
    char *text = run("report --gc", path);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "induced (asked gen 0)") &&
             strstr(text, "#2: gen 0 asked, gen 1 collected: gen1's allocation budget was used up; low card "
                          "efficiency") && strstr(text, "1 induced collection collected an older generation");
    ASSERT(said(text, ok));
    unlink(path);
    return 0;
}

/* Starvation injections listed with their time; without wall-clock samples the
 * report says which flag records where the threads were blocked. */
TEST(report_threadpool_starvation) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-report-tp-%d.trace", (int)getpid());
    synth *s = synth_open(path, 4243, "dotnet app.dll");
    ASSERT_NE(s, NULL);
    synth_thread(s, 1, 4243);
    uint64_t cfg[] = {9};
    synth_event(s, 1, 0, DNP_EV_ThreadPoolConfig, cfg);
    uint64_t a1[] = {3, 6, 1500}, a2[] = {4, 3, 2000}, a3[] = {5, 6, 0};
    synth_event(s, 1, 500000000, DNP_EV_ThreadPoolAdjustment, a1);
    synth_event(s, 1, 1000000000, DNP_EV_ThreadPoolAdjustment, a2);
    synth_event(s, 1, 1500000000, DNP_EV_ThreadPoolAdjustment, a3);
    ASSERT_EQ(synth_close(s, 1), 0);
    char *text = run("report --threadpool", path);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "2 thread injections because the pool was starved") && strstr(text, "workers now 5") &&
             strstr(text, "--sample=wall");
    ASSERT(said(text, ok));
    unlink(path);
    return 0;
}
/* Saturated or merely busy: by how long an item waited in the queue (Little's
 * law over the counters), not only by how often it held one. */
static char *pool_report(const char *path, const uint64_t (*counters)[3], size_t n) {
    synth *s = synth_open(path, 4244, "dotnet app.dll");
    if (!s)
        return NULL;
    synth_thread(s, 1, 4244);
    uint64_t cfg[] = {9};
    synth_event(s, 1, 0, DNP_EV_ThreadPoolConfig, cfg);
    for (size_t i = 0; i < n; i++)
        synth_event(s, 1, (i + 1) * 1000000000ull, DNP_EV_ThreadPoolCounters, counters[i]);
    return synth_close(s, 1) == 0 ? run("report --threadpool", path) : NULL;
}

TEST(report_threadpool_saturated_by_wait) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-report-tp2-%d.trace", (int)getpid());
    /* a web application: work in the queue in 3 of 4 seconds, 4,057 items completed: about 1.2 ms an item */
    static const uint64_t busy[][3] = {{5, 2, 1000}, {5, 1, 1000}, {5, 2, 1000}, {5, 0, 1057}};
    char *text = pool_report(path, busy, 4);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "work waited in its queue only briefly: about 1.23 ms an item") &&
             !strstr(text, "its threads were all busy");
    ASSERT(said(text, ok));
    /* 24 sleeps of 300 ms on 3 threads: 90 items waiting over 4 s, 28 completed: 3.2 s an item */
    static const uint64_t held[][3] = {{3, 24, 7}, {3, 24, 7}, {3, 22, 7}, {3, 20, 7}};
    text = pool_report(path, held, 4);
    ASSERT_NE(text, NULL);
    ok = strstr(text, "but work waited in the pool's queue in 4 of 4 seconds, 24 items at most, about 3.21 s an item") &&
         strstr(text, "its threads were all busy");
    ASSERT(said(text, ok));
    unlink(path);
    return 0;
}
#endif
