/* test_gc.c: GC statistics and thread-pool starvation (dnprof run/attach --gc,
 * --threadpool; docs/waits.md) on the real runtime. The gc scenario induces
 * GC.Collect(0), (1) and (2) N times each and times every call itself: the
 * report must count each exactly by generation with reason "induced", have as
 * many collections in all as the runtime counted (GC.CollectionCount), and give
 * each induced collection a pause above zero and within the program's own
 * timing of its GC.Collect. The starve scenario blocks the pool's threads: the
 * report must show the runtime's starvation injections, no more of them than
 * the threads the program saw, and with --wall where the threads were blocked. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

#define ROUNDS 5
#define MAX_COLLECTS (3 * ROUNDS)
/* The pause is measured inside GC.Collect, by another clock read: a few
 * microseconds of slack for where each clock is read. */
#define CLOCK_SLACK_MS 0.02
/* A background collection's last restart is reported on its own thread, which
 * may let the waiting GC.Collect go first: a millisecond of slack for it, and
 * for every collection of the server GC, whose blocking ones may share a
 * suspension with a background one that runs on. */
#define BACKGROUND_SLACK_MS 1.0

typedef struct gc_truth {
    double ms[MAX_COLLECTS];
    int gen[MAX_COLLECTS];
    int n, induced[3], count[3];
    double paused_ms; /* GC.GetTotalPauseDuration(); -1: not printed */
} gc_truth;

static int read_truth(const char *path, gc_truth *t) {
    memset(t, 0, sizeof *t);
    char *out = e2e_read_file(path, NULL);
    if (!out)
        return -1;
    for (const char *p = strstr(out, "collect gen="); p && t->n < MAX_COLLECTS; p = strstr(p + 1, "collect gen=")) {
        if (p > out && p[-1] != '\n')
            continue;
        t->gen[t->n] = atoi(p + strlen("collect gen="));
        const char *m = strstr(p, "ms=");
        t->ms[t->n++] = m ? strtod(m + 3, NULL) : 0;
    }
    const char *i = strstr(out, "induced gen0="), *c = strstr(out, "collections gen0=");
    int rc = i && c && sscanf(i, "induced gen0=%d gen1=%d gen2=%d", &t->induced[0], &t->induced[1],
                              &t->induced[2]) == 3 &&
                     sscanf(c, "collections gen0=%d gen1=%d gen2=%d", &t->count[0], &t->count[1], &t->count[2]) == 3
                 ? 0
                 : -1;
    const char *paused = c ? strstr(c, "paused_ms=") : NULL;
    t->paused_ms = paused ? strtod(paused + strlen("paused_ms="), NULL) : -1;
    if (rc != 0 || t->n != MAX_COLLECTS)
        fprintf(stderr, "e2e: the gc scenario did not print its collections:\n%s\n", out), rc = -1;
    free(out);
    return rc;
}

/* The report's JSON held up against the program's truth; attached: the
 * recording began after start-up, so only the induced ones are counted. */
static int check_gc_report_of(e2e_run *r, const gc_truth *t, int attached, int server, int *raised_n) {
    const char *args[] = {"report", "--gc", "--json", r->trace, NULL};
    jv *j = e2e_dnprof_json(r, args);
    if (!j)
        return -1;
    const jv *gcs = json_get(j, "gcs");
    int rc = gcs && gcs->type == JV_ARR ? 0 : -1;
    int induced[3] = {0, 0, 0}, by_gen[3] = {0, 0, 0}, k = 0, backgrounds = 0;
    double paused = 0, gc_time = 0;
    /* every collection looked at, a fault in one not hiding the counts of the rest */
    for (size_t i = 0; gcs && gcs->type == JV_ARR && i < gcs->n; i++) {
        const jv *g = json_at(gcs, i);
        int gen = (int)json_num(g, "generation");
        const char *reason = json_str(g, "reason"), *type = json_str(g, "type");
        double pause = json_num(g, "pauseNs") / 1e6;
        paused += pause, gc_time += json_num(g, "durationNs") / 1e6;
        backgrounds += type && !strcmp(type, "background");
        if (gen >= 0 && gen <= 2)
            by_gen[gen]++;
        if (!reason || strcmp(reason, "induced") != 0 || gen < 0 || gen > 2)
            continue;
        /* the generation GC.Collect asked for: a collection the GC took further says it */
        const jv *raised = json_get(g, "raised");
        int asked = raised && raised->type == JV_OBJ ? (int)json_num(raised, "from") : gen;
        if (asked < 0 || asked > gen) {
            fprintf(stderr, "e2e: induced collection %d: gen %d raised from %d\n", k + 1, gen, asked);
            rc = -1;
            break;
        }
        induced[asked]++;
        *raised_n += asked != gen;
        /* blocking as asked; one the GC took to gen 2 itself may run in the background (the server GC's) */
        int background = type && asked != gen && !strcmp(type, "background");
        int blocking = type && (!strcmp(type, "blocking") || background);
        double slack = background || server ? BACKGROUND_SLACK_MS : CLOCK_SLACK_MS;
        /* GC.Collect may return before a background collection's last phase,
         * whose suspension is its pause too; or wait through a restart
         * reported late by the collection's own thread, past the collection's
         * end (7.9 ms of pause in a 4.4 ms collection that GC.Collect waited
         * 8.4 ms for, on a loaded machine): bounded by the longer of the two */
        double length = json_num(g, "durationNs") / 1e6;
        double bound = background ? (length > t->ms[k] ? length : t->ms[k]) : t->ms[k];
        if (k < t->n && (asked != t->gen[k] || !blocking || !(pause > 0) || pause > bound + slack)) {
            fprintf(stderr, "e2e: induced collection %d: gen %d (asked %d) %s, pause %.3f ms; the program: gen %d, "
                            "GC.Collect took %.3f ms\n", k + 1, gen, asked, type ? type : "?", pause, t->gen[k],
                    t->ms[k]);
            rc = -1;
        }
        /* a background collection's history, the source of "before", has no sizes */
        const jv *before = json_get(g, "before"), *after = json_get(g, "after");
        if (((!before || before->type != JV_OBJ) && !background) || !after || after->type != JV_OBJ ||
            json_num(after, "total") <= 0) {
            fprintf(stderr, "e2e: induced collection %d has no heap sizes before and after\n", k + 1);
            rc = -1;
        }
        k++;
    }
    for (int g = 0; g < 3; g++) {
        if (induced[g] != t->induced[g]) {
            fprintf(stderr, "e2e: report: %d induced gen%d collections, the program made %d\n", induced[g], g,
                    t->induced[g]);
            rc = -1;
        }
        /* GC.CollectionCount(0) counts every collection, (1) those of gen 1 and 2, (2) of gen 2 */
        int runtime = g == 0 ? t->count[0] - t->count[1] : g == 1 ? t->count[1] - t->count[2] : t->count[2];
        if (!attached && by_gen[g] != runtime) {
            fprintf(stderr, "e2e: report: %d gen%d collections, the runtime counted %d\n", by_gen[g], g, runtime);
            rc = -1;
        }
    }
    /* The runtime's own sum of the pauses (GC.GetTotalPauseDuration) of a run of
     * blocking collections: from each one's start, once the threads are
     * stopped, to its end, before they are let go; within the report's pauses
     * (from the suspension's start to the resumption's end) and longer than
     * the collections themselves (GCStart to GCEnd, each delivered a little
     * after the runtime's own clock read: a fifth of slack). */
    if (!attached && !backgrounds && t->paused_ms >= 0) {
        fprintf(stderr, "e2e: the runtime paused %.3f ms (GC.GetTotalPauseDuration); the report: pauses %.3f ms, "
                        "collections %.3f ms\n", t->paused_ms, paused, gc_time);
        if (!(t->paused_ms <= paused + 0.01 * gcs->n && t->paused_ms >= 0.8 * gc_time)) {
            fprintf(stderr, "e2e: the report's pauses do not hold the runtime's own\n");
            rc = -1;
        }
    }
    if (rc != 0)
        e2e_show_file("report", r->out);
    json_free(j);
    return rc;
}

static int check_gc_report(e2e_run *r, const gc_truth *t, int attached) {
    int raised = 0;
    return check_gc_report_of(r, t, attached, 0, &raised);
}

/* The run's trace converted for Perfetto (convert --format chrome), parsed;
 * NULL having said why. */
static jv *chrome_of(e2e_run *r) {
    char chrome[PATH_MAX + 16];
    snprintf(chrome, sizeof chrome, "%s/gc.chrome.json", r->dir);
    const char *cargs[] = {"convert", "--format", "chrome", "-o", chrome, r->trace, NULL};
    if (e2e_dnprof(r, cargs) != 0 || r->status != 0) {
        e2e_show_file("dnprof convert said", r->err);
        return NULL;
    }
    size_t len = 0;
    char *json = e2e_read_file(chrome, &len);
    char jerr[256];
    jv *j = json ? json_parse(json, len, jerr, sizeof jerr) : NULL;
    if (json && !j)
        fprintf(stderr, "e2e: %s: %s\n", chrome, jerr);
    free(json);
    return j;
}

TEST(e2e_gc_induced) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_gc_induced"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    const char *argv[] = {bin, "run", "--quiet", "--gc", "-o", r.trace, "--", e2e_dotnet(), dll, "gc", "5", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    gc_truth t;
    ASSERT_EQ(read_truth(r.out, &t), 0);
    ASSERT_GE(t.paused_ms, 0); /* the runtime's own sum, which the report is held to below */
    dnp_trace *tr = e2e_load_of(r.trace, DNP_EV_GcCollection, MAX_COLLECTS);
    ASSERT_NE(tr, NULL);
    dnp_trace_free(tr);
    ASSERT_EQ(check_gc_report(&r, &t, 0), 0);
    /* the text report: one line per collection and the table by generation and reason */
    const char *args[] = {"report", "--gc", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "p99 ms") && strstr(text, "induced") && strstr(text, "of the time");
    if (!ok)
        fprintf(stderr, "%s\n", text);
    free(text);
    ASSERT(ok);
    /* --top 3: the three longest pauses, each at least the longest left out */
    const char *top[] = {"report", "--gc", "--top", "3", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, top), 0);
    ASSERT_STATUS(&r, 0);
    text = e2e_read_file(r.out, NULL);
    ASSERT_NE(text, NULL);
    const char *table = strstr(text, "promoted\n");
    int rows = 0;
    double least = 1e9, longest = 0;
    for (const char *l = table ? table + strlen("promoted\n") : NULL; l && *l && *l != '\n'; rows++) {
        double at = 0, susp = 0, pause = 0;
        unsigned number = 0, gen = 0;
        char type[32], reason[64];
        if (sscanf(l, "%u %lf %u %31s %63s %lf %lf", &number, &at, &gen, type, reason, &susp, &pause) == 7 &&
            pause < least)
            least = pause;
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    /* the third longest pause of the JSON's */
    const char *jargs[] = {"report", "--gc", "--json", r.trace, NULL};
    jv *all = e2e_dnprof_json(&r, jargs);
    const jv *gcs = all ? json_get(all, "gcs") : NULL;
    double third = 0;
    for (int pass = 0; gcs && pass < 3; pass++) {
        double best = 0;
        for (size_t i = 0; i < gcs->n; i++) {
            double p = json_num(json_at(gcs, i), "pauseNs") / 1e6;
            if (p > best && (pass == 0 || p < longest))
                best = p;
        }
        longest = best, third = best;
    }
    json_free(all);
    ok = strstr(text, "the 3 longest pauses of 15 collections") && rows == 3 && least < 1e9 &&
         least >= third - 0.0015;
    if (!ok)
        fprintf(stderr, "%s\n(%d rows)\n", text, rows);
    free(text);
    ASSERT(ok);
    /* dnprof report without --gc: no call data, and which reports read what the trace holds */
    const char *plain[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, plain), 0);
    ASSERT_STATUS(&r, 1);
    text = e2e_read_file(r.err, NULL);
    ok = text && strstr(text, "no call data") && strstr(text, "GC statistics: dnprof report --gc") &&
         strstr(text, "dnprof report --waits");
    if (!ok)
        e2e_show_file("dnprof report said", r.err);
    free(text);
    ASSERT(ok);
    /* the timeline: a GC track with a slice per collection, generation and reason in its arguments */
    jv *j = chrome_of(&r);
    ASSERT_NE(j, NULL);
    const jv *events = json_get(j, "traceEvents");
    int slices = 0, induced2 = 0;
    for (size_t i = 0; events && i < events->n; i++) {
        const jv *e = json_at(events, i);
        const char *cat = json_str(e, "cat");
        if (!cat || strcmp(cat, "gc") != 0)
            continue;
        slices++;
        const jv *a = json_get(e, "args");
        induced2 += json_num(a, "generation") == 2 && json_str(a, "reason") && strcmp(json_str(a, "reason"), "induced") == 0;
    }
    json_free(j);
    ASSERT_EQ(slices, t.count[0]);
    ASSERT_EQ(induced2, t.induced[2]);
    return 0;
}

/* GC.Collect(0) five times in a row, then GC.Collect(1), then GC.Collect(2):
 * the survivors pile up in gen1 and gen2 and the GC collects an older
 * generation than some calls ask for (its budget used up, gen2 too small):
 * GC.CollectionCount counts those by what was collected, and so must the
 * report, which must also say, for each, the generation asked for
 * (GCPerHeapHistory's condemn reasons): every induced collection's asked
 * generation is the program's call, in order. On this machine one or two are
 * raised (gen 0 asked, gen 1 collected; gen 1 asked, gen 2 collected). With
 * the server GC (e2e_gc_raised_server) the raised ones are background
 * collections, whose GCPerHeapHistory comes after their GCEnd. */
static int raised_case(const char *test, const char *const *env) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, test), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    const char *argv[] = {bin, "run", "--quiet", "--gc", "-o", r.trace, "--", e2e_dotnet(), dll, "gc", "5", "row",
                          NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, env), 0);
    ASSERT_STATUS(&r, 0);
    gc_truth t;
    ASSERT_EQ(read_truth(r.out, &t), 0);
    int raised = 0;
    ASSERT_EQ(check_gc_report_of(&r, &t, 0, env != NULL, &raised), 0);
    /* the runtime's own counts say whether the GC went further than asked, when
     * every collection of the run was one of the program's (15 here, always) */
    int implied = t.count[1] != t.induced[1] + t.induced[2] || t.count[2] != t.induced[2];
    int only_induced = t.count[0] == t.induced[0] + t.induced[1] + t.induced[2];
    fprintf(stderr, "e2e: %d induced collections raised; the runtime's counts %d/%d/%d for %d/%d/%d asked\n", raised,
            t.count[0], t.count[1], t.count[2], t.induced[0], t.induced[1], t.induced[2]);
    if (only_induced)
        ASSERT_EQ(raised > 0, implied);
    const char *args[] = {"report", "--gc", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT_NE(text, NULL);
    int ok = !raised || (strstr(text, "(asked gen ") && strstr(text, " asked, gen ") &&
                         strstr(text, "collected an older generation than"));
    if (!ok)
        fprintf(stderr, "%s\n", text);
    free(text);
    ASSERT(ok);
    /* the timeline's GC slices say it too */
    jv *j = chrome_of(&r);
    ASSERT_NE(j, NULL);
    const jv *events = json_get(j, "traceEvents");
    int asked = 0;
    for (size_t i = 0; events && i < events->n; i++) {
        const jv *e = json_at(events, i);
        const char *cat = json_str(e, "cat");
        const jv *a = cat && !strcmp(cat, "gc") ? json_get(e, "args") : NULL;
        const char *reason = a ? json_str(a, "reason") : NULL;
        asked += reason && !strcmp(reason, "induced") && json_get(a, "askedGeneration") &&
                 json_num(a, "askedGeneration") < json_num(a, "generation");
    }
    json_free(j);
    ASSERT_EQ(asked, raised);
    return 0;
}

TEST(e2e_gc_raised) {
    return raised_case("e2e_gc_raised", NULL);
}

TEST(e2e_gc_raised_server) {
    static const char *const env[] = {"DOTNET_gcServer=1", NULL};
    return raised_case("e2e_gc_raised_server", env);
}

/* .NET 8 and 9 (self-contained builds of the sample, which calls GC.Collect()
 * once): the same events there, every figure of that collection known. */
static int check_older(const char *test, const char *env_name) {
    e2e_run r;
    if (e2e_setup(&r, test) != 0)
        return -1;
    const char *app = e2e_env(env_name), *bin = e2e_env("DNPROF_BIN");
    if (!app || !bin)
        return -1;
    const char *argv[] = {bin, "run", "--quiet", "--gc", "--threadpool", "-o", r.trace, "--", app, NULL};
    if (e2e_exec(&r, (char *const *)argv, NULL) != 0 || r.status != 0)
        return e2e_show_file("stderr", r.err), -1;
    /* a program that never starves its pool: a report that says so, not an error */
    const char *targs[] = {"report", "--threadpool", r.trace, NULL};
    char *text = e2e_dnprof(&r, targs) == 0 && r.status == 0 ? e2e_read_file(r.out, NULL) : NULL;
    int calm = text && strstr(text, "no starvation");
    if (!calm)
        fprintf(stderr, "e2e: %s: report --threadpool: %s\n", env_name, text ? text : "(failed)");
    free(text);
    if (!calm)
        return -1;
    const char *args[] = {"report", "--gc", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    if (!j)
        return -1;
    const jv *gcs = json_get(j, "gcs"), *missing = json_get(j, "missing");
    int induced = 0;
    for (size_t i = 0; gcs && i < gcs->n; i++) {
        const jv *g = json_at(gcs, i);
        induced += json_num(g, "generation") == 2 && json_str(g, "reason") && !strcmp(json_str(g, "reason"), "induced") &&
                   json_num(g, "pauseNs") > 0 && json_get(g, "before")->type == JV_OBJ;
    }
    int rc = induced == 1 && json_num(missing, "pause") == 0 && json_num(missing, "after") == 0 ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "e2e: %s: %d induced gen2 collections with a pause and sizes, want 1\n", env_name, induced);
    json_free(j);
    return rc;
}

TEST(e2e_gc_older_runtimes) {
    ASSERT_EQ(check_older("e2e_gc_older_runtimes.net8", "DNPROF_SAMPLE_NET8"), 0);
    ASSERT_EQ(check_older("e2e_gc_older_runtimes.net9", "DNPROF_SAMPLE_NET9"), 0);
    return 0;
}

/* Background GCs (a small gen0 budget and a 100 MB live set make the runtime
 * collect gen2 in the background): each with its pauses (the suspensions of its
 * first and final phases), a pause below its length (it runs concurrently,
 * unless the runtime kept it suspended), and every collection the runtime
 * counted, the one still running at exit too. */
TEST(e2e_gc_background) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_gc_background"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    const char *env[] = {"DOTNET_GCgen0size=0x100000", "DOTNET_gcConcurrent=1", NULL};
    const char *argv[] = {bin, "run", "--quiet", "--gc", "-o", r.trace, "--", e2e_dotnet(), dll, "gc", "1", "background", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, env), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int count0 = -1;
    for (const char *p = strstr(out, "collections gen0="); p; p = strstr(p + 1, "collections gen0="))
        count0 = atoi(p + strlen("collections gen0=")); /* the last: after the background ones */
    free(out);
    const char *args[] = {"report", "--gc", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    ASSERT_NE(j, NULL);
    const jv *gcs = json_get(j, "gcs");
    int background = 0, bad = 0;
    double last_start = -1;
    for (size_t i = 0; gcs && i < gcs->n; i++) {
        const jv *g = json_at(gcs, i);
        const char *type = json_str(g, "type");
        /* in the order the GCs were numbered, so began: a foreground GC after
         * the background one it ran inside, though it ended first */
        const jv *sj = json_get(g, "startNs");
        double start = sj && sj->type == JV_NUM ? sj->num : -1;
        if (start < 0 || start > json_num(g, "timeNs")) { /* said, and before the record that ends it */
            fprintf(stderr, "e2e: GC %.0f: startNs %.0f, timeNs %.0f\n", json_num(g, "number"), start,
                    json_num(g, "timeNs"));
            bad++;
        } else if (start < last_start) {
            fprintf(stderr, "e2e: GC %.0f begins at %.0f ns, before the one before it (%.0f)\n",
                    json_num(g, "number"), start, last_start);
            bad++;
        }
        last_start = start;
        if (!type || strcmp(type, "background") != 0)
            continue;
        background++;
        double pause = json_num(g, "pauseNs"), len = json_num(g, "durationNs");
        if (!(pause > 0) || (len > 0 && pause > len * 1.5 + 5e6)) {
            fprintf(stderr, "e2e: background GC %.0f: pause %.0f ns, length %.0f ns\n", json_num(g, "number"), pause, len);
            bad++;
        }
    }
    fprintf(stderr, "e2e: %d collections reported (the runtime counted %d), %d in the background\n",
            gcs ? (int)gcs->n : -1, count0, background);
    ASSERT_EQ(gcs ? (int)gcs->n : -1, count0);
    ASSERT_EQ(json_num(json_get(j, "missing"), "pause"), 0);
    json_free(j);
    ASSERT_GE(background, 1);
    ASSERT_EQ(bad, 0);
    return 0;
}

/* A trace without --gc: the report says how to record one, and fails. */
TEST(e2e_gc_report_without_gc) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_gc_report_without_gc"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "hello", "threads"), 0);
    ASSERT_STATUS(&r, 0);
    const char *args[] = {"report", "--gc", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_NE(r.status, 0);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    int ok = strstr(err, "dnprof run --gc") != NULL;
    free(err);
    ASSERT(ok);
    return 0;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* dnprof attach PID --gc: the runtime's GC events flow to an attached agent
 * (background GC on, as by default), the induced collections counted exactly. */
TEST(e2e_gc_attach) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_gc_attach"), 0);
    char out[PATH_MAX + 16];
    const char *args[] = {"gc", "5", NULL};
    ASSERT_EQ(e2e_attach_scenario(&r, args, "--gc", out, sizeof out), 0);
    gc_truth t;
    ASSERT_EQ(read_truth(out, &t), 0);
    dnp_trace *tr = NULL;
    char lerr[256];
    ASSERT_EQ(dnp_trace_load(r.trace, &tr, lerr, sizeof lerr), 0);
    ASSERT(tr->attached);
    ASSERT_GE(e2e_count(tr, DNP_EV_GcCollection), MAX_COLLECTS);
    /* The runtime's version, asked before the attached agent's event mask is
     * set (after it, GetRuntimeInformation is refused): the report names it. */
    long cfg = e2e_find(tr, DNP_EV_GcConfig, NULL, 0);
    uint64_t major = cfg >= 0 ? tr->events[cfg].v[DNP_V(GcConfig, runtimeMajor)] : 0;
    dnp_trace_free(tr);
    ASSERT_GE(major, 8);
    ASSERT_EQ(check_gc_report(&r, &t, 1), 0);
    return 0;
}

/* The starve scenario (with its arguments, NULL-terminated, or none) under
 * --threadpool --wall; the pool's thread counts it printed: at the start, at
 * its largest, its minimum. 0, or -1 having said why. */
static int run_starve(e2e_run *r, const char *test, const char *const *args, int *start, int *max, int *min) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    if (e2e_setup(r, test) != 0 || !dll || !bin)
        return -1;
    const char *argv[16] = {bin, "run", "--quiet", "--threadpool", "--wall", "-o", r->trace, "--", e2e_dotnet(), dll,
                            "starve"};
    for (int i = 0; args && args[i] && i < 4; i++)
        argv[11 + i] = args[i];
    if (e2e_exec(r, (char *const *)argv, NULL) != 0 || r->status != 0)
        return e2e_show_file("stderr", r->err), -1;
    char *out = e2e_read_file(r->out, NULL);
    const char *p = out ? strstr(out, "threads start=") : NULL, *m = p ? strstr(p, " min=") : NULL;
    int got = p && m && sscanf(p, "threads start=%d max=%d", start, max) == 2 && sscanf(m, " min=%d", min) == 1;
    if (!got)
        fprintf(stderr, "e2e: the starve scenario printed no thread counts\n");
    free(out);
    return got ? 0 : -1;
}

/* The starve scenario under --threadpool --wall: starvation shown, with the stacks. */
TEST(e2e_threadpool_starvation) {
    e2e_run r;
    int start = -1, max = -1, min = -1;
    ASSERT_EQ(run_starve(&r, "e2e_threadpool_starvation", NULL, &start, &max, &min), 0);
    const char *args[] = {"report", "--threadpool", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    ASSERT_NE(j, NULL);
    double starved = json_num(j, "starvation");
    const jv *stacks = json_get(j, "stacks");
    int blocked_in_sleep = 0, work_idle = 0; /* a stack of the program's work is never the pool's idle wait */
    for (size_t i = 0; stacks && i < stacks->n; i++) {
        const jv *frames = json_get(json_at(stacks, i), "stack"), *idle = json_get(json_at(stacks, i), "idle");
        int mine = 0;
        for (size_t k = 0; frames && k < frames->n; k++)
            mine |= json_at(frames, k)->type == JV_STR && strstr(json_at(frames, k)->str, "StarveScenario");
        blocked_in_sleep |= mine;
        work_idle += mine && (!idle || idle->type != JV_BOOL || idle->b);
    }
    ASSERT_EQ(work_idle, 0);
    const char *around = json_str(j, "stacksAround");
    int at_starvation = around && strcmp(around, "starvation") == 0;
    /* the runtime's counters, once a second: the queue held some of the 12
     * items while the pool was starved, and the pool never had more threads
     * than the program saw at its largest (plus its own sampling's lag) */
    const jv *c = json_get(j, "counters");
    double seconds = json_num(c, "seconds"), queue_max = json_num(c, "queueMax");
    double threads_max = json_num(c, "threadsMax"), queued = json_num(c, "secondsQueued");
    fprintf(stderr, "e2e: starve: %.0f starvation injections, the pool grew to %d threads; counters: %.0f s, "
            "%.0f threads at most, queue %.0f at most, queued in %.0f s\n", starved, max, seconds, threads_max,
            queue_max, queued);
    json_free(j);
    ASSERT_GE(seconds, 2); /* the program blocks for 2 s at least */
    ASSERT_GE(queued, 1);
    ASSERT_GE(queue_max, 1);
    ASSERT_LE(queue_max, 12);
    ASSERT_GE(threads_max, start);
    ASSERT_LE(threads_max, max + 2);
    ASSERT(at_starvation); /* the samples of the second before each injection */
    ASSERT_GE(starved, 1);
    ASSERT_LE(starved, max);
    ASSERT(blocked_in_sleep);
    /* the thread the runtime starts to poll the pool's counters waits too: report
     * --waits counts it apart, not among the program's blocked stacks */
    const char *wargs[] = {"report", "--waits", "--json", r.trace, NULL};
    jv *w = e2e_dnprof_json(&r, wargs);
    ASSERT_NE(w, NULL);
    const jv *blocked = json_get(w, "blocked"), *top = json_get(blocked, "top");
    double counters_ns = json_num(blocked, "countersThreadNs");
    int counters_in_top = 0;
    for (size_t i = 0; top && i < top->n; i++) {
        const char *stack = json_str(json_at(top, i), "stack");
        counters_in_top |= stack && strstr(stack, "CounterGroup") != NULL;
    }
    json_free(w);
    fprintf(stderr, "e2e: starve: the counters thread waited %.0f ms (counted apart)\n", counters_ns / 1e6);
    ASSERT_GT(counters_ns, 0);
    ASSERT(!counters_in_top);
    return 0;
}

/* A saturated pool: many short sleeps on the processor count's threads. Work
 * waits in the queue for seconds while items still complete, which the
 * runtime does not count as starvation (it injects when none is dequeued for a
 * while): the report must not end at "no starvation", but say that work waited
 * and show the sleep that held the threads. */
TEST(e2e_threadpool_saturated) {
    e2e_run r;
    int start = -1, max = -1, min = -1;
    static const char *const sleep[] = {"24", "300", "sleep", NULL};
    ASSERT_EQ(run_starve(&r, "e2e_threadpool_saturated", sleep, &start, &max, &min), 0);
    const char *args[] = {"report", "--threadpool", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    int starved = text && !strstr(text, ": 0 thread injections because the pool was starved");
    int ok = text && (starved || strstr(text, "but work waited in the pool's queue in ")) &&
             !strstr(text, "no starvation: the pool never had to") && strstr(text, "System.Threading.Thread::Sleep");
    if (!ok)
        e2e_show_file("report --threadpool", r.out);
    fprintf(stderr, "e2e: saturated: the pool from %d to %d threads; %s\n", start, max,
            starved ? "the runtime injected for starvation" : "no starvation injection, the queue's wait said");
    free(text);
    ASSERT(ok);
    /* report --waits says the same on its thread-pool line, and counts the seconds in --json */
    const char *wargs[] = {"report", "--waits", "--json", r.trace, NULL};
    jv *w = e2e_dnprof_json(&r, wargs);
    ASSERT_NE(w, NULL);
    const jv *tp = json_get(w, "threadpool");
    double seconds = json_num(tp, "seconds"), queued = json_num(tp, "secondsQueued");
    json_free(w);
    ASSERT_GE(seconds, 2);
    ASSERT_GE(queued, 2);
    const char *page[] = {"report", "--waits", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, page), 0);
    text = e2e_read_file(r.out, NULL);
    ok = text && (starved || strstr(text, "(a saturated pool: dnprof report --threadpool)"));
    if (!ok)
        e2e_show_file("report --waits", r.out);
    free(text);
    ASSERT(ok);
    return 0;
}

/* Sync over async: pool threads blocked in Task.Wait. The runtime raises the
 * pool's count for each (cooperative blocking, not starvation); the report
 * says so, with the peak the program saw and the stack they blocked in. */
TEST(e2e_threadpool_blocked_on_tasks) {
    e2e_run r;
    int start = -1, max = -1, min = -1;
    static const char *const tasks[] = {"12", "1500", "tasks", NULL};
    ASSERT_EQ(run_starve(&r, "e2e_threadpool_blocked_on_tasks", tasks, &start, &max, &min), 0);
    const char *args[] = {"report", "--threadpool", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    ASSERT_NE(j, NULL);
    double raises = json_num(j, "blockingRaises"), peak = json_num(j, "blockingPeakWorkers");
    const jv *listed = json_get(j, "blockedOnTasks"), *stacks = json_get(j, "stacks");
    int in_wait = 0;
    for (size_t i = 0; stacks && i < stacks->n; i++) {
        const jv *frames = json_get(json_at(stacks, i), "stack");
        int wait = 0;
        for (size_t k = 0; frames && k < frames->n; k++) {
            const char *f = json_at(frames, k)->type == JV_STR ? json_at(frames, k)->str : "";
            wait |= strstr(f, "Task::Wait") != NULL;
            in_wait |= wait && strstr(f, "StarveScenario::WaitOnTask") != NULL;
        }
    }
    fprintf(stderr, "e2e: blocked on tasks: %.0f raises to %.0f workers; the program saw %d to %d threads, "
            "minimum %d\n", raises, peak, start, max, min);
    ASSERT(listed && listed->type == JV_ARR && (double)listed->n == raises);
    json_free(j);
    ASSERT_GE(raises, 1);
    ASSERT_GT(peak, min);
    ASSERT_LE(peak, min + 12); /* the pool's goal: its minimum and a thread per blocked item at most */
    ASSERT(in_wait);
    const char *targs[] = {"report", "--threadpool", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, targs), 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT_NE(text, NULL);
    int said = strstr(text, "for its threads blocked on tasks") && strstr(text, "sync over async") &&
               !strstr(text, "no starvation");
    free(text);
    ASSERT(said);
    return 0;
}

/* ---- against dotnet-trace ---- */

/* The pauses of one collection may differ by where each tool reads its clock
 * (the event's timestamp, the agent's clock at delivery): a tenth of a
 * millisecond and 10% for most of them; on a loaded machine the thread that
 * delivers an event can be preempted before the agent reads its clock (the
 * profiling API's delivery carries no timestamp), so every one but one within
 * 1 ms and 25% (a load of 4 on 2 cores put one 3.6 ms apart), and 80% of them
 * within the close bound. */
#define AGREE_SLACK_MS 0.1
#define AGREE_SHARE 0.10
#define LOOSE_SLACK_MS 1.0
#define LOOSE_SHARE 0.25

typedef struct peer_gc {
    int number, gen, induced;
    double pause;
} peer_gc;

/* GcPauses' lines: "gc N gen G reason R type T pause MS". */
static int read_peer(const char *path, peer_gc *g, int cap) {
    char *text = e2e_read_file(path, NULL);
    if (!text)
        return -1;
    int n = 0;
    for (const char *p = strstr(text, "gc "); p && n < cap; p = strstr(p + 1, "\ngc ")) {
        if (*p == '\n')
            p++;
        char reason[64] = "", type[64] = "";
        if (sscanf(p, "gc %d gen %d reason %63s type %63s pause %lf", &g[n].number, &g[n].gen, reason, type,
                   &g[n].pause) == 5) {
            g[n].induced = strcmp(reason, "Induced") == 0;
            n++;
        }
    }
    free(text);
    return n;
}

/* One run under both: dnprof run --gc, and dotnet-trace collect -p PID with the
 * runtime provider's GC keyword at Informational; TraceEvent's GC analysis
 * (PerfView's GCStats) reads dotnet-trace's file. The same collections, each
 * of the same generation and reason, and pauses that agree. */
TEST(e2e_gc_agrees_dotnet_trace) {
    const char *dt = getenv("DNPROF_DOTNET_TRACE"), *reader = getenv("DNPROF_GC_PAUSES");
    if (!dt || !reader)
        E2E_SKIP("dotnet-trace is not installed (tools/install-deps installs it): dnprof's GC pauses are not compared with its events");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_gc_agrees_dotnet_trace"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    char go[PATH_MAX + 8], out[PATH_MAX + 16], err[PATH_MAX + 16], net[PATH_MAX + 16], derr[PATH_MAX + 16];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/scenario.out", r.dir);
    snprintf(err, sizeof err, "%s/scenario.err", r.dir);
    snprintf(net, sizeof net, "%s/gc.nettrace", r.dir);
    snprintf(derr, sizeof derr, "%s/dotnet-trace.err", r.dir);
    const char *argv[] = {bin, "run", "--quiet", "--gc", "-o", r.trace, "--", e2e_dotnet(), dll, "gc", "5", "wait", go, NULL};
    pid_t pid = e2e_spawn((char *const *)argv, NULL, r.dir, out, NULL, err);
    ASSERT_GT(pid, 0);
    long target = 0;
    for (int i = 0; i < 600 && !target; i++) {
        char *o = access(out, R_OK) == 0 ? e2e_read_file(out, NULL) : NULL;
        const char *at = o ? strstr(o, "ready pid=") : NULL;
        target = at ? atol(at + strlen("ready pid=")) : 0;
        free(o);
        if (!target)
            sleep_ms(50);
    }
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%ld", target);
    const char *dargv[] = {dt, "collect", "-p", pidtext, "--providers", "Microsoft-Windows-DotNETRuntime:0x1:4", "-o", net, NULL};
    char dout[PATH_MAX + 16];
    snprintf(dout, sizeof dout, "%s/dotnet-trace.out", r.dir);
    pid_t dpid = target ? e2e_spawn((char *const *)dargv, NULL, r.dir, dout, NULL, derr) : -1;
    int in = 0; /* dotnet-trace names its output once its session runs */
    for (int i = 0; i < 400 && dpid > 0 && !in; i++) {
        char *o = access(dout, R_OK) == 0 ? e2e_read_file(dout, NULL) : NULL;
        in = o && strstr(o, "Output File");
        free(o);
        if (!in)
            sleep_ms(50);
    }
    sleep_ms(500);
    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int status = -1, dstatus = -1;
    e2e_wait(pid, E2E_TIMEOUT_MS, &status);
    if (dpid > 0)
        e2e_wait(dpid, 30000, &dstatus);
    if (!target || !in || status != 0) {
        e2e_show_file("scenario stderr", err);
        e2e_show_file("dotnet-trace stderr", derr);
    }
    ASSERT(target);
    ASSERT(in);
    ASSERT_EQ(status, 0);
    const char *rargv[] = {e2e_dotnet(), reader, net, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)rargv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    peer_gc peer[64];
    int npeer = read_peer(r.out, peer, 64);
    const char *args[] = {"report", "--gc", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    ASSERT_NE(j, NULL);
    const jv *gcs = json_get(j, "gcs");
    int matched = 0, bad = 0, far = 0, close = 0;
    for (size_t i = 0; gcs && i < gcs->n; i++) {
        const jv *g = json_at(gcs, i);
        int number = (int)json_num(g, "number");
        double pause = json_num(g, "pauseNs") / 1e6;
        for (int k = 0; k < npeer; k++) {
            if (peer[k].number != number)
                continue;
            matched++;
            const char *reason = json_str(g, "reason");
            int induced = reason && strcmp(reason, "induced") == 0;
            double d = pause > peer[k].pause ? pause - peer[k].pause : peer[k].pause - pause;
            close += d <= AGREE_SLACK_MS + AGREE_SHARE * peer[k].pause;
            int other = peer[k].gen != (int)json_num(g, "generation") || peer[k].induced != induced;
            int apart = d > LOOSE_SLACK_MS + LOOSE_SHARE * peer[k].pause;
            if (other || apart)
                fprintf(stderr, "e2e: GC %d: dnprof gen %d %s pause %.4f ms; dotnet-trace gen %d %s pause %.4f ms\n",
                        number, (int)json_num(g, "generation"), reason ? reason : "?", pause, peer[k].gen,
                        peer[k].induced ? "induced" : "not induced", peer[k].pause);
            bad += other;
            far += apart;
        }
    }
    fprintf(stderr, "e2e: %d collections in dnprof's report, %d in dotnet-trace's, %d matched, %d pauses within "
                    "0.1 ms + 10%%\n", gcs ? (int)gcs->n : -1, npeer, matched, close);
    json_free(j);
    ASSERT_GE(npeer, MAX_COLLECTS);
    ASSERT_EQ(matched, npeer);
    ASSERT_EQ(bad, 0);
    ASSERT_LE(far, 1); /* one preempted delivery (a loaded machine) at most */
    ASSERT_GE(close * 5, npeer * 4);
    return 0;
}

/* dnprof attach PID --threadpool to a program that then starves its pool. */
TEST(e2e_threadpool_attach) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_threadpool_attach"), 0);
    char out[PATH_MAX + 16];
    const char *scenario[] = {"starve", "12", "2000", NULL};
    ASSERT_EQ(e2e_attach_scenario(&r, scenario, "--threadpool", out, sizeof out), 0);
    char *o = e2e_read_file(out, NULL);
    ASSERT_NE(o, NULL);
    int start = -1, max = -1;
    const char *p = strstr(o, "threads start=");
    int got = p && sscanf(p, "threads start=%d max=%d", &start, &max) == 2;
    free(o);
    ASSERT(got);
    const char *args[] = {"report", "--threadpool", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    ASSERT_NE(j, NULL);
    double starved = json_num(j, "starvation");
    json_free(j);
    fprintf(stderr, "e2e: starve by attach: %.0f starvation injections, the pool grew to %d threads\n", starved, max);
    ASSERT_GE(starved, 1);
    ASSERT_LE(starved, max);
    return 0;
}
