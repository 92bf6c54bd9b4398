/* dnp_vec.h: one way to grow an array (git's ALLOC_GROW): by doubling, from a
 * first capacity, with the size checked for overflow. Header only, for the
 * front end and the trace library (not the agent's hot paths: it mallocs).
 *
 *   if (DNP_VEC_RESERVE(v, cap, n + 1, 64) < 0) return -1;
 *   v[n++] = item;
 *
 * makes room for n + 1 items in v (of capacity cap, both updated); on failure
 * v and cap are as they were. DNP_VEC_RESERVE_ZERO also zeroes the new slots
 * (tables indexed by a number: make room for index i with need = i + 1). */
#ifndef DNP_VEC_H
#define DNP_VEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* *vp is the array (any object pointer type), *cap its capacity in elements
 * of elem bytes. Returns 0 when it holds need elements, or -1. */
static inline int dnp_vec_reserve_(void *vp, size_t *cap, size_t need, size_t elem, size_t first, int zero) {
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : (first ? first : 1);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem)
        return -1;
    void *old;
    memcpy(&old, vp, sizeof old);
    char *grown = realloc(old, ncap * elem);
    if (!grown)
        return -1;
    if (zero)
        memset(grown + *cap * elem, 0, (ncap - *cap) * elem);
    memcpy(vp, &grown, sizeof grown);
    *cap = ncap;
    return 0;
}

#define DNP_VEC_RESERVE(v, cap, need, first) dnp_vec_reserve_(&(v), &(cap), (need), sizeof *(v), (first), 0)
#define DNP_VEC_RESERVE_ZERO(v, cap, need, first) dnp_vec_reserve_(&(v), &(cap), (need), sizeof *(v), (first), 1)

#endif
