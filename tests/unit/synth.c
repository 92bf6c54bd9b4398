/* synth.c: synthetic traces for the tests (synth.h). */
#include "synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_writer.h"

#define SYNTH_BASE 1000000000ull
#define SYNTH_THREADS 64
#define SYNTH_CHUNK 60000

typedef struct sbuf {
    uint8_t *p;
    size_t len, cap;
    uint64_t base, last;
    int started;
} sbuf;

struct synth {
    dnp_writer *w;
    sbuf meta;
    sbuf th[SYNTH_THREADS];
    uint64_t next_string, events;
    int failed;
};

static void put(synth *s, sbuf *b, uint8_t tag, const uint64_t *v, unsigned n, const void *tail, size_t tail_len) {
    if (b->len + DNP_REC_MAX + tail_len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->len + DNP_REC_MAX + tail_len)
            cap *= 2;
        uint8_t *g = realloc(b->p, cap);
        if (!g) {
            s->failed = 1;
            return;
        }
        b->p = g;
        b->cap = cap;
    }
    b->len += dnp_rec_encode(b->p + b->len, tag, v, n, tail, tail_len);
}

static void flush(synth *s, sbuf *b, uint32_t thread) {
    if (b->len && dnp_writer_append(s->w, thread, b->base, b->p, b->len) != 0)
        s->failed = 1;
    b->len = 0;
    b->started = 0;
}

synth *synth_open(const char *path, uint64_t pid, const char *cmdline) {
    char err[256];
    synth *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->w = dnp_writer_open(path, 0, pid, err, sizeof err);
    if (!s->w) {
        fprintf(stderr, "synth: %s\n", err);
        free(s);
        return NULL;
    }
    s->next_string = 1;
    s->meta.base = SYNTH_BASE;
    uint64_t cmd = synth_string(s, cmdline ? cmdline : "dotnet synthetic.dll");
    uint64_t rt = synth_string(s, "CoreCLR synthetic");
    uint64_t v[7] = {pid, 1, 1700000000000000000ull, SYNTH_BASE, cmd, rt, 0};
    put(s, &s->meta, DNP_REC_PROCESS, v, 7, NULL, 0);
    return s;
}

uint64_t synth_string(synth *s, const char *text) {
    uint64_t id = s->next_string++;
    uint64_t v[2] = {id, strlen(text)};
    put(s, &s->meta, DNP_REC_STRING, v, 2, text, strlen(text));
    return id;
}

void synth_thread(synth *s, uint32_t ordinal, uint64_t os_tid) {
    uint64_t v[2] = {ordinal, os_tid};
    put(s, &s->meta, DNP_REC_THREAD, v, 2, NULL, 0);
}

void synth_event(synth *s, uint32_t ordinal, uint64_t time_ns, dnp_event_kind kind, const uint64_t *vals) {
    if (ordinal == 0 || ordinal >= SYNTH_THREADS) {
        s->failed = 1;
        return;
    }
    sbuf *b = &s->th[ordinal];
    uint64_t t = SYNTH_BASE + time_ns;
    if (b->len > SYNTH_CHUNK)
        flush(s, b, ordinal);
    if (!b->started) {
        b->base = b->last = t;
        b->started = 1;
    }
    uint64_t v[2 + DNP_MAX_VALUES] = {kind, t >= b->last ? t - b->last : 0};
    unsigned nv = dnp_events[kind].nvalues;
    for (unsigned i = 0; i < nv; i++)
        v[2 + i] = vals ? vals[i] : 0;
    put(s, b, DNP_REC_EVENT, v, 2 + nv, NULL, 0);
    b->last = t;
    s->events++;
}

int synth_close(synth *s, int complete) {
    /* The meta stream first, so names resolve even in a torn file; END last. */
    flush(s, &s->meta, 0);
    for (uint32_t i = 1; i < SYNTH_THREADS; i++)
        flush(s, &s->th[i], i);
    if (complete) {
        uint64_t v[1] = {s->events};
        put(s, &s->meta, DNP_REC_END, v, 1, NULL, 0);
        flush(s, &s->meta, 0);
    }
    int rc = s->failed || dnp_writer_error(s->w) ? -1 : 0;
    dnp_writer_free(s->w);
    free(s->meta.p);
    for (uint32_t i = 0; i < SYNTH_THREADS; i++)
        free(s->th[i].p);
    free(s);
    return rc;
}
