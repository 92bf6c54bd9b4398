/* speedscope.c: speedscope's file format (https://www.speedscope.app/file-format-schema.json).
 *
 * With the enter/leave timeline: one "evented" profile per thread, every call's
 * open and close at its exact time (one pass over the events per thread); the
 * shared frame table comes first, from the timeline's functions that the pass
 * building the trees collected. With aggregates only: "sampled" profiles, one
 * sample per call path weighted by its self time in ns, all threads merged
 * first, then each thread, and the frame table last. Profiles are written as
 * they are walked, so memory stays bounded by the number of distinct functions
 * and the deepest stack. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "idmap.h"
#include "dnp_vec.h"

typedef struct ss_frame {
    uint64_t func, name;
} ss_frame;

typedef struct speedscope {
    const dnp_calltree *ct;
    FILE *out;
    dnp_idmap map;
    ss_frame *frames;
    size_t nframes, cap;
    uint32_t *stack; /* frame indexes by depth */
    size_t nstack;
    int first;
    uint64_t start, end;
    const dnp_export_opts *o;
    uint64_t pass, npasses;
} speedscope;

static int frame_of(speedscope *s, uint64_t func, uint64_t name, uint32_t *idx) {
    if (dnp_idmap_get(&s->map, dnp_ct_frame_key(func, name), 0, idx))
        return 0;
    if (DNP_VEC_RESERVE(s->frames, s->cap, s->nframes + 1, 256) < 0)
        return -1;
    *idx = (uint32_t)s->nframes;
    s->frames[s->nframes++] = (ss_frame){func, name};
    return dnp_idmap_put(&s->map, dnp_ct_frame_key(func, name), 0, *idx);
}

static int stack_at(speedscope *s, size_t depth) {
    if (DNP_VEC_RESERVE(s->stack, s->nstack, depth + 1, 64) < 0)
        return -1;
    return 0;
}

/* ---- sampled, from a tree ---- */

static int samples_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    speedscope *s = ctx;
    const dnp_ct_node *node = &tr->nodes[n];
    if (!enter || n == 0)
        return 0;
    uint32_t d = node->depth - 1;
    if (stack_at(s, d) != 0 || frame_of(s, node->func, node->name, &s->stack[d]) != 0)
        return -1;
    if (!node->self_ns)
        return 0;
    fputs(s->first ? "[" : ",[", s->out);
    s->first = 0;
    for (uint32_t i = 0; i <= d; i++)
        fprintf(s->out, i ? ",%u" : "%u", s->stack[i]);
    fputc(']', s->out);
    return ferror(s->out) ? -1 : 0;
}

static int weights_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    speedscope *s = ctx;
    const dnp_ct_node *node = &tr->nodes[n];
    if (!enter || n == 0 || !node->self_ns)
        return 0;
    fprintf(s->out, s->first ? "%llu" : ",%llu", (unsigned long long)node->self_ns);
    s->first = 0;
    return ferror(s->out) ? -1 : 0;
}

static int write_sampled(speedscope *s, const dnp_ct_tree *tr, int comma) {
    dnp_export_thread_object(s->out, comma, "{\"type\":\"sampled\",\"name\":", tr, 0);
    fprintf(s->out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
            s->ct->unit ? s->ct->unit : "nanoseconds", (unsigned long long)tr->nodes[0].total_ns);
    s->first = 1;
    if (dnp_ct_walk(tr, samples_visit, s) != 0)
        return -1;
    fputs("],\"weights\":[", s->out);
    s->first = 1;
    if (dnp_ct_walk(tr, weights_visit, s) != 0)
        return -1;
    fputs("]}", s->out);
    return 0;
}

/* ---- evented, from the timeline ---- */

static int evented_visit(void *ctx, uint32_t thread, int open, int how, const dnp_tl_frame *f,
                         uint32_t depth, uint64_t now) {
    speedscope *s = ctx;
    uint32_t idx;
    (void)thread;
    (void)how;
    (void)depth;
    if (!dnp_idmap_get(&s->map, f->func, 0, &idx))
        return -1; /* the first pass saw every function */
    if (s->first)
        s->start = now;
    s->end = now;
    fprintf(s->out, "%s{\"type\":\"%s\",\"frame\":%u,\"at\":%llu}", s->first ? "" : ",", open ? "O" : "C", idx,
            (unsigned long long)now);
    s->first = 0;
    return ferror(s->out) ? -1 : 0;
}

static void pass_progress(void *ctx, uint64_t done, uint64_t total) {
    speedscope *s = ctx;
    if (s->o && s->o->progress)
        s->o->progress(s->o->progress_ctx, s->pass * total + done, s->npasses * total);
}

/* One pass over the timeline per thread (from a stream: only that thread's
 * chunks are read); the frames are already known. */
static int write_evented(speedscope *s, const dnp_calltree *ct) {
    const dnp_trace *t = ct->t;
    s->npasses = ct->ntl_threads;
    int rc = 0, comma = 0;
    s->pass = 0;
    for (size_t i = 0; i < ct->ntl_threads && rc == 0; i++) {
        uint32_t k = ct->tl_threads[i];
        const dnp_trace_thread *th = dnp_trace_thread_get(t, k);
        dnp_ct_tree label_of = {0};
        label_of.thread = k;
        label_of.os_tid = th ? th->os_tid : 0;
        label_of.name = th ? th->name : NULL;
        dnp_export_thread_object(s->out, comma, "{\"type\":\"evented\",\"name\":", &label_of, 0);
        fputs(",\"unit\":\"nanoseconds\",\"events\":[", s->out);
        s->first = 1;
        s->start = s->end = 0;
        rc = dnp_ct_timeline_walk(ct, k, evented_visit, s, pass_progress, s, NULL);
        fprintf(s->out, "],\"startValue\":%llu,\"endValue\":%llu}", (unsigned long long)s->start,
                (unsigned long long)s->end);
        comma = 1;
        s->pass++;
    }
    return rc;
}

static void write_frames(speedscope *s, const dnp_calltree *ct) {
    FILE *out = s->out;
    fputs("\"shared\":{\"frames\":[", out);
    for (size_t i = 0; i < s->nframes; i++) {
        char buf[2048], raw[64];
        fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
        dnp_export_json_str(out, dnp_export_name(ct, s->frames[i].func, s->frames[i].name, buf, sizeof buf), 0);
        const char *r = dnp_ct_raw_name(ct, s->frames[i].func, s->frames[i].name, raw, sizeof raw);
        char lib[256];
        if (dnp_frame_library(r, lib, sizeof lib)) { /* native code: its library */
            fputs(",\"file\":", out);
            dnp_export_json_str(out, lib, 0);
        } else if (strcmp(r, buf) != 0) { /* speedscope shows "file" under the name */
            fputs(",\"file\":", out);
            dnp_export_json_str(out, r, 0);
        }
        fputc('}', out);
    }
    fputs("\n]}", out);
}

int dnp_export_speedscope(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o) {
    speedscope s;
    memset(&s, 0, sizeof s);
    s.ct = ct;
    s.out = out;
    s.o = o;
    const char *title = o && o->title ? o->title : ct->t->cmdline;
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"dnprof " DNPROF_VERSION
          "\",\"name\":",
          out);
    dnp_export_json_str(out, title ? title : "dnprof", 0);
    int rc = 0;
    if (ct->timeline_events) {
        /* the frames first, known from the pass that built the trees */
        for (size_t i = 0; i < ct->ntl_funcs && rc == 0; i++) {
            uint32_t idx;
            rc = frame_of(&s, ct->tl_funcs[i].func, ct->tl_funcs[i].name, &idx);
        }
        if (rc == 0) {
            fputc(',', out);
            write_frames(&s, ct);
            fputs(",\"activeProfileIndex\":0,\"profiles\":[", out);
            rc = write_evented(&s, ct);
        }
        if (rc == 0)
            fputs("\n]}\n", out);
    } else {
        fputs(",\"activeProfileIndex\":0,\"profiles\":[", out);
        int comma = 0;
        if (ct->nthreads != 1) {
            rc = write_sampled(&s, &ct->all, 0);
            comma = 1;
        }
        for (size_t i = 0; i < ct->nthreads && rc == 0; i++, comma = 1)
            rc = write_sampled(&s, &ct->threads[i], comma);
        if (rc == 0) {
            fputs("\n],", out);
            write_frames(&s, ct);
            fputs("}\n", out);
        }
    }
    dnp_idmap_release(&s.map);
    free(s.frames);
    free(s.stack);
    return dnp_export_end(out, rc);
}
