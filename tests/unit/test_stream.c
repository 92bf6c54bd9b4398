/* test_stream.c: the streaming reader against the loader: the same events (each
 * thread's in the same order, times the loader's once the origin is
 * subtracted), the same threads, notes and status, on whole, truncated (at
 * every byte) and damaged files; a later pass reads the same again, one thread's
 * chunks only when asked; a pipe reads like a file. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "trace_reader.h"
#include "trace_writer.h"

/* A path in the temporary directory; the last four stay valid. */
static const char *stream_tmp(const char *name) {
    static char paths[4][512];
    static unsigned next;
    char *path = paths[next++ % 4];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof paths[0], "%s/dnprof-stream-%d-%s", base && *base ? base : "/tmp", (int)getpid(), name);
    return path;
}

static int put_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = len ? fwrite(data, 1, len, f) : 0;
    return fclose(f) == 0 && n == len ? 0 : -1;
}

static uint8_t *get_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* ---- a trace of many small chunks: 3 threads whose chunks interleave out of
 * time order, thread events, a note, a lost count, an unknown tag ---- */

typedef struct wchunk {
    uint8_t p[4096];
    size_t len;
    uint64_t base, last;
} wchunk;

static void rec(wchunk *c, uint8_t tag, const uint64_t *v, unsigned n, const char *tail) {
    c->len += dnp_rec_encode(c->p + c->len, tag, v, n, tail, tail ? strlen(tail) : 0);
}

static void ev(wchunk *c, uint64_t t, dnp_event_kind kind, uint64_t a, uint64_t b) {
    uint64_t v[2 + DNP_MAX_VALUES] = {kind, t - c->last, a, b};
    rec(c, DNP_REC_EVENT, v, 2 + dnp_events[kind].nvalues, NULL);
    c->last = t;
}

static int write_small(const char *path, int complete) {
    char err[256];
    dnp_writer *w = dnp_writer_open(path, 0, 777, err, sizeof err);
    if (!w)
        return -1;
    static wchunk c;
    memset(&c, 0, sizeof c);
    const char *strs[] = {"dotnet small.dll", "CoreCLR", "Ns.P::Main", "Ns.P::Work", "Worker", "a note"};
    for (uint64_t i = 0; i < 6; i++) {
        uint64_t v[2] = {i + 1, strlen(strs[i])};
        rec(&c, DNP_REC_STRING, v, 2, strs[i]);
    }
    uint64_t proc[7] = {777, 1, 5, 1000, 1, 2, 0};
    rec(&c, DNP_REC_PROCESS, proc, 7, NULL);
    for (uint64_t t = 1; t <= 3; t++) {
        uint64_t v[2] = {t, 900 + t};
        rec(&c, DNP_REC_THREAD, v, 2, NULL);
    }
    uint64_t lost[1] = {3};
    rec(&c, DNP_REC_LOST, lost, 1, NULL);
    uint64_t unk[2] = {1, 2};
    rec(&c, 99, unk, 2, NULL); /* a later minor's record: skipped */
    dnp_writer_append(w, 0, 1000, c.p, c.len);
    /* thread 3's chunks first, though its times are the latest; then 1 and 2 in turns */
    static const uint32_t order[] = {3, 1, 2, 1, 2, 3, 1, 1, 2};
    uint64_t clock[4] = {0, 2000, 1500, 5000};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        uint32_t t = order[k];
        memset(&c, 0, sizeof c);
        c.base = c.last = clock[t];
        if (k == 1) {
            ev(&c, clock[t], DNP_EV_ThreadAssignedToOSThread, 0xAA, 901);
            ev(&c, clock[t], DNP_EV_ThreadNameChanged, 0xAA, 5);
            uint64_t note[3] = {1, 3, 6};
            rec(&c, DNP_REC_NOTE, note, 3, NULL);
            clock[t] += 3;
            c.last = clock[t];
        }
        for (int i = 0; i < 6; i++) {
            clock[t] += 10 + (uint64_t)i;
            ev(&c, clock[t], (i & 1) ? DNP_EV_MethodLeave : DNP_EV_MethodEnter, 0x10 + (uint64_t)(i / 2), 3);
        }
        dnp_writer_append(w, t, c.base, c.p, c.len);
    }
    if (complete) {
        memset(&c, 0, sizeof c);
        uint64_t end[1] = {55};
        rec(&c, DNP_REC_END, end, 1, NULL);
        dnp_writer_append(w, 0, 9000, c.p, c.len);
    }
    int rc = dnp_writer_error(w) ? -1 : 0;
    dnp_writer_free(w);
    return rc;
}

/* ---- comparing ---- */

typedef struct streamed {
    dnp_trace_event *ev;
    size_t n, cap;
} streamed;

/* Reads s to its end into out (times made the loader's). 0, or -1 on a read error. */
static int drain(dnp_trace_stream *s, streamed *out, int relative) {
    dnp_trace_event e;
    int rc;
    while ((rc = dnp_trace_stream_next(s, &e)) > 0) {
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 256;
            out->ev = realloc(out->ev, out->cap * sizeof *out->ev);
            if (!out->ev)
                return -1;
        }
        out->ev[out->n++] = e;
    }
    if (rc < 0)
        return -1;
    uint64_t origin = dnp_trace_stream_origin(s);
    for (size_t i = 0; relative && i < out->n; i++)
        out->ev[i].time_ns = out->ev[i].time_ns > origin ? out->ev[i].time_ns - origin : 0;
    return 0;
}

static int same_event(const dnp_trace_event *a, const dnp_trace_event *b) {
    return a->time_ns == b->time_ns && a->thread == b->thread && a->kind == b->kind && a->nvalues == b->nvalues &&
           memcmp(a->v, b->v, sizeof a->v) == 0;
}

/* The stream's events, per thread, are the loader's, in the same order. */
static int same_events(const dnp_trace *t, const streamed *s, uint32_t only) {
    size_t want = 0;
    for (size_t i = 0; i < t->nevents; i++)
        want += !only || t->events[i].thread == only;
    if (want != s->n) {
        fprintf(stderr, "stream: %zu events, the loader %zu\n", s->n, want);
        return 0;
    }
    for (uint32_t th = 0; th <= t->nthreads; th++) {
        if (only && th != only)
            continue;
        size_t i = 0, j = 0;
        for (;;) {
            while (i < t->nevents && t->events[i].thread != th)
                i++;
            while (j < s->n && s->ev[j].thread != th)
                j++;
            if (i == t->nevents || j == s->n) {
                if (i != t->nevents || j != s->n) {
                    fprintf(stderr, "stream: thread %u: counts differ\n", th);
                    return 0;
                }
                break;
            }
            if (!same_event(&t->events[i], &s->ev[j])) {
                fprintf(stderr, "stream: thread %u: event %zu differs from the loader's %zu\n", th, j, i);
                return 0;
            }
            i++;
            j++;
        }
    }
    return 1;
}

/* Everything but the events is the loader's. */
static int same_trace(const dnp_trace *a, const dnp_trace *b) {
#define SAME(x)                                                                             \
    if (a->x != b->x) {                                                                     \
        fprintf(stderr, "stream: " #x ": %llu, the loader %llu\n", (unsigned long long)b->x, \
                (unsigned long long)a->x);                                                  \
        return 0;                                                                           \
    }
    SAME(major) SAME(minor) SAME(pid) SAME(ppid) SAME(start_realtime_ns) SAME(attached) SAME(nthreads)
    SAME(nnotes) SAME(lost) SAME(end_events) SAME(status) SAME(file_bytes) SAME(bytes_read)
#undef SAME
    if (strcmp(a->status_text, b->status_text) != 0) {
        fprintf(stderr, "stream: \"%s\", the loader \"%s\"\n", b->status_text, a->status_text);
        return 0;
    }
    if ((a->cmdline == NULL) != (b->cmdline == NULL) || (a->cmdline && strcmp(a->cmdline, b->cmdline)))
        return 0;
    if ((a->runtime == NULL) != (b->runtime == NULL) || (a->runtime && strcmp(a->runtime, b->runtime)))
        return 0;
    for (size_t i = 0; i < a->nthreads; i++) {
        const dnp_trace_thread *x = &a->threads[i], *y = &b->threads[i];
        if (x->ordinal != y->ordinal || x->os_tid != y->os_tid || x->managed_id != y->managed_id ||
            (x->name == NULL) != (y->name == NULL) || (x->name && strcmp(x->name, y->name)))
            return 0;
    }
    for (size_t i = 0; i < a->nnotes; i++) {
        const dnp_trace_note *x = &a->notes[i], *y = &b->notes[i];
        if (x->time_ns != y->time_ns || x->thread != y->thread || x->level != y->level || strcmp(x->text, y->text))
            return 0;
    }
    return 1;
}

/* Loads path both ways and compares; also reads it again in a second pass.
 * Returns 1 when everything agrees (or both refuse it with the same words). */
static int agree(const char *path) {
    dnp_trace *t = NULL;
    dnp_trace_stream *s = NULL;
    char err1[512] = "", err2[512] = "";
    int r1 = dnp_trace_load(path, &t, err1, sizeof err1);
    int r2 = dnp_trace_stream_open(path, &s, err2, sizeof err2);
    if (r1 != 0 || r2 != 0) {
        int ok = r1 == r2 && !strcmp(err1, err2);
        if (!ok)
            fprintf(stderr, "stream: open: \"%s\", the loader \"%s\"\n", err2, err1);
        dnp_trace_free(t);
        dnp_trace_stream_close(s);
        return ok;
    }
    streamed a = {0}, b = {0}, c = {0};
    int ok = drain(s, &a, 1) == 0 && dnp_trace_stream_finished(s) && same_trace(t, dnp_trace_stream_trace(s)) &&
             same_events(t, &a, 0) && dnp_trace_stream_trace(s)->nevents == 0;
    /* a second pass: the same; then one thread's chunks only */
    ok = ok && dnp_trace_stream_rewind(s, 0) == 0 && drain(s, &b, 1) == 0 && same_events(t, &b, 0);
    ok = ok && dnp_trace_stream_rewind(s, 1) == 0 && drain(s, &c, 1) == 0 && same_events(t, &c, 1);
    ok = ok && same_trace(t, dnp_trace_stream_trace(s));
    free(a.ev);
    free(b.ev);
    free(c.ev);
    dnp_trace_free(t);
    dnp_trace_stream_close(s);
    return ok;
}

TEST(stream_equals_loader) {
    const char *path = stream_tmp("small.trace");
    ASSERT_EQ(write_small(path, 1), 0);
    ASSERT(agree(path));
    /* what the stream knows before its end: strings and threads as read */
    dnp_trace_stream *s;
    char err[256];
    ASSERT_EQ(dnp_trace_stream_open(path, &s, err, sizeof err), 0);
    dnp_trace_event e;
    ASSERT_EQ(dnp_trace_stream_next(s, &e), 1);
    const dnp_trace *t = dnp_trace_stream_trace(s);
    ASSERT(!dnp_trace_stream_finished(s));
    ASSERT_EQ(e.thread, 3); /* file order: thread 3's chunk comes first */
    ASSERT_STREQ(dnp_trace_string(t, 3), "Ns.P::Main");
    ASSERT_EQ(t->nthreads, 3);
    ASSERT_EQ(t->threads[0].os_tid, 901);
    ASSERT_EQ(e.time_ns, 5010); /* absolute */
    ASSERT_EQ(dnp_trace_stream_origin(s), 1000);
    while (dnp_trace_stream_next(s, &e) == 1) {
    }
    ASSERT(dnp_trace_stream_finished(s));
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    ASSERT_STREQ(t->threads[0].name, "Worker");
    ASSERT_EQ(t->threads[0].managed_id, 0xAA);
    ASSERT_STREQ(t->cmdline, "dotnet small.dll");
    ASSERT_EQ(t->nnotes, 1);
    ASSERT(!strcmp(t->notes[0].text, "a note"));
    uint64_t done, total;
    dnp_trace_stream_progress(s, &done, &total);
    ASSERT_EQ(done, total);
    ASSERT_EQ(total, t->file_bytes);
    dnp_trace_stream_close(s);
    unlink(path);
    return 0;
}

TEST(stream_truncated_at_every_offset) {
    const char *path = stream_tmp("whole.trace"), *cut = stream_tmp("cut.trace");
    ASSERT_EQ(write_small(path, 1), 0);
    size_t size;
    uint8_t *full = get_bytes(path, &size);
    ASSERT(full);
    ASSERT_GT(size, 200);
    for (size_t len = 0; len <= size; len++) {
        ASSERT_EQ(put_bytes(cut, full, len), 0);
        if (!agree(cut)) {
            fprintf(stderr, "cut at %zu of %zu\n", len, size);
            ASSERT(0);
        }
    }
    free(full);
    unlink(path);
    unlink(cut);
    return 0;
}

TEST(stream_damaged) {
    const char *path = stream_tmp("damaged.trace");
    ASSERT_EQ(write_small(path, 0), 0);
    size_t size;
    uint8_t *buf = get_bytes(path, &size);
    ASSERT(buf);
    /* every byte flipped in turn: headers, magics, sizes, CRCs, payloads; but
     * not the chunks' time bases, which no CRC covers: a base moved back puts a
     * thread's chunks out of time order, which the loader sorts and the stream,
     * in file order, does not (the writer never does that) */
    uint8_t *is_base = calloc(size, 1);
    ASSERT(is_base);
    for (size_t off = DNP_TRACE_HEADER_SIZE; off + DNP_CHUNK_HEADER_SIZE <= size;
         off += DNP_CHUNK_HEADER_SIZE + dnp_get_u32le(buf + off + 4))
        memset(is_base + off + 16, 1, 8);
    for (size_t at = 0; at < size; at++) {
        if (is_base[at])
            continue;
        buf[at] ^= 0x41;
        ASSERT_EQ(put_bytes(path, buf, size), 0);
        if (!agree(path)) {
            fprintf(stderr, "byte %zu flipped\n", at);
            ASSERT(0);
        }
        buf[at] ^= 0x41;
    }
    free(is_base);
    /* a record running past its chunk, with a good CRC: the records before it count */
    uint8_t chunk[64 + DNP_CHUNK_HEADER_SIZE], *p = chunk + DNP_CHUNK_HEADER_SIZE;
    uint64_t v[4] = {DNP_EV_MethodEnter, 5, 0x10, 3};
    size_t n = dnp_rec_encode(p, DNP_REC_EVENT, v, 4, NULL, 0);
    p[n++] = DNP_REC_EVENT;
    p[n++] = 40; /* 40 bytes of body: past the end */
    p[n++] = 1;
    dnp_put_u32le(chunk, DNP_CHUNK_MAGIC);
    dnp_put_u32le(chunk + 4, (uint32_t)n);
    dnp_put_u32le(chunk + 8, dnp_crc32(p, n));
    dnp_put_u32le(chunk + 12, 2);
    dnp_put_u64le(chunk + 16, 7000);
    uint8_t *more = malloc(size + sizeof chunk);
    ASSERT(more);
    memcpy(more, buf, size);
    memcpy(more + size, chunk, DNP_CHUNK_HEADER_SIZE + n);
    ASSERT_EQ(put_bytes(path, more, size + DNP_CHUNK_HEADER_SIZE + n), 0);
    ASSERT(agree(path));
    dnp_trace *t;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_CORRUPT);
    ASSERT_CONTAINS(t->status_text, "a record runs past its chunk");
    dnp_trace_free(t);
    free(more);
    free(buf);
    unlink(path);

    /* files refused with the loader's words */
    ASSERT_EQ(put_bytes(path, "", 0), 0);
    ASSERT(agree(path));
    ASSERT_EQ(put_bytes(path, "DNPTRACE\x09\x00", 10), 0);
    ASSERT(agree(path));
    ASSERT(agree("/"));
    ASSERT(agree(stream_tmp("no-such-file")));
    unlink(path);
    return 0;
}

TEST(stream_pipe) {
    const char *path = stream_tmp("piped.trace"), *fifo = stream_tmp("fifo");
    ASSERT_EQ(write_small(path, 1), 0);
    size_t size;
    uint8_t *buf = get_bytes(path, &size);
    ASSERT(buf);
    unlink(fifo);
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    dnp_trace *whole;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &whole, err, sizeof err), 0);
    for (int loader = 0; loader < 2; loader++) {
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open(fifo, O_WRONLY);
            ssize_t w = fd >= 0 ? write(fd, buf, size) : -1;
            _exit(w == (ssize_t)size ? 0 : 1);
        }
        if (loader) {
            dnp_trace *t;
            ASSERT_EQ(dnp_trace_load(fifo, &t, err, sizeof err), 0);
            ASSERT(same_trace(whole, t));
            ASSERT_EQ(t->nevents, whole->nevents);
            dnp_trace_free(t);
        } else {
            dnp_trace_stream *s;
            ASSERT_EQ(dnp_trace_stream_open(fifo, &s, err, sizeof err), 0);
            ASSERT(!dnp_trace_stream_rereadable(s));
            streamed a = {0};
            ASSERT_EQ(drain(s, &a, 1), 0);
            ASSERT(same_trace(whole, dnp_trace_stream_trace(s)));
            ASSERT(same_events(whole, &a, 0));
            ASSERT_EQ(dnp_trace_stream_rewind(s, 0), -1);
            ASSERT_CONTAINS(dnp_trace_stream_error(s), "not a regular file");
            free(a.ev);
            dnp_trace_stream_close(s);
        }
        int status;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
    }
    dnp_trace_free(whole);
    free(buf);
    unlink(fifo);
    unlink(path);
    return 0;
}
