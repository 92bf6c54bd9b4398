/* trace_reader.h: reading a trace file, whole into memory (dnp_trace_load), or
 * as a stream of events in file order with memory bounded by one chunk
 * (dnp_trace_stream_*).
 *
 * The reader never trusts the file: every size and number is checked, and a file
 * that ends in the middle of a chunk (a killed process) or holds a chunk whose
 * checksum fails is read up to its last whole chunk and marked as such. */
#ifndef DNP_TRACE_READER_H
#define DNP_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

typedef struct dnp_trace_event {
    uint64_t time_ns; /* since the trace began */
    uint32_t thread;  /* thread ordinal, see dnp_trace_thread */
    uint16_t kind;    /* dnp_event_kind; an unknown kind is dropped with a note */
    uint8_t nvalues;
    uint64_t v[DNP_MAX_VALUES]; /* dnp_events[kind] says what each value is */
} dnp_trace_event;

typedef struct dnp_trace_thread {
    uint32_t ordinal;    /* 1, 2, ... in order of first event */
    uint64_t os_tid;
    uint64_t managed_id; /* ThreadID from ThreadAssignedToOSThread, 0 if never seen */
    const char *name;    /* from ThreadNameChanged, NULL if never named */
} dnp_trace_thread;

typedef struct dnp_trace_note {
    uint64_t time_ns;
    uint32_t thread;
    uint32_t level; /* 0 info, 1 warning, 2 error */
    const char *text;
} dnp_trace_note;

typedef enum dnp_trace_status {
    DNP_TRACE_COMPLETE,  /* the agent saw Shutdown (or detach) and said so */
    DNP_TRACE_OPEN,      /* whole chunks only, but no end: the process did not shut down */
    DNP_TRACE_TRUNCATED, /* the file ends inside a chunk */
    DNP_TRACE_CORRUPT    /* a chunk failed its checks; read up to it */
} dnp_trace_status;

typedef struct dnp_trace {
    uint16_t major, minor;
    uint64_t pid, ppid;
    uint64_t host_pid; /* attached in another PID namespace: the pid on the host (0: none); 1.6 */
    uint64_t start_realtime_ns; /* wall clock when the agent started */
    const char *cmdline;
    const char *runtime; /* the runtime, for display: "CoreCLR 10.0.12.0 (10.0.12)" */
    int attached;

    dnp_trace_event *events; /* sorted by time; order kept for equal times on one thread */
    size_t nevents;
    dnp_trace_thread *threads; /* threads[i].ordinal == i + 1 */
    size_t nthreads;
    dnp_trace_note *notes;
    size_t nnotes;
    uint64_t lost;           /* events the agent could not record */
    uint64_t end_events;     /* the count the END record gives (complete traces) */

    dnp_trace_status status;
    char status_text[256]; /* one line: why the trace is not complete, empty when it is */
    uint64_t file_bytes;
    uint64_t bytes_read;   /* up to the last whole chunk */

    struct dnp_trace_private *priv;
} dnp_trace;

/* The process's pid as dnprof on the host knows it: host_pid for a process
 * in another PID namespace (a container), else its own (0: not known). */
static inline uint64_t dnp_trace_host_pid(const dnp_trace *t) {
    return t->host_pid ? t->host_pid : t->pid;
}

/* Loads the trace at path. Returns 0 and a trace (check status), or -1 with a
 * one-line reason in err: cannot open, empty, not a dnprof trace, a newer major
 * version, no memory. */
int dnp_trace_load(const char *path, dnp_trace **out, char *err, size_t errlen);

/* The string with number id, or NULL when the trace has none (0 or missing). */
const char *dnp_trace_string(const dnp_trace *t, uint64_t id);

/* The thread with this ordinal, or NULL. */
const dnp_trace_thread *dnp_trace_thread_get(const dnp_trace *t, uint32_t ordinal);

void dnp_trace_free(dnp_trace *t);

/* ---- streaming ----
 *
 * The events one at a time in FILE order, which is time order within one
 * thread (a thread's chunks are written in order) but not across threads. Times
 * are absolute (CLOCK_MONOTONIC ns): subtract dnp_trace_stream_origin() for the
 * loader's times. The file is read one chunk at a time (at most 16 MiB), with
 * the same checks, status and messages as dnp_trace_load.
 *
 * dnp_trace_stream_trace() is a dnp_trace without events (nevents 0) that fills
 * in as the stream is read: strings as their STRING records are read (the agent
 * writes them before the chunks that use them), threads' ordinals and OS tids,
 * the process. When the first pass has ended (next returned 0) it is final: the
 * status, notes (texts, relative times, the notes on skipped records), threads'
 * managed ids and names, cmdline and runtime. A string pointer it gives stays
 * valid until the next call of next during the first pass, then for good. */
typedef struct dnp_trace_stream dnp_trace_stream;

/* Opens path and checks its header. Returns 0, or -1 with the same one-line
 * reasons as dnp_trace_load. */
int dnp_trace_stream_open(const char *path, dnp_trace_stream **out, char *err, size_t errlen);

/* The next event: 1 and *e, 0 at the end (the status set), or -1 when reading
 * failed (dnp_trace_stream_error says why: an I/O error, no memory). */
int dnp_trace_stream_next(dnp_trace_stream *s, dnp_trace_event *e);

const dnp_trace *dnp_trace_stream_trace(const dnp_trace_stream *s);

/* 1 once the first pass has ended: the trace is final. */
int dnp_trace_stream_finished(const dnp_trace_stream *s);

/* The time that dnp_trace_load's times are relative to: the PROCESS record's
 * monotonic time, or the smallest chunk base. Final once the first pass ended. */
uint64_t dnp_trace_stream_origin(const dnp_trace_stream *s);

/* Reads the events again from the start, only those of thread ordinal
 * only_thread (0: all); the chunks of other threads are skipped unread. Ends the
 * first pass first if it has not ended. A later pass stops where the first one
 * did and records nothing. A regular file only (not a pipe: see
 * dnp_trace_stream_rereadable). Returns 0 or -1. */
int dnp_trace_stream_rewind(dnp_trace_stream *s, uint32_t only_thread);
int dnp_trace_stream_rereadable(const dnp_trace_stream *s);

/* Bytes of the file read so far, and of the whole pass. */
void dnp_trace_stream_progress(const dnp_trace_stream *s, uint64_t *done, uint64_t *total);

/* Why the last call failed: one line. */
const char *dnp_trace_stream_error(const dnp_trace_stream *s);

/* Closes the file and frees the stream and its trace (NULL-tolerant). */
void dnp_trace_stream_close(dnp_trace_stream *s);

#endif
