/* test_sample.c: the README's quick start, samples/hello under dnprof, shows what
 * the sample says it does; threads sampled from their start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "settings.h"
#include "test.h"

TEST(e2e_sample_hello) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_sample_hello"), 0);
    const char *dll = e2e_env("DNPROF_SAMPLE_HELLO");
    ASSERT_NE(dll, NULL);
    ASSERT_EQ(e2e_run_dll(&r, dll, NULL, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int said = strstr(out, "hello, dnprof\n") != NULL && strstr(out, "caught: ") != NULL;
    free(out);
    ASSERT(said);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Program+Greeter", "Hello"), 0);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Pair<System.String, System.Int32>", "Hello"), 0);
    int thrown = 0, named = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *ev = &t->events[i];
        const char *name = e2e_field_name(t, ev, 1);
        if (ev->kind == DNP_EV_ExceptionThrown && name != NULL && strcmp(name, "System.InvalidOperationException") == 0)
            thrown = 1;
        if (ev->kind == DNP_EV_ThreadNameChanged && name != NULL && strcmp(name, "hello-worker") == 0)
            named = 1;
    }
    if (!thrown)
        fprintf(stderr, "e2e: no ExceptionThrown of System.InvalidOperationException\n");
    if (!named)
        fprintf(stderr, "e2e: no ThreadNameChanged to \"hello-worker\"\n");
    ASSERT(thrown);
    ASSERT(named);
    ASSERT_GE(e2e_count(t, DNP_EV_GarbageCollectionStarted), 1);
    ASSERT_GE(e2e_count(t, DNP_EV_GarbageCollectionFinished), 1);
    /* The log a person reads is indented right: every thread back at level 0. */
    char why[512] = "";
    int nested = e2e_check_nesting(t, why, sizeof why);
    if (nested != 0)
        fprintf(stderr, "e2e: samples/hello: %s\n", why);
    ASSERT_EQ(nested, 0);
    dnp_trace_free(t);
    return 0;
}

/* Native threads (the runtime's own, which are never managed threads) are named
 * by their OS name in a sampled trace, and the report labels them with their
 * OS tid and that name (issue #24 item 7b): in wall mode every thread is
 * sampled, the runtime's EventPipe and debugger threads too. */
TEST(e2e_sample_native_thread_names) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_sample_native_thread_names"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);
    const char *args[] = {"run", "--quiet", "--sample=wall", "-o", r.trace, "--", e2e_dotnet(),
                          dll, "sample", "shares", "1", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    int sample_kind = e2e_kind("SampleNode"), named_kind = e2e_kind("ExistingThread");
    ASSERT_GE(sample_kind, 0);
    ASSERT_GE(named_kind, 0);
    /* a native thread: named ".NET ...", sampled, and no managed thread on its tid */
    uint64_t tid = 0;
    char name[64] = "";
    for (size_t i = 0; i < t->nevents && !tid; i++) {
        const dnp_trace_event *e = &t->events[i];
        const char *s = e->kind == named_kind && e->v[0] == 0 ? dnp_trace_string(t, e->v[2]) : NULL;
        if (!s || strncmp(s, ".NET ", 5) != 0)
            continue;
        int sampled = 0, managed = 0;
        for (size_t j = 0; j < t->nevents; j++) {
            const dnp_trace_event *f = &t->events[j];
            sampled |= f->kind == sample_kind && f->v[0] == e->v[1];
            managed |= f->kind == DNP_EV_ThreadAssignedToOSThread && f->v[1] == e->v[1];
        }
        if (sampled && !managed) {
            tid = e->v[1];
            snprintf(name, sizeof name, "%s", s);
        }
    }
    dnp_trace_free(t);
    if (!tid)
        fprintf(stderr, "e2e: no sampled native thread named by ExistingThread (\".NET ...\")\n");
    ASSERT_NE(tid, 0);
    char tid_text[32], want[128];
    snprintf(tid_text, sizeof tid_text, "%llu", (unsigned long long)tid);
    snprintf(want, sizeof want, "thread %s (%s): ", tid_text, name);
    const char *report[] = {"report", "--thread", tid_text, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, report), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, want);
    free(out);
    return 0;
}

/* Threads that live a few tens of ms (ShortSpin): 30 rounds of 4 threads, each
 * spinning until its own CPU clock has moved 20 ms. A thread got its slot, and
 * so its samples, only when the sampler thread's next scan found it, and a
 * sampler thread sharing two CPUs with busy threads is late: 1.3 s of such
 * threads read as 90 ms. Now each thread takes its slot as it starts (or at its
 * first signal). ShortSpin's sampled time must be within 20% of the threads'
 * own clocks: about 240 samples at 100 Hz, a binomial sd near 6.5%. And the samples must be the threads' own:
 * with 2 samples a thread on average, 80 of the 120 at least have one (104
 * expected); the process timer's handler, which finds a thread's slot by
 * pthread_self(), put a new thread's samples in the slot of the ended thread
 * whose descriptor the thread library gave it: 41 threads had samples (3 with
 * slots from the scan alone). Once for each clock: the process's CPU timer
 * (the default at 100 Hz) and perf events (DNPROF_SAMPLE_TIMERS=0, at 1 kHz:
 * each thread's samples stand for half a period less than its CPU time). */
/* How many threads have samples in a frame named name (SampleNode records). */
static int threads_in(const char *trace, const char *name) {
    dnp_trace *t = e2e_load(trace);
    int kind = e2e_kind("SampleNode"), n = 0;
    uint64_t seen[512];
    for (size_t i = 0; t && kind >= 0 && i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        const char *f = e->kind == kind ? e2e_field_name(t, e, 3) : NULL;
        if (!f || strcmp(f, name) != 0)
            continue;
        int k = 0;
        while (k < n && seen[k] != e->v[0])
            k++;
        if (k == n && n < 512)
            seen[n++] = e->v[0];
    }
    dnp_trace_free(t);
    return n;
}

static int short_threads(const char *timers, int wall) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, wall ? "sample_short_threads_wall" : timers ? "sample_short_threads_perf"
                                                                         : "sample_short_threads"),
              0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);
    /* perf events at 1 kHz: a whole first period, half a period short a thread on average (2.5% here) */
    const char *args[] = {"run", "--quiet", wall ? "--sample=wall" : "--sample", "--rate", timers ? "1000" : "100",
                          "-o", r.trace, "--", e2e_dotnet(), dll, "sample", "shortthreads", "30", "4", "20", NULL};
    if (timers)
        setenv(DNP_ENV_SAMPLE_TIMERS, timers, 1);
    int ran = e2e_dnprof(&r, args);
    unsetenv(DNP_ENV_SAMPLE_TIMERS);
    ASSERT_EQ(ran, 0);
    ASSERT_STATUS(&r, 0);
    double truth = e2e_said_number(&r, wall ? " wall=" : "shortthreads ms=");
    ASSERT_GE(truth, 2000);
    char *text = e2e_folded_of(&r);
    ASSERT_NE(text, NULL);
    double sampled = e2e_folded_weight(text, "Scenarios.SampleScenario::ShortSpin") / 1e6;
    free(text);
    int threads = threads_in(r.trace, "Scenarios.SampleScenario::ShortSpin");
    fprintf(stderr, "%s: ShortSpin sampled %.0f ms on %d threads, the threads' %s %.0f ms on 120\n",
            wall ? "wall" : timers ? "perf events" : "default clock", sampled, threads,
            wall ? "elapsed time" : "clocks", truth);
    ASSERT_GE(sampled, (wall ? 0.85 : 0.8) * truth);
    ASSERT_LE(sampled, (wall ? 1.15 : 1.2) * truth);
    ASSERT_GE(threads, wall ? 110 : 80);
    return 0;
}

TEST(e2e_sample_short_threads) {
    return short_threads(NULL, 0);
}

TEST(e2e_sample_short_threads_perf_events) {
    return short_threads("0", 0);
}

/* Wall mode, signalled by the sampler thread (the default): every thread
 * every tick or in turn. Each signal moved the turn's start within the tick,
 * so the next slot looked at was as many places further as slots had been
 * looked at: most were skipped, some looked at twice. 29 of the 120 threads
 * had no sample, and ShortSpin read 89-90% of the threads' elapsed time
 * (102-103% now), and 4 threads of 2 s read 8.3-8.5 s (8.0 now). */
TEST(e2e_sample_short_threads_wall) {
    return short_threads(NULL, 1);
}
