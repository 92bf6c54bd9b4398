/* ct_functions.c: what a call tree adds up to per function (dnp_ct_functions),
 * and pruning a tree of its small paths (dnp_ct_prune); calltree.h. */
#include "calltree.h"
#include "dnp_vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"

typedef struct func_ctx {
    dnp_idmap h;
    dnp_ct_func *f;
    uint32_t *active;
    size_t n, cap, acap;
} func_ctx;

static int func_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    func_ctx *c = ctx;
    if (n == 0)
        return 0;
    const dnp_ct_node *node = &tr->nodes[n];
    uint32_t k;
    if (!dnp_idmap_get(&c->h, dnp_ct_frame_key(node->func, node->name), 0, &k)) {
        if (DNP_VEC_RESERVE(c->f, c->cap, c->n + 1, 64) < 0 || DNP_VEC_RESERVE(c->active, c->acap, c->n + 1, 64) < 0)
            return -1;
        k = (uint32_t)c->n++;
        memset(&c->f[k], 0, sizeof c->f[k]);
        c->f[k].func = node->func;
        c->active[k] = 0;
        if (dnp_idmap_put(&c->h, dnp_ct_frame_key(node->func, node->name), 0, k) != 0)
            return -1;
    }
    dnp_ct_func *f = &c->f[k];
    if (enter) {
        if (!f->name)
            f->name = node->name;
        f->calls += node->calls;
        f->tailcalls += node->tailcalls;
        f->self_ns += node->self_ns;
        if (c->active[k]++ == 0) {
            f->total_ns += node->total_ns;
            f->outer_calls += node->calls;
        }
    } else {
        c->active[k]--;
    }
    return 0;
}

static int by_self(const void *x, const void *y) {
    const dnp_ct_func *a = x, *b = y;
    if (a->self_ns != b->self_ns)
        return a->self_ns > b->self_ns ? -1 : 1;
    if (a->total_ns != b->total_ns)
        return a->total_ns > b->total_ns ? -1 : 1;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    return a->func < b->func ? -1 : a->func > b->func;
}

int dnp_ct_functions(const dnp_ct_tree *tr, dnp_ct_func **out, size_t *n) {
    func_ctx c;
    memset(&c, 0, sizeof c);
    int rc = dnp_ct_walk(tr, func_visit, &c);
    dnp_idmap_release(&c.h);
    free(c.active);
    if (rc != 0) {
        free(c.f);
        *out = NULL;
        *n = 0;
        errno = ENOMEM;
        return -1;
    }
    if (c.n)
        qsort(c.f, c.n, sizeof *c.f, by_self);
    *out = c.f;
    *n = c.n;
    return 0;
}

typedef struct prune_ctx {
    uint64_t min_ns, cut;
} prune_ctx;

/* Children are sorted by total, largest first: the ones under the threshold
 * are the end of the list. Cut there before the walk goes down. */
static int prune_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    prune_ctx *p = ctx;
    if (!enter)
        return 0;
    dnp_ct_node *node = (dnp_ct_node *)&tr->nodes[n];
    uint32_t prev = 0;
    for (uint32_t c = node->first_child; c; prev = c, c = tr->nodes[c].next_sibling) {
        if (tr->nodes[c].total_ns >= p->min_ns)
            continue;
        if (prev)
            ((dnp_ct_node *)&tr->nodes[prev])->next_sibling = 0;
        else
            node->first_child = 0;
        for (; c; c = tr->nodes[c].next_sibling) {
            if (n != 0)
                node->self_ns += tr->nodes[c].total_ns;
            p->cut++;
        }
        break;
    }
    return 0;
}

static uint64_t prune_tree(dnp_ct_tree *tr, double min_fraction) {
    if (tr->nnodes == 0)
        return 0;
    prune_ctx p = {(uint64_t)((double)tr->nodes[0].total_ns * min_fraction), 0};
    if (p.min_ns == 0)
        return 0;
    dnp_ct_walk(tr, prune_visit, &p);
    return p.cut;
}

uint64_t dnp_ct_prune(dnp_calltree *ct, double min_fraction) {
    uint64_t cut = prune_tree(&ct->all, min_fraction);
    for (size_t i = 0; i < ct->nthreads; i++)
        cut += prune_tree(&ct->threads[i], min_fraction);
    return cut;
}

