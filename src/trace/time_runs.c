/* time_runs.c: stable sorting of records by time (time_runs.h). */
#include "time_runs.h"
#include "dnp_vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Marks that a run starts at index i (a new chunk). Returns 0 or -ENOMEM. */
int dnp_runs_mark(dnp_runs *r, size_t i) {
    if (r->n && r->start[r->n - 1] == i)
        return 0; /* the previous run is empty */
    if (DNP_VEC_RESERVE(r->start, r->cap, r->n + 1, 64) != 0)
        return -ENOMEM;
    r->start[r->n++] = i;
    return 0;
}

typedef struct heap_item {
    uint64_t time;
    size_t run;
} heap_item;

static inline int heap_before(const heap_item *a, const heap_item *b) {
    return a->time < b->time || (a->time == b->time && a->run < b->run);
}

static void heap_down(heap_item *h, size_t n, size_t i) {
    heap_item x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_before(&h[c + 1], &h[c]))
            c++;
        if (!heap_before(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

#define REC_TIME(recs, size, i) (*(const uint64_t *)((const uint8_t *)(recs) + (i) * (size)))

/* Sorts n records of the given size, whose first member is a uint64_t time and
 * whose runs r are sorted; tmp holds one record. Returns 0 or -ENOMEM. */
int dnp_sort_runs(void *recs, size_t size, size_t n, dnp_runs *r, void *tmp) {
    if (n < 2)
        return 0;
    if (dnp_runs_mark(r, n) < 0)
        return -ENOMEM;
    size_t nruns = r->n - 1;
    int sorted = 1;
    for (size_t k = 1; k < nruns && sorted; k++)
        sorted = REC_TIME(recs, size, r->start[k] - 1) <= REC_TIME(recs, size, r->start[k]);
    if (sorted)
        return 0;
    if (n > UINT32_MAX)
        return -ENOMEM;

    uint32_t *perm = malloc(n * sizeof *perm);
    heap_item *heap = malloc(nruns * sizeof *heap);
    size_t *pos = malloc(nruns * sizeof *pos);
    if (!perm || !heap || !pos) {
        free(perm);
        free(heap);
        free(pos);
        return -ENOMEM;
    }
    size_t h = 0;
    for (size_t k = 0; k < nruns; k++) {
        pos[k] = r->start[k];
        heap[h++] = (heap_item){REC_TIME(recs, size, pos[k]), k};
    }
    for (size_t i = h / 2; i-- > 0;)
        heap_down(heap, h, i);
    for (size_t o = 0; o < n; o++) {
        size_t k = heap[0].run;
        perm[o] = (uint32_t)pos[k]++;
        if (pos[k] < r->start[k + 1])
            heap[0].time = REC_TIME(recs, size, pos[k]);
        else
            heap[0] = heap[--h];
        heap_down(heap, h, 0);
    }
    free(heap);
    free(pos);

    /* Record perm[j] goes to j: follow each cycle once, marking places done. */
    uint8_t *rec = recs;
    for (size_t i = 0; i < n; i++) {
        if (perm[i] == i)
            continue;
        memcpy(tmp, rec + i * size, size);
        size_t j = i;
        for (;;) {
            size_t src = perm[j];
            perm[j] = (uint32_t)j;
            if (src == i) {
                memcpy(rec + j * size, tmp, size);
                break;
            }
            memcpy(rec + j * size, rec + src * size, size);
            j = src;
        }
    }
    free(perm);
    return 0;
}
