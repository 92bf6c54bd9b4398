/* test_sample_wall.c: wall-clock sampling (--sample=wall) against the
 * program's own clock, on more threads than it signals per tick; and the
 * frames an OSR method keeps off the frame-pointer chain, found again. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "settings.h"
#include "test.h"

#define THREADS "48"
#define SECONDS "2"
#define TOTAL_TOLERANCE 0.10 /* of the threads' own time in each method */
#define SHARE_TOLERANCE 3.0  /* points */

/* One run of `sample waitsplit` under --sample=wall with wall_threads (NULL:
 * the default) and timers (DNPROF_SAMPLE_TIMERS, NULL: the default); checks
 * the time under each method against what the threads timed themselves.
 * Returns 0, or -1 having said why. */
static int wall_run_of(e2e_run *r, const char *scenario, const char *wall_threads, const char *timers,
                      const char *what) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dll)
        return -1;
    const char *args[] = {"run", "--quiet", "--sample=wall", "-o", r->trace, "--", e2e_dotnet(), dll,
                          "sample", scenario, THREADS, SECONDS, NULL};
    if (wall_threads)
        setenv(DNP_ENV_SAMPLE_WALL_THREADS, wall_threads, 1);
    if (timers)
        setenv(DNP_ENV_SAMPLE_TIMERS, timers, 1);
    int ran = e2e_dnprof(r, args);
    unsetenv(DNP_ENV_SAMPLE_WALL_THREADS);
    unsetenv(DNP_ENV_SAMPLE_TIMERS);
    char *out = ran == 0 && r->status == 0 ? e2e_read_file(r->out, NULL) : NULL;
    double truth[2] = {0, 0};
    const char *line = out ? strstr(out, "waitsplit three ") : NULL;
    if (!line || sscanf(line, "waitsplit three %lf one %lf", &truth[0], &truth[1]) != 2) {
        fprintf(stderr, "%s: the program did not say its waits (exit %d)\n", what, r->status);
        e2e_show_file("dnprof run said", r->err);
        free(out);
        return -1;
    }
    free(out);
    char *text = e2e_folded_of(r);
    if (!text)
        return -1;
    static const char *const method[2] = {"Scenarios.SampleScenario::WaitThree", "Scenarios.SampleScenario::WaitOne"};
    double got[2];
    for (int m = 0; m < 2; m++)
        got[m] = e2e_folded_weight(text, method[m]) / 1e6; /* ns to ms */
    free(text);
    double share = got[0] + got[1] > 0 ? 100 * got[0] / (got[0] + got[1]) : 0;
    double want = 100 * truth[0] / (truth[0] + truth[1]);
    fprintf(stderr, "%s: WaitThree %.0f ms (the threads: %.0f), WaitOne %.0f ms (%.0f), WaitThree's share %.1f%% (%.1f%%)\n",
            what, got[0], truth[0], got[1], truth[1], share, want);
    int rc = 0;
    for (int m = 0; m < 2; m++)
        if (fabs(got[m] - truth[m]) > TOTAL_TOLERANCE * truth[m]) {
            fprintf(stderr, "%s: %s has %.0f ms of wall time, the threads timed %.0f ms (+- %.0f%%)\n", what,
                    method[m], got[m], truth[m], 100 * TOTAL_TOLERANCE);
            rc = -1;
        }
    if (fabs(share - want) > SHARE_TOLERANCE) {
        fprintf(stderr, "%s: WaitThree's share %.1f%%, the truth %.1f%% +- %.0f\n", what, share, want, SHARE_TOLERANCE);
        rc = -1;
    }
    return rc;
}

static int wall_run(e2e_run *r, const char *wall_threads, const char *timers, const char *what) {
    return wall_run_of(r, "waitsplit", wall_threads, timers, what);
}

/* How many threads the trace says were signalled by a timer of their own
 * (*timed) and by the sampler thread (*sent): 0, or -1 without that note. */
static int wall_signallers(const char *trace, unsigned *timed, unsigned *sent) {
    dnp_trace *t = e2e_load(trace);
    const char *n = e2e_note(t, " threads signalled by a timer of their own, ");
    int found = n && sscanf(n, "wall sampling: %u threads signalled by a timer of their own, %u by the sampler thread",
                            timed, sent) == 2;
    if (t)
        dnp_trace_free(t);
    return found ? 0 : -1;
}

/* How many samples the trace says were counted again without a signal (a
 * thread still waiting where its last sample found it); -1 without the note. */
static long wall_again(const char *trace) {
    dnp_trace *t = e2e_load(trace);
    const char *n = e2e_note(t, " samples of threads still waiting");
    unsigned long v;
    long again = n && sscanf(n, "wall sampling: %lu samples of threads still waiting", &v) == 1 ? (long)v : -1;
    if (t)
        dnp_trace_free(t);
    return again;
}

/* How many samples the trace says were walked from a copy of a waiting
 * thread's stack without a signal; -1 without the note. */
static long wall_remote(const char *trace) {
    dnp_trace *t = e2e_load(trace);
    const char *n = e2e_note(t, " of threads found waiting elsewhere");
    const char *at = n ? strstr(n, "without a signal, and ") : NULL;
    long v = at ? strtol(at + strlen("without a signal, and "), NULL, 10) : -1;
    if (t)
        dnp_trace_free(t);
    return v;
}

/* 48 threads block for 2 s, 36 in WaitThree and 12 in WaitOne; with the
 * runtime's own, over 50 threads. By default 16 are signalled per tick, in
 * turn, so each is sampled about every 3.5 ticks and its samples weigh the
 * periods since its last: each method's wall time is still the threads' own
 * (each timed its wait) within 10%, the split within 3 points, and the trace
 * says how many threads each tick signalled. The sampler thread signals them,
 * and a thread still blocked where its last sample found it is counted again
 * without a signal: most samples here. With DNPROF_SAMPLE_TIMERS=0 every due
 * thread is signalled, and with 1 each by a timer of its own: the same truth.
 * With 0 threads a tick, every thread every tick: the same truth. */
TEST(e2e_sample_wall_many_threads) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_wall_many_threads"), 0);
    ASSERT_EQ(wall_run(&r, NULL, NULL, "16 threads a tick (the default)"), 0);
    unsigned timed = 0, sent = 0;
    ASSERT_EQ(wall_signallers(r.trace, &timed, &sent), 0);
    ASSERT_EQ(timed, 0);
    ASSERT_GE(sent, 48); /* the program's threads at least, by the sampler thread */
    long again = wall_again(r.trace);
    fprintf(stderr, "samples counted again without a signal: %ld\n", again);
    /* 2 s at 100 Hz, each thread looked at every ~3.5 ticks: ~55 looks each, all but its first two
     * (about 3,100 here); at least 10 each, for a machine so loaded that the sampler thread misses ticks */
    ASSERT_GE(again, 48 * 10);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT(t);
    int turns = e2e_note(t, "16 signalled per tick in turn") != NULL;
    const char *n = e2e_note(t, " thread scans, "), *at = n ? strstr(n, " thread scans, ") : NULL;
    unsigned long lookups = at && strncmp(n, "sampler thread: ", 16) == 0 ? strtoul(at + 15, NULL, 10) : 1000;
    dnp_trace_free(t);
    ASSERT(turns);
    /* The 48 threads are managed: each told its stack's bounds as it started
     * (ThreadAssignedToOSThread), so /proc/self/maps was read only for the
     * runtime's own threads (41 reads before, one per new batch of threads);
     * none where the kernel answers PROCMAP_QUERY (Linux 6.11+). */
    fprintf(stderr, "reads of /proc/self/maps: %lu\n", lookups);
    ASSERT_LT(lookups, 16);
    ASSERT_EQ(wall_run(&r, NULL, "0", "16 threads a tick, every one signalled"), 0);
    ASSERT_EQ(wall_signallers(r.trace, &timed, &sent), 0);
    ASSERT_EQ(timed, 0);
    ASSERT_GE(sent, 48);
    ASSERT_EQ(wall_again(r.trace), -1);
    ASSERT_EQ(wall_run(&r, NULL, "1", "16 threads a tick, each by a timer of its own"), 0);
    ASSERT_EQ(wall_signallers(r.trace, &timed, &sent), 0);
    ASSERT_GE(timed, 48);
    ASSERT_EQ(sent, 0);
    ASSERT_EQ(wall_run(&r, "0", NULL, "every thread every tick"), 0);
    return 0;
}

/* Every thread waits 300 ms in WaitThree, then goes from WaitThree (15-45 ms)
 * to WaitOne (5-15 ms) and back, both blocked in the same system call at the
 * same stack depth: the stack pointer
 * and the PC the kernel shows are the same in both, only the return address
 * between them differs. A thread counted again without a signal must be
 * where its last sample found it, so the split stays the threads' own. Every
 * thread every tick (DNPROF_SAMPLE_WALL_THREADS=0): 16 a tick visited each
 * thread every 30 ms, twice a WaitOne's length, and WaitOne's total moved by
 * 5.5% (sd) from run to run, past the 10% one run in eight; now 2-3%, the
 * split within a point, and about 1,850 samples counted again. */
TEST(e2e_sample_wall_waits_alternate) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_wall_waits_alternate"), 0);
    ASSERT_EQ(wall_run_of(&r, "waitalt", "0", NULL, "alternating waits"), 0);
    fprintf(stderr, "samples counted again without a signal: %ld\n", wall_again(r.trace));
    ASSERT_GE(wall_again(r.trace), 300); /* the looks found threads still waiting: about 1,850 here */
    /* Every thread of this program but a moment's start blocks: the report's
     * header says [waiting] is most of the time and where to read it by stack. */
    const char *report[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, report), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    const char *note = text ? strstr(text, "note: wall clock: [waiting] is the threads' time blocked, ") : NULL;
    double blocked = 0;
    int ok = note && sscanf(note, "note: wall clock: [waiting] is the threads' time blocked, %lf%%", &blocked) == 1 &&
             strstr(note, "dnprof report --waits");
    fprintf(stderr, "the report's blocked share: %.1f%%\n", blocked);
    if (!ok)
        e2e_show_file("dnprof report", r.out);
    free(text);
    ASSERT(ok);
    ASSERT_GE(blocked, 90.0);
    return 0;
}

/* The runtime's count of contended acquisitions in a program that one wall
 * sample wakes, or not, where it waits. */
static long barge_contentions(e2e_run *r, int wall) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    if (!dll || !bin)
        return -1;
    const char *sampled[] = {bin, "run", "--quiet", "--sample=wall", "-o", r->trace, "--", e2e_dotnet(), dll,
                             "locks", "barge", "6", "60", "5000", NULL};
    const char *const *argv = wall ? sampled : sampled + 7; /* the program alone */
    if (e2e_exec(r, (char *const *)argv, NULL) != 0 || r->status != 0)
        return -1;
    return (long)e2e_said_number(r, "barge contentions=");
}

/* A signal wakes a thread that waits for a monitor, and the runtime's wait
 * goes round its loop again: one more contended acquisition by the runtime's
 * count (Monitor.LockContentionCount, ContentionStart), and a fairer
 * hand-off. Six threads take one lock in a row with a 5 ms sleep held: the
 * one that lets it go takes it again first, the others wait up to a second,
 * about 20 acquisitions block. Wall mode signals no such waiter: each visit
 * finds it in the same frames (the same return addresses at the same places
 * above its stack pointer; its locals, a tick count, change) and counts it
 * again, or, on x86-64, walks it where it waits from a copy of its stack.
 * Signalling each waiter at every visit gave 159-220 contended acquisitions
 * at 100 Hz; once per wait 31-53 (94 once beside other tests: it runs alone);
 * never, 22-23 alone and 25-44 beside a busy program, the bare program's
 * 17-24. */
TEST(e2e_sample_wall_lock_waiters) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_wall_lock_waiters"), 0);
    long bare = barge_contentions(&r, 0), sampled = barge_contentions(&r, 1);
    fprintf(stderr, "the runtime's contended acquisitions: %ld alone, %ld under --sample=wall\n", bare, sampled);
    ASSERT_GT(bare, 0);
    ASSERT_GT(sampled, 0);
    long remote = wall_remote(r.trace);
    fprintf(stderr, "samples walked without a signal: %ld\n", remote);
#if defined(__x86_64__)
    ASSERT_LE(sampled, 2 * bare + 20); /* every visit signalled: 7 to 10 times bare; once per wait: 2 to 3 */
    ASSERT_GE(remote, 10);             /* 37-51: the first sample of a wait, most of them */
#else
    ASSERT_LE(sampled, 4 * bare + 20);
#endif
    ASSERT_GE(wall_again(r.trace), 100); /* the waiters counted again without a signal */
    return 0;
}

/* Four threads spin 100 ms in OsrWaiter's loop (the runtime replaces the
 * loop's Tier0 code by an OSR method), then sleep, still in that loop, 30 and
 * 10 ms in turn from two call sites: each sleep a wait in a new place, most
 * walked from a copy of the thread's stack (x86-64). An OSR method's frame
 * saves the frame pointer of the Tier0 frame's caller, so the chain skips the
 * Tier0 frame and with it the return address into OsrCaller; the walk looks
 * for it between the two frames. The walk from a copy did not: those samples
 * had OsrWaiter under OsrWaiter and no OsrCaller. */
TEST(e2e_sample_wall_osr_waiters) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_wall_osr_waiters"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll != NULL);
    const char *args[] = {"run", "--quiet", "--sample=wall", "-o", r.trace, "--", e2e_dotnet(), dll,
                          "sample", "osrwait", "4", "25", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    double truth = e2e_said_number(&r, "osrwait ms=");
    ASSERT_GT(truth, 0);
    char *text = e2e_folded_of(&r);
    ASSERT(text != NULL);
    double all = e2e_folded_weight(text, "Scenarios.SampleScenario::OsrWaiter") / 1e6;
    double whole =
        e2e_folded_weight(text, "Scenarios.SampleScenario::OsrCaller;Scenarios.SampleScenario::OsrWaiter") / 1e6;
    double twice =
        e2e_folded_weight(text, "Scenarios.SampleScenario::OsrWaiter;Scenarios.SampleScenario::OsrWaiter") / 1e6;
    free(text);
    long remote = wall_remote(r.trace);
    fprintf(stderr, "OsrWaiter %.0f ms (the threads timed %.0f), under OsrCaller %.0f ms, under itself %.0f ms; "
                    "%ld samples walked from a copy\n",
            all, truth, whole, twice, remote);
    ASSERT_GE(all, 0.8 * truth);
    ASSERT_LE(all, 1.2 * truth);
    ASSERT_GE(whole, 0.97 * all);
    ASSERT_LE(twice, 0.02 * all);
#if defined(__x86_64__)
    ASSERT_GE(remote, 20);
#endif
    return 0;
}

/* In a folded export, the weight (ms) of the stacks with a frame holding
 * burn (not under the JIT: an OSR compile's own frames), of those where the
 * frame under its first holds caller, and of those where the frame above it
 * holds burn again. */
static void osr_weights(const char *text, const char *burn, const char *caller, double *all, double *under,
                        double *twice) {
    *all = *under = *twice = 0;
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n'), *sp = NULL;
        size_t len = end ? (size_t)(end - l) : strlen(l);
        for (const char *q = l + len; q > l; q--)
            if (q[-1] == ' ') {
                sp = q - 1;
                break;
            }
        char line[8192];
        snprintf(line, sizeof line, "%.*s", (int)(sp ? sp - l : 0), l);
        double w = sp ? strtod(sp + 1, NULL) / 1e6 : 0;
        l = end ? end + 1 : NULL;
        if (!strstr(line, burn) || strstr(line, "[JIT]"))
            continue;
        *all += w;
        char *prev = NULL;
        for (char *f = strtok(line, ";"); f; prev = f, f = strtok(NULL, ";")) {
            if (!strstr(f, burn))
                continue;
            *under += prev && strstr(prev, caller) ? w : 0;
            char *then = strtok(NULL, ";");
            *twice += then && strstr(then, burn) ? w : 0;
            break;
        }
    }
}

/* `sample SCENARIO ARG` recorded at 1 kHz in mode (--sample or
 * --sample=wall): at least min_ms of burn's samples, all but slack of them
 * (a share) with caller under it and not under itself. */
static int osr_case(const char *test, const char *mode, const char *scenario, const char *arg, const char *burn,
                    const char *caller, double min_ms, double slack) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, test), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll != NULL);
    const char *args[] = {"run", "--quiet", mode, "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(), dll,
                          "sample", scenario, arg, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_folded_of(&r);
    ASSERT(text != NULL);
    double all, under, twice;
    osr_weights(text, burn, caller, &all, &under, &twice);
    free(text);
    fprintf(stderr, "%s %.0f ms, under %s %.0f ms, under itself %.0f ms\n", burn, all, caller, under, twice);
    ASSERT_GT(all, min_ms);
    ASSERT_GE(under, (1 - slack) * all);
    ASSERT_LE(twice, slack * all);
    return 0;
}

/* Methods that go from Tier0 through OSR to Tier1 while they run (OsrBurn<T>
 * for 12 types T) called from async methods on pool threads: an OSR frame
 * keeps the Tier0 frame's return address off the chain, and the handler looks
 * for it between the frames. A Tier0 frame's copy of the caller's frame
 * pointer came first there, with no address after it, and ended the look: the
 * sample read OsrBurn under OsrBurn, its caller missing (0.8-1.5% of
 * OsrBurn's wall time in such runs, 13% in one of a smaller program). */
TEST(e2e_sample_wall_osr_async) {
    return osr_case("sample_wall_osr_async", "--sample=wall", "osrasync", "40", "::OsrBurn<", "::OsrFetch", 1000,
                    0.005);
}

/* A loop that runs as an OSR method for the whole run (OsrDeepLoop, which
 * never returns to be compiled again, as a program's main loop) under a deep
 * stack of 40 frames of 32 words each: the look for the frame its OSR frame
 * keeps off the chain, bounded by 512 words a sample, was spent on the frames
 * below it, and 92% of its samples read OsrDeepLoop under itself, its caller
 * missing. A patchpoint call found once is looked above on every walk. */
TEST(e2e_sample_osr_deep_stack) {
    return osr_case("sample_osr_deep_stack", "--sample", "osrdeep", "1.5", "::OsrDeepLoop", "::OsrDeepCaller", 500,
                    0.02);
}

/* A thread that waits in CoreLib's Wait() wrappers, which keep no frame of
 * their own, so the frame-pointer chain skips their caller until the sampler
 * thread has learned where its return address lies: the waits' samples are
 * counted again while the thread waits, without a signal, and the stack
 * counted again must be one walked after that was learned. Before, a stack
 * walked before it was (a first sample still in the ring) was counted for the
 * whole wait: the caller missing, the wrapper under Main. */
TEST(e2e_sample_wall_frameless_waiter) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_wall_frameless_waiter"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll != NULL);
    const char *args[] = {"run", "--quiet", "--sample=wall", "-o", r.trace, "--", e2e_dotnet(), dll,
                          "sample", "framelesswait", "500", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    double truth[4] = {0};
    const char *line = out ? strstr(out, "framelesswait ") : NULL;
    int got = line ? sscanf(line, "framelesswait task %lf event %lf semaphore %lf join %lf", &truth[0], &truth[1],
                            &truth[2], &truth[3])
                   : 0;
    free(out);
    ASSERT_EQ(got, 4);
    char *text = e2e_folded_of(&r);
    ASSERT(text != NULL);
    /* each caller, and the wrapper's frame with the overload it calls (the same name) */
    static const char *const callers[4] = {"WaitsOnTask", "WaitsOnEvent", "WaitsOnSemaphore", "WaitsOnThread"};
    static const char *const waits[4] = {
        "System.Threading.Tasks.Task::Wait;System.Threading.Tasks.Task::Wait",
        "System.Threading.ManualResetEventSlim::Wait;System.Threading.ManualResetEventSlim::Wait",
        "System.Threading.SemaphoreSlim::Wait;System.Threading.SemaphoreSlim::WaitCore",
        "System.Threading.Thread::Join;System.Threading.Thread::Join"};
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        char under[256];
        snprintf(under, sizeof under, "Scenarios.SampleScenario::%s;%s", callers[i], waits[i]);
        double all = e2e_folded_weight(text, waits[i]) / 1e6, whole = e2e_folded_weight(text, under) / 1e6;
        fprintf(stderr, "%s: %.0f ms (the program timed %.0f), under %s %.0f ms\n", waits[i], all, truth[i], callers[i],
                whole);
        ok &= all >= 0.8 * truth[i] && all <= 1.2 * truth[i] + 20 && whole >= 0.85 * all;
    }
    free(text);
    ASSERT(ok);
    return 0;
}

/* The weight (ns) of a folded export's stacks whose text holds part, and
 * also and_part unless NULL. */
static double folded_weight_with(const char *text, const char *part, const char *and_part) {
    double sum = 0;
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        const char *sp = memrchr(l, ' ', len);
        char line[8192];
        snprintf(line, sizeof line, "%.*s", (int)(sp ? sp - l : 0), l);
        if (sp && strstr(line, part) && (!and_part || strstr(line, and_part)))
            sum += strtod(sp + 1, NULL);
        l = end ? end + 1 : NULL;
    }
    return sum;
}

/* A thread computes (PauseVictim) while the main thread forces a blocking
 * full collection every 15 ms: about a quarter of the time, the collection
 * holds the victim where it ran. The runtime stops a thread in managed code
 * by a signal, and waits in that signal's handler: the walk ended at the
 * kernel's signal frame ("[unwinding stopped]" under the handler's frames,
 * 29% of the victim's wall time missing from under PauseVictim) and, walked
 * through it, read as a wait of the victim's own. Now the victim's time under
 * PauseVictim is the run's wall time within 10%, its time under
 * "PauseVictim > [GC pause]" the pauses' total (GC.GetTotalPauseDuration)
 * within -40% / +20%, and report --waits counts that apart from the blocked
 * time. A third thread wakes just before each collection and is back in a
 * wait of its own, in another place, when the collection starts: a sample
 * there is held until the thread's next one, and counts as [GC pause] only if
 * the thread has moved since (769 ms of [GC pause] for 719 ms of pauses
 * before; now 0-3 ms). A fourth waits in libc's read through each collection
 * and has moved by its next sample: a wait in another library's code under
 * its managed frame is its own, never held (1,031 ms of [GC pause] for 1,056
 * ms of pauses before; now none). Also arm64 under qemu-user (ctest -L arm64),
 * whose trampoline is in no library: before the handler learned it, the
 * victim's walks ended at the runtime's handler there (docs/sampling.md); the
 * run 3 times longer under emulation (DNPROF_E2E_WORK_SCALE), for as many
 * collections as natively. */
TEST(e2e_sample_wall_gc_pause) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_sample_wall_gc_pause"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll != NULL);
    char secs[32];
    const char *args[] = {"run", "--quiet", "--sample=wall", "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(), dll,
                          "sample", "gcpause", e2e_work_seconds("3", secs, sizeof secs), NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    double pause_ms = 0, wall_ms = 0;
    int gcs = 0;
    const char *line = out ? strstr(out, "gcpause ") : NULL;
    int said = line && sscanf(line, "gcpause pause_ms=%lf wall_ms=%lf gcs=%d", &pause_ms, &wall_ms, &gcs) == 3;
    free(out);
    ASSERT(said);
    char *text = e2e_folded_of(&r);
    ASSERT(text != NULL);
    double victim = e2e_folded_weight(text, "Scenarios.SampleScenario::PauseVictim") / 1e6;
    double paused = folded_weight_with(text, "Scenarios.SampleScenario::PauseVictim;[GC pause]", NULL) / 1e6;
    double stopped = folded_weight_with(text, "[unwinding stopped]", NULL) / 1e6;
    double waiter = e2e_folded_weight(text, "Scenarios.SampleScenario::PauseWaiter") / 1e6;
    double waiter_paused = folded_weight_with(text, "Scenarios.SampleScenario::PauseWaiter;", ";[GC pause]") / 1e6;
    double piper_paused = folded_weight_with(text, "Scenarios.SampleScenario::PipeWaiter;", ";[GC pause]") / 1e6;
    free(text);
    fprintf(stderr, "e2e: %d collections, %.0f ms paused of %.0f ms; PauseVictim %.0f ms, [GC pause] under it %.0f ms; "
            "PauseWaiter %.0f ms, [GC pause] under it %.0f ms; PipeWaiter's [GC pause] %.0f ms; [unwinding stopped] %.0f "
            "ms in all\n", gcs, pause_ms, wall_ms, victim, paused, waiter, waiter_paused, piper_paused, stopped);
    ASSERT_GT(pause_ms, 0.1 * wall_ms); /* the program paused as it means to */
    ASSERT_LE(fabs(victim - wall_ms), 0.10 * wall_ms);
    /* at most a fifth over; up to 40% under on a loaded machine, where the victim is often preempted,
     * not running, as a collection starts, and its sample after finds it running its own code
     * (-16% and -23% beside another sampling test; -8% to +8% alone) */
    ASSERT_GE(paused, 0.60 * pause_ms);
    ASSERT_LE(paused, 1.20 * pause_ms);
    ASSERT_LE(fabs(waiter - wall_ms), 0.10 * wall_ms);
    ASSERT_LE(waiter_paused, 0.25 * pause_ms);
    ASSERT_LE(piper_paused, 0.25 * pause_ms);
    const char *rargs[] = {"report", "--waits", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rargs), 0);
    ASSERT_STATUS(&r, 0);
    char *json = e2e_read_file(r.out, NULL);
    const char *g = json ? strstr(json, "\"gcStoppedNs\":") : NULL;
    double gc_stopped = g ? strtod(g + strlen("\"gcStoppedNs\":"), NULL) / 1e6 : -1;
    free(json);
    ASSERT_GE(gc_stopped, paused);
    const char *targs[] = {"report", "--waits", r.trace, NULL}; /* and the page says it apart from blocked time */
    ASSERT_EQ(e2e_dnprof(&r, targs), 0);
    char *page = e2e_read_file(r.out, NULL);
    int apart = page && strstr(page, "  blocked (wall samples) ") && strstr(page, "  stopped by collections ") &&
                !strstr(page, "blocked threads by stack: not recorded");
    if (!apart)
        e2e_show_file("dnprof report --waits", r.out);
    free(page);
    ASSERT(apart);
    return 0;
}
