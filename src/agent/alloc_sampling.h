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

/* Before SetEventMask: adds the EventPipe bit when cfg asks for --alloc. */
void alloc_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* After SetEventMask: starts the EventPipe session. 0, or -1 after saying why
 * (the rest of the trace is recorded anyway). */
int alloc_start(void);

/* Whether sampled allocations are on (the EventPipe events are ours). */
int alloc_enabled(void);

/* From EventPipeEventDelivered: records the sample the event describes. */
void alloc_event(DWORD event_id, DWORD event_version, ULONG data_len, const BYTE *data,
                 ULONG nframes, const UINT_PTR *frames);

/* At Shutdown or detach: stops the session, writes out what was added up. */
void alloc_stop(void);

/* Writes out every sum not yet written (the process is about to end). */
void alloc_flush_all(void);

#endif
