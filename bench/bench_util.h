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

/* bench_fork_piped for a benchmark's run: exits when it cannot fork; in the
 * child, stderr goes to /dev/null (bench_child_quiet). */
static inline pid_t bench_fork_quiet(int *fd) {
    pid_t pid = bench_fork_piped(fd);
    if (pid < 0)
        exit(1);
    if (pid == 0)
        bench_child_quiet();
    return pid;
}

/* Removes the trace a child wrote to /tmp/NAME.PID.trace (bench_agent_env's
 * "/tmp/NAME.%p.trace"). */
static inline void bench_unlink_trace(const char *name, pid_t pid) {
    char trace[128];
    snprintf(trace, sizeof trace, "/tmp/%s.%d.trace", name, (int)pid);
    unlink(trace);
}

/* One run of a benchmark's child: its work time (what it printed), process
 * CPU time and wall time, in ms. */
typedef struct bench_run {
    double work_ms, cpu_ms, wall_ms;
} bench_run;

/* Ends a run started at t0 (bench_now_ms) by bench_fork_quiet: reads the
 * child's stdout into out (bench_child_end), reaps it, sets res's CPU and wall
 * time (work_ms 0, for the caller to read from out) and removes what it wrote
 * (/tmp/NAME.PID.trace, /tmp/NAME.nettrace); the child's wait status. */
static inline int bench_run_end(int fd, pid_t pid, double t0, const char *name, char *out, size_t cap,
                                bench_run *res) {
    int status = bench_child_end(fd, pid, out, cap, &res->cpu_ms);
    res->wall_ms = bench_now_ms() - t0;
    res->work_ms = 0;
    bench_unlink_trace(name, pid);
    char nettrace[128];
    snprintf(nettrace, sizeof nettrace, "/tmp/%s.nettrace", name);
    unlink(nettrace);
    return status;
}

/* Keeps a run's work and CPU time as configuration c's next figures. */
static inline void bench_keep(double (*work)[50], double (*cpu)[50], int *ok, int c, const bench_run *res) {
    work[c][ok[c]] = res->work_ms;
    cpu[c][ok[c]++] = res->cpu_ms;
}

/* Prints one row per configuration that ran: the medians of its work time
 * and process CPU time (ok[c] runs each, at most 50), each beside its change
 * from configuration 0, the unprofiled run; width: the names' column. */
static inline void bench_print_medians(int nconfig, const char *const *names, double (*work)[50],
                                       double (*cpu)[50], const int *ok, int width) {
    double base = ok[0] ? bench_median(work[0], ok[0]) : 0;
    double base_cpu = ok[0] ? bench_median(cpu[0], ok[0]) : 0;
    for (int c = 0; c < nconfig; c++) {
        if (!ok[c])
            continue;
        double m = bench_median(work[c], ok[c]), mc = bench_median(cpu[c], ok[c]);
        printf("  %-*s %9.1f ms %+6.1f%%   cpu %9.1f ms %+6.1f%%\n", width, names[c], m,
               base ? 100 * (m / base - 1) : 0, mc, base_cpu ? 100 * (mc / base_cpu - 1) : 0);
    }
}

/* argv[i] as a count (of runs, of cycles) from 1 to max: def when it is not
 * given or out of that range. */
static inline int bench_count_arg(int argc, char **argv, int i, int def, int max) {
    int n = argc > i ? atoi(argv[i]) : def;
    return n < 1 || n > max ? def : n;
}

/* A benchmark's arguments: argv[i] as its count of runs (bench_count_arg),
 * or its usage printed and exit status 2 when it has fewer than need arguments. */
static inline int bench_runs_arg(int argc, char **argv, int need, const char *usage, int i, int def, int max) {
    if (argc < need) {
        fprintf(stderr, "usage: %s\n", usage);
        exit(2);
    }
    return bench_count_arg(argc, argv, i, def, max);
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
