/* calls.h: method enter/leave (ELT3, docs/design-notes.md#elt): which functions are hooked, the
 * hooks themselves, and the per-thread call trees they build. */
#ifndef DNP_CALLS_H
#define DNP_CALLS_H

#include <stdint.h>

#include "com.h"
#include "config.h"
#include "settings.h"

/* agent_config.calls: what is recorded. */
enum {
    CALLS_MODE_OFF = DNP_CALLS_OFF,
    CALLS_MODE_TIMED = DNP_CALLS_TIMED,       /* timed: counts and times per call path, each call timed */
    CALLS_MODE_ARGS = DNP_CALLS_ARGS,         /* args: and every call with its arguments (slow path) */
    CALLS_MODE_TIMELINE = DNP_CALLS_TIMELINE, /* timeline: and every enter and leave */
    CALLS_MODE_COUNTS = DNP_CALLS_COUNTS,     /* counts: counts and call paths, no clock */
    CALLS_MODE_SAMPLED = DNP_CALLS_SAMPLED,   /* DNP_ENV_CALLS=1: counts as counts does, CPU times
                                                 from samples of the shadow stack (calls_sampled.c) */
};

/* Adds to the event mask what cfg->calls needs (before SetEventMask). 0, or -1
 * after saying why. Nothing when cfg->calls is 0. */
int calls_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* Installs the function ID mapper and the enter/leave hooks (after SetEventMask,
 * inside Initialize). 0, or -1 after saying why. */
int calls_install(void);

/* The runtime left a frame by an exception (ExceptionUnwindFunctionLeave). The
 * frame is gone without a Leave; which of the shadow stack's frames are dead is
 * decided by their caller SPs at the thread's next call or return (calls.c):
 * this only notes the time, so that a dead frame ends when it was unwound. */
void calls_unwind_leave(void);

/* --calls (CALLS_MODE_SAMPLED): the rate of the samples that give the calls'
 * times (the sampler's signals, sampler.c), 0 when the times are not sampled. */
unsigned calls_sample_rate(void);

/* A sample's signal on the interrupted thread (calls_sampled.c): r its
 * registers (arch.h), ns the time it stands for. Async-signal-safe. */
struct arch_regs;
void calls_sample(const struct arch_regs *r, uint64_t ns);

/* Shutdown: writes every thread's call tree (CallNode events), then stops. */
void calls_shutdown(void);

/* Whether a function named name ("Namespace.Class::Method") is hooked: not if it
 * matches a glob of exclude; if include is not empty, when it matches one of its
 * globs; else everything with all_code, else the program's own code only (not
 * framework: a module of the shared framework, nor System.*, Microsoft.*,
 * Internal.*, Interop*). Globs are comma-separated, '*' and '?'. */
int calls_filter_wants(const char *name, int all_code, const char *include, const char *exclude,
                       int framework);

/* Whether calls are recorded (after calls_configure; calls_install may still
 * refuse). */
int calls_recording(void);

/* Whether calls of function fid are hooked (or would be, when the runtime
 * maps it): the mapper's answer if it was asked, else the filters' (the
 * function's name, its module). Takes the mapper's lock; not for the hooks. */
int calls_is_hooked(uint64_t fid);

/* Each window's end (windows.h, the window thread): every thread's nodes
 * whose calls changed since the last, with the change, and their callers. */
void calls_window_flush(void);

#endif
