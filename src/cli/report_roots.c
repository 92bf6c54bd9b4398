/* report_roots.c: the frames that start every thread, left out of the report's
 * "by total" table (report_calls.c). With native frames unwound to the root
 * (docs/sampling.md, "Native code"), every sampled stack starts in the host,
 * libc's start and the runtime's thread start: each of those is "100% by
 * total" and says nothing. A frame is left out when it is native (no
 * FunctionID), has no time of its own, and is never below a managed frame. */
#include <stdlib.h>

#include "calltree.h"
#include "idmap.h"
#include "report.h"

enum { ROOT_ABOVE = 1, ROOT_BELOW = 2 }; /* seen with no managed frame above; seen under one */

typedef struct roots {
    dnp_idmap seen;   /* frame key -> ROOT_* */
    uint32_t managed; /* managed frames on the walk's path */
    int failed;
} roots;

static int visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    roots *r = ctx;
    if (n == 0)
        return 0;
    const dnp_ct_node *node = &tr->nodes[n];
    if (node->func) {
        r->managed += enter ? 1 : (uint32_t)-1;
        return 0;
    }
    if (!enter)
        return 0;
    uint64_t key = dnp_ct_frame_key(node->func, node->name);
    uint32_t v = 0;
    dnp_idmap_get(&r->seen, key, 0, &v);
    v |= r->managed ? ROOT_BELOW : ROOT_ABOVE;
    if (dnp_idmap_put(&r->seen, key, 0, v) != 0)
        r->failed = 1;
    return 0;
}

size_t report_drop_roots(const dnp_ct_tree *tr, dnp_ct_func *f, size_t nf) {
    roots r = {0};
    if (dnp_ct_walk(tr, visit, &r) != 0 || r.failed) {
        dnp_idmap_release(&r.seen);
        return 0; /* nothing left out: the table as it was */
    }
    size_t keep = 0;
    for (size_t i = 0; i < nf; i++) {
        uint32_t v = 0;
        int root = !f[i].func && !f[i].self_ns &&
                   dnp_idmap_get(&r.seen, dnp_ct_frame_key(f[i].func, f[i].name), 0, &v) && v == ROOT_ABOVE;
        if (!root)
            f[keep++] = f[i];
    }
    dnp_idmap_release(&r.seen);
    return nf - keep;
}
