/* bench_attach.c: how long attach and detach take, measured from outside as a
 * person sees them: from starting `dnprof attach PID` to the first event the
 * agent records (the trace's own clock), and from starting `dnprof detach PID`
 * to the moment libdnprof.so is gone from the process's memory map.
 *
 *   bench_attach DNPROF SCENARIOS_DLL [CYCLES]
 *
 * One `dotnet Scenarios.dll attach` process is attached to and detached from
 * CYCLES times (default 10). Prints min / median / max of both. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_reader.h"

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int maps_has_agent(pid_t pid) {
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int has = 0;
    while (!has && fgets(line, sizeof line, f))
        has = strstr(line, "/libdnprof.so") != NULL;
    fclose(f);
    return has;
}

static pid_t spawn(char *const argv[], int in_fd, int out_fd) {
    pid_t pid = fork();
    if (pid == 0) {
        if (in_fd >= 0)
            dup2(in_fd, 0);
        if (out_fd >= 0)
            dup2(out_fd, 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, uint64_t *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    printf("%-34s min %7.1f ms   median %7.1f ms   max %7.1f ms   (%d runs)\n", what, v[0] / 1e6,
           v[n / 2] / 1e6, v[n - 1] / 1e6, n);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_attach DNPROF SCENARIOS_DLL [CYCLES]\n");
        return 2;
    }
    const char *dnprof = argv[1], *dll = argv[2];
    int cycles = argc > 3 ? atoi(argv[3]) : 10;
    if (cycles < 1 || cycles > 1000)
        cycles = 10;
    char dir[] = "/tmp/bench_attach.XXXXXX";
    if (!mkdtemp(dir))
        return 1;

    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        return 1;
    char *scen_argv[] = {"dotnet", (char *)dll, "attach", NULL};
    pid_t scen = spawn(scen_argv, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    char buf[256];
    if (read(out[0], buf, sizeof buf) <= 0) {
        fprintf(stderr, "bench_attach: the scenario did not start\n");
        return 1;
    }

    uint64_t *to_first = calloc((size_t)cycles, sizeof *to_first);
    uint64_t *to_unload = calloc((size_t)cycles, sizeof *to_unload);
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "%d", (int)scen);
    int done = 0;
    for (int i = 0; i < cycles; i++) {
        char trace[256];
        snprintf(trace, sizeof trace, "%s/cycle%d.trace", dir, i);
        char *attach_argv[] = {(char *)dnprof, "attach", pid_text, "-q", "-o", trace, NULL};
        uint64_t t0 = clock_ns(CLOCK_REALTIME);
        pid_t a = spawn(attach_argv, -1, -1);
        /* Recording: the control socket answers; wait for it through detach. */
        while (!maps_has_agent(scen))
            usleep(200);
        usleep(100 * 1000);
        char *detach_argv[] = {(char *)dnprof, "detach", "-q", pid_text, NULL};
        uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
        pid_t d = -1;
        for (int tries = 0; tries < 100; tries++) {
            d = spawn(detach_argv, -1, -1);
            int st;
            waitpid(d, &st, 0);
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                break;
            usleep(20 * 1000); /* the control socket may not be up yet */
            t1 = clock_ns(CLOCK_MONOTONIC);
        }
        while (maps_has_agent(scen))
            usleep(200);
        uint64_t t2 = clock_ns(CLOCK_MONOTONIC);
        waitpid(a, NULL, 0);

        dnp_trace *t = NULL;
        char err[256];
        if (dnp_trace_load(trace, &t, err, sizeof err) != 0 || t->nevents == 0) {
            fprintf(stderr, "bench_attach: %s: %s\n", trace, t ? "no events" : err);
            dnp_trace_free(t);
            continue;
        }
        uint64_t first = t->start_realtime_ns + t->events[0].time_ns;
        to_first[done] = first > t0 ? first - t0 : 0;
        to_unload[done] = t2 - t1;
        done++;
        dnp_trace_free(t);
        unlink(trace);
    }
    ssize_t w = write(in[1], "quit\n", 5);
    (void)w;
    close(in[1]);
    waitpid(scen, NULL, 0);
    rmdir(dir);
    if (!done)
        return 1;
    report("dnprof attach -> first event", to_first, done);
    report("dnprof detach -> agent unloaded", to_unload, done);
    return 0;
}
