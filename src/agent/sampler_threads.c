/* sampler_threads.c: the threads sampled, each with a slot (its ring, its
 * timer, its stack's bounds), and their stacks' bounds (sampler.h).
 *
 * A thread gets its slot from whichever comes first:
 *  - the thread itself, as the runtime tells of it (ThreadAssignedToOSThread
 *    runs on the new thread): its slot made and armed there, so a thread that
 *    lives 30 ms is sampled from its start. Left to the scan, such a thread
 *    waited for the sampler thread, and a sampler thread that shares two
 *    CPUs with twenty busy threads waits long: 20 threads started 4 times,
 *    1.3 s of CPU, read as 90 ms;
 *  - its own handler, at the process timer's first signal to it (nothing to
 *    arm there: one timer serves every thread);
 *  - the sampler thread's scan of /proc/self/task every SCAN_MS: the threads
 *    the runtime does not tell of, and those before an attach.
 * The runtime tells of a thread's end too (ThreadDestroyed, on the thread):
 * its slot then stops standing for its pthread_self(), and wall mode counts
 * its last moments (sampler_thread_ending).
 * A slot's tid goes 0 (free) -> SLOT_CLAIMING -> the thread's id, with atomics
 * only (the handler may claim), and to -tid when its thread is gone, until its
 * ring is drained (sampler_drain), then 0. Arming (a perf event, a timer) is
 * done under g_arm, by the scan or by the thread itself. */
#include "sampler_internal.h"

#include "memread.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "callbacks.h"

static pthread_mutex_t g_arm = PTHREAD_MUTEX_INITIALIZER;

void sampler_arm_lock(void) {
    pthread_mutex_lock(&g_arm);
}

void sampler_arm_unlock(void) {
    pthread_mutex_unlock(&g_arm);
}

/* ---- slots ---- */

static sslot *slot_of(int tid) {
    unsigned n = atomic_load(&S.nslots);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load(&S.slots[i].tid) == tid)
            return &S.slots[i];
    return NULL;
}

/* A free slot, marked SLOT_CLAIMING: one given back first, else the next one
 * never used. NULL when MAX_SLOTS are taken. Async-signal-safe. */
static sslot *slot_take(void) {
    unsigned n = atomic_load(&S.nslots);
    for (unsigned i = 0; i < n; i++) {
        int free_tid = 0;
        if (!atomic_load_explicit(&S.slots[i].tid, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&S.slots[i].tid, &free_tid, SLOT_CLAIMING))
            return &S.slots[i];
    }
    while (n < MAX_SLOTS) {
        if (!atomic_compare_exchange_weak(&S.nslots, &n, n + 1))
            continue; /* n reloaded */
        int free_tid = 0; /* slot n is in the loops' range now: another claimant may have taken it */
        if (atomic_compare_exchange_strong(&S.slots[n].tid, &free_tid, SLOT_CLAIMING))
            return &S.slots[n];
        n = atomic_load(&S.nslots);
    }
    return NULL;
}

/* A slot for thread tid with its stack's bounds (0 unknown): a new one, or
 * the one another claimant published first (then *made is 0). The scan and
 * the thread itself may claim at once (the handler can interrupt the thread's
 * own claim): the lower-placed slot stays, the other is given back before
 * anything is armed on it. NULL when the table is full. Async-signal-safe. */
static sslot *slot_claim(int tid, uint64_t lo, uint64_t hi, int *made) {
    *made = 0;
    sslot *s = slot_take();
    if (!s)
        return NULL;
    s->seen = atomic_load(&S.scan); /* a scan under way counts it as found */
    atomic_store(&s->lo, lo);
    atomic_store(&s->hi, hi);
    atomic_store(&s->probe_sp, 0);
    atomic_store(&s->self, 0);
    atomic_store(&s->owed, 0);
    atomic_store(&s->wall_last, 0);
    atomic_store(&s->head, 0);
    atomic_store(&s->tail, 0);
    s->has_timer = 0;
    s->perf_fd1 = 0;
    s->wall_due = sampler_now_ns(); /* wall: its first signal counts the periods since now, however late the
                                     * sampler is (sampler_signal_all); those after its last: sampler_wall_tail */
    s->idle_leaf = 0;
    s->idle_misses = s->idle_skip = 0;
    s->paused = 0; /* its record's room (pause) is kept for the slot's next thread */
    atomic_store(&s->ended_ns, 0);
    s->last_leaf = 0;
    s->wall_timed = 0;
    atomic_store(&s->tid, tid);
    for (sslot *o = S.slots; o < s; o++)
        if (atomic_load(&o->tid) == tid) {
            atomic_store(&s->tid, 0);
            return o;
        }
    atomic_fetch_add(&S.threads, 1);
    *made = 1;
    return s;
}

/* The slot of the calling thread, for the process timer's signal (it names no
 * thread): by pthread_self() among the slots, else once by thread id, else
 * claimed now (its first signal: nothing to arm). NULL only when the table is
 * full. Async-signal-safe. */
sslot *sampler_slot_self(void) {
    uint64_t me = (uint64_t)pthread_self();
    unsigned n = atomic_load_explicit(&S.nslots, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&S.slots[i].self, memory_order_relaxed) == me)
            return &S.slots[i];
    int tid = gettid();
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&S.slots[i].tid, memory_order_relaxed) == tid)
            return &S.slots[i];
    int made;
    return slot_claim(tid, 0, 0, &made);
}

/* The calling thread's stack bounds, from the thread library (no system call
 * for a thread other than the main one): 1, or 0. */
static int stack_bounds(uint64_t *lo, uint64_t *hi) {
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return 0;
    int ok = pthread_attr_getstack(&a, &addr, &size) == 0 && addr && size;
    pthread_attr_destroy(&a);
    *lo = (uint64_t)(uintptr_t)addr;
    *hi = (uint64_t)(uintptr_t)addr + size;
    return ok;
}

int sampler_thread_here(int tid) {
    uint64_t lo = 0, hi = 0;
    /* the main thread's bounds the thread library reads from /proc/self/maps, a dozen system calls
     * in a .NET process: found from its first sample instead, if it has one */
    if (tid == memread_self_pid() || !stack_bounds(&lo, &hi))
        lo = hi = 0; /* found from its first sample's stack pointer (sampler_find_stacks) */
    sampler_arm_lock();
    sslot *s = NULL;
    if (atomic_load(&S.running)) {
        int made;
        s = slot_claim(tid, lo, hi, &made);
        if (s && made)
            sampler_slot_arm(s, tid);
        else if (s && !atomic_load(&s->hi) && hi > lo) {
            atomic_store(&s->lo, lo);
            atomic_store(&s->hi, hi);
        }
    }
    sampler_arm_unlock();
    return s != NULL;
}

/* The thread library gives a new thread the descriptor (and pthread_self())
 * of one that ended, at once, while the scan may keep the old slot for up to
 * SCAN_MS: the process timer's handler, which finds a slot by pthread_self(),
 * then put the new thread's samples in the old thread's slot. 256 threads of
 * 10 ms each: 245 samples on 60 threads (183 since). So an ending thread's
 * slot stops standing for its pthread_self() (perf events and timers name
 * their slot in the signal). */
void sampler_thread_ending(uint64_t id) {
    ThreadID current = 0;
    if (!S.thread_running || S.mode == SAMPLER_SUSPEND || FAILED(INFO_CALL(GetCurrentThreadID, &current)) ||
        current != (ThreadID)id)
        return; /* not on the thread that ends (a thread object finalized) */
    sampler_arm_lock(); /* the slots stay while the sampler runs */
    sslot *s = atomic_load(&S.running) ? slot_of(agent_tid()) : NULL;
    if (s) {
        atomic_store(&s->ended_ns, sampler_now_ns()); /* wall mode: its last moments (sampler_wall_tail) */
        atomic_store(&s->self, 0);
    }
    sampler_arm_unlock();
}

/* /proc/self/task, opened once and read again from its start at each scan:
 * opendir, its buffer and closedir at every scan were 70-150 us of the
 * sampler thread's each in a VM, ten scans a second (BENCHMARKS.md, "The
 * fixed cost, sixth round"). -1 until opened; reset in a forked child (the
 * parent's threads). */
static int g_task_fd = -1;

static void task_dir_forked(void) {
    if (g_task_fd >= 0)
        close(g_task_fd);
    g_task_fd = -1;
}

__attribute__((constructor)) static void task_dir_init(void) {
    pthread_atfork(NULL, NULL, task_dir_forked);
}

void sampler_task_dir_close(void) {
    task_dir_forked();
}

/* A thread seen by the scan of generation gen: a slot (armed) if it has none. */
static void scan_one(int tid, unsigned gen) {
    if (tid <= 0 || tid == S.sampler_tid)
        return;
    sslot *s = slot_of(tid);
    if (!s) {
        int made;
        s = slot_claim(tid, 0, 0, &made); /* its stack found from its first sample */
        if (!s)
            return;
        if (made)
            sampler_slot_arm(s, tid);
    }
    s->seen = gen;
}

/* New threads get a slot (armed), threads gone give theirs back (once
 * drained). Under g_arm: a thread may be arming its own slot. */
void sampler_scan_threads(void) {
    sampler_arm_lock();
    if (g_task_fd < 0)
        g_task_fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_task_fd < 0 || lseek(g_task_fd, 0, SEEK_SET) != 0) {
        sampler_arm_unlock();
        return;
    }
    S.scans++;
    unsigned gen = atomic_fetch_add(&S.scan, 1) + 1;
    char buf[4096] __attribute__((aligned(8)));
    ssize_t got;
    while ((got = getdents64(g_task_fd, buf, sizeof buf)) > 0) {
        for (ssize_t at = 0; at < got;) {
            const struct dirent64 *e = (const struct dirent64 *)(const void *)(buf + at);
            if (e->d_reclen == 0)
                break;
            scan_one(atoi(e->d_name), gen);
            at += e->d_reclen;
        }
    }
    if (got < 0) { /* a list cut short: no slot is given back on its word */
        sampler_arm_unlock();
        return;
    }
    unsigned n = atomic_load(&S.nslots);
    for (unsigned i = 0; i < n; i++) {
        sslot *s = &S.slots[i];
        int tid = atomic_load(&s->tid);
        if (tid > 0 && s->seen != gen) {
            sampler_slot_disarm(s);
            atomic_store(&s->self, 0);
            atomic_store(&s->tid, -tid); /* drained (its samples still its thread's), then freed */
        }
    }
    if (S.wall_timers)
        sampler_wall_restride();
    sampler_arm_unlock();
}

/* The stack mapping of every slot whose handler left a stack pointer (a
 * thread that did not tell its bounds as it started): asked of the kernel,
 * else from /proc/self/maps. */
void sampler_find_stacks(void) {
    int want = 0;
    for (unsigned i = 0; i < S.nslots && !want; i++)
        want = atomic_load(&S.slots[i].tid) > 0 && atomic_load(&S.slots[i].probe_sp);
    if (!want)
        return;
    want = 0; /* each stack pointer's mapping asked of the kernel alone (memread.h), else the whole list read */
    for (unsigned i = 0; i < S.nslots; i++) {
        sslot *s = &S.slots[i];
        uint64_t sp = atomic_load(&s->probe_sp), lo, hi;
        unsigned fl;
        if (atomic_load(&s->tid) <= 0 || !sp)
            continue;
        int r = memread_mapping(sp, &lo, &hi, &fl);
        if (r < 0) {
            want = 1;
            break;
        }
        S.maps_queries++;
        if (r && (fl & (MEMREAD_R | MEMREAD_W)) == (MEMREAD_R | MEMREAD_W)) {
            atomic_store(&s->lo, lo);
            atomic_store(&s->hi, hi);
            atomic_store(&s->probe_sp, 0);
        }
    }
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
