/* sampler_window.c: the sampler's part of each window (windows.h). The trees
 * are the sampler thread's alone, so the window thread asks (window_asked)
 * and waits; the sampler thread, at its next tick (10-50 ms), drains the
 * rings and adds to the window every node whose samples changed since the
 * last window's end, with what changed: a node's inclusive count grows with
 * any sample below it, so the nodes written are closed under their parents
 * and each window holds whole paths; and the samples taken behind them
 * (SampleWeights). */
#include "sampler_internal.h"

#include <time.h>

#include "windows.h"

/* The sampler thread: the samples since the last window into this one. */
void sampler_window_emit(void) {
    sampler_drain();
    uint64_t cfg[3] = {(uint64_t)S.mode, S.rate, S.period_ns};
    window_event(DNP_EV_SampleConfig, cfg, 3);
    for (uint32_t i = 1; i < S.nnodes; i++) {
        anode *n = &S.nodes[i];
        if (n->samples == n->win_samples)
            continue;
        uint64_t samples = n->samples - n->win_samples, self = n->self - n->win_self;
        n->win_samples = n->samples;
        n->win_self = n->self;
        uint64_t v[DNP_NV_SampleNode] = {n->tid, i, n->parent, n->func, n->name, samples,
                                         samples * S.period_ns, self * S.period_ns, self};
        window_event(DNP_EV_SampleNode, v, DNP_NV_SampleNode);
    }
    if (S.instants != S.win_instants) { /* the samples behind this window's periods */
        uint64_t w[DNP_NV_SampleWeights] = {S.instants - S.win_instants, S.samples - S.win_periods};
        window_event(DNP_EV_SampleWeights, w, DNP_NV_SampleWeights);
        S.win_instants = S.instants;
        S.win_periods = S.samples;
    }
    atomic_store(&S.window_asked, 0);
}

/* The window thread's flush function: ask, and wait for the sampler thread
 * (a second at most: a sampler that does not answer loses its part of this
 * window, which goes to the next). */
static void sampler_window_flush(void) {
    if (!S.thread_running || atomic_load(&S.stop))
        return;
    atomic_store(&S.window_asked, 1);
    for (int i = 0; i < 1000 && atomic_load(&S.window_asked); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

void sampler_window_join(void) {
    window_register_flush(sampler_window_flush);
}
