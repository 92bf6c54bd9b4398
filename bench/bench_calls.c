/* bench_calls.c: the cost of method enter/leave hooks (DNPROF_CALLS). Runs the
 * Scenarios program's "calls bench" workloads (CallsScenario.cs) in four
 * configurations, interleaved, RUNS times each, and prints the median of the
 * workload's own time (Stopwatch, start-up excluded):
 *   bare      no profiler
 *   agent     the agent loaded, no enter/leave hooks
 *   calls     DNPROF_CALLS=timed: every method of the program hooked, each call timed
 *   filtered  DNPROF_CALLS=timed DNPROF_INCLUDE='*::Leaf': only Leaf hooked
 *   counts    DNPROF_CALLS=counts: every method hooked, no clock
 *   sampled   DNPROF_CALLS=1: counts, and times from samples at the default rate
 * and the added cost per hooked call (an enter+leave pair): (calls - bare) /
 * hooked calls. It also measures, in this process, in every round, the floor
 * of a timed pair: two clock reads (rdtsc, and lfence;rdtsc as the hooks read
 * it), so that the ratio to the floor comes from the same rounds. Tiered compilation is off in every run (optimized code only).
 * Workloads: fib = Fib(32), 7049155 hooked calls (Leaf is never
 * called); mixed = dictionary work calling Leaf every 16 iterations, 1250001
 * hooked calls (1250000 Leaf + MixedWork), 1250000 in the filtered run.
 * With a fourth argument, another agent (an older build: BASE.so), the calls
 * and counts configurations run with it too (calls@base, counts@base: its
 * DNPROF_CALLS=1 and counts),
 * interleaved with the rest, for a comparison in one run.
 * Usage: bench_calls AGENT.so SCENARIOS.dll [RUNS [BASE.so]] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"

#include <stdint.h>
#include <time.h>
#include <x86intrin.h>

#include "bench_util.h"

static double mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per clock read, the best of 5 runs of 2M reads: plain rdtsc, or lfence;rdtsc. */
static double clock_read_ns(int fenced) {
    double best = 1e9;
    volatile uint64_t sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = mono_ns();
        for (int i = 0; i < 2000000; i++) {
            if (fenced)
                _mm_lfence();
            sink += __rdtsc();
        }
        double ns = (mono_ns() - t0) / 2e6;
        best = ns < best ? ns : best;
    }
    (void)sink;
    return best;
}

enum { BARE, AGENT, CALLS, FILTERED, COUNTS, SAMPLED, CALLS_BASE, COUNTS_BASE, NCONFIG };
static const char *const config_names[NCONFIG] = {"bare",   "agent",   "calls",      "filtered",
                                                  "counts", "sampled", "calls@base", "counts@base"};
static const char *base_agent; /* NULL: no base configurations */

/* The workload's time in ms as the program prints it ("fib 2178309 123.4 ms"). */
static double run_once(const char *agent, const char *dll, const char *what, int config) {
    int fd;
    pid_t pid = bench_fork_piped(&fd);
    if (pid < 0)
        exit(1);
    if (pid == 0) {
        /* Optimized code from the first call in every configuration: with tiered
         * compilation the workload would run partly at tier 0, for a time that
         * differs from run to run. */
        setenv("DOTNET_TieredCompilation", "0", 1);
        if (config != BARE) {
            bench_agent_env(config >= CALLS_BASE ? base_agent : agent, "/tmp/bench_calls.%p.trace");
        }
        if (config == CALLS || config == FILTERED)
            setenv(DNP_ENV_CALLS, "timed", 1);
        if (config == SAMPLED || config == CALLS_BASE)
            setenv(DNP_ENV_CALLS, "1", 1);
        if (config == COUNTS || config == COUNTS_BASE)
            setenv(DNP_ENV_CALLS, "counts", 1);
        if (config == FILTERED)
            setenv(DNP_ENV_INCLUDE, "*::Leaf", 1);
        execlp("dotnet", "dotnet", dll, "calls", "bench", what, (char *)NULL);
        _exit(127);
    }
    char out[512];
    int status = bench_child_end(fd, pid, out, sizeof out, NULL);
    char name[32];
    long long result;
    double ms;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        sscanf(out, "%31s %lld %lf ms", name, &result, &ms) != 3) {
        fprintf(stderr, "bench_calls: the %s run of '%s' failed: %s\n", config_names[config], what, out);
        exit(1);
    }
    bench_unlink_trace("bench_calls", pid);
    return ms;
}


int main(int argc, char **argv) {
    int runs = bench_runs_arg(argc, argv, 3, "bench_calls AGENT.so SCENARIOS.dll [RUNS]", 3, 5, 100);
    base_agent = argc > 4 ? argv[4] : NULL;
    int nconfig = base_agent ? NCONFIG : CALLS_BASE;
    static const struct {
        const char *what;
        double hooked, hooked_filtered;
    } workloads[] = {{"fib", 7049155, 0}, {"mixed", 1250001, 1250000}};
    /* The floor is measured in every round too, between the runs, and its
     * median taken: the machine's load changes what a clock read costs. */
    double rdtsc_all[200], fenced_all[200];
    int nfloor = 0;
    for (size_t w = 0; w < sizeof workloads / sizeof *workloads; w++) {
        double ms[NCONFIG][100];
        for (int r = 0; r < runs; r++) {
            rdtsc_all[nfloor] = clock_read_ns(0);
            fenced_all[nfloor++] = clock_read_ns(1);
            for (int c = 0; c < nconfig; c++)
                ms[c][r] = run_once(argv[1], argv[2], workloads[w].what, c);
        }
        qsort(rdtsc_all, (size_t)nfloor, sizeof(double), bench_cmp_double);
        qsort(fenced_all, (size_t)nfloor, sizeof(double), bench_cmp_double);
        double rdtsc_ns = rdtsc_all[nfloor / 2], fenced_ns = fenced_all[nfloor / 2];
        printf("clock read (median of %d rounds so far): rdtsc %.1f ns, lfence;rdtsc %.1f ns: a timed pair's "
               "floor %.1f ns (2 x rdtsc), %.1f ns (2 x lfence;rdtsc)\n",
               nfloor, rdtsc_ns, fenced_ns, 2 * rdtsc_ns, 2 * fenced_ns);
        double med[NCONFIG];
        for (int c = 0; c < nconfig; c++) {
            qsort(ms[c], (size_t)runs, sizeof(double), bench_cmp_double);
            med[c] = ms[c][runs / 2];
        }
        printf("%s (median of %d runs, workload time):\n", workloads[w].what, runs);
        for (int c = 0; c < nconfig; c++)
            printf("  %-9s %9.1f ms  x%.2f\n", config_names[c], med[c], med[c] / med[BARE]);
        double pair = (med[CALLS] - med[BARE]) * 1e6 / workloads[w].hooked;
        printf("  per hooked call (enter+leave): %.1f ns (%.0f calls), x%.2f the rdtsc floor, x%.2f the "
               "lfence;rdtsc floor\n",
               pair, workloads[w].hooked, pair / (2 * rdtsc_ns), pair / (2 * fenced_ns));
        printf("  counts only, per hooked call: %.1f ns\n",
               (med[COUNTS] - med[BARE]) * 1e6 / workloads[w].hooked);
        printf("  sampled times (--calls), per hooked call: %.1f ns (x%.2f the bare workload; counts x%.2f)\n",
               (med[SAMPLED] - med[BARE]) * 1e6 / workloads[w].hooked, med[SAMPLED] / med[BARE],
               med[COUNTS] / med[BARE]);
        if (base_agent)
            printf("  base agent, per hooked call: %.1f ns timed, %.1f ns counts only\n",
                   (med[CALLS_BASE] - med[BARE]) * 1e6 / workloads[w].hooked,
                   (med[COUNTS_BASE] - med[BARE]) * 1e6 / workloads[w].hooked);
        if (workloads[w].hooked_filtered > 0)
            printf("  filtered, per hooked call: %.1f ns (%.0f calls)\n",
                   (med[FILTERED] - med[BARE]) * 1e6 / workloads[w].hooked_filtered,
                   workloads[w].hooked_filtered);
    }
    return 0;
}
