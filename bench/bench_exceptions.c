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

/* Runs the scenario, returns its ns per exception (-1 on failure). */
static double run_once(const char *dll, const char *n, const char *agent, const char *trace) {
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        if (agent) {
            setenv(DNP_ENV_ENABLE, "1", 1);
            setenv(DNP_ENV_PROFILER, DNP_CLSID_TEXT, 1);
            setenv(DNP_ENV_PROFILER_PATH, agent, 1);
            setenv(DNP_ENV_OUTPUT, trace, 1);
            setenv(DNP_ENV_EVENTS, "exceptions,threads", 1);
            setenv(DNP_ENV_EXC_STACKS, "1", 1);
        }
        execlp("dotnet", "dotnet", dll, "stories", "bench", n, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    close(fd[0]);
    buf[len] = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    const char *at = strstr(buf, "ns per exception: ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !at) {
        fprintf(stderr, "bench_exceptions: the scenario failed (status %d)\n", status);
        return -1;
    }
    return atof(at + strlen("ns per exception: "));
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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
    qsort(bare, (size_t)runs, sizeof *bare, cmp);
    qsort(prof, (size_t)runs, sizeof *prof, cmp);
    double mb = bare[runs / 2], mp = prof[runs / 2];
    printf("throw/catch through 10 frames, %s per run, %d runs each, interleaved\n", argv[4], runs);
    printf("bare                median %8.0f ns per exception (min %.0f)\n", mb, bare[0]);
    printf("dnprof --exceptions median %8.0f ns per exception (min %.0f)\n", mp, prof[0]);
    printf("cost                %+.0f ns per exception, %.2fx\n", mp - mb, mp / mb);
    unlink(trace);
    return 0;
}
