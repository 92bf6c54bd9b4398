/* otlp_encode.c: a window's pprof profiles (windows_read.c) read back
 * (pprof_read.c) and written as an OTLP ExportProfilesServiceRequest (otlp.h).
 *
 * Field numbers: opentelemetry-proto, opentelemetry/proto/ (copies in
 * tests/e2e/ingest/proto/):
 *   ExportProfilesServiceRequest 1 resource_profiles, 2 dictionary
 *   ResourceProfiles  1 resource (Resource: 1 attributes), 2 scope_profiles
 *   ScopeProfiles     1 scope (InstrumentationScope: 1 name, 2 version), 2 profiles
 *   KeyValue          1 key, 2 value (AnyValue: 1 string_value, 3 int_value)
 *   Profile           1 sample_type, 2 samples, 3 time_unix_nano (fixed64),
 *                     4 duration_nano, 5 period_type, 6 period, 7 profile_id
 *   ValueType         1 type_strindex, 2 unit_strindex
 *   Sample            1 stack_index, 4 values (packed)
 *   ProfilesDictionary 1 mapping_table, 2 location_table, 3 function_table,
 *                     4 link_table, 5 string_table, 6 attribute_table, 7 stack_table
 *   Mapping 4 filename_strindex; Location 1 mapping_index, 3 lines, 4 attribute_indices;
 *   Line 1 function_index; Function 1 name, 2 system_name, 3 filename (strindex);
 *   Stack 1 location_indices (packed); KeyValueAndUnit 1 key_strindex, 2 value
 * Each table's item 0 is its zero value, and no item is there twice: items
 * are interned by their encoding. Profile has one sample type: a pprof of
 * two (samples/count and cpu/nanoseconds) becomes two Profiles. */
#include "otlp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dnp_free.h"
#include "pprof.h"

/* ---- the dictionary: tables of items interned by their encoding (pb.h) ---- */

enum { T_MAPPING, T_LOCATION, T_FUNCTION, T_STRING, T_STACK, NTABLES };
static const unsigned table_field[NTABLES] = {1, 2, 3, 5, 7};

typedef struct enc {
    dnp_intern tab[NTABLES];
    dnp_pb m, m2; /* scratch */
    int failed;
} enc;

static uint32_t str_of(enc *e, const char *p, size_t n) {
    return dnp_intern_add(&e->tab[T_STRING], p, n);
}

static uint32_t cstr(enc *e, const char *s) {
    return str_of(e, s, strlen(s));
}

/* m, as an item of table t: its index (m emptied). */
static uint32_t intern_msg(enc *e, int t, dnp_pb *m) {
    if (m->failed)
        e->failed = 1;
    uint32_t i = dnp_intern_add(&e->tab[t], m->p, m->n);
    m->n = 0;
    return i;
}

/* ---- one pprof ---- */

static uint64_t mix(uint64_t x) { /* splitmix64's finalizer */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct conv {
    enc *e;
    const dnp_pprof_data *d;
    uint32_t *str, *map, *fn, *loc; /* pprof's index or id -> the dictionary's index + 1 (0: not yet) */
    uint32_t managed, native;       /* the attributes of a frame's type */
} conv;

static uint32_t conv_str(conv *c, uint64_t i) {
    if (!c->str[i])
        c->str[i] = str_of(c->e, c->d->strs[i].p, c->d->strs[i].n) + 1;
    return c->str[i] - 1;
}

static uint32_t conv_fn(conv *c, uint64_t id) {
    if (!id)
        return 0;
    if (!c->fn[id - 1]) {
        dnp_pb *m = &c->e->m2;
        const uint64_t *f = c->d->funcs[id - 1];
        dnp_pb_uint(m, 1, conv_str(c, f[0]));
        dnp_pb_uint(m, 2, conv_str(c, f[1]));
        dnp_pb_uint(m, 3, conv_str(c, f[2]));
        c->fn[id - 1] = intern_msg(c->e, T_FUNCTION, m) + 1;
    }
    return c->fn[id - 1] - 1;
}

static uint32_t conv_loc(conv *c, uint64_t id) {
    if (!c->loc[id - 1]) {
        uint64_t map_id = c->d->locs[id - 1][0];
        uint32_t fn = conv_fn(c, c->d->locs[id - 1][1]), mi = 0;
        if (map_id && !(mi = c->map[map_id - 1])) {
            dnp_pb_uint(&c->e->m2, 4, conv_str(c, c->d->map_file[map_id - 1]));
            mi = c->map[map_id - 1] = intern_msg(c->e, T_MAPPING, &c->e->m2);
        }
        dnp_pb *m = &c->e->m, line = {0};
        dnp_pb_uint(m, 1, mi);
        dnp_pb_uint(&line, 1, fn);
        dnp_pb_msg(m, 3, &line);
        free(line.p);
        dnp_pb_uint(m, 4, mi ? c->native : c->managed); /* one index: a packed list of one is the same varint */
        c->loc[id - 1] = intern_msg(c->e, T_LOCATION, m) + 1;
    }
    return c->loc[id - 1] - 1;
}

/* Sample i's stack: its index in the dictionary. */
static uint32_t conv_stack(conv *c, size_t i) {
    dnp_pb ids = {0};
    for (size_t k = c->d->stack_at[i]; k < c->d->stack_at[i + 1]; k++)
        dnp_pb_varint(&ids, conv_loc(c, c->d->stack[k]));
    if (ids.n)
        dnp_pb_len(&c->e->m, 1, ids.p, ids.n);
    if (ids.failed)
        c->e->failed = 1;
    free(ids.p);
    return intern_msg(c->e, T_STACK, &c->e->m);
}

static void value_type(conv *c, dnp_pb *b, unsigned field, const uint64_t vt[2]) {
    dnp_pb m = {0};
    dnp_pb_uint(&m, 1, conv_str(c, vt[0]));
    dnp_pb_uint(&m, 2, conv_str(c, vt[1]));
    dnp_pb_msg(b, field, &m);
    free(m.p);
}

/* One Profile per sample type of the pprof into profiles (ScopeProfiles' field 2). */
static void conv_profiles(conv *c, const window_file *w, dnp_pb *profiles) {
    const dnp_pprof_data *d = c->d;
    uint32_t *stacks = malloc((d->nsamples + 1) * sizeof *stacks);
    if (!stacks) {
        c->e->failed = 1;
        return;
    }
    for (size_t i = 0; i < d->nsamples; i++)
        stacks[i] = conv_stack(c, i);
    dnp_pb p = {0}, s = {0}, v = {0};
    for (size_t t = 0; t < d->ntypes; t++) {
        value_type(c, &p, 1, d->types[t]);
        for (size_t i = 0; i < d->nsamples; i++) {
            int64_t val = d->values[i * d->ntypes + t];
            if (!val)
                continue;
            dnp_pb_uint(&s, 1, stacks[i]);
            dnp_pb_varint(&v, (uint64_t)val);
            dnp_pb_len(&s, 4, v.p, v.n);
            v.n = 0;
            dnp_pb_msg(&p, 2, &s);
        }
        dnp_pb_fixed64(&p, 3, (uint64_t)(d->time_nanos ? d->time_nanos : (int64_t)w->start_ns));
        dnp_pb_uint(&p, 4, (uint64_t)(d->duration_nanos ? d->duration_nanos : (int64_t)w->duration_ns));
        if (d->period_type[0] || d->period_type[1])
            value_type(c, &p, 5, d->period_type);
        dnp_pb_uint(&p, 6, (uint64_t)d->period);
        uint8_t id[16]; /* profile_id: of the process, window and type; never all zero */
        uint64_t h1 = mix((uint64_t)w->pid << 32 ^ w->index) | 1, h2 = mix(w->start_ns + t);
        for (int k = 0; k < 8; k++)
            id[k] = (uint8_t)(h1 >> (8 * k)), id[8 + k] = (uint8_t)(h2 >> (8 * k));
        dnp_pb_len(&p, 7, id, sizeof id);
        dnp_pb_msg(profiles, 2, &p);
    }
    if (v.failed || s.failed)
        c->e->failed = 1;
    DNP_FREE_ALL(stacks, p.p, s.p, v.p);
}

/* ---- the request ---- */

/* attribute_table: 0 the zero value, then profile.frame.type (the semantic
 * conventions' attribute of a frame) dotnet (ATTR_MANAGED) and native. */
enum { ATTR_MANAGED = 1, ATTR_NATIVE = 2 };

static void write_attribute_table(enc *e, dnp_pb *dict) {
    static const char *const kinds[] = {"dotnet", "native"};
    dnp_pb m = {0}, any = {0};
    dnp_pb_msg(dict, 6, &m);
    for (int i = 0; i < 2; i++) {
        dnp_pb_uint(&m, 1, cstr(e, "profile.frame.type"));
        dnp_pb_str(&any, 1, kinds[i]);
        dnp_pb_msg(&m, 2, &any);
        dnp_pb_msg(dict, 6, &m);
    }
    if (m.failed || any.failed)
        e->failed = 1;
    free(m.p);
    free(any.p);
}

static void write_dictionary(enc *e, dnp_pb *out) {
    dnp_pb dict = {0};
    static const uint8_t zero_link[] = {0x0a, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0x12, 8,  0, 0, 0, 0, 0, 0, 0, 0}; /* 16 and 8 zero bytes */
    write_attribute_table(e, &dict); /* first: its strings go into the table */
    dnp_pb_len(&dict, 4, zero_link, sizeof zero_link);
    for (int t = 0; t < NTABLES; t++) {
        const dnp_intern *it = &e->tab[t];
        if (it->failed)
            e->failed = 1;
        for (size_t i = 0; i < it->n; i++) {
            size_t n;
            const void *item = dnp_intern_item(it, i, &n);
            dnp_pb_len(&dict, table_field[t], item, n);
        }
    }
    dnp_pb_msg(out, 2, &dict);
    free(dict.p);
}

/* Resource: 1 attributes (KeyValue); ScopeProfiles' scope. */
static void write_resource(const otlp_attr *attrs, size_t nattrs, dnp_pb *rp) {
    dnp_pb res = {0}, kv = {0}, any = {0};
    for (size_t i = 0; i < nattrs; i++) {
        dnp_pb_str(&kv, 1, attrs[i].key);
        if (attrs[i].str)
            dnp_pb_len(&any, 1, attrs[i].str, strlen(attrs[i].str));
        else {
            dnp_pb_key(&any, 3, DNP_PB_VARINT);
            dnp_pb_varint(&any, (uint64_t)attrs[i].num);
        }
        dnp_pb_msg(&kv, 2, &any);
        dnp_pb_msg(&res, 1, &kv);
    }
    if (kv.failed || any.failed)
        res.failed = 1;
    dnp_pb_msg(rp, 1, &res);
    DNP_FREE_ALL(res.p, kv.p, any.p);
}

/* One pprof of the window into the scope's profiles. */
static int add_pprof(enc *e, const window_file *w, const window_profile *wp, dnp_pb *scope, char *err,
                     size_t errlen) {
    dnp_pprof_data d;
    char why[256];
    if (dnp_pprof_read(wp->data, wp->len, &d, why, sizeof why) != 0) {
        snprintf(err, errlen, "the %s profile of window %llu: %s", wp->type, (unsigned long long)w->index, why);
        return -1;
    }
    conv c = {e, &d, NULL, NULL, NULL, NULL, ATTR_MANAGED, ATTR_NATIVE};
    c.str = calloc(d.nstrs + 1, sizeof *c.str);
    c.map = calloc(d.nmaps + 1, sizeof *c.map);
    c.fn = calloc(d.nfuncs + 1, sizeof *c.fn);
    c.loc = calloc(d.nlocs + 1, sizeof *c.loc);
    if (c.str && c.map && c.fn && c.loc)
        conv_profiles(&c, w, scope);
    else
        e->failed = 1;
    DNP_FREE_ALL(c.str, c.map, c.fn, c.loc);
    dnp_pprof_data_free(&d);
    return 0;
}

int otlp_encode(const otlp_attr *attrs, size_t nattrs, const window_file *w, dnp_pb *out, char *err, size_t errlen) {
    enc e;
    memset(&e, 0, sizeof e);
    out->n = 0;
    out->failed = 0;
    for (int t = 0; t < NTABLES; t++)
        dnp_intern_add(&e.tab[t], "", 0); /* item 0: the zero value ("" for strings) */
    dnp_pb rp = {0}, scope = {0}, sc = {0};
    write_resource(attrs, nattrs, &rp);
    dnp_pb_str(&sc, 1, "dnprof");
    dnp_pb_str(&sc, 2, DNPROF_VERSION);
    dnp_pb_msg(&scope, 1, &sc);
    int rc = 0;
    for (int i = 0; i < w->nprof && rc == 0; i++)
        rc = add_pprof(&e, w, &w->prof[i], &scope, err, errlen);
    dnp_pb_msg(&rp, 2, &scope);
    dnp_pb_msg(out, 1, &rp);
    write_dictionary(&e, out);
    if (rc == 0 && (e.failed || e.m.failed || e.m2.failed || out->failed)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    for (int t = 0; t < NTABLES; t++)
        dnp_intern_free(&e.tab[t]);
    DNP_FREE_ALL(rp.p, scope.p, sc.p, e.m.p, e.m2.p);
    return rc;
}

int otlp_reply_rejected(const uint8_t *p, size_t n, char *why, size_t whylen) {
    dnp_pb_in in = {p, p + n}, ps;
    dnp_pb_field f;
    int64_t rejected = 0;
    char msg[160] = "";
    while (dnp_pb_next(&in, &f) > 0) {
        if (f.field != 1 || f.wire != DNP_PB_LEN)
            continue;
        ps = (dnp_pb_in){f.p, f.p + f.n};
        while (dnp_pb_next(&ps, &f) > 0)
            if (f.field == 1 && f.wire == DNP_PB_VARINT)
                rejected = (int64_t)f.v;
            else if (f.field == 2 && f.wire == DNP_PB_LEN)
                snprintf(msg, sizeof msg, "%.*s", (int)f.n, (const char *)f.p);
    }
    if (rejected <= 0)
        return 0;
    msg[strcspn(msg, "\r\n")] = 0;
    /* no count in it: the summary counts the windows by reason */
    snprintf(why, whylen, "rejected by the backend%s%s", msg[0] ? ": " : "", msg);
    return -1;
}
