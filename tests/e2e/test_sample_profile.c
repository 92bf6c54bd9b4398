/* test_sample_profile.c: the sampling profiler (dnprof run/attach --sample)
 * against the truth of the "sample" scenario (SampleScenario.cs).
 *
 * Shares: three hot methods run the same loop body 6, 3 and 1 times per round,
 * so they do 60/30/10% of the work. Their self samples must give those shares
 * within 5 points. The tolerance is binomial: with n samples of the three, a
 * share's standard deviation is sqrt(p(1-p)/n) <= 0.5/sqrt(n); every test asks
 * for n >= 900 (the scenario works for a CPU-time budget, so the count does not
 * depend on how busy the machine is), which makes 5 points at least 3 standard
 * deviations. Every test fails when the agent records no samples. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "settings.h"
#include "pprof_decode.h"
#include "test.h"

#define MIN_SAMPLES 900
#define TOLERANCE 5.0
#define WHOLE 0.95 /* the share of a leaf's samples that must have their caller */

static const char *const HOT[3] = {"Scenarios.SampleScenario::HotSixty", "Scenarios.SampleScenario::HotThirty",
                                   "Scenarios.SampleScenario::HotTen"};
static const double TRUTH[3] = {60, 30, 10};

/* The last (largest) record of every (thread, node) of a CallNode or SampleNode
 * trace: the two share their first fields (events.def). */
typedef struct node_rec {
    uint64_t tid, node, parent, count, self_ns;
    const char *name;
} node_rec;

typedef struct nodes {
    node_rec *r;
    size_t n;
} nodes;

static int nodes_read(const dnp_trace *t, const char *kind_name, nodes *out) {
    int kind = e2e_kind(kind_name);
    if (kind < 0)
        return -1;
    int i_tid = e2e_value_index((unsigned)kind, 0), i_node = e2e_value_index((unsigned)kind, 1);
    int i_parent = e2e_value_index((unsigned)kind, 2), i_count = e2e_value_index((unsigned)kind, 4);
    int i_self = e2e_value_index((unsigned)kind, 6);
    memset(out, 0, sizeof *out);
    out->r = calloc(t->nevents + 1, sizeof *out->r);
    if (!out->r)
        return -1;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind != kind)
            continue;
        size_t k = 0;
        while (k < out->n && !(out->r[k].tid == e->v[i_tid] && out->r[k].node == e->v[i_node]))
            k++;
        if (k == out->n)
            out->n++;
        else if (out->r[k].count > e->v[i_count])
            continue;
        node_rec *r = &out->r[k];
        r->tid = e->v[i_tid];
        r->node = e->v[i_node];
        r->parent = e->v[i_parent];
        r->count = e->v[i_count];
        r->self_ns = e->v[i_self];
        r->name = e2e_field_name(t, e, 3);
    }
    return 0;
}

/* dnprof ARGS (a run with --sample), its trace loaded and the SampleNode
 * records read into ns: the trace, or NULL having said why. */
static dnp_trace *run_sampled(e2e_run *r, const char *const *args, nodes *ns) {
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        fprintf(stderr, "e2e: dnprof %s exited %d\n", args[0], r->status);
        e2e_show_file("stderr", r->err);
        return NULL;
    }
    dnp_trace *t = e2e_load(r->trace);
    if (t && nodes_read(t, "SampleNode", ns) == 0)
        return t;
    fprintf(stderr, "e2e: %s: no trace, or no SampleNode records read\n", r->trace);
    dnp_trace_free(t);
    return NULL;
}

static const node_rec *nodes_find(const nodes *ns, uint64_t tid, uint64_t node) {
    for (size_t k = 0; k < ns->n; k++)
        if (ns->r[k].tid == tid && ns->r[k].node == node)
            return &ns->r[k];
    return NULL;
}

/* Whether a node has an ancestor (itself excluded) named name. */
static int has_ancestor(const nodes *ns, const node_rec *r, const char *name) {
    for (int depth = 0; r && r->parent && depth < 64; depth++) {
        r = nodes_find(ns, r->tid, r->parent);
        if (r && r->name && strcmp(r->name, name) == 0)
            return 1;
    }
    return 0;
}

/* Self time of the three hot methods, their shares in percent; the share of
 * HotSixty's self time whose stack holds Rounds (frame pointers walked). */
static void hot_shares(const nodes *ns, double self[3], double share[3], double *walked) {
    double all = 0, sixty_walked = 0;
    for (int h = 0; h < 3; h++)
        self[h] = 0;
    for (size_t k = 0; k < ns->n; k++) {
        for (int h = 0; h < 3; h++) {
            if (ns->r[k].name && strcmp(ns->r[k].name, HOT[h]) == 0) {
                self[h] += (double)ns->r[k].self_ns;
                if (h == 0 && has_ancestor(ns, &ns->r[k], "Scenarios.SampleScenario::Rounds"))
                    sixty_walked += (double)ns->r[k].self_ns;
            }
        }
    }
    for (int h = 0; h < 3; h++)
        all += self[h];
    for (int h = 0; h < 3; h++)
        share[h] = all > 0 ? 100.0 * self[h] / all : 0;
    *walked = self[0] > 0 ? sixty_walked / self[0] : 0;
}

static uint64_t sample_stat(const dnp_trace *t, unsigned field) {
    int kind = e2e_kind("SampleStats");
    uint64_t v = 0;
    for (size_t i = 0; kind >= 0 && i < t->nevents; i++)
        if (t->events[i].kind == kind)
            v = t->events[i].v[e2e_value_index((unsigned)kind, field)];
    return v;
}

/* Checks the shares of a sampled trace; period_ns turns self time into samples. */
/* A trace of a run or of an attach (InitializeForAttach instead of Initialize). */
static dnp_trace *load_any(const char *path) {
    dnp_trace *t = NULL;
    char err[512];
    if (dnp_trace_load(path, &t, err, sizeof err) != 0) {
        fprintf(stderr, "e2e: cannot load '%s': %s\n", path, err);
        return NULL;
    }
    if (e2e_count(t, (unsigned)e2e_kind("Initialize")) + e2e_count(t, (unsigned)e2e_kind("InitializeForAttach")) == 0) {
        fprintf(stderr, "e2e: '%s' was not recorded by the agent\n", path);
        dnp_trace_free(t);
        return NULL;
    }
    return t;
}

/* The truth: the shares the program measured of its own time in each hot
 * method (its "measured A B C" line on stderr, in said), or the shares its
 * iteration counts give (60 30 10) when it wrote none. The counts are the
 * truth on a quiet machine; on a loaded one the three methods can run at
 * different speeds for a while (one still in Tier0 code or in OSR code while
 * another runs its Tier1 code), and CI once saw HotSixty at 54% there. */
static void program_truth(const char *said, double truth[3]) {
    memcpy(truth, TRUTH, sizeof TRUTH);
    size_t len;
    char *text = said ? e2e_read_file(said, &len) : NULL;
    const char *at = text ? strstr(text, "measured ") : NULL;
    double m[3];
    if (at && sscanf(at, "measured %lf %lf %lf", &m[0], &m[1], &m[2]) == 3 && m[0] + m[1] + m[2] > 99 &&
        m[0] + m[1] + m[2] < 101)
        memcpy(truth, m, sizeof m);
    free(text);
}

static int check_shares(const char *path, uint64_t period_ns, const char *what, const char *said) {
    dnp_trace *t = load_any(path);
    if (!t)
        return -1;
    nodes ns;
    int rc = nodes_read(t, "SampleNode", &ns);
    double self[3] = {0, 0, 0}, share[3] = {0, 0, 0}, walked = 0;
    if (rc == 0)
        hot_shares(&ns, self, share, &walked);
    double n = rc == 0 ? (self[0] + self[1] + self[2]) / (double)period_ns : 0;
    double truth[3];
    program_truth(said, truth);
    fprintf(stderr, "%s: %.0f samples of the hot methods (of %llu), shares %.1f %.1f %.1f (truth %.1f %.1f %.1f), "
                    "%.0f%% of HotSixty's under Rounds\n",
            what, n, (unsigned long long)sample_stat(t, 0), share[0], share[1], share[2], truth[0], truth[1],
            truth[2], 100 * walked);
    if (rc == 0 && n < MIN_SAMPLES) {
        fprintf(stderr, "%s: %.0f samples, fewer than %d: the shares cannot be judged\n", what, n, MIN_SAMPLES);
        rc = -1;
    }
    for (int h = 0; h < 3 && rc == 0; h++)
        if (share[h] < truth[h] - TOLERANCE || share[h] > truth[h] + TOLERANCE) {
            fprintf(stderr, "%s: %s has %.1f%%, the truth is %.1f%% +- %.0f\n", what, HOT[h], share[h], truth[h],
                    TOLERANCE);
            rc = -1;
        }
    /* Before the fix of the walk, 84-89% on a loaded 2-CPU machine (97% on a
     * quiet one): a thread's first samples (stack bounds not known yet),
     * return addresses in code newer than the list of executable mappings,
     * and OSR frames (the Tier0 frame skipped) lost their callers. Now 99-100%;
     * 95% leaves room for what a loaded machine still costs (code compiled
     * within 10 ms of a sample, a ring drained late). */
    if (rc == 0 && walked < WHOLE) {
        fprintf(stderr, "%s: only %.0f%% of HotSixty's samples have Rounds above them: stacks lose "
                        "their callers\n", what, 100 * walked);
        rc = -1;
    }
    free(ns.r);
    dnp_trace_free(t);
    return rc;
}

static int run_shares_of(e2e_run *r, const char *what, const char *rate, const char *cpu_seconds) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dll)
        return -1;
    char secs[32];
    const char *args[] = {"run", "--quiet", "--sample", "--rate", rate, "-o", r->trace, "--", e2e_dotnet(),
                          dll, "sample", what, e2e_work_seconds(cpu_seconds, secs, sizeof secs), NULL};
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        fprintf(stderr, "dnprof run --sample --rate %s: exit %d\n", rate, r->status);
        e2e_show_file("dnprof run said", r->err);
        return -1;
    }
    return 0;
}

static int run_shares(e2e_run *r, const char *rate, const char *cpu_seconds) {
    return run_shares_of(r, "shares", rate, cpu_seconds);
}

/* Whether one of the trace's notes holds text: 1, 0, or -1 when it does not load. */
static int note_has(const char *path, const char *text) {
    dnp_trace *t = e2e_load(path);
    if (!t)
        return -1;
    int found = e2e_note(t, text) != NULL;
    dnp_trace_free(t);
    return found;
}

TEST(e2e_sample_shares_100hz) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_shares_100hz"), 0);
    ASSERT_EQ(run_shares(&r, "100", "11"), 0);
    ASSERT_EQ(check_shares(r.trace, 10000000, "100 Hz from start-up", r.err), 0);
    return 0;
}

static int file_has(const char *path, const char *text) {
    size_t len;
    char *s = e2e_read_file(path, &len);
    int found = s && strstr(s, text) != NULL;
    free(s);
    return found;
}

/* The first cut of the trace at path, ending 16 bytes into a chunk, whose
 * whole chunks hold the SampleConfig but no SampleNode: written to cut.
 * Returns 0, or -1 when there is none. */
static int cut_before_samples(const char *path, const char *cut) {
    size_t len;
    char *bytes = e2e_read_file(path, &len);
    int kind_cfg = e2e_kind("SampleConfig"), kind_node = e2e_kind("SampleNode"), rc = -1;
    for (size_t off = 32; bytes && off + 24 + 16 <= len && rc != 0;) {
        uint32_t payload = (uint32_t)(unsigned char)bytes[off + 4] | (uint32_t)(unsigned char)bytes[off + 5] << 8 |
                           (uint32_t)(unsigned char)bytes[off + 6] << 16 | (uint32_t)(unsigned char)bytes[off + 7] << 24;
        off += 24 + payload; /* the end of this chunk */
        if (off + 16 > len)
            break;
        FILE *f = fopen(cut, "wb");
        if (!f || fwrite(bytes, 1, off + 16, f) != off + 16) {
            if (f)
                fclose(f);
            break;
        }
        fclose(f);
        dnp_trace *t = e2e_load(cut);
        if (t && e2e_count(t, (unsigned)kind_cfg) > 0 && e2e_count(t, (unsigned)kind_node) == 0)
            rc = 0;
        dnp_trace_free(t);
    }
    free(bytes);
    return rc;
}

/* convert --format pprof of a --sample trace, decoded: samples/count and
 * cpu/nanoseconds, the period, each stack's own samples (their sum is the
 * trace's), and the shares of the hot methods as leaves under Rounds. */
static int check_pprof(e2e_run *r, uint64_t period_ns) {
    char pb[PATH_MAX + 16];
    snprintf(pb, sizeof pb, "%s/out.pb.gz", r->dir);
    const char *convert[] = {"convert", "--format", "pprof", "-o", pb, r->trace, NULL};
    if (e2e_dnprof(r, convert) != 0 || r->status != 0) {
        e2e_show_file("dnprof convert said", r->err);
        return -1;
    }
    dnp_trace *t = load_any(r->trace);
    nodes ns;
    if (!t || nodes_read(t, "SampleNode", &ns) != 0)
        return -1;
    double want = 0; /* every sample of the trace, by its stack's own count */
    for (size_t k = 0; k < ns.n; k++)
        want += (double)(ns.r[k].self_ns / period_ns);
    free(ns.r);
    dnp_trace_free(t);
    size_t len;
    char *gz = e2e_read_file(pb, &len);
    pd_profile pr;
    int rc = gz && pd_decode_gzip((const uint8_t *)gz, len, &pr) == 0 ? 0 : -1;
    free(gz);
    if (rc != 0) {
        fprintf(stderr, "pprof: %s does not decode\n", pb);
        return -1;
    }
    if (pr.ntypes != 2 || strcmp(pd_str(&pr, pr.type[0]), "samples") || strcmp(pd_str(&pr, pr.unit[0]), "count") ||
        strcmp(pd_str(&pr, pr.type[1]), "cpu") || strcmp(pd_str(&pr, pr.unit[1]), "nanoseconds") ||
        pr.period != (int64_t)period_ns) {
        fprintf(stderr, "pprof: sample types %s/%s %s/%s, period %lld\n", pd_str(&pr, pr.type[0]),
                pd_str(&pr, pr.unit[0]), pd_str(&pr, pr.type[1]), pd_str(&pr, pr.unit[1]), (long long)pr.period);
        rc = -1;
    }
    /* The profile's comment: the samples taken behind the periods counted. */
    unsigned long long taken = 0, periods = 0;
    const char *comment = pr.ncomments ? pd_str(&pr, pr.comment[0]) : NULL;
    if (!comment || sscanf(comment, "dnprof --sample=cpu at %*u Hz: %llu samples taken, standing for %llu periods",
                           &taken, &periods) != 2) {
        fprintf(stderr, "pprof: no comment with the samples taken (%s)\n", comment ? comment : "none");
        rc = -1;
    }
    double all = 0, hot[3] = {0, 0, 0};
    for (size_t i = 0; i < pr.nsamples && rc == 0; i++) {
        const pd_sample *s = &pr.samples[i];
        if (s->nval != 2 || s->val[1] != s->val[0] * (int64_t)period_ns) {
            fprintf(stderr, "pprof: a sample of %lld samples has %lld ns\n", (long long)s->val[0],
                    (long long)(s->nval > 1 ? s->val[1] : -1));
            rc = -1;
        }
        all += (double)s->val[0];
        const char *leaf = s->nloc ? pd_loc_name(&pr, s->loc[0]) : NULL;
        const char *caller = s->nloc > 1 ? pd_loc_name(&pr, s->loc[1]) : NULL;
        for (int h = 0; h < 3; h++)
            if (leaf && caller && !strcmp(leaf, HOT[h]) && !strcmp(caller, "Scenarios.SampleScenario::Rounds"))
                hot[h] += (double)s->val[0];
    }
    pd_free(&pr);
    double n = hot[0] + hot[1] + hot[2];
    fprintf(stderr, "pprof: %.0f samples (the trace %.0f), hot methods under Rounds %.1f %.1f %.1f\n", all, want,
            n > 0 ? 100 * hot[0] / n : 0, n > 0 ? 100 * hot[1] / n : 0, n > 0 ? 100 * hot[2] / n : 0);
    fprintf(stderr, "pprof: its comment: %llu samples taken for %llu periods\n", taken, periods);
    if (rc == 0 && (all != want || n < MIN_SAMPLES || (double)periods != all || !taken || taken > periods))
        rc = -1;
    for (int h = 0; h < 3 && rc == 0; h++)
        if (fabs(100 * hot[h] / n - TRUTH[h]) > TOLERANCE)
            rc = -1;
    return rc;
}

/* One timer on the process's CPU time (DNPROF_SAMPLE_TIMERS=process): no
 * timer per thread, nothing at each context switch; its signal is taken by the
 * thread that ran (Linux 6.4+). The kernel checks process CPU timers only at
 * the scheduler tick (250 Hz here), so at 1 kHz a sample weighs ~4 (its
 * overruns) and there are 250 distinct instants a second, not 1000: 2.5 s gave
 * 625 and shares off by up to 6 points (sd 1.9). 6 s gives ~1500 instants, sd
 * 1.3 points at 60%, so the same 5 points are ~4 sd. The trace says which
 * clock sampled (and, on an older kernel, that it fell back). */
TEST(e2e_sample_shares_process_timer) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_shares_process_timer"), 0);
    setenv(DNP_ENV_SAMPLE_TIMERS, "process", 1);
    int ran = run_shares(&r, "1000", "6");
    unsetenv(DNP_ENV_SAMPLE_TIMERS);
    ASSERT_EQ(ran, 0);
    struct utsname u;
    int ma = 0, mi = 0;
    ASSERT_EQ(uname(&u), 0);
    sscanf(u.release, "%d.%d", &ma, &mi);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT(t);
    int process = e2e_note(t, "one POSIX timer on the process's CPU time") != NULL;
    int fallback = e2e_note(t, "needs Linux 6.4") != NULL;
    int dropped = e2e_note(t, "process timer: ") != NULL; /* signals that reached a thread asleep: not sampled */
    dnp_trace_free(t);
    if (ma < 6 || (ma == 6 && mi < 4)) {
        ASSERT(fallback);
        return 0;
    }
    ASSERT(process);
    ASSERT(dropped);
    ASSERT_EQ(check_shares(r.trace, 1000000, "1 kHz, one process timer", r.err), 0);
    return 0;
}

/* At 1 kHz auto samples by a perf event per thread, which costs at every
 * context switch of its thread: 64 threads handing tokens round cost +61% and
 * +141% of CPU that way (bench/bench_server.sh). A program that switches
 * threads all the time (two threads handing a token beside the hot ones:
 * about 18,000 switches per second of CPU) gets the process's CPU timer
 * instead (a POSIX timer per thread before Linux 6.4), the trace says so, and
 * the shares stay the truth's: tick-grained, so 6 s, as the process timer's
 * own test. */
TEST(e2e_sample_switching_gives_way) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_switching_gives_way"), 0);
    ASSERT_EQ(run_shares_of(&r, "sharesswitch", "1000", "6"), 0);
    int perf = note_has(r.trace, "cpu sampling by perf task-clock events");
    ASSERT(perf >= 0);
    if (perf) /* else perf events were refused here: POSIX timers from the start */
        ASSERT_EQ(note_has(r.trace, "a perf event costs at every switch of its thread; so after"), 1);
    ASSERT_EQ(check_shares(r.trace, 1000000, "1 kHz, a program that switches threads", r.err), 0);
    /* tick-grained: about 4 periods a sample, which the report says (SampleWeights) */
    const char *report[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, report), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, " samples were taken; the counts below are the "));
    return 0;
}

TEST(e2e_sample_shares_1khz) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_shares_1khz"), 0);
    ASSERT_EQ(run_shares(&r, "1000", "2.5"), 0);
    ASSERT_EQ(check_shares(r.trace, 1000000, "1 kHz from start-up", r.err), 0);
    /* four threads that never block keep their perf events */
    ASSERT_EQ(note_has(r.trace, "costs at every switch"), 0);
    /* the same front end as --calls: report and the exports */
    const char *report[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, report), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, "distinct stacks"));
    ASSERT(file_has(r.out, "Scenarios.SampleScenario::HotSixty"));
    if (note_has(r.trace, "cpu sampling by perf task-clock events") == 1) /* one period each (not under qemu) */
        ASSERT(!file_has(r.out, " samples were taken; the counts below are the "));
    char folded[PATH_MAX + 16];
    snprintf(folded, sizeof folded, "%s/out.folded", r.dir);
    const char *convert[] = {"convert", "--format", "folded", "-o", folded, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, convert), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(folded, "Scenarios.SampleScenario::Rounds;Scenarios.SampleScenario::HotSixty "));
    ASSERT_EQ(check_pprof(&r, 1000000), 0);
    return 0;
}

/* ---- by attach ---- */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int wait_file(const char *path, const char *text, int timeout_ms) {
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        if (access(path, F_OK) == 0 && (!text || file_has(path, text)))
            return 0;
        sleep_ms(50);
    }
    fprintf(stderr, "e2e: %s did not show up within %d ms\n", text ? text : path, timeout_ms);
    return -1;
}

/* The scenario started bare, dnprof attached to it with --sample, then it
 * works. contained: the scenario runs in namespaces of its own (a container:
 * its own pids, its own /tmp, the agent's file hidden), and dnprof, outside,
 * attaches by the host's pid. */
static int attach_shares_in(e2e_run *r, const char *rate, const char *cpu_seconds, int contained) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    if (!dll || !bin)
        return -1;
    char ready[PATH_MAX + 16], go[PATH_MAX + 16], sout[PATH_MAX + 16], serr[PATH_MAX + 16];
    snprintf(ready, sizeof ready, "%s/ready", r->dir);
    snprintf(go, sizeof go, "%s/ready.go", r->dir);
    snprintf(sout, sizeof sout, "%s/scenario.out", r->dir);
    snprintf(serr, sizeof serr, "%s/scenario.err", r->dir);
    const char *sargv[] = {e2e_dotnet(), dll, "sample", "shares", cpu_seconds, ready, NULL};
    const char *const env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t host = 0;
    pid_t scen = contained ? e2e_spawn_contained((char *const *)sargv, env, r->dir, sout, serr, e2e_env("DNPROF_AGENT"), &host)
                           : e2e_spawn((char *const *)sargv, env, r->dir, sout, NULL, serr);
    if (scen < 0 || wait_file(ready, NULL, 30000) != 0)
        return -1;
    char pid[32];
    size_t len;
    char *text = e2e_read_file(ready, &len);
    if (!text)
        return -1;
    snprintf(pid, sizeof pid, "%s", text); /* in a container, its own pid: not the one to attach to */
    free(text);
    char text_pid[32];
    snprintf(text_pid, sizeof text_pid, "%s", pid);
    if (contained) {
        char row[64], inside[32];
        snprintf(row, sizeof row, "%-8d %-24s ", (int)host, "Scenarios");
        snprintf(inside, sizeof inside, " pid %ld ", strtol(pid, NULL, 10));
        const char *ps[] = {"ps", NULL};
        if (e2e_dnprof(r, ps) != 0 || r->status != 0 || !file_has(r->out, row) || !file_has(r->out, inside)) {
            fprintf(stderr, "e2e: dnprof ps does not list host pid %d as '%s' with '%s'\n", (int)host, row, inside);
            e2e_show_file("dnprof ps", r->out);
            return -1;
        }
        snprintf(pid, sizeof pid, "%d", (int)host);
        const char *doctor[] = {"doctor", pid, NULL};
        snprintf(inside, sizeof inside, "pid %ld inside", strtol(text_pid, NULL, 10));
        if (e2e_dnprof(r, doctor) != 0 || r->status != 0 || !file_has(r->out, inside) ||
            !file_has(r->out, "can work")) {
            fprintf(stderr, "e2e: dnprof doctor %s does not say that attach can work, in a container\n", pid);
            e2e_show_file("dnprof doctor", r->out);
            return -1;
        }
    }
    const char *aargv[] = {bin, "attach", pid, "--sample", "--rate", rate, "-o", r->trace, NULL};
    pid_t att = e2e_spawn((char *const *)aargv, NULL, r->dir, r->out, NULL, r->err);
    if (att < 0 || wait_file(r->err, "attached to pid", 30000) != 0) {
        e2e_show_file("dnprof attach said", r->err);
        return -1;
    }
    int fd = open(go, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    int st = -1, ast = -1;
    if (e2e_wait(scen, E2E_TIMEOUT_MS, &st) != 0 || st != 0 || e2e_wait(att, 30000, &ast) != 0 || ast != 0) {
        fprintf(stderr, "e2e: the scenario ended with %d, dnprof attach with %d\n", st, ast);
        e2e_show_file("dnprof attach said", r->err);
        return -1;
    }
    return 0;
}

/* The file that holds what the scenario started by attach_shares_in wrote on stderr. */
static const char *scenario_said(const e2e_run *r, char *buf, size_t size) {
    snprintf(buf, size, "%s/scenario.err", r->dir);
    return buf;
}

static int attach_shares(e2e_run *r, const char *rate, const char *cpu_seconds) {
    return attach_shares_in(r, rate, cpu_seconds, 0);
}

/* From the host into a container: dnprof ps lists the program by the host's
 * pid with its pid inside; attach --sample by the host's pid gets the
 * program's shares, the trace comes out to the host, and the program runs on
 * to its end. */
TEST(e2e_container_attach_sample) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "container_attach_sample"), 0);
    char said[PATH_MAX + 16];
    if (!e2e_can_contain())
        E2E_SKIP("unshare cannot make PID and mount namespaces here (needs root or user namespaces)");
    ASSERT_EQ(attach_shares_in(&r, "1000", "2.5", 1), 0);
    ASSERT_EQ(check_shares(r.trace, 1000000, "1 kHz by attach, into a container",
                           scenario_said(&r, said, sizeof said)),
              0);
    ASSERT(file_has(r.err, "attached to pid"));
    /* the trace keeps the pid the host sees beside the program's own, and the
     * report names both */
    dnp_trace *t = NULL;
    char err[256], want[96];
    ASSERT_EQ(dnp_trace_load(r.trace, &t, err, sizeof err), 0);
    unsigned long long inner = t->pid, host = t->host_pid;
    dnp_trace_free(t);
    fprintf(stderr, "e2e: the trace's pid %llu, on the host %llu\n", inner, host);
    ASSERT(host != 0 && host != inner);
    snprintf(want, sizeof want, "attached to pid %llu", host);
    ASSERT(file_has(r.err, want));
    const char *args[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    snprintf(want, sizeof want, "process %llu (pid %llu on the host): ", inner, host);
    ASSERT(file_has(r.out, want));
    return 0;
}

TEST(e2e_sample_attach_100hz) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_attach_100hz"), 0);
    char said[PATH_MAX + 16];
    ASSERT_EQ(attach_shares(&r, "100", "11"), 0);
    ASSERT_EQ(check_shares(r.trace, 10000000, "100 Hz by attach", scenario_said(&r, said, sizeof said)), 0);
    return 0;
}

TEST(e2e_sample_attach_1khz) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_attach_1khz"), 0);
    char said[PATH_MAX + 16];
    ASSERT_EQ(attach_shares(&r, "1000", "2.5"), 0);
    ASSERT_EQ(check_shares(r.trace, 1000000, "1 kHz by attach", scenario_said(&r, said, sizeof said)), 0);
    return 0;
}

/* ---- native frames by name ---- */

TEST(e2e_sample_native_frames) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_native_frames"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *lib = e2e_env("DNPROF_TEST_NATIVE");
    ASSERT(dll);
    ASSERT(lib);
    const char *args[] = {"run", "--quiet", "--sample", "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(),
                          dll, "sample", "native", lib, "3", NULL};
    nodes ns;
    dnp_trace *t = run_sampled(&r, args, &ns);
    ASSERT(t);
    double spin = 0, spin_walked = 0, all = 0;
    for (size_t k = 0; k < ns.n; k++) {
        all += (double)ns.r[k].self_ns;
        if (ns.r[k].name && strcmp(ns.r[k].name, "libdnprof_test_native.so!dnp_native_spin") == 0) {
            spin += (double)ns.r[k].self_ns;
            if (has_ancestor(&ns, &ns.r[k], "Scenarios.SampleScenario::NativeWork"))
                spin_walked += (double)ns.r[k].self_ns;
        }
    }
    fprintf(stderr, "native: %.0f%% of the samples in dnp_native_spin, %.0f%% of those under NativeWork\n",
            all > 0 ? 100 * spin / all : 0, spin > 0 ? 100 * spin_walked / spin : 0);
    /* half the work is native: well above a quarter of the samples */
    ASSERT_GT(all, 0);
    ASSERT_GT(spin / all, 0.25);
    /* stacks are whole; see the note in check_shares */
    ASSERT_GT(spin_walked / spin, WHOLE);
    free(ns.r);
    dnp_trace_free(t);
    return 0;
}

/* ---- callers of a short method: prologues, epilogues, frameless code ---- */

/* Tiny is a few instructions called in a tight loop (SampleScenario "tight"):
 * most of its samples fall where RBP is not its own (before push rbp / mov
 * rbp, at pop rbp / ret, or everywhere once the JIT's Tier1 drops its frame),
 * where the frame-pointer chain alone skips TightLoop; before the fix, 3% of
 * Tiny's samples had TightLoop above them. */
TEST(e2e_sample_short_method_callers) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_short_method_callers"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char secs[32]; /* longer under emulation, where start-up and the JIT take much of it */
    const char *args[] = {"run", "--quiet", "--sample", "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(),
                          dll, "sample", "tight", e2e_work_seconds("2", secs, sizeof secs), NULL};
    nodes ns;
    dnp_trace *t = run_sampled(&r, args, &ns);
    ASSERT(t);
    double tiny = 0, walked = 0;
    for (size_t k = 0; k < ns.n; k++)
        if (ns.r[k].name && strcmp(ns.r[k].name, "Scenarios.SampleScenario::Tiny") == 0) {
            tiny += (double)ns.r[k].self_ns / 1e6;
            const node_rec *parent = nodes_find(&ns, ns.r[k].tid, ns.r[k].parent);
            /* the caller itself, right above: not a frame further up */
            if (parent && parent->name && strcmp(parent->name, "Scenarios.SampleScenario::TightLoop") == 0)
                walked += (double)ns.r[k].self_ns / 1e6;
        }
    fprintf(stderr, "short method: %.0f samples in Tiny, %.1f%% right under TightLoop\n", tiny,
            tiny > 0 ? 100 * walked / tiny : 0);
    /* the loop is most of the 2 s of CPU: hundreds of samples at 1 kHz */
    ASSERT_GT(tiny, 300);
    /* Under qemu-user (DNPROF_E2E_SLOWDOWN set: the arm64 subset) 93.5-96% of
     * Tiny's samples had TightLoop right above in CI, the rest Tight above Tiny
     * or Tiny alone: the emulator skews where a signal lands, on hardware and
     * on x86-64 it is 99-100%; the cause under emulation is not found yet
     * (docs/arm64.md). There the bar is 90%. */
    double whole = getenv("DNPROF_E2E_SLOWDOWN") ? 0.90 : WHOLE;
    ASSERT_GE(walked / tiny, whole);
    free(ns.r);
    dnp_trace_free(t);
    return 0;
}

/* Deep recursion (SampleScenario "deep": DeepBurn under 1,000 frames of
 * Descend, then ShallowBurn right under Run): the agent keeps a sample's
 * innermost 128 frames. A stack cut there has a root that says so,
 * "[deeper than 128 frames]", not a Descend frame that reads as a thread's
 * start; a stack that ends within them has its own root. And the report says
 * how much of the time is in such stacks. */
TEST(e2e_sample_deep_recursion) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_deep_recursion"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char secs[32];
    const char *args[] = {"run", "--quiet", "--sample", "-o", r.trace, "--", e2e_dotnet(), dll, "sample", "deep",
                          "1000", e2e_work_seconds("1", secs, sizeof secs), NULL};
    nodes ns;
    dnp_trace *t = run_sampled(&r, args, &ns);
    ASSERT(t);
    double deep = 0, deep_marked = 0, shallow = 0, shallow_marked = 0;
    for (size_t k = 0; k < ns.n; k++) {
        const node_rec *n = &ns.r[k];
        int is_deep = n->name && !strcmp(n->name, "Scenarios.SampleScenario::DeepBurn");
        if (!is_deep && !(n->name && !strcmp(n->name, "Scenarios.SampleScenario::ShallowBurn")))
            continue;
        const node_rec *root = n;
        for (int depth = 0; root && root->parent && depth < 1000; depth++)
            root = nodes_find(&ns, root->tid, root->parent);
        int marked = root && root->name && !strcmp(root->name, "[deeper than 128 frames]");
        double samples = (double)n->count;
        if (is_deep)
            deep += samples, deep_marked += marked ? samples : 0;
        else
            shallow += samples, shallow_marked += marked ? samples : 0;
    }
    fprintf(stderr, "deep recursion: DeepBurn %.0f samples (%.0f under the mark), ShallowBurn %.0f (%.0f)\n", deep,
            deep_marked, shallow, shallow_marked);
    free(ns.r);
    dnp_trace_free(t);
    ASSERT_GT(deep, 30);
    ASSERT_GT(shallow, 30);
    /* all of them here; a walk that stops in native code ("[unwinding stopped]") may take a few */
    ASSERT_GE(deep_marked, 0.95 * deep);
    ASSERT_EQ(shallow_marked, 0);
    const char *rep[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    int ok = text && strstr(text, "of the time is in stacks deeper than the agent walks (deep recursion)");
    if (!ok)
        e2e_show_file("dnprof report", r.out);
    free(text);
    ASSERT(ok);
    return 0;
}

/* ---- managed callers of native code without frame pointers ---- */

/* The nearest managed ancestor of a node (a name with "::"), or NULL. */
static const char *managed_ancestor(const nodes *ns, const node_rec *r) {
    for (int depth = 0; r && r->parent && depth < 128; depth++) {
        r = nodes_find(ns, r->tid, r->parent);
        if (r && r->name && strstr(r->name, "::"))
            return r->name;
    }
    return NULL;
}

/* AllocLoop allocates byte[256] arrays in a loop (SampleScenario "alloc"):
 * most of its time is in libcoreclr's allocation helpers and the GC, native
 * code that leaves RBP as AllocLoop's frame pointer, so that the chain gives
 * AllocLoop's caller (Alloc) and skips AllocLoop. Before the fix, 19% of the
 * native samples under Alloc's loop went straight to Alloc. */
TEST(e2e_sample_native_callers) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_native_callers"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *args[] = {"run", "--quiet", "--sample", "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(),
                          dll, "sample", "alloc", "2", NULL};
    nodes ns;
    dnp_trace *t = run_sampled(&r, args, &ns);
    ASSERT(t);
    double native = 0, walked = 0, coreclr = 0;
    for (size_t k = 0; k < ns.n; k++) {
        const char *name = ns.r[k].name;
        if (!name || strstr(name, "::") || !ns.r[k].self_ns)
            continue; /* native leaves only */
        const char *caller = managed_ancestor(&ns, &ns.r[k]);
        if (!caller || (strcmp(caller, "Scenarios.SampleScenario::AllocLoop") != 0 &&
                        strcmp(caller, "Scenarios.SampleScenario::Alloc") != 0))
            continue; /* start-up, or Alloc's clock reading through System.Diagnostics */
        double ms = (double)ns.r[k].self_ns / 1e6;
        native += ms;
        if (strstr(name, "libcoreclr.so"))
            coreclr += ms;
        if (has_ancestor(&ns, &ns.r[k], "Scenarios.SampleScenario::AllocLoop"))
            walked += ms;
    }
    fprintf(stderr, "native callers: %.0f native samples under Alloc (%.0f in libcoreclr), %.1f%% under AllocLoop\n",
            native, coreclr, native > 0 ? 100 * walked / native : 0);
    /* allocation and GC are most of the 2 s of CPU: hundreds of samples */
    ASSERT_GT(native, 300);
    ASSERT_GT(coreclr, 100);
    ASSERT_GE(walked / native, WHOLE);
    free(ns.r);
    dnp_trace_free(t);
    return 0;
}

/* ---- no harm ---- */

TEST(e2e_sample_no_harm) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_no_harm"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *bare[] = {e2e_dotnet(), dll, "sample", "harm", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)bare, NULL), 0);
    ASSERT_STATUS(&r, 7);
    size_t blen;
    char *want = e2e_read_file(r.out, &blen);
    ASSERT(want);
    ASSERT_CONTAINS(want, "total ");
    static const char *const modes[] = {"--sample=wall", "--sample=cpu"};
    for (int m = 0; m < 2; m++) {
        const char *args[] = {"run", "--quiet", modes[m], "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(),
                              dll, "sample", "harm", NULL};
        ASSERT_EQ(e2e_dnprof(&r, args), 0);
        size_t len;
        char *got = e2e_read_file(r.out, &len);
        ASSERT(got);
        if (r.status != 7 || len != blen || memcmp(got, want, len) != 0) {
            fprintf(stderr, "%s: exit %d (bare 7), output differs: %d\n", modes[m], r.status,
                    len != blen || memcmp(got, want, len) != 0);
            e2e_show_file("under dnprof", r.out);
            e2e_show_file("dnprof said", r.err);
            free(got);
            free(want);
            return 1;
        }
        free(got);
        dnp_trace *t = e2e_load(r.trace);
        ASSERT(t);
        ASSERT_GT(sample_stat(t, 0), 0);
        /* the threads were found (a thread that ends within the sampler's first
         * tick after it started may be missed: most are not) */
        ASSERT_GE(sample_stat(t, 3), 32);
        if (m == 0) {
            nodes ns;
            ASSERT_EQ(nodes_read(t, "SampleNode", &ns), 0);
            int waiting = 0;
            for (size_t k = 0; k < ns.n && !waiting; k++)
                waiting = ns.r[k].name && strcmp(ns.r[k].name, "[waiting]") == 0;
            free(ns.r);
            ASSERT(waiting); /* wall time sees the threads that sleep and read */
        }
        dnp_trace_free(t);
    }
    free(want);
    return 0;
}

/* ---- agreement with --calls ---- */

TEST(e2e_sample_agrees_with_calls) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_agrees_with_calls"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    double share[2][3];
    static const char *const how[] = {"--calls", "--sample"};
    for (int m = 0; m < 2; m++) {
        const char *calls[] = {"run", "--quiet", "--calls", "-o", r.trace, "--", e2e_dotnet(), dll, "sample",
                               "shares", "2.5", NULL};
        const char *sample[] = {"run", "--quiet", "--sample", "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(),
                                dll, "sample", "shares", "2.5", NULL};
        const char *const *args = m == 0 ? calls : sample;
        ASSERT_EQ(e2e_dnprof(&r, args), 0);
        if (r.status != 0) {
            fprintf(stderr, "dnprof run %s: exit %d\n", how[m], r.status);
            e2e_show_file("dnprof run said", r.err);
        }
        ASSERT_STATUS(&r, 0);
        dnp_trace *t = e2e_load(r.trace);
        ASSERT(t);
        nodes ns;
        ASSERT_EQ(nodes_read(t, m == 0 ? "CallNode" : "SampleNode", &ns), 0);
        double self[3], walked;
        hot_shares(&ns, self, share[m], &walked);
        free(ns.r);
        dnp_trace_free(t);
        /* The report's first hot method by self time. Not its first line: under
         * --calls, the main thread's time blocked in Join is its own wall time,
         * and on a loaded machine it outweighs each worker's CPU work. */
        const char *report[] = {"report", r.trace, NULL};
        ASSERT_EQ(e2e_dnprof(&r, report), 0);
        ASSERT_STATUS(&r, 0);
        size_t len;
        char *text = e2e_read_file(r.out, &len);
        ASSERT(text);
        char *table = strstr(text, "top functions by self time");
        char *end = table ? strstr(table, "\n\n") : NULL;
        int top_is_sixty = 0;
        for (char *line = table; line && line < end; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            size_t n = strcspn(line, "\n");
            int which = -1;
            for (int h = 0; h < 3 && which < 0; h++)
                if (memmem(line, n, HOT[h], strlen(HOT[h])))
                    which = h;
            if (which >= 0) {
                top_is_sixty = which == 0;
                break;
            }
        }
        if (!top_is_sixty)
            e2e_show_file(how[m], r.out);
        free(text);
        ASSERT(top_is_sixty);
    }
    fprintf(stderr, "--calls %.1f %.1f %.1f, --sample %.1f %.1f %.1f\n", share[0][0], share[0][1], share[0][2],
            share[1][0], share[1][1], share[1][2]);
    for (int h = 0; h < 3; h++) {
        ASSERT_GT(share[1][h], share[0][h] - TOLERANCE);
        ASSERT_LT(share[1][h], share[0][h] + TOLERANCE);
        ASSERT(h == 0 || share[1][h] < share[1][h - 1]);
    }
    return 0;
}

/* Issue 24: a --sample trace cut short before its samples were written says it
 * was recorded with --sample and ends early, not "record it with --sample";
 * and report --json says what was recorded (the sampling), not null. */
TEST(e2e_sample_cut_short) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_cut_short"), 0);
    char cut[PATH_MAX + 16];
    snprintf(cut, sizeof cut, "%s/cut.trace", r.dir);
    /* A loaded machine may write the sampling's configuration and its samples
     * in one chunk (the writer's thread late): then the trace has no place to
     * cut between them, and the run is made again, at most three times. */
    int cuttable = 0;
    for (int attempt = 0; attempt < 3 && !cuttable; attempt++) {
        ASSERT_EQ(run_shares(&r, "100", "1"), 0);
        cuttable = cut_before_samples(r.trace, cut) == 0;
    }
    ASSERT(cuttable);

    const char *json[] = {"report", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, json), 0);
    ASSERT_STATUS(&r, 0);
    int recorded = file_has(r.out, "\"recorded\":{\"sample\":{\"mode\":\"cpu\",\"rateHz\":100,\"periodNs\":10000000}");
    if (!recorded)
        e2e_show_file("report --json said", r.out);
    ASSERT(recorded);

    const char *report[] = {"report", cut, NULL};
    ASSERT_EQ(e2e_dnprof(&r, report), 0);
    ASSERT_STATUS(&r, 1);
    int said = file_has(r.err, "this trace was recorded with --sample=cpu but ends early") &&
               file_has(r.err, "before its samples were written: let the program run to its end") &&
               !file_has(r.err, "record it with");
    if (!said)
        e2e_show_file("report of the cut trace said", r.err);
    ASSERT(said);
    /* convert says the same, not "record it with --calls, --sample, ..." */
    const char *convert[] = {"convert", "--format", "pprof", "-o", "cut.pb.gz", cut, NULL};
    ASSERT_EQ(e2e_dnprof(&r, convert), 0);
    ASSERT_STATUS(&r, 1);
    said = file_has(r.err, "this trace was recorded with --sample=cpu but ends early") &&
           !file_has(r.err, "record it with");
    if (!said)
        e2e_show_file("convert of the cut trace said", r.err);
    ASSERT(said);
    return 0;
}
