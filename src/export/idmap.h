/* idmap.h: the export library's tables (call tree children, frames by function):
 * a pair of 64-bit keys to a 32-bit index, in the common map (u64map.h). */
#ifndef DNP_IDMAP_H
#define DNP_IDMAP_H

#include <stdint.h>

#include "u64map.h"

typedef dnp_u64map dnp_idmap;

/* 1 and the value in *out when (a, b) is there, else 0. */
static inline int dnp_idmap_get(const dnp_idmap *m, uint64_t a, uint64_t b, uint32_t *out) {
    uint64_t v;
    if (!dnp_u64map_get2(m, a, b, &v))
        return 0;
    *out = (uint32_t)v;
    return 1;
}

/* Inserts or replaces. 0, or -1 when out of memory. */
static inline int dnp_idmap_put(dnp_idmap *m, uint64_t a, uint64_t b, uint32_t v) {
    return dnp_u64map_put2(m, a, b, v, NULL) == 0 ? 0 : -1;
}

static inline void dnp_idmap_release(dnp_idmap *m) {
    dnp_u64map_release(m);
}

#endif
