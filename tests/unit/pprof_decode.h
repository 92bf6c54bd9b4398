/* pprof_decode.h: a decoder of pprof's profile.proto for the tests, written from
 * the .proto (github.com/google/pprof proto/profile.proto), apart from the
 * encoder it checks: it reads the wire format field by field and refuses what
 * is malformed. Header-only (static functions); gunzip: dnp_gunzip (zlib's). */
#ifndef DNP_PPROF_DECODE_H
#define DNP_PPROF_DECODE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"

#define PD_MAX 4096

typedef struct pd_sample {
    uint64_t loc[256]; /* a sampled stack: up to 128 frames and what the sampler adds, native frames to the root */
    size_t nloc;
    int64_t val[8];
    size_t nval;
} pd_sample;

typedef struct pd_profile {
    char *strs[PD_MAX];
    size_t nstrs;
    uint64_t type[8], unit[8]; /* sample types: string indexes */
    size_t ntypes;
    pd_sample *samples;
    size_t nsamples, cap;
    uint64_t loc_id[PD_MAX], loc_func[PD_MAX];
    size_t nlocs;
    uint64_t fn_id[PD_MAX], fn_name[PD_MAX], fn_sys[PD_MAX]; /* fn_sys: system_name, 0 when none */
    size_t nfns;
    int64_t period;
    uint64_t comment[4]; /* string indexes */
    size_t ncomments;
    uint64_t default_type;
} pd_profile;

static int pd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* Next field of a message: its number, wire type, and value or bytes. */
static int pd_field(const uint8_t **p, const uint8_t *end, unsigned *field, uint64_t *v, const uint8_t **bytes) {
    uint64_t key;
    if (pd_varint(p, end, &key) != 0)
        return -1;
    *field = (unsigned)(key >> 3);
    switch (key & 7) {
    case 0: return pd_varint(p, end, v) == 0 ? 0 : -1;
    case 2:
        if (pd_varint(p, end, v) != 0 || *v > (uint64_t)(end - *p))
            return -1;
        *bytes = *p;
        *p += *v;
        return 2;
    default: return -1; /* profile.proto uses no fixed-size fields */
    }
}

static int pd_packed(const uint8_t *b, uint64_t len, uint64_t *out, size_t cap, size_t *n) {
    const uint8_t *end = b + len;
    while (b < end) {
        uint64_t v;
        if (pd_varint(&b, end, &v) != 0 || *n >= cap)
            return -1;
        out[(*n)++] = v;
    }
    return 0;
}

static void pd_free(pd_profile *pr) {
    for (size_t i = 0; i < pr->nstrs; i++)
        free(pr->strs[i]);
    free(pr->samples);
    memset(pr, 0, sizeof *pr);
}

static int pd_decode_raw(const uint8_t *p, size_t len, pd_profile *pr) {
    memset(pr, 0, sizeof *pr);
    const uint8_t *end = p + len;
    while (p < end) {
        unsigned f, g;
        uint64_t v, w;
        const uint8_t *b = NULL, *bb = NULL;
        int wt = pd_field(&p, end, &f, &v, &b);
        if (wt < 0)
            return -1;
        const uint8_t *m = b, *mend = b ? b + v : NULL;
        if (f == 1 && wt == 2 && pr->ntypes < 8) { /* ValueType */
            while (m < mend) {
                if (pd_field(&m, mend, &g, &w, &bb) != 0)
                    return -1;
                if (g == 1)
                    pr->type[pr->ntypes] = w;
                else if (g == 2)
                    pr->unit[pr->ntypes] = w;
            }
            pr->ntypes++;
        } else if (f == 2 && wt == 2) { /* Sample */
            if (pr->nsamples == pr->cap) {
                pr->cap = pr->cap ? pr->cap * 2 : 64;
                pd_sample *s = realloc(pr->samples, pr->cap * sizeof *s);
                if (!s)
                    return -1;
                pr->samples = s;
            }
            pd_sample *s = &pr->samples[pr->nsamples++];
            memset(s, 0, sizeof *s);
            while (m < mend) {
                int t = pd_field(&m, mend, &g, &w, &bb);
                if (t < 0)
                    return -1;
                if (g == 1 && t == 2 && pd_packed(bb, w, s->loc, sizeof s->loc / sizeof s->loc[0], &s->nloc) != 0)
                    return -1;
                if (g == 2 && t == 2 && pd_packed(bb, w, (uint64_t *)s->val, 8, &s->nval) != 0)
                    return -1;
            }
        } else if (f == 4 && wt == 2 && pr->nlocs < PD_MAX) { /* Location */
            size_t i = pr->nlocs++;
            pr->loc_id[i] = pr->loc_func[i] = 0;
            while (m < mend) {
                int t = pd_field(&m, mend, &g, &w, &bb);
                if (t < 0)
                    return -1;
                if (g == 1)
                    pr->loc_id[i] = w;
                else if (g == 4 && t == 2) { /* Line */
                    const uint8_t *l = bb, *lend = bb + w;
                    unsigned h;
                    uint64_t x;
                    const uint8_t *xb;
                    while (l < lend) {
                        if (pd_field(&l, lend, &h, &x, &xb) < 0)
                            return -1;
                        if (h == 1)
                            pr->loc_func[i] = x;
                    }
                }
            }
        } else if (f == 5 && wt == 2 && pr->nfns < PD_MAX) { /* Function */
            size_t i = pr->nfns++;
            pr->fn_id[i] = pr->fn_name[i] = pr->fn_sys[i] = 0;
            while (m < mend) {
                if (pd_field(&m, mend, &g, &w, &bb) < 0)
                    return -1;
                if (g == 1)
                    pr->fn_id[i] = w;
                else if (g == 2)
                    pr->fn_name[i] = w;
                else if (g == 3)
                    pr->fn_sys[i] = w;
            }
        } else if (f == 6 && wt == 2 && pr->nstrs < PD_MAX) {
            char *s = malloc(v + 1);
            if (!s)
                return -1;
            memcpy(s, b, v);
            s[v] = 0;
            pr->strs[pr->nstrs++] = s;
        } else if (f == 12 && wt == 0) {
            pr->period = (int64_t)v;
        } else if (f == 13 && wt == 0 && pr->ncomments < 4) {
            pr->comment[pr->ncomments++] = v;
        } else if (f == 14 && wt == 0) {
            pr->default_type = v;
        }
    }
    return pr->nstrs > 0 && pr->strs[0][0] == 0 ? 0 : -1; /* string_table[0] must be "" */
}

static int pd_decode_gzip(const uint8_t *gz, size_t len, pd_profile *pr) {
    uint8_t *raw;
    size_t n;
    int rc = dnp_gunzip(gz, len, (size_t)1 << 30, &raw, &n) == 0 ? pd_decode_raw(raw, n, pr) : -1;
    free(raw);
    return rc;
}

static const char *pd_str(const pd_profile *pr, uint64_t i) {
    return i < pr->nstrs ? pr->strs[i] : NULL;
}

/* The name of the function of location id, or NULL. */
static const char *pd_loc_name(const pd_profile *pr, uint64_t id) {
    for (size_t i = 0; i < pr->nlocs; i++)
        if (pr->loc_id[i] == id)
            for (size_t k = 0; k < pr->nfns; k++)
                if (pr->fn_id[k] == pr->loc_func[i])
                    return pd_str(pr, pr->fn_name[k]);
    return NULL;
}

#endif
