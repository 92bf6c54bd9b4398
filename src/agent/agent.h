/* agent.h: what the pieces of the agent share. The agent is one profiler object
 * per process ("pick first", seed 003), so its state is one struct, g_agent. */
#ifndef DNP_AGENT_H
#define DNP_AGENT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "com.h"
#include "config.h"
#include "families.h"

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

/* Says something on stderr as "dnprof: ..." (one line, written at once). */
void agent_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Every agent_say line also goes to fd (-1: none): an attach tells its trigger
 * why it failed through a file in the control directory (attach.c). */
void agent_say_copy_to(int fd);

/* Starts recording as cfg says: takes the newest ICorProfilerInfo from unk, opens
 * the trace, sets the event mask. Says why on stderr and fails if it cannot. */
HRESULT agent_start(IUnknown *unk, const agent_config *cfg, int attached);

/* The profiler object: returns a new reference to it in *out, or fails when
 * another runtime in this process already has one (side by side, pick first). */
HRESULT agent_create(REFIID riid, void **out);

/* After a detach: forgets the runtime's interfaces and lets the same process
 * create the profiler again (a later attach). */
void agent_release(void);

/* Whether a call to the Info slot of this version may be made. */
#define AGENT_HAS_INFO(name) (g_agent.info_version >= DNP_INFO_VERSION(name))
#define INFO_CALL(name, ...) (g_agent.info->lpVtbl->name(g_agent.info, __VA_ARGS__))

#endif
