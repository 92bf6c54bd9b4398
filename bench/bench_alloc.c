/* bench_alloc.c: the cost of sampled allocations (`dnprof run --alloc`) on an
 * allocation-heavy program, against the same program bare, in one run. The
 * alloc scenario allocates MB megabytes of small objects in a tight loop (the
 * worst case: nothing but allocation, several GB per CPU second, so tens of
 * thousands of samples a second), or with WORK, 100 rounds of arithmetic per
 * object too; it prints the process CPU time its loop took (CPU time, not wall:
 * the machine is shared). Three ways, interleaved, RUNS times each:
 *   bare       no agent
 *   agent      the agent with the threads family only, no sampling
 *   alloc      the same plus --alloc (AllocationSampled, a stack per sample)
 * and the medians are compared.
 * Usage: bench_alloc AGENT.so SCENARIOS.dll RUNS MB [work] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"

#include "bench_util.h"

enum { BARE, AGENT, ALLOC, WAYS };

/* Runs the scenario, returns the ms its loop took (-1 on failure). */
static const char *g_mode; /* "work" or NULL */

static double run_once(const char *dll, const char *mb, const char *agent, int way, const char *trace) {
    int fd;
    pid_t pid = bench_fork_piped(&fd);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (way != BARE) {
            bench_agent_env(agent, trace);
            setenv(DNP_ENV_EVENTS, "threads", 1);
            if (way == ALLOC)
                setenv(DNP_ENV_ALLOC, "1", 1);
        }
        execlp("dotnet", "dotnet", dll, "alloc", mb, g_mode, (char *)NULL);
        _exit(127);
    }
    return bench_child_number(fd, pid, "cpu ms=", "bench_alloc");
}


int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "work"))) {
        fprintf(stderr, "usage: bench_alloc AGENT.so SCENARIOS.dll RUNS MB [work]\n");
        return 2;
    }
    g_mode = argc == 6 ? argv[5] : NULL;
    int runs = atoi(argv[3]);
    if (runs < 1 || runs > 100)
        runs = 5;
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/bench-alloc-%d.trace", (int)getpid());
    static double t[WAYS][100];
    for (int i = 0; i < runs; i++)
        for (int w = 0; w < WAYS; w++)
            if ((t[w][i] = run_once(argv[2], argv[4], argv[1], w, trace)) < 0)
                return 1;
    static const char *const names[WAYS] = {"bare", "agent, no sampling", "agent --alloc"};
    double med[WAYS];
    printf("allocating %s MB of small objects%s, %d runs each, interleaved; process CPU ms of the loop "
           "(median, min)\n", argv[4], g_mode ? " with work" : "", runs);
    for (int w = 0; w < WAYS; w++) {
        qsort(t[w], (size_t)runs, sizeof t[w][0], bench_cmp_double);
        med[w] = t[w][runs / 2];
        printf("%-20s %9.1f ms  (min %.1f)  %.3fx bare\n", names[w], med[w], t[w][0], med[w] / med[BARE]);
    }
    printf("--alloc over the agent alone: %+.1f%%\n", 100 * (med[ALLOC] / med[AGENT] - 1));
    unlink(trace);
    return 0;
}
