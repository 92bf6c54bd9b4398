/* pprof.c: pprof's profile.proto, encoded by hand, gzip-compressed (pprof.h).
 *
 * Fields used (proto/profile.proto of github.com/google/pprof):
 *   Profile   1 sample_type (ValueType), 2 sample, 4 location, 5 function,
 *             6 string_table, 9 time_nanos, 10 duration_nanos, 11 period_type,
 *             12 period, 13 comment (string indexes), 14 default_sample_type
 *   ValueType 1 type, 2 unit (string indexes)
 *   Sample    1 location_id (packed), 2 value (packed)
 *   Mapping   1 id, 5 filename, 7 has_functions: one per native library
 *   Location  1 id, 2 mapping_id (native frames), 4 line (Line: 1 function_id)
 *   Function  1 id, 2 name, 3 system_name, 4 filename (string indexes)
 * Samples are encoded as they are added; strings, functions and locations are
 * interned and written at the end. */
#include "pprof.h"

#include "dnp_free.h"
#include "export.h"
#include "pb.h"
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_TYPES 8
#define MAX_COMMENTS 4


struct dnp_pprof {
    dnp_pprof_type types[MAX_TYPES];
    size_t ntypes;
    dnp_pprof_type period_type;
    int has_period;
    int64_t period, time_nanos, duration_nanos;
    size_t default_type;
    int has_default;
    uint64_t comments[MAX_COMMENTS]; /* string indexes */
    size_t ncomments;

    dnp_intern strs;       /* string_table, each with its NUL; 0 is "" */
    uint64_t *func_of_str; /* string index -> function id (0: none) */
    size_t cap_fos;
    size_t nfuncs;
    uint64_t *func_name; /* function id - 1 -> string index */
    uint32_t *func_map;  /* function id - 1 -> mapping id (0: none) */
    size_t cap_funcs;
    uint64_t *map_file;  /* mapping id - 1 -> its library's string index */
    size_t nmaps, cap_maps;

    dnp_pb samples; /* encoded Sample fields of the Profile */
    int failed;
};

/* ---- strings and functions ---- */

static const char *str_at(const dnp_pprof *p, uint64_t i) {
    return dnp_intern_item(&p->strs, i, NULL);
}

/* The string's index in the table, added if new; 0 ("") on failure. */
static uint64_t str_index(dnp_pprof *p, const char *s) {
    if (!s || !*s || p->failed)
        return 0;
    uint32_t i = dnp_intern_add(&p->strs, s, strlen(s) + 1);
    if (p->strs.failed) {
        p->failed = 1;
        return 0;
    }
    if (i >= p->cap_fos) {
        size_t cap = p->cap_fos ? p->cap_fos * 2 : 256;
        uint64_t *fos = realloc(p->func_of_str, cap * sizeof *fos);
        if (!fos) {
            p->failed = 1;
            return 0;
        }
        memset(fos + p->cap_fos, 0, (cap - p->cap_fos) * sizeof *fos);
        p->func_of_str = fos;
        p->cap_fos = cap;
    }
    return i;
}

/* The mapping of a native frame's library (frame_lib.c), made if new: 0 none. */
static uint32_t mapping_of(dnp_pprof *p, const char *name) {
    char lib[256];
    if (!dnp_frame_library(name, lib, sizeof lib))
        return 0;
    uint64_t s = str_index(p, lib);
    for (size_t i = 0; i < p->nmaps; i++)
        if (p->map_file[i] == s)
            return (uint32_t)i + 1;
    if (p->nmaps == p->cap_maps) {
        size_t cap = p->cap_maps ? p->cap_maps * 2 : 16;
        uint64_t *m = realloc(p->map_file, cap * sizeof *m);
        if (!m) {
            p->failed = 1;
            return 0;
        }
        p->map_file = m;
        p->cap_maps = cap;
    }
    p->map_file[p->nmaps++] = s;
    return (uint32_t)p->nmaps;
}

void dnp_pprof_set_program(dnp_pprof *p, const char *cmdline) {
    char name[512];
    if (p->nmaps || !*dnp_program_file(cmdline, name, sizeof name))
        return;
    uint64_t s = str_index(p, name);
    if (p->failed)
        return;
    p->map_file = malloc(16 * sizeof *p->map_file);
    if (!p->map_file) {
        p->failed = 1;
        return;
    }
    p->cap_maps = 16;
    p->map_file[p->nmaps++] = s;
}

/* The function (and location: the same id) of a name. */
static uint64_t func_id(dnp_pprof *p, const char *name) {
    uint64_t s = str_index(p, name && *name ? name : "[unknown]");
    if (p->failed)
        return 0;
    if (p->func_of_str[s])
        return p->func_of_str[s];
    if (p->nfuncs == p->cap_funcs) {
        size_t cap = p->cap_funcs ? p->cap_funcs * 2 : 256;
        uint64_t *fn = realloc(p->func_name, cap * sizeof *fn);
        if (fn)
            p->func_name = fn;
        uint32_t *fm = fn ? realloc(p->func_map, cap * sizeof *fm) : NULL;
        if (!fm) {
            p->failed = 1;
            return 0;
        }
        p->func_map = fm;
        p->cap_funcs = cap;
    }
    p->func_name[p->nfuncs] = s;
    p->func_map[p->nfuncs++] = mapping_of(p, str_at(p, s));
    return p->func_of_str[s] = p->nfuncs;
}

/* ---- the profile ---- */

dnp_pprof *dnp_pprof_new(const dnp_pprof_type *types, size_t ntypes, const dnp_pprof_type *period_type,
                         int64_t period) {
    if (ntypes == 0 || ntypes > MAX_TYPES)
        return NULL;
    dnp_pprof *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    memcpy(p->types, types, ntypes * sizeof *types);
    p->ntypes = ntypes;
    if (period_type) {
        p->period_type = *period_type;
        p->has_period = 1;
        p->period = period;
    }
    dnp_intern_add(&p->strs, "", 1);
    if (p->strs.failed) {
        dnp_pprof_free(p);
        return NULL;
    }
    /* the types' strings first, so that they read well in the table */
    for (size_t i = 0; i < ntypes; i++) {
        str_index(p, types[i].type);
        str_index(p, types[i].unit);
    }
    return p;
}

int dnp_pprof_add(dnp_pprof *p, const char *const *frames, size_t nframes, const int64_t *values) {
    dnp_pb ids = {0}, vals = {0}, sample = {0};
    for (size_t i = 0; i < nframes; i++)
        dnp_pb_varint(&ids, func_id(p, frames[i]));
    for (size_t i = 0; i < p->ntypes; i++)
        dnp_pb_varint(&vals, (uint64_t)values[i]);
    if (nframes)
        dnp_pb_len(&sample, 1, ids.p, ids.n);
    dnp_pb_len(&sample, 2, vals.p, vals.n);
    if (ids.failed || vals.failed)
        sample.failed = 1;
    dnp_pb_msg(&p->samples, 2, &sample);
    free(ids.p);
    free(vals.p);
    free(sample.p);
    if (p->samples.failed)
        p->failed = 1;
    return p->failed ? -1 : 0;
}

void dnp_pprof_set_time(dnp_pprof *p, int64_t time_nanos, int64_t duration_nanos) {
    p->time_nanos = time_nanos;
    p->duration_nanos = duration_nanos;
}

void dnp_pprof_set_default(dnp_pprof *p, size_t type_index) {
    if (type_index < p->ntypes) {
        p->default_type = type_index;
        p->has_default = 1;
    }
}

void dnp_pprof_add_comment(dnp_pprof *p, const char *text) {
    uint64_t i = str_index(p, text);
    if (i && p->ncomments < MAX_COMMENTS)
        p->comments[p->ncomments++] = i;
}

static void put_value_type(dnp_pb *b, unsigned field, dnp_pprof *p, const dnp_pprof_type *t, dnp_pb *m) {
    dnp_pb_uint(m, 1, str_index(p, t->type));
    dnp_pb_uint(m, 2, str_index(p, t->unit));
    dnp_pb_msg(b, field, m);
}

int dnp_pprof_encode(dnp_pprof *p, uint8_t **out, size_t *len) {
    dnp_pb b = {0}, m = {0}, line = {0};
    /* intern every string before the table is written */
    uint64_t period_type[2] = {0, 0}, def = 0;
    if (p->has_period) {
        period_type[0] = str_index(p, p->period_type.type);
        period_type[1] = str_index(p, p->period_type.unit);
    }
    if (p->has_default)
        def = str_index(p, p->types[p->default_type].type);
    for (size_t i = 0; i < p->ntypes; i++)
        put_value_type(&b, 1, p, &p->types[i], &m);
    dnp_pb_bytes(&b, p->samples.p, p->samples.n);
    for (size_t i = 0; i < p->nmaps; i++) {
        dnp_pb_uint(&m, 1, i + 1);
        dnp_pb_uint(&m, 5, p->map_file[i]);
        dnp_pb_uint(&m, 7, 1);
        dnp_pb_msg(&b, 3, &m);
    }
    for (size_t i = 0; i < p->nfuncs; i++) {
        uint64_t id = i + 1;
        dnp_pb_uint(&m, 1, id);
        if (p->func_map[i])
            dnp_pb_uint(&m, 2, p->func_map[i]);
        dnp_pb_uint(&line, 1, id);
        dnp_pb_msg(&m, 4, &line);
        dnp_pb_msg(&b, 4, &m);
    }
    for (size_t i = 0; i < p->nfuncs; i++) {
        dnp_pb_uint(&m, 1, i + 1);
        dnp_pb_uint(&m, 2, p->func_name[i]); /* no system_name: equal to the name, pprof would take it for a
                                               * C++ name and cut "(async)" and "(local function in ...)" off */
        if (p->func_map[i])
            dnp_pb_uint(&m, 4, p->map_file[p->func_map[i] - 1]);
        dnp_pb_msg(&b, 5, &m);
    }
    for (size_t i = 0; i < p->strs.n; i++) {
        size_t n;
        const void *str = dnp_intern_item(&p->strs, i, &n);
        dnp_pb_len(&b, 6, str, n - 1);
    }
    dnp_pb_uint(&b, 9, (uint64_t)p->time_nanos);
    dnp_pb_uint(&b, 10, (uint64_t)p->duration_nanos);
    if (p->has_period) {
        dnp_pb_uint(&m, 1, period_type[0]);
        dnp_pb_uint(&m, 2, period_type[1]);
        dnp_pb_msg(&b, 11, &m);
        dnp_pb_uint(&b, 12, (uint64_t)p->period);
    }
    for (size_t i = 0; i < p->ncomments; i++)
        dnp_pb_uint(&b, 13, p->comments[i]);
    dnp_pb_uint(&b, 14, def);
    int failed = b.failed || m.failed || line.failed || p->failed;
    free(m.p);
    free(line.p);
    if (failed) {
        free(b.p);
        errno = ENOMEM;
        return -1;
    }
    *out = b.p;
    *len = b.n;
    return 0;
}

int dnp_gzip_write(const void *data, size_t len, FILE *out) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip */, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        errno = ENOMEM;
        return -1;
    }
    uint8_t chunk[65536];
    z.next_in = (uint8_t *)data;
    z.avail_in = (uInt)len;
    int rc = 0, zr;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        zr = deflate(&z, Z_FINISH);
        size_t have = sizeof chunk - z.avail_out;
        if (have && fwrite(chunk, 1, have, out) != have) {
            rc = -1;
            break;
        }
    } while (zr == Z_OK);
    if (rc == 0 && zr != Z_STREAM_END) {
        errno = EIO;
        rc = -1;
    }
    deflateEnd(&z);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = -1;
    return rc;
}

int dnp_pprof_write(dnp_pprof *p, FILE *out) {
    uint8_t *raw;
    size_t len;
    if (dnp_pprof_encode(p, &raw, &len) != 0)
        return -1;
    int rc = dnp_gzip_write(raw, len, out);
    free(raw);
    return rc;
}

void dnp_pprof_free(dnp_pprof *p) {
    if (!p)
        return;
    dnp_intern_free(&p->strs);
    DNP_FREE_ALL(p->func_of_str, p->func_name, p->func_map, p->map_file, p->samples.p, p);
}

/* ---- a call tree ---- */

typedef struct tree_walk {
    const dnp_calltree *ct;
    dnp_pprof *p;
    char **names;   /* by depth: the path's names, innermost last */
    size_t cap;
    const char **frames;
    int weighted;
    uint64_t period_ns; /* --sample trees: a node's own samples are its self time / this */
} tree_walk;

static int tree_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    tree_walk *w = ctx;
    if (!enter || n == 0)
        return 0;
    const dnp_ct_node *node = &tr->nodes[n];
    uint32_t d = node->depth;
    if (d > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        while (cap < d)
            cap *= 2;
        char **names = realloc(w->names, cap * sizeof *names);
        if (!names)
            return -1;
        memset(names + w->cap, 0, (cap - w->cap) * sizeof *names);
        w->names = names;
        const char **frames = realloc(w->frames, cap * sizeof *frames);
        if (!frames)
            return -1;
        w->frames = frames;
        w->cap = cap;
    }
    char dnp_pb[2048];
    const char *name = dnp_export_name(w->ct, node->func, node->name, dnp_pb, sizeof dnp_pb);
    free(w->names[d - 1]);
    w->names[d - 1] = strdup(name);
    if (!w->names[d - 1])
        return -1;
    if (!node->self_ns && !(w->weighted || w->period_ns ? 0 : node->calls))
        return 0;
    for (uint32_t i = 0; i < d; i++)
        w->frames[i] = w->names[d - 1 - i];
    /* a SampleNode's calls are all the samples under it: the stack's own are
     * its self time over the period */
    uint64_t count = w->period_ns ? (node->self_ns + w->period_ns / 2) / w->period_ns : node->calls;
    int64_t values[2] = {(int64_t)count, (int64_t)node->self_ns};
    return dnp_pprof_add(w->p, w->frames, d, values);
}

int dnp_export_pprof(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o) {
    int bytes = ct->unit && strcmp(ct->unit, "bytes") == 0;
    dnp_pprof_type types[2];
    if (ct->weight_type && ct->count_type) { /* --locks: as Go's mutex profile */
        types[0] = (dnp_pprof_type){ct->count_type, "count"};
        types[1] = (dnp_pprof_type){ct->weight_type, ct->unit ? ct->unit : "nanoseconds"};
    } else if (bytes) {
        types[0] = (dnp_pprof_type){"alloc_objects", "count"}; /* samples, see docs/alloc.md */
        types[1] = (dnp_pprof_type){"alloc_space", "bytes"};
    } else if (ct->sample_nodes && ct->sample_period_ns) {
        /* dnprof run --sample: samples, and the time they stand for */
        types[0] = (dnp_pprof_type){"samples", "count"};
        types[1] = (dnp_pprof_type){ct->sample_mode == DNP_SAMPLE_CPU ? "cpu" : "wall", "nanoseconds"};
    } else if (ct->unit) {
        types[0] = (dnp_pprof_type){"samples", "count"};
        types[1] = (dnp_pprof_type){"cpu", ct->unit};
    } else {
        types[0] = (dnp_pprof_type){"calls", "count"};
        types[1] = (dnp_pprof_type){"time", "nanoseconds"};
    }
    for (int i = 0; i < 2; i++)
        if (o && o->type_names[i])
            types[i].type = o->type_names[i];
    int sampled = !bytes && ct->sample_nodes && ct->sample_period_ns;
    dnp_pprof *p = dnp_pprof_new(types, 2, &types[1], sampled ? (int64_t)ct->sample_period_ns : 1);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    dnp_pprof_set_default(p, 1);
    if (ct->t)
        dnp_pprof_set_program(p, ct->t->cmdline);
    char note[192];
    if (sampled && ct->sample_instants) { /* what a share is as precise as (docs/sampling.md) */
        snprintf(note, sizeof note, "dnprof --sample=%s at %llu Hz: %llu samples taken, standing for %llu periods",
                 ct->sample_mode == DNP_SAMPLE_CPU ? "cpu" : "wall", (unsigned long long)ct->sample_rate,
                 (unsigned long long)ct->sample_instants, (unsigned long long)ct->sample_periods);
        dnp_pprof_add_comment(p, note);
    }
    if (o && o->time_ns)
        dnp_pprof_set_time(p, o->time_ns, o->duration_ns);
    else if (ct->t && ct->t->start_realtime_ns)
        dnp_pprof_set_time(p, (int64_t)ct->t->start_realtime_ns, 0);
    tree_walk w = {ct, p, NULL, 0, NULL, ct->unit != NULL, sampled ? ct->sample_period_ns : 0};
    int rc = dnp_ct_walk(o && o->tree ? o->tree : &ct->all, tree_visit, &w);
    for (size_t i = 0; i < w.cap; i++)
        free(w.names[i]);
    free(w.names);
    free(w.frames);
    if (rc == 0)
        rc = dnp_pprof_write(p, out);
    else
        errno = ENOMEM;
    dnp_pprof_free(p);
    return rc ? -1 : 0;
}
