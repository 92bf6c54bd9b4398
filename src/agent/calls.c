/* calls.c: method enter/leave (ELT3, docs/design-notes.md#elt): the hooks and
 * the per-thread call trees they build. Which functions are hooked (the
 * function ID mapper and its filters) is calls_filter.c; the hooks' own cost,
 * calls_calibrate.c; the arguments' text (--args), calls_args.c.
 *
 * Each thread has a shadow stack and a call tree of its own (thread-local, no
 * lock): a node per call path, with its calls, inclusive and exclusive time and
 * tail calls, aggregated in place. Nodes live in fixed chunks that never move,
 * so that Shutdown can read another thread's tree. A thread writes its changed
 * nodes as CallNode events every CALLS_EMIT_MS, at its end, and Shutdown writes
 * every thread's.
 *
 * Frames left without a Leave (an exception unwound them) are found by the
 * caller SP the fast-path hooks receive: a frame whose caller SP is at or below
 * that of a new call, or below that of a returning method, is dead. This needs
 * no help from the exception callbacks and cannot pop a frame that is alive;
 * calls_unwind_leave() only notes when the unwind happened (docs/calls.md).
 *
 * Most calls and returns take the fast paths (general registers only, nothing
 * saved by the stubs); the rest the full C path. Call times come from an
 * ordered clock less the time the thread waited for a CPU, and each thread
 * measures its hooks' own cost (calibrate) for the reports to take out. */
#include "calls.h"
#include "clock.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "async.h"
#include "callbacks.h"
#include "calls_internal.h"
#include "calls_layout.h"
#include "session.h"
#include "utf16.h"

#define CALLS_EMIT_MS 100
#define CALLS_GAP_US 500 /* a gap that may hide a preemption (thread_clock) */
#define MAX_DEPTH (1u << 18)
#define TEXT_MAX 4096

/* ---- global state (set in Initialize, read-only afterwards) ---- */

/* A gap between two hooks of a thread longer than this may hide a preemption
 * (thread_clock); a copy of G.gap_ticks for the fast paths. */
__attribute__((visibility("hidden"))) uint64_t calls_gap_ticks = UINT64_MAX; /* elt.S reads it */
#define g_gap_ticks calls_gap_ticks

/* The stubs given to the runtime (calls_install). */
static void (*g_elt_enter)(void) = dnp_elt_enter;
static void (*g_elt_leave)(void) = dnp_elt_leave;

static struct {
    int mode; /* agent_config.calls: CALLS_MODE_* */
    int events; /* MethodEnter/Leave per call: timeline or args */
    int timed;  /* frames are timed (not --calls=counts, nor sampled) */
    unsigned rate; /* sampled times: samples per second per thread */
    uint64_t emit_ticks;
    uint64_t gap_ticks; /* a gap this long between two hooks may hide a preemption */
    atomic_int stopped;

    pthread_mutex_t reg_mu; /* the thread registry */
    struct calls_thread *threads;
} G = {
    .reg_mu = PTHREAD_MUTEX_INITIALIZER,
};

int calls_timed_stubs(void (**enter)(void), void (**leave)(void)) {
    *enter = g_elt_enter;
    *leave = g_elt_leave;
    /* the assembly fast path with the counter, or the C path with
     * CLOCK_MONOTONIC where the counter is not trusted (clock.c): either way
     * the hooks' cost is what the calls pay, and is measured the same way */
    return G.mode == CALLS_MODE_TIMED &&
           ((g_clock.tsc && g_elt_enter == dnp_elt_enter_timed) || (!g_clock.tsc && g_elt_enter == dnp_elt_enter));
}

/* ---- the clock (clock.h): raw ticks per call, nanoseconds when emitting ----
 * Call times are read with an ordered clock (arch_counter_ordered): an
 * unordered read runs before the latency-bound work ahead of it has finished,
 * and the callee's last cycles would land on its caller. */

static inline uint64_t ticks(void) {
    return clock_ticks();
}

static inline uint64_t call_ticks(void) {
    return clock_ticks_ordered();
}

/* ---- per-thread call trees ---- */


/* The thread's state. Found by the fast paths through a table keyed by the
 * thread pointer (arch_thread_pointer, unique among live threads): a load, a
 * multiply, a compare. A dlopen()ed library's own thread-locals cannot be that
 * cheap: initial-exec TLS needs the module's whole TLS segment (tens of KB here)
 * in glibc's static TLS surplus (about 1.5 KB, and dlopen fails without it),
 * and the general-dynamic and TLSDESC models cost a call, a dynamic resolver
 * saving every register. A thread whose slot is taken (a hash
 * collision) takes the full path, with pthread_getspecific. The pthread key
 * also gets the thread's end (its destructor). */
static pthread_key_t t_key;
static pthread_once_t t_key_once = PTHREAD_ONCE_INIT;
static int t_key_made;
static __thread int t_calls_dead; /* the thread's state was released: stay away */

#define TLS_SLOTS (1u << CALLS_SLOTS_LOG2)
typedef struct tls_slot {
    _Atomic uintptr_t tp; /* 0: free */
    calls_thread *t;
} tls_slot;
__attribute__((visibility("hidden"))) tls_slot calls_tls[TLS_SLOTS]; /* elt.S reads it */
#define g_tls calls_tls

/* What elt.S knows of these structures (calls_layout.h). */
#include <stddef.h>
_Static_assert(offsetof(calls_fn, last) == CALLS_FN_LAST, "calls_layout.h: calls_fn");
_Static_assert(NODE_CHUNK * sizeof(cnode) == CALLS_CHUNK_BYTES, "calls_layout.h: a chunk of nodes");
_Static_assert(sizeof(tls_slot) == CALLS_SLOT_SIZE && offsetof(tls_slot, tp) == CALLS_SLOT_TP &&
                   offsetof(tls_slot, t) == CALLS_SLOT_T,
               "calls_layout.h: tls_slot");
_Static_assert(offsetof(calls_thread, stack) == CALLS_T_STACK && offsetof(calls_thread, depth) == CALLS_T_DEPTH &&
                   offsetof(calls_thread, cap) == CALLS_T_CAP &&
                   offsetof(calls_thread, skipped) == CALLS_T_SKIPPED &&
                   offsetof(calls_thread, chunks) == CALLS_T_ROOT &&
                   offsetof(calls_thread, next_emit) == CALLS_T_NEXT_EMIT &&
                   offsetof(calls_thread, countdown) == CALLS_T_COUNTDOWN &&
                   offsetof(calls_thread, last) == CALLS_T_LAST && offsetof(calls_thread, skew) == CALLS_T_SKEW &&
                   offsetof(calls_thread, busy_ticks) == CALLS_T_BUSY &&
                   offsetof(calls_thread, hidden_ticks) == CALLS_T_HIDDEN,
               "calls_layout.h: calls_thread");
_Static_assert(sizeof(cframe) == CALLS_F_SIZE && offsetof(cframe, node) == CALLS_F_NODE &&
                   offsetof(cframe, csp) == CALLS_F_CSP && offsetof(cframe, start) == CALLS_F_START &&
                   offsetof(cframe, child) == CALLS_F_CHILD && offsetof(cframe, np) == CALLS_F_NP,
               "calls_layout.h: cframe");
_Static_assert(offsetof(cnode, fn) == CALLS_N_FN && offsetof(cnode, dirty) == CALLS_N_DIRTY &&
                   offsetof(cnode, self) == CALLS_N_SELF && offsetof(cnode, last_child) == CALLS_N_LAST_CHILD &&
                   offsetof(cnode, parent_p) == CALLS_N_PARENT_P &&
                   offsetof(cnode, calls) == CALLS_N_CALLS && offsetof(cnode, incl) == CALLS_N_INCL &&
                   offsetof(cnode, excl) == CALLS_N_EXCL,
               "calls_layout.h: cnode");

#define TLS_SLOT_OF(tp) ((uint32_t)(((uint64_t)(tp) * 0x9E3779B97F4A7C15ull) >> 53) & (TLS_SLOTS - 1))

static inline calls_thread *this_thread(void) {
    return t_key_made ? pthread_getspecific(t_key) : NULL;
}

/* The slot only, as the fast paths: a thread whose slot is taken (a hash
 * collision, rare) has no state here. Neither this library's thread-locals
 * (their first touch on a thread calls malloc, which a signal may have
 * interrupted: a deadlock, seen) nor pthread_getspecific are safe in a signal
 * handler. */
calls_thread *calls_thread_here(void) {
    uintptr_t tp = arch_thread_pointer();
    const tls_slot *s = &g_tls[TLS_SLOT_OF(tp)];
    if (tp && atomic_load_explicit(&s->tp, memory_order_relaxed) == tp)
        return s->t;
    return NULL;
}

/* Makes t (NULL: none) the thread's state, for both paths. */
void calls_thread_bind(calls_thread *t) {
    pthread_setspecific(t_key, t);
    uintptr_t tp = arch_thread_pointer();
    if (!tp)
        return;
    tls_slot *s = &g_tls[TLS_SLOT_OF(tp)];
    uintptr_t cur = atomic_load_explicit(&s->tp, memory_order_relaxed);
    if (cur == tp) {
        if (t) {
            s->t = t;
        } else {
            s->t = NULL;
            atomic_store_explicit(&s->tp, 0, memory_order_release);
        }
    } else if (t && cur == 0) {
        uintptr_t zero = 0;
        if (atomic_compare_exchange_strong(&s->tp, &zero, tp)) /* then only this thread reads it */
            s->t = t;
    }
}

static void thread_release(void *p);

static void make_key(void) {
    t_key_made = pthread_key_create(&t_key, thread_release) == 0;
}

void calls_thread_free(calls_thread *t) {
    if (!t)
        return;
    if (t->sched_fd >= 0)
        close(t->sched_fd);
    calls_thread_free(t->scratch);
    for (unsigned c = 0; c < MAX_CHUNKS && t->chunks[c]; c++)
        free(t->chunks[c]);
    free(t->stack);
    free(t->hash);
    free(t->dirty);
    free(t->win_calls);
    free(t);
}

calls_thread *calls_thread_alloc(uint32_t cap, uint32_t hash_mask, uint32_t dirty_cap) {
    calls_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = cap;
    t->stack = malloc(t->cap * sizeof *t->stack);
    /* a whole first chunk, even for a tree that never grows past node 1: the
     * enter fast path may read any node of it (elt.S); untouched pages */
    t->chunks[0] = calloc(NODE_CHUNK, sizeof(cnode));
    t->hash_mask = hash_mask;
    t->hash = calloc(t->hash_mask + 1, sizeof *t->hash);
    t->dirty_cap = dirty_cap;
    t->dirty = malloc(t->dirty_cap * sizeof *t->dirty);
    if (!t->stack || !t->chunks[0] || !t->hash || !t->dirty) {
        calls_thread_free(t);
        return NULL;
    }
    t->nnodes = 1;
    t->countdown = CALLS_EMIT_COUNT;
    t->sched_fd = -1;
    t->busy_ticks = UINT64_MAX;
    return t;
}

static int sched_open(uint64_t tid);
static int sched_wait_ns(int fd, uint64_t *wait);

static calls_thread *thread_new(void) {
    if (t_calls_dead || atomic_load_explicit(&G.stopped, memory_order_relaxed))
        return NULL;
    pthread_once(&t_key_once, make_key);
    if (!t_key_made)
        return NULL;
    calls_thread *t = calls_thread_alloc(256, 1023, 1024);
    if (!t) {
        t_calls_dead = 1;
        return NULL;
    }
    t->tid = (uint64_t)syscall(SYS_gettid);
    calls_calibrate(t, 9, 128, 0);
    calls_emit_overhead(t);
    if (G.timed) {
        t->sched_fd = sched_open(t->tid);
        if (sched_wait_ns(t->sched_fd, &t->sched_wait) != 0 && t->sched_fd >= 0) {
            close(t->sched_fd);
            t->sched_fd = -1;
        }
    }
    t->last = ticks();
    t->next_emit = t->last + G.emit_ticks;
    pthread_mutex_lock(&G.reg_mu);
    t->next = G.threads;
    G.threads = t;
    pthread_mutex_unlock(&G.reg_mu);
    calls_thread_bind(t);
    return t;
}

static void mark_dirty_slow(calls_thread *t, uint32_t i, cnode *n) {
    if (t->ndirty == t->dirty_cap) {
        uint32_t *d = realloc(t->dirty, (size_t)t->dirty_cap * 2 * sizeof *d);
        if (!d)
            return; /* written at the end anyway */
        t->dirty = d;
        t->dirty_cap *= 2;
    }
    n->dirty = 1;
    t->dirty[t->ndirty++] = i;
}

#define HASH_OF(parent, fn)                                                                        \
    ((uint32_t)((((uint64_t)(uintptr_t)(fn) >> 3) * 0x9E3779B97F4A7C15ull ^                             \
                 (uint64_t)(parent) * 0xC2B2AE3D27D4EB4Full) >> 32))

static inline uint32_t hash_of(uint32_t parent, const calls_fn *fn) {
    return HASH_OF(parent, fn);
}

static void hash_grow(calls_thread *t) {
    uint32_t mask = t->hash_mask * 2 + 1;
    uint32_t *h = calloc((size_t)mask + 1, sizeof *h);
    if (!h)
        return;
    for (uint32_t i = 0; i <= t->hash_mask; i++) {
        uint32_t n = t->hash[i];
        if (!n)
            continue;
        cnode *nd = node_at(t, n);
        uint32_t j = hash_of(nd->parent, nd->fn) & mask;
        while (h[j])
            j = (j + 1) & mask;
        h[j] = n;
    }
    free(t->hash);
    t->hash = h;
    t->hash_mask = mask;
}

static inline void mark_dirty(calls_thread *t, uint32_t i, cnode *n) {
    if (__builtin_expect(!n->dirty, 0))
        mark_dirty_slow(t, i, n);
}

void calls_node_dirty(calls_thread *t, uint32_t i) {
    mark_dirty(t, i, node_at(t, i));
}

/* The node for a call of fn under parent, made if new; the overflow node (no
 * function, under the root) when the tree is full. */
static uint32_t child_node(calls_thread *t, uint32_t parent, const calls_fn *fn) {
    for (;;) {
        uint32_t j = hash_of(parent, fn) & t->hash_mask;
        for (;; j = (j + 1) & t->hash_mask) {
            uint32_t n = t->hash[j];
            if (!n)
                break;
            cnode *nd = node_at(t, n);
            if (nd->fn == fn && nd->parent == parent)
                return n;
        }
        if (t->overflow_node)
            break;
        uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_relaxed);
        if ((uint64_t)(n + 1) * 2 > (uint64_t)t->hash_mask + 1) {
            uint32_t old = t->hash_mask;
            hash_grow(t);
            if (t->hash_mask != old)
                continue; /* probe again in the new table */
        }
        uint32_t c = n / NODE_CHUNK;
        if (c < MAX_CHUNKS && !t->chunks[c])
            t->chunks[c] = calloc(NODE_CHUNK, sizeof(cnode));
        int full = c >= MAX_CHUNKS || !t->chunks[c] || n + 1 == MAX_CHUNKS * NODE_CHUNK ||
                   (uint64_t)(n + 1) * 2 > (uint64_t)t->hash_mask + 1;
        cnode *nd = node_at(t, n);
        if (full) {
            if (c >= MAX_CHUNKS || !t->chunks[c])
                return 0;
            nd->self = n;
            nd->fn = NULL;
            nd->parent = 0;
            t->overflow_node = n;
        } else {
            nd->self = n;
            nd->fn = fn;
            nd->parent = parent;
            nd->parent_p = node_at(t, parent);
            t->hash[j] = n;
        }
        atomic_store_explicit(&t->nnodes, n + 1, memory_order_release);
        if (!full)
            return n;
        break;
    }
    t->overflowed++;
    return t->overflow_node;
}

/* The thread's time waiting for a CPU (run queue) so far, in ns, from its
 * schedstat; -1 without it. */
static int sched_wait_ns(int fd, uint64_t *wait) {
    char buf[128];
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    unsigned long long r, w;
    if (sscanf(buf, "%llu %llu", &r, &w) != 2)
        return -1;
    *wait = w;
    return 0;
}

static int sched_open(uint64_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%llu/schedstat", (unsigned long long)tid);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* ---- the shadow stack ---- */

static inline void frame_pop(calls_thread *t, uint64_t end, int tail) {
    cframe *f = &t->stack[--t->depth];
    uint64_t incl = G.timed && end > f->start ? end - f->start : 0;
    uint64_t excl = incl > f->child ? incl - f->child : 0;
    cnode *n = node_at(t, f->node);
    if (G.timed) { /* sampled times: the signal handler's alone (calls_sampled.c) */
        n->incl += incl;
        n->excl += excl;
    }
    n->tail += (uint64_t)tail;
    mark_dirty(t, f->node, n);
    if (t->depth)
        t->stack[t->depth - 1].child += incl;
}

/* The thread's clock for frame times: the TSC less the time it waited for a
 * CPU. A gap since its last read longer than any run of calls would leave
 * unbroken may hold a preemption: the run-queue wait since the last look comes
 * out of it (at most the gap). */
static uint64_t thread_clock(calls_thread *t) {
    uint64_t now = call_ticks() - t->skew;
    if (now - t->last > G.gap_ticks && t->sched_fd >= 0) {
        uint64_t wait;
        if (sched_wait_ns(t->sched_fd, &wait) == 0 && wait > t->sched_wait) {
            uint64_t ns = wait - t->sched_wait, gap = now - t->last;
            uint64_t d = g_clock.tsc ? (uint64_t)((double)ns / g_clock.ns_per_tick) : ns;
            if (d > gap)
                d = gap;
            t->skew += d;
            now -= d;
            t->waited_ns += clock_ticks_to_ns(d);
            t->sched_wait = wait;
        }
    }
    t->last = now;
    return now;
}

/* The top frame was unwound by an exception: it ends when the unwind was seen
 * (calls_unwind_leave), or now. */
static void frame_orphan(calls_thread *t, uint64_t now) {
    cframe *f = &t->stack[t->depth - 1];
    uint64_t end = t->unwind_at > f->start && t->unwind_at <= now ? t->unwind_at : now;
    if (G.events) {
        const calls_fn *fn = node_at(t, f->node)->fn;
        if (fn)
            REC(MethodUnwind, fn->id, fn->name);
    }
    t->repaired++;
    frame_pop(t, end, 0);
}

/* A new stack, copied, published, then the old one freed: a sample's signal
 * on this thread reads one or the other whole (calls_sampled.c). */
static int stack_grow(calls_thread *t) {
    if (t->cap >= MAX_DEPTH)
        return -1;
    cframe *s = malloc((size_t)t->cap * 2 * sizeof *s), *old = t->stack;
    if (!s)
        return -1;
    memcpy(s, old, (size_t)t->depth * sizeof *s);
    atomic_signal_fence(memory_order_seq_cst);
    t->stack = s;
    atomic_signal_fence(memory_order_seq_cst);
    free(old);
    t->cap *= 2;
    return 0;
}

/* A state machine's MoveNext entered: when this is a resume of it (async.h),
 * its node goes under its awaiting callers, outermost first, under the
 * thread's own frame (the physical view drops them, the logical one starts
 * there: docs/async.md). Such calls never take the fast paths, which know
 * nothing of resumes: their nodes are no one's last. */
static uint32_t async_parent(calls_thread *t, uint32_t parent, const calls_fn *fn) {
    uint64_t funcs[64];
    uint32_t names[64];
    uint32_t n = async_calls_callers(fn->id, (uintptr_t)funcs, funcs, names, 64);
    while (n-- > 0) {
        const calls_fn *caller = calls_async_caller_fn(funcs[n], names[n]);
        if (!caller)
            break;
        parent = child_node(t, parent, caller);
    }
    return parent;
}

static inline void enter(const calls_fn *fn, uintptr_t csp) {
    calls_thread *t = this_thread();
    if (__builtin_expect(!t, 0)) {
        t = thread_new();
        if (!t)
            return;
    }
    if (t->depth && t->stack[t->depth - 1].csp <= csp) {
        uint64_t now = G.timed ? thread_clock(t) : 0;
        while (t->depth && t->stack[t->depth - 1].csp <= csp)
            frame_orphan(t, now);
    }
    if (__builtin_expect(t->depth == t->cap, 0) && stack_grow(t) < 0) {
        t->skipped++;
        return;
    }
    uint32_t parent = t->depth ? t->stack[t->depth - 1].node : 0;
    if (__builtin_expect(fn->async_move, 0))
        parent = async_parent(t, parent, fn);
    cnode *up = node_at(t, parent); /* node 0, the root, is a node too */
    cnode *n = up->last_child;
    uint32_t i;
    if (__builtin_expect(n && n->fn == fn, 1)) {
        i = n->self;
    } else {
        i = child_node(t, parent, fn);
        n = node_at(t, i);
        if (!fn->async_move) { /* never the fast paths' (async_parent) */
            up->last_child = n;
            if (n->fn == fn)
                __atomic_store_n(&((calls_fn *)fn)->last, n, __ATOMIC_RELAXED);
        }
    }
    n->calls++;
    mark_dirty(t, i, n);
    cframe *f = &t->stack[t->depth];
    f->node = i;
    f->np = n;
    f->csp = csp;
    f->child = 0;
    atomic_signal_fence(memory_order_release); /* a sample sees the frame whole or not at all */
    t->depth++;
    if (G.events)
        REC(MethodEnter, fn->id, fn->name);
    f->start = G.timed ? thread_clock(t) : 0; /* last: the hook's own work is outside */
}

/* A method returns: pops the dead frames above its own. Its thread's state when
 * its frame is then on top, NULL otherwise (counted). */
static inline calls_thread *leave_begin(const calls_fn *fn, uintptr_t csp, uint64_t *now) {
    calls_thread *t = this_thread();
    if (__builtin_expect(!t, 0))
        return NULL;
    *now = G.timed ? thread_clock(t) : ticks(); /* first: the hook's own work is outside */
    if (__builtin_expect(t->skipped != 0, 0)) {
        t->skipped--;
        return NULL;
    }
    while (t->depth && t->stack[t->depth - 1].csp < csp)
        frame_orphan(t, *now);
    if (__builtin_expect(!t->depth || t->stack[t->depth - 1].csp != csp, 0)) {
        t->unmatched++;
        return NULL;
    }
    const calls_fn *top = node_at(t, t->stack[t->depth - 1].node)->fn;
    if (__builtin_expect(top != fn && top != NULL && top->id != fn->id, 0)) {
        t->unmatched++;
        return NULL;
    }
    return t;
}

static inline void leave_end(calls_thread *t, uint64_t now, int tail) {
    frame_pop(t, now, tail);
    t->countdown = CALLS_EMIT_COUNT;
    if (__builtin_expect((int64_t)(now - t->next_emit) >= 0, 0)) {
        /* the hooks' cost again (the machine's load changes it), then the
         * nodes; the time this takes is no one's: out of the thread's clock */
        uint64_t t0 = ticks();
        calls_calibrate(t, 9, 64, 1);
        calls_emit_dirty(t);
        t->skew += ticks() - t0;
        t->next_emit = now + G.emit_ticks;
    }
}

/* ---- the C fast path of enter ----
 * The common call and return are in assembly (elt.S, on the layout of
 * calls_layout.h): the thread's slot, the caller's last child, the frame. An
 * enter whose function is not the caller's last child comes here first (the
 * hash table), in code that touches general registers only and saves every
 * register it uses (no_caller_saved_registers), so that its stub saves nothing
 * of the method's arguments; it calls the full C path (calls_hook_*) when this
 * returns non-zero, having changed nothing: a new thread, a new call path, a
 * frame to repair, a node to mark, a deep stack. No function calls in here,
 * nothing that is not inlined. */

#define FAST_NODE(t, i) (&(t)->chunks[(i) / NODE_CHUNK][(i) % NODE_CHUNK])

__attribute__((always_inline)) ARCH_GPR_ONLY static inline int
fast_enter(uintptr_t client, uintptr_t csp, int timed) {
    if (((const calls_fn *)client)->async_move)
        return 1; /* maybe a resume: enter (async_parent) */
    uintptr_t tp = arch_thread_pointer();
    const tls_slot *slot = &g_tls[TLS_SLOT_OF(tp)];
    if (atomic_load_explicit(&slot->tp, memory_order_relaxed) != tp)
        return 1;
    calls_thread *t = slot->t;
    uint64_t now = 0;
    if (timed) {
        now = arch_counter_ordered_gpr() - t->skew;
        if (now - t->last > g_gap_ticks)
            return 1;
    }
    uint32_t d = t->depth, parent = 0;
    if (d == t->cap)
        return 1;
    cnode *up = t->chunks[0]; /* the root */
    if (d) {
        const cframe *top = &t->stack[d - 1];
        if (top->csp <= csp)
            return 1;
        parent = top->node;
        up = top->np;
    }
    cnode *n = up->last_child;
    uint32_t i = n ? n->self : 0;
    if (!n || n->fn != (const calls_fn *)client) {
        /* another child: the hash table (a caller of several functions) */
        uint32_t j = HASH_OF(parent, client) & t->hash_mask;
        for (;; j = (j + 1) & t->hash_mask) {
            i = t->hash[j];
            if (!i)
                return 1;
            n = FAST_NODE(t, i);
            if (n->fn == (const calls_fn *)client && n->parent == parent)
                break;
        }
        up->last_child = n;
        __atomic_store_n(&((calls_fn *)client)->last, n, __ATOMIC_RELAXED);
    }
    if (!n->dirty)
        return 1;
    n->calls++;
    cframe *f = &t->stack[d];
    f->node = i;
    f->np = n;
    f->csp = csp;
    f->child = 0;
    atomic_signal_fence(memory_order_release); /* a sample sees the frame whole or not at all */
    t->depth = d + 1;
    f->start = now;
    t->last = now;
    return 0;
}

ARCH_FAST_FN int calls_fast_enter_timed(uintptr_t client, uintptr_t csp) {
    return fast_enter(client, csp, 1);
}
ARCH_FAST_FN int calls_fast_enter_counts(uintptr_t client, uintptr_t csp) {
    return fast_enter(client, csp, 0);
}

/* ---- the hooks ---- */

void calls_hook_enter(uintptr_t client, uintptr_t caller_sp) {
    enter((const calls_fn *)client, caller_sp);
}

/* A return, or a tail call (the frame is replaced by its callee's). */
static inline void hook_leave(uintptr_t client, uintptr_t caller_sp, int tail) {
    const calls_fn *fn = (const calls_fn *)client;
    uint64_t now;
    calls_thread *t = leave_begin(fn, caller_sp, &now);
    if (!t)
        return;
    leave_end(t, now, tail);
    if (G.events && tail)
        REC(MethodTailcall, fn->id, fn->name);
    else if (G.events)
        REC(MethodLeave, fn->id, fn->name);
}

void calls_hook_leave(uintptr_t client, uintptr_t caller_sp) {
    hook_leave(client, caller_sp, 0);
}

void calls_hook_tailcall(uintptr_t client, uintptr_t caller_sp) {
    hook_leave(client, caller_sp, 1);
}

/* The slow path (--args): the runtime's own stub saved the registers and calls
 * these with the ordinary ABI. Its hooks are given no caller SP, but the
 * runtime's ELT info holds it (arch_elt_caller_sp): the same key as the fast
 * path's. If it cannot be found, the thread's shadow stack cannot be kept and
 * calls are not recorded for it (a note says so). */
static uintptr_t slow_caller_sp(COR_PRF_ELT_INFO elt) {
    uintptr_t csp = arch_elt_caller_sp((uintptr_t)elt);
    if (csp)
        return csp;
    static atomic_int said;
    if (!atomic_exchange(&said, 1))
        rec_note(1, "calls: --args cannot find the caller SP in the runtime's ELT info; "
                    "calls with arguments are not recorded");
    return 0;
}

static void slow_enter(FunctionIDOrClientID id, COR_PRF_ELT_INFO elt) {
    const calls_fn *fn = (const calls_fn *)id.clientID;
    uintptr_t csp = slow_caller_sp(elt);
    if (!csp)
        return;
    enter(fn, csp);
    if (!this_thread())
        return;
    char text[TEXT_MAX];
    calls_args_text(fn, elt, text, sizeof text);
    REC(MethodArgs, rec_string(text, strlen(text)));
}

/* A slow-path leave or tailcall begun: the thread's state, NULL when there is nothing to record. */
static calls_thread *slow_leave_begin(const calls_fn *fn, COR_PRF_ELT_INFO elt, uint64_t *now) {
    uintptr_t csp = slow_caller_sp(elt);
    return csp ? leave_begin(fn, csp, now) : NULL;
}

static void slow_leave(FunctionIDOrClientID id, COR_PRF_ELT_INFO elt) {
    const calls_fn *fn = (const calls_fn *)id.clientID;
    uint64_t now;
    calls_thread *t = slow_leave_begin(fn, elt, &now);
    if (!t)
        return;
    /* MethodReturn comes before its MethodLeave. */
    char text[TEXT_MAX];
    calls_return_text(fn, elt, text, sizeof text);
    REC(MethodReturn, rec_string(text, strlen(text)));
    leave_end(t, now, 0);
    REC(MethodLeave, fn->id, fn->name);
}

static void slow_tailcall(FunctionIDOrClientID id, COR_PRF_ELT_INFO elt) {
    const calls_fn *fn = (const calls_fn *)id.clientID;
    uint64_t now;
    calls_thread *t = slow_leave_begin(fn, elt, &now);
    if (!t)
        return;
    leave_end(t, now, 1);
    REC(MethodTailcall, fn->id, fn->name);
}

/* ---- thread end and shutdown ---- */

static void thread_report(calls_thread *t, int ended) {
    if (t->unmatched || (ended && t->open_at_end) || t->overflowed)
        rec_note(1,
                 "calls: thread %llu: %s shadow stack: %llu returns without their call, %llu "
                 "frames still open at the thread's end, %llu calls past the tree's %u nodes",
                 (unsigned long long)t->tid, t->unmatched || t->open_at_end ? "unbalanced" : "full",
                 (unsigned long long)t->unmatched, (unsigned long long)t->open_at_end,
                 (unsigned long long)t->overflowed, MAX_CHUNKS * NODE_CHUNK);
}

/* No function's last node (calls_fn.last) may point into t's nodes once they
 * are freed: another thread's chunk could take their place and the enter fast
 * path would read it as its own. Clears them (under fn_mu; t no longer runs
 * hooks). */
static int owns_node(const void *owner, const cnode *n) {
    const calls_thread *t = owner;
    for (unsigned c = 0; c < MAX_CHUNKS && t->chunks[c]; c++)
        if (n >= t->chunks[c] && n < t->chunks[c] + NODE_CHUNK)
            return 1;
    return 0;
}

static void fn_forget_nodes(calls_thread *t) {
    calls_fns_forget(owns_node, t, &calls_cal_dummy);
}

static void thread_release(void *p) {
    calls_thread *t = p;
    t_calls_dead = 1;
    calls_thread_bind(NULL);
    if (!t)
        return;
    uint64_t now = ticks() - t->skew;
    while (t->depth) {
        t->open_at_end++;
        frame_orphan(t, now);
    }
    pthread_mutex_lock(&G.reg_mu);
    for (calls_thread **pp = &G.threads; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    if (!atomic_load(&G.stopped)) {
        calls_emit_dirty(t);
        thread_report(t, 1);
    }
    pthread_mutex_unlock(&G.reg_mu);
    fn_forget_nodes(t);
    if (t->scratch)
        fn_forget_nodes(t->scratch);
    calls_thread_free(t);
}

void calls_threads_each(void (*fn)(calls_thread *t)) {
    pthread_mutex_lock(&G.reg_mu);
    for (calls_thread *t = G.threads; t && !atomic_load(&G.stopped); t = t->next)
        fn(t);
    pthread_mutex_unlock(&G.reg_mu);
}

void calls_shutdown(void) {
    if (!G.mode)
        return;
    pthread_mutex_lock(&G.reg_mu);
    for (calls_thread *t = G.threads; t; t = t->next) {
        calls_emit_all(t);
        thread_report(t, 0);
    }
    atomic_store(&G.stopped, 1);
    pthread_mutex_unlock(&G.reg_mu);
}

void calls_unwind_leave(void) {
    calls_thread *t = this_thread();
    if (t)
        t->unwind_at = ticks() - t->skew;
}

/* ---- start ---- */

int calls_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    (void)mask_high;
    G.mode = cfg->calls;
    if (!G.mode)
        return 0;
    if (g_agent.attached) {
        /* The runtime takes enter/leave hooks only at start-up (RUNTIME-FACTS). */
        agent_say("method enter/leave (--calls) needs the agent from the start; an attached "
                  "agent records the other events only");
        G.mode = 0;
        return 0;
    }
    calls_filter_set(cfg->all_code, cfg->include, cfg->exclude);
    G.events = G.mode == CALLS_MODE_ARGS || G.mode == CALLS_MODE_TIMELINE;
    G.timed = G.mode != CALLS_MODE_COUNTS && G.mode != CALLS_MODE_SAMPLED;
    calls_sampled_on = G.mode == CALLS_MODE_SAMPLED;
    G.rate = cfg->calls_rate ? cfg->calls_rate : dnp_setting_default(DNP_SET_CALLS_RATE);
    *mask |= COR_PRF_MONITOR_ENTERLEAVE;
    if (G.mode == CALLS_MODE_ARGS)
        *mask |= COR_PRF_ENABLE_FUNCTION_ARGS | COR_PRF_ENABLE_FUNCTION_RETVAL |
                 COR_PRF_ENABLE_FRAME_INFO;
    if (cfg->all_code)
        *mask |= COR_PRF_DISABLE_INLINING | COR_PRF_DISABLE_ALL_NGEN_IMAGES;
    return 0;
}

int calls_install(void) {
    if (!G.mode)
        return 0;
    clock_calibrate(5, 1); /* call times need the rate now, not after the writer measured it */
    G.emit_ticks = g_clock.tsc ? (uint64_t)((double)CALLS_EMIT_MS * 1e6 / g_clock.ns_per_tick)
                               : (uint64_t)CALLS_EMIT_MS * 1000000u;
    G.gap_ticks = g_clock.tsc ? (uint64_t)((double)CALLS_GAP_US * 1e3 / g_clock.ns_per_tick)
                              : (uint64_t)CALLS_GAP_US * 1000u;
    g_gap_ticks = G.gap_ticks;
    calls_filter_record((uint64_t)G.mode);
    if (G.timed && g_clock.tsc) /* sampled or counted calls read no clock */
        rec_note(0, "calls: clock " ARCH_COUNTER_NAME " at %.6f GHz, calibrated against CLOCK_MONOTONIC",
                 1.0 / g_clock.ns_per_tick);
    else if (G.timed)
        rec_note(0, "calls: clock CLOCK_MONOTONIC (" ARCH_COUNTER_NAME " not trusted for time here)");
    if (G.mode == CALLS_MODE_TIMED && g_clock.tsc) {
        g_elt_enter = dnp_elt_enter_timed;
        g_elt_leave = dnp_elt_leave_timed;
    } else if (G.mode == CALLS_MODE_COUNTS || G.mode == CALLS_MODE_SAMPLED) {
        calls_sampled_setup();
        g_elt_enter = dnp_elt_enter_counts;
        g_elt_leave = dnp_elt_leave_counts;
    }
    HRESULT hr = INFO_CALL(SetFunctionIDMapper2, calls_mapper, NULL);
    if (SUCCEEDED(hr)) {
        if (G.mode == CALLS_MODE_ARGS)
            hr = INFO_CALL(SetEnterLeaveFunctionHooks3WithInfo, slow_enter, slow_leave, slow_tailcall);
        else
            hr = INFO_CALL(SetEnterLeaveFunctionHooks3, (FunctionEnter3 *)(void *)g_elt_enter,
                           (FunctionLeave3 *)(void *)g_elt_leave,
                           (FunctionTailcall3 *)(void *)dnp_elt_tailcall);
    }
    if (FAILED(hr)) {
        const char *name = dnp_hresult_name((uint32_t)hr);
        agent_say("the runtime refused the enter/leave hooks (%s 0x%08x); method calls are not "
                  "recorded, the other events are",
                  name ? name : "error", (unsigned)hr);
        rec_note(2, "calls: the runtime refused the enter/leave hooks: 0x%08x", (unsigned)hr);
        G.mode = 0;
    }
    return 0;
}

unsigned calls_sample_rate(void) {
    return calls_sampled_on && G.mode ? G.rate : 0;
}

int calls_recording(void) {
    return G.mode != 0;
}
