/* calls_emit.c: a thread's call tree into the trace (calls.c): CallNode events
 * for the nodes that changed, or all of them, and the thread's CallsOverhead
 * (timed calls) or CallsSamples (sampled times, calls_sampled.c). The owner
 * writes its own tree; at Shutdown another thread may write it, reading it
 * racily but safely (chunks never move, nodes are published before nnodes). */
#include <stdatomic.h>
#include <stdint.h>

#include "callbacks.h"
#include "calls_internal.h"
#include "clock.h"

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
    if (calls_sampled_on)
        REC(CallsSamples, t->tid, t->samples, t->in_hooks, t->outside);
    else if (t->inner_ps || t->outer_ps)
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
