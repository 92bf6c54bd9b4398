/* bench_util.h: what the benchmarks share: the clock, sorting their figures
 * and their median, a scenario child's environment and output, and the number
 * a scenario program prints after a key on its stdout. */
#ifndef DNP_BENCH_UTIL_H
#define DNP_BENCH_UTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

/* qsort's comparison of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The monotonic clock in ms. */
static inline double bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The median of v[0..n) (n >= 1), which it sorts. */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A child's user and system CPU time in ms, from wait4's rusage. */
static inline double bench_cpu_ms(const struct rusage *ru) {
    return (double)ru->ru_utime.tv_sec * 1e3 + (double)ru->ru_utime.tv_usec / 1e3 +
           (double)ru->ru_stime.tv_sec * 1e3 + (double)ru->ru_stime.tv_usec / 1e3;
}

/* In a forked child: the runtime loads the agent, which records to trace
 * (a path; "%p" stands for the pid). */
static inline void bench_agent_env(const char *agent, const char *trace) {
    setenv(DNP_ENV_ENABLE, "1", 1);
    setenv(DNP_ENV_PROFILER, DNP_CLSID_TEXT, 1);
    setenv(DNP_ENV_PROFILER_PATH, agent, 1);
    setenv(DNP_ENV_OUTPUT, trace, 1);
}

/* Forks a child whose stdout is a pipe to the parent: 0 in the child, the
 * child's pid in the parent (*fd: the pipe's read end), -1 on failure. */
static inline pid_t bench_fork_piped(int *fd) {
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        return 0;
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    *fd = p[0];
    return pid;
}

/* In a forked child: its stderr goes to /dev/null (the runtime's and the
 * agent's messages are not the benchmark's). */
static inline void bench_child_quiet(void) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
        dup2(null, 2);
}

/* Reads fd to its end (or until out, of size cap, is full), closes it, and
 * ends out with a NUL. */
static inline void bench_read_out(int fd, char *out, size_t cap) {
    size_t n = 0;
    ssize_t got;
    while (n < cap - 1 && (got = read(fd, out + n, cap - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = 0;
    close(fd);
}

/* Reads the child's stdout from fd into out (bench_read_out) and reaps pid:
 * its wait status; its CPU time in ms into *cpu_ms unless NULL. */
static inline int bench_child_end(int fd, pid_t pid, char *out, size_t cap, double *cpu_ms) {
    bench_read_out(fd, out, cap);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    wait4(pid, &status, 0, &ru);
    if (cpu_ms)
        *cpu_ms = bench_cpu_ms(&ru);
    return status;
}

/* argv[i] as a count (of runs, of cycles) from 1 to max: def when it is not
 * given or out of that range. */
static inline int bench_count_arg(int argc, char **argv, int i, int def, int max) {
    int n = argc > i ? atoi(argv[i]) : def;
    return n < 1 || n > max ? def : n;
}

/* Reads the child's stdout from fd to its end, reaps pid, and returns the
 * number printed after key; -1 with a line naming who when the child failed
 * or never printed key. */
static inline double bench_child_number(int fd, pid_t pid, const char *key, const char *who) {
    char buf[4096];
    bench_read_out(fd, buf, sizeof buf);
    int status = 0;
    waitpid(pid, &status, 0);
    const char *at = strstr(buf, key);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !at) {
        fprintf(stderr, "%s: the scenario failed (status %d)\n", who, status);
        return -1;
    }
    return atof(at + strlen(key));
}

#endif
