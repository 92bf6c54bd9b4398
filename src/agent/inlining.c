/* inlining.c: keeps hooked methods whole (inlining.h, docs/calls.md#what-is-hooked).
 *
 * An inlined method has no prolog and no epilog, so no enter/leave hooks: with
 * tiered compilation, a constructor called in a hot loop was counted until the
 * loop moved to optimized code (on-stack replacement) and then no more, 9,980
 * calls of 20,000. The runtime asks the profiler before each inlining
 * (ICorProfilerCallback::JITInlining, with COR_PRF_MONITOR_JIT_COMPILATION) and
 * before it runs a method's precompiled ReadyToRun code, which was compiled
 * without hooks (JITCachedFunctionSearchStarted, with
 * COR_PRF_MONITOR_CACHE_SEARCHES): both are refused for a method the calls
 * filter hooks, and allowed for every other, so framework code keeps its
 * inlining and its precompiled code.
 *
 * The callee may not have been through the function ID mapper yet (the JIT
 * asks about it while compiling its caller), so the decision is the filter's
 * own on the callee's name (calls_is_hooked). The JIT asks about the same
 * callees again and again: decisions are kept per FunctionID in a table
 * without a lock (a FunctionID is a pointer, 8-byte aligned: its low bits hold
 * the decision). It starts at 32 KB and grows fourfold when half full, up to
 * 2 MB: a fixed 256 KB table, touched at random, cost a page fault per 4 KB
 * (in a VM about 10 us each: 0.6 ms of a half-second program's start). A
 * decision is the filter's, the same each time it is asked, so the table is
 * only a cache: one lost while the table grows, or not kept because the table
 * is full, costs the filter again. A table outgrown stays allocated (a reader
 * may still be in it): at most a third of the last one's size. */
#include "inlining.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "agent.h"
#include "async.h"
#include "calls.h"

#define DECISIONS_FIRST (1u << 12) /* 32 KB */
#define DECISIONS_MAX (1u << 18)   /* 2 MB */
#define PROBES 32
#define KNOWN 4u  /* a decision is in the slot */
#define HOOKED 1u /* and the filter hooks the function */

typedef struct decisions {
    uint32_t cap; /* a power of two */
    _Atomic uint32_t used;
    _Atomic uintptr_t slot[];
} decisions;

static int g_on; /* set in Initialize, read-only afterwards */
static _Atomic(decisions *) g_table;
static atomic_flag g_growing = ATOMIC_FLAG_INIT;

static decisions *table_new(uint32_t cap) {
    decisions *t = calloc(1, sizeof *t + (size_t)cap * sizeof t->slot[0]);
    if (t)
        t->cap = cap;
    return t;
}

static size_t home_of(FunctionID fid, uint32_t cap) {
    return (size_t)((fid >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (cap - 1);
}

/* Keeps entry in t: 1 when it took a free slot. */
static int table_put(decisions *t, uintptr_t entry) {
    size_t home = home_of(entry & ~(uintptr_t)7u, t->cap);
    for (unsigned p = 0; p < PROBES; p++) {
        _Atomic uintptr_t *slot = &t->slot[(home + p) & (t->cap - 1)];
        uintptr_t seen = 0;
        if (atomic_compare_exchange_strong_explicit(slot, &seen, entry, memory_order_release, memory_order_acquire))
            return 1;
        if ((seen & ~(uintptr_t)7u) == (entry & ~(uintptr_t)7u))
            return 0; /* another thread was first with the same decision */
    }
    return 0;
}

/* A table four times t's with t's decisions, published; one thread at a time. */
static void table_grow(decisions *t) {
    if (t->cap >= DECISIONS_MAX || atomic_flag_test_and_set(&g_growing))
        return;
    decisions *g = atomic_load_explicit(&g_table, memory_order_acquire) == t ? table_new(t->cap * 4) : NULL;
    if (g) {
        for (uint32_t i = 0; i < t->cap; i++) {
            uintptr_t e = atomic_load_explicit(&t->slot[i], memory_order_acquire);
            if (e && table_put(g, e))
                atomic_fetch_add_explicit(&g->used, 1, memory_order_relaxed);
        }
        atomic_store_explicit(&g_table, g, memory_order_release);
    }
    atomic_flag_clear(&g_growing);
}

void inlining_configure(const agent_config *cfg, uint32_t *mask) {
    /* --all-code asked for COR_PRF_DISABLE_INLINING | DISABLE_ALL_NGEN_IMAGES
     * (calls_configure): nothing is left to decide. */
    g_on = (calls_recording() && !cfg->all_code) || async_on();
    if (g_on)
        *mask |= COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_CACHE_SEARCHES;
    if (g_on && !atomic_load(&g_table))
        atomic_store(&g_table, table_new(DECISIONS_FIRST)); /* none: every question goes to the filter */
}

/* Whether the calls filter hooks fid, from the table or, once, from the filter. */
static int hooked(FunctionID fid) {
    if (!g_on || !fid || (fid & 7u))
        return 0;
    decisions *t = atomic_load_explicit(&g_table, memory_order_acquire);
    size_t home = t ? home_of(fid, t->cap) : 0;
    for (unsigned p = 0; t && p < PROBES; p++) {
        uintptr_t e = atomic_load_explicit(&t->slot[(home + p) & (t->cap - 1)], memory_order_acquire);
        if (!e)
            break;
        if ((e & ~(uintptr_t)7u) == fid)
            return (e & HOOKED) != 0;
    }
    int want = (calls_recording() && calls_is_hooked(fid)) || async_is_hooked(fid);
    if (t && table_put(t, fid | KNOWN | (want ? HOOKED : 0)) &&
        atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed) + 1 > t->cap / 2)
        table_grow(t);
    return want;
}

int inlining_allowed(FunctionID callee) {
    return !hooked(callee);
}

int inlining_precompiled_allowed(FunctionID fid) {
    return !hooked(fid);
}
