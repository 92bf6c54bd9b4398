/* trace_reader.c: loading a whole trace file into memory (docs/trace-format.md).
 *
 * The file is mapped (or read) whole and walked chunk by chunk. Nothing in it is
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_reader.h"

#define MAX_STRING_ID (1ull << 28)
#define MAX_THREADS (1u << 22)
#define MAX_HEADER_SIZE (1u << 16)

/* ---- a map of nonzero u64 keys to u64 values (open addressing) ---- */

typedef struct u64map {
    uint64_t *keys; /* 0: empty slot */
    uint64_t *vals;
    size_t cap;     /* a power of two, or 0 */
    size_t len;
} u64map;

static inline size_t map_slot(uint64_t k, size_t mask) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static int map_grow(u64map *m) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = calloc(ncap, sizeof *nk);
    uint64_t *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t s = map_slot(m->keys[i], ncap - 1);
        while (nk[s])
            s = (s + 1) & (ncap - 1);
        nk[s] = m->keys[i];
        nv[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

/* Sets k (nonzero) to v. Returns 0 or -ENOMEM. */
static int map_put(u64map *m, uint64_t k, uint64_t v) {
    if ((m->len + 1) * 2 > m->cap && map_grow(m) < 0)
        return -ENOMEM;
    size_t s = map_slot(k, m->cap - 1);
    while (m->keys[s] && m->keys[s] != k)
        s = (s + 1) & (m->cap - 1);
    if (!m->keys[s]) {
        m->keys[s] = k;
        m->len++;
    }
    m->vals[s] = v;
    return 0;
}

static int map_get(const u64map *m, uint64_t k, uint64_t *v) {
    if (!m->cap || !k)
        return 0;
    size_t s = map_slot(k, m->cap - 1);
    while (m->keys[s]) {
        if (m->keys[s] == k) {
            *v = m->vals[s];
            return 1;
        }
        s = (s + 1) & (m->cap - 1);
    }
    return 0;
}

static void map_release(u64map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- the trace's private part: its strings ---- */

struct dnp_trace_private {
    char *arena; /* NUL-terminated strings, back to back */
    size_t arena_len, arena_cap;
    u64map strings; /* string id -> offset in arena */
};

/* Copies s[0..len) into the arena. Returns its offset, or -1 without memory. */
static int64_t arena_add(struct dnp_trace_private *pv, const void *s, size_t len) {
    if (pv->arena_cap - pv->arena_len < len + 1) {
        size_t ncap = pv->arena_cap ? pv->arena_cap : 4096;
        while (ncap - pv->arena_len < len + 1)
            ncap *= 2;
        char *na = realloc(pv->arena, ncap);
        if (!na)
            return -1;
        pv->arena = na;
        pv->arena_cap = ncap;
    }
    size_t off = pv->arena_len;
    if (len)
        memcpy(pv->arena + off, s, len);
    pv->arena[off + len] = 0;
    pv->arena_len += len + 1;
    return (int64_t)off;
}

const char *dnp_trace_string(const dnp_trace *t, uint64_t id) {
    uint64_t off;
    if (!t || !t->priv || !map_get(&t->priv->strings, id, &off))
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
    free(t->events);
    free(t->threads);
    free(t->notes);
    if (t->priv) {
        free(t->priv->arena);
        map_release(&t->priv->strings);
        free(t->priv);
    }
    free(t);
}

/* ---- stable sorting by time ----
 *
 * Within a chunk, times only grow (deltas are unsigned), so the records of each
 * chunk are a sorted run. A k-way merge of the runs with a heap, ties going to
 * the earlier run, gives the order; the records are then permuted in place along
 * the cycles of that order. Extra memory: 4 bytes per record and 24 per run. */

typedef struct runs {
    size_t *start; /* run r is [start[r], start[r + 1]) */
    size_t n, cap; /* entries in start: runs + 1 once closed */
} runs;

/* Marks that a run starts at index i (a new chunk). Returns 0 or -ENOMEM. */
static int runs_mark(runs *r, size_t i) {
    if (r->n && r->start[r->n - 1] == i)
        return 0; /* the previous run is empty */
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 64;
        size_t *ns = realloc(r->start, ncap * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        r->start = ns;
        r->cap = ncap;
    }
    r->start[r->n++] = i;
    return 0;
}

typedef struct heap_item {
    uint64_t time;
    size_t run;
} heap_item;

static inline int heap_before(const heap_item *a, const heap_item *b) {
    return a->time < b->time || (a->time == b->time && a->run < b->run);
}

static void heap_down(heap_item *h, size_t n, size_t i) {
    heap_item x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_before(&h[c + 1], &h[c]))
            c++;
        if (!heap_before(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

_Static_assert(offsetof(dnp_trace_event, time_ns) == 0, "sort_runs reads the time first");
_Static_assert(offsetof(dnp_trace_note, time_ns) == 0, "sort_runs reads the time first");
#define REC_TIME(recs, size, i) (*(const uint64_t *)((const uint8_t *)(recs) + (i) * (size)))

/* Sorts n records of the given size, whose first member is a uint64_t time and
 * whose runs r are sorted; tmp holds one record. Returns 0 or -ENOMEM. */
static int sort_runs(void *recs, size_t size, size_t n, runs *r, void *tmp) {
    if (n < 2)
        return 0;
    if (runs_mark(r, n) < 0)
        return -ENOMEM;
    size_t nruns = r->n - 1;
    int sorted = 1;
    for (size_t k = 1; k < nruns && sorted; k++)
        sorted = REC_TIME(recs, size, r->start[k] - 1) <= REC_TIME(recs, size, r->start[k]);
    if (sorted)
        return 0;
    if (n > UINT32_MAX)
        return -ENOMEM;

    uint32_t *perm = malloc(n * sizeof *perm);
    heap_item *heap = malloc(nruns * sizeof *heap);
    size_t *pos = malloc(nruns * sizeof *pos);
    if (!perm || !heap || !pos) {
        free(perm);
        free(heap);
        free(pos);
        return -ENOMEM;
    }
    size_t h = 0;
    for (size_t k = 0; k < nruns; k++) {
        pos[k] = r->start[k];
        heap[h++] = (heap_item){REC_TIME(recs, size, pos[k]), k};
    }
    for (size_t i = h / 2; i-- > 0;)
        heap_down(heap, h, i);
    for (size_t o = 0; o < n; o++) {
        size_t k = heap[0].run;
        perm[o] = (uint32_t)pos[k]++;
        if (pos[k] < r->start[k + 1])
            heap[0].time = REC_TIME(recs, size, pos[k]);
        else
            heap[0] = heap[--h];
        heap_down(heap, h, 0);
    }
    free(heap);
    free(pos);

    /* Record perm[j] goes to j: follow each cycle once, marking places done. */
    uint8_t *rec = recs;
    for (size_t i = 0; i < n; i++) {
        if (perm[i] == i)
            continue;
        memcpy(tmp, rec + i * size, size);
        size_t j = i;
        for (;;) {
            size_t src = perm[j];
            perm[j] = (uint32_t)j;
            if (src == i) {
                memcpy(rec + j * size, tmp, size);
                break;
            }
            memcpy(rec + j * size, rec + src * size, size);
            j = src;
        }
    }
    free(perm);
    return 0;
}

/* ---- loading ---- */

typedef struct loader {
    dnp_trace *t;
    const uint8_t *buf; /* the file */
    size_t size;
    size_t ev_cap, note_cap;
    uint64_t *note_ids;  /* the text string id of each note, parallel to t->notes */
    runs ev_runs, note_runs;
    int have_process;
    uint64_t proc_mono, cmdline_id, runtime_id;
    int have_base;
    uint64_t min_base;
    int seen_end;
    uint64_t unknown_kinds, short_events, malformed;
} loader;

enum { PAYLOAD_OK = 0, PAYLOAD_CORRUPT = 1 };

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

/* Walks the records of one chunk's payload. Returns PAYLOAD_OK, PAYLOAD_CORRUPT
 * with *bad_at set to the file offset of the record at fault, or -ENOMEM. */
static int parse_payload(loader *L, const uint8_t *p, const uint8_t *end, uint32_t thread,
                         uint64_t base, size_t *bad_at) {
    dnp_trace *t = L->t;
    uint64_t now = base;
    while (p < end) {
        const uint8_t *rec = p;
        uint8_t tag = *p++;
        uint64_t size;
        if (dnp_varint_get(&p, end, &size) < 0 || size > (uint64_t)(end - p)) {
            *bad_at = (size_t)(rec - L->buf);
            return PAYLOAD_CORRUPT;
        }
        const uint8_t *q = p, *bend = p + size;
        p = bend;
        uint64_t v[7];

        switch (tag) {
        case DNP_REC_EVENT: {
            uint64_t kind, delta;
            if (dnp_varint_get(&q, bend, &kind) < 0 || dnp_varint_get(&q, bend, &delta) < 0) {
                L->malformed++;
                break;
            }
            now = later(now, delta);
            if (kind >= DNP_EV_COUNT) {
                L->unknown_kinds++;
                break;
            }
            unsigned nv = dnp_events[kind].nvalues;
            uint64_t vals[DNP_MAX_VALUES] = {0};
            if (get_values(q, bend, vals, nv) < nv) {
                L->short_events++;
                break;
            }
            dnp_trace_event *e = push_event(L);
            if (!e)
                return -ENOMEM;
            e->time_ns = now;
            e->thread = thread;
            e->kind = (uint16_t)kind;
            e->nvalues = (uint8_t)nv;
            memcpy(e->v, vals, sizeof e->v);
            break;
        }
        case DNP_REC_STRING: {
            uint64_t id, len;
            if (dnp_varint_get(&q, bend, &id) < 0 || dnp_varint_get(&q, bend, &len) < 0 ||
                id == 0 || id > MAX_STRING_ID || len > (uint64_t)(bend - q)) {
                L->malformed++;
                break;
            }
            int64_t off = arena_add(t->priv, q, (size_t)len);
            if (off < 0 || map_put(&t->priv->strings, id, (uint64_t)off) < 0)
                return -ENOMEM;
            break;
        }
        case DNP_REC_THREAD:
            if (get_values(q, bend, v, 2) < 2 || v[0] == 0 || v[0] > MAX_THREADS) {
                L->malformed++;
                break;
            }
            if (ensure_thread(L, (uint32_t)v[0]) < 0)
                return -ENOMEM;
            t->threads[v[0] - 1].os_tid = v[1];
            break;
        case DNP_REC_PROCESS:
            if (get_values(q, bend, v, 7) < 7) {
                L->malformed++;
                break;
            }
            if (L->have_process)
                break; /* the first one counts */
            L->have_process = 1;
            if (v[0])
                t->pid = v[0];
            t->ppid = v[1];
            t->start_realtime_ns = v[2];
            L->proc_mono = v[3];
            L->cmdline_id = v[4];
            L->runtime_id = v[5];
            t->attached = v[6] != 0;
            break;
        case DNP_REC_NOTE:
            if (get_values(q, bend, v, 3) < 3) {
                L->malformed++;
                break;
            }
            now = later(now, v[1]);
            if (push_note(L, now, thread, v[0] > 2 ? 2 : (uint32_t)v[0], v[2]) < 0)
                return -ENOMEM;
            break;
        case DNP_REC_LOST:
            if (get_values(q, bend, v, 1) < 1) {
                L->malformed++;
                break;
            }
            t->lost = t->lost + v[0] < t->lost ? UINT64_MAX : t->lost + v[0];
            break;
        case DNP_REC_END:
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
    }
    return PAYLOAD_OK;
}

/* Managed ids and names of threads, from the thread events in time order. A
 * thread is the one whose OS tid a ThreadAssignedToOSThread names (the event's
 * own thread first, else the latest with that tid); a name set before its thread
 * was assigned is kept until it is. */
static int fill_threads(dnp_trace *t) {
    u64map by_tid = {0}, by_managed = {0}, pending_name = {0};
    int rc = 0;
    for (size_t i = 0; i < t->nthreads && rc == 0; i++)
        if (t->threads[i].os_tid)
            rc = map_put(&by_tid, t->threads[i].os_tid, i + 1);
    for (size_t i = 0; i < t->nevents && rc == 0; i++) {
        const dnp_trace_event *e = &t->events[i];
        uint64_t ord, name;
        if (e->kind == DNP_EV_ThreadAssignedToOSThread) {
            uint64_t managed = e->v[0], tid = e->v[1];
            const dnp_trace_thread *own = dnp_trace_thread_get(t, e->thread);
            if (own && own->os_tid == tid && tid)
                ord = own->ordinal;
            else if (!map_get(&by_tid, tid, &ord))
                continue;
            dnp_trace_thread *th = &t->threads[ord - 1];
            th->managed_id = managed;
            if (managed) {
                rc = map_put(&by_managed, managed, ord);
                if (map_get(&pending_name, managed, &name))
                    th->name = dnp_trace_string(t, name);
            }
        } else if (e->kind == DNP_EV_ThreadNameChanged) {
            uint64_t managed = e->v[0];
            if (!managed)
                continue;
            rc = map_put(&pending_name, managed, e->v[1]);
            if (rc == 0 && map_get(&by_managed, managed, &ord) && t->threads[ord - 1].managed_id == managed)
                t->threads[ord - 1].name = dnp_trace_string(t, e->v[1]);
        }
    }
    map_release(&by_tid);
    map_release(&by_managed);
    map_release(&pending_name);
    return rc;
}

/* The whole file, in memory: mapped when it is a regular file (no copy, no
 * zeroed pages), else read. */
typedef struct file_image {
    uint8_t *data;
    size_t len;
    int mapped;
} file_image;

static void image_release(file_image *im) {
    if (im->mapped)
        munmap(im->data, im->len);
    else
        free(im->data);
    memset(im, 0, sizeof *im);
}

/* Returns 0, or -1 with err set. */
static int image_load(const char *path, file_image *im, char *err, size_t errlen) {
    memset(im, 0, sizeof *im);
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        set_err(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    size_t cap = 65536;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            close(fd);
            im->data = m;
            im->len = (size_t)st.st_size;
            im->mapped = 1;
            return 0;
        }
        cap = (size_t)st.st_size + 1; /* +1: EOF is seen without a regrowth */
    }
    uint8_t *buf = malloc(cap);
    size_t len = 0;
    for (;;) {
        if (!buf) {
            set_err(err, errlen, "cannot read '%s': out of memory", path);
            close(fd);
            return -1;
        }
        if (len == cap) {
            uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb)
                free(buf);
            buf = nb;
            cap *= 2;
            continue;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    im->data = buf;
    im->len = len;
    return 0;
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

/* Walks the chunks from the header on and sets the status. Returns 0 or -ENOMEM. */
static int walk_chunks(loader *L, size_t hsize) {
    dnp_trace *t = L->t;
    const uint8_t *buf = L->buf;
    size_t size = L->size, off = hsize;
    int truncated = hsize > size;
    t->bytes_read = truncated ? size : hsize;
    while (!truncated && off < size) {
        const uint8_t *c = buf + off;
        if (size - off < DNP_CHUNK_HEADER_SIZE) {
            truncated = 1;
            break;
        }
        uint32_t magic = dnp_get_u32le(c), plen = dnp_get_u32le(c + 4), crc = dnp_get_u32le(c + 8);
        uint32_t thread = dnp_get_u32le(c + 12);
        uint64_t base = dnp_get_u64le(c + 16);
        const uint8_t *payload = c + DNP_CHUNK_HEADER_SIZE;
        const char *why = NULL;
        if (magic != DNP_CHUNK_MAGIC)
            why = "no chunk starts there";
        else if (plen > DNP_CHUNK_MAX_PAYLOAD)
            why = "the chunk claims more than the largest payload";
        else if (size - off - DNP_CHUNK_HEADER_SIZE < plen) {
            truncated = 1;
            break;
        } else if (dnp_crc32(payload, plen) != crc)
            why = "the chunk fails its checksum";
        else if (thread > MAX_THREADS)
            why = "the chunk names an impossible thread";
        if (why) {
            t->status = DNP_TRACE_CORRUPT;
            snprintf(t->status_text, sizeof t->status_text,
                     "the trace is damaged at byte offset %zu (%s) after %zu events; everything before it is shown",
                     off, why, t->nevents);
            return 0;
        }
        if ((thread && ensure_thread(L, thread) < 0) || runs_mark(&L->ev_runs, t->nevents) < 0 ||
            runs_mark(&L->note_runs, t->nnotes) < 0)
            return -ENOMEM;
        if (!L->have_base || base < L->min_base) {
            L->have_base = 1;
            L->min_base = base;
        }
        size_t bad_at = 0;
        int rc = parse_payload(L, payload, payload + plen, thread, base, &bad_at);
        if (rc < 0)
            return rc;
        if (rc == PAYLOAD_CORRUPT) {
            t->status = DNP_TRACE_CORRUPT;
            snprintf(t->status_text, sizeof t->status_text,
                     "the trace is damaged at byte offset %zu (a record runs past its chunk) after %zu events; "
                     "everything before it is shown",
                     bad_at, t->nevents);
            return 0;
        }
        off += DNP_CHUNK_HEADER_SIZE + (size_t)plen;
        t->bytes_read = off;
    }
    if (truncated) {
        t->status = DNP_TRACE_TRUNCATED;
        snprintf(t->status_text, sizeof t->status_text,
                 "the trace ends inside a chunk after %zu events: the process was probably killed; everything up "
                 "to that point is shown",
                 t->nevents);
    } else if (L->seen_end) {
        t->status = DNP_TRACE_COMPLETE;
    } else {
        t->status = DNP_TRACE_OPEN;
        snprintf(t->status_text, sizeof t->status_text,
                 "the process did not shut down cleanly (killed, crashed or still running): the trace has "
                 "everything up to its last flush");
    }
    return 0;
}

/* After the walk: notes for what was skipped, strings resolved, times made
 * relative, events sorted, threads filled. Returns 0 or -ENOMEM. */
static int finish(loader *L) {
    dnp_trace *t = L->t;
    /* The skipped records' notes are at time 0 on no thread; their texts go to
     * the arena and note_ids holds their offsets. */
    size_t nparsed = t->nnotes;
    if (runs_mark(&L->note_runs, nparsed) < 0)
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
    if (sort_runs(t->events, sizeof *t->events, t->nevents, &L->ev_runs, &ev) < 0 ||
        sort_runs(t->notes, sizeof *t->notes, t->nnotes, &L->note_runs, &note) < 0 || fill_threads(t) < 0)
        return -ENOMEM;
    return 0;
}

int dnp_trace_load(const char *path, dnp_trace **out, char *err, size_t errlen) {
    *out = NULL;
    file_image im;
    if (image_load(path, &im, err, errlen) < 0)
        return -1;
    int64_t hsize = check_header(im.data, im.len, path, err, errlen);
    if (hsize < 0) {
        image_release(&im);
        return -1;
    }

    dnp_trace *t = calloc(1, sizeof *t);
    loader L = {.t = t, .buf = im.data, .size = im.len};
    int rc = -ENOMEM;
    if (t && (t->priv = calloc(1, sizeof *t->priv)) != NULL) {
        t->major = (uint16_t)(im.data[8] | im.data[9] << 8);
        t->minor = (uint16_t)(im.data[10] | im.data[11] << 8);
        t->pid = dnp_get_u64le(im.data + 16);
        t->file_bytes = im.len;
        rc = walk_chunks(&L, (size_t)hsize);
    }
    image_release(&im); /* the strings were copied */
    L.buf = NULL;
    if (rc == 0)
        rc = finish(&L);
    free(L.note_ids);
    free(L.ev_runs.start);
    free(L.note_runs.start);
    if (rc < 0) {
        set_err(err, errlen, "cannot load '%s': out of memory", path);
        dnp_trace_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
