/* idmap.h: a hash map from a pair of 64-bit keys to a 32-bit value, for the
 * export library's own tables (call tree children, frames by function). */
#ifndef DNP_IDMAP_H
#define DNP_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dnp_idmap {
    uint64_t *ka, *kb;
    uint32_t *val; /* value + 1; 0: empty */
    size_t cap, n;
} dnp_idmap;

/* 1 and the value in *out when (a, b) is there, else 0. */
int dnp_idmap_get(const dnp_idmap *m, uint64_t a, uint64_t b, uint32_t *out);
/* Inserts or replaces. 0, or -1 when out of memory. */
int dnp_idmap_put(dnp_idmap *m, uint64_t a, uint64_t b, uint32_t v);
void dnp_idmap_release(dnp_idmap *m);

#endif
