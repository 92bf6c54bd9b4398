/* report_alloc.c: sampled allocations (dnprof run/attach --alloc): what was
 * allocated, by type and by allocating call path, estimated from the runtime's
 * samples (docs/alloc.md), and the same as a call tree whose weight is bytes,
 * for the exports (the allocated type is the leaf frame).
 *
 * The trace is streamed: memory is bounded by the distinct types, stacks and
 * frames, not by the number of samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "ct_text.h"
#include "cli.h"
#include "export.h"
#include "idmap.h"
#include "report.h"
#include "trace_reader.h"
#include "dnp_vec.h"
#include "dnp_free.h"

typedef struct alloc_type {
    uint64_t name;                  /* string number */
    uint64_t samples, bytes;        /* bytes: the estimate, sum of weights */
    double objects;                 /* estimate: sum of weight / size */
    uint64_t sampled_bytes;         /* the sampled objects' own sizes */
} alloc_type;

typedef struct alloc_site {
    uint64_t stack, type;           /* string numbers (stack 0: none) */
    uint64_t samples, bytes;
    double objects;
} alloc_site;

struct alloc_profile {
    const char *path;
    dnp_trace_stream *s;
    const dnp_trace *t;
    uint64_t source, mean;          /* from AllocSampling; 0 if not seen */
    uint64_t samples, bytes;
    double objects;
    alloc_type *types;
    size_t ntypes, cap_types;
    alloc_site *sites;
    size_t nsites, cap_sites;
    dnp_idmap type_h, site_h;
    /* the call tree, made on demand */
    dnp_calltree *ct;
    dnp_ct_names nm;                /* frame names of the tree (own names) */
};

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    alloc_profile *p = ctx;
    (void)t;
    if (e->kind == DNP_EV_AllocSampling) {
        p->source = e->v[DNP_V(AllocSampling, source)];
        p->mean = e->v[DNP_V(AllocSampling, meanBytes)];
        return 0;
    }
    uint64_t type, size, weight, stack, n;
    double objects;
    if (e->kind == DNP_EV_AllocSample) { /* one sample (DNP_ENV_ALLOC_EACH=1) */
        type = e->v[DNP_V(AllocSample, typeName)], size = e->v[DNP_V(AllocSample, objectSize)];
        weight = e->v[DNP_V(AllocSample, weightBytes)], stack = e->v[DNP_V(AllocSample, stack)], n = 1;
        objects = size ? (double)weight / (double)size : 1.0;
    } else if (e->kind == DNP_EV_AllocSite) { /* samples added up since the last of its key */
        type = e->v[DNP_V(AllocSite, typeName)], stack = e->v[DNP_V(AllocSite, stack)], n = e->v[DNP_V(AllocSite, samples)];
        weight = e->v[DNP_V(AllocSite, weightBytes)], size = e->v[DNP_V(AllocSite, objectBytes)];
        objects = (double)e->v[DNP_V(AllocSite, objectsMilli)] / 1000.0;
    } else {
        return 0;
    }
    uint32_t i;
    if (!dnp_idmap_get(&p->type_h, type, 0, &i)) {
        if (DNP_VEC_RESERVE(p->types, p->cap_types, p->ntypes + 1, 64) != 0)
            return -1;
        i = (uint32_t)p->ntypes++;
        memset(&p->types[i], 0, sizeof p->types[i]);
        p->types[i].name = type;
        if (dnp_idmap_put(&p->type_h, type, 0, i) != 0)
            return -1;
    }
    alloc_type *ty = &p->types[i];
    ty->samples += n;
    ty->bytes += weight;
    ty->objects += objects;
    ty->sampled_bytes += size;
    if (!dnp_idmap_get(&p->site_h, stack, type, &i)) {
        if (DNP_VEC_RESERVE(p->sites, p->cap_sites, p->nsites + 1, 64) != 0)
            return -1;
        i = (uint32_t)p->nsites++;
        memset(&p->sites[i], 0, sizeof p->sites[i]);
        p->sites[i].stack = stack;
        p->sites[i].type = type;
        if (dnp_idmap_put(&p->site_h, stack, type, i) != 0)
            return -1;
    }
    p->sites[i].samples += n;
    p->sites[i].bytes += weight;
    p->sites[i].objects += objects;
    p->samples += n;
    p->bytes += weight;
    p->objects += objects;
    return 0;
}

static int by_type_bytes(const void *x, const void *y) {
    const alloc_type *a = x, *b = y;
    return a->bytes != b->bytes ? (a->bytes < b->bytes ? 1 : -1) : (a->name > b->name) - (a->name < b->name);
}

static int by_site_bytes(const void *x, const void *y) {
    const alloc_site *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->stack != b->stack ? (a->stack > b->stack) - (a->stack < b->stack) : (a->type > b->type) - (a->type < b->type);
}

int alloc_open(const char *path, alloc_profile **out) {
    *out = NULL;
    alloc_profile *p = calloc(1, sizeof *p);
    if (!p)
        return error("out of memory"), 1;
    p->path = path;
    if (report_read_events(path, feed, p, &p->s, 1) != 0) {
        alloc_free(p);
        return 1;
    }
    p->t = dnp_trace_stream_trace(p->s);
    if (p->ntypes)
        qsort(p->types, p->ntypes, sizeof *p->types, by_type_bytes);
    if (p->nsites)
        qsort(p->sites, p->nsites, sizeof *p->sites, by_site_bytes);
    *out = p;
    return 0;
}

void alloc_free(alloc_profile *p) {
    if (!p)
        return;
    dnp_calltree_free(p->ct);
    dnp_ct_names_release(&p->nm);
    dnp_idmap_release(&p->type_h);
    dnp_idmap_release(&p->site_h);
    DNP_FREE_ALL(p->types, p->sites);
    dnp_trace_stream_close(p->s);
    free(p);
}

int alloc_has_data(const alloc_profile *p) {
    return p && p->samples > 0;
}

static const char *str(const alloc_profile *p, uint64_t id, const char *none) {
    return report_string(p->t, id, none);
}

/* ---- the call tree ---- */

const dnp_calltree *alloc_calltree(alloc_profile *p) {
    if (p->ct)
        return p->ct;
    dnp_calltree *ct = dnp_ct_weighted_new(p->t, "bytes");
    if (!ct)
        return NULL;
    int rc = 0;
    for (size_t k = 0; k < p->nsites && rc == 0; k++) {
        const alloc_site *s = &p->sites[k];
        uint64_t objects = (uint64_t)(s->objects + 0.5);
        rc = dnp_ct_text_add(ct, &p->nm, str(p, s->stack, "[no managed stack]"), str(p, s->type, "[unknown type]"),
                             s->bytes, objects ? objects : 1);
    }
    if (rc == 0)
        rc = dnp_ct_text_finish(ct, &p->nm);
    if (rc != 0) {
        dnp_calltree_free(ct);
        return NULL;
    }
    p->ct = ct;
    return ct;
}

/* ---- the report ---- */

static void json_type(FILE *out, const alloc_profile *p, const alloc_type *ty) {
    fputs("{\"type\":", out);
    dnp_export_json_str(out, str(p, ty->name, "[unknown type]"), 0);
    fprintf(out, ",\"samples\":%llu,\"bytes\":%llu,\"objects\":%.0f,\"share\":%.4f}",
            (unsigned long long)ty->samples, (unsigned long long)ty->bytes, ty->objects,
            p->bytes ? (double)ty->bytes / (double)p->bytes : 0.0);
}

static void json_site(FILE *out, const alloc_profile *p, const alloc_site *s) {
    fputs("{\"type\":", out);
    dnp_export_json_str(out, str(p, s->type, "[unknown type]"), 0);
    const char *text = dnp_trace_string(p->t, s->stack);
    fputs(",\"stack\":", out);
    report_json_frames(out, text, 0);
    fprintf(out, ",\"samples\":%llu,\"bytes\":%llu,\"objects\":%.0f,\"share\":%.4f",
            (unsigned long long)s->samples, (unsigned long long)s->bytes, s->objects,
            p->bytes ? (double)s->bytes / (double)p->bytes : 0.0);
    fputs(",\"raw\":", out); /* as recorded, as the call report's "raw"; last, after the figures */
    report_json_frames(out, text, 1);
    fputc('}', out);
}

static const char *source_name(uint64_t source) {
    return source == 1 ? "AllocationSampled" : source == 2 ? "AllocationTick" : "unknown";
}

int report_alloc(alloc_profile *p, const report_opts *o, FILE *out) {
    if (!alloc_has_data(p)) {
        error("%s: this trace has no sampled allocations: record it with dnprof run --alloc (or "
              "dnprof attach PID --alloc)", p->path);
        return 1;
    }
    size_t ntop = o->top < p->ntypes ? o->top : p->ntypes;
    size_t nsites = o->top < p->nsites ? o->top : p->nsites;
    if (o->json) {
        fprintf(out, "{\"trace\":");
        dnp_export_json_str(out, p->path, 0);
        fprintf(out, ",\"source\":\"%s\",\"meanBytes\":%llu,\"samples\":%llu,\"bytes\":%llu,\"objects\":%.0f,"
                     "\"types\":[",
                source_name(p->source), (unsigned long long)p->mean, (unsigned long long)p->samples,
                (unsigned long long)p->bytes, p->objects);
        for (size_t i = 0; i < p->ntypes; i++) {
            fputs(i ? ",\n" : "\n", out);
            json_type(out, p, &p->types[i]);
        }
        fputs("],\"paths\":[", out);
        for (size_t i = 0; i < nsites; i++) {
            fputs(i ? ",\n" : "\n", out);
            json_site(out, p, &p->sites[i]);
        }
        fputs("]}\n", out);
        return ferror(out) ? 1 : 0;
    }
    char a[32], b[32], c[32];
    fprintf(out, "%s: %s allocation samples (%s), about %s allocated in %s objects\n",
            cli_short_path(p->path), cli_fmt_count(p->samples, a), source_name(p->source),
            cli_fmt_bytes(p->bytes, b), cli_fmt_count((uint64_t)(p->objects + 0.5), c));
    fprintf(out, "estimates: one sample per %s allocated on average (docs/alloc.md)\n\n",
            cli_fmt_bytes(p->mean ? p->mean : 102400, a));
    fprintf(out, "%7s %12s %14s %9s  %s\n", "share", "bytes", "objects", "samples", "type");
    for (size_t i = 0; i < ntop; i++) {
        const alloc_type *ty = &p->types[i];
        fprintf(out, "%6.2f%% %12s %14s %9s  %s\n", report_pct(ty->bytes, p->bytes), cli_fmt_bytes(ty->bytes, a),
                cli_fmt_count((uint64_t)(ty->objects + 0.5), b), cli_fmt_count(ty->samples, c),
                str(p, ty->name, "[unknown type]"));
    }
    if (p->ntypes > ntop)
        fprintf(out, "  ... %zu more types (--top)\n", p->ntypes - ntop);
    fputs("\ntop allocating paths (innermost frame first):\n", out);
    for (size_t i = 0; i < nsites; i++) {
        const alloc_site *s = &p->sites[i];
        fprintf(out, "\n%6.2f%% %s  %s (%s samples)\n", report_pct(s->bytes, p->bytes), cli_fmt_bytes(s->bytes, a),
                str(p, s->type, "[unknown type]"), cli_fmt_count(s->samples, b));
        report_print_stack(out, dnp_trace_string(p->t, s->stack));
    }
    return ferror(out) ? 1 : 0;
}
