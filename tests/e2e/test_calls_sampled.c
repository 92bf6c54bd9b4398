/* test_calls_sampled.c: `dnprof run --calls`, whose counts come from the
 * hooks and whose times come from samples of the agent's shadow stack
 * (docs/calls.md#times-from-samples).
 *
 * The program is the one issue 18 measured: a loop calls a small method of 40
 * dependent multiply-adds 5 million times (Loop, Chain), then a driver of 20
 * multiply-adds calls three methods of 2, 10 and 60 (Driver, Small, Mid, Top)
 * 3 million times, with tiered compilation on (the default). The truth of its
 * shares is what sampling the same program without any hook says (--sample
 * --rate 5000, which does not touch the program's code); --calls=timed put
 * Loop's own share at 11.6-14.2% where sampling says under 1%. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json_check.h"
#include "settings.h"
#include "test.h"
#include "trace_format.h"

#define RUNS 3

typedef struct shares {
    double loop_self, chain, driver_self, top, mid; /* percent of the caller's total */
    double chain_calls, top_calls, small_calls, mid_calls;
} shares;

/* A function's self and total time and calls, by name; -1 when missing. */
static int fn_times(const jv *rep, const char *name, double *self, double *total, double *calls) {
    const jv *fs = json_get(rep, "functions");
    for (size_t i = 0; fs && i < fs->n; i++) {
        const jv *f = json_at(fs, i);
        if (json_str(f, "name") && !strcmp(json_str(f, "name"), name)) {
            *self = json_num(f, "selfNs");
            *total = json_num(f, "totalNs");
            *calls = json_num(f, "calls");
            return 0;
        }
    }
    fprintf(stderr, "e2e: no function %s in the report\n", name);
    return -1;
}

/* The shares of one report (a --calls or a --sample trace of `calls shares run`). */
static int shares_of(const jv *rep, shares *s) {
    double ls, lt, lc, cs, ct, dt, ds, dc, ts, tt, ms, mt, ss, st;
    if (fn_times(rep, "Scenarios.CallsScenario::Loop", &ls, &lt, &lc) ||
        fn_times(rep, "Scenarios.CallsScenario::Chain", &cs, &ct, &s->chain_calls) ||
        fn_times(rep, "Scenarios.CallsScenario::Driver", &ds, &dt, &dc) ||
        fn_times(rep, "Scenarios.CallsScenario::Top", &ts, &tt, &s->top_calls) ||
        fn_times(rep, "Scenarios.CallsScenario::Mid", &ms, &mt, &s->mid_calls) ||
        fn_times(rep, "Scenarios.CallsScenario::Small", &ss, &st, &s->small_calls) || lt <= 0 || dt <= 0)
        return -1;
    s->loop_self = 100 * ls / lt;
    s->chain = 100 * ct / lt;
    s->driver_self = 100 * ds / dt;
    s->top = 100 * tt / dt;
    s->mid = 100 * mt / dt;
    return 0;
}

/* `dnprof run --quiet MODE... -o trace -- dotnet Scenarios.dll calls shares run`
 * and its report as JSON. */
static jv *run_report(e2e_run *r, const char *m1, const char *m2, const char *m3) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dll)
        return NULL;
    const char *args[] = {"run", "--quiet", m1, m2, m3, "-o", r->trace, "--", e2e_dotnet(), dll,
                          "calls", "shares", "run", NULL};
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        e2e_show_file("stderr", r->err);
        return NULL;
    }
    const char *rep[] = {"report", "--json", r->trace, NULL};
    return e2e_dnprof_json(r, rep);
}

static double median(double v[RUNS]) {
    for (int i = 0; i < RUNS; i++)
        for (int j = i + 1; j < RUNS; j++)
            if (v[j] < v[i]) {
                double x = v[i];
                v[i] = v[j];
                v[j] = x;
            }
    return v[RUNS / 2];
}

TEST(e2e_calls_sampled_shares) {
    unsetenv("DOTNET_TieredCompilation"); /* on, the default, as the program ran */
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_calls_sampled_shares"), 0);
    double got[5][RUNS], truth[5][RUNS];
    for (int run = 0; run < RUNS; run++) {
        /* --calls: exact counts, times from samples */
        jv *rep = run_report(&r, "--calls", "--rate", "5000");
        ASSERT_NE(rep, NULL);
        shares c;
        int found = shares_of(rep, &c) == 0;
        const jv *rec = json_get(rep, "recorded"), *cs = json_get(rec, "callsSampling");
        double mode = json_num(rec, "mode"), samples = json_num(cs, "samples"), in_agent = json_num(cs, "inAgent");
        double total = json_num(rep, "totalNs"), self = 0;
        const jv *fs = json_get(rep, "functions");
        for (size_t i = 0; fs && i < fs->n; i++)
            self += json_num(json_at(fs, i), "selfNs");
        json_free(rep);
        ASSERT(found);
        ASSERT_EQ((uint64_t)mode, DNP_CALLS_SAMPLED);
        ASSERT_EQ((uint64_t)c.chain_calls, 5000000);
        ASSERT_EQ((uint64_t)c.top_calls, 3000000);
        ASSERT_EQ((uint64_t)c.mid_calls, 3000000);
        ASSERT_EQ((uint64_t)c.small_calls, 3000000);
        ASSERT_GT(samples, 1000); /* about a second of CPU at 5 kHz */
        ASSERT_LT(in_agent, samples / 4);
        /* each sample is one node's: the self times add up to the root's total */
        ASSERT_GT(total, 0);
        ASSERT_LE(self, total * 1.001);
        ASSERT_GE(self, total * 0.999);
        /* the truth: the same program sampled without hooks */
        rep = run_report(&r, "--sample", "--rate", "5000");
        ASSERT_NE(rep, NULL);
        shares s;
        found = shares_of(rep, &s) == 0;
        json_free(rep);
        ASSERT(found);
        double c5[5] = {c.loop_self, c.chain, c.driver_self, c.top, c.mid};
        double s5[5] = {s.loop_self, s.chain, s.driver_self, s.top, s.mid};
        for (int k = 0; k < 5; k++) {
            got[k][run] = c5[k];
            truth[k][run] = s5[k];
        }
        fprintf(stderr, "e2e: run %d: --calls Loop self %.1f%%, Chain %.1f%%, Driver self %.1f%%, Top %.1f%%, "
                "Mid %.1f%% (%.0f samples, %.1f%% in the hooks); --sample %.1f%%, %.1f%%, %.1f%%, %.1f%%, %.1f%%\n",
                run + 1, c.loop_self, c.chain, c.driver_self, c.top, c.mid, samples, 100 * in_agent / samples,
                s.loop_self, s.chain, s.driver_self, s.top, s.mid);
    }
    /* 3 points (the goal) for the shares the hooks do not disturb;
     * 4.5 for Top and Mid: Small's and Mid's few multiply-adds run alongside
     * the hooks' own loads (out of order), so part of their time retires as
     * the hooks' and is left out, and Top, whose chain of 60 the hooks cannot
     * hide, reads 2-3 points more than without hooks (docs/calls.md) */
    static const char *const what[5] = {"Loop's self time", "Chain's total", "Driver's self time", "Top's total",
                                        "Mid's total"};
    static const double tolerance[5] = {3, 3, 3, 4.5, 4.5};
    int ok = 1;
    for (int k = 0; k < 5; k++) {
        double g = median(got[k]), t = median(truth[k]);
        int in = g >= t - tolerance[k] && g <= t + tolerance[k];
        fprintf(stderr, "e2e: %-20s --calls %5.1f%%, --sample %5.1f%% (medians of %d), tolerance %.1f points: %s\n",
                what[k], g, t, RUNS, tolerance[k], in ? "ok" : "MISSED");
        ok &= in;
    }
    ASSERT(ok);
    return 0;
}

/* The text report says how the times were made and what was left out, and
 * --calls=timed still times each call (CallsOverhead, no CallsSampling). */
TEST(e2e_calls_sampled_report_says_so) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_calls_sampled_report_says_so"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);
    const char *run[] = {"run", "--quiet", "--calls", "-o", r.trace, "--", e2e_dotnet(), dll, "calls", "recursion", NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    size_t sampling = e2e_count(t, DNP_EV_CallsSampling), per_thread = e2e_count(t, DNP_EV_CallsSamples);
    size_t overhead = e2e_count(t, DNP_EV_CallsOverhead), nodes = e2e_count(t, DNP_EV_CallNode);
    dnp_trace_free(t);
    ASSERT_EQ(sampling, 1);
    ASSERT_GT(per_thread, 0);
    ASSERT_EQ(overhead, 0);
    ASSERT_GT(nodes, 100);
    const char *rep[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int ok = strstr(out, "recorded: exact counts, and times from samples") && strstr(out, "times are estimates from") &&
             strstr(out, "counts are exact") && !strstr(out, "net of the enter/leave hooks");
    if (!ok)
        e2e_show_file("report", r.out);
    free(out);
    ASSERT(ok);

    const char *timed[] = {"run", "--quiet", "--calls=timed", "-o", r.trace, "--", e2e_dotnet(), dll, "calls",
                           "recursion", NULL};
    ASSERT_EQ(e2e_dnprof(&r, timed), 0);
    ASSERT_STATUS(&r, 0);
    t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    sampling = e2e_count(t, DNP_EV_CallsSampling);
    overhead = e2e_count(t, DNP_EV_CallsOverhead);
    dnp_trace_free(t);
    ASSERT_EQ(sampling, 0);
    ASSERT_GT(overhead, 0);

    /* --rate goes with --calls (sampled), not with --calls=timed */
    const char *bad[] = {"run", "--calls=timed", "--rate", "100", "--", e2e_dotnet(), dll, "calls", "recursion", NULL};
    ASSERT_EQ(e2e_dnprof(&r, bad), 0);
    ASSERT_STATUS(&r, 2);
    return 0;
}

/* Samples taken while the JIT compiles a method are the runtime's work, not the
 * time of the method on top of the shadow stack: `calls jit` compiles 40
 * expression trees from JitMany on the main thread. The samples the agent
 * set apart on that thread (CallsJitSamples) match the runtime's own count
 * of the thread's time in the JIT (System.Runtime.JitInfo) within 25% and
 * 10 ms, and JitMany's self time is what is left, less than the JIT's. */
TEST(e2e_calls_sampled_jit_apart) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_calls_sampled_jit_apart"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);
    const char *run[] = {"run", "--quiet", "--calls", "-o", r.trace, "--", e2e_dotnet(), dll, "calls", "jit", "40", NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    const char *line = out ? strstr(out, "jit thread_ms=") : NULL, *sh = line ? strstr(line, "cpu_share=") : NULL;
    double wall_ms = line ? atof(line + strlen("jit thread_ms=")) : -1;
    double share = sh ? atof(sh + strlen("cpu_share=")) : -1;
    free(out);
    ASSERT_GT(wall_ms, 0);
    ASSERT_GT(share, 0);
    /* the runtime counts the JIT's elapsed time, the samples count CPU time: on a
     * loaded machine the thread waits for a CPU within it (at a load of 4, 565 ms
     * elapsed, 318 ms sampled), so the truth is the elapsed time at the thread's
     * share of the CPU while it compiled */
    double truth_ms = wall_ms * (share < 1 ? share : 1);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    double period_ns = 0, jit_samples = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind == DNP_EV_CallsSampling)
            period_ns = (double)e->v[DNP_V(CallsSampling, periodNs)];
        else if (e->kind == DNP_EV_CallsJitSamples && e->v[DNP_V(CallsJitSamples, osThreadId)] == t->pid)
            jit_samples = (double)e->v[DNP_V(CallsJitSamples, samples)]; /* cumulative: the last counts */
    }
    dnp_trace_free(t);
    double jit_ms = jit_samples * period_ns / 1e6;
    const char *rep[] = {"report", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, rep);
    ASSERT_NE(j, NULL);
    double self = -1, total = -1, calls = -1;
    int found = fn_times(j, "Scenarios.CallsScenario::JitMany", &self, &total, &calls) == 0;
    json_free(j);
    fprintf(stderr, "e2e: jit: the runtime counts %.1f ms of JIT on the main thread (%.1f ms at its CPU share %.3f), "
                    "the agent set %.1f ms apart; JitMany self %.1f ms\n", wall_ms, truth_ms, share, jit_ms, self / 1e6);
    ASSERT(found);
    ASSERT_LE(fabs(jit_ms - truth_ms), 0.25 * truth_ms + 10);
    ASSERT_LT(self / 1e6, truth_ms);
    const char *text[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, text), 0);
    out = e2e_read_file(r.out, NULL);
    int ok = out && strstr(out, "while the JIT compiled a method (the runtime's work, not the method's)");
    free(out);
    ASSERT(ok);
    return 0;
}
