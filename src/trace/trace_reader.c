/* trace_reader.c: reading a trace file (docs/trace-format.md): whole, into
 * memory (dnp_trace_load), or as a stream of events in file order.
 *
 * The file is read chunk by chunk, one chunk in memory at a time; the loader and
 * the stream share the walk and the record parser. Nothing in it is
 * trusted: every size is checked against what is left, a torn last chunk ends
 * the walk as TRUNCATED, a chunk that fails its checks ends it as CORRUPT, and
 * what cannot be understood inside a good chunk (unknown tags, unknown event
 * kinds, short records) is skipped and counted in a note. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dnp_free.h"
#include "dnp_vec.h"
#include "trace_reader.h"
#include "time_runs.h"
#include "u64map.h"

#define MAX_STRING_ID (1ull << 28)
#define MAX_THREADS (1u << 22)
#define MAX_HEADER_SIZE (1u << 16)

/* ---- the trace's private part: its strings ---- */

struct dnp_trace_private {
    char *arena; /* NUL-terminated strings, back to back */
    size_t arena_len, arena_cap;
    dnp_u64map strings; /* string id -> offset in arena */
};

/* Copies s[0..len) into the arena. Returns its offset, or -1 without memory. */
static int64_t arena_add(struct dnp_trace_private *pv, const void *s, size_t len) {
    if (DNP_VEC_RESERVE(pv->arena, pv->arena_cap, pv->arena_len + len + 1, 4096) != 0)
        return -1;
    size_t off = pv->arena_len;
    if (len)
        memcpy(pv->arena + off, s, len);
    pv->arena[off + len] = 0;
    pv->arena_len += len + 1;
    return (int64_t)off;
}

const char *dnp_trace_string(const dnp_trace *t, uint64_t id) {
    uint64_t off;
    if (!t || !t->priv || !dnp_u64map_get(&t->priv->strings, id, &off))
        return NULL;
    return t->priv->arena + off;
}

const dnp_trace_thread *dnp_trace_thread_get(const dnp_trace *t, uint32_t ordinal) {
    if (!t || ordinal == 0 || ordinal > t->nthreads)
        return NULL;
    return &t->threads[ordinal - 1];
}

void dnp_trace_free(dnp_trace *t) {
    if (!t)
        return;
    DNP_FREE_ALL(t->events, t->threads, t->notes);
    if (t->priv) {
        free(t->priv->arena);
        dnp_u64map_release(&t->priv->strings);
        free(t->priv);
    }
    free(t);
}

_Static_assert(offsetof(dnp_trace_event, time_ns) == 0, "sort_runs reads the time first");
_Static_assert(offsetof(dnp_trace_note, time_ns) == 0, "sort_runs reads the time first");

/* ---- reading: one chunk at a time ----
 *
 * The file is read with read(2), chunk by chunk, into one buffer (a payload is at
 * most 16 MiB), and each chunk's records are parsed one at a time. The loader
 * keeps every event (KEEP_ALL) and sorts them at the end; a stream hands them
 * out in file order and keeps only the few thread events that name threads. */

enum { KEEP_THREADS, KEEP_ALL };

typedef struct loader {
    dnp_trace *t;
    int keep;            /* KEEP_ALL or KEEP_THREADS */
    int replay;          /* a stream's later pass: parse, hand out events, record nothing */
    uint64_t payload_off; /* file offset of the payload being parsed */
    const uint8_t *payload;
    size_t nev;          /* events parsed so far (the first pass) */
    size_t ev_cap, note_cap;
    uint64_t *note_ids;  /* the text string id of each note, parallel to t->notes */
    dnp_runs ev_runs, note_runs;
    int have_process;
    uint64_t proc_mono, cmdline_id, runtime_id;
    int have_base;
    uint64_t min_base, origin;
    int seen_end;
    uint64_t unknown_kinds, short_events, malformed;
    uint32_t max_thread; /* the largest thread ordinal the file can hold (thread_limit) */
} loader;

enum { REC_NONE = 0, REC_EVENT = 1, REC_CORRUPT = 2 };

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int ensure_thread(loader *L, uint32_t ordinal) {
    dnp_trace *t = L->t;
    if (ordinal <= t->nthreads)
        return 0;
    dnp_trace_thread *nt = realloc(t->threads, (size_t)ordinal * sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = t->nthreads; i < ordinal; i++) {
        memset(&nt[i], 0, sizeof nt[i]);
        nt[i].ordinal = (uint32_t)(i + 1);
    }
    t->threads = nt;
    t->nthreads = ordinal;
    return 0;
}

static dnp_trace_event *push_event(loader *L) {
    dnp_trace *t = L->t;
    if (t->nevents == L->ev_cap) {
        size_t ncap = L->ev_cap ? L->ev_cap + L->ev_cap / 2 : 4096;
        dnp_trace_event *ne = realloc(t->events, ncap * sizeof *ne);
        if (!ne)
            return NULL;
        t->events = ne;
        L->ev_cap = ncap;
    }
    return &t->events[t->nevents++];
}

static int push_note(loader *L, uint64_t time, uint32_t thread, uint32_t level, uint64_t text_id) {
    dnp_trace *t = L->t;
    if (t->nnotes == L->note_cap) {
        size_t ncap = L->note_cap ? L->note_cap * 2 : 16;
        dnp_trace_note *nn = realloc(t->notes, ncap * sizeof *nn);
        if (!nn)
            return -ENOMEM;
        t->notes = nn;
        uint64_t *ni = realloc(L->note_ids, ncap * sizeof *ni);
        if (!ni)
            return -ENOMEM;
        L->note_ids = ni;
        L->note_cap = ncap;
    }
    t->notes[t->nnotes] = (dnp_trace_note){.time_ns = time, .thread = thread, .level = level};
    L->note_ids[t->nnotes] = text_id;
    t->nnotes++;
    return 0;
}

/* Reads up to max varints of [*p, end) into v; returns how many were read. */
static unsigned get_values(const uint8_t *p, const uint8_t *end, uint64_t *v, unsigned max) {
    unsigned n = 0;
    while (n < max && dnp_varint_get(&p, end, &v[n]) == 0)
        n++;
    return n;
}

/* now + delta, saturated: times never go back within a chunk, as sort_runs needs. */
static inline uint64_t later(uint64_t now, uint64_t delta) {
    return now + delta < now ? UINT64_MAX : now + delta;
}

/* An EVENT record's body [q, bend): REC_EVENT with *e filled, REC_NONE for one
 * skipped, or -ENOMEM. */
static int parse_event(loader *L, const uint8_t *q, const uint8_t *bend, uint32_t thread, uint64_t *now,
                       dnp_trace_event *e) {
    uint64_t kind, delta;
    if (dnp_varint_get(&q, bend, &kind) < 0 || dnp_varint_get(&q, bend, &delta) < 0) {
        L->malformed++;
        return REC_NONE;
    }
    *now = later(*now, delta);
    if (kind >= DNP_EV_COUNT) {
        L->unknown_kinds++;
        return REC_NONE;
    }
    unsigned nv = dnp_events[kind].nvalues;
    memset(e->v, 0, sizeof e->v);
    if (get_values(q, bend, e->v, nv) < nv) {
        L->short_events++;
        return REC_NONE;
    }
    e->time_ns = *now;
    e->thread = thread;
    e->kind = (uint16_t)kind;
    e->nvalues = (uint8_t)nv;
    if (L->replay)
        return REC_EVENT;
    L->nev++;
    if (L->keep == KEEP_ALL || kind == DNP_EV_ThreadAssignedToOSThread || kind == DNP_EV_ThreadNameChanged) {
        dnp_trace_event *kept = push_event(L);
        if (!kept)
            return -ENOMEM;
        *kept = *e;
    }
    return REC_EVENT;
}

/* The values of a PROCESS record, in order (trace_format.h). */
enum { PROC_PID, PROC_PPID, PROC_REALTIME_NS, PROC_MONOTONIC_NS, PROC_CMDLINE, PROC_RUNTIME, PROC_ATTACH, PROC_NVALUES,
       PROC_HOST_PID = PROC_NVALUES /* from 1.6, optional */ };

/* Parses the record at *pp (of a payload ending at end) and moves past it.
 * Returns REC_EVENT with *e filled (absolute time), REC_NONE for any other
 * record (or one skipped), REC_CORRUPT with *bad_at set to the file offset of a
 * record that runs past its chunk, or -ENOMEM. *now is the chunk's clock. */
static int parse_record(loader *L, const uint8_t **pp, const uint8_t *end, uint32_t thread, uint64_t *now,
                        dnp_trace_event *e, uint64_t *bad_at) {
    dnp_trace *t = L->t;
    const uint8_t *p = *pp, *rec = p;
    uint8_t tag = *p++;
    uint64_t size;
    if (dnp_varint_get(&p, end, &size) < 0 || size > (uint64_t)(end - p)) {
        *bad_at = L->payload_off + (uint64_t)(rec - L->payload);
        return REC_CORRUPT;
    }
    const uint8_t *q = p, *bend = p + size;
    *pp = bend;
    uint64_t v[PROC_NVALUES + 1];

    switch (tag) {
    case DNP_REC_EVENT:
        return parse_event(L, q, bend, thread, now, e);
    case DNP_REC_STRING: {
        uint64_t id, len;
        if (L->replay)
            break;
        if (dnp_varint_get(&q, bend, &id) < 0 || dnp_varint_get(&q, bend, &len) < 0 || id == 0 ||
            id > MAX_STRING_ID || len > (uint64_t)(bend - q)) {
            L->malformed++;
            break;
        }
        int64_t off = arena_add(t->priv, q, (size_t)len);
        if (off < 0 || dnp_u64map_put(&t->priv->strings, id, (uint64_t)off, NULL) < 0)
            return -ENOMEM;
        break;
    }
    case DNP_REC_THREAD:
        if (L->replay)
            break;
        if (get_values(q, bend, v, 2) < 2 || v[0] == 0 || v[0] > L->max_thread) {
            L->malformed++;
            break;
        }
        if (ensure_thread(L, (uint32_t)v[0]) < 0)
            return -ENOMEM;
        t->threads[v[0] - 1].os_tid = v[1];
        break;
    case DNP_REC_PROCESS: {
        if (L->replay)
            break;
        unsigned nv = get_values(q, bend, v, PROC_NVALUES + 1);
        if (nv < PROC_NVALUES) {
            L->malformed++;
            break;
        }
        if (L->have_process)
            break; /* the first one counts */
        L->have_process = 1;
        if (v[PROC_PID])
            t->pid = v[PROC_PID];
        t->ppid = v[PROC_PPID];
        t->start_realtime_ns = v[PROC_REALTIME_NS];
        L->proc_mono = v[PROC_MONOTONIC_NS];
        L->cmdline_id = v[PROC_CMDLINE];
        L->runtime_id = v[PROC_RUNTIME];
        t->attached = v[PROC_ATTACH] != 0;
        t->host_pid = nv > PROC_HOST_PID ? v[PROC_HOST_PID] : 0;
        break;
    }
    case DNP_REC_NOTE:
        if (get_values(q, bend, v, 3) < 3) {
            if (!L->replay)
                L->malformed++;
            break;
        }
        *now = later(*now, v[1]);
        if (!L->replay && push_note(L, *now, thread, v[0] > 2 ? 2 : (uint32_t)v[0], v[2]) < 0)
            return -ENOMEM;
        break;
    case DNP_REC_LOST:
        if (L->replay)
            break;
        if (get_values(q, bend, v, 1) < 1) {
            L->malformed++;
            break;
        }
        t->lost = t->lost + v[0] < t->lost ? UINT64_MAX : t->lost + v[0];
        break;
    case DNP_REC_END:
        if (L->replay)
            break;
        if (get_values(q, bend, v, 1) < 1) {
            L->malformed++;
            break;
        }
        t->end_events = v[0];
        L->seen_end = 1;
        break;
    default:
        break; /* a record of a later minor version */
    }
    return REC_NONE;
}

/* Managed ids and names of threads, from the thread events in time order. A
 * thread is the one whose OS tid a ThreadAssignedToOSThread names (the event's
 * own thread first, else the latest with that tid); a name set before its thread
 * was assigned is kept until it is. */
static int fill_threads(dnp_trace *t) {
    dnp_u64map by_tid = {0}, by_managed = {0}, pending_name = {0};
    int rc = 0;
    for (size_t i = 0; i < t->nthreads && rc == 0; i++)
        if (t->threads[i].os_tid)
            rc = dnp_u64map_put(&by_tid, t->threads[i].os_tid, i + 1, NULL);
    for (size_t i = 0; i < t->nevents && rc == 0; i++) {
        const dnp_trace_event *e = &t->events[i];
        uint64_t ord, name;
        if (e->kind == DNP_EV_ThreadAssignedToOSThread) {
            uint64_t managed = e->v[DNP_V(ThreadAssignedToOSThread, managedThreadId)];
            uint64_t tid = e->v[DNP_V(ThreadAssignedToOSThread, osThreadId)];
            const dnp_trace_thread *own = dnp_trace_thread_get(t, e->thread);
            if (own && own->os_tid == tid && tid)
                ord = own->ordinal;
            else if (!dnp_u64map_get(&by_tid, tid, &ord))
                continue;
            dnp_trace_thread *th = &t->threads[ord - 1];
            th->managed_id = managed;
            if (managed) {
                rc = dnp_u64map_put(&by_managed, managed, ord, NULL);
                if (dnp_u64map_get(&pending_name, managed, &name))
                    th->name = dnp_trace_string(t, name);
            }
        } else if (e->kind == DNP_EV_ThreadNameChanged) {
            uint64_t managed = e->v[DNP_V(ThreadNameChanged, threadId)], sid = e->v[DNP_V(ThreadNameChanged, name)];
            if (!managed)
                continue;
            rc = dnp_u64map_put(&pending_name, managed, sid, NULL);
            if (rc == 0 && dnp_u64map_get(&by_managed, managed, &ord) && t->threads[ord - 1].managed_id == managed)
                t->threads[ord - 1].name = dnp_trace_string(t, sid);
        }
    }
    dnp_u64map_release(&by_tid);
    dnp_u64map_release(&by_managed);
    dnp_u64map_release(&pending_name);
    return rc;
}

/* Checks the file header. Returns its size, or -1 with err set. */
static int64_t check_header(const uint8_t *buf, size_t size, const char *path, char *err, size_t errlen) {
    if (size == 0) {
        set_err(err, errlen, "'%s' is empty: no trace was written (did the agent load? try dnprof doctor)", path);
        return -1;
    }
    if (size < 8 || memcmp(buf, DNP_TRACE_MAGIC, 8) != 0) {
        set_err(err, errlen, "'%s' is not a dnprof trace", path);
        return -1;
    }
    if (size < DNP_TRACE_HEADER_SIZE) {
        set_err(err, errlen, "'%s' ends inside its header (%zu of %d bytes): the trace was cut short before any event",
                path, size, DNP_TRACE_HEADER_SIZE);
        return -1;
    }
    unsigned major = (unsigned)buf[8] | (unsigned)buf[9] << 8;
    unsigned minor = (unsigned)buf[10] | (unsigned)buf[11] << 8;
    uint32_t hsize = dnp_get_u32le(buf + 12);
    if (major > DNP_TRACE_MAJOR) {
        set_err(err, errlen, "'%s' is trace format %u.%u, newer than this dnprof reads (%d.x); update dnprof", path,
                major, minor, DNP_TRACE_MAJOR);
        return -1;
    }
    if (major < 1) {
        set_err(err, errlen, "'%s' is trace format %u.%u, which this dnprof does not read (%d.x)", path, major, minor,
                DNP_TRACE_MAJOR);
        return -1;
    }
    if (hsize < DNP_TRACE_HEADER_SIZE || hsize > MAX_HEADER_SIZE) {
        set_err(err, errlen, "'%s' is a damaged dnprof trace: its header gives a size of %" PRIu32 " bytes", path,
                hsize);
        return -1;
    }
    return hsize;
}

/* After the walk: notes for what was skipped, strings resolved, times made
 * relative, events sorted, threads filled. Returns 0 or -ENOMEM. */
static int finish(loader *L) {
    dnp_trace *t = L->t;
    /* The skipped records' notes are at time 0 on no thread; their texts go to
     * the arena and note_ids holds their offsets. */
    size_t nparsed = t->nnotes;
    if (dnp_runs_mark(&L->note_runs, nparsed) < 0)
        return -ENOMEM;
    static const char *const skipped[3] = {
        "%" PRIu64 " event%s of kinds this dnprof does not know were skipped: the trace was written by a newer dnprof",
        "%" PRIu64 " event%s had fewer values than their kind needs and were skipped",
        "%" PRIu64 " malformed record%s were skipped",
    };
    const uint64_t nskipped[3] = {L->unknown_kinds, L->short_events, L->malformed};
    for (int i = 0; i < 3; i++) {
        if (!nskipped[i])
            continue;
        char line[160];
        snprintf(line, sizeof line, skipped[i], nskipped[i], nskipped[i] == 1 ? "" : "s");
        int64_t soff = arena_add(t->priv, line, strlen(line));
        if (soff < 0 || push_note(L, 0, 0, 1, (uint64_t)soff) < 0)
            return -ENOMEM;
    }

    /* The arena is final from here on. */
    uint64_t origin = L->have_process ? L->proc_mono : L->have_base ? L->min_base : 0;
    L->origin = origin;
    for (size_t i = 0; i < t->nnotes; i++) {
        const char *s = i < nparsed ? dnp_trace_string(t, L->note_ids[i]) : t->priv->arena + L->note_ids[i];
        t->notes[i].text = s ? s : "";
        if (i < nparsed)
            t->notes[i].time_ns = t->notes[i].time_ns > origin ? t->notes[i].time_ns - origin : 0;
    }
    t->cmdline = dnp_trace_string(t, L->cmdline_id);
    t->runtime = dnp_trace_string(t, L->runtime_id);

    for (size_t i = 0; i < t->nevents; i++)
        t->events[i].time_ns = t->events[i].time_ns > origin ? t->events[i].time_ns - origin : 0;
    if (t->nevents && t->nevents < L->ev_cap) {
        dnp_trace_event *e = realloc(t->events, t->nevents * sizeof *e);
        if (e)
            t->events = e;
    }
    dnp_trace_event ev;
    dnp_trace_note note;
    if (dnp_sort_runs(t->events, sizeof *t->events, t->nevents, &L->ev_runs, &ev) < 0 ||
        dnp_sort_runs(t->notes, sizeof *t->notes, t->nnotes, &L->note_runs, &note) < 0 || fill_threads(t) < 0)
        return -ENOMEM;
    return 0;
}

/* ---- the stream ---- */

enum { ST_READING, ST_DONE, ST_FAILED };

struct dnp_trace_stream {
    loader L;
    dnp_trace *t;
    char *path;
    int fd;
    int regular;          /* a regular file: its size is known, it can be read again */
    uint8_t *buf;         /* the payload being parsed */
    size_t cap;
    uint64_t off;         /* file offset of the next chunk */
    uint64_t consumed;    /* bytes taken from fd */
    uint64_t stop;        /* after the first pass: where it stopped reading chunks */
    const uint8_t *p, *end; /* the records left of the current chunk */
    uint32_t thread;
    uint64_t now;
    int in_chunk;
    int header_cut;       /* the file ends inside its (longer) header */
    int state;
    int finished;         /* the first pass is over: the trace is final */
    uint32_t only;        /* a later pass: this thread's chunks only, 0 all */
    char err[512];
};

/* Reads up to len bytes; returns how many (fewer only at the end), or -1. */
static ssize_t read_full(dnp_trace_stream *S, void *buf, size_t len) {
    size_t got = 0;
    if (S->regular && len > S->t->file_bytes - S->consumed) /* a trace still being written: as it was at open */
        len = S->consumed < S->t->file_bytes ? (size_t)(S->t->file_bytes - S->consumed) : 0;
    while (got < len) {
        ssize_t n = read(S->fd, (uint8_t *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    S->consumed += got;
    return (ssize_t)got;
}

/* Reads a chunk's payload into S->buf; how many bytes were there, or -1. The
 * buffer grows with what arrives, not to what plen claims (docs/testing.md). */
static ssize_t read_payload(dnp_trace_stream *S, uint32_t plen) {
    size_t got = 0;
    if (S->regular && plen > S->t->file_bytes - S->consumed)
        plen = S->consumed < S->t->file_bytes ? (uint32_t)(S->t->file_bytes - S->consumed) : 0;
    while (got < plen) {
        if (S->cap < plen && S->cap - got == 0) {
            size_t ncap = S->cap ? S->cap * 2 : 65536;
            ncap = ncap < plen ? ncap : plen;
            uint8_t *nb = realloc(S->buf, ncap);
            if (!nb)
                return errno = ENOMEM, -1;
            S->buf = nb;
            S->cap = ncap;
        }
        size_t want = (S->cap < plen ? S->cap : plen) - got;
        ssize_t n = read_full(S, S->buf + got, want);
        if (n < 0)
            return -1;
        got += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    return (ssize_t)got;
}

/* The largest thread ordinal a file this size holds: threads are 1, 2, ...,
 * each with a THREAD record (4 bytes or more); a pipe's size is what was read. */
static uint32_t thread_limit(const dnp_trace_stream *S, uint32_t plen) {
    uint64_t bytes = S->regular ? S->t->file_bytes : S->off + DNP_CHUNK_HEADER_SIZE + (uint64_t)plen;
    return bytes / 4 < MAX_THREADS ? (uint32_t)(bytes / 4) : MAX_THREADS;
}

/* Skips len bytes; returns how many were there, or -1. */
static int64_t skip_bytes(dnp_trace_stream *S, uint64_t len) {
    if (S->regular) {
        uint64_t left = (uint64_t)S->t->file_bytes > S->consumed ? S->t->file_bytes - S->consumed : 0;
        uint64_t n = len < left ? len : left;
        if (lseek(S->fd, (off_t)n, SEEK_CUR) < 0)
            return -1;
        S->consumed += n;
        return (int64_t)n;
    }
    uint8_t tmp[65536];
    uint64_t done = 0;
    while (done < len) {
        size_t want = len - done < sizeof tmp ? (size_t)(len - done) : sizeof tmp;
        ssize_t n = read_full(S, tmp, want);
        if (n < 0)
            return -1;
        done += (uint64_t)n;
        if ((size_t)n < want)
            break;
    }
    return (int64_t)done;
}

static int stream_fail(dnp_trace_stream *S, int errnum) {
    if (errnum == ENOMEM)
        snprintf(S->err, sizeof S->err, "cannot load '%s': out of memory", S->path);
    else if (errnum == ESTALE)
        snprintf(S->err, sizeof S->err, "cannot read '%s' again: it changed while it was read", S->path);
    else
        snprintf(S->err, sizeof S->err, "cannot read '%s': %s", S->path, strerror(errnum));
    S->state = ST_FAILED;
    return -1;
}

enum { END_CLEAN, END_TRUNCATED, END_CORRUPT };

/* The walk is over: the first pass sets the status and finishes the trace.
 * Returns 0, or -1 when that fails. */
static int stream_end(dnp_trace_stream *S, int how) {
    loader *L = &S->L;
    dnp_trace *t = S->t;
    S->in_chunk = 0;
    if (S->finished) {
        S->state = ST_DONE;
        return 0;
    }
    if (!S->regular && skip_bytes(S, UINT64_MAX) < 0) /* the size of a pipe: read to its end */
        return stream_fail(S, errno);
    if (!S->regular)
        t->file_bytes = S->consumed;
    if (how == END_TRUNCATED) {
        t->status = DNP_TRACE_TRUNCATED;
        snprintf(t->status_text, sizeof t->status_text,
                 "the trace ends inside a chunk after %zu events: the process was probably killed; everything up "
                 "to that point is shown",
                 L->nev);
    } else if (how == END_CORRUPT) {
        t->status = DNP_TRACE_CORRUPT; /* status_text set by the caller */
    } else if (L->seen_end) {
        t->status = DNP_TRACE_COMPLETE;
    } else {
        t->status = DNP_TRACE_OPEN;
        snprintf(t->status_text, sizeof t->status_text,
                 "the process did not shut down cleanly (killed, crashed or still running): the trace has "
                 "everything up to its last flush");
    }
    if (S->stop < S->off)
        S->stop = S->off;
    if (finish(L) < 0)
        return stream_fail(S, ENOMEM);
    if (L->keep != KEEP_ALL) { /* the thread events served fill_threads */
        free(t->events);
        t->events = NULL;
        t->nevents = 0;
        L->ev_cap = 0;
    }
    free(L->note_ids);
    L->note_ids = NULL;
    free(L->ev_runs.start);
    free(L->note_runs.start);
    memset(&L->ev_runs, 0, sizeof L->ev_runs);
    memset(&L->note_runs, 0, sizeof L->note_runs);
    S->finished = 1;
    S->state = ST_DONE;
    return 0;
}

static int stream_corrupt(dnp_trace_stream *S, uint64_t at, const char *why) {
    if (S->finished) /* a later pass meets what the first one met: the same end */
        return stream_end(S, END_CORRUPT);
    snprintf(S->t->status_text, sizeof S->t->status_text,
             "the trace is damaged at byte offset %" PRIu64 " (%s) after %zu events; everything before it is shown",
             at, why, S->L.nev);
    return stream_end(S, END_CORRUPT);
}

/* Reads the next chunk and checks it. Returns 1 with the cursor on its records,
 * 0 at the end of the walk (the status set), or -1. */
static int stream_chunk(dnp_trace_stream *S) {
    loader *L = &S->L;
    dnp_trace *t = S->t;
    if (S->header_cut)
        return stream_end(S, END_TRUNCATED);
    for (;;) {
        if (S->finished && S->off >= S->stop)
            return stream_end(S, END_CLEAN);
        uint8_t h[DNP_CHUNK_HEADER_SIZE];
        ssize_t n = read_full(S, h, sizeof h);
        if (n < 0)
            return stream_fail(S, errno);
        if (n == 0)
            return stream_end(S, END_CLEAN);
        if ((size_t)n < sizeof h)
            return stream_end(S, END_TRUNCATED);
        uint32_t magic = dnp_get_u32le(h), plen = dnp_get_u32le(h + 4), crc = dnp_get_u32le(h + 8);
        uint32_t thread = dnp_get_u32le(h + 12);
        uint64_t base = dnp_get_u64le(h + 16);
        if (magic != DNP_CHUNK_MAGIC)
            return stream_corrupt(S, S->off, "no chunk starts there");
        if (plen > DNP_CHUNK_MAX_PAYLOAD)
            return stream_corrupt(S, S->off, "the chunk claims more than the largest payload");
        if (S->finished && S->only && thread != S->only) {
            int64_t k = skip_bytes(S, plen);
            if (k < 0)
                return stream_fail(S, errno);
            if ((uint64_t)k < plen)
                return stream_end(S, END_TRUNCATED);
            S->off += DNP_CHUNK_HEADER_SIZE + (uint64_t)plen;
            continue;
        }
        n = read_payload(S, plen);
        if (n < 0)
            return stream_fail(S, errno);
        if ((size_t)n < plen)
            return stream_end(S, END_TRUNCATED);
        if (dnp_crc32(S->buf, plen) != crc)
            return S->finished ? stream_fail(S, ESTALE) : stream_corrupt(S, S->off, "the chunk fails its checksum");
        L->max_thread = thread_limit(S, plen);
        if (thread > L->max_thread)
            return stream_corrupt(S, S->off, "the chunk names an impossible thread");
        if (!S->finished) {
            if ((thread && ensure_thread(L, thread) < 0) || dnp_runs_mark(&L->ev_runs, t->nevents) < 0 ||
                dnp_runs_mark(&L->note_runs, t->nnotes) < 0)
                return stream_fail(S, ENOMEM);
            if (!L->have_base || base < L->min_base) {
                L->have_base = 1;
                L->min_base = base;
            }
        }
        L->payload = S->buf;
        L->payload_off = S->off + DNP_CHUNK_HEADER_SIZE;
        S->p = S->buf;
        S->end = plen ? S->buf + plen : S->buf; /* an empty chunk first: no buffer yet (NULL + 0) */
        S->thread = thread;
        S->now = base;
        S->in_chunk = 1;
        S->off += DNP_CHUNK_HEADER_SIZE + (uint64_t)plen;
        return 1;
    }
}

/* Opens path and reads its header; keep says what the loader keeps. */
static int stream_open(const char *path, int keep, dnp_trace_stream **out, char *err, size_t errlen) {
    *out = NULL;
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        set_err(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    dnp_trace_stream *S = calloc(1, sizeof *S);
    dnp_trace *t = calloc(1, sizeof *t);
    if (!S || !t || !(t->priv = calloc(1, sizeof *t->priv)) || !(S->path = strdup(path))) {
        set_err(err, errlen, "cannot load '%s': out of memory", path);
        close(fd);
        if (S)
            free(S->path);
        free(S);
        dnp_trace_free(t);
        return -1;
    }
    S->fd = fd;
    S->t = t;
    S->L.t = t;
    S->L.keep = keep;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        S->regular = 1;
        t->file_bytes = (uint64_t)st.st_size;
    }
    uint8_t h[DNP_TRACE_HEADER_SIZE];
    ssize_t n = read_full(S, h, sizeof h);
    int64_t hsize = -1;
    if (n < 0)
        set_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    else
        hsize = check_header(h, (size_t)n, path, err, errlen);
    if (hsize < 0) {
        dnp_trace_stream_close(S);
        return -1;
    }
    t->major = (uint16_t)(h[8] | h[9] << 8);
    t->minor = (uint16_t)(h[10] | h[11] << 8);
    t->pid = dnp_get_u64le(h + 16);
    int64_t k = skip_bytes(S, (uint64_t)hsize - DNP_TRACE_HEADER_SIZE);
    if (k < 0) {
        set_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        dnp_trace_stream_close(S);
        return -1;
    }
    S->header_cut = (uint64_t)k < (uint64_t)hsize - DNP_TRACE_HEADER_SIZE;
    S->off = (uint64_t)hsize;
    t->bytes_read = S->header_cut ? S->consumed : (uint64_t)hsize;
    *out = S;
    return 0;
}

int dnp_trace_stream_open(const char *path, dnp_trace_stream **out, char *err, size_t errlen) {
    return stream_open(path, KEEP_THREADS, out, err, errlen);
}

int dnp_trace_stream_next(dnp_trace_stream *S, dnp_trace_event *e) {
    for (;;) {
        if (S->state != ST_READING)
            return S->state == ST_DONE ? 0 : -1;
        while (S->p < S->end) {
            uint64_t bad_at = 0;
            int rc = parse_record(&S->L, &S->p, S->end, S->thread, &S->now, e, &bad_at);
            if (rc == REC_EVENT)
                return 1;
            if (rc < 0)
                return stream_fail(S, ENOMEM);
            if (rc == REC_CORRUPT) {
                S->stop = S->off; /* a later pass reads this chunk up to the same record */
                if (stream_corrupt(S, bad_at, "a record runs past its chunk") < 0)
                    return -1;
                break;
            }
        }
        if (S->state != ST_READING)
            continue;
        if (S->in_chunk) {
            S->in_chunk = 0;
            if (!S->finished)
                S->t->bytes_read = S->off;
        }
        if (stream_chunk(S) < 0)
            return -1;
    }
}

const dnp_trace *dnp_trace_stream_trace(const dnp_trace_stream *S) {
    return S->t;
}

int dnp_trace_stream_finished(const dnp_trace_stream *S) {
    return S->finished;
}

uint64_t dnp_trace_stream_origin(const dnp_trace_stream *S) {
    const loader *L = &S->L;
    if (S->finished)
        return L->origin;
    return L->have_process ? L->proc_mono : L->have_base ? L->min_base : 0;
}

int dnp_trace_stream_rereadable(const dnp_trace_stream *S) {
    return S->regular;
}

int dnp_trace_stream_rewind(dnp_trace_stream *S, uint32_t only_thread) {
    if (!S->finished) {
        while (S->state == ST_READING) { /* the first pass must end first: it sets the status */
            dnp_trace_event e;
            if (dnp_trace_stream_next(S, &e) < 0)
                return -1;
        }
        if (S->state != ST_DONE)
            return -1;
    }
    if (S->state == ST_FAILED)
        return -1;
    if (!S->regular) {
        snprintf(S->err, sizeof S->err, "cannot read '%s' twice: it is not a regular file", S->path);
        return -1;
    }
    S->L.replay = 1;
    S->only = only_thread;
    S->p = S->end = NULL;
    S->in_chunk = 0;
    /* back to the first chunk: the header's size is where the first pass began */
    uint8_t h[DNP_TRACE_HEADER_SIZE];
    if (lseek(S->fd, 0, SEEK_SET) < 0)
        return stream_fail(S, errno);
    S->consumed = 0;
    ssize_t n = read_full(S, h, sizeof h);
    if (n < 0)
        return stream_fail(S, errno);
    if ((size_t)n < sizeof h || memcmp(h, DNP_TRACE_MAGIC, 8) != 0)
        return stream_fail(S, ESTALE);
    uint32_t hs = dnp_get_u32le(h + 12);
    if (S->header_cut) {
        S->state = ST_DONE;
        return 0;
    }
    if (lseek(S->fd, (off_t)hs, SEEK_SET) < 0)
        return stream_fail(S, errno);
    S->consumed = hs;
    S->off = hs;
    S->state = ST_READING;
    return 0;
}

void dnp_trace_stream_progress(const dnp_trace_stream *S, uint64_t *done, uint64_t *total) {
    *total = S->finished ? S->stop : S->t->file_bytes;
    *done = S->off < *total ? S->off : *total;
}

const char *dnp_trace_stream_error(const dnp_trace_stream *S) {
    return S->err;
}

static dnp_trace *stream_take(dnp_trace_stream *S) {
    dnp_trace *t = S->t;
    S->t = NULL;
    S->L.t = NULL;
    return t;
}

void dnp_trace_stream_close(dnp_trace_stream *S) {
    if (!S)
        return;
    if (S->fd >= 0)
        close(S->fd);
    free(S->buf);
    free(S->L.note_ids);
    free(S->L.ev_runs.start);
    free(S->L.note_runs.start);
    dnp_trace_free(S->t);
    free(S->path);
    free(S);
}

int dnp_trace_load(const char *path, dnp_trace **out, char *err, size_t errlen) {
    *out = NULL;
    dnp_trace_stream *S;
    if (stream_open(path, KEEP_ALL, &S, err, errlen) < 0)
        return -1;
    dnp_trace_event e;
    int rc;
    while ((rc = dnp_trace_stream_next(S, &e)) > 0) {
    }
    if (rc < 0) {
        set_err(err, errlen, "%s", S->err);
        dnp_trace_stream_close(S);
        return -1;
    }
    *out = stream_take(S);
    dnp_trace_stream_close(S);
    return 0;
}
