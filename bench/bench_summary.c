/* bench_summary.c: what the closing line of `dnprof run` costs (issue 11): the
 * whole-trace load it used (dnp_trace_load) against the one streaming pass it
 * makes now, on the same trace, each in a child of its own so that its peak
 * RSS is its own; runs alternate and the medians are printed.
 * Usage: bench_summary TRACE [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_reader.h"

#include "bench_util.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_load(const char *path, uint64_t *n) {
    dnp_trace *t = NULL;
    char err[256];
    if (dnp_trace_load(path, &t, err, sizeof err) != 0)
        return -1;
    *n = t->nevents;
    dnp_trace_free(t);
    return 0;
}

static int by_stream(const char *path, uint64_t *n) {
    dnp_trace_stream *s = NULL;
    char err[256];
    if (dnp_trace_stream_open(path, &s, err, sizeof err) != 0)
        return -1;
    dnp_trace_event e;
    uint64_t last = 0;
    int got;
    *n = 0;
    while ((got = dnp_trace_stream_next(s, &e)) > 0) {
        ++*n;
        last = e.time_ns > last ? e.time_ns : last;
    }
    dnp_trace_stream_close(s);
    return got < 0 ? -1 : 0;
}

/* Runs one way in a child: its wall seconds and peak RSS in KiB. */
static int measure(int stream, const char *path, double *secs, long *kib) {
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        uint64_t n = 0;
        double t0 = now_s();
        int rc = stream ? by_stream(path, &n) : by_load(path, &n);
        double t = now_s() - t0;
        ssize_t w = write(fd[1], &t, sizeof t);
        _exit(rc == 0 && w == sizeof t && n > 0 ? 0 : 1);
    }
    close(fd[1]);
    ssize_t r = read(fd[0], secs, sizeof *secs);
    close(fd[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) || r != sizeof *secs)
        return -1;
    *kib = ru.ru_maxrss;
    return 0;
}


int main(int argc, char **argv) {
    int runs = bench_runs_arg(argc, argv, 2, "bench_summary TRACE [RUNS]", 2, 5, 100);
    double t[2][100];
    long peak[2] = {0, 0};
    for (int i = 0; i < runs; i++)
        for (int way = 0; way < 2; way++) {
            long kib;
            if (measure(way, argv[1], &t[way][i], &kib) != 0) {
                fprintf(stderr, "bench_summary: cannot read '%s'\n", argv[1]);
                return 1;
            }
            peak[way] = kib > peak[way] ? kib : peak[way];
        }
    for (int way = 0; way < 2; way++)
        qsort(t[way], (size_t)runs, sizeof t[way][0], bench_cmp_double);
    printf("%-22s %10s %12s\n", "summary by", "median ms", "peak RSS MiB");
    printf("%-22s %10.0f %12.1f\n", "whole-trace load", t[0][runs / 2] * 1e3, peak[0] / 1024.0);
    printf("%-22s %10.0f %12.1f\n", "one streaming pass", t[1][runs / 2] * 1e3, peak[1] / 1024.0);
    return 0;
}
