/* heapload.c: loading a heap snapshot as a graph (heapgraph.h). The file is
 * read in passes, never whole: the chunk headers (framing, and the END record
 * that gives every count), then the objects (addresses, types, sizes,
 * reference counts), then the references, resolved to node numbers through a
 * hash of the addresses that is freed afterwards. The records are decoded by
 * heap_format.h's decoders, made from heap_format.def as the agent's encoders
 * are. */
#include "heapgraph.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dnp_free.h"
#include "heap_format.h"
#include "trace_format.h"

#define CHUNK_LIMIT (64u << 20)

typedef struct reader {
    FILE *f;
    const char *path;
    uint64_t size, pos;
    uint8_t *buf;
    size_t cap;
    char *err;
    size_t errlen;
} reader;

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *r, const char *fmt, ...) {
    int n = snprintf(r->err, r->errlen, "%s: ", r->path);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < r->errlen)
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int seek_to(reader *r, uint64_t pos) {
    if (fseeko(r->f, (off_t)pos, SEEK_SET) != 0)
        return fail(r, "cannot read: %s", strerror(errno));
    r->pos = pos;
    return 0;
}

/* The next chunk's payload: 1, 0 at the end of the file, -1 (err) when the
 * file is cut short or damaged. payload NULL: the payload is skipped. */
static int next_chunk(reader *r, const uint8_t **payload, uint32_t *len, int check) {
    if (r->pos == r->size)
        return 0;
    uint32_t h[3];
    if (r->size - r->pos < sizeof h || fread(h, sizeof h, 1, r->f) != 1)
        return fail(r, "truncated: the file ends inside a chunk header at byte %llu (the snapshot "
                       "was cut short; take it again)",
                    (unsigned long long)r->pos);
    if (h[0] != DNP_HEAP_CHUNK_MAGIC || h[1] > CHUNK_LIMIT)
        return fail(r, "corrupt: no chunk header at byte %llu", (unsigned long long)r->pos);
    if (r->size - r->pos - sizeof h < h[1])
        return fail(r, "truncated: a chunk at byte %llu runs past the end of the file (the "
                       "snapshot was cut short; take it again)",
                    (unsigned long long)r->pos);
    uint64_t at = r->pos;
    r->pos += sizeof h + h[1];
    *len = h[1];
    if (!payload)
        return fseeko(r->f, (off_t)r->pos, SEEK_SET) == 0 ? 1 : fail(r, "cannot read");
    if (h[1] > r->cap) {
        free(r->buf);
        r->buf = malloc(h[1]);
        r->cap = r->buf ? h[1] : 0;
        if (!r->buf)
            return fail(r, "out of memory");
    }
    if (h[1] && fread(r->buf, h[1], 1, r->f) != 1)
        return fail(r, "cannot read at byte %llu", (unsigned long long)at);
    if (check && dnp_crc32(r->buf, h[1]) != h[2])
        return fail(r, "corrupt: the chunk at byte %llu fails its checksum",
                    (unsigned long long)at);
    *payload = r->buf;
    return 1;
}

/* ---- decoding ---- */

typedef struct end_info {
    int seen;
    struct dnp_heap_END rec;
    char msg[256];
} end_info;

enum { PASS_END, PASS_OBJECTS, PASS_REFS };

typedef struct loader {
    reader r;
    dnp_heapgraph *g;
    uint32_t header_size; /* where the first chunk starts */
    int pass;
    end_info end;
    /* pass OBJECTS */
    uint32_t nobj;
    uint64_t prev_obj, prev_root, prev_key;
    uint64_t *root_addr, *dep_kaddr, *dep_vaddr;
    uint32_t nroots, ndeps;
    char **class_names;
    uint32_t nclasses;
    char ***class_fields; /* [nclasses] */
    uint8_t *class_nfields;
    uint64_t *static_addr; /* [nstatics] and each one's name in g->static_names */
    uint32_t *static_name, nstatics, statics_cap;
    /* pass REFS */
    uint32_t *hash;
    uint64_t hcap;
    uint64_t cursor;     /* next edge slot */
    uint64_t obj_addr;   /* the last object's */
    uint32_t version;    /* the file's format version */
    uint32_t cur_node;
    uint64_t left;       /* its references still to come */
    uint32_t cur_class;
    uint64_t nongc[256][2]; /* the non-GC heap's ranges: start, length */
    uint32_t nnongc;
    uint8_t **lastmap;   /* per class: the slots of its last object (heap_format.h SLOTS) */
} loader;

/* Decodes one record's head or item (heap_format.def) or says it is corrupt. */
#define GET(NAME, rec)                                                           \
    do {                                                                         \
        if (dnp_heap_get_##NAME(pp, end, &(rec)) < 0)                            \
            return fail(&L->r, "corrupt: a record runs past its chunk");         \
    } while (0)

/* Grows *arr of elem-byte elements from n to nn, the new ones zeroed. */
static int grow(void *arr, size_t elem, size_t n, size_t nn) {
    void **a = arr;
    uint8_t *x = realloc(*a, nn * elem);
    if (!x)
        return -1;
    memset(x + n * elem, 0, (nn - n) * elem);
    *a = x;
    return 0;
}

/* A slot in [0, cap): the high half of a multiplicative hash times cap. */
static inline uint64_t hash_slot(uint64_t a, uint64_t cap) {
    return (uint64_t)(((unsigned __int128)(a * 0x9E3779B97F4A7C15ull) * cap) >> 64);
}

static uint32_t lookup(const loader *L, uint64_t addr) {
    uint64_t i = hash_slot(addr, L->hcap);
    for (;;) {
        uint32_t v = L->hash[i];
        if (!v)
            return 0;
        if (L->g->addr[v] == addr)
            return v;
        if (++i == L->hcap)
            i = 0;
    }
}

/* Room for class idx in the per-class arrays. */
static int class_room(loader *L, uint64_t idx) {
    if (idx > 10000000 || idx > L->r.size / 3) /* a CLASS record (3 bytes) for each index */
        return fail(&L->r, "corrupt: class index %llu", (unsigned long long)idx);
    if (idx < L->nclasses)
        return 0;
    uint32_t nc = (uint32_t)idx + 1024;
    if (grow(&L->class_names, sizeof *L->class_names, L->nclasses, nc) < 0 ||
        grow(&L->class_fields, sizeof *L->class_fields, L->nclasses, nc) < 0 ||
        grow(&L->class_nfields, sizeof *L->class_nfields, L->nclasses, nc) < 0)
        return fail(&L->r, "out of memory");
    L->nclasses = nc;
    return 0;
}

static int refs_put(loader *L, const uint8_t **pp, const uint8_t *end, uint64_t n) {
    dnp_heapgraph *g = L->g;
    if (L->pass == PASS_END) /* the last chunk alone: it may begin inside an object */
        L->left = n;
    if (n > L->left)
        return fail(&L->r, "corrupt: an object has more references than it said");
    L->left -= n;
    uint64_t prev = L->obj_addr; /* version 2: each from the one before; 1: from the object */
    for (uint64_t k = 0; k < n; k++) {
        struct dnp_heap_OBJECT_item it;
        GET(OBJECT_item, it);
        uint64_t addr = prev + (uint64_t)it.ref;
        if (L->version >= 2)
            prev = addr;
        if (L->pass == PASS_REFS) {
            uint32_t to = lookup(L, addr);
            g->edges[L->cursor++] = to ? to : DNP_HG_NONE;
        }
    }
    return 0;
}

static int rec_roots(loader *L, const uint8_t **pp, const uint8_t *end) {
    dnp_heapgraph *g = L->g;
    struct dnp_heap_ROOTS r;
    GET(ROOTS, r);
    for (uint64_t k = 0; k < r.n; k++) {
        struct dnp_heap_ROOTS_item it;
        GET(ROOTS_item, it);
        L->prev_root += (uint64_t)it.addr;
        if (L->pass != PASS_OBJECTS)
            continue;
        if (L->nroots >= L->end.rec.roots)
            return fail(&L->r, "corrupt: more roots than the end record says");
        g->roots[L->nroots].kind = (uint8_t)(it.kind_flags & 7);
        g->roots[L->nroots].flags = (uint8_t)(it.kind_flags >> 3);
        g->roots[L->nroots].id = it.id;
        L->root_addr[L->nroots++] = L->prev_root;
    }
    return 0;
}

static int rec_deps(loader *L, const uint8_t **pp, const uint8_t *end) {
    struct dnp_heap_DEPS r;
    GET(DEPS, r);
    for (uint64_t k = 0; k < r.n; k++) {
        struct dnp_heap_DEPS_item it;
        GET(DEPS_item, it);
        L->prev_key += (uint64_t)it.key;
        if (L->pass != PASS_OBJECTS)
            continue;
        if (L->ndeps >= L->end.rec.deps)
            return fail(&L->r, "corrupt: more dependent handles than the end record says");
        L->dep_kaddr[L->ndeps] = L->prev_key;
        L->dep_vaddr[L->ndeps++] = L->prev_key + (uint64_t)it.value;
    }
    return 0;
}

static int rec_object(loader *L, const uint8_t **pp, const uint8_t *end) {
    dnp_heapgraph *g = L->g;
    struct dnp_heap_OBJECT r;
    GET(OBJECT, r);
    if (L->left && L->pass != PASS_END)
        return fail(&L->r, "corrupt: an object's references are missing");
    L->prev_obj += (uint64_t)r.addr;
    if (r.n > r.nrefs)
        return fail(&L->r, "corrupt: an object record");
    if (L->pass == PASS_OBJECTS) {
        if (L->nobj + 1 >= g->n)
            return fail(&L->r, "corrupt: more objects than the end record says");
        uint32_t v = ++L->nobj;
        if (g->addr)
            g->addr[v] = L->prev_obj;
        g->type[v] = r.cls > UINT32_MAX ? 0 : (uint32_t)r.cls;
        g->size[v] = r.size > UINT32_MAX ? UINT32_MAX : (uint32_t)r.size;
        g->off[v] = (uint32_t)r.nrefs;
        g->bytes += r.size;
    } else if (L->pass == PASS_REFS) {
        L->cur_node++;
        L->cursor = g->off[L->cur_node];
        L->cur_class = r.cls < L->nclasses ? (uint32_t)r.cls : 0;
        uint8_t *lm = L->lastmap ? L->lastmap[L->cur_class] : NULL;
        if (g->edge_field && lm && lm[0] == r.nrefs)
            memcpy(g->edge_field + g->off[L->cur_node], lm + 1, r.nrefs);
    }
    L->obj_addr = L->prev_obj;
    L->left = r.nrefs;
    return refs_put(L, pp, end, r.n);
}

static int rec_more(loader *L, const uint8_t **pp, const uint8_t *end) {
    struct dnp_heap_MORE r;
    GET(MORE, r);
    return refs_put(L, pp, end, r.n);
}

static int rec_slots(loader *L, const uint8_t **pp, const uint8_t *end) {
    dnp_heapgraph *g = L->g;
    struct dnp_heap_SLOTS r;
    GET(SLOTS, r);
    int fields = L->pass == PASS_REFS && g->edge_field;
    uint8_t *lm = NULL;
    if (fields && L->lastmap && r.n <= 64) {
        if (!L->lastmap[L->cur_class] && !(L->lastmap[L->cur_class] = malloc(66)))
            return fail(&L->r, "out of memory");
        lm = L->lastmap[L->cur_class];
        lm[0] = (uint8_t)r.n;
    }
    for (uint64_t k = 0; k < r.n; k++) {
        struct dnp_heap_SLOTS_item it;
        GET(SLOTS_item, it);
        uint8_t slot = it.slot > 255 ? 0 : (uint8_t)it.slot;
        if (lm)
            lm[1 + k] = slot;
        if (fields && L->cur_node && g->off[L->cur_node] + k < g->off[L->cur_node + 1])
            g->edge_field[g->off[L->cur_node] + k] = slot;
    }
    return 0;
}

static int rec_layout(loader *L, const uint8_t **pp, const uint8_t *end) {
    struct dnp_heap_LAYOUT r;
    GET(LAYOUT, r);
    if (r.n > 255)
        return fail(&L->r, "corrupt: a class layout");
    char **names = NULL;
    if (L->pass == PASS_OBJECTS && (class_room(L, r.cls) < 0 || !(names = calloc(r.n + 1, sizeof *names))))
        return fail(&L->r, "out of memory");
    for (uint64_t k = 0; k < r.n; k++) {
        struct dnp_heap_LAYOUT_item it;
        if (dnp_heap_get_LAYOUT_item(pp, end, &it) < 0) {
            dnp_free_strv(names, k);
            return fail(&L->r, "corrupt: a field name runs past its chunk");
        }
        if (names)
            names[k] = strndup(it.name, it.name_len);
    }
    if (names) {
        dnp_free_strv(L->class_fields[r.cls], L->class_nfields[r.cls]);
        L->class_fields[r.cls] = names;
        L->class_nfields[r.cls] = (uint8_t)r.n;
    }
    return 0;
}

static int rec_name(loader *L, const uint8_t **pp, const uint8_t *end) {
    struct dnp_heap_NAME r;
    if (dnp_heap_get_NAME(pp, end, &r) < 0)
        return fail(&L->r, "corrupt: a name runs past its chunk");
    if (L->pass != PASS_OBJECTS)
        return 0;
    if (class_room(L, r.cls) < 0)
        return -1;
    free(L->class_names[r.cls]);
    L->class_names[r.cls] = strndup(r.name, r.name_len);
    return L->class_names[r.cls] ? 0 : fail(&L->r, "out of memory");
}

static int rec_func(loader *L, const uint8_t **pp, const uint8_t *end) {
    dnp_heapgraph *g = L->g;
    struct dnp_heap_FUNC r;
    if (dnp_heap_get_FUNC(pp, end, &r) < 0)
        return fail(&L->r, "corrupt: a name runs past its chunk");
    if (L->pass != PASS_OBJECTS)
        return 0;
    uint32_t k = g->nfuncs;
    if ((k & (k - 1)) == 0 && (grow(&g->func_ids, sizeof *g->func_ids, k, k ? k * 2 : 64) < 0 ||
                               grow(&g->func_names, sizeof *g->func_names, k, k ? k * 2 : 64) < 0))
        return fail(&L->r, "out of memory");
    g->func_ids[k] = r.function_id;
    g->func_names[k] = strndup(r.name, r.name_len);
    g->nfuncs++;
    return 0;
}

static int rec_nongc(loader *L, const uint8_t **pp, const uint8_t *end) {
    struct dnp_heap_NONGC r;
    GET(NONGC, r);
    for (uint64_t k = 0; k < r.n; k++) {
        struct dnp_heap_NONGC_item it;
        GET(NONGC_item, it);
        if (L->pass == PASS_OBJECTS && L->nnongc < 256) {
            L->nongc[L->nnongc][0] = it.start;
            L->nongc[L->nnongc++][1] = it.length;
        }
    }
    return 0;
}

static int rec_static(loader *L, const uint8_t **pp, const uint8_t *end) {
    dnp_heapgraph *g = L->g;
    struct dnp_heap_STATIC r;
    GET(STATIC, r);
    int keep = L->pass == PASS_OBJECTS;
    uint32_t name = g->nstatic_names;
    if (keep) {
        if ((name & (name - 1)) == 0 &&
            grow(&g->static_names, sizeof *g->static_names, name, name ? name * 2 : 16) < 0)
            return fail(&L->r, "out of memory");
        if (!(g->static_names[name] = strndup(r.name, r.name_len)))
            return fail(&L->r, "out of memory");
        g->nstatic_names++;
    }
    uint64_t addr = 0;
    for (uint64_t k = 0; k < r.n; k++) {
        struct dnp_heap_STATIC_item it;
        GET(STATIC_item, it);
        addr += (uint64_t)it.addr;
        if (!keep)
            continue;
        if (L->nstatics == L->statics_cap) {
            uint32_t nc = L->statics_cap ? L->statics_cap * 2 : 64;
            if (grow(&L->static_addr, sizeof *L->static_addr, L->nstatics, nc) < 0 ||
                grow(&L->static_name, sizeof *L->static_name, L->nstatics, nc) < 0)
                return fail(&L->r, "out of memory");
            L->statics_cap = nc;
        }
        L->static_addr[L->nstatics] = addr;
        L->static_name[L->nstatics++] = name;
    }
    return 0;
}

static int rec_end(loader *L, const uint8_t **pp, const uint8_t *end) {
    end_info *en = &L->end;
    if (dnp_heap_get_END(pp, end, &en->rec) < 0)
        return fail(&L->r, "corrupt: the end record");
    snprintf(en->msg, sizeof en->msg, "%.*s", (int)en->rec.message_len, en->rec.message);
    en->rec.message = NULL;
    if (*pp != end)
        return fail(&L->r, "corrupt: records after the end record");
    en->seen = 1;
    return 0;
}

/* Each record's decoder by tag (heap_format.def lists the records). */
typedef int (*rec_fn)(loader *L, const uint8_t **pp, const uint8_t *end);

static rec_fn decoder(uint8_t tag) {
    switch (tag) {
    case DNP_HEAP_CLASS: return NULL; /* the ClassID: a name follows after the GC */
    case DNP_HEAP_ROOTS: return rec_roots;
    case DNP_HEAP_DEPS: return rec_deps;
    case DNP_HEAP_OBJECT: return rec_object;
    case DNP_HEAP_MORE: return rec_more;
    case DNP_HEAP_SLOTS: return rec_slots;
    case DNP_HEAP_NAME: return rec_name;
    case DNP_HEAP_FUNC: return rec_func;
    case DNP_HEAP_LAYOUT: return rec_layout;
    case DNP_HEAP_NONGC: return rec_nongc;
    case DNP_HEAP_STATIC: return rec_static;
    case DNP_HEAP_END: return rec_end;
    default: return NULL;
    }
}

static int decode(loader *L, const uint8_t *p, const uint8_t *end) {
    const uint8_t **pp = &p;
    while (p < end) {
        uint8_t tag = *p++;
        rec_fn fn = decoder(tag);
        if (fn && fn(L, pp, end) < 0)
            return -1;
        if (fn)
            continue;
        struct dnp_heap_CLASS k;
        if (tag != DNP_HEAP_CLASS)
            return fail(&L->r, "corrupt: unknown record 0x%02x (a newer dnprof's snapshot?)", tag);
        GET(CLASS, k);
    }
    return 0;
}

static int pass(loader *L, int which) {
    L->pass = which;
    L->prev_obj = L->prev_root = L->prev_key = 0;
    L->left = 0;
    L->cur_node = 0;
    if (seek_to(&L->r, L->header_size) < 0)
        return -1;
    const uint8_t *data = NULL;
    uint32_t len = 0;
    int rc;
    while ((rc = next_chunk(&L->r, &data, &len, which == PASS_OBJECTS)) == 1)
        if (decode(L, data, data + len) < 0)
            return -1;
    if (rc == 0 && L->left)
        return fail(&L->r, "corrupt: the last object's references are missing");
    return rc;
}

/* The header: magic and version, pid and start; from version 4 its size and
 * the host's pid. */
static int read_header(loader *L) {
    reader *r = &L->r;
    uint8_t hdr[DNP_HEAP_HEADER_SIZE_V3];
    if (fread(hdr, 1, sizeof hdr, r->f) != sizeof hdr || memcmp(hdr, "DNPHEAP", 7) != 0) {
        if (r->size >= 8 && memcmp(hdr, "DNPHEAP", 7) == 0)
            return fail(r, "truncated: the file ends inside its header");
        return fail(r, "not a dnprof heap snapshot (take one with dnprof snapshot PID)");
    }
    uint32_t version = dnp_get_u32le(hdr + 8);
    if (memcmp(hdr, DNP_HEAP_MAGIC, 8) != 0 || version < DNP_HEAP_VERSION_MIN ||
        version > DNP_HEAP_VERSION)
        return fail(r, "a heap snapshot of format version %u; this dnprof reads versions %u to %u",
                    (unsigned)version, DNP_HEAP_VERSION_MIN, DNP_HEAP_VERSION);
    L->version = version;
    L->g->pid = dnp_get_u64le(hdr + 16);
    L->g->start_real_ns = dnp_get_u64le(hdr + 24);
    L->header_size = sizeof hdr;
    if (version >= 4) {
        uint32_t size = dnp_get_u32le(hdr + 12);
        uint8_t more[8];
        if (size < DNP_HEAP_HEADER_SIZE || size > DNP_HEAP_HEADER_MAX)
            return fail(r, "corrupt: a header of %u bytes (version %u's is at least %u)", (unsigned)size,
                        (unsigned)version, DNP_HEAP_HEADER_SIZE);
        if (fread(more, 1, sizeof more, r->f) != sizeof more)
            return fail(r, "truncated: the file ends inside its header");
        L->g->host_pid = dnp_get_u64le(more);
        L->header_size = size;
    }
    if (L->header_size > r->size)
        return fail(r, "truncated: the file ends inside its header");
    return seek_to(r, L->header_size);
}

/* Framing and the END record, which must close the last chunk. */
static int read_end(loader *L) {
    reader *r = &L->r;
    if (read_header(L) < 0)
        return -1;
    uint64_t last = 0;
    uint32_t len = 0;
    int rc, chunks = 0;
    for (;;) {
        uint64_t at = r->pos;
        rc = next_chunk(r, NULL, &len, 0);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        last = at;
        chunks++;
    }
    if (!chunks)
        return fail(r, "truncated: no data after the header (the snapshot was cut short)");
    if (seek_to(r, last) < 0)
        return -1;
    const uint8_t *data = NULL;
    if (next_chunk(r, &data, &len, 1) != 1)
        return -1;
    L->pass = PASS_END;
    if (decode(L, data, data + len) < 0)
        return -1;
    const struct dnp_heap_END *e = &L->end.rec;
    if (!L->end.seen)
        return fail(r, "truncated: no end record (the snapshot was cut short, or the process "
                       "died while it was taken); take it again");
    if (e->status != DNP_HEAP_COMPLETE)
        return fail(r, "incomplete snapshot: %s", L->end.msg[0] ? L->end.msg : "(no reason given)");
    if (e->objects >= UINT32_MAX - 1 || e->refs + e->roots + e->deps >= UINT32_MAX)
        return fail(r, "too large for this dnprof (%llu objects, %llu references)",
                    (unsigned long long)e->objects, (unsigned long long)e->refs);
    /* The arrays are sized by these counts: no more than the file can hold (an
     * object takes 6 bytes at least, a root or a dependent handle 3, a
     * reference 1), not what a damaged count says (docs/testing.md). */
    if (e->objects > r->size / 6 || e->roots > r->size / 3 || e->deps > r->size / 3 || e->refs > r->size)
        return fail(r, "corrupt: the end record counts %llu objects, %llu roots and %llu references, more "
                       "than %llu bytes can hold",
                    (unsigned long long)e->objects, (unsigned long long)e->roots, (unsigned long long)e->refs,
                    (unsigned long long)r->size);
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    const char *const *x = a, *const *y = b;
    return strcmp(*x, *y);
}

/* The fields of each type: those of its first class with a layout. */
static int type_fields(loader *L, const uint32_t *map) {
    dnp_heapgraph *g = L->g;
    g->type_fields = calloc(g->ntypes, sizeof *g->type_fields);
    g->type_nfields = calloc(g->ntypes, sizeof *g->type_nfields);
    if (!g->type_fields || !g->type_nfields)
        return fail(&L->r, "out of memory");
    for (uint32_t i = 0; i < L->nclasses; i++) {
        if (!L->class_fields || !L->class_fields[i] || !map[i] || g->type_fields[map[i]])
            continue;
        g->type_fields[map[i]] = L->class_fields[i];
        g->type_nfields[map[i]] = L->class_nfields[i];
        L->class_fields[i] = NULL;
    }
    return 0;
}

/* Classes of one name become one type. */
static int make_types(loader *L) {
    dnp_heapgraph *g = L->g;
    uint32_t nc = L->nclasses ? L->nclasses : 1;
    char **sorted = malloc(nc * sizeof *sorted);
    uint32_t *map = calloc(nc, sizeof *map);
    uint32_t ns = 0;
    for (uint32_t i = 0; sorted && i < L->nclasses; i++)
        if (L->class_names && L->class_names[i])
            sorted[ns++] = L->class_names[i];
    if (sorted)
        qsort(sorted, ns, sizeof *sorted, cmp_str);
    g->types = sorted && map ? malloc((ns + 1) * sizeof *g->types) : NULL;
    int rc = g->types ? 0 : fail(&L->r, "out of memory");
    if (g->types) {
        g->ntypes = 0;
        g->types[g->ntypes++] = strdup("<unknown class>");
        for (uint32_t i = 0; i < ns; i++)
            if (!i || strcmp(sorted[i], sorted[i - 1]))
                g->types[g->ntypes++] = strdup(sorted[i]);
        for (uint32_t i = 0; i < L->nclasses; i++) {
            if (!L->class_names || !L->class_names[i])
                continue;
            char **hit = bsearch(&L->class_names[i], g->types + 1, g->ntypes - 1,
                                 sizeof *g->types, cmp_str);
            map[i] = hit ? (uint32_t)(hit - g->types) : 0;
        }
        for (uint32_t v = 1; v < g->n; v++)
            g->type[v] = g->type[v] < L->nclasses ? map[g->type[v]] : 0;
        g->type[0] = 0;
        rc = type_fields(L, map);
    }
    free(sorted);
    free(map);
    return rc;
}

static int cmp_dep(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

/* ---- the graph, from the passes ---- */

/* The arrays every count of the END record sizes. */
static int alloc_nodes(loader *L) {
    dnp_heapgraph *g = L->g;
    const struct dnp_heap_END *e = &L->end.rec;
    g->gc_ns = e->gc_ns;
    g->pause_ns = e->pause_ns;
    g->walk_ns = e->walk_ns;
    g->n = (uint32_t)e->objects + 1;
    g->addr = calloc(g->n, sizeof *g->addr);
    g->type = calloc(g->n, sizeof *g->type);
    g->size = calloc(g->n, sizeof *g->size);
    g->off = calloc((size_t)g->n + 1, sizeof *g->off);
    g->roots = calloc(e->roots + 1, sizeof *g->roots);
    L->root_addr = calloc(e->roots + 1, sizeof *L->root_addr);
    L->dep_kaddr = calloc(e->deps + 1, sizeof *L->dep_kaddr);
    L->dep_vaddr = calloc(e->deps + 1, sizeof *L->dep_vaddr);
    if (!g->addr || !g->type || !g->size || !g->off || !g->roots || !L->root_addr ||
        !L->dep_kaddr || !L->dep_vaddr)
        return fail(&L->r, "out of memory for %llu objects", (unsigned long long)e->objects);
    return 0;
}

/* The address hash, a load of 2/3 at most. */
static int hash_addresses(loader *L) {
    dnp_heapgraph *g = L->g;
    uint64_t hcap = (uint64_t)g->n + g->n / 2 + 1;
    L->hash = calloc(hcap, sizeof *L->hash);
    if (!L->hash)
        return fail(&L->r, "out of memory");
    L->hcap = hcap;
    for (uint32_t v = 1; v < g->n; v++) {
        uint64_t i = hash_slot(g->addr[v], hcap);
        while (L->hash[i])
            if (++i == hcap)
                i = 0;
        L->hash[i] = v;
    }
    return 0;
}

static int in_nongc(const loader *L, uint64_t addr) {
    for (uint32_t i = 0; i < L->nnongc; i++)
        if (addr - L->nongc[i][0] < L->nongc[i][1])
            return 1;
    return 0;
}

/* Objects of the non-GC heap are held by it: roots of their own kind. */
static int nongc_roots(loader *L) {
    dnp_heapgraph *g = L->g;
    uint32_t nfrozen = 0;
    for (uint32_t v = 1; L->nnongc && v < g->n; v++)
        nfrozen += in_nongc(L, g->addr[v]);
    if (!nfrozen)
        return 0;
    size_t nn = (size_t)g->nroots + nfrozen + 1;
    if (grow(&g->roots, sizeof *g->roots, g->nroots, nn) < 0 ||
        grow(&L->root_addr, sizeof *L->root_addr, g->nroots, nn) < 0)
        return fail(&L->r, "out of memory");
    for (uint32_t v = 1; v < g->n; v++)
        if (in_nongc(L, g->addr[v])) {
            g->roots[g->nroots] = (dnp_heap_root){0, DNP_ROOT_NONGC, 0, 0};
            L->root_addr[g->nroots++] = g->addr[v];
        }
    return 0;
}

/* The objects static fields hold, as nodes (those not in the snapshot left out). */
static int static_nodes(loader *L) {
    dnp_heapgraph *g = L->g;
    if (!L->nstatics)
        return 0;
    g->statics = malloc(L->nstatics * sizeof *g->statics);
    if (!g->statics)
        return fail(&L->r, "out of memory");
    for (uint32_t i = 0; i < L->nstatics; i++) {
        uint32_t v = lookup(L, L->static_addr[i]);
        if (v)
            g->statics[g->nstatics++] = (dnp_heap_static){v, L->static_name[i]};
    }
    return 0;
}

/* Roots and dependent handles as nodes; the edge counts, then the offsets;
 * the edges' arrays with the roots' node's edges in. */
static int edge_space(loader *L, int flags) {
    dnp_heapgraph *g = L->g;
    uint32_t strong = 0;
    for (uint32_t i = 0; i < g->nroots; i++) {
        g->roots[i].node = lookup(L, L->root_addr[i]);
        if (g->roots[i].node && !(g->roots[i].flags & DNP_ROOT_WEAK))
            strong++;
    }
    g->dep_key = malloc((L->ndeps + 1) * 2 * sizeof(uint32_t));
    if (!g->dep_key)
        return fail(&L->r, "out of memory");
    uint32_t nd = 0;
    for (uint32_t i = 0; i < L->ndeps; i++) {
        uint32_t k = lookup(L, L->dep_kaddr[i]), v = lookup(L, L->dep_vaddr[i]);
        if (k && v) {
            g->dep_key[2 * nd] = k;
            g->dep_key[2 * nd + 1] = v;
            nd++;
        }
    }
    qsort(g->dep_key, nd, 2 * sizeof(uint32_t), cmp_dep);
    g->ndeps = nd;
    g->off[0] = strong;
    for (uint32_t i = 0; i < nd; i++)
        g->off[g->dep_key[2 * i]]++;
    uint64_t sum = 0;
    for (uint32_t v = 0; v <= g->n; v++) {
        uint32_t c = v < g->n ? g->off[v] : 0;
        g->off[v] = (uint32_t)sum;
        sum += c;
    }
    g->m = sum;
    g->edges = malloc((g->m + 1) * sizeof *g->edges);
    if (flags & DNP_HG_FIELDS)
        g->edge_field = calloc(g->m + 1, 1);
    if (!g->edges || ((flags & DNP_HG_FIELDS) && !g->edge_field))
        return fail(&L->r, "out of memory for %llu references", (unsigned long long)g->m);
    uint32_t w = 0;
    for (uint32_t i = 0; i < g->nroots; i++)
        if (g->roots[i].node && !(g->roots[i].flags & DNP_ROOT_WEAK))
            g->edges[w++] = g->roots[i].node;
    if ((flags & DNP_HG_FIELDS) && !(L->lastmap = calloc(L->nclasses + 1, sizeof *L->lastmap)))
        return fail(&L->r, "out of memory");
    return 0;
}

/* Dependent handles' values close their key's edges; the pairs become two arrays. */
static int dep_edges(loader *L) {
    dnp_heapgraph *g = L->g;
    uint32_t nd = g->ndeps;
    for (uint32_t i = 0; i < nd;) {
        uint32_t k = g->dep_key[2 * i], j = i;
        while (j < nd && g->dep_key[2 * j] == k)
            j++;
        uint32_t at = g->off[k + 1] - (j - i);
        for (uint32_t x = i; x < j; x++)
            g->edges[at++] = g->dep_key[2 * x + 1];
        i = j;
    }
    g->dep_val = malloc((nd + 1) * sizeof *g->dep_val);
    if (!g->dep_val)
        return fail(&L->r, "out of memory");
    for (uint32_t i = 0; i < nd; i++) {
        g->dep_val[i] = g->dep_key[2 * i + 1];
        g->dep_key[i] = g->dep_key[2 * i];
    }
    return 0;
}

/* Drops the references to objects not in the snapshot. */
static void drop_unresolved(dnp_heapgraph *g) {
    uint64_t wr = 0;
    for (uint32_t v = 0; v < g->n; v++) {
        uint32_t from = g->off[v], to = g->off[v + 1];
        g->off[v] = (uint32_t)wr;
        for (uint32_t k = from; k < to; k++) {
            if (g->edges[k] != DNP_HG_NONE) {
                if (g->edge_field)
                    g->edge_field[wr] = g->edge_field[k];
                g->edges[wr++] = g->edges[k];
            } else {
                g->unresolved++;
            }
        }
    }
    g->off[g->n] = (uint32_t)wr;
    g->m = wr;
}

static void loader_free(loader *L) {
    DNP_FREE_ALL(L->hash, L->root_addr, L->dep_kaddr, L->dep_vaddr, L->static_addr, L->static_name);
    for (uint32_t i = 0; i < L->nclasses; i++) {
        free(L->class_names[i]);
        dnp_free_strv(L->class_fields[i], L->class_nfields[i]);
    }
    for (uint32_t i = 0; L->lastmap && i <= L->nclasses; i++)
        free(L->lastmap[i]);
    DNP_FREE_ALL(L->lastmap, L->class_names, L->class_fields, L->class_nfields, L->r.buf);
    if (L->r.f)
        fclose(L->r.f);
    free(L);
}

/* The passes and the graph's steps, in turn. */
static int load(loader *L, int flags) {
    dnp_heapgraph *g = L->g;
    struct stat st;
    L->r.f = fopen(L->r.path, "rbe");
    if (!L->r.f || fstat(fileno(L->r.f), &st) != 0)
        return fail(&L->r, "cannot open: %s", strerror(errno));
    L->r.size = g->file_bytes = (uint64_t)st.st_size;
    if (read_end(L) < 0 || alloc_nodes(L) < 0 || pass(L, PASS_OBJECTS) < 0)
        return -1;
    if (L->nobj + 1 != g->n)
        return fail(&L->r, "corrupt: %u objects where the end record says %llu", L->nobj,
                    (unsigned long long)L->end.rec.objects);
    g->nroots = L->nroots;
    if (make_types(L) < 0 || hash_addresses(L) < 0 || nongc_roots(L) < 0 || static_nodes(L) < 0 ||
        edge_space(L, flags) < 0 || pass(L, PASS_REFS) < 0 || dep_edges(L) < 0)
        return -1;
    drop_unresolved(g);
    return 0;
}

int dnp_heapgraph_load(const char *path, int flags, dnp_heapgraph *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    loader *L = calloc(1, sizeof *L);
    if (!L) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    L->g = g;
    L->r.path = path;
    L->r.err = err;
    L->r.errlen = errlen;
    int rc = load(L, flags);
    loader_free(L);
    if (rc < 0) {
        dnp_heapgraph_release(g);
        return -1;
    }
    if (!(flags & DNP_HG_ADDR)) {
        free(g->addr);
        g->addr = NULL;
    }
    return 0;
}
