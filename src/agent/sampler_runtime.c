/* sampler_runtime.c: the runtime's own work as frames of the sampled stacks
 * (docs/sampling.md, "Runtime work"). A sample taken on the thread that runs
 * a garbage collection, while it runs, gets a frame "[GC gen N]" between the
 * managed code that triggered it and the runtime's native frames. The
 * collections come from the agent's EventPipe session (eventpipe.h): GCStart
 * and GCEnd, delivered on the thread that collects. */
#include "sampler_internal.h"

#include <stdio.h>
#include <unistd.h>

#include "callbacks.h"
#include "eventpipe.h"

atomic_uint sampler_gc_state; /* generation + 1 while a collection runs, else 0 */
atomic_int sampler_gc_tid;    /* the thread that runs it */

enum { EV_GC_START = 1, EV_GC_END = 2 }; /* GCStart_V2, GCEnd_V1 (ClrEtwAll.man) */

static void on_event(const ep_event *e) {
    if (e->id != EV_GC_START && e->id != EV_GC_END)
        return;
    ep_reader r = ep_read(e);
    ep_get(&r, 4); /* Count */
    uint32_t depth = (uint32_t)ep_get(&r, 4);
    if (r.bad)
        return;
    if (e->id == EV_GC_START) {
        atomic_store(&sampler_gc_tid, (int)gettid());
        atomic_store(&sampler_gc_state, (depth < 3 ? depth : 2) + 1);
    } else if (atomic_load(&sampler_gc_tid) == (int)gettid()) {
        atomic_store(&sampler_gc_state, 0);
    }
}

static ep_consumer g_gc = {"[GC] frames of sampled stacks", EP_KEYWORD_GC, COR_PRF_EVENTPIPE_INFORMATIONAL, on_event,
                           NULL, NULL};

void sampler_runtime_configure(const agent_config *cfg, uint32_t *mask_high) {
    atomic_store(&sampler_gc_state, 0);
    if (cfg->sample == SAMPLER_CPU || cfg->sample == SAMPLER_WALL)
        ep_want(&g_gc, mask_high); /* without it (before .NET 5), no [GC] frames: said once by ep_want */
}

uint32_t sampler_gc_now(int tid) {
    uint32_t gc = atomic_load_explicit(&sampler_gc_state, memory_order_relaxed);
    return gc && atomic_load_explicit(&sampler_gc_tid, memory_order_relaxed) == tid ? gc : 0;
}

void sampler_gc_frame(uint64_t *funcs, uint32_t *names, uint32_t *m, uint32_t cap, uint32_t gc) {
    if (!gc || gc > 3 || *m >= cap)
        return;
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
