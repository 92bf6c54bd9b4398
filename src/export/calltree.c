/* calltree.c: call trees from CallNode events or the enter/leave timeline (calltree.h),
 * built one event at a time from a loaded trace or a stream. */
#include "calltree.h"
#include "dnp_vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_internal.h"
#include "idmap.h"
#include "timeline.h"

/* ---- trees ---- */

static int tree_add(dnp_ct_tree *tr, uint32_t parent, uint64_t func, uint64_t name, uint32_t *idx) {
    if (tr->nnodes == tr->cap) {
        if (tr->cap >= UINT32_MAX / 2)
            return -1;
        uint32_t cap = tr->cap ? tr->cap * 2 : 64;
        dnp_ct_node *grown = realloc(tr->nodes, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        tr->nodes = grown;
        tr->cap = cap;
    }
    dnp_ct_node *n = &tr->nodes[tr->nnodes];
    memset(n, 0, sizeof *n);
    n->func = func;
    n->name = name;
    n->parent = parent;
    *idx = tr->nnodes++;
    return 0;
}

int ct_tree_init(dnp_ct_tree *tr) {
    uint32_t root;
    memset(tr, 0, sizeof *tr);
    return tree_add(tr, 0, 0, 0, &root);
}

/* The child of parent for func in tree number key, made if new. */
int ct_tree_child(dnp_ct_tree *tr, dnp_idmap *h, uint64_t key, uint32_t parent, uint64_t func,
                      uint64_t name, uint32_t *idx) {
    if (dnp_idmap_get(h, key << 32 | parent, dnp_ct_frame_key(func, name), idx)) {
        if (!tr->nodes[*idx].name)
            tr->nodes[*idx].name = name;
        return 0;
    }
    if (tree_add(tr, parent, func, name, idx) != 0)
        return -1;
    tr->nodes[*idx].next_sibling = tr->nodes[parent].first_child;
    tr->nodes[parent].first_child = *idx;
    return dnp_idmap_put(h, key << 32 | parent, dnp_ct_frame_key(func, name), *idx);
}

int dnp_ct_walk(const dnp_ct_tree *tr, dnp_ct_visit visit, void *ctx) {
    if (!tr->nnodes)
        return 0;
    uint32_t n = 0;
    int rc;
    for (;;) {
        if ((rc = visit(ctx, tr, n, 1)) != 0)
            return rc;
        if (tr->nodes[n].first_child) {
            n = tr->nodes[n].first_child;
            continue;
        }
        for (;;) {
            if ((rc = visit(ctx, tr, n, 0)) != 0)
                return rc;
            if (n == 0)
                return 0;
            if (tr->nodes[n].next_sibling) {
                n = tr->nodes[n].next_sibling;
                break;
            }
            n = tr->nodes[n].parent;
        }
    }
}

static const dnp_ct_tree *sort_tree;

static int by_parent_total(const void *x, const void *y) {
    const dnp_ct_node *a = &sort_tree->nodes[*(const uint32_t *)x];
    const dnp_ct_node *b = &sort_tree->nodes[*(const uint32_t *)y];
    if (a->parent != b->parent)
        return a->parent < b->parent ? -1 : 1;
    if (a->total_ns != b->total_ns)
        return a->total_ns > b->total_ns ? -1 : 1;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    if (a->func != b->func)
        return a->func < b->func ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int set_depth(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    (void)ctx;
    if (enter && n)
        tr->nodes[n].depth = tr->nodes[tr->nodes[n].parent].depth + 1;
    return 0;
}

/* Links every node's children, sorted by total, largest first; sets the root's total. */
static int tree_link(dnp_ct_tree *tr) {
    uint32_t n = tr->nnodes - 1;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i + 1;
    sort_tree = tr;
    qsort(order, n, sizeof *order, by_parent_total);
    for (uint32_t i = 0; i < tr->nnodes; i++) {
        tr->nodes[i].first_child = 0;
        tr->nodes[i].next_sibling = 0;
    }
    dnp_ct_node *root = &tr->nodes[0];
    root->total_ns = root->self_ns = root->calls = root->tailcalls = 0;
    root->parent = 0;
    root->depth = 0;
    for (uint32_t i = 0; i < n; i++) {
        dnp_ct_node *c = &tr->nodes[order[i]];
        if (i == 0 || tr->nodes[order[i - 1]].parent != c->parent)
            tr->nodes[c->parent].first_child = order[i];
        else
            tr->nodes[order[i - 1]].next_sibling = order[i];
        if (c->parent == 0)
            root->total_ns += c->total_ns;
    }
    free(order);
    return 0;
}

/* A frame still open when the trace ended (a thread blocked in a wait since it
 * started, say) has recorded no time of its own yet, but what it called and
 * finished has: its total is at least its self time and its children's totals.
 * Visited children first, so that the fix reaches up the tree. */
static int fix_open_frame(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    (void)ctx;
    if (enter || n == 0)
        return 0;
    uint64_t sum = tr->nodes[n].self_ns;
    for (uint32_t c = tr->nodes[n].first_child; c; c = tr->nodes[c].next_sibling)
        sum += tr->nodes[c].total_ns;
    if (tr->nodes[n].total_ns < sum)
        ((dnp_ct_node *)&tr->nodes[n])->total_ns = sum;
    return 0;
}

/* The hooks' own cost, taken out (CallsOverhead; calls.c says what each part
 * is): a call's inner part from its own total and self time; for each call below
 * a node, both parts from its total; for each call it made, the outer part from
 * its self time. Visited children first. */
struct hook_fix {
    double *in, *out; /* by node: the hooks' cost of its calls, inside and outside them */
    double *below;    /* by node: both, summed over the calls below it */
    double in_ns, out_ns;
    uint64_t calls;
};

static uint64_t sub_clamped(uint64_t v, double d) {
    return d >= (double)v ? 0 : v - (uint64_t)(d + 0.5);
}

static int fix_hooks(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    hook_fix *h = ctx;
    if (enter || n == 0)
        return 0;
    dnp_ct_node *node = (dnp_ct_node *)&tr->nodes[n];
    double direct = 0, below = 0;
    for (uint32_t c = node->first_child; c; c = tr->nodes[c].next_sibling) {
        direct += h->out[c];
        below += h->in[c] + h->out[c] + h->below[c];
    }
    h->below[n] = below;
    node->self_ns = sub_clamped(node->self_ns, h->in[n] + direct);
    node->total_ns = sub_clamped(node->total_ns, h->in[n] + below);
    if (node->self_ns > node->total_ns)
        node->self_ns = node->total_ns;
    h->calls += node->calls;
    h->in_ns += h->in[n];
    h->out_ns += h->out[n];
    return 0;
}

/* Links the tree, takes out the hooks' cost (fix: NULL for none), repairs open
 * frames' totals, links again by the repaired totals, and sets depths. */
int ct_tree_finish(dnp_ct_tree *tr, hook_fix *fix) {
    if (tr->nnodes == 0)
        return 0;
    if (tree_link(tr) < 0)
        return -1;
    if (fix) {
        fix->below = calloc(tr->nnodes, sizeof *fix->below);
        if (!fix->below)
            return -1;
        dnp_ct_walk(tr, fix_hooks, fix);
        free(fix->below);
        fix->below = NULL;
    }
    dnp_ct_walk(tr, fix_open_frame, NULL);
    if (tree_link(tr) < 0)
        return -1;
    dnp_ct_walk(tr, set_depth, NULL);
    return 0;
}

static void tree_release(dnp_ct_tree *tr) {
    free(tr->nodes);
    memset(tr, 0, sizeof *tr);
}

/* ---- the view of async stacks (ct_async.c) ---- */

static int g_physical;

void dnp_calltree_set_physical(int physical) {
    g_physical = physical != 0;
}

/* ---- merging ---- */

typedef struct merge_ctx {
    dnp_ct_tree *all;
    dnp_idmap *h;
    uint32_t *map;
    int failed;
} merge_ctx;

static int merge_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    merge_ctx *m = ctx;
    if (!enter || n == 0)
        return 0;
    const dnp_ct_node *src = &tr->nodes[n];
    uint32_t idx;
    if (ct_tree_child(m->all, m->h, 0, m->map[src->parent], src->func, src->name, &idx) != 0)
        return -1;
    dnp_ct_node *dst = &m->all->nodes[idx];
    dst->calls += src->calls;
    dst->tailcalls += src->tailcalls;
    dst->total_ns += src->total_ns;
    dst->self_ns += src->self_ns;
    m->map[n] = idx;
    return 0;
}

static int by_thread_number(const void *x, const void *y) {
    const dnp_ct_tree *a = x, *b = y;
    uint64_t ka = a->thread ? a->thread : UINT32_MAX + (uint64_t)1;
    uint64_t kb = b->thread ? b->thread : UINT32_MAX + (uint64_t)1;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return a->os_tid < b->os_tid ? -1 : a->os_tid > b->os_tid;
}

static int merge_all(dnp_calltree *ct) {
    dnp_idmap h = {0};
    int rc = ct_tree_init(&ct->all);
    for (size_t i = 0; i < ct->nthreads && rc == 0; i++) {
        dnp_ct_tree *tr = &ct->threads[i];
        merge_ctx m = {&ct->all, &h, calloc(tr->nnodes, sizeof(uint32_t)), 0};
        if (!m.map)
            rc = -1;
        else
            rc = dnp_ct_walk(tr, merge_visit, &m);
        free(m.map);
    }
    dnp_idmap_release(&h);
    return rc == 0 ? ct_tree_finish(&ct->all, NULL) : -1;
}

/* ---- the builder: one event at a time ---- */

typedef struct ct_rec {
    uint64_t os_tid, node, parent, func, name;
    uint64_t calls, incl, excl, tail;
    uint32_t idx; /* its index in its thread's tree */
    double hook_in, hook_out; /* the hooks' cost of its calls, ns (CallsOverhead) */
} ct_rec;

typedef struct ct_builder {
    dnp_calltree *ct;
    /* CallNodes: the largest of each (OS thread, node) */
    dnp_idmap nodes_h;
    ct_rec *recs;
    size_t nrecs, caprecs;
    /* the timeline, rebuilt as it comes: one tree per thread number, a node stack per thread */
    dnp_tl_state tl;
    dnp_idmap tl_h;
    dnp_ct_tree *tl_trees;
    size_t ntl, tl_cap;
    uint32_t *tree_of; /* by thread number: tree index + 1, 0 none */
    uint32_t **nstack;
    size_t *nstack_cap;
    size_t nslots;
    /* the timeline's functions and threads, for the evented exports */
    dnp_idmap func_h;
    size_t funcs_cap;
    uint8_t *has_tl; /* by thread number */
    size_t nhas;
    uint64_t include_id, exclude_id;
    /* per OS thread: the hooks' cost (CallsOverhead), the calls' samples (CallsSamples) */
    struct { uint64_t tid, inner_ps, outer_ps, wait_ns, samples, in_agent, outside, in_jit; } *ovh;
    size_t novh, covh;
    /* ExistingThread: OS names by OS thread id (the sampler's, for threads the runtime does not name) */
    struct { uint64_t tid, name; } *osname;
    size_t nosname, cosname;
    int failed;
} ct_builder;

/* CallNode totals only grow, per (OS thread, node): the one with the most calls
 * (then the most time) is the last, in whatever order the events come. */
static int on_call_node(ct_builder *b, const dnp_trace_event *e) {
    if (e->nvalues < DNP_NV_CallNode)
        return 0;
    uint64_t tid = e->v[DNP_V(CallNode, osThreadId)], node = e->v[DNP_V(CallNode, node)];
    uint64_t calls = e->v[DNP_V(CallNode, calls)], name = e->v[DNP_VNAME(CallNode, functionId)];
    uint32_t at;
    if (!dnp_idmap_get(&b->nodes_h, tid, node, &at)) {
        if (DNP_VEC_RESERVE(b->recs, b->caprecs, b->nrecs + 1, 256) < 0)
            return -1;
        at = (uint32_t)b->nrecs;
        if (dnp_idmap_put(&b->nodes_h, tid, node, at) != 0)
            return -1;
        memset(&b->recs[at], 0, sizeof b->recs[at]);
        b->nrecs++;
    } else {
        const ct_rec *r = &b->recs[at];
        if (calls < r->calls || (calls == r->calls && e->v[DNP_V(CallNode, inclusiveNs)] < r->incl)) {
            if (!r->name && name)
                b->recs[at].name = name;
            b->ct->call_nodes++;
            return 0;
        }
    }
    ct_rec *r = &b->recs[at];
    /* the calls since its last CallNode cost what the thread measured last */
    for (size_t k = 0; k < b->novh; k++) {
        if (b->ovh[k].tid == tid) {
            double since = (double)(calls - r->calls);
            r->hook_in += since * (double)b->ovh[k].inner_ps / 1000.0;
            r->hook_out += since * (double)b->ovh[k].outer_ps / 1000.0;
            break;
        }
    }
    r->os_tid = tid;
    r->node = node;
    r->parent = e->v[DNP_V(CallNode, parent)];
    r->func = e->v[DNP_V(CallNode, functionId)];
    if (name || !r->name)
        r->name = name;
    r->calls = calls;
    r->incl = e->v[DNP_V(CallNode, inclusiveNs)];
    r->excl = e->v[DNP_V(CallNode, exclusiveNs)];
    r->tail = e->v[DNP_V(CallNode, tailcalls)];
    b->ct->call_nodes++;
    return 0;
}

/* A SampleNode is a CallNode whose calls are samples and that has no tail
 * calls. */
static int on_sample_node(ct_builder *b, const dnp_trace_event *e) {
    if (e->nvalues < DNP_NV_SampleNode)
        return 0;
    dnp_trace_event c = {.time_ns = e->time_ns, .thread = e->thread, .kind = DNP_EV_CallNode, .nvalues = DNP_NV_CallNode};
#define SN(cf, sf) c.v[DNP_V(CallNode, cf)] = e->v[DNP_V(SampleNode, sf)]
    SN(osThreadId, osThreadId);
    SN(node, node);
    SN(parent, parent);
    SN(functionId, functionId);
    c.v[DNP_VNAME(CallNode, functionId)] = e->v[DNP_VNAME(SampleNode, functionId)];
    SN(calls, samples);
    SN(inclusiveNs, inclusiveNs);
    SN(exclusiveNs, exclusiveNs);
#undef SN
    b->ct->sample_nodes++;
    b->ct->call_nodes--; /* on_call_node counts it */
    return on_call_node(b, &c);
}

static int by_tid_node(const void *x, const void *y) {
    const ct_rec *a = x, *b = y;
    if (a->os_tid != b->os_tid)
        return a->os_tid < b->os_tid ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* The thread number of an OS thread id: the latest one with it, 0 if none. */
static uint32_t thread_of_tid(const dnp_trace *t, uint64_t tid) {
    for (size_t i = t->nthreads; i-- > 0;)
        if (t->threads[i].os_tid == tid)
            return t->threads[i].ordinal;
    return 0;
}

static int add_tree(dnp_ct_tree **trees, size_t *n, size_t *cap, dnp_ct_tree **out) {
    if (DNP_VEC_RESERVE(*trees, *cap, *n + 1, 8) != 0)
        return -1;
    *out = &(*trees)[*n];
    if (ct_tree_init(*out) != 0)
        return -1;
    (*n)++;
    return 0;
}

static void name_thread(const dnp_trace *t, dnp_ct_tree *tr) {
    const dnp_trace_thread *th = dnp_trace_thread_get(t, tr->thread);
    if (th) {
        tr->name = th->name;
        if (!tr->os_tid)
            tr->os_tid = th->os_tid;
    }
}

/* One tree per OS thread from the largest CallNode of every node. */
static int build_from_nodes(ct_builder *b) {
    dnp_calltree *ct = b->ct;
    size_t cap = 0;
    qsort(b->recs, b->nrecs, sizeof *b->recs, by_tid_node);
    dnp_idmap_release(&b->nodes_h);
    for (size_t i = 0; i < b->nrecs; i++)
        if (dnp_idmap_put(&b->nodes_h, b->recs[i].os_tid, b->recs[i].node, (uint32_t)i) != 0)
            return -1;
    for (size_t i = 0; i < b->nrecs;) {
        size_t j = i;
        while (j < b->nrecs && b->recs[j].os_tid == b->recs[i].os_tid)
            j++;
        dnp_ct_tree *tr;
        if (add_tree(&ct->threads, &ct->nthreads, &cap, &tr) != 0)
            return -1;
        tr->os_tid = b->recs[i].os_tid;
        tr->thread = thread_of_tid(ct->t, tr->os_tid);
        name_thread(ct->t, tr);
        for (size_t k = i; k < j; k++) {
            ct_rec *r = &b->recs[k];
            uint32_t idx;
            if (tree_add(tr, 0, r->func, r->name, &idx) != 0)
                return -1;
            r->idx = idx;
            dnp_ct_node *n = &tr->nodes[idx];
            n->calls = r->calls;
            n->tailcalls = r->tail;
            n->total_ns = r->incl;
            n->self_ns = r->excl > r->incl ? r->incl : r->excl;
        }
        for (size_t k = i; k < j; k++) {
            ct_rec *r = &b->recs[k];
            uint32_t p;
            if (r->parent == 0)
                continue;
            if (r->parent != r->node && dnp_idmap_get(&b->nodes_h, r->os_tid, r->parent, &p))
                tr->nodes[r->idx].parent = b->recs[p].idx;
            else
                ct->orphans++;
        }
        /* A cycle of parents (a damaged trace) is broken where it is found. */
        uint32_t *state = calloc(tr->nnodes, sizeof *state);
        if (!state)
            return -1;
        state[0] = 1;
        for (uint32_t k = 1; k < tr->nnodes; k++) {
            uint32_t stamp = k + 1, m = k;
            while (!state[m]) {
                state[m] = stamp;
                m = tr->nodes[m].parent;
            }
            if (state[m] == stamp) {
                tr->nodes[m].parent = 0;
                ct->orphans++;
            }
            for (m = k; state[m] == stamp; m = tr->nodes[m].parent)
                state[m] = 1;
        }
        free(state);
        i = j;
    }
    return 0;
}

/* Grows the per-thread-number arrays to hold thread. */
static int slots_for(ct_builder *b, uint32_t thread) {
    if (thread < b->nslots)
        return 0;
    size_t n = b->nslots ? b->nslots : 8;
    while (n <= thread)
        n *= 2;
    uint32_t *to = realloc(b->tree_of, n * sizeof *to);
    if (to)
        b->tree_of = to;
    uint32_t **ns = realloc(b->nstack, n * sizeof *ns);
    if (ns)
        b->nstack = ns;
    size_t *nc = realloc(b->nstack_cap, n * sizeof *nc);
    if (nc)
        b->nstack_cap = nc;
    if (!to || !ns || !nc)
        return -1;
    for (size_t i = b->nslots; i < n; i++) {
        to[i] = 0;
        ns[i] = NULL;
        nc[i] = 0;
    }
    b->nslots = n;
    return 0;
}

static int tl_build_visit(void *ctx, uint32_t thread, int open, int how, const dnp_tl_frame *f, uint32_t depth,
                          uint64_t now) {
    ct_builder *b = ctx;
    if (slots_for(b, thread) != 0)
        return -1;
    if (!b->tree_of[thread]) {
        dnp_ct_tree *tr;
        if (add_tree(&b->tl_trees, &b->ntl, &b->tl_cap, &tr) != 0)
            return -1;
        tr->thread = thread;
        b->tree_of[thread] = (uint32_t)b->ntl;
    }
    dnp_ct_tree *tr = &b->tl_trees[b->tree_of[thread] - 1];
    if (DNP_VEC_RESERVE(b->nstack[thread], b->nstack_cap[thread], depth + 1, 64) < 0)
        return -1;
    uint32_t *stack = b->nstack[thread];
    if (open) {
        uint32_t parent = depth ? stack[depth - 1] : 0, idx;
        if (ct_tree_child(tr, &b->tl_h, thread, parent, f->func, f->name, &idx) != 0)
            return -1;
        tr->nodes[idx].calls++;
        stack[depth] = idx;
    } else {
        dnp_ct_node *n = &tr->nodes[stack[depth]];
        uint64_t dur = now > f->start_ns ? now - f->start_ns : 0;
        n->total_ns += dur;
        n->self_ns += dur > f->child_ns ? dur - f->child_ns : 0;
        if (how == DNP_TL_TAILCALL)
            n->tailcalls++;
    }
    return 0;
}

/* A function and a thread seen in the timeline (MethodEnter). */
static int note_timeline(ct_builder *b, const dnp_trace_event *e) {
    dnp_calltree *ct = b->ct;
    uint32_t k;
    uint64_t fn = e->v[DNP_V(MethodEnter, functionId)], sid = e->v[DNP_VNAME(MethodEnter, functionId)];
    if (dnp_idmap_get(&b->func_h, fn, 0, &k)) {
        uint64_t *name = &ct->tl_funcs[k].name; /* the same whatever the order: the smallest known */
        if (sid && (!*name || sid < *name))
            *name = sid;
    } else {
        if (DNP_VEC_RESERVE(ct->tl_funcs, b->funcs_cap, ct->ntl_funcs + 1, 256) < 0)
            return -1;
        ct->tl_funcs[ct->ntl_funcs] = (dnp_ct_frame){fn, sid};
        if (dnp_idmap_put(&b->func_h, fn, 0, (uint32_t)ct->ntl_funcs) != 0)
            return -1;
        ct->ntl_funcs++;
    }
    if (DNP_VEC_RESERVE_ZERO(b->has_tl, b->nhas, (size_t)e->thread + 1, 8) < 0)
        return -1;
    b->has_tl[e->thread] = 1;
    return 0;
}

/* The sampler's ExistingThread with no managed thread: the OS's name of a
 * thread, kept for threads that have no managed name (the latest wins). */
static int note_os_name(ct_builder *b, const dnp_trace_event *e) {
    if (e->nvalues < DNP_NV_ExistingThread)
        return 0;
    uint64_t tid = e->v[DNP_V(ExistingThread, osThreadId)], name = e->v[DNP_V(ExistingThread, name)];
    if (!tid || !name)
        return 0;
    size_t k = 0;
    while (k < b->nosname && b->osname[k].tid != tid)
        k++;
    if (k == b->nosname) {
        if (DNP_VEC_RESERVE(b->osname, b->cosname, b->nosname + 1, 8) < 0)
            return -1;
        b->nosname++;
    }
    b->osname[k].tid = tid;
    b->osname[k].name = name;
    return 0;
}

/* A thread's CallsOverhead, CallsSamples or CallsJitSamples: cumulative, the last counts. */
static int on_thread_stats(ct_builder *b, const dnp_trace_event *e) {
    int ovh = e->kind == DNP_EV_CallsOverhead, jit = e->kind == DNP_EV_CallsJitSamples;
    if (e->nvalues < (ovh ? DNP_NV_CallsOverhead : jit ? DNP_NV_CallsJitSamples : DNP_NV_CallsSamples))
        return 0;
    uint64_t tid = ovh ? e->v[DNP_V(CallsOverhead, osThreadId)]
                   : jit ? e->v[DNP_V(CallsJitSamples, osThreadId)]
                         : e->v[DNP_V(CallsSamples, osThreadId)];
    size_t k = 0;
    while (k < b->novh && b->ovh[k].tid != tid)
        k++;
    if (k == b->novh) {
        if (DNP_VEC_RESERVE(b->ovh, b->covh, b->novh + 1, 8) < 0)
            return -1;
        memset(&b->ovh[k], 0, sizeof b->ovh[k]);
        b->ovh[k].tid = tid;
        b->novh++;
    }
    if (jit) {
        if (e->v[DNP_V(CallsJitSamples, samples)] >= b->ovh[k].in_jit)
            b->ovh[k].in_jit = e->v[DNP_V(CallsJitSamples, samples)];
    } else if (ovh && e->v[DNP_V(CallsOverhead, waitNs)] >= b->ovh[k].wait_ns) {
        b->ovh[k].inner_ps = e->v[DNP_V(CallsOverhead, innerPs)];
        b->ovh[k].outer_ps = e->v[DNP_V(CallsOverhead, outerPs)];
        b->ovh[k].wait_ns = e->v[DNP_V(CallsOverhead, waitNs)];
    } else if (!ovh && e->v[DNP_V(CallsSamples, samples)] >= b->ovh[k].samples) {
        b->ovh[k].samples = e->v[DNP_V(CallsSamples, samples)];
        b->ovh[k].in_agent = e->v[DNP_V(CallsSamples, inAgent)];
        b->ovh[k].outside = e->v[DNP_V(CallsSamples, outside)];
    }
    return 0;
}

static int builder_feed(ct_builder *b, const dnp_trace_event *e) {
    dnp_calltree *ct = b->ct;
    switch (e->kind) {
    case DNP_EV_CallsConfig:
        if (e->nvalues >= DNP_NV_CallsConfig) {
            ct->has_config = 1;
            ct->mode = e->v[DNP_V(CallsConfig, mode)];
            ct->all_code = e->v[DNP_V(CallsConfig, allCode)] != 0;
            b->include_id = e->v[DNP_V(CallsConfig, include)];
            b->exclude_id = e->v[DNP_V(CallsConfig, exclude)];
        }
        break;
    case DNP_EV_CallNode:
        return on_call_node(b, e);
    case DNP_EV_CallsOverhead:
    case DNP_EV_CallsSamples:
    case DNP_EV_CallsJitSamples:
        return on_thread_stats(b, e);
    case DNP_EV_CallsSampling:
        if (e->nvalues >= DNP_NV_CallsSampling) {
            ct->calls_clock = e->v[DNP_V(CallsSampling, clock)];
            ct->calls_rate = e->v[DNP_V(CallsSampling, rateHz)];
        }
        break;
    case DNP_EV_SampleConfig:
        if (e->nvalues >= DNP_NV_SampleConfig) {
            ct->sample_mode = e->v[DNP_V(SampleConfig, mode)];
            ct->sample_rate = e->v[DNP_V(SampleConfig, rateHz)];
            ct->sample_period_ns = e->v[DNP_V(SampleConfig, periodNs)];
        }
        break;
    case DNP_EV_SampleStats:
        if (e->nvalues >= DNP_NV_SampleStats) {
            ct->samples += e->v[DNP_V(SampleStats, samples)];
            ct->samples_dropped += e->v[DNP_V(SampleStats, dropped)];
        }
        break;
    case DNP_EV_SampleWeights:
        if (e->nvalues >= DNP_NV_SampleWeights) {
            ct->sample_instants += e->v[DNP_V(SampleWeights, samples)];
            ct->sample_periods += e->v[DNP_V(SampleWeights, periods)];
        }
        break;
    case DNP_EV_SampleNode:
        return on_sample_node(b, e);
    case DNP_EV_AsyncStacks:
        b->ct->async_stacks = 1;
        if (e->nvalues >= DNP_NV_AsyncStacks && e->v[DNP_V(AsyncStacks, resumes)] >= b->ct->async_resumes) {
            b->ct->async_resumes = e->v[DNP_V(AsyncStacks, resumes)];
            b->ct->async_unknown = e->v[DNP_V(AsyncStacks, unknownEnds)];
        }
        return 0;
    case DNP_EV_ExistingThread:
        if (note_os_name(b, e) != 0)
            return -1;
        break;
    case DNP_EV_LockConfig: ct->holds |= DNP_CT_HOLDS_LOCKS; break;
    case DNP_EV_GcConfig: ct->holds |= DNP_CT_HOLDS_GC; break;
    case DNP_EV_ThreadPoolConfig: ct->holds |= DNP_CT_HOLDS_THREADPOOL; break;
    case DNP_EV_ExceptionThrown: ct->holds |= DNP_CT_HOLDS_EXCEPTIONS; break;
    case DNP_EV_AllocSampling:
        if (e->nvalues >= DNP_NV_AllocSampling && !ct->alloc_source) {
            ct->alloc_source = e->v[DNP_V(AllocSampling, source)];
            ct->alloc_mean_bytes = e->v[DNP_V(AllocSampling, meanBytes)];
        }
        break;
    case DNP_EV_MethodEnter:
        if (note_timeline(b, e) != 0)
            return -1;
        /* fall through */
    case DNP_EV_MethodLeave:
    case DNP_EV_MethodTailcall:
    case DNP_EV_MethodUnwind:
        ct->timeline_events++;
        break;
    default:
        break;
    }
    /* every event: a thread's last one closes what is open at the end; once
     * there are CallNodes the timeline's trees will not be used */
    return b->nrecs ? 0 : dnp_tl_feed(&b->tl, e, tl_build_visit, b);
}

static int by_frame_func(const void *x, const void *y) {
    const dnp_ct_frame *a = x, *b = y;
    return a->func < b->func ? -1 : a->func > b->func;
}

/* After the last event: the trees from the CallNodes if there were any, else
 * from the timeline; names; children sorted; all threads merged. */
static int builder_finish(ct_builder *b) {
    dnp_calltree *ct = b->ct;
    const dnp_trace *t = ct->t;
    ct->include = dnp_trace_string(t, b->include_id);
    ct->exclude = dnp_trace_string(t, b->exclude_id);
    int rc = 0;
    ct->physical = g_physical;
    if (b->nrecs) {
        rc = build_from_nodes(b);
        for (size_t i = 0; i < ct->nthreads; i++) /* no managed name: the OS's */
            for (size_t k = 0; k < b->nosname && !ct->threads[i].name; k++)
                if (b->osname[k].tid == ct->threads[i].os_tid)
                    ct->threads[i].name = dnp_trace_string(t, b->osname[k].name);
    } else if (ct->timeline_events) {
        rc = dnp_tl_end(&b->tl, tl_build_visit, b);
        ct->unmatched = b->tl.st.unmatched;
        ct->open_at_end = b->tl.st.open_at_end;
        ct->from_timeline = 1;
        ct->threads = b->tl_trees;
        ct->nthreads = b->ntl;
        b->tl_trees = NULL;
        b->ntl = 0;
        for (size_t i = 0; i < ct->nthreads; i++)
            name_thread(t, &ct->threads[i]);
    }
    if (rc == 0 && ct->nthreads)
        qsort(ct->threads, ct->nthreads, sizeof *ct->threads, by_thread_number);
    for (size_t i = 0; i < ct->nthreads && rc == 0; i++) {
        hook_fix fix = {0}, *f = NULL;
        dnp_ct_tree *tr = &ct->threads[i];
        for (size_t k = 0; !ct->from_timeline && k < b->novh; k++) {
            if (b->ovh[k].tid == tr->os_tid) {
                ct->cpu_wait_ns += b->ovh[k].wait_ns;
                ct->calls_samples += b->ovh[k].samples;
                ct->calls_in_agent += b->ovh[k].in_agent;
                ct->calls_outside += b->ovh[k].outside;
                ct->calls_in_jit += b->ovh[k].in_jit;
                if (b->ovh[k].inner_ps || b->ovh[k].outer_ps)
                    f = &fix;
            }
        }
        if (f) {
            fix.in = calloc(tr->nnodes, sizeof *fix.in);
            fix.out = calloc(tr->nnodes, sizeof *fix.out);
            if (!fix.in || !fix.out) {
                free(fix.in);
                free(fix.out);
                return -1;
            }
            for (size_t k = 0; k < b->nrecs; k++) {
                if (b->recs[k].os_tid == tr->os_tid && b->recs[k].idx < tr->nnodes) {
                    fix.in[b->recs[k].idx] = b->recs[k].hook_in;
                    fix.out[b->recs[k].idx] = b->recs[k].hook_out;
                }
            }
        }
        rc = ct_tree_finish(tr, f);
        if (rc == 0 && !ct->from_timeline && ct->async_stacks)
            rc = ct_async_view(tr, g_physical, !ct->sample_nodes, &ct->async_marked);
        if (f) {
            free(fix.in);
            free(fix.out);
            ct->hook_threads++;
            ct->hook_calls += fix.calls;
            ct->hook_inner_ns += fix.in_ns;
            ct->hook_outer_ns += fix.out_ns;
        }
    }
    if (rc == 0)
        rc = merge_all(ct);
    if (ct->ntl_funcs)
        qsort(ct->tl_funcs, ct->ntl_funcs, sizeof *ct->tl_funcs, by_frame_func);
    for (size_t k = 1; k < b->nhas && rc == 0; k++) {
        if (!b->has_tl[k])
            continue;
        uint32_t *grown = realloc(ct->tl_threads, (ct->ntl_threads + 1) * sizeof *grown);
        if (!grown)
            return -1;
        ct->tl_threads = grown;
        ct->tl_threads[ct->ntl_threads++] = (uint32_t)k;
    }
    return rc;
}

static void builder_release(ct_builder *b) {
    dnp_idmap_release(&b->nodes_h);
    dnp_idmap_release(&b->tl_h);
    dnp_idmap_release(&b->func_h);
    free(b->recs);
    free(b->ovh);
    free(b->osname);
    dnp_tl_release(&b->tl);
    for (size_t i = 0; i < b->ntl; i++)
        tree_release(&b->tl_trees[i]);
    free(b->tl_trees);
    for (size_t i = 0; b->nstack && i < b->nslots; i++)
        free(b->nstack[i]);
    free(b->nstack);
    free(b->nstack_cap);
    free(b->tree_of);
    free(b->has_tl);
}

static int build(dnp_calltree *ct, const dnp_trace *t, dnp_trace_stream *s, dnp_calltree **out, char *err,
                 size_t errlen) {
    ct_builder b;
    memset(&b, 0, sizeof b);
    b.ct = ct;
    int rc = 0;
    if (s) {
        dnp_trace_event e;
        int got;
        while (rc == 0 && (got = dnp_trace_stream_next(s, &e)) > 0)
            rc = builder_feed(&b, &e);
        if (rc == 0 && got < 0) {
            snprintf(err, errlen, "%s", dnp_trace_stream_error(s));
            builder_release(&b);
            dnp_calltree_free(ct);
            return -1;
        }
        ct->t = dnp_trace_stream_trace(s); /* final now */
    } else {
        for (size_t i = 0; i < t->nevents && rc == 0; i++)
            rc = builder_feed(&b, &t->events[i]);
    }
    if (rc == 0)
        rc = builder_finish(&b);
    builder_release(&b);
    if (rc != 0) {
        dnp_calltree_free(ct);
        snprintf(err, errlen, "out of memory building the call tree");
        return -1;
    }
    *out = ct;
    return 0;
}

int dnp_calltree_build(const dnp_trace *t, dnp_calltree **out, char *err, size_t errlen) {
    *out = NULL;
    dnp_calltree *ct = calloc(1, sizeof *ct);
    if (!ct) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ct->t = t;
    return build(ct, t, NULL, out, err, errlen);
}

int dnp_calltree_build_stream(dnp_trace_stream *s, dnp_calltree **out, char *err, size_t errlen) {
    *out = NULL;
    dnp_calltree *ct = calloc(1, sizeof *ct);
    if (!ct) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ct->t = dnp_trace_stream_trace(s);
    ct->stream = s;
    return build(ct, NULL, s, out, err, errlen);
}

void dnp_calltree_free(dnp_calltree *ct) {
    if (!ct)
        return;
    for (size_t i = 0; i < ct->nthreads; i++)
        tree_release(&ct->threads[i]);
    free(ct->threads);
    tree_release(&ct->all);
    free(ct->tl_funcs);
    free(ct->tl_threads);
    if (ct->weighted) {
        dnp_idmap_release(ct->weighted);
        free(ct->weighted);
    }
    free(ct);
}

int dnp_calltree_has_data(const dnp_calltree *ct) {
    return ct && ct->all.nnodes > 1;
}

const dnp_ct_tree *dnp_ct_find_thread(const dnp_calltree *ct, uint64_t number_or_tid) {
    for (size_t i = 0; i < ct->nthreads; i++)
        if (ct->threads[i].thread == number_or_tid)
            return &ct->threads[i];
    for (size_t i = 0; i < ct->nthreads; i++)
        if (ct->threads[i].os_tid == number_or_tid)
            return &ct->threads[i];
    return NULL;
}
