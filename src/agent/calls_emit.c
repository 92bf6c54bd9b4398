/* calls_emit.c: a thread's call tree into the trace (calls.c): CallNode events
 * for the nodes that changed, or all of them, and the thread's CallsOverhead
 * (timed calls) or CallsSamples (sampled times, calls_sampled.c). The owner
 * writes its own tree; at Shutdown another thread may write it, reading it
 * racily but safely (chunks never move, nodes are published before nnodes);
 * and each window's calls (continuous profiling). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks.h"
#include "calls.h"
#include "calls_internal.h"
#include "clock.h"
#include "windows.h"

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
    if (!calls_sampled_on) { /* timed: ticks; sampled: nanoseconds already */
        incl = to_ns(incl);
        excl = to_ns(excl);
    }
    REC(CallNode, t->tid, i, n->parent, fn ? fn->id : 0, fn ? fn->name : 0, calls, incl, excl, tail);
}

/* The hooks' cost, and the run-queue wait taken out of the times so far. */
void calls_emit_overhead(calls_thread *t) {
    if (calls_sampled_on) {
        REC(CallsSamples, t->tid, t->samples, t->in_hooks, t->outside);
        if (t->in_jit)
            REC(CallsJitSamples, t->tid, t->in_jit);
    } else if (t->inner_ps || t->outer_ps)
        REC(CallsOverhead, t->tid, t->inner_ps, t->outer_ps, t->waited_ns);
}

void calls_emit_dirty(calls_thread *t) {
    if (calls_sampled_on && calls_sampled_drain(t)) {
        for (uint32_t k = 0; k < t->ndirty; k++) /* the samples' queue overflowed: every node */
            node_at(t, t->dirty[k])->dirty = 0;
        t->ndirty = 0;
        calls_emit_all(t);
        return;
    }
    calls_emit_overhead(t);
    for (uint32_t k = 0; k < t->ndirty; k++) {
        uint32_t i = t->dirty[k];
        node_at(t, i)->dirty = 0;
        emit_node(t, i);
    }
    t->ndirty = 0;
}

/* Every node of a thread (Shutdown: possibly another thread's, read racily but
 * safely: chunks never move and are published before nnodes). */
void calls_emit_all(calls_thread *t) {
    calls_emit_overhead(t);
    uint32_t n = atomic_load_explicit(&t->nnodes, memory_order_acquire);
    for (uint32_t i = 1; i < n; i++)
        emit_node(t, i);
}

/* ---- continuous profiling (windows.h) ----
 * At each window's end the window thread adds, for every live thread, the
 * nodes whose calls changed since the last window, with the change, and their
 * callers (a change of 0 for those whose own calls did not change): a window
 * holds whole call paths. The trees are read racily, as at Shutdown; counts
 * only (their times stay in the trace). A thread that ended during the window
 * takes its last calls with it. */
static void window_thread(calls_thread *t) {
    uint32_t nn = atomic_load_explicit(&t->nnodes, memory_order_acquire);
    if (nn > t->win_n) {
        uint64_t *grown = realloc(t->win_calls, (size_t)nn * sizeof *grown);
        if (!grown)
            return;
        memset(grown + t->win_n, 0, (size_t)(nn - t->win_n) * sizeof *grown);
        t->win_calls = grown;
        t->win_n = nn;
    }
    uint64_t *delta = calloc(nn, sizeof *delta);
    uint8_t *keep = calloc(nn, 1);
    for (uint32_t i = 1; delta && keep && i < nn; i++) {
        uint64_t c = __atomic_load_n(&node_at(t, i)->calls, __ATOMIC_RELAXED);
        if (c == t->win_calls[i])
            continue;
        delta[i] = c - t->win_calls[i];
        t->win_calls[i] = c;
        for (uint32_t k = i; k && k < nn && !keep[k]; k = node_at(t, k)->parent)
            keep[k] = 1; /* a node's parent is older: it is below nn */
    }
    for (uint32_t i = 1; delta && keep && i < nn; i++) {
        if (!keep[i])
            continue;
        cnode *n = node_at(t, i);
        const calls_fn *fn = __atomic_load_n(&n->fn, __ATOMIC_RELAXED);
        uint64_t v[DNP_NV_CallNode] = {t->tid, i, n->parent, fn ? fn->id : 0, fn ? fn->name : 0, delta[i], 0, 0, 0};
        window_event(DNP_EV_CallNode, v, DNP_NV_CallNode);
    }
    free(delta);
    free(keep);
}

void calls_window_flush(void) {
    calls_threads_each(window_thread);
}
