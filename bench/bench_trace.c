/* bench_trace.c: the cost of a traced call (DNPROF_TRACE, dnprof run/attach
 * --trace: docs/calls.md#tracing-chosen-methods-rejit). Runs the Scenarios
 * program's "traced DIR N bench" (TracedScenario.cs), which warms up and
 * prints the ns per call of TracedTarget::Timed (a method of about 1 ns: the
 * best of 5 rounds of 2,000,000 calls, tier 1), in these configurations,
 * interleaved, RUNS times each, and prints the medians:
 *   bare     no profiler
 *   agent    the agent loaded, recording the runtime events only
 *   traced   DNPROF_TRACE=Scenarios.TracedTarget::Timed: its entry and exit probes
 *   counts   DNPROF_CALLS=counts DNPROF_INCLUDE=...::Timed: the enter/leave hooks, no clock
 *   timed    DNPROF_CALLS=timed, the same method: the hooks and a clock pair
 * and each one's added cost per call (its figure less bare's). The go and
 * detached files of the scenario are made first: it runs straight through.
 * Usage: bench_trace AGENT.so SCENARIOS.dll [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"

enum { BARE, AGENT, TRACED, COUNTS, TIMED, NCONFIG };
static const char *const config_names[NCONFIG] = {"bare", "agent", "traced", "counts", "timed"};
#define METHOD "Scenarios.TracedTarget::Timed"

static double run_once(const char *agent, const char *dll, const char *dir, int config) {
    int fd;
    pid_t pid = bench_fork_quiet(&fd);
    if (pid == 0) {
        if (config != BARE) {
            bench_agent_env(agent, "/tmp/bench_trace.%p.trace");
            setenv(DNP_ENV_EVENTS, "runtime", 1);
        }
        if (config == TRACED)
            setenv(DNP_ENV_TRACE, METHOD, 1);
        if (config == COUNTS || config == TIMED) {
            setenv(DNP_ENV_CALLS, config == COUNTS ? "counts" : "timed", 1);
            setenv(DNP_ENV_INCLUDE, METHOD, 1);
        }
        execlp("dotnet", "dotnet", dll, "traced", dir, "1", "bench", (char *)NULL);
        _exit(127);
    }
    double ns = bench_child_number(fd, pid, "before ", config_names[config]);
    bench_unlink_trace("bench_trace", pid);
    if (ns < 0)
        exit(1);
    return ns;
}

int main(int argc, char **argv) {
    int runs = bench_runs_arg(argc, argv, 3, "bench_trace AGENT.so SCENARIOS.dll [RUNS]", 3, 5, 100);
    char dir[] = "/tmp/bench_trace.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_trace: mkdtemp");
        return 1;
    }
    char path[64];
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, k ? "detached" : "go");
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
    }
    double ns[NCONFIG][100];
    for (int r = 0; r < runs; r++)
        for (int c = 0; c < NCONFIG; c++)
            ns[c][r] = run_once(argv[1], argv[2], dir, c);
    double med[NCONFIG];
    for (int c = 0; c < NCONFIG; c++)
        med[c] = bench_median(ns[c], runs);
    printf("ns per call of %s, median of %d interleaved runs (each the best of 5 rounds of 2,000,000 calls)\n",
           METHOD, runs);
    for (int c = 0; c < NCONFIG; c++)
        printf("  %-7s %7.2f ns per call  (%+.2f ns over bare)\n", config_names[c], med[c], med[c] - med[BARE]);
    printf("each run:\n");
    for (int c = 0; c < NCONFIG; c++) {
        printf("  %-7s", config_names[c]);
        for (int r = 0; r < runs; r++)
            printf(" %.2f", ns[c][r]);
        printf("\n");
    }
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, k ? "detached" : "go");
        unlink(path);
    }
    rmdir(dir);
    return 0;
}
