/* dnp_free.h: the end of a struct that owns several heap blocks, in one
 * statement instead of a run of free() calls. Header only.
 *
 *   DNP_FREE_ALL(p->a, p->b, p->c);   free() of each (any may be NULL)
 *   dnp_free_strv(names, n);          free() of names[0..n), then of names
 *                                     (names may be NULL) */
#ifndef DNP_FREE_H
#define DNP_FREE_H

#include <stddef.h>
#include <stdlib.h>

static inline void dnp_free_n_(void *const *ptrs, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}

#define DNP_FREE_ALL(...) \
    dnp_free_n_((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

static inline void dnp_free_strv(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

#endif
