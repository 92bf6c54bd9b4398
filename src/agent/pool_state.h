/* pool_state.h: the thread pool's threads and queued work items, read from
 * the pool's own objects at each window's end (dnprof top's pool line,
 * DNPROF_THREADPOOL=state; docs/top.md). No managed code runs for it, where
 * the runtime's EventCounters would run theirs in the program. Needs the
 * sampler's view of the collections (--sample): an object is read only while
 * none runs. */
#ifndef DNP_POOL_STATE_H
#define DNP_POOL_STATE_H

#include <stdint.h>

/* *blocked when the runtime's pool does not count its threads blocked on tasks. */
#define POOL_BLOCKED_UNKNOWN UINT64_MAX

/* The pool's threads (ThreadPool.ThreadCount), queued work items
 * (ThreadPool.PendingWorkItemCount) and threads blocked on tasks, 0, 0 and 0
 * before the program made its pool: 0, or -1 when this runtime's pool is not
 * one this reads, a collection ran meanwhile, or what was read did not hold
 * together. */
int pool_state_read(uint64_t *threads, uint64_t *queue, uint64_t *blocked);
/* A window's end (windows.h): one ThreadPoolState record when the read works,
 * and a ThreadPoolBlocked where the runtime counts them. */
void pool_state_flush(void);
/* Forgets what was learned (a new attach). */
void pool_state_reset(void);

#endif
