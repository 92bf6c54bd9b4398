/* profiler.h: the profiler object (profiler.c): creating it, starting to record,
 * and forgetting the runtime after a detach. Used by the entry points and attach. */
#ifndef DNP_PROFILER_H
#define DNP_PROFILER_H

#include "agent.h"

/* Starts recording as cfg says: takes the newest ICorProfilerInfo from unk, opens
 * the trace, sets the event mask. Says why (say.h) and fails if it cannot. */
HRESULT agent_start(IUnknown *unk, const agent_config *cfg, int attached);

/* The profiler object: returns a new reference to it in *out, or fails when
 * another runtime in this process already has one (side by side, pick first). */
HRESULT agent_create(REFIID riid, void **out);

/* Stops the background work that calls the runtime: the last window, then the
 * sampler. Both the Shutdown callback and a detach (the control thread) do it
 * first, and they can come at once: an attach whose --duration ends as the
 * program exits. One at a time, so that each thread is joined and its memory
 * freed once; the second finds them stopped. exiting: the process ends (not a
 * detach), so memory is left to the exit (sampler_stop). */
void agent_stop_background(int exiting);
/* The program ends by a signal (stop_signal.c): what Shutdown writes, written
 * from the agent's own thread while the program's threads run on, with no call
 * into the runtime; the trace is complete. */
void agent_finish_on_signal(int sig);

/* After a detach: forgets the runtime's interfaces and lets the same process
 * create the profiler again (a later attach). */
void agent_release(void);

/* The detach the runtime refused after a ReJIT (--trace, docs/attach.md): the
 * trace is completed and the front end's log closed as at a detach, but the
 * library stays loaded, recording nothing (attach.c). */
void attach_stay_inert(void);

#endif
