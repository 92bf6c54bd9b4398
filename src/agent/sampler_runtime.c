/* sampler_runtime.c: the runtime's own work as frames of the sampled stacks
 * (docs/sampling.md, "Runtime work"). A sample taken on the thread that runs
 * a garbage collection, while it runs, gets a frame "[GC gen N]" between the
 * managed code that triggered it and the runtime's native frames. The
 * collections come from the profiling API's basic GC callbacks
 * (COR_PRF_HIGH_BASIC_GC: GarbageCollectionStarted and Finished, on the thread
 * that collects, with background GC left on), not from an EventPipe session,
 * whose start-up (the runtime's event sources, a dozen methods compiled) cost
 * 20-30 ms of every sampled program's start. A sample taken while the
 * thread compiles a method (JITCompilationStarted .. Finished) reads
 * "method > [JIT] > the JIT's frames", under the code that needed the method:
 * the compiling threads' methods are kept in a small table by thread id,
 * written by the thread itself and read by its own signal handler. */
#include "sampler_internal.h"

#include <stdio.h>
#include <unistd.h>

#include "callbacks.h"
#include "calls.h"
#include "names.h"

atomic_uint sampler_gc_state; /* generation + 1 while a collection runs, else 0 */
atomic_int sampler_gc_tid;    /* the thread that runs it */
static atomic_uint_fast64_t g_gc_seq; /* collections started and finished: sampler_gc_seq */

static atomic_int g_jit_on, g_gc_on, g_pause_on;
static atomic_int g_suspender; /* wall: the thread that holds the runtime suspended for a collection, 0 none */

void sampler_runtime_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    atomic_store(&sampler_gc_state, 0);
    int walked = cfg->sample == SAMPLER_CPU || cfg->sample == SAMPLER_WALL;
    int jit = walked || cfg->calls == CALLS_MODE_SAMPLED; /* --calls leaves the JIT's samples out */
    atomic_store(&g_jit_on, jit);
    atomic_store(&g_gc_on, walked);
    atomic_store(&g_pause_on, cfg->sample == SAMPLER_WALL);
    atomic_store(&g_suspender, 0);
    if (cfg->sample == SAMPLER_WALL)
        *mask |= COR_PRF_MONITOR_SUSPENDS; /* the pauses of the threads a collection stops: four callbacks each */
    if (jit)
        *mask |= 0x20u;       /* COR_PRF_MONITOR_JIT_COMPILATION: one callback per method compiled */
    if (walked)
        *mask_high |= 0x10u;  /* COR_PRF_HIGH_BASIC_GC: two callbacks per collection */
}

void sampler_gc_started(int ngens, const int *collected) {
    if (!atomic_load_explicit(&g_gc_on, memory_order_relaxed))
        return;
    uint32_t depth = 0;
    for (int i = 0; collected && i < ngens && i < 3; i++)
        if (collected[i])
            depth = (uint32_t)i;
    atomic_store(&sampler_gc_tid, agent_tid());
    atomic_store(&sampler_gc_state, depth + 1);
    atomic_fetch_add(&g_gc_seq, 1);
}

/* On whichever thread it ends: a background collection starts on the thread
 * whose allocation asked for it and ends on the GC's own thread, and a state
 * cleared only by the thread that set it stayed "running" for good after the
 * first one (every later window's pool read refused, a [GC gen2] frame on that
 * thread's samples). A foreground collection inside a background one ends
 * both: the background one moves no objects (pool_state.c) and its own work is
 * on its thread, which has no managed frame. */
void sampler_gc_finished(void) {
    if (atomic_load_explicit(&g_gc_on, memory_order_relaxed)) {
        atomic_fetch_add(&g_gc_seq, 1);
        atomic_store(&sampler_gc_state, 0);
    }
}

/* A collection's suspension of the runtime: every thread that runs managed
 * code is stopped where it is (a signal's handler, a poll, a hijacked return)
 * and waits in the runtime until the resume. Wall mode's samples of the other
 * threads that wait meanwhile are that pause ([GC pause]), not their own
 * waits: a thread already blocked in its own wait has not moved since its
 * last sample and is counted again without a walk (sampler_signal.c). */
void sampler_suspend_started(int reason) {
    if (atomic_load_explicit(&g_pause_on, memory_order_relaxed) &&
        (reason == COR_PRF_SUSPEND_FOR_GC || reason == COR_PRF_SUSPEND_FOR_GC_PREP))
        atomic_store(&g_suspender, agent_tid());
}

void sampler_suspend_ended(void) {
    if (atomic_load_explicit(&g_pause_on, memory_order_relaxed))
        atomic_store(&g_suspender, 0);
}

int sampler_gc_paused(int tid) {
    int t = atomic_load_explicit(&g_suspender, memory_order_relaxed);
    return t && t != tid;
}

uint64_t sampler_gc_seq(int *running) {
    uint64_t seq = atomic_load(&g_gc_seq);
    *running = atomic_load(&sampler_gc_state) != 0;
    return atomic_load(&g_gc_on) ? seq : UINT64_MAX;
}

uint32_t sampler_gc_now(int tid) {
    uint32_t gc = atomic_load_explicit(&sampler_gc_state, memory_order_relaxed);
    return gc && atomic_load_explicit(&sampler_gc_tid, memory_order_relaxed) == tid ? gc : 0;
}

void sampler_gc_frame(uint64_t *funcs, uint32_t *names, uint32_t *m, uint32_t cap, uint32_t gc, int runtime) {
    if (!gc || gc > 3 || !runtime || *m >= cap)
        return; /* no runtime code at the leaf: the thread runs its own native code (a background collection's
                 * starter goes back to its work while the collection runs on) */
    if (!S.gc_names[gc - 1]) {
        char buf[16];
        int n = snprintf(buf, sizeof buf, "[GC gen%u]", gc - 1);
        S.gc_names[gc - 1] = rec_string(buf, (size_t)n);
    }
    uint32_t at = 0; /* above the native frames of the leaf: under the managed frame that triggered it */
    while (at < *m && !funcs[at])
        at++;
    if (at == 0)
        return; /* a managed leaf: not the collection's own work */
    for (uint32_t k = *m; k > at; k--) {
        funcs[k] = funcs[k - 1];
        names[k] = names[k - 1];
    }
    funcs[at] = 0;
    names[at] = S.gc_names[gc - 1];
    (*m)++;
}

/* ---- [JIT] ---- */

#define JIT_THREADS 4096u /* threads that ever compiled; past that, no [JIT] frames for new ones */
#define JIT_NEST 4u

typedef struct jit_thread {
    atomic_int tid;
    atomic_uint depth;
    atomic_ullong func[JIT_NEST];
} jit_thread;

static jit_thread g_jit[JIT_THREADS];

/* The entry of tid; claimed when claim and tid has none. Async-signal-safe. */
static jit_thread *jit_entry(int tid, int claim) {
    uint32_t h = ((uint32_t)tid * 0x9E3779B1u) % JIT_THREADS;
    for (uint32_t i = 0; i < 64; i++, h = (h + 1) % JIT_THREADS) {
        int t = atomic_load_explicit(&g_jit[h].tid, memory_order_acquire);
        if (t == tid)
            return &g_jit[h];
        if (!t) {
            int zero = 0;
            if (!claim)
                return NULL;
            if (atomic_compare_exchange_strong(&g_jit[h].tid, &zero, tid) || zero == tid)
                return &g_jit[h];
        }
    }
    return NULL;
}

void sampler_jit_started(uint64_t function_id) {
    if (!atomic_load_explicit(&g_jit_on, memory_order_relaxed))
        return;
    jit_thread *j = jit_entry(agent_tid(), 1);
    if (!j)
        return;
    unsigned d = atomic_load_explicit(&j->depth, memory_order_relaxed);
    if (d < JIT_NEST)
        atomic_store_explicit(&j->func[d], function_id, memory_order_relaxed);
    atomic_store_explicit(&j->depth, d + 1, memory_order_release); /* after func: the handler reads depth first */
}

void sampler_jit_finished(void) {
    if (!atomic_load_explicit(&g_jit_on, memory_order_relaxed))
        return;
    jit_thread *j = jit_entry(agent_tid(), 0);
    unsigned d = j ? atomic_load_explicit(&j->depth, memory_order_relaxed) : 0;
    if (d)
        atomic_store_explicit(&j->depth, d - 1, memory_order_release);
}

uint64_t sampler_jit_now(int tid) {
    jit_thread *j = atomic_load_explicit(&g_jit_on, memory_order_relaxed) ? jit_entry(tid, 0) : NULL;
    unsigned d = j ? atomic_load_explicit(&j->depth, memory_order_acquire) : 0;
    return d ? atomic_load_explicit(&j->func[(d < JIT_NEST ? d : JIT_NEST) - 1], memory_order_relaxed) : 0;
}

void sampler_jit_frame(uint64_t *funcs, uint32_t *names, uint32_t *m, uint32_t cap, uint64_t fid, uint32_t jit_top) {
    if (!fid || *m + 2 > cap)
        return;
    if (!S.jit_name)
        S.jit_name = rec_string("[JIT]", 5);
    uint32_t at = 0; /* above the JIT's native frames: under the code that needed the method */
    while (at < *m && !funcs[at])
        at++;
    if (at == 0)
        return; /* a managed leaf: not the JIT's work */
    if (at == *m) /* no managed frame (the tiering thread): above the JIT's own frames, if any */
        at = jit_top;
    if (at == 0)
        return;
    for (uint32_t k = *m + 1; k > at + 1; k--) {
        funcs[k] = funcs[k - 2];
        names[k] = names[k - 2];
    }
    funcs[at] = 0;
    names[at] = S.jit_name;
    funcs[at + 1] = fid;
    names[at + 1] = names_get(NAMES_FUNCTION, fid, 1);
    *m += 2;
}
