/* eventpipe.h: the agent's one in-process EventPipe session, shared by every
 * module that reads the runtime's own events (sampled allocations today; lock
 * contention, GC statistics and the thread pool join the same way).
 *
 * A module asks, before SetEventMask, for the runtime provider's events under
 * some keywords at some level (ep_want). After SetEventMask, ep_start opens one
 * session for all of them: the keywords are OR'ed and the level is the highest
 * asked for, so a module sees events it did not ask for and picks its own by
 * event id. Each event reaches every module's handler on the thread the runtime
 * delivers it on (ICorProfilerCallback10::EventPipeEventDelivered): for most
 * events, the thread that did what the event says (allocated, waited, ...).
 *
 * Why one session: the callback does not say which session an event belongs
 * to, so two sessions that both enable an event would deliver it twice. */
#ifndef DNP_EVENTPIPE_H
#define DNP_EVENTPIPE_H

#include <stdint.h>

#include "com_types.h"
#include "prof_structs.h"

/* The runtime provider ("Microsoft-Windows-DotNETRuntime"): the keywords in
 * its manifest (src/coreclr/vm/ClrEtwAll.man). */
#define EP_KEYWORD_GC 0x1ull
#define EP_KEYWORD_CONTENTION 0x4000ull
#define EP_KEYWORD_THREADING 0x10000ull
#define EP_KEYWORD_ALLOCATION_SAMPLING 0x80000000000ull
#define EP_KEYWORD_WAIT_HANDLE 0x40000000000ull

typedef struct ep_event {
    DWORD id, version;
    const BYTE *data;
    ULONG len;
    ULONG nframes;         /* 0 on .NET 10's in-process sessions */
    const UINT_PTR *frames;
    EVENTPIPE_PROVIDER provider; /* a consumer gets its own provider's events only */
    const BYTE *meta;      /* the event's metadata (its name, its fields' names and types) */
    ULONG meta_len;
} ep_event;

typedef struct ep_consumer {
    const char *what; /* "sampled allocations": in messages and notes */
    uint64_t keywords;
    unsigned level;   /* COR_PRF_EVENTPIPE_INFORMATIONAL, ... */
    void (*event)(const ep_event *e);
    void (*started)(void); /* the session runs (NULL: nothing to do) */
    void (*flush)(void);   /* write out what was added up: at stop and at exit (NULL: nothing) */
    /* NULL: the runtime's provider ("Microsoft-Windows-DotNETRuntime"); else
     * another provider by name (a managed EventSource, such as "System.Runtime"),
     * with its arguments ("EventCounterIntervalSec=1", NULL none). At most
     * EP_MAX_OTHER such providers; consumers of one provider share the first's
     * arguments. */
    const WCHAR *provider;
    const WCHAR *args;
    /* writes out sums a second old (agg_flush_stale), now and then, and says how many tables still
     * hold sums (NULL: none) */
    unsigned (*stale)(void);
} ep_consumer;

#define EP_MAX_OTHER 2

/* Before SetEventMask: c (static, it is kept) joins the next session, and the
 * EventPipe bit goes into *mask_high. 0, or -1 after saying why (the runtime
 * has no in-process EventPipe: before .NET 5). */
int ep_want(ep_consumer *c, uint32_t *mask_high);

/* The runtime's major version (8, 9, 10: which events and payload versions
 * come), 0 when the runtime does not say. */
int ep_runtime_major(void);

/* Forgets every consumer (a new attach configures the agent again). */
void ep_reset(void);

/* After SetEventMask: starts the session for every consumer, then calls their
 * started(). 0 (also when nobody asked), or -1 after saying why. */
int ep_start(void);

/* Whether c's events flow (c asked and the session runs). */
int ep_running(const ep_consumer *c);

/* From EventPipeEventDelivered: hands the event to every consumer of its
 * provider (the session also gets EventPipe's own, such as its ProcessInfo, id
 * 1 like GCStart, as it ends: nobody's); 1 when the session is ours (the event
 * is not logged as such), 0 otherwise. */
int ep_deliver(const ep_event *e);

/* At Shutdown or detach: stops the session, then flushes every consumer. */
void ep_stop(void);

/* Flushes every consumer whose events flow (the process is about to end). */
void ep_flush_all(void);

/* Each consumer's stale sums written out (its stale function): from the trace
 * writer's thread, about every flush period (recorder_set_tick). Nonzero while
 * some sums wait to go stale: the writer does not go idle on them. */
int ep_flush_stale(void);

/* ---- reading a payload: little-endian, packed, bounds-checked ---- */

typedef struct ep_reader {
    const BYTE *p;
    ULONG len, pos;
    int bad; /* a read went past the end: every later read gives 0 */
} ep_reader;

static inline ep_reader ep_read(const ep_event *e) {
    ep_reader r = {e->data, e->len, 0, 0};
    return r;
}

/* The next n bytes (n <= 8) as an unsigned number. */
static inline uint64_t ep_get(ep_reader *r, unsigned n) {
    if (r->bad || r->len - r->pos < n) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)r->p[r->pos + i] << (8 * i);
    r->pos += n;
    return v;
}

static inline uint64_t ep_get_ptr(ep_reader *r) { return ep_get(r, sizeof(void *)); }

/* Skips the NUL-terminated UTF-16 string at the reader; returns where it
 * starts and its length in code units. */
static inline const BYTE *ep_get_wstr(ep_reader *r, size_t *units) {
    const BYTE *s = r->p + r->pos;
    size_t n = 0;
    while (!r->bad && r->len - r->pos >= 2) {
        int end = r->p[r->pos] == 0 && r->p[r->pos + 1] == 0;
        r->pos += 2;
        if (end) {
            *units = n;
            return s;
        }
        n++;
    }
    r->bad = 1;
    *units = 0;
    return s;
}

/* Bytes left after what was read. */
static inline ULONG ep_left(const ep_reader *r) { return r->bad ? 0 : r->len - r->pos; }

#endif
