/* recorder.h: the agent's side of the trace: per-thread buffers, interned
 * strings, and a background writer that flushes by size and by time, so that a
 * process that never reaches Shutdown (docs/design-notes.md#no-clean-shutdown) loses at most about the last
 * flush period. Every function here is safe to call from any thread at any time; once
 * the recorder is closed or has failed, they do nothing. */
#ifndef DNP_RECORDER_H
#define DNP_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* The default flush period: a kill -9 loses about this much of the recording. */

typedef struct recorder_options {
    const char *path;     /* the trace file */
    int exclusive;        /* fail rather than replace an existing file */
    unsigned flush_ms;    /* background flush period while events come; 0: DNP_ENV_FLUSH_MS's default */
    const char *alt;      /* created, exclusively, when path cannot be (NULL or "": none); path then points to it */
} recorder_options;

/* Opens the trace and starts the background writer. 0, or -1 after saying why. */
int recorder_open(recorder_options *opt);

/* Writes what is buffered, an END record, closes the trace: the trace is complete. */
void recorder_close(void);

/* After recorder_close, when no callback can run any more (a detach): frees the
 * thread buffers and the writer, and removes the thread-exit hook, so that the
 * library can be unloaded. A later recorder_open starts a new trace (every
 * interned string and every thread is defined again in it). */
void recorder_release(void);

/* Flushes every buffer now (a process about to die without Shutdown). */
void recorder_flush_all(void);

/* fn is called from the trace writer's thread at each of its wakes (every
 * flush period while events come or fn says sums wait, at most a second apart
 * when idle), before it writes: for sums that must not wait for the end
 * (ep_flush_stale). fn returns nonzero while it holds sums it will write at a
 * later wake: the writer does not go idle then. */
void recorder_set_tick(int (*fn)(void));

/* Sums were put aside that the tick will write (agg_add's first into an empty
 * table): an idle writer comes back within a flush period, not a second. */
void recorder_wake(void);

/* Monotonic nanoseconds. */
uint64_t recorder_now(void);

/* Records one event of this thread with its values (dnp_events[kind].nvalues). */
void rec_event(dnp_event_kind kind, const uint64_t *vals, unsigned n);

/* Records the process description (once, at Initialize); host_pid: its pid on
 * the host when attached to in another PID namespace, else 0. */
void rec_process(uint64_t start_mono_ns, uint64_t start_real_ns, const char *cmdline,
                 const char *runtime, int attached, unsigned host_pid);

/* A note for whoever reads the trace (level 0 info, 1 warning, 2 error). */
void rec_note(unsigned level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The number of an interned UTF-8 string (len bytes), defining it in the trace
 * the first time it is seen. 0 for NULL or on failure. */
uint32_t rec_string(const char *s, size_t len);

/* Calls fn with the bytes of string number id (under a lock: fn copies what it
 * keeps and records nothing). 0, or -1 when no such string was interned. */
int rec_string_text(uint32_t id, void (*fn)(void *ctx, const char *s, size_t len), void *ctx);

/* Events recorded so far. */
uint64_t recorder_events(void);

#endif
