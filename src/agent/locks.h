/* locks.h: lock contention (issue 17, dnprof run/attach --locks; docs/waits.md).
 *
 * The runtime says when a thread starts and stops waiting for a lock
 * (ContentionStart/ContentionStop, keyword Contention) and, on .NET 9+, for a
 * WaitHandle or Monitor.Wait (WaitHandleWaitStart/Stop, keyword WaitHandle,
 * verbose), on the waiting thread, through the agent's in-process EventPipe
 * session (eventpipe.h). The agent takes the waiting thread's stack at the
 * start, keeps the start per thread, and at the stop adds the wait up per
 * (stack, locked type, owner, kind) in bounded tables written out as LockSite
 * events; long waits are also LockWait events, for the timeline. */
#ifndef DNP_LOCKS_H
#define DNP_LOCKS_H

#include <stdint.h>

#include "config.h"

/* Before SetEventMask: when cfg asks for --locks, joins the EventPipe session. */
void locks_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* System.Threading.Lock's slow path, timed by rejit.c's probe (--locks from
 * start-up on .NET 9+), on the acquiring thread: enter as a call starts (it
 * takes the thread's stack; owner: the lock's holder then, read by the probe,
 * 0 when not known); exit as it ends, with its time. The call is then one
 * contended acquisition, with that stack and its owner: the one the runtime's
 * ContentionStart named when it blocked, else the one at the start; the
 * runtime's own wait inside it is left to it. */
void locks_probe_enter(uint64_t owner);
void locks_probe_exit(uint64_t wait_ns);

/* Writes out every sum not yet written, and the stats so far. */
void locks_flush_all(void);

#endif
