/* gc_stats.h: GC statistics (issue 17, dnprof run/attach --gc; docs/waits.md).
 *
 * Every collection with its number, generation, reason and type, the time the
 * runtime took to suspend, the pause (suspension start to resumption end), the
 * heap by generation before and after, the bytes promoted: from the runtime's
 * own GC events (keyword GC, level Informational) through the agent's one
 * in-process EventPipe session (eventpipe.h), which works at start-up and by
 * attach alike (an attached profiler cannot monitor background GC through the
 * profiling API's GC callbacks; the events still flow). One GcCollection and
 * up to two GcSizes per GC (events.def); the agent keeps at most a few
 * collections in flight. */
#ifndef DNP_GC_STATS_H
#define DNP_GC_STATS_H

#include <stdint.h>

#include "config.h"

/* Before SetEventMask: when cfg asks for --gc, joins the EventPipe session. */
void gc_stats_configure(const agent_config *cfg, uint32_t *mask_high);

/* Whether GC statistics are on (asked for, and the session runs). */
int gc_stats_enabled(void);

#endif
