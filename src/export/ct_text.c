/* ct_text.c: weighted trees from stacks recorded as text (ct_text.h). */
#include "ct_text.h"

#include <stdlib.h>
#include <string.h>

#include "dnp_vec.h"

uint64_t dnp_text_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

uint64_t dnp_ct_own_name(dnp_ct_names *nm, const char *s, size_t n) {
    uint64_t h = dnp_text_hash(s, n), probe = 0;
    uint32_t i;
    for (;; probe++) { /* (hash, n + probe << 32): a collision moves on */
        if (!dnp_idmap_get(&nm->h, h, n | probe << 32, &i))
            break;
        if (strlen(nm->names[i]) == n && memcmp(nm->names[i], s, n) == 0)
            return DNP_CT_OWN_NAMES + i;
    }
    char *copy = DNP_VEC_RESERVE(nm->names, nm->cap, nm->n + 1, 64) == 0 ? malloc(n + 1) : NULL;
    if (!copy)
        return 0;
    memcpy(copy, s, n);
    copy[n] = 0;
    i = (uint32_t)nm->n++;
    nm->names[i] = copy;
    return dnp_idmap_put(&nm->h, h, n | probe << 32, i) == 0 ? DNP_CT_OWN_NAMES + i : 0;
}

int dnp_ct_text_add(dnp_calltree *ct, dnp_ct_names *nm, const char *text, const char *leaf, uint64_t weight,
                    uint64_t count) {
    size_t n = 1;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    if (DNP_VEC_RESERVE(nm->frames, nm->frames_cap, n + 1, 16) != 0)
        return -1;
    size_t at = n;
    for (const char *line = text;;) { /* innermost first in the trace; outermost first in the tree */
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        uint64_t id = dnp_ct_own_name(nm, line, len);
        if (!id)
            return -1;
        nm->frames[--at] = (dnp_ct_frame){id, id};
        if (!end)
            break;
        line = end + 1;
    }
    if (leaf) {
        uint64_t id = dnp_ct_own_name(nm, leaf, strlen(leaf));
        if (!id)
            return -1;
        nm->frames[n++] = (dnp_ct_frame){id, id};
    }
    return dnp_ct_weighted_add(ct, nm->frames, n, weight, count);
}

int dnp_ct_text_finish(dnp_calltree *ct, dnp_ct_names *nm) {
    free(nm->frames);
    nm->frames = NULL;
    nm->frames_cap = 0;
    ct->own_names = (const char *const *)nm->names;
    ct->nown_names = nm->n;
    return dnp_ct_weighted_finish(ct);
}

void dnp_ct_names_release(dnp_ct_names *nm) {
    for (size_t i = 0; i < nm->n; i++)
        free(nm->names[i]);
    free(nm->names);
    free(nm->frames);
    dnp_idmap_release(&nm->h);
    memset(nm, 0, sizeof *nm);
}
