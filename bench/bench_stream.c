/* bench_stream.c: `dnprof report` and `dnprof convert --format folded` on large
 * --timeline traces: time and peak memory (the child's ru_maxrss) against the
 * number of events, to show that memory stays flat (the reader streams).
 *
 * Writes a synthetic timeline trace of N events (MethodEnter/Leave pairs over
 * 3000 functions on 4 threads, as the agent writes them: strings and threads in
 * the meta stream, each thread's chunks of 64 KiB interleaved, no CallNodes, so
 * the trees are rebuilt from the timeline), runs the two commands on it, then
 * the same at N = 1M, and deletes the traces.
 * Usage: bench_stream [N [DIR]]   (N default 100000000, DIR default /tmp; about
 * 13 bytes of trace per event). DNPROF_BIN overrides the dnprof to run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_writer.h"

#ifndef DNPROF_BIN
#define DNPROF_BIN "dnprof"
#endif

enum { NTHREADS = 4, NFUNCS = 3000, MAXDEPTH = 7, FANOUT = 4, CHUNK = 64 << 10 };
#define BASE_NS 1000000000ull
#define FUNC_ID(i) (0x7f3a12000000ull + (uint64_t)(i) * 0x48)

typedef struct tbuf {
    uint8_t *p;
    size_t len;
    uint64_t base, last;
} tbuf;

static dnp_writer *w;
static tbuf meta, th[NTHREADS + 1];

static void put(tbuf *b, uint8_t tag, const uint64_t *v, unsigned n, const void *tail, size_t tail_len) {
    b->len += dnp_rec_encode(b->p + b->len, tag, v, n, tail, tail_len);
}

static void flush(tbuf *b, uint32_t thread) {
    if (b->len && dnp_writer_append(w, thread, b->base, b->p, b->len) != 0) {
        fprintf(stderr, "bench_stream: cannot write the trace: %s\n", strerror(dnp_writer_error(w)));
        exit(1);
    }
    b->len = 0;
}

static void event(uint32_t t, uint64_t now, dnp_event_kind kind, uint64_t func, uint64_t name) {
    tbuf *b = &th[t];
    if (b->len > CHUNK - 64) {
        flush(b, t);
    }
    if (!b->len)
        b->base = b->last = now;
    uint64_t v[4] = {kind, now - b->last, func, name};
    put(b, DNP_REC_EVENT, v, 4, NULL, 0);
    b->last = now;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* N events: each thread walks a call tree of bounded shape (a callee is one of
 * FANOUT functions chosen by its caller), so the tree has at most
 * FANOUT^MAXDEPTH paths per thread whatever N. */
static int write_trace(const char *path, uint64_t nevents) {
    char err[256];
    w = dnp_writer_open(path, 0, 4242, err, sizeof err);
    if (!w) {
        fprintf(stderr, "bench_stream: %s\n", err);
        return -1;
    }
    meta.p = malloc(1 << 20);
    for (int t = 0; t <= NTHREADS; t++)
        th[t].p = malloc(CHUNK + 256);
    meta.base = BASE_NS;
    const char *cmd = "dotnet bench.dll", *rt = "CoreCLR synthetic";
    uint64_t v[7] = {1, (uint64_t)strlen(cmd)};
    put(&meta, DNP_REC_STRING, v, 2, cmd, strlen(cmd));
    v[0] = 2, v[1] = strlen(rt);
    put(&meta, DNP_REC_STRING, v, 2, rt, strlen(rt));
    uint64_t proc[7] = {4242, 1, 1700000000000000000ull, BASE_NS, 1, 2, 0};
    put(&meta, DNP_REC_PROCESS, proc, 7, NULL, 0);
    for (int i = 0; i < NFUNCS; i++) {
        char name[64];
        int n = snprintf(name, sizeof name, "Bench.Ns%d.Class%d::Method%d", i % 7, i % 97, i);
        uint64_t s[2] = {(uint64_t)(10 + i), (uint64_t)n};
        put(&meta, DNP_REC_STRING, s, 2, name, (size_t)n);
        if (meta.len > (1 << 20) - 256)
            flush(&meta, 0);
    }
    for (uint32_t t = 1; t <= NTHREADS; t++) {
        uint64_t s[2] = {t, 5000 + t};
        put(&meta, DNP_REC_THREAD, s, 2, NULL, 0);
    }
    uint64_t cfg[3] = {DNP_EV_CallsConfig, 0, 3};
    put(&meta, DNP_REC_EVENT, cfg, 3, NULL, 0); /* mode 3 (timeline), own code */
    flush(&meta, 0);

    uint32_t stack[NTHREADS + 1][MAXDEPTH + 1];
    int depth[NTHREADS + 1] = {0};
    uint64_t now[NTHREADS + 1];
    for (int t = 0; t <= NTHREADS; t++)
        now[t] = BASE_NS + 1000;
    uint64_t done = 0;
    while (done < nevents) {
        /* a burst on one thread, so chunks of the threads interleave */
        uint32_t t = 1 + (uint32_t)(next_rand() % NTHREADS);
        for (int k = 0; k < 4096 && done < nevents; k++, done++) {
            uint64_t r = next_rand();
            int d = depth[t];
            now[t] += 20 + (r >> 40) % 200;
            int left = (int)(nevents - done);
            if (d > 0 && (d == MAXDEPTH || left <= d || (r & 3) == 0)) {
                uint32_t f = stack[t][--depth[t]];
                event(t, now[t], DNP_EV_MethodLeave, FUNC_ID(f), 0);
            } else {
                uint32_t parent = d ? stack[t][d - 1] : 0;
                uint32_t f = (uint32_t)((parent * 2654435761u + 1 + (uint32_t)((r >> 8) % FANOUT) * 7919u) % NFUNCS);
                stack[t][depth[t]++] = f;
                event(t, now[t], DNP_EV_MethodEnter, FUNC_ID(f), 10 + f);
            }
        }
    }
    for (uint32_t t = 1; t <= NTHREADS; t++)
        flush(&th[t], t);
    uint64_t end[1] = {nevents + 1};
    put(&meta, DNP_REC_END, end, 1, NULL, 0);
    flush(&meta, 0);
    int rc = dnp_writer_error(w) ? -1 : 0;
    dnp_writer_free(w);
    free(meta.p);
    for (int t = 0; t <= NTHREADS; t++)
        free(th[t].p);
    memset(th, 0, sizeof th);
    memset(&meta, 0, sizeof meta);
    return rc;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs dnprof with args, output to /dev/null; wall seconds and peak RSS in MiB. */
static int run(const char *const *args, int no_stream, double *secs, double *rss_mib) {
    const char *bin = getenv("DNPROF_BIN");
    if (!bin || !*bin)
        bin = DNPROF_BIN;
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(126);
        if (no_stream)
            setenv("DNPROF_NO_STREAM", "1", 1);
        char *argv[16];
        int n = 0;
        argv[n++] = (char *)bin;
        for (; args[n - 1] && n < 15; n++)
            argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return -1;
    *secs = now_s() - t0;
    *rss_mib = (double)ru.ru_maxrss / 1024.0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int measure(const char *dir, uint64_t n, int also_in_memory) {
    char path[512];
    snprintf(path, sizeof path, "%s/bench_stream.%d.%" PRIu64 ".trace", dir, (int)getpid(), n);
    double t0 = now_s();
    if (write_trace(path, n) != 0) {
        unlink(path);
        return -1;
    }
    struct stat st;
    stat(path, &st);
    printf("N = %" PRIu64 " events: trace %.1f MiB (%.1f bytes/event), written in %.2f s\n", n,
           (double)st.st_size / 1048576.0, (double)st.st_size / (double)n, now_s() - t0);
    const char *report[] = {"report", path, NULL};
    const char *folded[] = {"convert", "--format", "folded", "-o", "/dev/null", path, NULL};
    struct { const char *what; const char *const *args; int no_stream; } runs[] = {
        {"report (streamed)", report, 0},
        {"convert --format folded (streamed)", folded, 0},
        {"report (DNPROF_NO_STREAM=1: loaded whole)", report, 1},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        if (runs[i].no_stream && !also_in_memory)
            continue;
        double secs, rss;
        if (run(runs[i].args, runs[i].no_stream, &secs, &rss) != 0) {
            printf("  %-44s FAILED\n", runs[i].what);
            rc = -1;
            continue;
        }
        printf("  %-44s %8.2f s  %8.1f MiB peak RSS  (%.1f ns/event)\n", runs[i].what, secs, rss,
               secs * 1e9 / (double)n);
        fflush(stdout);
    }
    unlink(path);
    return rc;
}

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000000ull;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    if (n < 16) {
        fprintf(stderr, "usage: bench_stream [N [DIR]]\n");
        return 2;
    }
    int rc = measure(dir, 1000000, 1);
    if (n != 1000000)
        rc |= measure(dir, n, n <= 10000000);
    return rc ? 1 : 0;
}
