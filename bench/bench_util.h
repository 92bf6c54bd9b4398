/* bench_util.h: what the benchmarks share: sorting their figures, and the
 * number a scenario program prints after a key on its stdout. */
#ifndef DNP_BENCH_UTIL_H
#define DNP_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* qsort's comparison of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reads the child's stdout from fd to its end, reaps pid, and returns the
 * number printed after key; -1 with a line naming who when the child failed
 * or never printed key. */
static inline double bench_child_number(int fd, pid_t pid, const char *key, const char *who) {
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while ((r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = 0;
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
