/* locks.c: lock contention and waits by waiting stack (locks.h, docs/waits.md).
 *
 * Payloads (dotnet/runtime src/coreclr/vm/ClrEtwAll.man, little-endian, packed):
 *   ContentionStart (81) V1: u8 ContentionFlags, u16 ClrInstanceID
 *                        V2 (.NET 8+): then ptr LockID, ptr AssociatedObjectID,
 *                        u64 LockOwnerThreadID
 *   ContentionStop (91)  V0: u8 ContentionFlags, u16 ClrInstanceID
 *                        V1: then double DurationNs
 *   WaitHandleWaitStart (301, .NET 9+, verbose): u8 WaitSource (0 unknown,
 *                        1 Monitor.Wait), ptr AssociatedObjectID, u16 ClrInstanceID
 *   WaitHandleWaitStop (302): u16 ClrInstanceID
 *
 * Both halves of a wait come on the waiting thread: the start keeps its stack,
 * type and owner in a __thread slot, the stop adds the wait up. No malloc, no
 * lock on the way but the striped table's spin lock at the stop.
 *
 * Which lock: a Monitor's contention is raised by the runtime's native lock
 * (AwareLock) in cooperative mode, so the locked object (AssociatedObjectID)
 * cannot move during the callback and is named (GetClassFromObject, names.c).
 * A System.Threading.Lock's, and every WaitHandle wait, is raised from managed
 * code through a QCall (NativeRuntimeEventSource), in preemptive mode: a GC may
 * move the object under the callback, so it is not read; the innermost managed
 * frame tells the two apart (a thread's cache by stack). */
#include "locks.h"

#include <stdatomic.h>
#include <string.h>

#include "agent.h"
#include "agg.h"
#include "callbacks.h"
#include "eventpipe.h"
#include "names.h"
#include "recorder.h"
#include "rejit.h"
#include "stack.h"
#include "thread_mem.h"

#define EVENT_CONTENTION_START 81u
#define EVENT_CONTENTION_STOP 91u
#define EVENT_WAIT_START 301u
#define EVENT_WAIT_STOP 302u
#define COR_PRF_ENABLE_STACK_SNAPSHOT 0x10000000u

#define SLICES_PER_SECOND 1000u
#define LOCK_TYPE_NAME "System.Threading.Lock"

/* Aggregation, as alloc_sampling.c's: striped tables (agg.h), written out when
 * a second old or FLUSH_WAITS waits full, when a key finds no room near its
 * place, and all at stop and exit. */
#define FLUSH_WAITS 4096

typedef struct site {
    uint32_t used, stack, type, kind;
    uint64_t owner, count, wait_ns, max_ns;
} site;

AGG_DEFINE(g_agg, site, FLUSH_WAITS);

static int g_mode;             /* 1 contention, 2 contention and waits (--locks=waits) */
static int g_major;            /* the runtime's major version */
static uint64_t g_slice_ns;    /* a wait this long is also a LockWait */
static atomic_uint g_gen;      /* a new session: per-thread caches and pending waits are stale */
static atomic_uint g_start_version;
static atomic_uint_fast64_t g_waits, g_slices, g_dropped, g_unmatched;
static atomic_uint_fast64_t g_before_n, g_before_ns; /* LockBeforeProbe */
static atomic_uint_fast64_t g_slice_second;
static atomic_uint g_slice_count;

/* A wait begun and not ended on this thread. */
typedef struct pending {
    uint64_t start, owner;
    uint32_t stack, type, kind;
    uint32_t on; /* 1 waiting, 2 a wait inside a contention (left to it) */
    uint32_t probed; /* 0: a Lock's wait begun before the probe in its slow path ran */
} pending;

static __thread pending t_contention, t_wait;

/* A call of Lock's slow path that the probe times on this thread (rejit.c):
 * on, its stack, and the owner named by a ContentionStart inside it. The
 * stack is taken as the call starts, while the thread has yet to get the lock:
 * at its end the thread holds it, and the walk would lengthen the hold. */
static __thread struct {
    unsigned on, gen;
    uint32_t stack;
    uint64_t owner;
} t_probe;
static atomic_uint_fast64_t g_probe_calls, g_probe_blocked_n, g_probe_blocked_ns; /* LockProbeBlocked */
static __thread unsigned t_gen;
static __thread uint32_t t_lock_type; /* "System.Threading.Lock" */

#define PATH_SLOTS 256
#define TYPE_SLOTS 64
/* This thread's caches (thread_mem.h). */
typedef struct locks_tls {
    /* by stack string number: raised from managed code (1), or by the runtime (2) */
    struct {
        uint32_t stack, how;
    } paths[PATH_SLOTS];
    struct {
        uint64_t class_id;
        unsigned epoch;
        uint32_t sid;
    } types[TYPE_SLOTS];
} locks_tls;
static __thread thread_mem_slot t_mem;

static locks_tls *caches(void) {
    return thread_mem(&t_mem, sizeof(locks_tls), atomic_load_explicit(&g_gen, memory_order_relaxed));
}

static void on_event(const ep_event *e);
static void on_started(void);

static unsigned stale(void) {
    return agg_flush_stale(&g_agg);
}

static ep_consumer g_consumer = {"lock contention", 0, 0, on_event, on_started, locks_flush_all, NULL, NULL, stale};

void locks_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    if (!cfg->locks)
        return;
    g_mode = cfg->locks;
    g_major = ep_runtime_major();
    g_slice_ns = (uint64_t)cfg->lock_slice_us * 1000u;
    int waits = g_mode == 2 && g_major >= 9; /* WaitHandleWaitStart/Stop: .NET 9+, verbose only */
    g_consumer.keywords = EP_KEYWORD_CONTENTION | (waits ? EP_KEYWORD_WAIT_HANDLE : 0);
    g_consumer.level = waits ? COR_PRF_EVENTPIPE_VERBOSE : COR_PRF_EVENTPIPE_INFORMATIONAL;
    if (ep_want(&g_consumer, mask_high) == 0)
        *mask |= COR_PRF_ENABLE_STACK_SNAPSHOT; /* the waiting stacks */
}

static void on_started(void) {
    atomic_fetch_add(&g_gen, 1); /* string numbers are the trace's: cached ones belong to an old one */
    atomic_store(&g_start_version, 0);
    atomic_store(&g_waits, 0);
    atomic_store(&g_slices, 0);
    atomic_store(&g_dropped, 0);
    atomic_store(&g_unmatched, 0);
    atomic_store(&g_before_n, 0);
    atomic_store(&g_before_ns, 0);
    atomic_store(&g_probe_calls, 0);
    atomic_store(&g_probe_blocked_n, 0);
    atomic_store(&g_probe_blocked_ns, 0);
    REC(LockConfig, (uint64_t)g_major, (uint64_t)g_mode, g_slice_ns);
}

/* A site's key is a site holding one wait. */
static int site_same(const void *slot, const void *key) {
    const site *a = slot, *k = key;
    return a->stack == k->stack && a->type == k->type && a->owner == k->owner && a->kind == k->kind;
}

static void site_add(void *slot, const void *key) {
    site *a = slot;
    const site *k = key;
    a->used = 1;
    a->stack = k->stack;
    a->type = k->type;
    a->owner = k->owner;
    a->kind = k->kind;
    a->count++;
    a->wait_ns += k->wait_ns;
    if (k->wait_ns > a->max_ns)
        a->max_ns = k->wait_ns;
}

static void site_write(const void *slot) {
    const site *a = slot;
    REC(LockSite, a->stack, a->type, a->owner, a->kind, a->count, a->wait_ns, a->max_ns);
}

void locks_flush_all(void) {
    agg_flush_all(&g_agg);
    REC(LockStats, atomic_load(&g_start_version), atomic_load(&g_waits), atomic_load(&g_slices),
        atomic_load(&g_dropped), atomic_load(&g_unmatched));
    if (atomic_load(&g_before_n))
        REC(LockBeforeProbe, atomic_load(&g_before_n), atomic_load(&g_before_ns));
    if (atomic_load(&g_probe_calls) || rejit_lock_live()) /* the reader's sign: Lock's LockSites are the probe's */
        REC(LockProbeBlocked, atomic_load(&g_probe_blocked_n), atomic_load(&g_probe_blocked_ns));
}

static void aggregate(const pending *p, uint64_t wait_ns) {
    site k = {1, p->stack, p->type, p->kind, p->owner, 1, wait_ns, wait_ns};
    uint64_t h = ((uint64_t)p->stack * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)p->type * 0xc2b2ae3d27d4eb4full) ^
                 (p->owner * 0x165667b19e3779f9ull) ^ p->kind;
    agg_add(&g_agg, h, &k);
}

/* A long wait on its own, for the timeline: at most SLICES_PER_SECOND a second
 * (the rest are in the sums only, and counted). */
static void slice(const pending *p, uint64_t wait_ns, uint64_t now) {
    if (wait_ns < g_slice_ns)
        return;
    uint64_t second = now / 1000000000ull;
    uint_fast64_t seen = atomic_load_explicit(&g_slice_second, memory_order_relaxed);
    if (seen != second && atomic_compare_exchange_strong(&g_slice_second, &seen, second))
        atomic_store(&g_slice_count, 0);
    if (atomic_fetch_add(&g_slice_count, 1) >= SLICES_PER_SECOND) {
        atomic_fetch_add(&g_dropped, 1);
        return;
    }
    atomic_fetch_add(&g_slices, 1);
    REC(LockWait, p->stack, p->type, p->owner, p->kind, wait_ns);
}

/* 1 when the innermost managed frame is the runtime's managed event source (the
 * event was raised from managed code: preemptive mode), 2 when it is not, 0
 * when the stack cannot be told. Cached per thread by stack. */
static unsigned raised_from(uint32_t stack, int *in_monitor) {
    unsigned slot = (stack * 2654435761u >> 24) & (PATH_SLOTS - 1);
    locks_tls *t = caches();
    *in_monitor = 0;
    if (t && stack && t->paths[slot].stack == stack) {
        *in_monitor = (int)(t->paths[slot].how >> 2 & 1);
        return t->paths[slot].how & 3;
    }
    stack_snapshot s;
    if (!stack || stack_take(&s) != 0 || !s.n)
        return 0;
    char text[1024];
    names_function_text(s.f[0], text, sizeof text);
    unsigned how = strncmp(text, "System.Diagnostics.Tracing.NativeRuntimeEventSource::", 53) == 0 ? 1 : 2;
    for (unsigned i = 0; i < s.n && i < 12 && how == 1 && !*in_monitor; i++) {
        names_function_text(s.f[i], text, sizeof text);
        *in_monitor = strncmp(text, "System.Threading.Monitor::", 26) == 0;
    }
    if (t) {
        t->paths[slot].stack = stack;
        t->paths[slot].how = how | (unsigned)*in_monitor << 2;
    }
    return how;
}

/* The name of the object's class, read only from a callback in cooperative
 * mode (how == 2); cached per thread by ClassID with names.c's class epoch. */
static uint32_t object_type(uint64_t object) {
    ClassID cid = 0;
    if (!object || FAILED(INFO_CALL(GetClassFromObject, (ObjectID)object, &cid)) || !cid)
        return 0;
    unsigned slot = (unsigned)((cid >> 4) ^ (cid >> 12)) & (TYPE_SLOTS - 1);
    unsigned epoch = names_epoch(NAMES_CLASS);
    locks_tls *t = caches();
    if (t && t->types[slot].class_id == cid && t->types[slot].epoch == epoch && t->types[slot].sid)
        return t->types[slot].sid;
    uint32_t sid = names_get(NAMES_CLASS, cid, 1);
    if (t) {
        t->types[slot].class_id = cid;
        t->types[slot].epoch = epoch;
        t->types[slot].sid = sid;
    }
    return sid;
}

static uint32_t lock_type(void) {
    return t_lock_type ? t_lock_type : (t_lock_type = rec_string(LOCK_TYPE_NAME, sizeof LOCK_TYPE_NAME - 1));
}

static void contention_start(const ep_event *e) {
    ep_reader r = ep_read(e);
    ep_get(&r, 1);
    ep_get(&r, 2);
    uint64_t object = 0, owner = 0;
    if (e->version >= 2) {
        ep_get_ptr(&r); /* LockID: the runtime's own (an AwareLock, a Lock's wait handle) */
        object = ep_get_ptr(&r);
        owner = ep_get(&r, 8);
        if (r.bad)
            object = owner = 0;
    }
    unsigned v = atomic_load_explicit(&g_start_version, memory_order_relaxed);
    while (e->version > v && !atomic_compare_exchange_weak(&g_start_version, &v, e->version)) {
    }
    pending *p = &t_contention;
    p->stack = stack_sid_here(e->nframes, e->frames);
    int in_monitor = 0;
    unsigned how = raised_from(p->stack, &in_monitor);
    p->kind = how == 1 && !in_monitor ? DNP_LOCK_LOCK : DNP_LOCK_MONITOR;
    if (how == 2)
        p->type = object_type(object);
    else if (p->kind == DNP_LOCK_LOCK) /* its AssociatedObjectID is the Lock itself */
        p->type = lock_type();
    else
        p->type = 0;
    p->owner = owner;
    p->on = 1;
    p->probed = 1;
    if (p->kind == DNP_LOCK_LOCK && t_probe.on && t_probe.gen == atomic_load(&g_gen)) {
        if (owner) /* the probe's call: its wait, told at the probe's exit; the holder as it blocked */
            t_probe.owner = owner;
        p->on = 3;
    } else if (p->kind == DNP_LOCK_LOCK) { /* Lock's slow path timed from now on (rejit.c) */
        p->probed = !rejit_lock_before_probe();
        rejit_lock_start();
    }
    p->start = recorder_now();
}

static void wait_start(const ep_event *e) {
    ep_reader r = ep_read(e);
    uint64_t source = ep_get(&r, 1);
    pending *p = &t_wait;
    if (t_contention.on || t_probe.on) { /* the lock's own wait (Monitor.Enter_Slowpath on .NET 10, Lock's
                                          * slow path): counted as contention */
        p->on = 2;
        return;
    }
    p->stack = stack_sid_here(e->nframes, e->frames);
    p->kind = source == 1 ? DNP_LOCK_MONITOR_WAIT : DNP_LOCK_WAIT_HANDLE;
    p->probed = 1;
    p->type = 0; /* raised from managed code: the object is not read */
    p->owner = 0;
    p->on = 1;
    p->start = recorder_now();
}

static void stop(pending *p, uint64_t runtime_ns) {
    uint64_t now = recorder_now();
    if (p->on == 3) { /* a wait inside the probe's call: counted there */
        atomic_fetch_add_explicit(&g_probe_blocked_n, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_probe_blocked_ns, runtime_ns ? runtime_ns : now - p->start, memory_order_relaxed);
    }
    if (p->on != 1) {
        if (!p->on)
            atomic_fetch_add_explicit(&g_unmatched, 1, memory_order_relaxed);
        p->on = 0;
        return;
    }
    p->on = 0;
    uint64_t wait_ns = runtime_ns ? runtime_ns : now - p->start;
    atomic_fetch_add_explicit(&g_waits, 1, memory_order_relaxed);
    if (!p->probed) {
        atomic_fetch_add_explicit(&g_before_n, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_before_ns, wait_ns, memory_order_relaxed);
    }
    aggregate(p, wait_ns);
    slice(p, wait_ns, now);
}

/* This thread's state made the current session's. */
static void thread_sync(void) {
    unsigned gen = atomic_load_explicit(&g_gen, memory_order_relaxed);
    if (t_gen != gen) {
        memset(&t_contention, 0, sizeof t_contention);
        memset(&t_wait, 0, sizeof t_wait);
        t_lock_type = 0;
        t_gen = gen;
    }
}

static void on_event(const ep_event *e) {
    thread_sync();
    switch (e->id) {
    case EVENT_CONTENTION_START: contention_start(e); break;
    case EVENT_CONTENTION_STOP: {
        uint64_t ns = 0;
        if (e->version >= 1) {
            ep_reader r = ep_read(e);
            ep_get(&r, 3);
            uint64_t bits = ep_get(&r, 8);
            double d;
            memcpy(&d, &bits, sizeof d);
            ns = !r.bad && d > 0 && d < 1e18 ? (uint64_t)d : 0;
        }
        stop(&t_contention, ns);
        break;
    }
    case EVENT_WAIT_START:
        if (g_mode == 2)
            wait_start(e);
        break;
    case EVENT_WAIT_STOP:
        if (g_mode == 2)
            stop(&t_wait, 0);
        break;
    default: break;
    }
}

void locks_probe_enter(uint64_t owner) {
    if (!g_mode)
        return;
    thread_sync();
    t_probe.gen = atomic_load_explicit(&g_gen, memory_order_relaxed);
    t_probe.owner = owner;
    /* innermost frame Lock.TryEnterSlow: calls from Lock.TryEnter() are told apart by the reader */
    t_probe.stack = stack_sid_here(0, NULL);
    t_probe.on = 1;
}

void locks_probe_exit(uint64_t wait_ns) {
    if (!g_mode || !t_probe.on)
        return;
    t_probe.on = 0;
    if (t_probe.gen != atomic_load_explicit(&g_gen, memory_order_relaxed))
        return; /* begun in another session */
    thread_sync();
    pending p = {.stack = t_probe.stack, .type = lock_type(), .kind = DNP_LOCK_LOCK, .owner = t_probe.owner,
                 .on = 1, .probed = 1};
    atomic_fetch_add_explicit(&g_waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_probe_calls, 1, memory_order_relaxed);
    aggregate(&p, wait_ns);
    slice(&p, wait_ns, recorder_now());
}
