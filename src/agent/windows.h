/* windows.h: continuous profiling (dnprof run --every, DNP_ENV_EVERY,
 * docs/production.md). Every window the agent writes what it added up during
 * that window, and nothing else, as a small complete trace of its own,
 * window-PID-NNNNNN.trace, in the window directory: its own strings, a PROCESS
 * record whose start is the window's, a Window event (index, start, duration,
 * windows dropped so far), then the window's events. The front end (or
 * `dnprof push`) reads each file, ships it and deletes it. The agent never
 * waits for it: at most DNP_ENV_WINDOW_KEEP windows wait; past that the oldest
 * is deleted and counted. No network, no blocking of the program's threads.
 *
 * A module joins in one of two ways (or both):
 *   window_register_flush(fn)   fn runs on the window thread at every window's
 *                               end, before the window is closed: it adds what
 *                               it holds for the window with window_event()
 *                               (the sampler: each call path's samples in the
 *                               window; the allocations: flush their tables).
 *   window_register_event(kind) every event of that kind that the agent records
 *                               (rec_event) goes into the current window too:
 *                               sums "since the last" (AllocSite) or single
 *                               events (ExceptionThrown) that the front end adds.
 * Both are called before windows_start (the modules' start functions). */
#ifndef DNP_WINDOWS_H
#define DNP_WINDOWS_H

#include <stdint.h>

#include "config.h"
#include "trace_format.h"

typedef void (*window_flush_fn)(void);

/* At most this many flush functions. */
#define WINDOW_MAX_HOOKS 16
/* What a window may hold (events, and the strings they name, each): past it,
 * events are left out and counted in the Window event's lost. */
#define WINDOW_MAX_BYTES (8u << 20)

void window_register_flush(window_flush_fn fn);
void window_register_event(dnp_event_kind kind);

/* Adds one event to the current window; string numbers (STR fields, entity
 * names) are the main trace's, copied into the window's own. Any thread; does
 * nothing while no window is open. */
void window_event(dnp_event_kind kind, const uint64_t *vals, unsigned n);

/* Whether events of kind go into the window as they are recorded (recorder.c). */
extern unsigned char window_taps[DNP_EV_COUNT];
static inline int window_tapped(dnp_event_kind kind) {
    return __atomic_load_n(&window_taps[kind], __ATOMIC_RELAXED);
}

/* Starts the window thread when cfg->every_ms is set (0 otherwise, and when it
 * cannot start: said once, the rest records). */
int windows_start(const agent_config *cfg, const char *cmdline, const char *runtime, int attached);
/* Closes the last window (what it holds so far) and stops the thread. */
void windows_stop(void);

#endif
