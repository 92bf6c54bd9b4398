/* synth.h: synthetic traces for the tests, written with the writer API the way
 * the agent writes them: strings, threads and the process in the meta stream,
 * each thread's events in chunks of its own, times as deltas. */
#ifndef DNP_SYNTH_H
#define DNP_SYNTH_H

#include <stdint.h>

#include "trace_format.h"

typedef struct synth synth;

/* Creates the trace at path for process pid; NULL (with a line) on failure. */
synth *synth_open(const char *path, uint64_t pid, const char *cmdline);
/* A new string number for text. */
uint64_t synth_string(synth *s, const char *text);
/* Thread ordinal (>= 1) is OS thread os_tid. */
void synth_thread(synth *s, uint32_t ordinal, uint64_t os_tid);
/* One event of thread ordinal at time_ns after the start (non-decreasing per
 * thread); vals holds dnp_events[kind].nvalues values. */
void synth_event(synth *s, uint32_t ordinal, uint64_t time_ns, dnp_event_kind kind, const uint64_t *vals);
/* Writes everything out, with an END record when complete; frees s. 0 or -1. */
int synth_close(synth *s, int complete);

#endif
