/* bench_signal.c: what the machine charges for one sample, before any
 * profiler code runs: a thread busy in a loop of known work is interrupted by
 * the sampler's own kinds of timer (a perf task-clock event signalling the
 * thread, a POSIX CPU timer), with an empty handler, and, for comparison, makes
 * a trivial system call at the same count. The thread's CPU time against the
 * same loop undisturbed, divided by the signals (or calls), is the cost of
 * each: the floor under --sample's and --calls' cost per sample
 * (BENCHMARKS.md). Interleaved rounds, medians.
 * Usage: bench_signal [RATE_HZ [ROUNDS]] */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define LOOP 400000000ul
#define SYSCALL_EVERY 0x1ffffu

enum { BARE, PERF, POSIX_TIMER, SYSCALL, NKIND };
static const char *const kind_names[NKIND] = {"undisturbed", "perf task-clock signal", "POSIX CPU-timer signal",
                                              "getppid() system call"};
static volatile long events;

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

/* The timer of kind on this thread at rate: a perf fd, or 0 for a POSIX timer; -1 none. */
static int arm(int kind, unsigned rate, timer_t *timer) {
    int tid = (int)syscall(SYS_gettid);
    if (kind == PERF) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.type = PERF_TYPE_SOFTWARE;
        a.size = sizeof a;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.sample_period = 1000000000ull / rate;
        a.disabled = 1;
        a.exclude_hv = 1;
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
    int fd = kind == PERF || kind == POSIX_TIMER ? arm(kind, rate, &timer) : -1;
    if ((kind == PERF || kind == POSIX_TIMER) && fd < 0) {
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
    if (kind == PERF)
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
    printf("  %-24s %8.1f ms\n", kind_names[BARE], bare * 1e3);
    for (int k = 1; k < NKIND; k++) {
        double c = bench_median(cpu[k], rounds), n = bench_median(count[k], rounds);
        if (n < 0) {
            printf("  %-24s refused here\n", kind_names[k]);
            continue;
        }
        printf("  %-24s %8.1f ms, %6.0f of them: %.1f us each (%+.1f%% of the loop)\n", kind_names[k], c * 1e3, n,
               n > 0 ? (c - bare) * 1e6 / n : 0, 100 * (c - bare) / bare);
    }
    return 0;
}
