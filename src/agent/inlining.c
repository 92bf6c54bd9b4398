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
 * callees again and again: decisions are kept per FunctionID in a fixed table
 * without a lock (a FunctionID is a pointer, 8-byte aligned: its low bits hold
 * the decision); a table that is full only costs the filter again. */
#include "inlining.h"

#include <stdatomic.h>

#include "agent.h"
#include "async.h"
#include "calls.h"

#define DECISIONS (1u << 15) /* 256 KB */
#define PROBES 32
#define KNOWN 4u  /* a decision is in the slot */
#define HOOKED 1u /* and the filter hooks the function */

static int g_on; /* set in Initialize, read-only afterwards */
static _Atomic uintptr_t g_decisions[DECISIONS];

void inlining_configure(const agent_config *cfg, uint32_t *mask) {
    /* --all-code asked for COR_PRF_DISABLE_INLINING | DISABLE_ALL_NGEN_IMAGES
     * (calls_configure): nothing is left to decide. */
    g_on = (calls_recording() && !cfg->all_code) || async_on();
    if (g_on)
        *mask |= COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_CACHE_SEARCHES;
}

/* Whether the calls filter hooks fid, from the table or, once, from the filter. */
static int hooked(FunctionID fid) {
    if (!g_on || !fid || (fid & 7u))
        return 0;
    size_t home = (size_t)((fid >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (DECISIONS - 1);
    for (unsigned p = 0; p < PROBES; p++) {
        uintptr_t e = atomic_load_explicit(&g_decisions[(home + p) & (DECISIONS - 1)], memory_order_acquire);
        if (!e)
            break;
        if ((e & ~(uintptr_t)7u) == fid)
            return (e & HOOKED) != 0;
    }
    int want = (calls_recording() && calls_is_hooked(fid)) || async_is_hooked(fid);
    uintptr_t entry = fid | KNOWN | (want ? HOOKED : 0);
    for (unsigned p = 0; p < PROBES; p++) {
        _Atomic uintptr_t *slot = &g_decisions[(home + p) & (DECISIONS - 1)];
        uintptr_t seen = 0;
        if (atomic_compare_exchange_strong_explicit(slot, &seen, entry, memory_order_release,
                                                    memory_order_acquire) ||
            (seen & ~(uintptr_t)7u) == fid)
            break; /* kept, or another thread was first with the same decision */
    }
    return want;
}

int inlining_allowed(FunctionID callee) {
    return !hooked(callee);
}

int inlining_precompiled_allowed(FunctionID fid) {
    return !hooked(fid);
}
