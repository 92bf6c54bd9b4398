/* stack.h: the managed frames of the current thread, through the runtime's own
 * stack walk (ICorProfilerInfo2::DoStackSnapshot, which needs
 * COR_PRF_ENABLE_STACK_SNAPSHOT in the event mask). Used from callbacks only:
 * exception stories (exceptions.c) and the EventPipe consumers (alloc_sampling.c). */
#ifndef DNP_STACK_H
#define DNP_STACK_H

#include "com.h"

#define STACK_MAX_FRAMES 64

typedef struct stack_snapshot {
    FunctionID f[STACK_MAX_FRAMES]; /* innermost first; native frames left out */
    unsigned n;                     /* frames in f */
    unsigned more;                  /* managed frames beyond STACK_MAX_FRAMES */
} stack_snapshot;

/* Fills s with the current thread's managed frames; 0, or -1 with s empty when
 * the runtime refuses the walk. */
int stack_take(stack_snapshot *s);

/* Appends fn to s (counted in s->more when s is full). */
void stack_push(stack_snapshot *s, FunctionID fn);

/* The string number (rec_string) of the current thread's managed stack as
 * text, innermost frame first, one per line (names_frames_text): from frames
 * when the runtime gave them (an EventPipe event's), else from a snapshot of
 * this thread. Cached per thread: a stack seen before costs a frame-pointer
 * walk and a lookup, no snapshot (stack_cache.c says how a walk that stands for
 * two stacks is told apart). 0 when there is no managed frame. */
uint32_t stack_sid_here(ULONG nframes, const UINT_PTR *frames);

/* A new trace: every thread's cached string numbers are stale. */
void stack_cache_invalidate(void);

#endif
