/* calls_calibrate.c: the hooks' own cost, measured by each thread (calls.c)
 * and written in CallsOverhead events for the reports to take out. */
#include <stdatomic.h>
#include <stdlib.h>

#include "calls.h"
#include "calls_internal.h"
#include "clock.h"
#include "recorder.h"

/* A timed call costs its hooks' work: the part between the two clock reads
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

calls_fn calls_cal_dummy; /* the calibration's function: never in a tree that is written */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A tree of two nodes for the dummy function, the thread's own. */
static calls_thread *scratch_new(void) {
    return calls_thread_alloc(4, 15, 4);
}

/* Measures the hooks' cost on this thread (batches of pairs, the median), into
 * t->inner_ps and outer_ps; then binds t (bound) or nothing as the thread's
 * state. Nothing without the fast timed stubs. */
void calls_calibrate(calls_thread *t, int batches, int pairs, int bound) {
    void (*g_elt_enter)(void), (*g_elt_leave)(void);
    if (!calls_timed_stubs(&g_elt_enter, &g_elt_leave))
        return;
    if (!t->scratch && !(t->scratch = scratch_new()))
        return;
    calls_thread *s = t->scratch;
    s->next_emit = clock_ticks() + (1ull << 62);
    s->last = clock_ticks();
    calls_thread_bind(s);
    /* A callee's body hides the end of the enter hook, all of it when the
     * body is a long latency-bound chain, none when it is empty: the inner part
     * is taken as the midpoint of the two (the callee's body is not known).
     * The long one is timed alone too and taken out. */
    uint64_t tot[CAL_BATCHES], in[CAL_BATCHES], body[CAL_BATCHES], empty[CAL_BATCHES];
    uint64_t btot[CAL_BATCHES], bin[CAL_BATCHES], bbody[CAL_BATCHES];
    if (batches > CAL_BATCHES)
        batches = CAL_BATCHES;
    dnp_elt_calibrate((uintptr_t)&calls_cal_dummy, 8, g_elt_enter, g_elt_leave, CAL_BODY, 0); /* warm up, make the node */
    for (int b = 0; b < batches; b++) {
        cnode *n = node_at(s, 1);
        uint64_t before = n->incl;
        uint64_t t0 = clock_ticks_ordered();
        dnp_elt_calibrate((uintptr_t)&calls_cal_dummy, (uint64_t)pairs, g_elt_enter, g_elt_leave, CAL_BODY, 0);
        uint64_t t1 = clock_ticks_ordered();
        dnp_elt_calibrate((uintptr_t)&calls_cal_dummy, (uint64_t)pairs, dnp_elt_nop, dnp_elt_nop, CAL_BODY, 0);
        uint64_t t2 = clock_ticks_ordered();
        tot[b] = t1 - t0;
        body[b] = t2 - t1;
        in[b] = n->incl - before;
        before = n->incl;
        dnp_elt_calibrate((uintptr_t)&calls_cal_dummy, (uint64_t)pairs, g_elt_enter, g_elt_leave, 0, 0);
        empty[b] = n->incl - before;
        /* a caller that computes between its calls, as the callee does */
        before = n->incl;
        t0 = clock_ticks_ordered();
        dnp_elt_calibrate((uintptr_t)&calls_cal_dummy, (uint64_t)pairs, g_elt_enter, g_elt_leave, CAL_BODY, CAL_BODY);
        t1 = clock_ticks_ordered();
        dnp_elt_calibrate((uintptr_t)&calls_cal_dummy, (uint64_t)pairs, dnp_elt_nop, dnp_elt_nop, CAL_BODY, CAL_BODY);
        t2 = clock_ticks_ordered();
        btot[b] = t1 - t0;
        bbody[b] = t2 - t1;
        bin[b] = n->incl - before;
    }
    calls_thread_bind(bound ? t : NULL);
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
    /* How far the midpoint can be from a callee's truth: said once, for the
     * reader of the times (and the accuracy test's tolerance). A CPU with a
     * wider out-of-order window hides more of the hooks behind a long body. */
    static atomic_int said;
    if (!atomic_exchange(&said, 1))
        rec_note(0, "calls: the hooks' cost inside a call, taken out of each: %.2f ns with an empty callee, %.2f ns "
                    "behind a long one; %.2f ns taken (the midpoint), so a call's time is right within %.2f ns",
                 inner_empty / 1000, hidden / 1000, inner / 1000, (inner - hidden) / 1000);
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
}
