/* timeorder.h: the events of a trace in time order across threads, as
 * dnp_trace_load sorts them, with memory bounded by the events of the runs
 * that overlap in time rather than by the trace (issue 11). Used by `dnprof
 * print` and the exception commands.
 *
 * A stream gives each thread's events in order but interleaves threads by
 * chunk; the loader's order is a merge of those runs by (time, run). A first
 * pass notes where each run (one thread's events in a row) starts; the second
 * merges the runs with a heap and hands an event out once no run still unread
 * starts earlier. The agent flushes every thread's buffer each flush period, so
 * the heap holds about one flush period of events. Loaded whole instead when
 * DNP_ENV_NO_STREAM is set (to compare); a pipe, which cannot be read twice, is
 * read once, every event kept and sorted. Either way the times are the loader's (since the trace began) and
 * each event has an index: in file order when streamed, in the loaded trace
 * when loaded. */
#ifndef DNP_TIMEORDER_H
#define DNP_TIMEORDER_H

#include <stddef.h>

#include "trace_reader.h"

typedef struct timeorder timeorder;

/* Called for each event of the first pass, in file order (each thread's events
 * in order), with its index; returns 0 or -1 (out of memory). */
typedef int (*timeorder_hook)(void *ctx, const dnp_trace_event *e, size_t idx);

/* Opens path and runs the first pass (hook may be NULL). 0, or -1 with one line
 * in err. */
int timeorder_open(const char *path, timeorder_hook hook, void *ctx, timeorder **out, char *err, size_t errlen);

/* The trace: final (notes, threads, strings, status), without events when
 * streamed. String pointers stay valid until timeorder_close. */
const dnp_trace *timeorder_trace(const timeorder *o);

/* The next event in time order: 1, 0 at the end, -1 when reading failed
 * (timeorder_error says why). */
int timeorder_next(timeorder *o, dnp_trace_event *e, size_t *idx);
const char *timeorder_error(const timeorder *o);

void timeorder_close(timeorder *o);

#endif
