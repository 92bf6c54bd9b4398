/* bench_print.c: peak memory and time of `dnprof print`, `print --exceptions`
 * and `report --exceptions` on a trace, streamed and loaded whole
 * (DNPROF_NO_STREAM=1), output to /dev/null (issue 11: they streamed no more
 * than `report` did, and took ~100 bytes per event).
 * Usage: bench_print TRACE [DNPROF]   (DNPROF: the dnprof to run, e.g. an
 * older build, for before/after; default the one built with this bench). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef DNPROF_BIN
#define DNPROF_BIN "dnprof"
#endif

/* Runs `bin args trace > /dev/null`; its wall time and peak RSS (KiB). */
static int measure(const char *bin, const char *args, const char *trace, int whole, double *secs, long *kib) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid == 0) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec '%s' %s '%s' > /dev/null", bin, args, trace);
        if (whole)
            setenv("DNPROF_NO_STREAM", "1", 1);
        else
            unsetenv("DNPROF_NO_STREAM");
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    *secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    *kib = ru.ru_maxrss;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_print TRACE [DNPROF]\n");
        return 2;
    }
    const char *trace = argv[1], *bin = argc > 2 ? argv[2] : DNPROF_BIN;
    struct stat st;
    if (stat(trace, &st) != 0) {
        fprintf(stderr, "bench_print: cannot read '%s'\n", trace);
        return 1;
    }
    printf("trace %s: %.1f MiB; dnprof %s\n\n", trace, (double)st.st_size / (1 << 20), bin);
    printf("| command | streamed | loaded whole (DNPROF_NO_STREAM=1) |\n|---|---|---|\n");
    static const char *const cmds[] = {"print", "print --exceptions", "report --exceptions"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        double s1 = 0, s2 = 0;
        long k1 = 0, k2 = 0;
        int r1 = measure(bin, cmds[i], trace, 0, &s1, &k1), r2 = measure(bin, cmds[i], trace, 1, &s2, &k2);
        printf("| `%s` | %s%.2f s, %.1f MiB | %s%.2f s, %.1f MiB |\n", cmds[i], r1 ? "(failed) " : "", s1,
               (double)k1 / 1024, r2 ? "(failed) " : "", s2, (double)k2 / 1024);
        fflush(stdout);
    }
    return 0;
}
