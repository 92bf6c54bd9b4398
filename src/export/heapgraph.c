/* heapgraph.c: the algorithms on a loaded heap snapshot (heapgraph.h):
 * dominators and retained sizes, sizes by type, shortest paths from the
 * roots. The loading is heapload.c's. */
#include "heapgraph.h"

#include <stdlib.h>
#include <string.h>

#include "dnp_free.h"
#include "heap_format.h"

void dnp_heapgraph_release(dnp_heapgraph *g) {
    DNP_FREE_ALL(g->addr, g->type, g->size, g->off, g->edges, g->roots, g->dep_key, g->dep_val);
    for (uint32_t i = 0; i < g->ntypes; i++) {
        free(g->types[i]);
        if (g->type_fields && g->type_fields[i])
            dnp_free_strv(g->type_fields[i], g->type_nfields[i]);
    }
    DNP_FREE_ALL(g->types, g->type_fields, g->type_nfields, g->edge_field, g->func_ids);
    dnp_free_strv(g->func_names, g->nfuncs);
    dnp_free_strv(g->static_names, g->nstatic_names);
    DNP_FREE_ALL(g->statics, g->idom, g->retained);
    memset(g, 0, sizeof *g);
}

/* ---- dominators ---- */

/* Iterative DFS from the roots' node: po[v] the postorder number
 * (DNP_HG_NONE: unreached), order[0..count) the nodes by it; cur: scratch for
 * the edge cursors. order holds the nodes by postorder number from the front
 * and the DFS's stack from the back (finished + on the stack <= n: they never
 * meet); po[v] = n while v is on the stack. The number reached. */
static uint32_t postorder(const dnp_heapgraph *g, uint32_t *po, uint32_t *order, uint32_t *cur) {
    uint32_t n = g->n;
    for (uint32_t v = 0; v < n; v++)
        po[v] = DNP_HG_NONE;
    uint32_t count = 0, sp = n; /* the stack is order[sp..n) */
    order[--sp] = 0;
    cur[0] = g->off[0];
    po[0] = n;
    while (sp < n) {
        uint32_t v = order[sp];
        if (cur[v] < g->off[v + 1]) {
            uint32_t s = g->edges[cur[v]++];
            if (po[s] == DNP_HG_NONE) {
                po[s] = n;
                cur[s] = g->off[s];
                order[--sp] = s;
            }
        } else {
            sp++;
            po[v] = count;
            order[count++] = v;
        }
    }
    return count;
}

/* The nearest common dominator of x and y (Cooper-Harvey-Kennedy's intersect). */
static uint32_t intersect(const uint32_t *idom, const uint32_t *po, uint32_t x, uint32_t y) {
    while (x != y) {
        while (po[x] < po[y])
            x = idom[x];
        while (po[y] < po[x])
            y = idom[y];
    }
    return x;
}

/* Cooper-Harvey-Kennedy, each node giving its successors their candidate:
 * in reverse postorder, until nothing changes. */
static void solve(const dnp_heapgraph *g, const uint32_t *po, const uint32_t *order,
                  uint32_t count, uint32_t *idom) {
    for (uint32_t v = 0; v < g->n; v++)
        idom[v] = DNP_HG_NONE;
    idom[0] = 0;
    int changed = 1;
    while (changed) {
        changed = 0;
        for (uint32_t k = count; k-- > 0;) {
            uint32_t b = order[k];
            if (idom[b] == DNP_HG_NONE)
                continue;
            for (uint32_t e = g->off[b]; e < g->off[b + 1]; e++) {
                uint32_t s = g->edges[e];
                if (s == 0)
                    continue;
                uint32_t cur = idom[s];
                uint32_t nw = cur == DNP_HG_NONE ? b : intersect(idom, po, b, cur);
                if (nw != cur) {
                    idom[s] = nw;
                    changed = 1;
                }
            }
        }
    }
}

/* Retained sizes, in postorder (a node's dominated nodes before it), and
 * what no root reaches. */
static uint64_t *retained_sizes(dnp_heapgraph *g, const uint32_t *order, uint32_t count,
                                const uint32_t *idom) {
    uint32_t n = g->n;
    uint64_t *ret = malloc((size_t)n * sizeof *ret);
    if (!ret)
        return NULL;
    for (uint32_t v = 0; v < n; v++)
        ret[v] = v ? g->size[v] : 0;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t v = order[k];
        if (v)
            ret[idom[v]] += ret[v];
    }
    g->unreachable = 0;
    g->unreachable_bytes = 0;
    for (uint32_t v = 1; v < n; v++) {
        if (idom[v] == DNP_HG_NONE) {
            g->unreachable++;
            g->unreachable_bytes += g->size[v];
        }
    }
    return ret;
}

int dnp_heapgraph_dominators(dnp_heapgraph *g, int free_graph) {
    uint32_t n = g->n;
    uint32_t *po = malloc((size_t)n * sizeof *po);
    uint32_t *order = malloc((size_t)n * sizeof *order);
    uint32_t *idom = malloc((size_t)n * sizeof *idom); /* first: the DFS's edge cursors */
    if (!po || !order || !idom) {
        free(po), free(order), free(idom);
        return -1;
    }
    uint32_t count = postorder(g, po, order, idom);
    solve(g, po, order, count, idom);
    if (free_graph) {
        free(g->edges);
        g->edges = NULL;
        free(g->off);
        g->off = NULL;
    }
    free(po);
    uint64_t *ret = retained_sizes(g, order, count, idom);
    free(order);
    if (!ret) {
        free(idom);
        return -1;
    }
    free(g->idom);
    free(g->retained);
    g->idom = idom;
    g->retained = ret;
    return 0;
}

int dnp_heapgraph_by_type(dnp_heapgraph *g, uint64_t **count_out,
                          uint64_t **bytes_out, uint64_t **ret_out) {
    uint32_t n = g->n, nt = g->ntypes;
    uint64_t *count = calloc(nt, sizeof *count), *bytes = calloc(nt, sizeof *bytes),
             *ret = calloc(nt, sizeof *ret);
    uint32_t *active = calloc(nt, sizeof *active);
    if (!count || !bytes || !ret || !active)
        goto oom;
    for (uint32_t v = 1; v < n; v++) {
        count[g->type[v]]++;
        bytes[g->type[v]] += g->size[v];
    }
    /* The dominator tree as CSR (children of each node), walked depth first
     * with a count of the instances of each type on the way down. */
    uint32_t *coff = calloc((size_t)n + 1, sizeof *coff);
    uint32_t *kids = malloc((size_t)n * sizeof *kids);
    if (!coff || !kids) {
        free(coff);
        free(kids);
        goto oom;
    }
    for (uint32_t v = 1; v < n; v++)
        if (g->idom[v] != DNP_HG_NONE)
            coff[g->idom[v] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        coff[v + 1] += coff[v];
    for (uint32_t v = 1; v < n; v++)
        if (g->idom[v] != DNP_HG_NONE)
            kids[coff[g->idom[v]]++] = v;
    for (uint32_t v = n; v > 0; v--) /* back to the starts */
        coff[v] = coff[v - 1];
    coff[0] = 0;
    /* Depth first without a stack: down through a child (coff[v] is v's
     * cursor up to end[v]), back up through idom. */
    uint32_t *end = malloc((size_t)n * sizeof *end);
    if (!end) {
        free(coff), free(kids);
        goto oom;
    }
    for (uint32_t v = 0; v < n; v++)
        end[v] = coff[v + 1];
    uint32_t v = 0;
    for (;;) {
        if (coff[v] < end[v]) {
            uint32_t c = kids[coff[v]++];
            uint32_t t = g->type[c];
            if (!active[t]++)
                ret[t] += g->retained[c];
            v = c;
        } else {
            if (!v)
                break;
            active[g->type[v]]--;
            v = g->idom[v];
        }
    }
    free(end);
    free(coff);
    free(kids);
    free(active);
    *count_out = count;
    *bytes_out = bytes;
    *ret_out = ret;
    return 0;
oom:
    free(count), free(bytes), free(ret), free(active);
    return -1;
}

/* ---- paths ---- */

int dnp_heapgraph_bfs(const dnp_heapgraph *g, uint32_t **parent_out, uint32_t **order_out,
                      uint32_t *norder) {
    uint32_t n = g->n;
    uint32_t *parent = malloc((size_t)n * sizeof *parent);
    uint32_t *q = malloc((size_t)n * sizeof *q);
    if (!parent || !q) {
        free(parent);
        free(q);
        return -1;
    }
    for (uint32_t v = 0; v < n; v++)
        parent[v] = DNP_HG_NONE;
    uint32_t head = 0, tail = 0;
    parent[0] = 0;
    q[tail++] = 0;
    while (head < tail) {
        uint32_t v = q[head++];
        for (uint32_t e = g->off[v]; e < g->off[v + 1]; e++) {
            uint32_t s = g->edges[e];
            if (parent[s] == DNP_HG_NONE) {
                parent[s] = v;
                q[tail++] = s;
            }
        }
        /* After the roots: what statics hold is one step from them too. */
        for (uint32_t i = 0; v == 0 && i < g->nstatics; i++) {
            uint32_t s = g->statics[i].node;
            if (parent[s] == DNP_HG_NONE) {
                parent[s] = 0;
                q[tail++] = s;
            }
        }
    }
    *parent_out = parent;
    *order_out = q;
    *norder = tail;
    return 0;
}

int dnp_heapgraph_is_dep(const dnp_heapgraph *g, uint32_t from, uint32_t to) {
    uint32_t lo = 0, hi = g->ndeps;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->dep_key[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < g->ndeps && g->dep_key[lo] == from; lo++)
        if (g->dep_val[lo] == to)
            return 1;
    return 0;
}

uint32_t dnp_heapgraph_find(const dnp_heapgraph *g, uint64_t addr) {
    if (!g->addr)
        return 0;
    for (uint32_t v = 1; v < g->n; v++)
        if (addr >= g->addr[v] && addr < g->addr[v] + (g->size[v] ? g->size[v] : 1))
            return v;
    return 0;
}

const dnp_heap_root *dnp_heapgraph_root_of(const dnp_heapgraph *g, uint32_t node) {
    const dnp_heap_root *best = NULL;
    for (uint32_t i = 0; i < g->nroots; i++) {
        if (g->roots[i].node != node)
            continue;
        if (!(g->roots[i].flags & DNP_ROOT_WEAK))
            return &g->roots[i];
        if (!best)
            best = &g->roots[i];
    }
    return best;
}

const char *dnp_heapgraph_edge_field(const dnp_heapgraph *g, uint32_t from, uint64_t e) {
    if (!g->edge_field || !from || !g->edge_field[e])
        return NULL;
    uint32_t t = g->type[from], f = g->edge_field[e];
    if (!g->type_fields || !g->type_fields[t] || f > g->type_nfields[t])
        return NULL;
    const char *name = g->type_fields[t][f - 1];
    return name && *name ? name : NULL;
}

const char *dnp_heapgraph_static_of(const dnp_heapgraph *g, uint32_t node) {
    for (uint32_t i = 0; i < g->nstatics; i++)
        if (g->statics[i].node == node && g->statics[i].name < g->nstatic_names)
            return g->static_names[g->statics[i].name];
    return NULL;
}

const char *dnp_heapgraph_func(const dnp_heapgraph *g, uint64_t id) {
    for (uint32_t i = 0; i < g->nfuncs; i++)
        if (g->func_ids[i] == id)
            return g->func_names[i];
    return NULL;
}
