/* ct_weighted.c: call trees built from weighted stacks (calltree.h:
 * dnp_ct_weighted_*): sampled allocations, lock waits, stacks recorded as text. */
#include <stdio.h>
#include <stdlib.h>

#include "calltree.h"
#include "ct_internal.h"
#include "idmap.h"

dnp_calltree *dnp_ct_weighted_new(const dnp_trace *t, const char *unit) {
    dnp_calltree *ct = calloc(1, sizeof *ct);
    if (!ct)
        return NULL;
    ct->t = t;
    ct->unit = unit;
    ct->weighted = calloc(1, sizeof(dnp_idmap));
    if (!ct->weighted || ct_tree_init(&ct->all) != 0) {
        dnp_calltree_free(ct);
        return NULL;
    }
    return ct;
}

int dnp_ct_weighted_add(dnp_calltree *ct, const dnp_ct_frame *frames, size_t n, uint64_t weight,
                        uint64_t count) {
    if (!ct->weighted)
        return -1;
    uint32_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (ct_tree_child(&ct->all, ct->weighted, 0, at, frames[i].func, frames[i].name, &at) != 0)
            return -1;
        ct->all.nodes[at].total_ns += weight;
        if (i + 1 == n) {
            ct->all.nodes[at].self_ns += weight;
            ct->all.nodes[at].calls += count;
        }
    }
    return 0;
}

int dnp_ct_weighted_finish(dnp_calltree *ct) {
    if (ct->weighted) {
        dnp_idmap_release(ct->weighted);
        free(ct->weighted);
        ct->weighted = NULL;
    }
    return ct_tree_finish(&ct->all, NULL);
}

/* A name of the trace, or one of a weighted tree's own (DNP_CT_OWN_NAMES up). */
const char *dnp_ct_raw_name(const dnp_calltree *ct, uint64_t func, uint64_t name, char *buf, size_t len) {
    if (name >= DNP_CT_OWN_NAMES && name - DNP_CT_OWN_NAMES < ct->nown_names)
        return ct->own_names[name - DNP_CT_OWN_NAMES];
    const char *s = dnp_trace_string(ct->t, name);
    if (s && *s)
        return s;
    snprintf(buf, len, "<function 0x%llx>", (unsigned long long)func);
    return buf;
}
