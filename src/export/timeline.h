/* timeline.h: the enter/leave timeline replayed one event at a time, for the
 * call tree builder (calltree.c) and the timeline walks (timeline.c); internal
 * to src/export. A stack of open frames per thread; the events of one thread
 * must come in time order (the loader's order, or a stream's file order),
 * threads may interleave. */
#ifndef DNP_TIMELINE_H
#define DNP_TIMELINE_H

#include "calltree.h"

typedef struct dnp_tl_thread {
    dnp_tl_frame *stack;
    size_t n, cap;
    uint64_t last_ns;
} dnp_tl_thread;

typedef struct dnp_tl_state {
    dnp_tl_thread *ths; /* by thread number */
    size_t nth;
    dnp_tl_stats st;
} dnp_tl_state;

/* One event: a MethodEnter opens a frame, a Leave, Tailcall or Unwind closes
 * it (and what is open above it), Args and Return fill the open frame in. */
int dnp_tl_feed(dnp_tl_state *s, const dnp_trace_event *e, dnp_tl_visit visit, void *ctx);
/* Closes the frames still open, at each thread's last event. */
int dnp_tl_end(dnp_tl_state *s, dnp_tl_visit visit, void *ctx);
void dnp_tl_release(dnp_tl_state *s);

#endif
