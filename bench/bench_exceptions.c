/* bench_exceptions.c: the cost of an exception under `dnprof run --exceptions`
 * (every exception event, message, HResult and a stack snapshot) against the
 * same program without dnprof, in one run: the stories scenario's "bench" throws
 * and catches through 10 frames N times and prints its own ns per exception;
 * bare and profiled runs alternate and the medians are compared.
 * Usage: bench_exceptions AGENT.so SCENARIOS.dll RUNS N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"

#include "bench_util.h"

/* Runs the scenario, returns its ns per exception (-1 on failure). */
static double run_once(const char *dll, const char *n, const char *agent, const char *trace) {
    int fd;
    pid_t pid = bench_fork_piped(&fd);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (agent) {
            bench_agent_env(agent, trace);
            setenv(DNP_ENV_EVENTS, "exceptions,threads", 1);
            setenv(DNP_ENV_EXC_STACKS, "1", 1);
        }
        execlp("dotnet", "dotnet", dll, "stories", "bench", n, (char *)NULL);
        _exit(127);
    }
    return bench_child_number(fd, pid, "ns per exception: ", "bench_exceptions");
}


int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench_exceptions AGENT.so SCENARIOS.dll RUNS N\n");
        return 2;
    }
    int runs = atoi(argv[3]);
    if (runs < 1 || runs > 100)
        runs = 5;
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/bench-exceptions-%d.trace", (int)getpid());
    double bare[100], prof[100];
    for (int i = 0; i < runs; i++) {
        bare[i] = run_once(argv[2], argv[4], NULL, trace);
        prof[i] = run_once(argv[2], argv[4], argv[1], trace);
        if (bare[i] < 0 || prof[i] < 0)
            return 1;
    }
    qsort(bare, (size_t)runs, sizeof *bare, bench_cmp_double);
    qsort(prof, (size_t)runs, sizeof *prof, bench_cmp_double);
    double mb = bare[runs / 2], mp = prof[runs / 2];
    printf("throw/catch through 10 frames, %s per run, %d runs each, interleaved\n", argv[4], runs);
    printf("bare                median %8.0f ns per exception (min %.0f)\n", mb, bare[0]);
    printf("dnprof --exceptions median %8.0f ns per exception (min %.0f)\n", mp, prof[0]);
    printf("cost                %+.0f ns per exception, %.2fx\n", mp - mb, mp / mb);
    unlink(trace);
    return 0;
}
