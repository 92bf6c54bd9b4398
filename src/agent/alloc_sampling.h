/* alloc_sampling.h: sampled allocations (issue 8, dnprof run/attach --alloc).
 *
 * The runtime samples its own allocations and says so through an in-process
 * EventPipe session (ICorProfilerInfo12::EventPipeStartSession): on .NET 10 the
 * randomized AllocationSampled event (keyword AllocationSampling), before it
 * AllocationTick (keyword GC, verbose, one event per ~100 KB). Each event comes
 * to EventPipeEventDelivered on the allocating thread with its managed stack as
 * instruction pointers; the agent records one AllocSample with the type, the
 * bytes the sample stands for and the stack (docs/alloc.md). */
#ifndef DNP_ALLOC_SAMPLING_H
#define DNP_ALLOC_SAMPLING_H

#include <stdint.h>

#include "com_types.h"
#include "config.h"

/* Before SetEventMask: when cfg asks for --alloc, joins the agent's EventPipe
 * session (eventpipe.h), which starts, stops and flushes it from then on. */
void alloc_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* Whether sampled allocations are on (asked for, and the session runs). */
int alloc_enabled(void);

/* Writes out every sum not yet written (at stop, at exit, at a window's end). */
void alloc_flush_all(void);

#endif
