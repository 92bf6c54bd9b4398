/* bench_writer.c: events per second the agent's recorder takes on one thread
 * (encode into the thread's buffer, flush to a file), and the same with 4
 * threads at once; and the CPU time per event of the whole process (the writer
 * thread included), which a loaded machine disturbs less than the wall clock.
 * Usage: bench_writer [events-per-thread] [dir] */
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"

static uint64_t per_thread = 20000000;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *work(void *arg) {
    uint64_t base = (uint64_t)(uintptr_t)arg;
    uint32_t name = rec_string("System.Collections.Generic.Dictionary<System.String, System.Int32>", 66);
    for (uint64_t i = 0; i < per_thread; i++) {
        /* A ClassLoadFinished: class id, its name, a status. */
        uint64_t v[3] = {base + (i & 0xffff) * 64, name, 0};
        rec_event(DNP_EV_ClassLoadFinished, v, 3);
    }
    return NULL;
}

static double run(int threads) {
    pthread_t t[16];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(0x7f0000000000ull + i * 0x1000000ull));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return now_s() - t0;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc > 1)
        per_thread = strtoull(argv[1], NULL, 10);
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench-writer-%d.trace", dir, (int)getpid());
    recorder_options opt = {.path = path};
    if (recorder_open(&opt) < 0)
        return 1;
    double cpu0 = cpu_s();
    double one = run(1);
    double four = run(4);
    recorder_close();
    double cpu = cpu_s() - cpu0;
    FILE *f = fopen(path, "rb");
    long size = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fclose(f);
    }
    unlink(path);
    printf("1 thread : %.1f M events/s (%.1f ns/event)\n", per_thread / one / 1e6, one * 1e9 / per_thread);
    printf("4 threads: %.1f M events/s in all (%.1f ns/event/thread)\n", 4 * per_thread / four / 1e6,
           four * 1e9 / per_thread);
    printf("trace: %.2f bytes/event\n", (double)size / (5.0 * per_thread));
    printf("cpu: %.1f ns/event (all threads, the writer's too)\n", cpu * 1e9 / (5.0 * per_thread));
    return 0;
}
