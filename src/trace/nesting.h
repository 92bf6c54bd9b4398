/* nesting.h: the nesting level of each thread, as DNProfiler indented its log.
 *
 * A START event opens a level, a FINISH closes the nearest open START it pairs
 * with (the START just before it in events.def), and a transition opens on a call
 * and closes the opposite transition on its return. Closing by pair rather than by
 * count keeps the levels right when the runtime leaves one out: the frame that
 * catches an exception gets ExceptionUnwindFunctionEnter but never its Leave,
 * because it is not left (execution resumes in it), so ExceptionCatcherLeave also
 * closes that frame's unwind.
 *
 * Exception events are followed through the thread's exception state machine
 * (exc_machine.h): each open exception event belongs to one of its levels, and
 * when a level ends, whether caught, rethrown (`throw;`: its catch never gets
 * its Leave), abandoned or replaced, everything it left open is closed. The
 * stray ExceptionUnwindFunctionLeave that ends a first pass with no catcher
 * closes that pass's last ExceptionSearchFunctionEnter, which gets no Leave. */
#ifndef DNP_NESTING_H
#define DNP_NESTING_H

#include <stdint.h>

#include "exc_machine.h"
#include "trace_format.h"

#define DNP_NEST_MAX 512

typedef struct dnp_nest_state {
    uint16_t open[DNP_NEST_MAX]; /* the kinds of the open START events */
    uint8_t exc[DNP_NEST_MAX];   /* the exception level + 1 an open exception event belongs to, or 0 */
    int depth;                   /* may exceed DNP_NEST_MAX; only the first are kept */
    uint64_t unmatched;          /* FINISH events that found nothing open to close */
    uint64_t skipped;            /* START events closed by a FINISH of an outer one */
    exc_machine m;               /* the thread's exceptions */
} dnp_nest_state;

/* Applies one event (its kind and values) to a thread's state; returns the level
 * at which to show it: a START at the level before it opens, a FINISH at the level
 * after it closes. */
int dnp_nest_apply(dnp_nest_state *s, uint16_t kind, const uint64_t *v);

/* The START kind a FINISH kind closes, or -1. */
int dnp_nest_pair(uint16_t finish_kind);

#endif
