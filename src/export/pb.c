/* pb.c: the protobuf wire format's writer and reader (pb.h). */
#include "pb.h"

#include <stdlib.h>
#include <string.h>

static void grow(dnp_pb *b, size_t more) {
    if (b->failed || b->n + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

void dnp_pb_bytes(dnp_pb *b, const void *p, size_t n) {
    grow(b, n);
    if (b->failed || n == 0) /* n 0: p may be NULL */
        return;
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

void dnp_pb_varint(dnp_pb *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    dnp_pb_bytes(b, tmp, n);
}

void dnp_pb_key(dnp_pb *b, unsigned field, unsigned wire) {
    dnp_pb_varint(b, (uint64_t)field << 3 | wire);
}

void dnp_pb_uint(dnp_pb *b, unsigned field, uint64_t v) {
    if (!v)
        return;
    dnp_pb_key(b, field, DNP_PB_VARINT);
    dnp_pb_varint(b, v);
}

void dnp_pb_fixed64(dnp_pb *b, unsigned field, uint64_t v) {
    if (!v)
        return;
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    dnp_pb_key(b, field, DNP_PB_FIXED64);
    dnp_pb_bytes(b, le, sizeof le);
}

void dnp_pb_len(dnp_pb *b, unsigned field, const void *p, size_t n) {
    dnp_pb_key(b, field, DNP_PB_LEN);
    dnp_pb_varint(b, n);
    dnp_pb_bytes(b, p, n);
}

void dnp_pb_str(dnp_pb *b, unsigned field, const char *s) {
    if (s && *s)
        dnp_pb_len(b, field, s, strlen(s));
}

void dnp_pb_msg(dnp_pb *b, unsigned field, dnp_pb *m) {
    if (m->failed)
        b->failed = 1;
    dnp_pb_len(b, field, m->p, m->n);
    m->n = 0;
}

/* ---- tables of interned items ---- */

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int rehash(dnp_intern *t, size_t nslots) {
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t at = hash_bytes(t->data.p + t->at[i], t->at[i + 1] - t->at[i]) & (nslots - 1);
        while (slots[at])
            at = (at + 1) & (nslots - 1);
        slots[at] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

uint32_t dnp_intern_add(dnp_intern *t, const void *p, size_t n) {
    if (t->failed || (!t->slots && rehash(t, 1024) != 0))
        return t->failed = 1, 0;
    size_t at = hash_bytes(p, n) & (t->nslots - 1);
    for (; t->slots[at]; at = (at + 1) & (t->nslots - 1)) {
        size_t i = t->slots[at] - 1;
        if (t->at[i + 1] - t->at[i] == n && (n == 0 || !memcmp(t->data.p + t->at[i], p, n)))
            return (uint32_t)i;
    }
    if (t->n + 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        size_t *a = realloc(t->at, cap * sizeof *a);
        if (!a)
            return t->failed = 1, 0;
        t->at = a;
        t->cap = cap;
    }
    if (t->n == 0)
        t->at[0] = 0;
    dnp_pb_bytes(&t->data, p, n);
    if (t->data.failed)
        return t->failed = 1, 0;
    t->at[t->n + 1] = t->data.n;
    t->slots[at] = (uint32_t)++t->n;
    if (t->n * 2 > t->nslots && rehash(t, t->nslots * 2) != 0)
        t->failed = 1;
    return (uint32_t)(t->n - 1);
}

const void *dnp_intern_item(const dnp_intern *t, size_t i, size_t *n) {
    if (n)
        *n = t->at[i + 1] - t->at[i];
    return t->data.p ? t->data.p + t->at[i] : (const void *)""; /* only empty items so far: no buffer */
}

void dnp_intern_free(dnp_intern *t) {
    free(t->data.p);
    free(t->at);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---- reading ---- */

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

int dnp_pb_next(dnp_pb_in *in, dnp_pb_field *f) {
    uint64_t key;
    if (in->p >= in->end)
        return 0;
    if (get_varint(&in->p, in->end, &key) != 0 || key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return -1;
    f->field = (unsigned)(key >> 3);
    f->wire = (unsigned)(key & 7);
    f->p = NULL;
    f->n = 0;
    f->v = 0;
    size_t left = (size_t)(in->end - in->p);
    switch (f->wire) {
    case DNP_PB_VARINT: return get_varint(&in->p, in->end, &f->v) == 0 ? 1 : -1;
    case DNP_PB_FIXED64:
    case DNP_PB_FIXED32: {
        size_t w = f->wire == DNP_PB_FIXED64 ? 8 : 4;
        if (left < w)
            return -1;
        for (size_t i = 0; i < w; i++)
            f->v |= (uint64_t)in->p[i] << (8 * i);
        in->p += w;
        return 1;
    }
    case DNP_PB_LEN:
        if (get_varint(&in->p, in->end, &f->v) != 0 || f->v > (uint64_t)(in->end - in->p))
            return -1;
        f->p = in->p;
        f->n = (size_t)f->v;
        in->p += f->n;
        return 1;
    default: return -1; /* groups: not in these messages */
    }
}

int dnp_pb_each_varint(const dnp_pb_field *f, int (*fn)(void *ctx, uint64_t v), void *ctx) {
    if (f->wire == DNP_PB_VARINT)
        return fn(ctx, f->v);
    if (f->wire != DNP_PB_LEN)
        return -1;
    const uint8_t *p = f->p, *end = f->p + f->n;
    uint64_t v;
    while (p < end)
        if (get_varint(&p, end, &v) != 0 || fn(ctx, v) != 0)
            return -1;
    return 0;
}
