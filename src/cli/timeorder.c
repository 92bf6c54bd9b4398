/* timeorder.c: a trace's events in time order, streamed (timeorder.h). */
#include "timeorder.h"
#include "dnp_free.h"
#include "dnp_vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

typedef struct merge_item {
    dnp_trace_event e;
    size_t run, idx;
} merge_item;

struct timeorder {
    dnp_trace *loaded;     /* loaded whole, or NULL */
    dnp_trace_stream *s;   /* streamed, or NULL */
    size_t next;           /* loaded: the next event */
    uint64_t origin;
    uint64_t *sufmin;      /* per run: the earliest start of it and the runs after it */
    size_t nruns, run, idx;
    uint32_t last_thread;
    uint64_t last_raw;
    merge_item *heap;
    size_t nheap, capheap;
    uint64_t bound;        /* events up to this time may go */
    int eof;
    int piped;             /* a pipe: read once, every event kept and sorted */
    merge_item *all;
    size_t nall, iall;
    char err[512];
};

/* Whether e starts a new run after the last event read. */
static int new_run(timeorder *o, const dnp_trace_event *e) {
    int r = o->idx == 0 || e->thread != o->last_thread || e->time_ns < o->last_raw;
    o->last_thread = e->thread;
    o->last_raw = e->time_ns;
    return r;
}

static int item_before(const merge_item *a, const merge_item *b) {
    if (a->e.time_ns != b->e.time_ns)
        return a->e.time_ns < b->e.time_ns;
    return a->run < b->run || (a->run == b->run && a->idx < b->idx);
}

static int heap_push(timeorder *o, const merge_item *it) {
    if (DNP_VEC_RESERVE(o->heap, o->capheap, o->nheap + 1, 1024) < 0)
        return -1;
    size_t i = o->nheap++;
    while (i > 0 && item_before(it, &o->heap[(i - 1) / 2])) {
        o->heap[i] = o->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    o->heap[i] = *it;
    return 0;
}

static void heap_pop(timeorder *o, merge_item *out) {
    *out = o->heap[0];
    merge_item x = o->heap[--o->nheap];
    size_t n = o->nheap, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && item_before(&o->heap[c + 1], &o->heap[c]))
            c++;
        if (!item_before(&o->heap[c], &x))
            break;
        o->heap[i] = o->heap[c];
        i = c;
    }
    if (n)
        o->heap[i] = x;
}

/* The first pass of a stream: the runs' starts. 0 or -1. */
static int first_pass(timeorder *o, timeorder_hook hook, void *ctx) {
    size_t cap = 0;
    dnp_trace_event e;
    int rc;
    while ((rc = dnp_trace_stream_next(o->s, &e)) > 0) {
        if (new_run(o, &e)) {
            if (o->nruns == cap) {
                cap = cap ? cap * 2 : 256;
                uint64_t *v = realloc(o->sufmin, (cap + 1) * sizeof *v);
                if (!v) {
                    snprintf(o->err, sizeof o->err, "out of memory");
                    return -1;
                }
                o->sufmin = v;
            }
            o->sufmin[o->nruns++] = e.time_ns;
        }
        if (hook && hook(ctx, &e, o->idx) < 0) {
            snprintf(o->err, sizeof o->err, "out of memory");
            return -1;
        }
        o->idx++;
    }
    if (rc < 0) {
        snprintf(o->err, sizeof o->err, "%s", dnp_trace_stream_error(o->s));
        return -1;
    }
    o->origin = dnp_trace_stream_origin(o->s);
    if (!o->sufmin && !(o->sufmin = malloc(sizeof *o->sufmin))) {
        snprintf(o->err, sizeof o->err, "out of memory");
        return -1;
    }
    o->sufmin[o->nruns] = UINT64_MAX;
    for (size_t r = o->nruns; r-- > 0;) {
        uint64_t t = o->sufmin[r] > o->origin ? o->sufmin[r] - o->origin : 0;
        o->sufmin[r] = t < o->sufmin[r + 1] ? t : o->sufmin[r + 1];
    }
    if (dnp_trace_stream_rewind(o->s, 0) != 0) {
        snprintf(o->err, sizeof o->err, "%s", dnp_trace_stream_error(o->s));
        return -1;
    }
    o->idx = 0;
    o->run = 0;
    o->bound = 0;
    return 0;
}

static int by_item(const void *x, const void *y) {
    const merge_item *a = x, *b = y;
    return item_before(a, b) ? -1 : item_before(b, a) ? 1 : 0;
}

/* A pipe cannot be read twice: its one pass keeps every event, then sorts
 * them as the loader does (the header is read already: it cannot be loaded). */
static int read_piped(timeorder *o, timeorder_hook hook, void *ctx) {
    size_t cap = 0;
    merge_item it;
    int rc;
    while ((rc = dnp_trace_stream_next(o->s, &it.e)) > 0) {
        if (hook && hook(ctx, &it.e, o->idx) < 0)
            break;
        if (new_run(o, &it.e) && o->idx > 0)
            o->run++;
        it.run = o->run;
        it.idx = o->idx++;
        if (DNP_VEC_RESERVE(o->all, cap, o->nall + 1, 4096) < 0)
            break;
        o->all[o->nall++] = it;
    }
    if (rc != 0) {
        snprintf(o->err, sizeof o->err, "%s", rc < 0 ? dnp_trace_stream_error(o->s) : "out of memory");
        return -1;
    }
    o->origin = dnp_trace_stream_origin(o->s);
    for (size_t i = 0; i < o->nall; i++)
        o->all[i].e.time_ns = o->all[i].e.time_ns > o->origin ? o->all[i].e.time_ns - o->origin : 0;
    if (o->nall > 1)
        qsort(o->all, o->nall, sizeof *o->all, by_item);
    o->piped = 1;
    return 0;
}

int timeorder_open(const char *path, timeorder_hook hook, void *ctx, timeorder **out, char *err, size_t errlen) {
    *out = NULL;
    timeorder *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int whole = dnp_setting_env_value(DNP_SET_NO_STREAM) != 0;
    if (!whole) {
        if (dnp_trace_stream_open(path, &o->s, err, errlen) != 0) {
            free(o);
            return -1;
        }
        if (!dnp_trace_stream_rereadable(o->s) ? read_piped(o, hook, ctx) != 0 : first_pass(o, hook, ctx) != 0) {
            snprintf(err, errlen, "%s: %s", path, o->err);
            timeorder_close(o);
            return -1;
        }
    }
    if (whole) {
        if (dnp_trace_load(path, &o->loaded, err, errlen) != 0) {
            free(o);
            return -1;
        }
        for (size_t i = 0; hook && i < o->loaded->nevents; i++)
            if (hook(ctx, &o->loaded->events[i], i) < 0) {
                snprintf(err, errlen, "out of memory");
                timeorder_close(o);
                return -1;
            }
    }
    *out = o;
    return 0;
}

const dnp_trace *timeorder_trace(const timeorder *o) {
    return o->loaded ? o->loaded : dnp_trace_stream_trace(o->s);
}

const char *timeorder_error(const timeorder *o) {
    return o->err[0] ? o->err : o->s ? dnp_trace_stream_error(o->s) : "out of memory";
}

int timeorder_next(timeorder *o, dnp_trace_event *e, size_t *idx) {
    if (o->loaded) {
        if (o->next >= o->loaded->nevents)
            return 0;
        *idx = o->next;
        *e = o->loaded->events[o->next++];
        return 1;
    }
    if (o->piped) {
        if (o->iall >= o->nall)
            return 0;
        *idx = o->all[o->iall].idx;
        *e = o->all[o->iall++].e;
        return 1;
    }
    for (;;) {
        if (o->nheap && (o->eof || o->heap[0].e.time_ns <= o->bound)) {
            merge_item it;
            heap_pop(o, &it);
            *e = it.e;
            *idx = it.idx;
            return 1;
        }
        if (o->eof)
            return 0;
        merge_item it;
        int rc = dnp_trace_stream_next(o->s, &it.e);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            o->eof = 1;
            continue;
        }
        if (new_run(o, &it.e) && o->idx > 0)
            o->run++;
        it.run = o->run;
        it.idx = o->idx++;
        it.e.time_ns = it.e.time_ns > o->origin ? it.e.time_ns - o->origin : 0;
        if (heap_push(o, &it) < 0) {
            snprintf(o->err, sizeof o->err, "out of memory");
            return -1;
        }
        /* Later runs start no earlier than sufmin; this one goes on from here. */
        uint64_t later = o->run + 1 <= o->nruns ? o->sufmin[o->run + 1] : UINT64_MAX;
        o->bound = it.e.time_ns < later ? it.e.time_ns : later;
    }
}

void timeorder_close(timeorder *o) {
    if (!o)
        return;
    DNP_FREE_ALL(o->sufmin, o->heap, o->all);
    dnp_trace_stream_close(o->s);
    dnp_trace_free(o->loaded);
    free(o);
}
