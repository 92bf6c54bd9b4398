/* bench_startup.c: start-up cost of the agent. Runs a program N times bare and
 * N times with the agent loaded (default event mask), interleaved so that both
 * see the same machine, and prints the medians and their ratio.
 * Usage: bench_startup AGENT.so RUNS -- PROGRAM [ARGS...] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

#include "bench_util.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double run_once(char **argv, const char *agent, const char *trace) {
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        if (agent)
            bench_agent_env(agent, trace);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_startup: '%s' failed (status %d)\n", argv[0], status);
        exit(1);
    }
    return now_s() - t0;
}


int main(int argc, char **argv) {
    if (argc < 5 || strcmp(argv[3], "--") != 0) {
        fprintf(stderr, "usage: bench_startup AGENT.so RUNS -- PROGRAM [ARGS...]\n");
        return 2;
    }
    const char *agent = argv[1];
    int runs = atoi(argv[2]);
    if (runs < 1 || runs > 1000)
        runs = 10;
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/bench-startup-%d.trace", (int)getpid());
    double *bare = calloc((size_t)runs, sizeof *bare), *prof = calloc((size_t)runs, sizeof *prof);
    run_once(argv + 4, NULL, trace); /* warm the page cache */
    for (int i = 0; i < runs; i++) {
        bare[i] = run_once(argv + 4, NULL, trace);
        prof[i] = run_once(argv + 4, agent, trace);
    }
    qsort(bare, (size_t)runs, sizeof *bare, bench_cmp_double);
    qsort(prof, (size_t)runs, sizeof *prof, bench_cmp_double);
    double mb = bare[runs / 2], mp = prof[runs / 2];
    printf("runs: %d each, interleaved\n", runs);
    printf("bare     median %.3f s (min %.3f)\n", mb, bare[0]);
    printf("dnprof   median %.3f s (min %.3f)\n", mp, prof[0]);
    printf("ratio    %.2fx (+%.0f ms)\n", mp / mb, (mp - mb) * 1000);
    unlink(trace);
    return 0;
}
