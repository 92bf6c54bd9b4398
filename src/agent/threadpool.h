/* threadpool.h: thread-pool starvation (issue 17, dnprof run/attach --threadpool;
 * docs/waits.md). The runtime's ThreadPoolWorkerThreadAdjustmentAdjustment
 * (keyword Threading, Informational) through the agent's EventPipe session: one
 * ThreadPoolAdjustment per change of the pool's worker count, with its reason
 * (6: the pool was starved and a thread was injected). Where the pool's threads
 * were blocked comes from wall-clock samples (--sample=wall), not from here. */
#ifndef DNP_THREADPOOL_H
#define DNP_THREADPOOL_H

#include <stdint.h>

#include "config.h"

/* Before SetEventMask: when cfg asks for --threadpool, joins the EventPipe session. */
void threadpool_configure(const agent_config *cfg, uint32_t *mask_high);

#endif
