/* folded.c: FlameGraph's folded stacks, "a;b;c N", one line per call path with a
 * non-zero weight, depth first, the heaviest child first. */
#include <stdlib.h>
#include <string.h>

#include "dnp_vec.h"
#include "export.h"

typedef struct folded {
    const dnp_calltree *ct;
    FILE *out;
    int calls;
    char *path;
    size_t len, cap;
    size_t *at; /* path length before each depth's name */
    size_t nat;
} folded;

static int folded_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    folded *f = ctx;
    const dnp_ct_node *node = &tr->nodes[n];
    if (n == 0)
        return 0;
    if (!enter) {
        f->len = f->at[node->depth];
        return 0;
    }
    if (DNP_VEC_RESERVE(f->at, f->nat, (size_t)node->depth + 1, 64) != 0)
        return -1;
    f->at[node->depth] = f->len;
    char buf[2048];
    const char *name = dnp_export_name(f->ct, node->func, node->name, buf, sizeof buf);
    size_t nlen = strlen(name);
    if (DNP_VEC_RESERVE(f->path, f->cap, f->len + nlen + 2, 4096) != 0)
        return -1;
    if (node->depth > 1)
        f->path[f->len++] = ';';
    for (size_t i = 0; i < nlen; i++) {
        char c = name[i];
        f->path[f->len++] = c == ';' ? ':' : (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    uint64_t w = f->calls ? node->calls : node->self_ns;
    if (w) {
        fwrite(f->path, 1, f->len, f->out);
        fprintf(f->out, " %llu\n", (unsigned long long)w);
    }
    return ferror(f->out) ? -1 : 0;
}

int dnp_export_folded(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o) {
    folded f;
    memset(&f, 0, sizeof f);
    f.ct = ct;
    f.out = out;
    f.calls = o && o->weight_calls;
    const dnp_ct_tree *tr = o && o->tree ? o->tree : &ct->all;
    int rc = dnp_ct_walk(tr, folded_visit, &f);
    free(f.path);
    free(f.at);
    return dnp_export_end(out, rc);
}
