/* sampler_signal.c: timers and signals (sampler.h). SIGPROF comes from a
 * per-thread CPU-time clock (a perf task-clock event, or timer_create on the
 * thread's CPU clock, SIGEV_THREAD_ID) or, for wall time, from a timer per
 * thread on the monotonic clock (or the sampler thread, rt_tgsigqueueinfo,
 * where there is none). The signal carries the thread's slot; the handler
 * checks it is its own, takes the sample (sampler_walk.c) and keeps errno.
 * The threads' slots and their stacks' bounds: sampler_threads.c. */
#include "sampler_internal.h"

#include "async.h"

#include "memread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent.h"
#include "arch/arch.h"
#include "recorder.h"
#include "unwind.h"

/* ---- the signal handler ---- */

static int slot_valid(const sslot *s) {
    uintptr_t a = (uintptr_t)s, b = (uintptr_t)S.slots;
    return S.slots && a >= b && a < b + MAX_SLOTS * sizeof(sslot) && (a - b) % sizeof(sslot) == 0;
}

/* Whether the signal's slot is the calling thread's. The thread id is asked
 * once (a system call: 13 us in a KVM guest, as much as the rest of a sample);
 * then the thread's pthread_self(), a register read, stands for it. The
 * sampler clears self before it gives the slot to another thread. */
static int slot_mine(sslot *s) {
    uint64_t me = (uint64_t)pthread_self();
    if (atomic_load_explicit(&s->self, memory_order_relaxed) == me)
        return 1;
    int tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
    if (tid <= 0 || tid != gettid())
        return 0;
    if (!atomic_load_explicit(&s->ended_ns, memory_order_relaxed)) /* an ending thread is asked its id each time */
        atomic_store_explicit(&s->self, me, memory_order_relaxed);
    return 1;
}

/* The process timer's signal goes to the thread that ran when it expired,
 * unless that thread blocks it (the sampler thread blocks every signal): then
 * to another one, maybe one asleep in a system call, which did not run. Such
 * a sample is dropped (the CPU was the sampler's own, not the program's). */
static sslot *process_timer_slot(const void *ucv) {
    arch_regs g;
    arch_context_regs(ucv, &g);
    if (arch_at_syscall(&g)) {
        atomic_fetch_add_explicit(&S.misdirected, 1, memory_order_relaxed);
        return NULL;
    }
    return sampler_slot_self();
}

/* Wall mode, a thread's own timer: the periods since its last sample (the
 * timer's expiries merge while the thread waits for a CPU, and its stride
 * changes with the number of threads; the clock counts either way). */
static uint32_t wall_periods(sslot *s) {
    uint64_t last = atomic_load_explicit(&s->wall_last, memory_order_relaxed), now = sampler_now_ns();
    if (!last || now <= last)
        return 0;
    uint64_t periods = (now - last + S.period_ns / 2) / S.period_ns;
    if (periods)
        atomic_store_explicit(&s->wall_last, last + periods * S.period_ns, memory_order_relaxed);
    return periods < 1000000 ? (uint32_t)periods : 1000000u;
}

static void on_signal(int sig, siginfo_t *si, void *ucv) {
    (void)sig;
    int saved = errno;
    unwind_learn_sigtramp((uint64_t)(uintptr_t)__builtin_return_address(0)); /* arm64: the vDSO's or qemu's */
    if (si && (si->si_code == SI_TIMER || si->si_code == SI_QUEUE || si->si_code == POLL_IN) &&
        atomic_load_explicit(&S.running, memory_order_relaxed)) {
        sslot *s = si->si_value.sival_ptr;
        if (si->si_code == POLL_IN)
            s = si->si_fd >= 0 && si->si_fd < MAX_FDS && S.fd_slot ? S.fd_slot[si->si_fd] : NULL;
        else if (si->si_code == SI_TIMER && si->si_value.sival_ptr == (void *)&S.ptimer)
            s = process_timer_slot(ucv);
        if (slot_valid(s) && slot_mine(s)) {
            atomic_store(&s->busy, 1); /* before the periods owed are taken: sampler_take_remote keeps off */
            uint32_t weight = 1u + (si->si_code == SI_TIMER && si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0u);
            if (si->si_code == SI_QUEUE) /* wall: the periods owed; 0 when an earlier sample took them */
                weight = atomic_exchange_explicit(&s->owed, 0, memory_order_relaxed);
            else if (si->si_code == SI_TIMER && S.mode == SAMPLER_WALL) /* wall, its own timer */
                weight = wall_periods(s);
            if (weight && S.calls)
                sampler_calls_sample(ucv, weight);
            if (weight && S.walk)
                sampler_take_sample(s, ucv, weight);
            atomic_store(&s->busy, 0);
        }
    }
    errno = saved;
}

int sampler_handler_install(void) {
    struct sigaction old, sa;
    if (sigaction(SAMPLER_SIGNAL, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO ? old.sa_sigaction != NULL
                                                       : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) &&
        !S.handler_installed) {
        agent_say("SIGPROF has a handler already (the program's own profiler?); --sample needs "
                  "it, so no samples (try --sample=suspend)");
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SAMPLER_SIGNAL, &sa, NULL) != 0) {
        agent_say("cannot install the SIGPROF handler (%s); no samples", strerror(errno));
        return -1;
    }
    S.handler_installed = 1;
    return 0;
}

/* A signal still pending is ignored, never the default action (which ends the
 * process), even once this library is gone. */
void sampler_handler_remove(void) {
    if (!S.handler_installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SAMPLER_SIGNAL, &sa, NULL);
    S.handler_installed = 0;
}

/* The thread's task clock as a perf event that signals it every period: an
 * hrtimer, precise, where POSIX CPU timers only expire at scheduler ticks (and
 * so favour what runs right after a tick). -1 when perf events are refused.
 * Its first period is a whole one, so a thread's samples stand for half a
 * period less than its CPU time, on average. A random first period, set whole
 * by the handler's PERF_EVENT_IOC_PERIOD at its first signal, left some
 * programs' threads in a storm of signals under load: 2 runs in 5 of a test
 * group hung or lost a phase (docs/sampling.md). */
static int perf_arm(sslot *s, int tid) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = S.period_ns;
    a.disabled = 1;
    a.exclude_kernel = (unsigned)S.perf_exclude_kernel;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && !S.perf_exclude_kernel && (errno == EACCES || errno == EPERM)) {
        S.perf_exclude_kernel = 1; /* perf_event_paranoid 2: user time only */
        a.exclude_kernel = 1;
        fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    if (fd >= MAX_FDS) {
        close(fd);
        return -1;
    }
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    S.fd_slot[fd] = s;
    if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, SAMPLER_SIGNAL) != 0 ||
        fcntl(fd, F_SETFL, O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        S.fd_slot[fd] = NULL;
        close(fd);
        return -1;
    }
    s->perf_fd1 = fd + 1;
    return 0;
}

static struct timespec timespec_of(uint64_t ns) {
    struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    return t;
}

/* Thread tid's CPU clock, as the kernel makes it (MAKE_THREAD_CPUCLOCK(tid,
 * CPUCLOCK_SCHED)): for its timer (cpu mode) and to read its CPU time (wall
 * mode's looks). */
static clockid_t thread_cpu_clock(int tid) {
    return (clockid_t)((~(unsigned)tid << 3) | 6u);
}

/* A POSIX timer on clk that signals thread tid with s as its value: 0 (then
 * s->has_timer), or -1. */
static int thread_timer(sslot *s, int tid, clockid_t clk) {
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SAMPLER_SIGNAL;
    sev.sigev_value.sival_ptr = s;
    sev._sigev_un._tid = tid;
    if (timer_create(clk, &sev, &s->timer) != 0)
        return -1;
    s->has_timer = 1;
    return 0;
}

/* Wall mode's timer of s, set to fire every S.wall_stride periods of the
 * monotonic clock: first at the next period's start plus its phase (its slot
 * mod the stride), so the threads take turns and one tick's expiries fall at
 * the same instant. */
static void wall_set(sslot *s) {
    uint64_t p = S.period_ns, stride = S.wall_stride ? S.wall_stride : 1, now = sampler_now_ns();
    uint64_t first = (now / p + 1 + (uint64_t)(s - S.slots) % stride) * p;
    struct itimerspec its = {timespec_of(p * stride), timespec_of(first)};
    timer_settime(s->timer, TIMER_ABSTIME, &its, NULL);
}

static void wall_arm(sslot *s, int tid) {
    atomic_store(&s->wall_last, 0);
    if (thread_timer(s, tid, CLOCK_MONOTONIC) != 0) {
        S.wall_untimed++;
        return; /* signalled by the sampler thread instead */
    }
    S.wall_timed++;
    s->wall_timed = 1;
    atomic_store(&s->wall_last, sampler_now_ns()); /* its first sample counts the periods since; those after its
                                                    * last: sampler_wall_tail */
    wall_set(s);
}

/* Wall mode with timers: the stride that keeps the signals per tick at most
 * S.wall_threads, the threads' timers set again when it changes. */
void sampler_wall_restride(void) {
    unsigned live = 0;
    for (unsigned i = 0; i < S.nslots; i++)
        live += atomic_load(&S.slots[i].tid) > 0;
    if (live > S.wall_most)
        S.wall_most = live;
    unsigned stride = S.wall_threads && live > S.wall_threads ? (live + S.wall_threads - 1) / S.wall_threads : 1;
    if (stride == S.wall_stride)
        return;
    S.wall_stride = stride;
    for (unsigned i = 0; i < S.nslots; i++)
        if (atomic_load(&S.slots[i].tid) > 0 && S.slots[i].has_timer)
            wall_set(&S.slots[i]);
}

void sampler_slot_arm(sslot *s, int tid) {
    s->perf_fd1 = 0;
    if (S.mode == SAMPLER_WALL && S.wall_timers)
        wall_arm(s, tid);
    if (S.mode != SAMPLER_CPU || S.process_timer)
        return; /* wall: its timer, or the sampler thread signals; process timer: one for all */
    if (S.perf >= 0) {
        if (perf_arm(s, tid) == 0) {
            S.perf = 1;
            return;
        }
        if (S.perf == 0)
            S.perf = -1; /* refused from the first thread on: POSIX CPU timers */
        else
            return; /* the thread is gone, or out of fds */
    }
    if (thread_timer(s, tid, thread_cpu_clock(tid)) != 0)
        return;
    /* the first expiry a random part of a period: a thread's samples then stand for its CPU time on average */
    uint64_t first = S.period_ns / 1000 * (uint64_t)(1 + rand() % 1000);
    struct itimerspec its = {timespec_of(S.period_ns), timespec_of(first)};
    timer_settime(s->timer, 0, &its, NULL);
}

/* Linux 6.4 and later deliver a process CPU timer's signal to the thread that
 * ran when it expired (before, to the first thread that does not block it,
 * whatever ran). */
static int kernel_at_least(int major, int minor) {
    struct utsname u;
    int ma = 0, mi = 0;
    return uname(&u) == 0 && sscanf(u.release, "%d.%d", &ma, &mi) == 2 && (ma > major || (ma == major && mi >= minor));
}

int sampler_process_timer_fits(void) {
    return kernel_at_least(6, 4);
}

int sampler_process_timer_start(void) {
    if (!kernel_at_least(6, 4)) {
        rec_note(1, DNP_ENV_SAMPLE_TIMERS "=process needs Linux 6.4 or later (the signal goes to the thread that ran); "
                    "per-thread POSIX CPU timers instead");
        return -1;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SAMPLER_SIGNAL;
    sev.sigev_value.sival_ptr = &S.ptimer;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &S.ptimer) != 0) {
        rec_note(S.process_timer_auto ? 0 : 1, "no process CPU timer (%s); %s instead", strerror(errno),
                 S.perf == 0 ? "per-thread perf events" : "per-thread POSIX CPU timers");
        return -1;
    }
    struct itimerspec its = {timespec_of(S.period_ns), timespec_of(S.period_ns)};
    timer_settime(S.ptimer, 0, &its, NULL);
    S.ptimer_armed = S.ptimer_used = 1;
    return 0;
}

void sampler_process_timer_stop(void) {
    if (S.ptimer_armed)
        timer_delete(S.ptimer);
    S.ptimer_armed = 0;
}

/* ---- auto: perf events give way to the POSIX timers ---- */

/* The program's CPU time (ns, every thread's) and context switches so far: 0,
 * or -1. One system call. */
static int program_switches(uint64_t *cpu_ns, uint64_t *n) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    *cpu_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
              ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
    *n = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
    return 0;
}

/* A perf event per thread is stopped and started again at each context switch
 * of its thread (its hrtimer cancelled and armed again: a trip to the host in
 * a VM, about 5 us a switch in this guest), whatever the rate. At 1 kHz, 64
 * threads handing a token round (125,000 and 257,000 switches per second of
 * CPU) cost +61% and +141% of CPU that way, their wall time doubled and more,
 * against +1-3% with the POSIX timers (BENCHMARKS.md). So above AUTO_SWITCHES
 * switches per second of CPU (perf events' cost there about 2.5% in this
 * guest, a tenth of that on bare metal), auto gives them up for the process's
 * CPU timer (Linux 6.4+), else a POSIX CPU timer per thread: tick-grained
 * instants, each sample weighted by the periods it stands for. One way: a
 * program that switched this often is likely to again. */
int sampler_switches_check(uint64_t now) {
    uint64_t cpu, n; /* one system call a tick (10 ms) in the first second, then one a scan (100 ms) */
    if (!S.perf_auto || S.perf <= 0 || program_switches(&cpu, &n) != 0)
        return 0;
    if (!S.sw_cpu_ns || cpu < S.sw_cpu_ns || n < S.sw_count) {
        S.sw_cpu_ns = cpu ? cpu : 1;
        S.sw_count = n;
        S.sw_from_ns = now;
        return 0;
    }
    if (cpu - S.sw_cpu_ns < SWITCHES_CPU_MS * 1000000ull || now - S.sw_from_ns < SWITCHES_WALL_MS * 1000000ull)
        return 0;
    double rate = (double)(n - S.sw_count) * 1e9 / (double)(cpu - S.sw_cpu_ns);
    S.sw_cpu_ns = cpu;
    S.sw_count = n;
    S.sw_from_ns = now;
    if (rate < AUTO_SWITCHES)
        return 0;
    sampler_arm_lock();
    for (unsigned i = 0; i < S.nslots; i++)
        sampler_slot_disarm(&S.slots[i]);
    S.perf = -1;
    S.sw_rate = rate;
    if (sampler_process_timer_fits() && sampler_process_timer_start() == 0) {
        S.process_timer = 1;
    } else {
        for (unsigned i = 0; i < S.nslots; i++) {
            int tid = atomic_load(&S.slots[i].tid);
            if (tid > 0)
                sampler_slot_arm(&S.slots[i], tid);
        }
    }
    sampler_arm_unlock();
    return 1;
}

/* Perf events chosen (DNP_ENV_SAMPLE_TIMERS=0, or auto where they could not
 * give way): the closing note says when the run switched threads so often that
 * they cost at every switch (bench/bench_server.sh: +20-52% of CPU at 100 Hz
 * on 64 threads handing a token round, 230,000 switches per CPU second), and
 * names the cheaper clocks. */
void sampler_switches_note(void) {
    uint64_t cpu, n;
    if (S.mode != SAMPLER_CPU || S.perf <= 0 || S.perf_auto || program_switches(&cpu, &n) != 0)
        return;
    double per_cpu_s = cpu > 50000000u ? (double)n * 1e9 / (double)cpu : 0;
    if (per_cpu_s >= 20000)
        rec_note(1, "the program switched threads %.0f times per second of CPU: cpu sampling by perf events pays at "
                    "every switch (up to +50%% of CPU in a VM); " DNP_ENV_SAMPLE_TIMERS "=process (one timer for the "
                    "process, Linux 6.4+) or --sample=wall cost far less for such a program (docs/sampling.md)",
                 per_cpu_s);
}

void sampler_slot_disarm(sslot *s) {
    if (s->perf_fd1) {
        int fd = s->perf_fd1 - 1;
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        S.fd_slot[fd] = NULL;
        close(fd);
        s->perf_fd1 = 0;
    }
    if (s->has_timer)
        timer_delete(s->timer);
    s->has_timer = 0;
}

/* Wall mode, the look: whether the thread waits in a system call, with its
 * stack pointer and PC as the kernel sees them (/proc/self/task/TID/syscall:
 * the call's number and arguments, then SP and PC). The look costs 20-40 us in
 * this guest (the /proc file's path lookup most of it), a signal that wakes a
 * sleeping thread about 60 us and what the thread then does (BENCHMARKS.md). */
static int wall_look(int tid, uint64_t *sp, uint64_t *pc) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    S.wall_probes++;
    if (n <= 0 || buf[0] < '0' || buf[0] > '9')
        return 0; /* "running", or "-1 SP PC": blocked outside a system call */
    buf[n] = 0;
    char *field[9], *p = buf;
    int k = 0;
    while (k < 9 && *p) {
        field[k++] = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
        while (*p == ' ' || *p == '\n')
            *p++ = 0;
    }
    if (k != 9)
        return 0;
    *sp = strtoull(field[7], NULL, 16);
    *pc = strtoull(field[8], NULL, 16);
    return 1;
}

/* Whether a thread the look found waiting at sp and pc waits in the frames of
 * its last sample (s->idle_*), so that its stack is that sample's: the same
 * stack pointer and system-call instruction, and the stack above SP holds the
 * same return addresses at the same places: the same frames, not another
 * caller's of the same depth. Only those: its locals may change while it
 * waits in the same frames, and do in the runtime's lock waits, whose
 * signalled waiter goes round its loop again (a new tick count on the stack,
 * and one more ContentionStart): had the look compared every word, each such
 * waiter would be signalled at every visit, its lock counted contended again
 * each time (ten times the program's own count at 100 Hz, fairer hand-offs,
 * longer waits in all). The kernel gives the PC after that instruction; a
 * signal that restarts the call shows the handler the instruction itself: the
 * two differ by its length, at most 4 bytes on the machines built for (x86-64
 * 2, arm64 4). */
static int same_frames(const sslot *s, uint64_t sp, uint64_t pc) {
    if (sp != s->idle_sp || pc - s->idle_pc + 4 > 8)
        return 0;
    static uint64_t words[IDLE_SPAN / 8]; /* the sampler thread's */
    return memread(sp, words, s->idle_len) == (ssize_t)s->idle_len &&
           idle_hash(words, s->idle_off, s->idle_nret) == s->idle_hash;
}

/* A thread's CPU time (its scheduler clock, in ns), 0 when it cannot be read.
 * One system call, no file. */
static uint64_t thread_cpu_ns(int tid) {
    struct timespec ts;
    if (clock_gettime(thread_cpu_clock(tid), &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall mode: the thread's sample taken without a signal, 1, or 0 when one
 * must take it. Counted again at its last sample's node when it still waits
 * there: at once when it has not run since it was last found so (its CPU
 * time has not moved), else when the look (wall_look) finds it in the same
 * frames (same_frames). Found waiting elsewhere, it is walked from a copy of
 * its stack (sampler_take_remote), and the sample kept if its CPU time did not
 * move meanwhile: it did not run, so the copy is of the stack it waits on.
 * Not while a signal's periods are owed to its handler or the handler runs
 * (the ring has one writer at a time), nor inside an async resume (its
 * awaiting callers are the handler's to read). A thread that blocks and wakes
 * all the time (a ring of hand-offs) is found running, look after look, each
 * costing more than half a signal: after k such looks in a row, the next
 * 2^k - 1 visits (at most 15) signal it without one. */
static int wall_quiet(sslot *s, int tid, uint32_t periods) {
    uint64_t self = atomic_load(&s->self); /* 0: its handler has not run yet, its first sample is a signal's */
    if (!S.wall_idle || !self || atomic_load(&s->owed) || atomic_load(&s->busy))
        return 0;
    if (!s->idle_leaf && s->idle_skip) { /* found running of late: not even its clock read */
        s->idle_skip--;
        return 0;
    }
    uint64_t cpu = thread_cpu_ns(tid), sp, pc;
    if (s->idle_leaf && cpu && cpu == s->idle_cpu) {
        sampler_aggregate_again((uint32_t)tid, s->idle_leaf, periods);
        S.wall_again++;
        return 1;
    }
    if (s->idle_skip) {
        s->idle_skip--;
        return 0;
    }
    int waits = wall_look(tid, &sp, &pc);
    if (waits && s->idle_leaf && same_frames(s, sp, pc)) {
        s->idle_misses = 0;
        s->idle_cpu = cpu; /* read before the look: had it run between the two, the next look sees it */
        sampler_aggregate_again((uint32_t)tid, s->idle_leaf, periods);
        S.wall_again++;
        return 1;
    }
    if (waits && cpu && !async_thread_resuming(self)) {
        if (sampler_take_remote(s, pc, sp, periods) && thread_cpu_ns(tid) == cpu && !atomic_load(&s->busy) &&
            !atomic_load(&s->owed)) {
            sampler_remote_commit(s);
            s->idle_misses = 0;
            S.wall_remote++;
            return 1;
        }
        S.wall_unwalked++;
    }
    s->idle_misses = (uint8_t)(s->idle_misses < 4 ? s->idle_misses + 1 : 4);
    s->idle_skip = (uint8_t)((1u << s->idle_misses) - 1);
    return 0;
}

/* Wall mode, at each tick: the next threads in turn, at most S.wall_threads of
 * them (0: all), each owed the periods since it was last given any, so a
 * thread signalled every k ticks weighs k and the totals stay the program's
 * elapsed time. A signal that finds one still pending merges with it; the
 * handler takes whatever is owed, so nothing is lost either way. A thread
 * that waits in a system call is sampled without a signal instead (wall_quiet):
 * none wakes it. */
void sampler_signal_all(uint64_t now) {
    pid_t pid = getpid();
    uid_t uid = getuid();
    unsigned n = S.nslots, live = 0, sent = 0, cap = S.wall_threads ? S.wall_threads : n;
    for (unsigned k = 0; k < n; k++)
        live += atomic_load(&S.slots[k].tid) > 0;
    if (live > S.wall_most)
        S.wall_most = live;
    unsigned from = S.wall_cursor; /* the turn starts where the last tick's stopped; not moved within it,
                                    * where each signal skipped as many slots as had been visited */
    for (unsigned k = 0; k < n && sent < cap; k++) {
        unsigned i = (from + k) % n;
        sslot *s = &S.slots[i];
        int tid = atomic_load(&s->tid);
        if (tid <= 0 || s->has_timer || atomic_load_explicit(&s->ended_ns, memory_order_relaxed))
            continue; /* none, signalled by its own timer, or ending (sampler_wall_tail) */
        if (!s->wall_due)
            s->wall_due = now - S.period_ns;
        if (s->wall_due > now)
            continue; /* its slot made since this tick began: nothing owed yet */
        uint64_t periods = (now - s->wall_due + S.period_ns / 2) / S.period_ns;
        if (!periods)
            continue;
        s->wall_due += periods * S.period_ns;
        if (wall_quiet(s, tid, (uint32_t)(periods < 1000000 ? periods : 1000000))) {
            sent++;
            S.wall_cursor = i + 1;
            continue;
        }
        s->idle_leaf = 0; /* its next sample says again */
        s->idle_cpu = 0;
        atomic_fetch_add(&s->owed, (unsigned)(periods < 1000000 ? periods : 1000000));
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = SAMPLER_SIGNAL;
        si.si_code = SI_QUEUE;
        si.si_pid = pid;
        si.si_uid = uid;
        si.si_value.sival_ptr = s;
        syscall(SYS_rt_tgsigqueueinfo, pid, tid, SAMPLER_SIGNAL, &si);
        sent++;
        S.wall_cursor = i + 1;
    }
}

/* A thread's samples weigh the periods since its last, so the time from its
 * last sample to its end had none: up to a stride of periods per thread. It
 * goes to the last sample's stack, as the time before a thread's first
 * sample goes to the first's; periods given and not yet taken by its handler
 * too. */
void sampler_wall_tail(sslot *s, uint32_t tid) {
    uint64_t end = atomic_load_explicit(&s->ended_ns, memory_order_relaxed), periods = 0;
    if (!end || !s->last_leaf)
        return;
    if (s->wall_timed) { /* its own timer (deleted by now, maybe) */
        uint64_t last = atomic_load(&s->wall_last);
        periods = last && end > last ? (end - last + S.period_ns / 2) / S.period_ns : 0;
        if (end > last) /* a sample since its end counted up to its own time */
            atomic_store(&s->wall_last, end);
    } else {
        periods = atomic_exchange(&s->owed, 0);
        periods += end > s->wall_due ? (end - s->wall_due + S.period_ns / 2) / S.period_ns : 0;
        s->wall_due = end;
    }
    if (periods)
        sampler_aggregate_again(tid, s->last_leaf, (uint32_t)(periods < 1000000 ? periods : 1000000));
    s->last_leaf = 0;
}
