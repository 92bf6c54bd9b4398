/* dnp_search.h: the binary search the sampler's tables share (native symbols,
 * libraries by address): no calls, no allocation, safe in a signal handler. */
#ifndef DNP_SEARCH_H
#define DNP_SEARCH_H

#include <stddef.h>

/* The index of the first of n entries, sorted by START ascending, whose START
 * is above key (n when none is): START is an expression of the index I, e.g.
 * DNP_FIRST_AFTER(i, t->n, t->syms[i].start, addr). The entry before it, if
 * any, is the last one starting at or below key. */
#define DNP_FIRST_AFTER(I, n, START, key)                                                                              \
    __extension__({                                                                                                    \
        size_t lo_ = 0, hi_ = (size_t)(n);                                                                             \
        while (lo_ < hi_) {                                                                                            \
            size_t I = lo_ + (hi_ - lo_) / 2;                                                                          \
            if ((START) <= (key))                                                                                      \
                lo_ = I + 1;                                                                                           \
            else                                                                                                       \
                hi_ = I;                                                                                               \
        }                                                                                                              \
        lo_;                                                                                                           \
    })

#endif
