/* calls.c: method enter/leave (ELT3, docs/design-notes.md#elt): which functions are hooked (the
 * function ID mapper and its filters), the hooks, and the per-thread call trees
 * they build.
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
#if defined(__x86_64__)
#include <x86intrin.h>
#include <cpuid.h>
#endif

#include "callbacks.h"
#include "calls_internal.h"
#include "calls_layout.h"
#include "session.h"

#define CALLS_EMIT_MS 100
#define CALLS_GAP_US 500 /* a gap that may hide a preemption (thread_clock) */
#define CALLS_EMIT_COUNT 65536u /* --calls=counts: leaves between looks at the clock */
#define NODE_CHUNK 4096u
#define MAX_CHUNKS 256u /* 1M nodes per thread; more go to the overflow node */
#define MAX_DEPTH (1u << 18)
#define FN_CHUNK 1024u
#define TEXT_MAX 4096

/* ---- global state (set in Initialize, read-only afterwards) ---- */

/* A gap between two hooks of a thread longer than this may hide a preemption
 * (thread_clock); a copy of G.gap_ticks for the fast paths. */
__attribute__((visibility("hidden"))) uint64_t calls_gap_ticks = UINT64_MAX; /* elt_amd64.S reads it */
#define g_gap_ticks calls_gap_ticks

/* The stubs given to the runtime (calls_install). */
static void (*g_elt_enter)(void) = dnp_elt_enter;
static void (*g_elt_leave)(void) = dnp_elt_leave;

static struct {
    int mode; /* agent_config.calls: CALLS_MODE_* */
    int all_code;
    int events; /* MethodEnter/Leave per call: timeline or args */
    int timed;  /* frames are timed (not --calls=counts) */
    char include[1024], exclude[1024];
    uint64_t emit_ticks;
    uint64_t gap_ticks; /* a gap this long between two hooks may hide a preemption */
    atomic_int stopped;

    pthread_mutex_t fn_mu; /* the function arena: the mapper only */
    calls_fn *fn_chunk;
    unsigned fn_used;

    pthread_mutex_t reg_mu; /* the thread registry */
    struct calls_thread *threads;
} G = {
    .fn_mu = PTHREAD_MUTEX_INITIALIZER,
    .reg_mu = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- the clock (clock.h): raw ticks per call, nanoseconds when emitting ----
 * Call times are read with an ordered clock (lfence; rdtsc): an unordered rdtsc
 * runs before the latency-bound work ahead of it has finished, and the callee's
 * last cycles would land on its caller. */

static inline uint64_t ticks(void) {
    return clock_ticks();
}

static inline uint64_t call_ticks(void) {
    return clock_ticks_ordered();
}

/* ---- filters ---- */

static int glob_match(const char *p, const char *pe, const char *s) {
    const char *star = NULL, *back = NULL;
    while (*s) {
        if (p < pe && (*p == '?' || *p == *s)) {
            p++;
            s++;
        } else if (p < pe && *p == '*') {
            star = ++p;
            back = s;
        } else if (star) {
            p = star;
            s = ++back;
        } else {
            return 0;
        }
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

/* Whether name matches one of the comma-separated globs of list. */
static int globs_match(const char *list, const char *name) {
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        if (t > p && glob_match(p, t, name))
            return 1;
        p = e;
    }
    return 0;
}

static int framework_module(ModuleID module) {
    WCHAR w[1024];
    char path[2048];
    ULONG len = 0;
    LPCBYTE base = NULL;
    AssemblyID assembly = 0;
    DWORD flags = 0;
    if (!module || !AGENT_HAS_INFO(GetModuleInfo2) ||
        FAILED(INFO_CALL(GetModuleInfo2, module, &base, 1024, &len, w, &assembly, &flags)) || len <= 1)
        return 0;
    names_utf16_to_utf8(w, len <= 1024 ? len - 1 : (size_t)-1, path, sizeof path);
    return strstr(path, "/shared/Microsoft.") != NULL;
}

/* Whether a function is hooked (calls_filter_wants in calls.h). */
int calls_filter_wants(const char *name, int all_code, const char *include, const char *exclude,
                       int framework) {
    if (exclude && *exclude && globs_match(exclude, name))
        return 0;
    if (include && *include)
        return globs_match(include, name);
    if (all_code)
        return 1;
    if (framework)
        return 0;
    static const char *const framework_prefixes[] = {"System.", "Microsoft.", "Internal.", "Interop",
                                                     "<"};
    for (size_t i = 0; i < sizeof framework_prefixes / sizeof *framework_prefixes; i++)
        if (strncmp(name, framework_prefixes[i], strlen(framework_prefixes[i])) == 0)
            return 0;
    return 1;
}

/* A new entry (under fn_mu). */
static calls_fn *fn_new(void) {
    if (!G.fn_chunk || G.fn_used == FN_CHUNK) {
        calls_fn *c = calloc(FN_CHUNK, sizeof *c);
        if (!c)
            return NULL;
        G.fn_chunk = c; /* the old chunk stays: its entries are in use */
        G.fn_used = 0;
    }
    return &G.fn_chunk[G.fn_used++];
}

/* The functions mapped so far, by FunctionID (under fn_mu): the runtime asks
 * again for each new code version of a function (tier 1, and on-stack
 * replacement, whose code returns through the same frame the tier-0 code
 * entered), and every version must get the same client ID. */
static struct {
    FunctionID *ids;
    calls_fn **fns; /* NULL: not hooked */
    size_t mask, n;
} F;

static int fn_lookup(FunctionID fid, calls_fn **out) {
    if (!F.ids)
        return 0;
    for (size_t j = (size_t)((fid >> 4) * 0x9E3779B97F4A7C15ull >> 20) & F.mask;; j = (j + 1) & F.mask) {
        if (F.ids[j] == fid) {
            *out = F.fns[j];
            return 1;
        }
        if (!F.ids[j])
            return 0;
    }
}

static void fn_remember(FunctionID fid, calls_fn *f) {
    if (!fid || (F.n + 1) * 2 > (F.ids ? F.mask + 1 : 0)) {
        size_t cap = F.ids ? (F.mask + 1) * 2 : 1024;
        FunctionID *ids = calloc(cap, sizeof *ids);
        calls_fn **fns = calloc(cap, sizeof *fns);
        if (!fid || !ids || !fns) {
            free(ids);
            free(fns);
            return;
        }
        for (size_t i = 0; F.ids && i <= F.mask; i++) {
            if (!F.ids[i])
                continue;
            size_t j = (size_t)((F.ids[i] >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (ids[j])
                j = (j + 1) & (cap - 1);
            ids[j] = F.ids[i];
            fns[j] = F.fns[i];
        }
        free(F.ids);
        free(F.fns);
        F.ids = ids;
        F.fns = fns;
        F.mask = cap - 1;
    }
    size_t j = (size_t)((fid >> 4) * 0x9E3779B97F4A7C15ull >> 20) & F.mask;
    while (F.ids[j] && F.ids[j] != fid)
        j = (j + 1) & F.mask;
    if (!F.ids[j])
        F.n++;
    F.ids[j] = fid;
    F.fns[j] = f;
}

static UINT_PTR mapper(FunctionID fid, void *data, BOOL *hook) {
    (void)data;
    *hook = 0;
    calls_fn *known;
    pthread_mutex_lock(&G.fn_mu);
    int seen = fn_lookup(fid, &known);
    pthread_mutex_unlock(&G.fn_mu);
    if (seen) {
        *hook = known != NULL;
        return known ? (UINT_PTR)known : fid;
    }
    char name[TEXT_MAX];
    names_function_text(fid, name, sizeof name);
    ClassID cls = 0;
    ModuleID module = 0;
    mdToken token = 0;
    INFO_CALL(GetFunctionInfo, fid, &cls, &module, &token);
    int framework = !G.all_code && !G.include[0] && framework_module(module);
    if (!calls_filter_wants(name, G.all_code, G.include, G.exclude, framework)) {
        pthread_mutex_lock(&G.fn_mu);
        fn_remember(fid, NULL);
        pthread_mutex_unlock(&G.fn_mu);
        return fid;
    }
    pthread_mutex_lock(&G.fn_mu);
    calls_fn *f = fn_lookup(fid, &known) ? known : fn_new(); /* another thread may have been first */
    if (f && !f->id) {
        f->id = fid;
        f->module = module;
        f->token = token;
        f->name = names_get(NAMES_FUNCTION, fid, 1);
        fn_remember(fid, f);
    }
    pthread_mutex_unlock(&G.fn_mu);
    if (!f)
        return fid;
    *hook = 1;
    return (UINT_PTR)f;
}

/* ---- per-thread call trees ---- */

typedef struct cnode {
    const calls_fn *fn; /* NULL: the overflow node */
    uint32_t parent;    /* 0: the root */
    uint32_t dirty;
    uint32_t pad;
    uint32_t self;       /* this node's number */
    struct cnode *last_child; /* the child made or found last: most calls repeat it */
    uint64_t calls, incl, excl, tail; /* times in ticks */
    struct cnode *parent_p; /* node_at(parent); NULL for the overflow node */
} cnode; /* 72 bytes */

typedef struct cframe {
    uint32_t node;
    uint32_t pad;
    uintptr_t csp; /* the method's caller SP */
    uint64_t start, child;
    cnode *np; /* node_at(node): chunks never move */
} cframe;

typedef struct calls_thread {
    cframe *stack;
    uint32_t depth, cap, skipped;
    cnode *chunks[MAX_CHUNKS];
    _Atomic uint32_t nnodes; /* nodes 1..nnodes-1 are in use; 0 is the root */
    uint32_t overflow_node; /* 0 until the tree is full */
    uint32_t *hash; /* node numbers, 0 empty; owner only */
    uint32_t hash_mask;
    uint32_t *dirty;
    uint32_t ndirty, dirty_cap;
    uint64_t next_emit, unwind_at;
    uint32_t countdown; /* --calls=counts: leaves left before the next look at the clock */
    uint32_t pad;
    uint64_t unmatched, repaired, overflowed, open_at_end;
    uint64_t tid;
    uint64_t inner_ps, outer_ps; /* the hooks' cost (calibrate), 0: not measured */
    /* Time spent waiting for a CPU is taken out of the clock (docs/calls.md):
     * frame times are the TSC less skew; a gap of more than G.gap_ticks since
     * the thread's last clock read (last) makes it look at its run-queue wait. */
    uint64_t last, skew;
    uint64_t sched_wait; /* the run-queue wait seen last, ns */
    uint64_t waited_ns;  /* taken out so far */
    int sched_fd;        /* /proc/self/task/TID/schedstat, -1: none */
    struct calls_thread *scratch; /* the calibration's tree (calibrate) */
    struct calls_thread *next;
    /* The part of the hooks' outer cost that hides behind a caller's own
     * latency-bound work (calibrate): a call whose clock gap since the thread's
     * last read is at least busy_ticks gives hidden_ticks back to its caller's
     * self time (the assembly enter path). */
    uint64_t busy_ticks, hidden_ticks;
} calls_thread;

/* The thread's state. Found by the fast paths through a table keyed by the
 * thread pointer (%fs:0 on x86-64, unique among live threads): a load of %fs:0,
 * a multiply, a compare. A dlopen()ed library's own thread-locals cannot be that
 * cheap: initial-exec TLS needs the module's whole TLS segment (tens of KB here)
 * in glibc's static TLS surplus (about 1.5 KB, and dlopen fails without it),
 * and the general-dynamic and descriptor models cost a call, a dynamic
 * descriptor saving every register. A thread whose slot is taken (a hash
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
__attribute__((visibility("hidden"))) tls_slot calls_tls[TLS_SLOTS]; /* elt_amd64.S reads it */
#define g_tls calls_tls

/* What elt_amd64.S knows of these structures (calls_layout.h). */
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

__attribute__((always_inline, target("general-regs-only"))) static inline uintptr_t thread_pointer(void) {
    uintptr_t tp = 0;
#if defined(__x86_64__)
    __asm__("movq %%fs:0, %0" : "=r"(tp));
#endif
    return tp;
}

#define TLS_SLOT_OF(tp) ((uint32_t)(((uint64_t)(tp) * 0x9E3779B97F4A7C15ull) >> 53) & (TLS_SLOTS - 1))

static inline calls_thread *this_thread(void) {
    return t_key_made ? pthread_getspecific(t_key) : NULL;
}

/* Makes t (NULL: none) the thread's state, for both paths. */
static void thread_bind(calls_thread *t) {
    pthread_setspecific(t_key, t);
    uintptr_t tp = thread_pointer();
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

static inline cnode *node_at(calls_thread *t, uint32_t i) {
    return &t->chunks[i / NODE_CHUNK][i % NODE_CHUNK];
}

static void thread_release(void *p);

static void make_key(void) {
    t_key_made = pthread_key_create(&t_key, thread_release) == 0;
}

static void thread_free(calls_thread *t) {
    if (!t)
        return;
    if (t->sched_fd >= 0)
        close(t->sched_fd);
    thread_free(t->scratch);
    for (unsigned c = 0; c < MAX_CHUNKS && t->chunks[c]; c++)
        free(t->chunks[c]);
    free(t->stack);
    free(t->hash);
    free(t->dirty);
    free(t);
}

static calls_thread *thread_alloc(void) {
    calls_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 256;
    t->stack = malloc(t->cap * sizeof *t->stack);
    t->chunks[0] = calloc(NODE_CHUNK, sizeof(cnode));
    t->hash_mask = 1023;
    t->hash = calloc(t->hash_mask + 1, sizeof *t->hash);
    t->dirty_cap = 1024;
    t->dirty = malloc(t->dirty_cap * sizeof *t->dirty);
    if (!t->stack || !t->chunks[0] || !t->hash || !t->dirty) {
        thread_free(t);
        return NULL;
    }
    t->nnodes = 1;
    t->countdown = CALLS_EMIT_COUNT;
    t->sched_fd = -1;
    t->busy_ticks = UINT64_MAX;
    return t;
}

static void calibrate(calls_thread *t, int batches, int pairs, int bound);
static int sched_open(uint64_t tid);
static void emit_overhead(calls_thread *t);
static int sched_wait_ns(int fd, uint64_t *wait);

static calls_thread *thread_new(void) {
    if (t_calls_dead || atomic_load_explicit(&G.stopped, memory_order_relaxed))
        return NULL;
    pthread_once(&t_key_once, make_key);
    if (!t_key_made)
        return NULL;
    calls_thread *t = thread_alloc();
    if (!t) {
        t_calls_dead = 1;
        return NULL;
    }
    t->tid = (uint64_t)syscall(SYS_gettid);
    calibrate(t, 9, 128, 0);
    emit_overhead(t);
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
    thread_bind(t);
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

/* ---- emitting CallNode events ---- */

static uint64_t to_ns(uint64_t t) {
    return clock_ticks_to_ns(t);
}

static void emit_node(calls_thread *t, uint32_t i) {
    cnode *n = node_at(t, i);
    const calls_fn *fn = __atomic_load_n(&n->fn, __ATOMIC_RELAXED);
    uint64_t calls = __atomic_load_n(&n->calls, __ATOMIC_RELAXED);
    uint64_t incl = __atomic_load_n(&n->incl, __ATOMIC_RELAXED);
    uint64_t excl = __atomic_load_n(&n->excl, __ATOMIC_RELAXED);
    uint64_t tail = __atomic_load_n(&n->tail, __ATOMIC_RELAXED);
    REC(CallNode, t->tid, i, n->parent, fn ? fn->id : 0, fn ? fn->name : 0, calls, to_ns(incl),
        to_ns(excl), tail);
}

/* The owner writes its changed nodes. */
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

/* The hooks' cost, and the run-queue wait taken out of the times so far. */
static void emit_overhead(calls_thread *t) {
    if (t->inner_ps || t->outer_ps)
        REC(CallsOverhead, t->tid, t->inner_ps, t->outer_ps, t->waited_ns);
}

static void emit_dirty(calls_thread *t) {
    emit_overhead(t);
    for (uint32_t k = 0; k < t->ndirty; k++) {
        uint32_t i = t->dirty[k];
        node_at(t, i)->dirty = 0;
        emit_node(t, i);
    }
    t->ndirty = 0;
}

/* Every node of a thread (Shutdown: possibly another thread's, read racily but
 * safely: chunks never move and are published before nnodes). */
static void emit_all(calls_thread *t) {
    emit_overhead(t);
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_acquire);
    for (uint32_t i = 1; i < n; i++)
        emit_node(t, i);
}

/* ---- the shadow stack ---- */

static inline void frame_pop(calls_thread *t, uint64_t end, int tail) {
    cframe *f = &t->stack[--t->depth];
    uint64_t incl = G.timed && end > f->start ? end - f->start : 0;
    uint64_t excl = incl > f->child ? incl - f->child : 0;
    cnode *n = node_at(t, f->node);
    n->incl += incl;
    n->excl += excl;
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

static int stack_grow(calls_thread *t) {
    if (t->cap >= MAX_DEPTH)
        return -1;
    cframe *s = realloc(t->stack, (size_t)t->cap * 2 * sizeof *s);
    if (!s)
        return -1;
    t->stack = s;
    t->cap *= 2;
    return 0;
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
    cnode *up = node_at(t, parent); /* node 0, the root, is a node too */
    cnode *n = up->last_child;
    uint32_t i;
    if (__builtin_expect(n && n->fn == fn, 1)) {
        i = n->self;
    } else {
        i = child_node(t, parent, fn);
        n = node_at(t, i);
        up->last_child = n;
        if (n->fn == fn)
            __atomic_store_n(&((calls_fn *)fn)->last, n, __ATOMIC_RELAXED);
    }
    n->calls++;
    mark_dirty(t, i, n);
    cframe *f = &t->stack[t->depth++];
    f->node = i;
    f->np = n;
    f->csp = csp;
    f->child = 0;
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
        calibrate(t, 9, 64, 1);
        emit_dirty(t);
        t->skew += ticks() - t0;
        t->next_emit = now + G.emit_ticks;
    }
}

/* ---- the C fast path of enter ----
 * The common call and return are in assembly (elt_amd64.S, on the layout of
 * calls_layout.h): the thread's slot, the caller's last child, the frame. An
 * enter whose function is not the caller's last child comes here first (the
 * hash table), in code that touches general registers only and saves every
 * register it uses (no_caller_saved_registers), so that its stub saves nothing
 * of the method's arguments; it calls the full C path (calls_hook_*) when this
 * returns non-zero, having changed nothing: a new thread, a new call path, a
 * frame to repair, a node to mark, a deep stack. No function calls in here,
 * nothing that is not inlined. */

#if defined(__x86_64__)
#define FAST_FN __attribute__((no_caller_saved_registers, target("general-regs-only"), used, visibility("hidden")))
#define FAST_NODE(t, i) (&(t)->chunks[(i) / NODE_CHUNK][(i) % NODE_CHUNK])

__attribute__((always_inline, target("general-regs-only"))) static inline uint64_t fast_ticks(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t)hi << 32 | lo;
}

__attribute__((always_inline, target("general-regs-only"))) static inline int
fast_enter(uintptr_t client, uintptr_t csp, int timed) {
    uintptr_t tp = thread_pointer();
    const tls_slot *slot = &g_tls[TLS_SLOT_OF(tp)];
    if (atomic_load_explicit(&slot->tp, memory_order_relaxed) != tp)
        return 1;
    calls_thread *t = slot->t;
    uint64_t now = 0;
    if (timed) {
        now = fast_ticks() - t->skew;
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
    t->depth = d + 1;
    f->start = now;
    t->last = now;
    return 0;
}

FAST_FN int calls_fast_enter_timed(uintptr_t client, uintptr_t csp) {
    return fast_enter(client, csp, 1);
}
FAST_FN int calls_fast_enter_counts(uintptr_t client, uintptr_t csp) {
    return fast_enter(client, csp, 0);
}
#endif

/* ---- the hooks' own cost ----
 * A timed call costs its hooks' work: the part between the two clock reads
 * (after the enter's, before the leave's) is inside the callee's interval, the
 * rest (the JITted call sequence, the stubs, the enter's work before its read
 * and the leave's after it) lands in the caller's. Each thread measures both at
 * its start, by running pairs of calls of a dummy function through the very
 * stubs the JIT calls, on a tree of its own, and writes them in a CallsOverhead
 * event; the report subtracts them (calltree.c): the inner part from each call,
 * both parts from each caller for each call below it. Median of batches, so
 * that a preemption in one batch does not count. */

#define CAL_BATCHES 9
#define CAL_BODY 24 /* multiplies in the dummy's body */

static calls_fn g_cal_dummy; /* the calibration's function (calibrate): never in a tree that is written */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A tree of two nodes for the dummy function, the thread's own. */
static calls_thread *scratch_new(void) {
    calls_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 4;
    t->stack = malloc(t->cap * sizeof *t->stack);
    /* node_at() never goes past node 1 here, but the enter fast path may read
     * any node of a thread's first chunk (elt_amd64.S): a whole chunk, whose
     * pages are never touched */
    t->chunks[0] = calloc(NODE_CHUNK, sizeof(cnode));
    t->hash_mask = 15;
    t->hash = calloc(t->hash_mask + 1, sizeof *t->hash);
    t->dirty_cap = 4;
    t->dirty = malloc(t->dirty_cap * sizeof *t->dirty);
    t->sched_fd = -1;
    t->nnodes = 1;
    t->countdown = CALLS_EMIT_COUNT;
    t->busy_ticks = UINT64_MAX;
    if (!t->stack || !t->chunks[0] || !t->hash || !t->dirty) {
        thread_free(t);
        return NULL;
    }
    return t;
}

/* Measures the hooks' cost on this thread (batches of pairs, the median), into
 * t->inner_ps and outer_ps; then binds t (bound) or nothing as the thread's
 * state. Nothing without the fast timed stubs. */
static void calibrate(calls_thread *t, int batches, int pairs, int bound) {
#if defined(__x86_64__)
    if (G.mode != CALLS_MODE_TIMES || !g_clock.tsc || g_elt_enter != dnp_elt_enter_timed)
        return;
    if (!t->scratch && !(t->scratch = scratch_new()))
        return;
    calls_thread *s = t->scratch;
    s->next_emit = ticks() + (1ull << 62);
    s->last = ticks();
    thread_bind(s);
    /* A callee's body hides the end of the enter hook, all of it when the
     * body is a long latency-bound chain, none when it is empty: the inner part
     * is taken as the midpoint of the two (the callee's body is not known).
     * The long one is timed alone too and taken out. */
    uint64_t tot[CAL_BATCHES], in[CAL_BATCHES], body[CAL_BATCHES], empty[CAL_BATCHES];
    uint64_t btot[CAL_BATCHES], bin[CAL_BATCHES], bbody[CAL_BATCHES];
    if (batches > CAL_BATCHES)
        batches = CAL_BATCHES;
    dnp_elt_calibrate((uintptr_t)&g_cal_dummy, 8, g_elt_enter, g_elt_leave, CAL_BODY, 0); /* warm up, make the node */
    for (int b = 0; b < batches; b++) {
        cnode *n = node_at(s, 1);
        uint64_t before = n->incl;
        uint64_t t0 = call_ticks();
        dnp_elt_calibrate((uintptr_t)&g_cal_dummy, (uint64_t)pairs, g_elt_enter, g_elt_leave, CAL_BODY, 0);
        uint64_t t1 = call_ticks();
        dnp_elt_calibrate((uintptr_t)&g_cal_dummy, (uint64_t)pairs, dnp_elt_nop, dnp_elt_nop, CAL_BODY, 0);
        uint64_t t2 = call_ticks();
        tot[b] = t1 - t0;
        body[b] = t2 - t1;
        in[b] = n->incl - before;
        before = n->incl;
        dnp_elt_calibrate((uintptr_t)&g_cal_dummy, (uint64_t)pairs, g_elt_enter, g_elt_leave, 0, 0);
        empty[b] = n->incl - before;
        /* a caller that computes between its calls, as the callee does */
        before = n->incl;
        t0 = call_ticks();
        dnp_elt_calibrate((uintptr_t)&g_cal_dummy, (uint64_t)pairs, g_elt_enter, g_elt_leave, CAL_BODY, CAL_BODY);
        t1 = call_ticks();
        dnp_elt_calibrate((uintptr_t)&g_cal_dummy, (uint64_t)pairs, dnp_elt_nop, dnp_elt_nop, CAL_BODY, CAL_BODY);
        t2 = call_ticks();
        btot[b] = t1 - t0;
        bbody[b] = t2 - t1;
        bin[b] = n->incl - before;
    }
    thread_bind(bound ? t : NULL);
    if (s->nnodes != 2 || s->unmatched || s->depth)
        return;
    qsort(tot, (size_t)batches, sizeof *tot, cmp_u64);
    qsort(in, (size_t)batches, sizeof *in, cmp_u64);
    qsort(body, (size_t)batches, sizeof *body, cmp_u64);
    qsort(empty, (size_t)batches, sizeof *empty, cmp_u64);
    double ps = g_clock.ns_per_tick * 1000.0 / pairs;
    double inner_long = (double)in[batches / 2] * ps, total = (double)tot[batches / 2] * ps;
    double alone = (double)body[batches / 2] * ps, inner_empty = (double)empty[batches / 2] * ps;
    double hidden = inner_long > alone ? inner_long - alone : 0;
    double inner = (hidden + (inner_empty > hidden ? inner_empty : hidden)) / 2;
    t->inner_ps = (uint64_t)inner;
    t->outer_ps = total > inner_long ? (uint64_t)(total - inner_long) : 0;
    /* The outer part behind a busy caller: what of it the caller's work hid. */
    qsort(btot, (size_t)batches, sizeof *btot, cmp_u64);
    qsort(bin, (size_t)batches, sizeof *bin, cmp_u64);
    qsort(bbody, (size_t)batches, sizeof *bbody, cmp_u64);
    double btotal = (double)btot[batches / 2] * ps, bbare = (double)bbody[batches / 2] * ps;
    double binner = (double)bin[batches / 2] * ps;
    double bhooks = btotal - (bbare - alone); /* the hooks' time, with the callee's body as above */
    double bouter = bhooks > binner ? bhooks - binner : 0;
    double hid = (double)t->outer_ps > bouter ? (double)t->outer_ps - bouter : 0;
    double tick_ps = g_clock.ns_per_tick * 1000.0;
    t->hidden_ticks = (uint64_t)(hid / tick_ps);
    /* A caller is taken as busy when its gap is clearly longer than the
     * hooks' own (by half of it, or by what can hide, whichever is more): the
     * gaps of an idle caller (a loop that only calls) spread around the outer
     * cost, and a correction there would be a wrong one. */
    double margin = hid > (double)t->outer_ps / 2 ? hid : (double)t->outer_ps / 2;
    t->busy_ticks = (uint64_t)(((double)t->outer_ps + margin) / tick_ps);
#else
    (void)t;
    (void)batches;
    (void)pairs;
    (void)bound;
#endif
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
 * these with the ordinary ABI. Its hooks are given no caller SP, but eltInfo
 * points to a COR_PRF_ELT_INFO_INTERNAL whose first member points to the
 * stub's PROFILE_PLATFORM_SPECIFIC_DATA, which holds the method's caller SP at
 * 0x20 (profiledRsp; dotnet/runtime vm/amd64/asmconstants.h, asmhelpers.S):
 * the same key as the fast path's. Checked to lie on this stack above eltInfo;
 * if it does not, the thread's shadow stack cannot be kept and calls are not
 * recorded for it (a note says so). */
static uintptr_t slow_caller_sp(COR_PRF_ELT_INFO elt) {
#if defined(__x86_64__)
    uintptr_t handle = elt ? *(const uintptr_t *)elt : 0;
    if (handle > elt && handle - elt < 65536) {
        uintptr_t csp = *(const uintptr_t *)(handle + 0x20);
        if (csp > handle && csp - handle < (1u << 20))
            return csp;
    }
#endif
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

static void slow_leave(FunctionIDOrClientID id, COR_PRF_ELT_INFO elt) {
    const calls_fn *fn = (const calls_fn *)id.clientID;
    uint64_t now;
    uintptr_t csp = slow_caller_sp(elt);
    calls_thread *t = csp ? leave_begin(fn, csp, &now) : NULL;
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
    uintptr_t csp = slow_caller_sp(elt);
    calls_thread *t = csp ? leave_begin(fn, csp, &now) : NULL;
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
static void fn_forget_nodes(calls_thread *t) {
    pthread_mutex_lock(&G.fn_mu);
    cnode *d = __atomic_load_n(&g_cal_dummy.last, __ATOMIC_RELAXED);
    if (d && d >= t->chunks[0] && d < t->chunks[0] + NODE_CHUNK)
        __atomic_store_n(&g_cal_dummy.last, NULL, __ATOMIC_RELAXED);
    for (size_t i = 0; F.fns && i <= F.mask; i++) {
        calls_fn *f = F.fns[i];
        cnode *n = f ? __atomic_load_n(&f->last, __ATOMIC_RELAXED) : NULL;
        for (unsigned c = 0; n && c < MAX_CHUNKS && t->chunks[c]; c++) {
            if (n >= t->chunks[c] && n < t->chunks[c] + NODE_CHUNK) {
                __atomic_store_n(&f->last, NULL, __ATOMIC_RELAXED);
                break;
            }
        }
    }
    pthread_mutex_unlock(&G.fn_mu);
}

static void thread_release(void *p) {
    calls_thread *t = p;
    t_calls_dead = 1;
    thread_bind(NULL);
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
        emit_dirty(t);
        thread_report(t, 1);
    }
    pthread_mutex_unlock(&G.reg_mu);
    fn_forget_nodes(t);
    if (t->scratch)
        fn_forget_nodes(t->scratch);
    thread_free(t);
}

void calls_shutdown(void) {
    if (!G.mode)
        return;
    pthread_mutex_lock(&G.reg_mu);
    for (calls_thread *t = G.threads; t; t = t->next) {
        emit_all(t);
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
    G.all_code = cfg->all_code;
    G.events = G.mode == CALLS_MODE_ARGS || G.mode == CALLS_MODE_TIMELINE;
    G.timed = G.mode != CALLS_MODE_COUNTS;
    snprintf(G.include, sizeof G.include, "%s", cfg->include);
    snprintf(G.exclude, sizeof G.exclude, "%s", cfg->exclude);
    *mask |= COR_PRF_MONITOR_ENTERLEAVE;
    if (G.mode == CALLS_MODE_ARGS)
        *mask |= COR_PRF_ENABLE_FUNCTION_ARGS | COR_PRF_ENABLE_FUNCTION_RETVAL |
                 COR_PRF_ENABLE_FRAME_INFO;
    if (G.all_code)
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
    REC(CallsConfig, (uint64_t)G.mode, (uint64_t)G.all_code, rec_string(G.include, strlen(G.include)),
        rec_string(G.exclude, strlen(G.exclude)));
    if (g_clock.tsc)
        rec_note(0, "calls: clock rdtsc at %.6f GHz, calibrated against CLOCK_MONOTONIC",
                 1.0 / g_clock.ns_per_tick);
    else
        rec_note(0, "calls: clock CLOCK_MONOTONIC (no invariant TSC)");
#if defined(__x86_64__)
    if (G.mode == CALLS_MODE_TIMES && g_clock.tsc) {
        g_elt_enter = dnp_elt_enter_timed;
        g_elt_leave = dnp_elt_leave_timed;
    } else if (G.mode == CALLS_MODE_COUNTS) {
        g_elt_enter = dnp_elt_enter_counts;
        g_elt_leave = dnp_elt_leave_counts;
    }
#endif
    HRESULT hr = INFO_CALL(SetFunctionIDMapper2, mapper, NULL);
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
