/* report.h: `dnprof report` (cmd_report.c): what a trace adds up to, for a
 * person or, with --json, for tools. One function per kind of report. */
#ifndef DNP_REPORT_H
#define DNP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "trace_reader.h"

struct dnp_calltree;
typedef struct traced_set traced_set;

/* ---- calls: top functions, hottest paths, the call tree (report_calls.c) ---- */
typedef struct report_opts {
    const char *path;   /* the trace file, for the header */
    unsigned top;       /* --top N */
    int tree;           /* --tree */
    double threshold;   /* --threshold: percent of the total below which the tree is pruned */
    int has_thread;     /* --thread given: */
    uint64_t thread;    /* dnprof's thread number or an OS thread id */
    int json;           /* --json */
    const traced_set *traced; /* --trace's methods, shown after the calls; NULL: none */
} report_opts;

/* The call trees of a trace, for report and convert: streamed (memory bounded by
 * the trees, not the events), or, when DNP_ENV_NO_STREAM is set in the
 * environment (the in-memory path, for comparison) or when the trees' timeline
 * must be read again (reread) from a file that cannot be (a pipe), loaded
 * whole. */
typedef struct calls_input {
    dnp_trace *t;          /* loaded whole, or NULL */
    dnp_trace_stream *s;   /* streamed, or NULL */
    struct dnp_calltree *ct;
    int streamed;
} calls_input;

/* Reads path's call trees and warns when the trace is not complete. Returns 0,
 * or 1 (the exit code) after saying why. */
int calls_open(const char *path, int reread, calls_input *in);
void calls_close(calls_input *in);

/* What a report adds up, one event at a time: 0, or non-zero when out of memory. */
typedef int (*report_feed)(void *ctx, const dnp_trace *t, const dnp_trace_event *e);

/* Streams path's events into feed. Returns 0, or 1 after saying why (the file
 * cannot be read, a damaged chunk, out of memory). keep: the stream, left open
 * for the caller to close (its trace holds the strings), or NULL to close it
 * here. warn: say when the trace is not complete (once per command). */
int report_read_events(const char *path, report_feed feed, void *ctx, dnp_trace_stream **keep, int warn);

/* Warns when the trace at path is not complete, and (lost) when the agent
 * could not record some of its events. */
void report_warn_trace(const char *path, const dnp_trace *t, int lost);

/* When ct has no call data and the trace says why (recorded with --sample or
 * --calls and cut short or empty, or holding allocations instead), says so in
 * one line and returns 1; else 0, and says nothing (report_nodata.c). */
int calls_say_why_none(const struct dnp_calltree *ct, const char *path);
/* What else a trace without call data holds (dnp_calltree.holds), as "; it
 * holds GC statistics: dnprof report --gc; ..." to end a line with, or "". */
const char *report_holds_text(unsigned holds, char *buf, size_t cap);
/* The process of a trace as a report names it: "4242", or "1 (pid 5221 on the
 * host)" for one in a container attached to from the host. */
const char *report_process_label(const dnp_trace *t, char *buf, size_t cap);
/* The command that recorded a trace, to ask again with a flag: "dnprof run",
 * or "dnprof attach PID" for one recorded by attach (attached: its pid; 1 when
 * not known, "PID" then; 0 not attached). */
const char *report_recording_cmd(int attached, char *buf, size_t cap);
/* The --sample word of a trace's mode ("cpu", "wall", "suspend"; "?" for none). */
const char *report_sample_word(uint64_t mode);
/* ',"recorded":{...}' (or null): the calls options, sampling, async stacks and
 * allocation sampling the trace's config events say were recorded. */
void report_json_recorded(const struct dnp_calltree *ct, FILE *out);

/* Writes the calls report of ct to out. Returns the exit code: 0, or 1 after
 * saying why (no call data, no such thread, output failed). */
int report_calls(const struct dnp_calltree *ct, const report_opts *o, FILE *out);

/* The native frames that start every thread (no time of their own, never
 * under a managed frame: the host, libc's start), taken out of f (report_roots.c):
 * how many. For the "by total" table of sampled stacks. */
struct dnp_ct_tree;
struct dnp_ct_func;
size_t report_drop_roots(const struct dnp_ct_tree *tr, struct dnp_ct_func *f, size_t nf);

/* ---- exceptions (issue 4, report_exceptions.c): return the exit code ----
 * Both read the trace at path as a stream (DNP_ENV_NO_STREAM: loaded whole),
 * memory bounded by the stories, and warn when it is not complete. */
int report_exceptions(const char *path, int json, unsigned top, FILE *out); /* top: rows per table, 0 all */
/* Each exception's story in order (dnprof print --exceptions); --json: one object a line. */
int print_exceptions(const char *path, int json, FILE *out);

/* ---- recorded stacks (report_stack.c), for the allocation and lock reports ----
 * A stack's text is the agent's: its frames innermost first, one a line. */
/* part of whole in percent (0 when whole is 0). */
double report_pct(uint64_t part, uint64_t whole);
/* A duration, three figures, as every report writes them: "1.32 s", "650 ms",
 * "3.40 us" (buf: 32 bytes); buf. */
const char *report_fmt_ns(uint64_t ns, char *buf);
/* The trace's string id, or none when it has none or it is empty. */
const char *report_string(const dnp_trace *t, uint64_t id, const char *none);
/* One frame (the n bytes at raw) named as the call and sample reports name it,
 * into out; out. */
const char *report_frame_name(const char *raw, size_t n, char *out, size_t cap);
/* The frames of a stack as a JSON array of names; raw: as recorded. */
void report_json_frames(FILE *out, const char *text, int raw);
/* The first 12 frames of a stack, one a line, indented ("..." when there are
 * more; "[no managed stack]" when there are none). */
void report_print_stack(FILE *out, const char *text);

/* ---- sampled allocations (issue 8, report_alloc.c) ---- */
typedef struct alloc_profile alloc_profile;
/* Reads path's AllocSample events (streamed) and warns when the trace is not
 * complete. Returns 0, or 1 (the exit code) after saying why. */
int alloc_open(const char *path, alloc_profile **out);
void alloc_free(alloc_profile *p);
int alloc_has_data(const alloc_profile *p);
/* The allocations as a call tree weighted in bytes (the type is the leaf frame),
 * owned by p; NULL when out of memory. */
const struct dnp_calltree *alloc_calltree(alloc_profile *p);
/* By type and by allocating path; o->top, o->json. Returns the exit code. */
int report_alloc(alloc_profile *p, const report_opts *o, FILE *out);

/* ---- lock contention (issue 17, report_locks.c) ---- */
typedef struct locks_profile locks_profile;
struct dnp_export_opts;
/* Reads path's LockSite and LockWait events (streamed) and warns when the trace
 * is not complete. Returns 0, or 1 (the exit code) after saying why. */
int locks_open(const char *path, locks_profile **out);
void locks_free(locks_profile *p);
/* The trace was recorded with --locks (it may hold no contention). */
int locks_has_data(const locks_profile *p);
/* The waiting stacks as a call tree weighted in nanoseconds waited (the lock as
 * the leaf frame), owned by p; NULL when out of memory. */
const struct dnp_calltree *locks_calltree(locks_profile *p);
/* Hands the recorded waits (LockWait) to the Chrome export as slices; their count. */
size_t locks_slices(locks_profile *p, struct dnp_export_opts *eo);
/* Totals, by lock, by waiting site, by owner, the top stacks; o->top, o->json.
 * Returns the exit code ("no contention" is not an error). */
int report_locks(locks_profile *p, const report_opts *o, FILE *out);
/* ---- GC pauses and thread-pool starvation (issue 17, report_gc.c, report_threadpool.c) ----
 * Both stream the trace at path and return the exit code. */
/* report_gc: top 0 lists every collection, else the top longest pauses (text). */
int report_gc(const char *path, int json, size_t top, FILE *out);
/* Where the time waited went (report_waits.c): locks, GC pauses, starvation and
 * blocked stacks from wall samples, each part that is not recorded named with
 * its flag; top: the stacks shown. The exit code. */
int report_waits(const char *path, int json, unsigned top, FILE *out);
int report_threadpool(const char *path, int json, unsigned top, FILE *out); /* top: stacks shown */

/* The pool's threads added for want of them, from its changes of the worker
 * count (ThreadPoolAdjustment, in time order): by starvation (reason 6: work
 * waited and no pool thread finished one), and for pool threads blocked in a
 * task's Wait, Result or GetAwaiter().GetResult() (reason 8, cooperative
 * blocking: sync over async; the count goes up for each blocked thread and
 * back down as they return, so its raises and its peak are kept, not a sum). */
#define REPORT_TP_STARVATION 6u
#define REPORT_TP_BLOCKING 8u
typedef struct report_tp_tally {
    uint64_t starved;         /* starvation injections */
    uint64_t blocking_raises; /* raises of the count for blocked threads */
    uint64_t blocking_peak;   /* the highest count such a raise reached */
    uint64_t workers;         /* the count after the last change, 0 before any */
} report_tp_tally;
/* Counts one change; the threads it added for want of them (0 if none). */
uint64_t report_tp_count(report_tp_tally *t, uint64_t reason, uint64_t workers);
/* The pool's queue, as its counters said it once a second (ThreadPoolCounters). */
typedef struct report_tp_queue {
    uint64_t seconds;   /* the counters read */
    uint64_t queued;    /* of them, with work in the queue */
    uint64_t queue_sum; /* the queue's lengths, summed */
    uint64_t completed; /* the items completed, summed */
} report_tp_queue;
/* Adds one ThreadPoolCounters event's queue length and items completed. */
void report_tp_queue_add(report_tp_queue *q, uint64_t queue, uint64_t completed);
/* How long an item waited in the queue, on average, by Little's law: the
 * queue's mean length over the items completed per second; ns, UINT64_MAX
 * when none completed. */
uint64_t report_tp_wait_ns(const report_tp_queue *q);
/* A saturated pool, with no injection for starvation: work waited in its
 * queue in at least two of the seconds and at least half of them, and long
 * (REPORT_TP_SATURATED_NS an item at least: a busy pool's queue that holds an
 * item or two for a moment is not that) (report --threadpool and --waits say
 * it alike). */
#define REPORT_TP_SATURATED_NS 50000000ull
int report_tp_saturated(const report_tp_queue *q);

/* ---- traced methods (dnprof run/attach --trace, report_traced.c) ---- */
/* Reads path's TracedMethod and TracedCalls events into *out (maybe empty).
 * 0, or 1 after saying why. */
int traced_read(const char *path, traced_set **out);
size_t traced_count(const traced_set *s);
void traced_free(traced_set *s);
/* System.Threading.Lock's slow path, timed by a probe (traced for --locks from
 * start-up on .NET 9+, docs/waits.md): the contended acquisitions, spinning
 * included, which the runtime's events report only when they block. */
typedef struct traced_lock {
    int known;
    uint64_t calls, ns, max_ns; /* the probe's calls, and the runtime's waits of before it ran */
} traced_lock;
/* NULL when the trace did not time it. */
const traced_lock *traced_lock_slow_path(const traced_set *s);
/* The same read from the trace at path (out->known 0: not timed); -1 when it cannot be read. */
int traced_lock_read(const char *path, traced_lock *out);
/* Lock's contention from the runtime's events (*count, *ns) made the probe's
 * where the probe saw more: its acquisitions include the events' ones. */
void traced_lock_merge(const traced_lock *l, uint64_t *count, uint64_t *ns);
/* The section of the text report (top: rows, 0 all), the "traced" member of the JSON one. */
void traced_text(const traced_set *s, unsigned top, FILE *out);
void traced_json(const traced_set *s, FILE *out);
/* The report of a trace with traced methods and no calls: the exit code. */
int report_traced_only(const traced_set *s, const report_opts *o, FILE *out);

#endif
