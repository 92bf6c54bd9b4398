/* gc_stats.c: GC statistics from the runtime's GC events (gc_stats.h).
 *
 * Payloads (dotnet/runtime src/coreclr/vm/ClrEtwAll.man, little-endian, packed;
 * the same on .NET 8, 9 and 10):
 *   GCStart_V2 (1): u32 Count, u32 Depth, u32 Reason, u32 Type, u16 ClrInstanceID,
 *     u64 ClientSequenceNumber
 *   GCEnd_V1 (2): u32 Count, u32 Depth, u16 ClrInstanceID
 *   GCRestartEEEnd_V1 (3), GCRestartEEBegin_V1 (7), GCSuspendEEEnd_V1 (8): u16
 *   GCSuspendEEBegin_V1 (9): u32 Reason (1 for a GC, 6 to prepare one), u32 Count, u16
 *   GCHeapStats_V2 (4): u64 GenerationSize0, u64 TotalPromotedSize0, the same for
 *     generations 1, 2 and 3 (the large object heap), u64 FinalizationPromotedSize,
 *     u64 FinalizationPromotedCount, u32 PinnedObjectCount, u32 SinkBlockCount,
 *     u32 GCHandleCount, u16 ClrInstanceID, u64 GenerationSize4, u64
 *     TotalPromotedSize4 (the pinned object heap)
 *   GCPerHeapHistory_V3 (204): u16 ClrInstanceID, 6 ptr, 6 u32 (..., HeapIndex),
 *     ptr ExtraGen0Commit, u32 Count, then Count gc_generation_data (10 ptr each:
 *     size_before, ..., size_after, ...), one per generation 0, 1, 2, LOH, POH;
 *     the u32s: RunningFreeListEfficiency, CondemnReasons0 (gcrecord.h's
 *     gc_condemn_reason_gen, 2 bits each: the generation the GC began with,
 *     the final one of this heap, the one whose budget was exceeded, the time
 *     tuning's), CondemnReasons1 (gc_condemn_reason_condition, a bit each),
 *     CompactMechanisms, ExpandMechanisms, HeapIndex
 *
 * The session is synchronous: an event is delivered on the thread that fires
 * it, as it happens, so the agent's clock at delivery is the event's time. The
 * order of one blocking GC: SuspendEEBegin, SuspendEEEnd, GCStart,
 * PerHeapHistory, GCEnd, HeapStats, RestartEEBegin, RestartEEEnd. A background
 * GC starts inside a short suspension, runs with the program, suspends it again
 * to finish its marking, and ends (GCEnd, HeapStats) outside any; the
 * collections of the young generations it lets run meanwhile (foreground) have
 * suspensions of their own. A suspension is the pause of the GCs that started
 * in it (restart_end: split between them); one in which none started (a
 * background GC's later ones) is its open background GC's. Suspensions for anything else (the debugger, a profiler's
 * SuspendRuntime) are not GC pauses. The state is a handful of collections in
 * flight under a spin lock: a few events per GC, no allocation. */
#include "gc_stats.h"

#include <stdatomic.h>
#include <string.h>

#include "agent.h"
#include "callbacks.h"
#include "eventpipe.h"
#include "recorder.h"

#define EV_GC_START 1u
#define EV_GC_END 2u
#define EV_RESTART_END 3u
#define EV_HEAP_STATS 4u
#define EV_SUSPEND_END 8u
#define EV_SUSPEND_BEGIN 9u
#define EV_PER_HEAP_HISTORY 204u

#define SEEN_START 0x1u
#define SEEN_END 0x2u
#define SEEN_SUSPEND 0x4u
#define SEEN_RESTART 0x8u
#define SEEN_HEAP_STATS 0x10u
#define SEEN_HISTORY 0x20u

#define TYPE_BACKGROUND 1u
#define NGENS 5 /* 0, 1, 2, large, pinned */
#define IN_FLIGHT 4

typedef struct gc_rec {
    int used;
    uint32_t number, gen, reason, type, seen;
    uint64_t start, end;      /* GCStart, GCEnd */
    uint64_t suspend_ns, pause_ns;
    uint64_t susp;            /* the suspension it started in (0: none) */
    uint64_t before[NGENS], after[NGENS], promoted;
    uint32_t reasons, conditions; /* CondemnReasons0 of the first heap, CondemnReasons1 over the heaps */
} gc_rec;

static struct {
    atomic_flag lock;
    int in_susp;              /* a suspension for a GC is under way */
    uint64_t susp_begin, susp_end, susp_seq;
    gc_rec r[IN_FLIGHT];
} S;

static void on_event(const ep_event *e);
static void on_started(void);
static void flush(void);

static ep_consumer g_consumer = {"GC statistics", EP_KEYWORD_GC, COR_PRF_EVENTPIPE_INFORMATIONAL, on_event,
                                 on_started, flush, NULL, NULL, NULL};

void gc_stats_configure(const agent_config *cfg, uint32_t *mask_high) {
    if (!cfg->gc)
        return;
    atomic_flag_clear(&S.lock);
    memset(S.r, 0, sizeof S.r);
    S.in_susp = 0;
    S.susp_seq = 0;
    ep_want(&g_consumer, mask_high);
}

int gc_stats_enabled(void) {
    return ep_running(&g_consumer);
}

static void on_started(void) {
    REC(GcConfig, (uint64_t)ep_runtime_major(), EP_KEYWORD_GC);
}

static void lock(void) {
    while (atomic_flag_test_and_set_explicit(&S.lock, memory_order_acquire)) {
    }
}

static void unlock(void) {
    atomic_flag_clear_explicit(&S.lock, memory_order_release);
}

static void record(const gc_rec *g) {
    if (g->seen & SEEN_HISTORY) {
        uint32_t asked = g->reasons & 3u; /* the generation it began with; 4-5: the one whose budget was used up */
        if (g->gen > asked)
            REC(GcRaised, g->number, asked, g->reasons >> 4 & 3u, g->reasons, g->conditions);
        uint64_t any = 0;
        for (unsigned k = 0; k < NGENS; k++)
            any |= g->before[k];
        if (any) /* a background GC's history, written as it ends, has no sizes before it */
            REC(GcSizes, g->number, 0, g->before[0], g->before[1], g->before[2], g->before[3], g->before[4], 0);
    }
    if (g->seen & SEEN_HEAP_STATS)
        REC(GcSizes, g->number, 1, g->after[0], g->after[1], g->after[2], g->after[3], g->after[4], g->promoted);
    REC(GcCollection, g->number, g->gen, g->reason, g->type, g->seen, g->end > g->start ? g->end - g->start : 0,
        g->suspend_ns, g->pause_ns);
}

/* Whether a collection started after g (whose events g will not wait for). */
static int followed(const gc_rec *g) {
    for (unsigned i = 0; i < IN_FLIGHT; i++)
        if (S.r[i].used && &S.r[i] != g && S.r[i].start > g->start)
            return 1;
    return 0;
}

/* Whether g is complete: ended, its sizes known, its pause over; a background
 * one also its GCPerHeapHistory, which comes after its GCEnd and GCHeapStats
 * (on the background GC's thread), unless another collection started. */
static int complete(const gc_rec *g) {
    if (!(g->seen & SEEN_END) || !(g->seen & SEEN_HEAP_STATS))
        return 0;
    if (g->type == TYPE_BACKGROUND && !(g->seen & SEEN_HISTORY) && !followed(g))
        return 0;
    /* not while the suspension it started in lasts (also a background GC that ends in it) */
    return !g->susp || (g->seen & SEEN_RESTART) || !S.in_susp || S.susp_seq != g->susp;
}

/* Moves the complete collections into out (all 1: every ended one too, 2:
 * every one); under the lock. */
static unsigned take(gc_rec *out, int all) {
    unsigned n = 0;
    for (unsigned i = 0; i < IN_FLIGHT; i++) {
        gc_rec *g = &S.r[i];
        if (g->used && (complete(g) || (all && (g->seen & SEEN_END)) || all == 2)) {
            out[n++] = *g;
            g->used = 0;
        }
    }
    return n;
}

/* The open collection numbered n, else the latest started not ended (or any) one. */
static gc_rec *find(uint32_t n, int want_open) {
    gc_rec *best = NULL;
    for (unsigned i = 0; i < IN_FLIGHT; i++) {
        gc_rec *g = &S.r[i];
        if (!g->used)
            continue;
        if (n && g->number == n)
            return g;
        if ((!want_open || !(g->seen & SEEN_END)) && (!best || g->start > best->start))
            best = g;
    }
    return best;
}

static void gc_start(ep_reader *r, uint64_t now, gc_rec *out, unsigned *nout) {
    uint32_t count = (uint32_t)ep_get(r, 4), depth = (uint32_t)ep_get(r, 4);
    uint32_t reason = (uint32_t)ep_get(r, 4), type = (uint32_t)ep_get(r, 4);
    if (r->bad)
        return;
    gc_rec *g = NULL;
    for (unsigned i = 0; i < IN_FLIGHT && !g; i++)
        if (!S.r[i].used)
            g = &S.r[i];
    if (!g) { /* events went missing: out with the oldest */
        g = &S.r[0];
        for (unsigned i = 1; i < IN_FLIGHT; i++)
            if (S.r[i].start < g->start)
                g = &S.r[i];
        if (g->seen & SEEN_END)
            out[(*nout)++] = *g;
    }
    memset(g, 0, sizeof *g);
    g->used = 1;
    g->number = count, g->gen = depth, g->reason = reason, g->type = type;
    g->start = now;
    g->seen = SEEN_START;
    if (S.in_susp) {
        int first = 1; /* only the first GC of a suspension waited for it */
        for (unsigned i = 0; i < IN_FLIGHT; i++)
            first &= !(S.r[i].used && &S.r[i] != g && S.r[i].susp == S.susp_seq);
        g->susp = S.susp_seq;
        g->seen |= first ? 0 : SEEN_SUSPEND;
        if (S.susp_end && first) {
            g->suspend_ns = S.susp_end - S.susp_begin;
            g->seen |= SEEN_SUSPEND;
        }
    }
}

/* The suspension ends: its time is the pause of the GCs that started in it,
 * each from its start (the first from the suspension's) to the next one's
 * start or the resumption (a background GC's first phase runs suspended and
 * the collection of the young generations it starts with begins later in the
 * same suspension); a suspension in which none started is the open
 * background GC's (its final marking). */
static void restart_end(uint64_t now) {
    if (!S.in_susp)
        return;
    S.in_susp = 0;
    gc_rec *in[IN_FLIGHT];
    unsigned n = 0;
    for (unsigned i = 0; i < IN_FLIGHT; i++)
        if (S.r[i].used && S.r[i].susp == S.susp_seq)
            in[n++] = &S.r[i];
    for (unsigned i = 1; i < n; i++) /* by start: at most IN_FLIGHT */
        for (unsigned k = i; k > 0 && in[k]->start < in[k - 1]->start; k--) {
            gc_rec *t = in[k];
            in[k] = in[k - 1];
            in[k - 1] = t;
        }
    for (unsigned i = 0; i < n; i++) {
        uint64_t from = i ? in[i]->start : S.susp_begin, to = i + 1 < n ? in[i + 1]->start : now;
        in[i]->pause_ns += to > from ? to - from : 0;
        in[i]->seen |= SEEN_RESTART;
    }
    for (unsigned i = 0; i < IN_FLIGHT && !n; i++) {
        gc_rec *g = &S.r[i];
        if (g->used && g->type == TYPE_BACKGROUND && !(g->seen & SEEN_END)) {
            g->pause_ns += now - S.susp_begin;
            g->seen |= SEEN_RESTART;
            n = 1;
        }
    }
}

static void heap_stats(ep_reader *r) {
    uint64_t size[NGENS], promoted = 0;
    for (unsigned k = 0; k < 4; k++) {
        size[k] = ep_get(r, 8);
        promoted += ep_get(r, 8);
    }
    ep_get(r, 8 + 8 + 4 + 4 + 4 + 2);
    size[4] = ep_get(r, 8);
    promoted += ep_get(r, 8);
    if (r->bad) /* V2 (.NET 5 and later) has the pinned object heap */
        return;
    gc_rec *g = NULL; /* the latest ended one without its sizes, else the open one */
    for (unsigned i = 0; i < IN_FLIGHT; i++) {
        gc_rec *c = &S.r[i];
        if (c->used && (c->seen & SEEN_END) && !(c->seen & SEEN_HEAP_STATS) && (!g || c->end > g->end))
            g = c;
    }
    if (!g)
        g = find(0, 1);
    if (!g)
        return;
    memcpy(g->after, size, sizeof size);
    g->promoted = promoted;
    g->seen |= SEEN_HEAP_STATS;
}

static void per_heap_history(ep_reader *r) {
    ep_get(r, 2);
    for (unsigned k = 0; k < 6; k++)
        ep_get_ptr(r);
    ep_get(r, 4);
    uint32_t reasons = (uint32_t)ep_get(r, 4), conditions = (uint32_t)ep_get(r, 4);
    ep_get(r, 3 * 4);
    ep_get_ptr(r);
    uint32_t n = (uint32_t)ep_get(r, 4);
    const unsigned per = 10 * sizeof(void *);
    if (r->bad || n == 0 || n > 16 || ep_left(r) < n * per)
        return;
    /* the open collection's (a blocking one's comes before its GCEnd); else an
     * ended background one's, which comes after */
    gc_rec *g = find(0, 1);
    if (!g || (g->seen & SEEN_END)) {
        g = NULL;
        for (unsigned i = 0; i < IN_FLIGHT; i++) {
            gc_rec *c = &S.r[i];
            if (c->used && c->type == TYPE_BACKGROUND && (c->seen & SEEN_END) && !(c->seen & SEEN_HISTORY) &&
                (!g || c->start > g->start))
                g = c;
        }
    }
    if (!g)
        return;
    if (!(g->seen & SEEN_HISTORY))
        g->reasons = reasons;
    g->conditions |= conditions;
    for (unsigned k = 0; k < n && k < NGENS; k++) {
        ep_reader one = *r;
        one.pos += k * per;
        g->before[k] += ep_get_ptr(&one); /* size_before, over the heaps */
    }
    g->seen |= SEEN_HISTORY;
}

static void on_event(const ep_event *e) {
    DWORD id = e->id;
    if (id != EV_GC_START && id != EV_GC_END && id != EV_RESTART_END && id != EV_HEAP_STATS &&
        id != EV_SUSPEND_END && id != EV_SUSPEND_BEGIN && id != EV_PER_HEAP_HISTORY)
        return;
    ep_reader r = ep_read(e);
    uint64_t now = recorder_now();
    gc_rec out[IN_FLIGHT + 1];
    unsigned nout = 0;
    lock();
    switch (id) {
    case EV_SUSPEND_BEGIN: {
        uint32_t reason = (uint32_t)ep_get(&r, 4);
        if (!r.bad && (reason == 1 || reason == 6)) {
            S.in_susp = 1;
            S.susp_begin = now;
            S.susp_end = 0;
            S.susp_seq++;
        }
        break;
    }
    case EV_SUSPEND_END:
        if (S.in_susp && !S.susp_end)
            S.susp_end = now;
        break;
    case EV_GC_START: gc_start(&r, now, out, &nout); break;
    case EV_GC_END: {
        uint32_t count = (uint32_t)ep_get(&r, 4);
        gc_rec *g = r.bad ? NULL : find(count, 1);
        if (g && g->number == count) {
            g->end = now;
            g->seen |= SEEN_END;
        }
        break;
    }
    case EV_HEAP_STATS: heap_stats(&r); break;
    case EV_PER_HEAP_HISTORY: per_heap_history(&r); break;
    case EV_RESTART_END: restart_end(now); break;
    }
    nout += take(out + nout, 0);
    unlock();
    for (unsigned i = 0; i < nout; i++)
        record(&out[i]);
}

/* At stop and exit: every collection in flight, whatever is missing (a
 * background GC may still run as the process exits: no GCEnd, no sizes after). */
static void flush(void) {
    gc_rec out[IN_FLIGHT];
    lock();
    unsigned n = take(out, 2);
    unlock();
    for (unsigned i = 0; i < n; i++)
        record(&out[i]);
}
