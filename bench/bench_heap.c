/* bench_heap.c: heap snapshots of one process, dnprof against dotnet-gcdump,
 * interleaved in one run (BENCHMARKS.md, "Heap snapshots").
 *
 *   bench_heap [--objects N[,N...]] [--rounds R] [--no-gcdump] [--dir DIR]
 *
 * For each heap size, starts the "heap" scenario holding N small objects
 * (Scenarios.dll heap bulk=N pauses=1: an array of N objects, each holding the
 * previous one, and a thread that prints how long it was held up), then takes
 * R rounds of: a dnprof snapshot, a "walk only" dnprof snapshot (the agent
 * attached and its GC callbacks called for every object, root and handle as
 * in a snapshot, but counting only: the agent does that when a file named as
 * the snapshot with ".walk-only" added exists, src/agent/heap.c), and a
 * dotnet-gcdump; it measures:
 *   - wall time of `dnprof snapshot PID` / `dotnet-gcdump collect -p PID`;
 *   - the target's pause: the longest time its watcher thread was held up
 *     while the tool ran; the agent's own figure (GarbageCollectionStarted to
 *     GarbageCollectionFinished); the program's own full blocking GC.Collect()
 *     without a profiler (the fastest of three);
 *   - memory added to the target: its peak RSS during the tool's run (reset
 *     through /proc/PID/clear_refs before) less its RSS before;
 *   - the tool's own peak RSS;
 * and then `dnprof heap report` on the snapshot: wall time and peak RSS (the
 * dominator tree included), per object.
 * Needs DNPROF_SCENARIOS (Scenarios.dll) in the environment; dotnet-gcdump on
 * PATH or in ~/.dotnet/tools. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef DNPROF_BIN
#define DNPROF_BIN "dnprof"
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* Runs argv, stdout to out (or /dev/null), stderr to err (or /dev/null), waits;
 * wall seconds, peak RSS (KiB), status. */
static int run2(char *const argv[], const char *out, const char *err, double *wall,
                long *maxrss_kb, int *status) {
    double t0 = now_s();
    pid_t p = fork();
    if (p == 0) {
        int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 1);
        int fe = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fe >= 0)
            dup2(fe, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (p < 0)
        return -1;
    int st;
    struct rusage ru;
    if (wait4(p, &st, 0, &ru) < 0)
        return -1;
    *wall = now_s() - t0;
    *maxrss_kb = ru.ru_maxrss;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}

static int run(char *const argv[], const char *out, double *wall, long *maxrss_kb, int *status) {
    return run2(argv, out, NULL, wall, maxrss_kb, status);
}

static long proc_kb(pid_t pid, const char *field) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *text = read_file(path, NULL);
    const char *p = text ? strstr(text, field) : NULL;
    long v = p ? atol(p + strlen(field) + 1) : -1;
    free(text);
    return v;
}

static void reset_peak(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    int fd = open(path, O_WRONLY);
    if (fd >= 0) {
        ssize_t w = write(fd, "5", 1);
        (void)w;
        close(fd);
    }
}

/* The longest "pause <ms>" the scenario printed after byte from of its output. */
static double max_pause(const char *out, size_t from, size_t *end) {
    size_t len;
    char *text = read_file(out, &len);
    double best = 0;
    for (const char *p = text && from < len ? text + from : ""; (p = strstr(p, "pause ")); p++) {
        double v = atof(p + 6);
        if (v > best)
            best = v;
    }
    if (end)
        *end = text ? len : from;
    free(text);
    return best;
}

static int find_gcdump(char *buf, size_t cap) {
    const char *path = getenv("PATH"), *home = getenv("HOME");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s:%s/.dotnet/tools", path ? path : "", home ? home : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, cap, "%s/dotnet-gcdump", d);
        if (access(buf, X_OK) == 0)
            return 0;
    }
    return -1;
}

typedef struct tool_run {
    double wall, pause;
    double gc_ms; /* the agent's: GarbageCollectionStarted to Finished */
    long added_kb, tool_kb;
    int ok;
} tool_run;

static tool_run measure(pid_t pid, const char *out, const char *err, char *const argv[]) {
    tool_run t = {0};
    size_t off;
    max_pause(out, 0, &off);
    long before = proc_kb(pid, "VmRSS:");
    reset_peak(pid);
    int st = 1;
    if (run2(argv, NULL, err, &t.wall, &t.tool_kb, &st) == 0 && st == 0)
        t.ok = 1;
    char *text = err ? read_file(err, NULL) : NULL;
    const char *g = text ? strstr(text, "GC pause ") : NULL;
    t.gc_ms = g ? atof(g + 9) : -1;
    free(text);
    usleep(100000); /* the watcher's last line */
    t.pause = max_pause(out, off, NULL);
    long hwm = proc_kb(pid, "VmHWM:");
    t.added_kb = hwm > before ? hwm - before : 0;
    return t;
}

int main(int argc, char **argv) {
    const char *objects = "1000000,10000000", *dir = "/tmp/dnprof-bench-heap";
    int rounds = 1, gcdump = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--objects") && i + 1 < argc)
            objects = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--no-gcdump"))
            gcdump = 0;
        else {
            fprintf(stderr, "usage: bench_heap [--objects N[,N...]] [--rounds R] [--no-gcdump] [--dir DIR]\n");
            return 2;
        }
    }
    const char *dll = getenv("DNPROF_SCENARIOS");
    if (!dll) {
        fprintf(stderr, "bench_heap: set DNPROF_SCENARIOS to the built Scenarios.dll\n");
        return 2;
    }
    char tool[4096];
    if (gcdump && find_gcdump(tool, sizeof tool) < 0) {
        fprintf(stderr, "bench_heap: dotnet-gcdump not found (dotnet tool install -g dotnet-gcdump), "
                        "or --no-gcdump\n");
        return 2;
    }
    mkdir(dir, 0755);
    printf("| objects | tool | wall s | target pause ms | agent GC ms | own GC ms | added target MiB "
           "| tool MiB | report s | report MiB | report B/object |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    for (const char *p = objects; *p;) {
        long n = atol(p);
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
        char out[4200], go[4200], bulk[64], waitarg[4300], flag[4200], err[4200];
        snprintf(out, sizeof out, "%s/scenario-%ld.out", dir, n);
        snprintf(go, sizeof go, "%s/go-%ld", dir, n);
        snprintf(flag, sizeof flag, "%s/%ld.dnheap.walk-only", dir, n);
        snprintf(err, sizeof err, "%s/tool-%ld.err", dir, n);
        unlink(go);
        unlink(flag);
        unlink(out); /* not a stale "ready" of an earlier run */
        snprintf(bulk, sizeof bulk, "bulk=%ld", n);
        snprintf(waitarg, sizeof waitarg, "wait=%s", go);
        pid_t child = fork();
        if (child == 0) {
            int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, 1);
            unsetenv("CORECLR_ENABLE_PROFILING");
            execlp("dotnet", "dotnet", dll, "heap", "list=0", "chain=0", "array=0", "cwt=0", bulk,
                   waitarg, "pauses=1", (char *)NULL);
            _exit(127);
        }
        pid_t pid = 0;
        double gc_ms = 0;
        for (int i = 0; i < 6000 && !pid; i++) {
            char *text = read_file(out, NULL);
            const char *r = text ? strstr(text, "ready ") : NULL;
            const char *g = text ? strstr(text, "gc_ms=") : NULL;
            if (r && g && strchr(r, '\n')) {
                pid = (pid_t)atol(r + 6);
                gc_ms = atof(g + 6);
            }
            free(text);
            usleep(50000);
        }
        if (!pid) {
            fprintf(stderr, "bench_heap: the scenario with %ld objects never got ready\n", n);
            kill(child, SIGKILL);
            return 1;
        }
        /* Each round: dnprof's snapshot, the runtime's walk alone (the callbacks
         * only count), dotnet-gcdump. */
        static const char *const names[] = {"dnprof", "walk only (floor)", "dotnet-gcdump"};
        for (int round = 0; round < rounds; round++) {
            for (int which = 0; which < 2 + gcdump; which++) {
                char file[4300], pidtext[32];
                snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
                snprintf(file, sizeof file, "%s/%ld.%s", dir, n, which == 2 ? "gcdump" : "dnheap");
                char *dn[] = {DNPROF_BIN, "snapshot", "-o", file, pidtext, NULL};
                char *gd[] = {tool, "collect", "-p", pidtext, "-o", file, NULL};
                if (which == 1) {
                    int fd = open(flag, O_WRONLY | O_CREAT, 0644);
                    if (fd >= 0)
                        close(fd);
                }
                tool_run t = measure(pid, out, which == 2 ? NULL : err, which == 2 ? gd : dn);
                unlink(flag);
                double rw = 0;
                long rkb = 0;
                int st = 1;
                if (!which && t.ok) {
                    char *rep[] = {DNPROF_BIN, "heap", "report", file, NULL};
                    run(rep, NULL, &rw, &rkb, &st);
                }
                printf("| %ld | %s%s | %.2f | %.0f | ", n, names[which], t.ok ? "" : " (failed)",
                       t.wall, t.pause);
                if (which == 2)
                    printf("| %.0f |", gc_ms);
                else
                    printf("%.0f | %.0f |", t.gc_ms, gc_ms);
                printf(" %.1f | %.0f |", t.added_kb / 1024.0, t.tool_kb / 1024.0);
                if (!which && st == 0)
                    printf(" %.2f | %.0f | %.1f |\n", rw, rkb / 1024.0, rkb * 1024.0 / (double)n);
                else
                    printf(" | | |\n");
                fflush(stdout);
                unlink(file);
            }
        }
        int fd = open(go, O_WRONLY | O_CREAT, 0644);
        if (fd >= 0)
            close(fd);
        int st;
        waitpid(child, &st, 0);
        unlink(go);
    }
    return 0;
}
