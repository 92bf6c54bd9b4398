/* idmap.c: open addressing, linear probing, doubled at half full (idmap.h). */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

static int idmap_grow(dnp_idmap *h);

static uint64_t idmap_mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x7F4A7C15ull + (a << 6) + (a >> 2));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

int dnp_idmap_get(const dnp_idmap *h, uint64_t a, uint64_t b, uint32_t *out) {
    if (!h->cap)
        return 0;
    for (size_t i = idmap_mix(a, b) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
        if (!h->val[i])
            return 0;
        if (h->ka[i] == a && h->kb[i] == b) {
            *out = h->val[i] - 1;
            return 1;
        }
    }
}

static int idmap_grow(dnp_idmap *h) {
    dnp_idmap g = {0};
    g.cap = h->cap ? h->cap * 2 : 1024;
    g.ka = malloc(g.cap * sizeof *g.ka);
    g.kb = malloc(g.cap * sizeof *g.kb);
    g.val = calloc(g.cap, sizeof *g.val);
    if (!g.ka || !g.kb || !g.val) {
        free(g.ka);
        free(g.kb);
        free(g.val);
        return -1;
    }
    for (size_t i = 0; i < h->cap; i++)
        if (h->val[i])
            dnp_idmap_put(&g, h->ka[i], h->kb[i], h->val[i] - 1);
    free(h->ka);
    free(h->kb);
    free(h->val);
    *h = g;
    return 0;
}

int dnp_idmap_put(dnp_idmap *h, uint64_t a, uint64_t b, uint32_t v) {
    if ((h->n + 1) * 2 > h->cap && idmap_grow(h) != 0)
        return -1;
    size_t i = idmap_mix(a, b) & (h->cap - 1);
    while (h->val[i] && !(h->ka[i] == a && h->kb[i] == b))
        i = (i + 1) & (h->cap - 1);
    if (!h->val[i])
        h->n++;
    h->ka[i] = a;
    h->kb[i] = b;
    h->val[i] = v + 1;
    return 0;
}

void dnp_idmap_release(dnp_idmap *h) {
    free(h->ka);
    free(h->kb);
    free(h->val);
    memset(h, 0, sizeof *h);
}

