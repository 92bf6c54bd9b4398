/* bench_signal.c: what the machine charges for one sample, before any
 * profiler code runs: a thread busy in a loop of known work is interrupted by
 * the sampler's own kinds of timer (a perf task-clock event signalling the
 * thread, a POSIX CPU timer), with an empty handler, and, for comparison, makes
 * a trivial system call at the same count. The thread's CPU time against the
 * same loop undisturbed, divided by the signals (or calls), is the cost of
 * each: the floor under --sample's and --calls' cost per sample
 * (BENCHMARKS.md). A fifth kind asks the same perf event for no signal at
 * all: the kernel copies the thread's registers and the top 8 KB of its stack
 * into a ring buffer, as `perf record --call-graph dwarf` does, which is what
 * a sampler without signals would pay on the thread. Interleaved rounds, medians.
 * Usage: bench_signal [RATE_HZ [ROUNDS]] */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define LOOP 400000000ul
#define SYSCALL_EVERY 0x1ffffu
#define RING_PAGES 2048u  /* 8 MiB: room for every sample of a round at 1 kHz */
#define RING_STACK 8192u  /* bytes of stack copied per sample */

enum { BARE, PERF, POSIX_TIMER, SYSCALL, RING, NKIND };
static const char *const kind_names[NKIND] = {"undisturbed", "perf task-clock signal", "POSIX CPU-timer signal",
                                              "getppid() system call", "perf ring buffer, no signal"};
static volatile long events;
static void *ring; /* the RING kind's buffer: one control page, then RING_PAGES of data */

static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
    events++;
}

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* RING: the samples the kernel wrote into the buffer; the buffer unmapped. */
static long ring_samples(void) {
    const struct perf_event_mmap_page *m = ring;
    const char *data = (const char *)ring + 4096;
    unsigned long head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), size = RING_PAGES * 4096ul, n = 0;
    for (unsigned long t = head > size ? head - size : 0; t < head;) {
        const struct perf_event_header *e = (const void *)(data + t % size);
        if (e->size == 0)
            break;
        n += e->type == PERF_RECORD_SAMPLE;
        t += e->size;
    }
    munmap(ring, (RING_PAGES + 1) * 4096ul);
    return (long)n;
}

/* A task-clock event sampling every 1/rate s of the thread's CPU, disabled. */
static void task_clock(struct perf_event_attr *a, unsigned rate) {
    memset(a, 0, sizeof *a);
    a->type = PERF_TYPE_SOFTWARE;
    a->size = sizeof *a;
    a->config = PERF_COUNT_SW_TASK_CLOCK;
    a->sample_period = 1000000000ull / rate;
    a->disabled = 1;
    a->exclude_hv = 1;
}

/* The timer of kind on this thread at rate: a perf fd, or 0 for a POSIX timer; -1 none. */
static int arm(int kind, unsigned rate, timer_t *timer) {
    int tid = (int)syscall(SYS_gettid);
    if (kind == RING) {
        struct perf_event_attr a;
        task_clock(&a, rate);
        a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = 1ull << 6 | 1ull << 7 | 1ull << 8; /* x86-64's bp, sp, ip */
        a.sample_stack_user = RING_STACK;
        a.wakeup_events = 1u << 30; /* nobody polls: no wake-ups */
        a.exclude_kernel = 1;
        int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
            return -1;
        ring = mmap(NULL, (RING_PAGES + 1) * 4096ul, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
            if (ring != MAP_FAILED)
                munmap(ring, (RING_PAGES + 1) * 4096ul);
            close(fd);
            return -1;
        }
        return fd;
    }
    if (kind == PERF) {
        struct perf_event_attr a;
        task_clock(&a, rate);
        int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            a.exclude_kernel = 1;
            fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        }
        struct f_owner_ex owner = {F_OWNER_TID, tid};
        if (fd < 0 || fcntl(fd, F_SETOWN_EX, &owner) || fcntl(fd, F_SETSIG, SIGPROF) || fcntl(fd, F_SETFL, O_ASYNC) ||
            ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
            return -1;
        return fd;
    }
    if (kind == POSIX_TIMER) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGPROF;
        sev._sigev_un._tid = tid;
        struct itimerspec its = {{0, (long)(1000000000u / rate)}, {0, (long)(1000000000u / rate)}};
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, timer) || timer_settime(*timer, 0, &its, NULL))
            return -1;
        return 0;
    }
    return -1;
}

/* One run of the loop under kind: its CPU seconds, and the events in *n. */
static double run(int kind, unsigned rate, long *n) {
    timer_t timer;
    int timed = kind == PERF || kind == POSIX_TIMER || kind == RING;
    int fd = timed ? arm(kind, rate, &timer) : -1;
    if (timed && fd < 0) {
        *n = -1;
        return 0;
    }
    events = 0;
    double t0 = thread_cpu_s();
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < LOOP; i++) {
        x += i * i;
        if (kind == SYSCALL && (i & SYSCALL_EVERY) == 0) {
            (void)syscall(SYS_getppid);
            events++;
        }
    }
    double t = thread_cpu_s() - t0;
    if (kind == RING) {
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        events = ring_samples();
    }
    if (kind == PERF || kind == RING)
        close(fd);
    else if (kind == POSIX_TIMER)
        timer_delete(timer);
    *n = events;
    return t;
}

int main(int argc, char **argv) {
    unsigned rate = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    int rounds = bench_count_arg(argc, argv, 2, 9, 100);
    if (rate < 1 || rate > 100000) {
        fprintf(stderr, "bench_signal: a rate from 1 to 100000 Hz\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    static double cpu[NKIND][100], count[NKIND][100];
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NKIND; k++) {
            long n;
            cpu[k][r] = run(k, rate, &n);
            count[k][r] = (double)n;
        }
    double bare = bench_median(cpu[BARE], rounds);
    printf("a loop of %lu multiply-adds, %d rounds, thread CPU time (medians); timers at %u Hz\n", LOOP, rounds, rate);
    printf("  %-28s %8.1f ms\n", kind_names[BARE], bare * 1e3);
    for (int k = 1; k < NKIND; k++) {
        double c = bench_median(cpu[k], rounds), n = bench_median(count[k], rounds);
        if (n < 0) {
            printf("  %-28s refused here\n", kind_names[k]);
            continue;
        }
        printf("  %-28s %8.1f ms, %6.0f of them: %.1f us each (%+.1f%% of the loop)\n", kind_names[k], c * 1e3, n,
               n > 0 ? (c - bare) * 1e6 / n : 0, 100 * (c - bare) / bare);
    }
    return 0;
}
