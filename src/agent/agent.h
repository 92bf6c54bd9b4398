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
#define AGENT_HAS_INFO(name) (g_agent.info_version >= DNP_INFO_VERSION(name))
#define INFO_CALL(name, ...) (g_agent.info->lpVtbl->name(g_agent.info, __VA_ARGS__))

#endif
