/* sampler.c: the sampling profiler (sampler.h, docs/sampling.md).
 *
 * The signal path: SIGPROF, from a per-thread CPU-time timer (timer_create on
 * the thread's CPU clock, SIGEV_THREAD_ID) or, for wall time, from the sampler
 * thread (rt_tgsigqueueinfo). The signal carries the thread's slot; the handler
 * checks it is its own, walks the interrupted stack by frame pointers, reading
 * only inside the thread's stack mapping, and appends the raw addresses to the
 * slot's single-producer ring. It never allocates, locks or calls the runtime,
 * and keeps errno.
 *
 * Everything else runs on the sampler thread: finding the threads
 * (/proc/self/task), their stack mappings (/proc/self/maps, from a stack
 * pointer the handler left), draining the rings, resolving addresses
 * (GetFunctionFromIP, symbols.c) through a cache, aggregating stacks into
 * trees of bounded size, and writing the changed nodes as SampleNode events. */

#include "sampler.h"

#include <dirent.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "callbacks.h"
#include "settings.h"
#include "symbols.h"

#define SAMPLER_SIGNAL SIGPROF
#define MAX_SLOTS 4096u        /* threads sampled at once */
#define MAX_DEPTH 128u         /* frames kept per sample */
#define STACK_GUESS (8u << 20) /* how far above SP a walk may read before the stack's bounds are known */
#define SCAN_WORDS 512u        /* words a sample may read looking for frames the chain skips (OSR) */
#define SCAN_CHUNK 64u         /* of which, before the stack's bounds are known, per frame */
#define SP_WORDS 64u           /* words kept from the interrupted stack pointer up */
#define SP_WORDS_MIN 8u        /* of which at least, before the stack's bounds are known */
#define RING 32u               /* samples a thread may hold before the sampler drains them */
#define MAX_NODES (1u << 18)   /* nodes of all trees together */
#define NODE_HASH (1u << 19)
#define IP_CACHE (1u << 16)
#define SCAN_MS 100            /* how often new threads are looked for */
#define EMIT_MS 500            /* how often changed nodes are written, at first: then every */
#define EMIT_FRACTION 60       /* 1/60 of the time sampled so far (a minute after an hour) */
#define EXEC_MS 100            /* how old the list of executable mappings may be before a miss reads it again */
#define EXEC_RIP_MS 10         /* the same, when an interrupted RIP is in none of them */
#define CACHE_MS 2000          /* how long a resolved address is trusted (code unloads) */
#define MAX_FDS 65536          /* perf event descriptors the handler can map to a slot */

enum { REC_WAITING = 1, REC_UNWALKED = 2, REC_FP_FOUND = 4 };

typedef struct srec {
    uint32_t n, flags;
    uint32_t weight; /* periods it stands for: 1 + the timer's overruns */
    uint64_t top; /* the word at the stack pointer: maybe the leaf's return address */
    uint64_t extra;  /* bit k: ip[k] was found by the OSR scan, not by the chain */
    uint32_t nwords;
    uint32_t fpoff; /* where the chain starts (RBP, or a saved RBP found at RSP), above RSP, in bytes; 0 none */
    uint64_t words[SP_WORDS]; /* the first words at the stack pointer (nwords of them) */
    uint64_t ip[MAX_DEPTH];
} srec;

typedef struct sslot {
    atomic_int tid;             /* the thread sampled, 0 free */
    atomic_ullong lo, hi;       /* its stack mapping, 0 until known */
    atomic_ullong probe_sp;     /* a stack pointer the handler saw outside [lo, hi) */
    atomic_uint head, tail;     /* the ring: head written by the handler, tail by the sampler */
    atomic_uint dropped;
    timer_t timer;
    int has_timer;
    int perf_fd1;               /* the thread's task-clock event's descriptor + 1, 0 none */
    unsigned seen;              /* the scan that last found the thread */
    srec ring[RING];
} sslot;

typedef struct anode {
    uint32_t tid, parent;
    uint64_t key; /* FunctionID, or a native name's string number | 1 << 63 */
    uint64_t func;
    uint32_t name;
    uint8_t dirty;
    uint64_t samples, self;
} anode;

typedef struct ipent {
    uint64_t ip;      /* 0: empty */
    uint64_t func;    /* FunctionID, 0 for native */
    uint32_t name;    /* string number */
    uint8_t managed, mapped;
    uint8_t call;     /* ip + 1 follows a call instruction: 0 not known yet, 1 yes, 2 no */
    uint8_t code;     /* ip lies in an executable mapping */
    uint8_t resolved; /* func and name are known */
    int8_t slot;      /* as an interrupted RIP: sampler_return_slot / 8, -1 none, -2 not known yet */
    uint32_t exec_gen; /* the list of executable mappings that said "not code" */
} ipent;

typedef struct xrange {
    uint64_t lo, hi;
} xrange;

static struct {
    int mode;
    unsigned rate;
    uint64_t period_ns;
    atomic_int running; /* the handler works only while set */
    atomic_int stop;
    pthread_mutex_t stop_mu; /* the sampler sleeps on stop_cv: a stop wakes it at once */
    pthread_cond_t stop_cv;
    int cv_ready;
    atomic_int rescan; /* a thread started: scan now */
    atomic_int stale;  /* code was unloaded: forget resolved addresses */
    pthread_t thread;
    int thread_running;
    int handler_installed;
    int sampler_tid;

    sslot *slots; /* MAX_SLOTS, mmap'd: the handler validates a slot by its address */
    sslot **fd_slot; /* MAX_FDS: a perf event's descriptor to its slot */
    int perf;        /* CPU mode: 1 perf task-clock events, 0 not tried yet, -1 POSIX CPU timers */
    int perf_exclude_kernel;
    unsigned scan;
    unsigned nslots; /* slots ever used: the loops stop there */

    anode *nodes;
    uint32_t nnodes;
    uint32_t *hash; /* node index + 1, 0 empty */
    uint32_t *dirty;
    uint32_t ndirty;

    ipent *cache;
    uint32_t ncache;
    uint64_t cache_born;

    xrange *exec;   /* the executable mappings, by address (/proc/self/maps) */
    size_t nexec, capexec;
    uint64_t exec_born;
    uint32_t exec_gen; /* bumped by every read */
    uint64_t exec_rip_quiet; /* no reading for an unlisted RIP before then */

    uint32_t waiting_name, unknown_name;
    int resolving_rip; /* resolve() is naming an interrupted RIP */
    uint64_t samples, dropped, truncated, threads;
    uint64_t fixed; /* samples whose caller came from the stack, not the frame pointer */
    uint64_t scans, maps_reads, resolves, cpu_ns; /* the sampler's own work, for a note */
} S;

/* ---- the signal handler ---- */

static int slot_valid(const sslot *s) {
    uintptr_t a = (uintptr_t)s, b = (uintptr_t)S.slots;
    return S.slots && a >= b && a < b + MAX_SLOTS * sizeof(sslot) && (a - b) % sizeof(sslot) == 0;
}

/* Whether the thread was in a system call: the kernel rewinds RIP onto the
 * `syscall` instruction (0f 05) of a call it will restart, or leaves it after
 * one that returns -EINTR. Code at RIP is mapped; RIP-2 is when on the same page. */
static int in_syscall(uint64_t ip, uint64_t rax) {
    const uint8_t *p = (const uint8_t *)ip;
    if (p[0] == 0x0f && p[1] == 0x05)
        return 1;
    if ((ip & 0xfff) >= 2 && p[-2] == 0x0f && p[-1] == 0x05 && (int64_t)rax == -EINTR)
        return 1;
    return 0;
}

/* Copies len bytes at addr without faulting on unmapped memory: 0 or -1.
 * A system call, so async-signal-safe (errno is restored by the handler). */
static int safe_read(uint64_t addr, void *out, size_t len) {
    struct iovec local = {out, len}, remote = {(void *)(uintptr_t)addr, len};
    return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L) == (long)len ? 0 : -1;
}

/* n words at addr: loads inside the known stack, or safe_read. */
static int stack_read(uint64_t addr, uint64_t *out, unsigned n, int safe) {
    if (safe)
        return safe_read(addr, out, n * 8u);
    for (unsigned i = 0; i < n; i++)
        out[i] = ((const uint64_t *)addr)[i];
    return 0;
}

int sampler_saved_fp(const uint64_t *words, uint32_t nw, uint64_t sp, uint64_t limit, int safe, uint64_t *fp) {
    for (uint32_t i = 1; i < nw; i++) {
        uint64_t w = words[i], f[2];
        if (w <= sp + 8 * i || w > limit - 16 || (w & 7))
            continue;
        if (stack_read(w, f, 2, safe) == 0 && f[0] > w && f[0] <= limit - 16 && f[1] >= 4096) {
            *fp = w;
            return (int)i;
        }
    }
    return -1;
}

static void take_sample(sslot *s, ucontext_t *uc, uint32_t weight) {
    unsigned h = atomic_load_explicit(&s->head, memory_order_relaxed);
    unsigned t = atomic_load_explicit(&s->tail, memory_order_acquire);
    if (h - t >= RING) {
        atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
        return;
    }
    srec *r = &s->ring[h % RING];
    const greg_t *g = uc->uc_mcontext.gregs;
    uint64_t ip = (uint64_t)g[REG_RIP], sp = (uint64_t)g[REG_RSP], fp = (uint64_t)g[REG_RBP];
    uint64_t lo = atomic_load_explicit(&s->lo, memory_order_relaxed);
    uint64_t hi = atomic_load_explicit(&s->hi, memory_order_relaxed);
    uint32_t n = 0, flags = 0;
    r->ip[n++] = ip;
    r->top = 0;
    r->nwords = 0;
    r->extra = 0;
    int known = hi && sp >= lo && sp + 8 <= hi && !(sp & 7);
    if (!known) /* the sampler thread looks for the stack's mapping */
        atomic_store_explicit(&s->probe_sp, sp, memory_order_relaxed);
    /* Before the stack's bounds are known (the thread's first samples, until
     * the sampler thread has read /proc/self/maps), the same walk reads through
     * process_vm_readv, which fails instead of faulting, no further than
     * STACK_GUESS above the stack pointer. */
    int safe = !known;
    uint64_t limit = known ? hi : sp + STACK_GUESS;
    if (!sp || (sp & 7) || limit < sp + 16) {
        flags |= REC_UNWALKED;
    } else {
        uint32_t nw = 0;
        if (!safe) {
            for (; nw < SP_WORDS && sp + 8 * nw + 8 <= hi; nw++)
                r->words[nw] = ((const uint64_t *)sp)[nw];
        } else if (safe_read(sp, r->words, SP_WORDS * 8) == 0) {
            nw = SP_WORDS;
        } else if (safe_read(sp, r->words, SP_WORDS_MIN * 8) == 0) { /* near the stack's top */
            nw = SP_WORDS_MIN;
        }
        r->nwords = nw;
        r->top = nw ? r->words[0] : 0;
        if (!nw)
            flags |= REC_UNWALKED;
        if (nw && !(fp >= sp && fp <= limit - 16 && !(fp & 7))) {
            /* Native code built without frame pointers uses RBP as it likes,
             * but saves its caller's (callee-saved) on the stack: the first
             * word above RSP that points further up the stack at a frame
             * whose saved RBP points further up still is taken as the
             * chain's start. The sampler thread keeps the chain so found only
             * if it finds the managed caller below it (REC_FP_FOUND). */
            if (sampler_saved_fp(r->words, nw, sp, limit, safe, &fp) >= 0)
                flags |= REC_FP_FOUND;
        }
        r->fpoff = nw && fp >= sp && fp <= limit - 16 && !(fp & 7) && fp - sp < (1ull << 31) ? (uint32_t)(fp - sp) : 0;
        unsigned budget = SCAN_WORDS;
        while (nw && n < MAX_DEPTH && fp >= sp && fp <= limit - 16 && !(fp & 7)) {
            uint64_t f[2];
            if (stack_read(fp, f, 2, safe) != 0 || f[1] < 4096)
                break;
            uint64_t next = f[0];
            r->ip[n++] = f[1];
            if (next <= fp || next > limit - 16)
                break;
            /* An OSR method's frame saves the RBP of the Tier0 frame's caller
             * and holds the address of the Tier0 code's patchpoint call: the
             * chain skips the Tier0 frame, and with it the return address into
             * the caller. That frame lies between fp and next, its saved RBP
             * equal to next: its return address is the word after. Bounded by
             * SCAN_WORDS per sample; the sampler thread keeps the address only
             * if it follows a call. */
            if (n < MAX_DEPTH && n < 64 && budget && next >= fp + 32) {
                /* the words [fp+16, next), at most budget of them: loaded in
                 * place, or with one system call before the bounds are known */
                uint64_t span = (next - fp - 16) / 8, buf[SCAN_CHUNK];
                unsigned cnt = (unsigned)(span < budget ? span : budget);
                const uint64_t *words = (const uint64_t *)(fp + 16);
                if (safe) {
                    cnt = cnt < SCAN_CHUNK ? cnt : SCAN_CHUNK;
                    words = safe_read(fp + 16, buf, cnt * 8u) == 0 ? buf : NULL;
                }
                budget -= cnt;
                for (unsigned i = 0; words && i < cnt; i++) {
                    if (words[i] != next)
                        continue;
                    if (i + 1 >= span) /* its return address would be next's saved RBP */
                        break;
                    uint64_t ret = i + 1 < cnt ? words[i + 1] : 0;
                    if (i + 1 >= cnt && stack_read(fp + 16 + 8 * (i + 1), &ret, 1, safe) != 0)
                        ret = 0;
                    if (ret >= 4096) {
                        r->extra |= 1ull << n;
                        r->ip[n++] = ret;
                    }
                    break;
                }
            }
            fp = next;
        }
    }
    if (S.mode == SAMPLER_WALL && in_syscall(ip, (uint64_t)g[REG_RAX]))
        flags |= REC_WAITING;
    r->n = n;
    r->flags = flags;
    r->weight = weight;
    atomic_store_explicit(&s->head, h + 1, memory_order_release);
}

static void on_signal(int sig, siginfo_t *si, void *ucv) {
    (void)sig;
    int saved = errno;
    if (si && (si->si_code == SI_TIMER || si->si_code == SI_QUEUE || si->si_code == POLL_IN) &&
        atomic_load_explicit(&S.running, memory_order_relaxed)) {
        sslot *s = si->si_value.sival_ptr;
        if (si->si_code == POLL_IN)
            s = si->si_fd >= 0 && si->si_fd < MAX_FDS && S.fd_slot ? S.fd_slot[si->si_fd] : NULL;
        if (slot_valid(s) && atomic_load_explicit(&s->tid, memory_order_relaxed) == gettid())
            take_sample(s, ucv, 1u + (si->si_code == SI_TIMER && si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0u));
    }
    errno = saved;
}

/* ---- threads and their stacks (sampler thread) ---- */

static sslot *slot_of(int tid) {
    for (unsigned i = 0; i < S.nslots; i++)
        if (atomic_load(&S.slots[i].tid) == tid)
            return &S.slots[i];
    return NULL;
}

/* The thread's task clock as a perf event that signals it every period: an
 * hrtimer, precise, where POSIX CPU timers only expire at scheduler ticks (and
 * so favour what runs right after a tick). -1 when perf events are refused. */
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

static void slot_arm(sslot *s, int tid) {
    s->perf_fd1 = 0;
    if (S.mode != SAMPLER_CPU)
        return;
    if (S.perf >= 0) {
        if (perf_arm(s, tid) == 0) {
            S.perf = 1;
            return;
        }
        if (S.perf == 0)
            S.perf = -1; /* refused from the first thread on: POSIX CPU timers */
        else
            return; /* the thread is gone, or out of descriptors */
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SAMPLER_SIGNAL;
    sev.sigev_value.sival_ptr = s;
    sev._sigev_un._tid = tid;
    /* the thread's CPU clock (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)) */
    clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6u);
    if (timer_create(clk, &sev, &s->timer) != 0)
        return;
    s->has_timer = 1;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    uint64_t first = S.period_ns / 2 + (uint64_t)(rand() % 1000) * (S.period_ns / 1000);
    its.it_value.tv_sec = (time_t)(first / 1000000000u);
    its.it_value.tv_nsec = (long)(first % 1000000000u);
    its.it_interval.tv_sec = (time_t)(S.period_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(S.period_ns % 1000000000u);
    timer_settime(s->timer, 0, &its, NULL);
}

static void slot_disarm(sslot *s) {
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

/* New threads get a slot, threads gone give theirs back (once drained). */
static void scan_threads(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    S.scans++;
    unsigned gen = ++S.scan;
    struct dirent *e;
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == S.sampler_tid)
            continue;
        sslot *s = slot_of(tid);
        if (!s) {
            s = slot_of(0);
            if (!s && S.nslots < MAX_SLOTS)
                s = &S.slots[S.nslots++];
            if (!s)
                continue;
            s->seen = gen;
            atomic_store(&s->lo, 0);
            atomic_store(&s->hi, 0);
            atomic_store(&s->probe_sp, 0);
            atomic_store(&s->tid, tid);
            slot_arm(s, tid);
            S.threads++;
        }
        s->seen = gen;
    }
    closedir(d);
    for (unsigned i = 0; i < S.nslots; i++) {
        sslot *s = &S.slots[i];
        if (atomic_load(&s->tid) && s->seen != gen) {
            slot_disarm(s);
            atomic_store(&s->tid, -1); /* drained below, then freed */
        }
    }
}

/* The stack mapping of every slot whose handler left a stack pointer. */
static void find_stacks(void) {
    int want = 0;
    for (unsigned i = 0; i < S.nslots && !want; i++)
        want = atomic_load(&S.slots[i].tid) > 0 && atomic_load(&S.slots[i].probe_sp);
    if (!want)
        return;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    S.maps_reads++;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' || perms[1] != 'w')
            continue;
        for (unsigned i = 0; i < S.nslots; i++) {
            sslot *s = &S.slots[i];
            uint64_t sp = atomic_load(&s->probe_sp);
            if (atomic_load(&s->tid) > 0 && sp && sp >= lo && sp < hi) {
                atomic_store(&s->lo, lo);
                atomic_store(&s->hi, hi);
                atomic_store(&s->probe_sp, 0);
            }
        }
    }
    fclose(f);
}

/* ---- resolving addresses ---- */

static void cache_clear(uint64_t now) {
    memset(S.cache, 0, IP_CACHE * sizeof *S.cache);
    S.ncache = 0;
    S.cache_born = now;
}

static uint64_t now_ns(void);

/* The executable mappings, read again when an address is in none of them and
 * the list is older than EXEC_MS (code heaps grow). */
static void exec_refresh(void) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    S.maps_reads++;
    S.nexec = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x')
            continue;
        if (S.nexec == S.capexec) {
            size_t cap = S.capexec ? S.capexec * 2 : 256;
            xrange *grown = realloc(S.exec, cap * sizeof *grown);
            if (!grown)
                break;
            S.exec = grown;
            S.capexec = cap;
        }
        S.exec[S.nexec].lo = lo; /* /proc/self/maps is sorted by address */
        S.exec[S.nexec++].hi = hi;
    }
    fclose(f);
    S.exec_born = now_ns();
    S.exec_gen++;
}

static int exec_find(uint64_t a) {
    size_t lo = 0, hi = S.nexec;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a < S.exec[mid].lo)
            hi = mid;
        else if (a >= S.exec[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

static int exec_contains(uint64_t a) {
    if (exec_find(a))
        return 1;
    if (now_ns() - S.exec_born < EXEC_MS * 1000000ull)
        return 0;
    exec_refresh();
    return exec_find(a);
}

/* The cache entry of ip, made if new: whether ip is in executable memory is
 * known, nothing else yet (no call into the runtime). */
static ipent *entry(uint64_t ip) {
    uint32_t h = (uint32_t)((ip * 0x9E3779B97F4A7C15ull) >> 48) & (IP_CACHE - 1);
    while (S.cache[h].ip) {
        ipent *e = &S.cache[h];
        if (e->ip == ip) {
            if (!e->code && (e->exec_gen != S.exec_gen || now_ns() - S.exec_born >= EXEC_MS * 1000000ull) &&
                exec_contains(ip)) {
                e->code = 1; /* code that came after the list said no */
                e->name = 0;
            }
            if (!e->code)
                e->exec_gen = S.exec_gen;
            return e;
        }
        h = (h + 1) & (IP_CACHE - 1);
    }
    if (S.ncache * 2 >= IP_CACHE) {
        cache_clear(S.cache_born);
        return entry(ip);
    }
    ipent *e = &S.cache[h];
    e->ip = ip;
    e->slot = -2;
    S.ncache++;
    e->code = (uint8_t)exec_contains(ip);
    e->exec_gen = S.exec_gen;
    if (!e->code)
        e->name = S.unknown_name;
    return e;
}

/* ip named: native modules by symbol; the runtime is asked only about
 * executable memory outside them (JIT code, stubs, the ReadyToRun images it
 * mapped itself), and only for the interrupted RIP or a checked return address:
 * GetFunctionFromIP can fault on an address inside a ReadyToRun image that is
 * not code. */
static const ipent *resolve(uint64_t ip) {
    ipent *e = entry(ip);
    if (!e->code && ip == e->ip && e->name == S.unknown_name && S.resolving_rip) {
        /* An interrupted RIP is code, whatever the list says: code the list
         * does not hold yet (just compiled), so its callers' return addresses
         * may be in new code too. Read again, if older than EXEC_RIP_MS. */
        uint64_t now = now_ns();
        if (now - S.exec_born >= EXEC_RIP_MS * 1000000ull && now >= S.exec_rip_quiet) {
            exec_refresh();
            if (!exec_find(ip)) /* code outside every mapping: no use reading again soon */
                S.exec_rip_quiet = now + CACHE_MS * 1000000ull;
        }
        e->code = 1;
        e->name = 0;
    }
    if (e->resolved || !e->code)
        return e;
    e->resolved = 1;
    S.resolves++;
    char buf[512];
    e->mapped = (uint8_t)symbols_name((uintptr_t)ip, buf, sizeof buf);
    FunctionID fid = 0;
    if (!e->mapped && g_agent.info &&
        SUCCEEDED(INFO_CALL(GetFunctionFromIP, (LPCBYTE)(uintptr_t)ip, &fid)) && fid) {
        e->func = fid;
        e->name = names_get(NAMES_FUNCTION, fid, 1);
        e->managed = e->mapped = 1;
        return e;
    }
    e->mapped = 1; /* executable memory: its bytes can be read */
    e->name = rec_string(buf, strlen(buf));
    return e;
}

static int after_call(uint64_t addr);

/* Whether addr can be a return address: in executable memory, after a call
 * instruction (cached in the entry of addr - 1). */
static int is_return_address(uint64_t addr) {
    if (addr < 4096)
        return 0;
    ipent *c = entry(addr - 1);
    if (!c->code)
        return 0;
    if (!c->call)
        c->call = after_call(addr) ? 1 : 2;
    return c->call == 1;
}

/* Whether addr follows a call instruction: e8 rel32, or ff /2 in any of its
 * forms (by register, [reg], [rip+disp32], [reg+disp8/32], with SIB, with a
 * REX prefix). The bytes are read through process_vm_readv: an address inside
 * a module's span may still be unmapped (the gaps between its segments). */
int sampler_follows_call(const uint8_t b[8]) {
    if (b[3] == 0xe8)
        return 1;
    for (unsigned len = 2; len <= 8; len++) {
        unsigned i = 8 - len, rex = (b[i] & 0xf0) == 0x40;
        if (i + rex + 1 >= 8 || b[i + rex] != 0xff)
            continue;
        uint8_t modrm = b[i + rex + 1];
        unsigned mod = modrm >> 6, rm = modrm & 7, n = 2 + rex;
        if (((modrm >> 3) & 7) != 2)
            continue;
        if (mod != 3 && rm == 4) {
            if (i + rex + 2 >= 8)
                continue;
            n++;
            if (mod == 0 && (b[i + rex + 2] & 7) == 5)
                n += 4;
        }
        if (mod == 0 && rm == 5)
            n += 4;
        else if (mod == 1)
            n += 1;
        else if (mod == 2)
            n += 4;
        if (n == len)
            return 1;
    }
    return 0;
}

/* Length of the ModRM operand at m (ModRM, SIB, displacement); 0 when it runs
 * past end. */
static size_t modrm_len(const uint8_t *m, const uint8_t *end) {
    if (m >= end)
        return 0;
    unsigned mod = m[0] >> 6, rm = m[0] & 7;
    size_t n = 1;
    if (mod != 3 && rm == 4) {
        if (m + 1 >= end)
            return 0;
        n++;
        if (mod == 0 && (m[1] & 7) == 5)
            n += 4;
    }
    if (mod == 0 && rm == 5)
        n += 4;
    else if (mod == 1)
        n += 1;
    else if (mod == 2)
        n += 4;
    return m + n <= end ? n : 0;
}

int sampler_return_slot(const uint8_t *code, size_t len) {
    const uint8_t *p = code, *end = code + len;
    int64_t delta = 0; /* the stack pointer at p, from the interrupted one */
    for (int steps = 0; steps < 32 && p < end; steps++) {
        unsigned rex = (p[0] & 0xf0) == 0x40 ? p[0] : 0;
        const uint8_t *o = p + (rex ? 1 : 0);
        if (o >= end)
            return -1;
        unsigned op = o[0], rexb = rex & 1 ? 8 : 0, rexr = rex & 4 ? 8 : 0;
        size_t left = (size_t)(end - o);
        if (op == 0x55 && !rexb) /* push rbp: the return address is on top */
            return delta >= 0 ? (int)delta : -1;
        if (op == 0x5d && !rexb) /* pop rbp ahead: RBP is still the function's own */
            return -1;
        if (op >= 0x50 && op <= 0x57) {
            delta -= 8;
            p = o + 1;
            continue;
        }
        if (op >= 0x58 && op <= 0x5f) {
            delta += 8;
            p = o + 1;
            continue;
        }
        if (op == 0xc3 || op == 0xc2)
            return delta >= 0 ? (int)delta : -1;
        if (op == 0xc9) /* leave */
            return -1;
        if (op == 0x90) {
            p = o + 1;
            continue;
        }
        if (op == 0xc5 && left >= 3 && o[1] == 0xf8 && o[2] == 0x77) { /* vzeroupper */
            p = o + 3;
            continue;
        }
        if (rex == 0x48 && left >= 3 && (op == 0x83 || op == 0x81) && (o[1] == 0xec || o[1] == 0xc4)) {
            size_t ilen = op == 0x83 ? 3 : 6;
            if (left < ilen)
                return -1;
            int64_t imm = op == 0x83 ? (int8_t)o[2] : (int32_t)(o[2] | o[3] << 8 | o[4] << 16 | (uint32_t)o[5] << 24);
            delta += o[1] == 0xec ? -imm : imm;
            p = o + ilen;
            continue;
        }
        if (rex == 0x48 && left >= 3 && ((op == 0x89 && o[1] == 0xe5) || (op == 0x8b && o[1] == 0xec))) {
            int64_t at = delta + 8; /* mov rbp, rsp: RBP will point at the saved RBP */
            return at >= 0 ? (int)at : -1;
        }
        if (rex == 0x48 && ((op == 0x89 && left >= 2 && o[1] == 0xec) || (op == 0x8b && left >= 2 && o[1] == 0xe5)))
            return -1; /* mov rsp, rbp */
        if (rex == 0x48 && op == 0x8d && left >= 2) {
            unsigned m = o[1];
            if ((m == 0x6c || m == 0xac) && left >= 3 && o[2] == 0x24) { /* lea rbp, [rsp+disp] */
                if (left < (m == 0x6c ? 4u : 7u))
                    return -1;
                int64_t d = m == 0x6c ? (int8_t)o[3] : (int32_t)(o[3] | o[4] << 8 | o[5] << 16 | (uint32_t)o[6] << 24);
                int64_t at = delta + d + 8;
                return at >= 0 ? (int)at : -1;
            }
            if ((m & 0xc7) == 0x45 || (m & 0xc7) == 0x85) /* lea rsp, [rbp+disp] (or any lea from rbp) */
                if (((m >> 3) & 7) == 4)
                    return -1;
        }
        /* An instruction that neither branches nor writes RSP or RBP: skipped. */
        size_t n = 0;
        unsigned reg_dest = 0, rm_dest = 0, imm = 0;
        const uint8_t *m = o + 1;
        if (op == 0x0f) {
            if (left < 2)
                return -1;
            unsigned op2 = o[1];
            m = o + 2;
            if (op2 == 0x1f) { /* nop r/m */
                size_t ml = modrm_len(m, end);
                if (!ml)
                    return -1;
                p = m + ml;
                continue;
            }
            if (!(op2 == 0xaf || op2 == 0xb6 || op2 == 0xb7 || op2 == 0xbe || op2 == 0xbf || (op2 & 0xf0) == 0x40))
                return -1;
            reg_dest = 1;
        } else if (op == 0x01 || op == 0x09 || op == 0x21 || op == 0x29 || op == 0x31 || op == 0x89 || op == 0x39 ||
                   op == 0x85) {
            rm_dest = 1;
        } else if (op == 0x03 || op == 0x0b || op == 0x23 || op == 0x2b || op == 0x33 || op == 0x8b ||
                   op == 0x8d || op == 0x3b || op == 0x63) {
            reg_dest = 1;
        } else if (op == 0x69 || op == 0x6b) {
            reg_dest = 1;
            imm = op == 0x69 ? 4 : 1;
        } else if (op == 0x83 || op == 0xc1 || op == 0x81 || op == 0xc7) {
            rm_dest = 1;
            imm = op == 0x81 || op == 0xc7 ? 4 : 1;
        } else if (op == 0xd1 || op == 0xd3) {
            rm_dest = 1;
        } else if (op == 0xff || op == 0xf7) {
            if (left < 2)
                return -1;
            unsigned r = (o[1] >> 3) & 7; /* ff: inc, dec; f7: not, neg only */
            if (op == 0xff ? r > 1 : (r != 2 && r != 3))
                return -1;
            rm_dest = 1;
        } else if (op >= 0xb8 && op <= 0xbf) {
            unsigned r = (op & 7) | rexb;
            if (r == 4 || r == 5)
                return -1;
            n = 1 + (rex & 8 ? 8 : 4);
            if (left < n)
                return -1;
            p = o + n;
            continue;
        } else {
            return -1; /* a branch, a call, or what is not known here */
        }
        size_t ml = modrm_len(m, end);
        if (!ml)
            return -1;
        unsigned mod = m[0] >> 6, reg = ((m[0] >> 3) & 7) | rexr, rm = (m[0] & 7) | rexb;
        if (reg_dest && (reg == 4 || reg == 5))
            return -1;
        if (rm_dest && mod == 3 && (rm == 4 || rm == 5))
            return -1;
        if (m + ml + imm > end)
            return -1;
        p = m + ml + imm;
    }
    return -1;
}

static int after_call(uint64_t addr) {
    uint8_t b[8];
    struct iovec local = {b, sizeof b}, remote = {(void *)(uintptr_t)(addr - 8), sizeof b};
    if (addr < 8 || process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof b)
        return 0;
    return sampler_follows_call(b);
}

/* ---- aggregation ---- */

static uint32_t node_hash(uint32_t tid, uint32_t parent, uint64_t key) {
    uint64_t x = key * 0x9E3779B97F4A7C15ull ^ ((uint64_t)tid << 32 | parent) * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(x >> 40) & (NODE_HASH - 1);
}

/* The child of parent for a frame; 0 when the trees are full. */
static uint32_t node_child(uint32_t tid, uint32_t parent, uint64_t func, uint32_t name) {
    uint64_t key = func ? func : (uint64_t)name | 1ull << 63;
    uint32_t h = node_hash(tid, parent, key);
    while (S.hash[h]) {
        anode *n = &S.nodes[S.hash[h] - 1];
        if (n->key == key && n->parent == parent && n->tid == tid)
            return S.hash[h] - 1;
        h = (h + 1) & (NODE_HASH - 1);
    }
    if (S.nnodes == MAX_NODES)
        return 0;
    uint32_t i = S.nnodes++;
    anode *n = &S.nodes[i];
    n->tid = tid;
    n->parent = parent;
    n->key = key;
    n->func = func;
    n->name = name;
    S.hash[h] = i + 1;
    return i;
}

static void node_count(uint32_t i, int self, uint32_t w) {
    anode *n = &S.nodes[i];
    n->samples += w;
    n->self += self ? w : 0;
    if (!n->dirty) {
        n->dirty = 1;
        S.dirty[S.ndirty++] = i;
    }
}

/* A stack, leaf first: frame k is (funcs[k], names[k]). When the trees are
 * full, the deepest node reached holds the sample. */
static void aggregate(uint32_t tid, const uint64_t *funcs, const uint32_t *names, uint32_t n, uint32_t w) {
    uint32_t node = 0;
    S.samples += w;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t c = node_child(tid, node, funcs[k], names[k]);
        if (!c) {
            S.truncated++;
            if (node) {
                S.nodes[node].samples -= w;
                node_count(node, 1, w);
            }
            return;
        }
        node_count(c, k == 0, w);
        node = c;
    }
}

/* Where the return address of the function at an interrupted RIP is, when its
 * frame pointer is not its own there (sampler_return_slot), in words from the
 * stack pointer; -1 when the frame-pointer chain holds. Cached with the RIP. */
static int leaf_slot(uint64_t ip) {
    ipent *e = entry(ip);
    if (e->slot != -2)
        return e->slot;
    uint8_t code[64];
    size_t want = sizeof code, page_left = 4096 - (ip & 4095);
    struct iovec local = {code, want}, remote = {(void *)(uintptr_t)ip, want};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got <= 0 && page_left < want) { /* the next page is not mapped */
        local.iov_len = remote.iov_len = page_left;
        got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    }
    int at = got > 0 ? sampler_return_slot(code, (size_t)got) : -1;
    e->slot = (int8_t)(at >= 0 && at % 8 == 0 && at / 8 < (int)SP_WORDS ? at / 8 : -1);
    return e->slot;
}

static void aggregate_record(uint32_t tid, const srec *r) {
    uint64_t funcs[MAX_DEPTH + 2];
    uint32_t names[MAX_DEPTH + 2];
    uint32_t m = 0;
    if (r->flags & REC_WAITING) {
        funcs[m] = 0;
        names[m++] = S.waiting_name;
    }
    uint32_t n = r->n;
    for (uint32_t k = 0; k < n && k < MAX_DEPTH; k++) {
        /* a return address points after its call: resolve the call itself;
         * one that is not after a call ends the stack (the frame pointer
         * chain went through code that does not keep one) */
        int osr = k < 64 && (r->extra >> k & 1);
        if (k && !is_return_address(r->ip[k])) {
            if (osr)
                continue; /* a word the OSR scan found that is no return address */
            break;
        }
        S.resolving_rip = k == 0;
        const ipent *e = resolve(k ? r->ip[k] - 1 : r->ip[k]);
        S.resolving_rip = 0;
        uint64_t func = e->func; /* copied: a later lookup may clear the cache */
        uint32_t name = e->name;
        int chain_native = 0; /* the chain's next frame is native code's own: its managed caller is further up */
        if (k == 0 && !e->managed && e->mapped && n >= 2 && is_return_address(r->ip[1]))
            chain_native = !resolve(r->ip[1] - 1)->managed;
        if (k == 0 && !e->managed && e->mapped && !chain_native && !(r->flags & REC_UNWALKED)) {
            /* Native code without frame pointers (libcoreclr's allocation
             * helpers, the GC) called from a managed method leaves RBP as that
             * method's: the chain gives the method's caller and skips it. Its
             * return address is below where the chain starts: the lowest word
             * there that returns into managed code after a call, not one of
             * the chain's. The native frames under it are shown as one. Not
             * when the chain goes on through native code (RBP is a native
             * frame's own): a managed address below it is a stale word. */
            uint32_t below = r->fpoff / 8 < r->nwords ? r->fpoff / 8 : r->nwords;
            uint64_t managed = 0;
            uint32_t via = 0;
            int seen_native = 0;
            for (uint32_t i = 0; i < below && !managed; i++) {
                uint64_t w = r->words[i];
                /* most words are data: no cache entry for what no executable
                 * mapping holds (the list is not read again for them) */
                if (w < 4096 || (S.nexec && !exec_find(w - 1)) || !is_return_address(w))
                    continue;
                int chained = 0;
                for (uint32_t j = 1; j < r->n && !chained; j++)
                    chained = r->ip[j] == w;
                const ipent *c = chained ? NULL : resolve(w - 1);
                if (c && c->managed) {
                    managed = w;
                } else if (c && !seen_native) {
                    seen_native = 1; /* the native caller of a native leaf (libc under libcoreclr) */
                    via = c->name != name ? c->name : 0;
                }
            }
            if (managed) {
                const ipent *c = resolve(managed - 1);
                funcs[m] = func;
                names[m++] = name;
                if (via) {
                    funcs[m] = 0;
                    names[m++] = via;
                }
                funcs[m] = c->func;
                names[m++] = c->name;
                S.fixed++;
                continue;
            }
            if (r->flags & REC_FP_FOUND)
                n = 1; /* a chain found by a guess the stack did not confirm */
        }
        if (k == 0 && !(r->flags & REC_UNWALKED)) {
            /* In a prologue or an epilogue, or in a function that keeps no
             * frame, RBP is the caller's: the chain gives the caller's caller,
             * and the caller's return address is on the stack near RSP. */
            int slot = leaf_slot(r->ip[0]);
            uint64_t ra = slot >= 0 && (uint32_t)slot < r->nwords ? r->words[slot] : 0;
            if (ra && (n < 2 || ra != r->ip[1]) && is_return_address(ra)) {
                const ipent *c = resolve(ra - 1);
                funcs[m] = func;
                names[m++] = name;
                funcs[m] = c->func;
                names[m++] = c->name;
                S.fixed++;
                continue;
            }
        }
        int native_leaf = k == 0 && !e->managed && e->mapped;
        if (native_leaf && r->top && (n < 2 || r->top != r->ip[1]) && is_return_address(r->top)) {
            /* a native leaf that keeps no frame (libc): its caller's return
             * address is at the stack pointer when it pushed nothing */
            const ipent *c = resolve(r->top - 1);
            funcs[m] = func;
            names[m++] = name;
            funcs[m] = c->func;
            names[m++] = c->name;
            continue;
        }
        if (m && !func && !funcs[m - 1] && names[m - 1] == name)
            continue; /* "[libcoreclr.so]" once for a run of its unnamed frames */
        if (m && func && funcs[m - 1] == func && k + 1 < 64 && (r->extra >> (k + 1) & 1))
            continue; /* an OSR method's patchpoint call in its Tier0 code: one frame */
        funcs[m] = func;
        names[m++] = name;
    }
    aggregate((uint32_t)tid, funcs, names, m, r->weight ? r->weight : 1);
}

static void drain(void) {
    for (unsigned i = 0; i < S.nslots; i++) {
        sslot *s = &S.slots[i];
        int tid = atomic_load(&s->tid);
        if (!tid)
            continue;
        unsigned h = atomic_load_explicit(&s->head, memory_order_acquire);
        unsigned t = atomic_load_explicit(&s->tail, memory_order_relaxed);
        for (; t != h; t++) {
            const srec *r = &s->ring[t % RING];
            if (tid > 0)
                aggregate_record((uint32_t)tid, r);
            atomic_store_explicit(&s->tail, t + 1, memory_order_release);
        }
        S.dropped += atomic_exchange(&s->dropped, 0);
        if (tid < 0) {
            atomic_store(&s->head, 0);
            atomic_store(&s->tail, 0);
            atomic_store(&s->tid, 0);
        }
    }
}

static void emit_dirty(void) {
    for (uint32_t k = 0; k < S.ndirty; k++) {
        anode *n = &S.nodes[S.dirty[k]];
        n->dirty = 0;
        REC(SampleNode, n->tid, S.dirty[k], n->parent, n->func, n->name, n->samples,
            n->samples * S.period_ns, n->self * S.period_ns, n->self);
    }
    S.ndirty = 0;
}

/* ---- suspend mode: the runtime's own stack walks ---- */

/* ICorProfilerThreadEnum (corprof.idl): IUnknown, Skip, Reset, Clone, GetCount, Next. */
typedef struct thread_enum_vtbl {
    DNP_IUNKNOWN_SLOTS(ICorProfilerThreadEnum)
    HRESULT (*Skip)(ICorProfilerThreadEnum *self, ULONG celt);
    HRESULT (*Reset)(ICorProfilerThreadEnum *self);
    HRESULT (*Clone)(ICorProfilerThreadEnum *self, ICorProfilerThreadEnum **ppEnum);
    HRESULT (*GetCount)(ICorProfilerThreadEnum *self, ULONG *pcelt);
    HRESULT (*Next)(ICorProfilerThreadEnum *self, ULONG celt, ThreadID ids[], ULONG *pceltFetched);
} thread_enum_vtbl;
struct ICorProfilerThreadEnum {
    const thread_enum_vtbl *lpVtbl;
};

#define SUSPEND_THREADS 256

typedef struct snap {
    uint32_t n;
    uint64_t func[MAX_DEPTH], ip[MAX_DEPTH];
} snap;

static snap g_snaps[SUSPEND_THREADS];
static uint32_t g_snap_tid[SUSPEND_THREADS];

static HRESULT snap_frame(FunctionID func, UINT_PTR ip, COR_PRF_FRAME_INFO fi, ULONG32 size, BYTE *ctx,
                          void *data) {
    (void)fi;
    (void)size;
    (void)ctx;
    snap *s = data;
    if (s->n < MAX_DEPTH) {
        s->func[s->n] = func;
        s->ip[s->n++] = ip;
    }
    return S_OK;
}

static void suspend_sample(void) {
    if (!g_agent.info || FAILED(g_agent.info->lpVtbl->SuspendRuntime(g_agent.info)))
        return;
    ICorProfilerThreadEnum *en = NULL;
    uint32_t count = 0;
    if (SUCCEEDED(INFO_CALL(EnumThreads, &en)) && en) {
        ThreadID ids[64];
        ULONG got = 0;
        while (count < SUSPEND_THREADS && SUCCEEDED(en->lpVtbl->Next(en, 64, ids, &got)) && got > 0 &&
               got <= 64) {
            for (ULONG i = 0; i < got && count < SUSPEND_THREADS; i++) {
                DWORD tid = 0;
                if (FAILED(INFO_CALL(GetThreadInfo, ids[i], &tid)) || !tid)
                    continue;
                snap *s = &g_snaps[count];
                s->n = 0;
                if (SUCCEEDED(INFO_CALL(DoStackSnapshot, ids[i], snap_frame, 0, s, NULL, 0)) && s->n)
                    g_snap_tid[count++] = tid;
            }
        }
        en->lpVtbl->Release(en);
    }
    g_agent.info->lpVtbl->ResumeRuntime(g_agent.info);
    /* names only now: the threads that hold the runtime's locks run again */
    for (uint32_t k = 0; k < count; k++) {
        snap *s = &g_snaps[k];
        uint32_t names[MAX_DEPTH];
        for (uint32_t j = 0; j < s->n; j++) {
            if (s->func[j]) {
                names[j] = names_get(NAMES_FUNCTION, s->func[j], 1);
            } else {
                const ipent *e = resolve(s->ip[j]);
                s->func[j] = e->func;
                names[j] = e->name;
            }
        }
        aggregate(g_snap_tid[k], s->func, names, s->n, 1);
    }
}

/* ---- the sampler thread ---- */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void signal_all(void) {
    pid_t pid = getpid();
    for (unsigned i = 0; i < S.nslots; i++) {
        sslot *s = &S.slots[i];
        int tid = atomic_load(&s->tid);
        if (tid <= 0)
            continue;
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = SAMPLER_SIGNAL;
        si.si_code = SI_QUEUE;
        si.si_pid = pid;
        si.si_uid = getuid();
        si.si_value.sival_ptr = s;
        syscall(SYS_rt_tgsigqueueinfo, pid, tid, SAMPLER_SIGNAL, &si);
    }
}

static void *sampler_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    S.sampler_tid = gettid();
    uint64_t now = now_ns(), next_scan = 0, next_emit = now + EMIT_MS * 1000000ull, started = now;
    uint64_t tick = S.mode == SAMPLER_CPU ? 10000000ull : S.period_ns;
    if (S.mode == SAMPLER_CPU && S.period_ns * RING / 4 > tick)
        tick = S.period_ns * RING / 4 < 50000000ull ? S.period_ns * RING / 4 : 50000000ull;
    uint64_t next = now;
    int noted = 0;
    while (!atomic_load(&S.stop)) {
        now = now_ns();
        if (S.mode != SAMPLER_SUSPEND && (now >= next_scan || atomic_exchange(&S.rescan, 0))) {
            scan_threads();
            if (S.mode == SAMPLER_CPU && !noted && S.perf) {
                noted = 1;
                rec_note(0, "cpu sampling by %s", S.perf > 0 ? (S.perf_exclude_kernel ? "perf task-clock events, user time only (perf_event_paranoid)" : "perf task-clock events") : "POSIX CPU timers (perf events refused, or " DNP_ENV_SAMPLE_TIMERS "=1): tick-grained");
            }
            next_scan = now + SCAN_MS * 1000000ull;
        }
        if (S.mode == SAMPLER_WALL)
            signal_all();
        else if (S.mode == SAMPLER_SUSPEND)
            suspend_sample();
        if (now - S.cache_born >= CACHE_MS * 1000000ull || atomic_exchange(&S.stale, 0))
            cache_clear(now);
        if (S.mode != SAMPLER_SUSPEND) {
            drain();
            find_stacks();
        }
        if (now >= next_emit) {
            /* A node that keeps changing is written once per period: periods
             * that grow with the run keep an hour's trace to a few hundred
             * writes of each hot path. */
            emit_dirty();
            uint64_t every = (now - started) / EMIT_FRACTION;
            next_emit = now + (every > EMIT_MS * 1000000ull ? every : EMIT_MS * 1000000ull);
        }
        next += tick;
        now = now_ns();
        if (next < now)
            next = now; /* behind: no burst to catch up */
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        pthread_mutex_lock(&S.stop_mu);
        while (!atomic_load(&S.stop) && pthread_cond_timedwait(&S.stop_cv, &S.stop_mu, &ts) == 0) {
        }
        pthread_mutex_unlock(&S.stop_mu);
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        S.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    return NULL;
}

void sampler_thread_started(void) {
    atomic_store_explicit(&S.rescan, 1, memory_order_relaxed);
}

void sampler_code_unloaded(void) {
    atomic_store_explicit(&S.stale, 1, memory_order_relaxed);
}

void sampler_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    if (!cfg->sample)
        return;
    /* unloads, so that no address is named after code that went away */
    *mask |= 0x4u;       /* COR_PRF_MONITOR_MODULE_LOADS */
    *mask_high |= 0x4u;  /* COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS */
    if (cfg->sample == SAMPLER_SUSPEND)
        *mask |= 0x10000000u; /* COR_PRF_ENABLE_STACK_SNAPSHOT */
}

static void release_memory(void) {
    free(S.nodes);
    free(S.hash);
    free(S.dirty);
    free(S.cache);
    free(S.fd_slot);
    S.fd_slot = NULL;
    free(S.exec);
    S.exec = NULL;
    S.nexec = S.capexec = 0;
    if (S.slots)
        munmap(S.slots, MAX_SLOTS * sizeof(sslot));
    S.nodes = NULL;
    S.hash = S.dirty = NULL;
    S.cache = NULL;
    S.slots = NULL;
}

int sampler_start(const agent_config *cfg) {
    if (!cfg->sample || S.thread_running)
        return 0;
    S.mode = cfg->sample;
    S.rate = cfg->sample_rate ? cfg->sample_rate : dnp_setting_default(DNP_SET_SAMPLE_RATE);
    S.period_ns = 1000000000ull / S.rate;
    S.nnodes = 1; /* 0 is every tree's root */
    S.nslots = 0;
    S.ndirty = 0;
    S.samples = S.dropped = S.truncated = S.threads = S.fixed = 0;
    atomic_store(&S.stop, 0);
    if (S.mode == SAMPLER_SUSPEND && !AGENT_HAS_INFO(SuspendRuntime)) {
        agent_say("--sample=suspend needs ICorProfilerInfo10 (.NET Core 3.0 or later); no samples");
        return -1;
    }
    S.nodes = calloc(MAX_NODES, sizeof *S.nodes);
    S.hash = calloc(NODE_HASH, sizeof *S.hash);
    S.dirty = calloc(MAX_NODES, sizeof *S.dirty);
    S.cache = calloc(IP_CACHE, sizeof *S.cache);
    S.fd_slot = calloc(MAX_FDS, sizeof *S.fd_slot);
    /* DNP_ENV_SAMPLE_TIMERS=1: POSIX CPU timers even where perf events work
     * (cheaper in some VMs, tick-grained: docs/sampling.md) */
    S.perf = cfg->sample_timers ? -1 : 0;
    S.perf_exclude_kernel = 0;
    void *slots = mmap(NULL, MAX_SLOTS * sizeof(sslot), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    S.slots = slots == MAP_FAILED ? NULL : slots;
    if (!S.nodes || !S.hash || !S.dirty || !S.cache || !S.slots || !S.fd_slot) {
        release_memory();
        agent_say("no memory for the sampler's trees; no samples");
        return -1;
    }
    S.cache_born = now_ns();
    S.waiting_name = rec_string("[waiting]", 9);
    S.unknown_name = rec_string("[unknown]", 9);
    exec_refresh();
    if (S.mode != SAMPLER_SUSPEND) {
        struct sigaction old, sa;
        if (sigaction(SAMPLER_SIGNAL, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO ? old.sa_sigaction != NULL
                                                           : old.sa_handler != SIG_DFL &&
                                                                 old.sa_handler != SIG_IGN) &&
            !S.handler_installed) {
            agent_say("SIGPROF has a handler already (the program's own profiler?); --sample needs "
                      "it, so no samples (try --sample=suspend)");
            release_memory();
            return -1;
        }
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SAMPLER_SIGNAL, &sa, NULL) != 0) {
            agent_say("cannot install the SIGPROF handler (%s); no samples", strerror(errno));
            release_memory();
            return -1;
        }
        S.handler_installed = 1;
    }
    REC(SampleConfig, (uint64_t)S.mode, S.rate, S.period_ns);
    if (!S.cv_ready) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&S.stop_cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&S.stop_mu, NULL);
        S.cv_ready = 1;
    }
    atomic_store(&S.running, 1);
    if (pthread_create(&S.thread, NULL, sampler_main, NULL) != 0) {
        atomic_store(&S.running, 0);
        agent_say("cannot start the sampler thread; no samples");
        release_memory();
        return -1;
    }
    S.thread_running = 1;
    return 0;
}

void sampler_stop(void) {
    if (!S.thread_running)
        return;
    pthread_mutex_lock(&S.stop_mu);
    atomic_store(&S.stop, 1);
    pthread_cond_broadcast(&S.stop_cv);
    pthread_mutex_unlock(&S.stop_mu);
    pthread_join(S.thread, NULL);
    S.thread_running = 0;
    atomic_store(&S.running, 0);
    for (unsigned i = 0; i < S.nslots; i++)
        slot_disarm(&S.slots[i]);
    /* A signal still pending is ignored, never the default action (which ends
     * the process), even once this library is gone. */
    if (S.handler_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sigaction(SAMPLER_SIGNAL, &sa, NULL);
        S.handler_installed = 0;
    }
    drain(); /* what is left in the rings: nothing writes them now */
    emit_dirty();
    REC(SampleStats, S.samples, S.dropped, S.truncated, S.threads);
    rec_note(0, "sampler thread: %.1f ms of CPU, %llu thread scans, %llu stack lookups, %llu addresses resolved, "
             "%llu callers found at the stack pointer (prologue, epilogue, frameless code)",
             (double)S.cpu_ns / 1e6, (unsigned long long)S.scans, (unsigned long long)S.maps_reads,
             (unsigned long long)S.resolves, (unsigned long long)S.fixed);
    release_memory();
    symbols_release();
}
