/* nesting.h: the nesting level of each thread, as DNProfiler indented its log.
 *
 * A START event opens a level, a FINISH closes the nearest open START it pairs
 * with (the START just before it in events.def), and a transition opens on a call
 * and closes the opposite transition on its return. Closing by pair rather than by
 * count keeps the levels right when the runtime leaves one out: the frame that
 * catches an exception gets ExceptionUnwindFunctionEnter but never its Leave,
 * because it is not left (execution resumes in it), so ExceptionCatcherLeave also
 * closes that frame's unwind. */
#ifndef DNP_NESTING_H
#define DNP_NESTING_H

#include <stdint.h>

#include "trace_format.h"

#define DNP_NEST_MAX 512

typedef struct dnp_nest_state {
    uint16_t open[DNP_NEST_MAX]; /* the kinds of the open START events */
    int depth;                   /* may exceed DNP_NEST_MAX; only the first are kept */
    uint64_t unmatched;          /* FINISH events that found nothing open to close */
    uint64_t skipped;            /* START events closed by a FINISH of an outer one */
} dnp_nest_state;

/* Applies one event (its kind and values) to a thread's state; returns the level
 * at which to show it: a START at the level before it opens, a FINISH at the level
 * after it closes. */
int dnp_nest_apply(dnp_nest_state *s, uint16_t kind, const uint64_t *v);

/* The START kind a FINISH kind closes, or -1. */
int dnp_nest_pair(uint16_t finish_kind);

#endif
