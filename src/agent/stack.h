/* stack.h: the managed frames of the current thread, through the runtime's own
 * stack walk (ICorProfilerInfo2::DoStackSnapshot, which needs
 * COR_PRF_ENABLE_STACK_SNAPSHOT in the event mask). Used from callbacks only:
 * exception stories (exceptions.c) and sampled allocations (alloc_sampling.c). */
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

#endif
