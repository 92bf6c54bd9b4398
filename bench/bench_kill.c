/* bench_kill.c: what a kill -9 loses. A child process records events with the
 * agent's recorder on 4 threads, and the parent kills it with SIGKILL at a
 * random moment. Each thread numbers its events and publishes the time of each
 * in shared memory; the loss is the age, at the kill, of the oldest event that
 * is not in the trace: how far back the recording was lost. The gap between
 * the kill and the last event in the trace is printed too (the same figure
 * under a steady load; under the bursty one it also counts the silences). Three loads: steady (every thread raises about 60,000 events
 * a second), bursty (30 ms bursts after 100-400 ms of silence: the writer goes
 * idle between them) and flat out (buffers fill and flush themselves).
 * Usage: bench_kill [runs-per-load] [dir]   (DNPROF_FLUSH_MS is obeyed) */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "trace_reader.h"

#include "bench_util.h"

#define THREADS 4

enum { STEADY, BURSTY, FLAT_OUT, LOADS };
static const char *const load_names[LOADS] = {"steady", "bursty", "flat out"};

#define RING (1u << 18) /* event times kept per thread */

typedef struct shared {
    atomic_uint_least64_t origin;
    atomic_uint_least64_t raised[THREADS]; /* events raised */
    atomic_int ready;
    uint64_t time[THREADS][RING]; /* time[i][n % RING]: when thread i raised event n */
} shared;

static shared *S;
static int load;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void *work(void *arg) {
    unsigned i = (unsigned)(uintptr_t)arg;
    uint32_t name = rec_string("System.Collections.Generic.Dictionary<System.String, System.Int32>", 66);
    unsigned seed = (unsigned)getpid() * 31u + i;
    uint64_t burst_end = 0;
    for (uint64_t n = 0;; n++) {
        uint64_t v[3] = {(uint64_t)i << 48 | n, name, 0}; /* the class ID says who and which */
        S->time[i][n % RING] = recorder_now();
        rec_event(DNP_EV_ClassLoadFinished, v, 3);
        atomic_store_explicit(&S->raised[i], n + 1, memory_order_release);
        if (load == FLAT_OUT || n % 16 != 15)
            continue;
        sleep_us(200); /* about 60,000 events a second */
        if (load == BURSTY && mono_ns() > burst_end) {
            sleep_us(100000 + (long)(rand_r(&seed) % 300000));
            burst_end = mono_ns() + 30000000u;
        }
    }
    return NULL;
}

static void child(const char *path) {
    recorder_options opt = {.path = path, .exclusive = 0, .flush_ms = 0};
    const char *env = getenv(DNP_ENV_FLUSH_MS);
    if (env)
        opt.flush_ms = (unsigned)atoi(env);
    if (recorder_open(&opt) < 0)
        _exit(1);
    uint64_t origin = recorder_now();
    rec_process(origin, 0, "bench_kill", "none", 0, 0);
    atomic_store(&S->origin, origin);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, (void *)(uintptr_t)i);
    atomic_store(&S->ready, 1);
    for (;;)
        pause();
}


int main(int argc, char **argv) {
    int runs = bench_count_arg(argc, argv, 1, 10, 1000);
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench-kill-%d.trace", dir, (int)getpid());
    S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED)
        return 1;
    srand((unsigned)mono_ns());
    printf("%-9s %5s  %-28s  %-28s\n", "load", "runs", "lost ms: median / max", "kill - last event ms: median / max");
    for (load = 0; load < LOADS; load++) {
        double lost[1000], gap[1000];
        int done = 0;
        for (int r = 0; r < runs; r++) {
            memset(S, 0, sizeof *S);
            pid_t pid = fork();
            if (pid == 0)
                child(path);
            while (!atomic_load(&S->ready))
                sleep_us(1000);
            sleep_us(300000 + rand() % 1000000);
            uint64_t kill_ns = mono_ns();
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            dnp_trace *t = NULL;
            char err[256];
            if (dnp_trace_load(path, &t, err, sizeof err) != 0) {
                fprintf(stderr, "bench_kill: %s\n", err);
                continue;
            }
            uint64_t origin = atomic_load(&S->origin);
            uint64_t recorded = origin + (t->nevents ? t->events[t->nevents - 1].time_ns : 0);
            uint64_t kept[THREADS] = {0}; /* events of each thread in the trace */
            for (size_t e = 0; e < t->nevents; e++) {
                const dnp_trace_event *ev = &t->events[e];
                unsigned i = (unsigned)(ev->v[0] >> 48);
                if (ev->kind == DNP_EV_ClassLoadFinished && i < THREADS && (ev->v[0] & 0xffffffffffffull) + 1 > kept[i])
                    kept[i] = (ev->v[0] & 0xffffffffffffull) + 1;
            }
            uint64_t oldest_lost = kill_ns;
            for (int i = 0; i < THREADS; i++) {
                uint64_t raised = atomic_load(&S->raised[i]);
                if (kept[i] < raised && raised - kept[i] < RING && S->time[i][kept[i] % RING] < oldest_lost)
                    oldest_lost = S->time[i][kept[i] % RING];
            }
            if (getenv("BENCH_KILL_VERBOSE"))
                fprintf(stderr, "%s: oldest lost event %.1f ms, last recorded %.1f ms, kill %.1f ms after the start; %zu events, %s\n",
                        load_names[load], (oldest_lost - origin) / 1e6, (recorded - origin) / 1e6, (kill_ns - origin) / 1e6,
                        t->nevents, t->status_text);
            dnp_trace_free(t);
            lost[done] = (double)(kill_ns - oldest_lost) / 1e6;
            gap[done] = kill_ns > recorded ? (double)(kill_ns - recorded) / 1e6 : 0.0;
            done++;
        }
        unlink(path);
        if (!done)
            continue;
        qsort(lost, (size_t)done, sizeof *lost, bench_cmp_double);
        qsort(gap, (size_t)done, sizeof *gap, bench_cmp_double);
        printf("%-9s %5d  %8.1f / %-17.1f  %8.1f / %.1f\n", load_names[load], done, lost[done / 2], lost[done - 1],
               gap[done / 2], gap[done - 1]);
    }
    return 0;
}
