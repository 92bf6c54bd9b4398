/* time_runs.h: stable sorting of records by time, for the trace reader.
 *
 * Within a chunk, times only grow (deltas are unsigned), so the records of each
 * chunk are a sorted run. A k-way merge of the runs with a heap, ties going to
 * the earlier run, gives the order; the records are then permuted in place along
 * the cycles of that order. Extra memory: 4 bytes per record and 24 per run. */
#ifndef DNP_TIME_RUNS_H
#define DNP_TIME_RUNS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dnp_runs {
    size_t *start; /* run r is [start[r], start[r + 1]) */
    size_t n, cap; /* entries in start: runs + 1 once closed */
} dnp_runs;

/* Marks that a run starts at index i (a new chunk). Returns 0 or -ENOMEM. */
int dnp_runs_mark(dnp_runs *r, size_t i);
/* Sorts n records of the given size, whose first member is a uint64_t time and
 * whose runs r are sorted; tmp holds one record. Returns 0 or -ENOMEM. */
int dnp_sort_runs(void *recs, size_t size, size_t n, dnp_runs *r, void *tmp);

#endif
