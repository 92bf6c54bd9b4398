/* pprof_read.c: a pprof profile read back (pprof.h), bounded: every length,
 * index and id is checked against what the input holds, and corrupt input
 * gives one line saying what is wrong rather than a profile.
 *
 * Two passes over the Profile message: the first counts what each table
 * needs, the second fills them. */
#include "pprof.h"

#include "dnp_free.h"
#include "pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_RAW ((size_t)256 << 20)

int dnp_gunzip(const uint8_t *gz, size_t len, size_t max, uint8_t **out, size_t *outlen) {
    z_stream z;
    memset(&z, 0, sizeof z);
    *out = NULL;
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return -2;
    size_t cap = len * 4 + 4096, n = 0;
    int zr = Z_OK;
    z.next_in = (uint8_t *)gz;
    z.avail_in = (uInt)len;
    while (zr == Z_OK) {
        uint8_t *nb = cap > max + 1 ? NULL : realloc(*out, cap);
        if (!nb)
            break;
        *out = nb;
        z.next_out = nb + n;
        z.avail_out = (uInt)(cap - n);
        zr = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
        if (z.avail_out == 0)
            cap *= 2;
        else if (zr == Z_OK)
            zr = Z_DATA_ERROR; /* room left, the input used up, and no end */
    }
    inflateEnd(&z);
    if (zr == Z_STREAM_END && n <= max) {
        *outlen = n;
        return 0;
    }
    free(*out);
    *out = NULL;
    return zr == Z_OK || n > max ? -2 : -1;
}

/* The profile's bytes: gunzip'd, or the input as is when it is not gzip. */
static int inflate_all(const uint8_t *data, size_t len, uint8_t **out, size_t *outlen, char *err, size_t errlen) {
    if (len < 2 || data[0] != 0x1f || data[1] != 0x8b) {
        *out = malloc(len ? len : 1);
        if (*out && len)
            memcpy(*out, data, len);
        *outlen = len;
        return *out ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    }
    int rc = dnp_gunzip(data, len, MAX_RAW, out, outlen);
    if (rc != 0)
        snprintf(err, errlen, "%s", rc == -2 ? "more than 256 MiB uncompressed (or no memory)"
                                             : "its gzip stream is corrupt or cut short");
    return rc == 0 ? 0 : -1;
}

typedef struct reader {
    dnp_pprof_data *d;
    size_t nstack; /* location ids so far */
    int fill;      /* pass 2 */
    char *err;
    size_t errlen;
} reader;

static int bad(reader *r, const char *what) {
    snprintf(r->err, r->errlen, "corrupt pprof: %s", what);
    return -1;
}

/* The varint fields of a small message, by field number (1..nf): 0, or -1. */
static int small_msg(const dnp_pb_field *m, uint64_t *out, unsigned nf) {
    if (m->wire != DNP_PB_LEN)
        return -1;
    dnp_pb_in in = {m->p, m->p + m->n};
    dnp_pb_field f;
    int rc;
    memset(out, 0, nf * sizeof *out);
    while ((rc = dnp_pb_next(&in, &f)) > 0)
        if (f.field <= nf && f.wire == DNP_PB_VARINT)
            out[f.field - 1] = f.v;
    return rc;
}

static int count_one(void *ctx, uint64_t v) {
    (void)v;
    ++*(size_t *)ctx;
    return 0;
}

static int add_loc(void *ctx, uint64_t v) {
    reader *r = ctx;
    r->d->stack[r->nstack++] = v;
    return 0;
}

static int add_value(void *ctx, uint64_t v) {
    reader *r = ctx;
    size_t *nv = &r->d->stack_at[r->d->nsamples + 1]; /* the values so far, for now */
    if (*nv >= r->d->ntypes)
        return -1;
    r->d->values[r->d->nsamples * r->d->ntypes + (*nv)++] = (int64_t)v;
    return 0;
}

static int sample(reader *r, const dnp_pb_field *m) {
    dnp_pprof_data *d = r->d;
    if (m->wire != DNP_PB_LEN)
        return bad(r, "a sample is no message");
    dnp_pb_in in = {m->p, m->p + m->n};
    dnp_pb_field f;
    int rc;
    if (r->fill)
        d->stack_at[d->nsamples + 1] = 0;
    while ((rc = dnp_pb_next(&in, &f)) > 0) {
        if (f.field == 1 && dnp_pb_each_varint(&f, r->fill ? add_loc : count_one, r->fill ? (void *)r : &r->nstack))
            return bad(r, "a sample's locations");
        if (f.field == 2 && r->fill && dnp_pb_each_varint(&f, add_value, r) != 0)
            return bad(r, "a sample has more values than sample types");
    }
    if (rc < 0)
        return bad(r, "a sample");
    if (r->fill) {
        if (d->stack_at[d->nsamples + 1] != d->ntypes)
            return bad(r, "a sample has fewer values than sample types");
        d->stack_at[d->nsamples + 1] = r->nstack;
    }
    d->nsamples++;
    return 0;
}

/* A mapping, location or function with its id: into table[id - 1] (n slots of w). */
static int by_id(reader *r, const dnp_pb_field *m, uint64_t *table, size_t n, size_t w, const unsigned *fields,
                 const char *what) {
    uint64_t v[8];
    if (small_msg(m, v, 8) != 0)
        return bad(r, what);
    dnp_pb_in in = {m->p, m->p + m->n};
    dnp_pb_field f;
    int rc;
    if (v[0] == 0 || v[0] > n)
        return bad(r, "an id out of range (ids from 1 to their count)");
    uint64_t *slot = table + (v[0] - 1) * w;
    if (slot[w - 1] != UINT64_MAX)
        return bad(r, "an id given twice");
    for (size_t i = 0; i < w; i++)
        slot[i] = fields[i] ? v[fields[i] - 1] : 0;
    if (w == 2) { /* a location: its first line's function */
        while ((rc = dnp_pb_next(&in, &f)) > 0 && !(f.field == 4 && f.wire == DNP_PB_LEN))
            ;
        if (rc > 0 && small_msg(&f, v, 1) == 0)
            slot[1] = v[0];
    }
    return 0;
}

static int value_type(reader *r, const dnp_pb_field *f, uint64_t out[2]) {
    uint64_t v[2];
    if (small_msg(f, v, 2) != 0)
        return bad(r, "a value type");
    out[0] = v[0];
    out[1] = v[1];
    return 0;
}

static int profile_field(reader *r, const dnp_pb_field *f) {
    static const unsigned map_fields[] = {5}, loc_fields[] = {2, 0}, fn_fields[] = {2, 3, 4};
    dnp_pprof_data *d = r->d;
    switch (f->field) {
    case 1:
        if (d->ntypes == 8)
            return bad(r, "more than 8 sample types");
        return value_type(r, f, d->types[d->ntypes++]);
    case 2: return sample(r, f);
    case 3: return r->fill ? by_id(r, f, d->map_file, d->nmaps, 1, map_fields, "a mapping") : (d->nmaps++, 0);
    case 4: return r->fill ? by_id(r, f, &d->locs[0][0], d->nlocs, 2, loc_fields, "a location") : (d->nlocs++, 0);
    case 5: return r->fill ? by_id(r, f, &d->funcs[0][0], d->nfuncs, 3, fn_fields, "a function") : (d->nfuncs++, 0);
    case 6:
        if (f->wire != DNP_PB_LEN)
            return bad(r, "a string");
        if (r->fill)
            d->strs[d->nstrs] = (dnp_pprof_str){(const char *)f->p, f->n};
        d->nstrs++;
        return 0;
    case 9: d->time_nanos = (int64_t)f->v; return 0;
    case 10: d->duration_nanos = (int64_t)f->v; return 0;
    case 11: return value_type(r, f, d->period_type);
    case 12: d->period = (int64_t)f->v; return 0;
    default: return 0;
    }
}

static int pass(reader *r, const uint8_t *p, size_t n) {
    dnp_pb_in in = {p, p + n};
    dnp_pb_field f;
    int rc;
    dnp_pprof_data *d = r->d;
    d->ntypes = d->nsamples = d->nstrs = 0;
    if (!r->fill)
        d->nmaps = d->nlocs = d->nfuncs = 0;
    while ((rc = dnp_pb_next(&in, &f)) > 0)
        if (profile_field(r, &f) != 0)
            return -1;
    return rc < 0 ? bad(r, "not a protobuf message") : 0;
}

static int alloc_tables(reader *r) {
    dnp_pprof_data *d = r->d;
    size_t ns = d->nsamples;
    d->strs = calloc(d->nstrs + 1, sizeof *d->strs);
    d->map_file = malloc((d->nmaps + 1) * sizeof *d->map_file);
    d->locs = malloc((d->nlocs + 1) * sizeof *d->locs);
    d->funcs = malloc((d->nfuncs + 1) * sizeof *d->funcs);
    d->stack = malloc((r->nstack + 1) * sizeof *d->stack);
    d->stack_at = calloc(ns + 2, sizeof *d->stack_at);
    d->values = malloc((ns * d->ntypes + 1) * sizeof *d->values);
    if (!d->strs || !d->map_file || !d->locs || !d->funcs || !d->stack || !d->stack_at || !d->values)
        return snprintf(r->err, r->errlen, "out of memory"), -1;
    /* UINT64_MAX in each entry's last slot: not given yet */
    memset(d->map_file, 0xff, (d->nmaps + 1) * sizeof *d->map_file);
    memset(d->locs, 0xff, (d->nlocs + 1) * sizeof *d->locs);
    memset(d->funcs, 0xff, (d->nfuncs + 1) * sizeof *d->funcs);
    r->nstack = 0;
    r->fill = 1;
    return 0;
}

/* Every reference within the tables. */
static int check(reader *r) {
    dnp_pprof_data *d = r->d;
    size_t ns = d->nstrs;
    for (size_t i = 0; i < d->ntypes; i++)
        if (d->types[i][0] >= ns || d->types[i][1] >= ns)
            return bad(r, "a sample type's string out of the table");
    if (d->period_type[0] >= ns || d->period_type[1] >= ns)
        return bad(r, "the period type's string out of the table");
    for (size_t i = 0; i < d->nmaps; i++)
        if (d->map_file[i] >= ns)
            return bad(r, "a mapping missing, or its file out of the string table");
    for (size_t i = 0; i < d->nlocs; i++)
        if (d->locs[i][1] == UINT64_MAX || d->locs[i][0] > d->nmaps || d->locs[i][1] > d->nfuncs)
            return bad(r, "a location missing, or its mapping or function unknown");
    for (size_t i = 0; i < d->nfuncs; i++)
        for (int k = 0; k < 3; k++)
            if (d->funcs[i][k] >= ns)
                return bad(r, "a function missing, or its names out of the string table");
    for (size_t i = 0; i < r->nstack; i++)
        if (d->stack[i] == 0 || d->stack[i] > d->nlocs)
            return bad(r, "a sample's location unknown");
    if (ns == 0 || d->strs[0].n != 0)
        return bad(r, "its string table does not start with \"\"");
    return 0;
}

int dnp_pprof_read(const uint8_t *data, size_t len, dnp_pprof_data *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    size_t n;
    if (inflate_all(data, len, &d->raw, &n, err, errlen) != 0)
        return -1;
    reader r = {d, 0, 0, err, errlen};
    if (pass(&r, d->raw, n) != 0 || alloc_tables(&r) != 0 || pass(&r, d->raw, n) != 0 || check(&r) != 0) {
        dnp_pprof_data_free(d);
        return -1;
    }
    return 0;
}

void dnp_pprof_data_free(dnp_pprof_data *d) {
    DNP_FREE_ALL(d->raw, d->strs, d->map_file, d->locs, d->funcs, d->stack, d->stack_at, d->values);
    memset(d, 0, sizeof *d);
}
