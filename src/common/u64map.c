/* u64map.c: open addressing, linear probing, doubled at half full (u64map.h). */
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The slot of (a, b), or of the empty slot where it would go. cap is not 0. */
static size_t u64map_slot(const dnp_u64map *m, uint64_t a, uint64_t b) {
    size_t mask = m->cap - 1;
    size_t i = (size_t)dnp_u64map_hash(a, b) & mask;
    while (m->full[i] && !(m->ka[i] == a && m->kb[i] == b))
        i = (i + 1) & mask;
    return i;
}

int dnp_u64map_get2(const dnp_u64map *m, uint64_t a, uint64_t b, uint64_t *out) {
    if (!m->cap)
        return 0;
    size_t i = u64map_slot(m, a, b);
    if (!m->full[i])
        return 0;
    if (out)
        *out = m->val[i];
    return 1;
}

static int u64map_grow(dnp_u64map *m) {
    dnp_u64map g = {0};
    g.cap = m->cap ? m->cap * 2 : 64;
    g.ka = malloc(g.cap * sizeof *g.ka);
    g.kb = malloc(g.cap * sizeof *g.kb);
    g.val = malloc(g.cap * sizeof *g.val);
    g.full = calloc(g.cap, sizeof *g.full);
    if (!g.ka || !g.kb || !g.val || !g.full) {
        dnp_u64map_release(&g);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->full[i])
            continue;
        size_t j = u64map_slot(&g, m->ka[i], m->kb[i]);
        g.ka[j] = m->ka[i];
        g.kb[j] = m->kb[i];
        g.val[j] = m->val[i];
        g.full[j] = 1;
    }
    g.n = m->n;
    dnp_u64map_release(m);
    *m = g;
    return 0;
}

int dnp_u64map_put2(dnp_u64map *m, uint64_t a, uint64_t b, uint64_t v, uint64_t *old) {
    if ((m->n + 1) * 2 > m->cap && u64map_grow(m) != 0)
        return -ENOMEM;
    size_t i = u64map_slot(m, a, b);
    if (m->full[i]) {
        if (old)
            *old = m->val[i];
    } else {
        m->n++;
        m->ka[i] = a;
        m->kb[i] = b;
        m->full[i] = 1;
    }
    m->val[i] = v;
    return 0;
}

int dnp_u64map_del2(dnp_u64map *m, uint64_t a, uint64_t b, uint64_t *out) {
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    size_t i = u64map_slot(m, a, b);
    if (!m->full[i])
        return 0;
    if (out)
        *out = m->val[i];
    /* Backward shift: move up each later entry of the run that may sit in the hole. */
    for (size_t j = (i + 1) & mask; m->full[j]; j = (j + 1) & mask) {
        size_t home = (size_t)dnp_u64map_hash(m->ka[j], m->kb[j]) & mask;
        /* The entry at j may move to i when its home is not in (i, j] cyclically. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->ka[i] = m->ka[j];
            m->kb[i] = m->kb[j];
            m->val[i] = m->val[j];
            i = j;
        }
    }
    m->full[i] = 0;
    m->n--;
    return 1;
}

void dnp_u64map_clear(dnp_u64map *m) {
    if (m->full)
        memset(m->full, 0, m->cap * sizeof *m->full);
    m->n = 0;
}

void dnp_u64map_release(dnp_u64map *m) {
    free(m->ka);
    free(m->kb);
    free(m->val);
    free(m->full);
    memset(m, 0, sizeof *m);
}
