/* ct_async.c: the logical and the physical view of sampled stacks and call
 * trees with async callers (docs/async.md, docs/trace-format.md#sample-nodes).
 *
 * The agent records a resumed async method's stack whole, with its awaiting
 * callers inserted above the resumed method's frame: the thread's own frames
 * below (the pool's dispatch loop, the box's MoveNext), then the callers
 * (FunctionIDs marked DNP_CT_ASYNC_CALLER), then the resumed method (marked
 * DNP_CT_ASYNC_RESUMED) and what it called. The logical view, the default,
 * starts such a path at its first marked frame: the pool's frames are dropped
 * and the same logical stack from any thread is one path. The physical view
 * drops the callers instead: the stack the thread really had. Either way the
 * marks go, and the tree is rebuilt from its nodes' own (self) samples and
 * time, so that totals stay the sums of what is under them.
 *
 * --calls trees (CallNode) carry the same callers, put in by the enter hook
 * of a resumed state machine (the agent's calls.c): there a node's calls are
 * its own and its times were measured, so they are kept as they are; a
 * caller's frame, which nobody timed, totals its callees. */
#include <stdlib.h>
#include <string.h>

#include "ct_internal.h"

typedef struct view_ctx {
    dnp_ct_tree *out;
    dnp_idmap h;
    uint32_t *map;   /* node -> its node in out */
    uint8_t *logical; /* node: on a path that became logical at or above it */
    int physical;
    int calls;        /* CallNode trees: a node's calls are its own, its times measured */
    int failed;
} view_ctx;

static int view_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    view_ctx *v = ctx;
    if (!enter || n == 0)
        return 0;
    const dnp_ct_node *src = &tr->nodes[n];
    uint64_t marks = src->func & (DNP_CT_ASYNC_CALLER | DNP_CT_ASYNC_RESUMED);
    uint64_t func = src->func & ~(uint64_t)7;
    uint64_t child_calls = 0;
    for (uint32_t c = src->first_child; c && !v->calls; c = tr->nodes[c].next_sibling)
        child_calls += tr->nodes[c].calls;
    uint64_t self_calls = src->calls > child_calls ? src->calls - child_calls : 0;
    uint32_t parent = v->map[src->parent], idx;
    if (v->physical && (marks & DNP_CT_ASYNC_CALLER)) {
        idx = parent; /* not on the thread's stack */
    } else {
        v->logical[n] = v->logical[src->parent] || marks;
        /* where the logical stack starts: the pool's frames go; and again at
         * a resume's callers under another resume's frames (a continuation
         * run inline, as the awaited task completed) */
        int first_caller = (marks & DNP_CT_ASYNC_CALLER) && !(tr->nodes[src->parent].func & DNP_CT_ASYNC_CALLER);
        if (!v->physical && marks && (!v->logical[src->parent] || first_caller))
            parent = 0;
        if (ct_tree_child(v->out, &v->h, 0, parent, func, src->name, &idx) != 0)
            return -1;
    }
    dnp_ct_node *dst = &v->out->nodes[idx];
    if (v->calls && idx == parent) {
        v->map[n] = idx; /* a caller left out: its callees have their own times */
        return 0;
    }
    dst->calls += self_calls; /* samples: made inclusive below */
    dst->total_ns += src->total_ns; /* calls: kept; samples: made again below */
    dst->self_ns += src->self_ns;
    dst->tailcalls += src->tailcalls;
    v->map[n] = idx;
    return 0;
}

/* CallNode trees: an awaiting caller's frame was never timed (nobody called
 * it on this thread): its total is its callees'. */
static int caller_totals(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    (void)ctx;
    dnp_ct_node *nodes = (dnp_ct_node *)tr->nodes;
    if (enter) {
        if (nodes[n].func & DNP_CT_ASYNC_CALLER)
            nodes[n].total_ns = nodes[n].self_ns = 0;
    } else if (n && (nodes[nodes[n].parent].func & DNP_CT_ASYNC_CALLER)) {
        nodes[nodes[n].parent].total_ns += nodes[n].total_ns;
    }
    return 0;
}

int ct_async_view(dnp_ct_tree *tr, int physical, int calls, uint64_t *marked) {
    uint64_t any = 0;
    for (uint32_t i = 1; i < tr->nnodes; i++)
        any += (tr->nodes[i].func & (DNP_CT_ASYNC_CALLER | DNP_CT_ASYNC_RESUMED)) != 0;
    if (!any)
        return 0;
    *marked += any;
    dnp_ct_tree out;
    if (ct_tree_init(&out) != 0)
        return -1;
    if (calls)
        dnp_ct_walk(tr, caller_totals, NULL);
    view_ctx v = {&out, {0}, calloc(tr->nnodes, sizeof(uint32_t)), calloc(tr->nnodes, 1), physical, calls, 0};
    int rc = v.map && v.logical ? dnp_ct_walk(tr, view_visit, &v) : -1;
    free(v.map);
    free(v.logical);
    dnp_idmap_release(&v.h);
    if (rc != 0) {
        free(out.nodes);
        return -1;
    }
    /* a node is made after its parent: from the last to the first, each adds
     * its inclusive samples and time to its parent's */
    for (uint32_t i = 0; i < out.nnodes && !calls; i++)
        out.nodes[i].total_ns = out.nodes[i].self_ns;
    for (uint32_t i = out.nnodes; i-- > 1 && !calls;) {
        dnp_ct_node *p = &out.nodes[out.nodes[i].parent];
        p->calls += out.nodes[i].calls;
        p->total_ns += out.nodes[i].total_ns;
    }
    out.nodes[0].calls = 0;
    out.thread = tr->thread;
    out.os_tid = tr->os_tid;
    out.name = tr->name;
    free(tr->nodes);
    *tr = out;
    return ct_tree_finish(tr, NULL);
}
