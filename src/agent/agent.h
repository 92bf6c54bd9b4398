/* agent.h: what the pieces of the agent share. The agent is one profiler object
 * per process ("pick first", docs/design-notes.md#side-by-side), so its state is one struct, g_agent,
 * defined in agent.c. A leaf, as say.h is: the recorder, calls and names use
 * these without calling back up into the profiler object (profiler.h). */
#ifndef DNP_AGENT_H
#define DNP_AGENT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "com.h"
#include "config.h"
#include "families.h"
#include "say.h"

typedef struct dnp_agent {
    ICorProfilerCallback callback; /* the object the runtime holds; first member */
    atomic_int refs;
    ICorProfilerInfo *info;
    int info_version; /* highest ICorProfilerInfo the runtime gave us */
    dnp_event_config events;
    atomic_int active; /* recording: callbacks do their work only while set */
    int attached;
    agent_config config;
} dnp_agent;

extern dnp_agent g_agent;

/* Whether a call to the Info slot of this version may be made. */
/* The calling thread's id, asked of the kernel once per thread (gettid() is
 * a system call, 13 us in the VM of BENCHMARKS.md, and the JIT's and the GC's
 * callbacks asked it at every method and collection). For callbacks and the
 * agent's threads; not in a signal handler (a dlopen'd library's thread-local
 * storage may be allocated on its first use in a thread). */
int agent_tid(void);

#define AGENT_HAS_INFO(name) (g_agent.info_version >= DNP_INFO_VERSION(name))
#define INFO_CALL(name, ...) (g_agent.info->lpVtbl->name(g_agent.info, __VA_ARGS__))

#endif
