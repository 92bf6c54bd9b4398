/* heapgraph.c: loading a heap snapshot as a graph, and the algorithms on it
 * (heapgraph.h). The file is read in passes, never whole: the chunk headers
 * (framing, and the END record that gives every count), then the objects
 * (addresses, types, sizes, reference counts), then the references, resolved
 * to node numbers through a hash of the addresses that is freed afterwards. */
#include "heapgraph.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    uint64_t status, objects, refs, roots, deps, bytes, gc_ns, pause_ns, walk_ns;
    char msg[256];
} end_info;

enum { PASS_END, PASS_OBJECTS, PASS_REFS };

typedef struct loader {
    reader r;
    dnp_heapgraph *g;
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

#define GET(v)                                                                   \
    do {                                                                         \
        if (dnp_heap_get(&p, end, &(v)) < 0)                                     \
            return fail(&L->r, "corrupt: a record runs past its chunk");         \
    } while (0)

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

static int class_name_set(loader *L, uint64_t idx, const uint8_t *s, uint64_t len) {
    if (idx > 10000000)
        return fail(&L->r, "corrupt: class index %llu", (unsigned long long)idx);
    if (idx >= L->nclasses) {
        uint32_t nc = (uint32_t)idx + 1024;
        char **n = realloc(L->class_names, nc * sizeof *n);
        if (n)
            L->class_names = n;
        char ***f = realloc(L->class_fields, nc * sizeof *f);
        if (f)
            L->class_fields = f;
        uint8_t *fc = realloc(L->class_nfields, nc * sizeof *fc);
        if (fc)
            L->class_nfields = fc;
        if (!n || !f || !fc)
            return fail(&L->r, "out of memory");
        memset(n + L->nclasses, 0, (nc - L->nclasses) * sizeof *n);
        memset(f + L->nclasses, 0, (nc - L->nclasses) * sizeof *f);
        memset(fc + L->nclasses, 0, (nc - L->nclasses) * sizeof *fc);
        L->nclasses = nc;
    }
    if (!s)
        return 0; /* only making room */
    free(L->class_names[idx]);
    L->class_names[idx] = strndup((const char *)s, len);
    return L->class_names[idx] ? 0 : fail(&L->r, "out of memory");
}

static int refs_put(loader *L, const uint8_t **pp, const uint8_t *end, uint64_t n) {
    const uint8_t *p = *pp;
    dnp_heapgraph *g = L->g;
    if (L->pass == PASS_END) /* the last chunk alone: it may begin inside an object */
        L->left = n;
    if (n > L->left)
        return fail(&L->r, "corrupt: an object has more references than it said");
    L->left -= n;
    uint64_t prev = L->obj_addr; /* version 2: each from the one before; 1: from the object */
    for (uint64_t k = 0; k < n; k++) {
        uint64_t z;
        GET(z);
        uint64_t addr = prev + (uint64_t)dnp_heap_unzz(z);
        if (L->version >= 2)
            prev = addr;
        if (L->pass == PASS_REFS) {
            uint32_t to = lookup(L, addr);
            g->edges[L->cursor++] = to ? to : DNP_HG_NONE;
        }
    }
    *pp = p;
    return 0;
}

static int decode(loader *L, const uint8_t *p, const uint8_t *end) {
    dnp_heapgraph *g = L->g;
    while (p < end) {
        uint8_t tag = *p++;
        uint64_t a, b, c, d, e;
        switch (tag) {
        case DNP_HEAP_CLASS:
            GET(a);
            GET(b);
            break;
        case DNP_HEAP_ROOTS:
            GET(a);
            for (uint64_t k = 0; k < a; k++) {
                GET(b);
                GET(c);
                GET(d);
                L->prev_root += (uint64_t)dnp_heap_unzz(c);
                if (L->pass != PASS_OBJECTS)
                    continue;
                if (L->nroots >= L->end.roots)
                    return fail(&L->r, "corrupt: more roots than the end record says");
                g->roots[L->nroots].kind = (uint8_t)(b & 7);
                g->roots[L->nroots].flags = (uint8_t)(b >> 3);
                g->roots[L->nroots].id = d;
                L->root_addr[L->nroots++] = L->prev_root;
            }
            break;
        case DNP_HEAP_DEPS:
            GET(a);
            for (uint64_t k = 0; k < a; k++) {
                GET(b);
                GET(c);
                GET(d);
                L->prev_key += (uint64_t)dnp_heap_unzz(b);
                if (L->pass != PASS_OBJECTS)
                    continue;
                if (L->ndeps >= L->end.deps)
                    return fail(&L->r, "corrupt: more dependent handles than the end record says");
                L->dep_kaddr[L->ndeps] = L->prev_key;
                L->dep_vaddr[L->ndeps++] = L->prev_key + (uint64_t)dnp_heap_unzz(c);
            }
            break;
        case DNP_HEAP_OBJECT:
            GET(a);
            GET(b);
            GET(c);
            GET(d);
            GET(e);
            if (L->left && L->pass != PASS_END)
                return fail(&L->r, "corrupt: an object's references are missing");
            L->prev_obj += (uint64_t)dnp_heap_unzz(a);
            if (e > d)
                return fail(&L->r, "corrupt: an object record");
            if (L->pass == PASS_OBJECTS) {
                if (L->nobj + 1 >= g->n)
                    return fail(&L->r, "corrupt: more objects than the end record says");
                uint32_t v = ++L->nobj;
                if (g->addr)
                    g->addr[v] = L->prev_obj;
                g->type[v] = b > UINT32_MAX ? 0 : (uint32_t)b;
                g->size[v] = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
                g->off[v] = (uint32_t)d;
                g->bytes += c;
            } else if (L->pass == PASS_REFS) {
                L->cur_node++;
                L->cursor = g->off[L->cur_node];
                L->cur_class = b < L->nclasses ? (uint32_t)b : 0;
                uint8_t *lm = L->lastmap ? L->lastmap[L->cur_class] : NULL;
                if (g->edge_field && lm && lm[0] == d)
                    memcpy(g->edge_field + g->off[L->cur_node], lm + 1, d);
            }
            L->obj_addr = L->prev_obj;
            L->left = d;
            if (refs_put(L, &p, end, e) < 0)
                return -1;
            break;
        case DNP_HEAP_MORE:
            GET(a);
            if (refs_put(L, &p, end, a) < 0)
                return -1;
            break;
        case DNP_HEAP_SLOTS: {
            GET(a);
            uint8_t *lm = NULL;
            if (L->pass == PASS_REFS && g->edge_field && L->lastmap && a <= 64) {
                if (!L->lastmap[L->cur_class] && !(L->lastmap[L->cur_class] = malloc(66)))
                    return fail(&L->r, "out of memory");
                lm = L->lastmap[L->cur_class];
                lm[0] = (uint8_t)a;
            }
            for (uint64_t k = 0; k < a; k++) {
                GET(b);
                uint8_t slot = b > 255 ? 0 : (uint8_t)b;
                if (lm)
                    lm[1 + k] = slot;
                if (L->pass == PASS_REFS && g->edge_field && L->cur_node &&
                    g->off[L->cur_node] + k < g->off[L->cur_node + 1])
                    g->edge_field[g->off[L->cur_node] + k] = slot;
            }
            break;
        }
        case DNP_HEAP_LAYOUT:
            GET(a);
            GET(b);
            if (b > 255)
                return fail(&L->r, "corrupt: a class layout");
            char **names = L->pass == PASS_OBJECTS ? calloc(b + 1, sizeof *names) : NULL;
            if (L->pass == PASS_OBJECTS && (!names || class_name_set(L, a, NULL, 0) < 0)) {
                free(names);
                return fail(&L->r, "out of memory");
            }
            for (uint64_t k = 0; k < b; k++) {
                GET(c);
                GET(d);
                if ((uint64_t)(end - p) < d) {
                    for (uint64_t x = 0; names && x < k; x++)
                        free(names[x]);
                    free(names);
                    return fail(&L->r, "corrupt: a field name runs past its chunk");
                }
                if (names)
                    names[k] = strndup((const char *)p, d);
                p += d;
            }
            if (names) {
                if (L->class_fields[a]) {
                    for (uint32_t x = 0; x < L->class_nfields[a]; x++)
                        free(L->class_fields[a][x]);
                    free(L->class_fields[a]);
                }
                L->class_fields[a] = names;
                L->class_nfields[a] = (uint8_t)b;
            }
            break;
        case DNP_HEAP_NAME:
        case DNP_HEAP_FUNC:
            GET(a);
            GET(b);
            if ((uint64_t)(end - p) < b)
                return fail(&L->r, "corrupt: a name runs past its chunk");
            if (L->pass == PASS_OBJECTS && tag == DNP_HEAP_NAME && class_name_set(L, a, p, b) < 0)
                return -1;
            if (L->pass == PASS_OBJECTS && tag == DNP_HEAP_FUNC) {
                uint32_t k = g->nfuncs;
                if ((k & (k - 1)) == 0) {
                    uint32_t nc = k ? k * 2 : 64;
                    uint64_t *ni = realloc(g->func_ids, nc * sizeof *ni);
                    if (ni)
                        g->func_ids = ni;
                    char **nn = realloc(g->func_names, nc * sizeof *nn);
                    if (nn)
                        g->func_names = nn;
                    if (!ni || !nn)
                        return fail(&L->r, "out of memory");
                }
                g->func_ids[k] = a;
                g->func_names[k] = strndup((const char *)p, b);
                g->nfuncs++;
            }
            p += b;
            break;
        case DNP_HEAP_NONGC:
            GET(a);
            for (uint64_t k = 0; k < a; k++) {
                GET(b);
                GET(c);
                if (L->pass == PASS_OBJECTS && L->nnongc < 256) {
                    L->nongc[L->nnongc][0] = b;
                    L->nongc[L->nnongc++][1] = c;
                }
            }
            break;
        case DNP_HEAP_END: {
            end_info *en = &L->end;
            uint64_t *f[] = {&en->status, &en->objects, &en->refs,   &en->roots,  &en->deps,
                             &en->bytes,  &en->gc_ns,   &en->pause_ns, &en->walk_ns};
            for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
                GET(*f[i]);
            GET(a);
            if ((uint64_t)(end - p) < a)
                return fail(&L->r, "corrupt: the end record");
            snprintf(en->msg, sizeof en->msg, "%.*s", (int)a, (const char *)p);
            p += a;
            if (p != end)
                return fail(&L->r, "corrupt: records after the end record");
            en->seen = 1;
            break;
        }
        default:
            return fail(&L->r, "corrupt: unknown record 0x%02x (a newer dnprof's snapshot?)", tag);
        }
    }
    return 0;
}

static int pass(loader *L, int which) {
    L->pass = which;
    L->prev_obj = L->prev_root = L->prev_key = 0;
    L->left = 0;
    L->cur_node = 0;
    if (seek_to(&L->r, DNP_HEAP_HEADER_SIZE) < 0)
        return -1;
    const uint8_t *data;
    uint32_t len;
    int rc;
    while ((rc = next_chunk(&L->r, &data, &len, which == PASS_OBJECTS)) == 1)
        if (decode(L, data, data + len) < 0)
            return -1;
    if (rc == 0 && L->left)
        return fail(&L->r, "corrupt: the last object's references are missing");
    return rc;
}

/* Framing and the END record, which must close the last chunk. */
static int read_end(loader *L) {
    reader *r = &L->r;
    uint8_t hdr[DNP_HEAP_HEADER_SIZE];
    if (fread(hdr, 1, sizeof hdr, r->f) != sizeof hdr || memcmp(hdr, "DNPHEAP", 7) != 0) {
        if (r->size >= 8 && memcmp(hdr, "DNPHEAP", 7) == 0)
            return fail(r, "truncated: the file ends inside its header");
        return fail(r, "not a dnprof heap snapshot (take one with dnprof snapshot PID)");
    }
    uint32_t version;
    memcpy(&version, hdr + 8, 4);
    if (memcmp(hdr, DNP_HEAP_MAGIC, 8) != 0 || version < DNP_HEAP_VERSION_MIN ||
        version > DNP_HEAP_VERSION)
        return fail(r, "a heap snapshot of format version %u; this dnprof reads versions %u to %u",
                    (unsigned)version, DNP_HEAP_VERSION_MIN, DNP_HEAP_VERSION);
    L->version = version;
    memcpy(&L->g->pid, hdr + 16, 8);
    memcpy(&L->g->start_real_ns, hdr + 24, 8);
    r->pos = sizeof hdr;
    uint64_t last = 0;
    uint32_t len;
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
    const uint8_t *data;
    if (next_chunk(r, &data, &len, 1) != 1)
        return -1;
    L->pass = PASS_END;
    if (decode(L, data, data + len) < 0)
        return -1;
    if (!L->end.seen)
        return fail(r, "truncated: no end record (the snapshot was cut short, or the process "
                       "died while it was taken); take it again");
    if (L->end.status != DNP_HEAP_COMPLETE)
        return fail(r, "incomplete snapshot: %s", L->end.msg[0] ? L->end.msg : "(no reason given)");
    if (L->end.objects >= UINT32_MAX - 1 || L->end.refs + L->end.roots + L->end.deps >= UINT32_MAX)
        return fail(r, "too large for this dnprof (%llu objects, %llu references)",
                    (unsigned long long)L->end.objects, (unsigned long long)L->end.refs);
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    const char *const *x = a, *const *y = b;
    return strcmp(*x, *y);
}

/* Classes of one name become one type. */
static int make_types(loader *L) {
    dnp_heapgraph *g = L->g;
    uint32_t nc = L->nclasses ? L->nclasses : 1;
    char **sorted = malloc(nc * sizeof *sorted);
    uint32_t *map = calloc(nc, sizeof *map);
    if (!sorted || !map) {
        free(sorted);
        free(map);
        return fail(&L->r, "out of memory");
    }
    uint32_t ns = 0;
    for (uint32_t i = 0; i < L->nclasses; i++)
        if (L->class_names && L->class_names[i])
            sorted[ns++] = L->class_names[i];
    qsort(sorted, ns, sizeof *sorted, cmp_str);
    g->types = malloc((ns + 1) * sizeof *g->types);
    if (!g->types) {
        free(sorted);
        free(map);
        return fail(&L->r, "out of memory");
    }
    g->ntypes = 0;
    g->types[g->ntypes++] = strdup("<unknown class>");
    for (uint32_t i = 0; i < ns; i++)
        if (!i || strcmp(sorted[i], sorted[i - 1]))
            g->types[g->ntypes++] = strdup(sorted[i]);
    for (uint32_t i = 0; i < L->nclasses; i++) {
        if (!L->class_names || !L->class_names[i])
            continue;
        char **hit = bsearch(&L->class_names[i], g->types + 1, g->ntypes - 1, sizeof *g->types,
                             cmp_str);
        map[i] = hit ? (uint32_t)(hit - g->types) : 0;
    }
    for (uint32_t v = 1; v < g->n; v++)
        g->type[v] = g->type[v] < L->nclasses ? map[g->type[v]] : 0;
    g->type[0] = 0;
    g->type_fields = calloc(g->ntypes, sizeof *g->type_fields);
    g->type_nfields = calloc(g->ntypes, sizeof *g->type_nfields);
    if (!g->type_fields || !g->type_nfields) {
        free(sorted);
        free(map);
        return fail(&L->r, "out of memory");
    }
    for (uint32_t i = 0; i < L->nclasses; i++) {
        if (!L->class_fields || !L->class_fields[i] || !map[i] || g->type_fields[map[i]])
            continue;
        g->type_fields[map[i]] = L->class_fields[i];
        g->type_nfields[map[i]] = L->class_nfields[i];
        L->class_fields[i] = NULL;
    }
    free(sorted);
    free(map);
    return 0;
}

static int cmp_dep(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
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
    int rc = -1;
    L->r.f = fopen(path, "rbe");
    struct stat st;
    if (!L->r.f || fstat(fileno(L->r.f), &st) != 0) {
        fail(&L->r, "cannot open: %s", strerror(errno));
        goto out;
    }
    L->r.size = g->file_bytes = (uint64_t)st.st_size;
    if (read_end(L) < 0)
        goto out;
    g->gc_ns = L->end.gc_ns;
    g->pause_ns = L->end.pause_ns;
    g->walk_ns = L->end.walk_ns;
    g->n = (uint32_t)L->end.objects + 1;
    uint64_t hcap = (uint64_t)g->n + g->n / 2 + 1; /* a load of 2/3 at most */
    g->addr = calloc(g->n, sizeof *g->addr);
    g->type = calloc(g->n, sizeof *g->type);
    g->size = calloc(g->n, sizeof *g->size);
    g->off = calloc((size_t)g->n + 1, sizeof *g->off);
    g->roots = calloc(L->end.roots + 1, sizeof *g->roots);
    L->root_addr = calloc(L->end.roots + 1, sizeof *L->root_addr);
    L->dep_kaddr = calloc(L->end.deps + 1, sizeof *L->dep_kaddr);
    L->dep_vaddr = calloc(L->end.deps + 1, sizeof *L->dep_vaddr);
    if (!g->addr || !g->type || !g->size || !g->off || !g->roots || !L->root_addr ||
        !L->dep_kaddr || !L->dep_vaddr) {
        fail(&L->r, "out of memory for %llu objects", (unsigned long long)L->end.objects);
        goto out;
    }
    if (pass(L, PASS_OBJECTS) < 0)
        goto out;
    if (L->nobj + 1 != g->n) {
        fail(&L->r, "corrupt: %u objects where the end record says %llu", L->nobj,
             (unsigned long long)L->end.objects);
        goto out;
    }
    g->nroots = L->nroots;
    if (make_types(L) < 0)
        goto out;

    /* The address hash. */
    L->hash = calloc(hcap, sizeof *L->hash);
    if (!L->hash) {
        fail(&L->r, "out of memory");
        goto out;
    }
    L->hcap = hcap;
    for (uint32_t v = 1; v < g->n; v++) {
        uint64_t i = hash_slot(g->addr[v], hcap);
        while (L->hash[i])
            if (++i == hcap)
                i = 0;
        L->hash[i] = v;
    }
    /* Objects of the non-GC heap are held by it: roots of their own kind. */
    uint32_t nfrozen = 0;
    for (uint32_t v = 1; L->nnongc && v < g->n; v++)
        for (uint32_t i = 0; i < L->nnongc; i++)
            if (g->addr[v] - L->nongc[i][0] < L->nongc[i][1]) {
                nfrozen++;
                break;
            }
    if (nfrozen) {
        dnp_heap_root *nr = realloc(g->roots, ((size_t)g->nroots + nfrozen + 1) * sizeof *nr);
        uint64_t *na = realloc(L->root_addr, ((size_t)g->nroots + nfrozen + 1) * sizeof *na);
        if (nr)
            g->roots = nr;
        if (na)
            L->root_addr = na;
        if (!nr || !na) {
            fail(&L->r, "out of memory");
            goto out;
        }
        for (uint32_t v = 1; v < g->n; v++)
            for (uint32_t i = 0; i < L->nnongc; i++)
                if (g->addr[v] - L->nongc[i][0] < L->nongc[i][1]) {
                    g->roots[g->nroots] = (dnp_heap_root){0, DNP_ROOT_NONGC, 0, 0};
                    L->root_addr[g->nroots++] = g->addr[v];
                    break;
                }
    }
    /* Roots and dependent handles as nodes; the edge counts, then offsets. */
    uint32_t strong = 0;
    for (uint32_t i = 0; i < g->nroots; i++) {
        g->roots[i].node = lookup(L, L->root_addr[i]);
        if (g->roots[i].node && !(g->roots[i].flags & DNP_ROOT_WEAK))
            strong++;
    }
    g->dep_key = malloc((L->ndeps + 1) * 2 * sizeof(uint32_t));
    if (!g->dep_key) {
        fail(&L->r, "out of memory");
        goto out;
    }
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
    if (!g->edges || ((flags & DNP_HG_FIELDS) && !g->edge_field)) {
        fail(&L->r, "out of memory for %llu references", (unsigned long long)g->m);
        goto out;
    }
    uint32_t w = 0;
    for (uint32_t i = 0; i < g->nroots; i++)
        if (g->roots[i].node && !(g->roots[i].flags & DNP_ROOT_WEAK))
            g->edges[w++] = g->roots[i].node;
    if ((flags & DNP_HG_FIELDS) && !(L->lastmap = calloc(L->nclasses + 1, sizeof *L->lastmap))) {
        fail(&L->r, "out of memory");
        goto out;
    }
    if (pass(L, PASS_REFS) < 0)
        goto out;
    /* Dependent handles' values close their key's edges. */
    for (uint32_t i = 0; i < nd;) {
        uint32_t k = g->dep_key[2 * i], j = i;
        while (j < nd && g->dep_key[2 * j] == k)
            j++;
        uint32_t at = g->off[k + 1] - (j - i);
        for (uint32_t x = i; x < j; x++)
            g->edges[at++] = g->dep_key[2 * x + 1];
        i = j;
    }
    /* Split the pairs into two arrays. */
    g->dep_val = malloc((nd + 1) * sizeof *g->dep_val);
    if (!g->dep_val) {
        fail(&L->r, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < nd; i++) {
        g->dep_val[i] = g->dep_key[2 * i + 1];
        g->dep_key[i] = g->dep_key[2 * i];
    }
    /* Drop the references to objects not in the snapshot. */
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
    rc = 0;
out:
    free(L->hash);
    free(L->root_addr);
    free(L->dep_kaddr);
    free(L->dep_vaddr);
    for (uint32_t i = 0; i < L->nclasses; i++) {
        free(L->class_names[i]);
        for (uint32_t k = 0; L->class_fields[i] && k < L->class_nfields[i]; k++)
            free(L->class_fields[i][k]);
        free(L->class_fields ? L->class_fields[i] : NULL);
    }
    for (uint32_t i = 0; L->lastmap && i <= L->nclasses; i++)
        free(L->lastmap[i]);
    free(L->lastmap);
    free(L->class_names);
    free(L->class_fields);
    free(L->class_nfields);
    free(L->r.buf);
    if (L->r.f)
        fclose(L->r.f);
    free(L);
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

void dnp_heapgraph_release(dnp_heapgraph *g) {
    free(g->addr);
    free(g->type);
    free(g->size);
    free(g->off);
    free(g->edges);
    free(g->roots);
    free(g->dep_key);
    free(g->dep_val);
    for (uint32_t i = 0; i < g->ntypes; i++) {
        free(g->types[i]);
        for (uint32_t k = 0; g->type_fields && g->type_fields[i] && k < g->type_nfields[i]; k++)
            free(g->type_fields[i][k]);
        if (g->type_fields)
            free(g->type_fields[i]);
    }
    free(g->types);
    free(g->type_fields);
    free(g->type_nfields);
    free(g->edge_field);
    for (uint32_t i = 0; i < g->nfuncs; i++)
        free(g->func_names[i]);
    free(g->func_ids);
    free(g->func_names);
    free(g->idom);
    free(g->retained);
    memset(g, 0, sizeof *g);
}

/* ---- dominators ---- */

int dnp_heapgraph_dominators(dnp_heapgraph *g, int free_graph) {
    uint32_t n = g->n;
    uint32_t *po = malloc((size_t)n * sizeof *po);    /* postorder number */
    /* order: the nodes by postorder number from the front, and the DFS's stack
     * from the back (found = finished + on the stack <= n: they never meet) */
    uint32_t *order = malloc((size_t)n * sizeof *order);
    uint32_t *idom = malloc((size_t)n * sizeof *idom); /* first: the DFS's edge cursors */
    if (!po || !order || !idom) {
        free(po), free(order), free(idom);
        return -1;
    }
    for (uint32_t v = 0; v < n; v++)
        po[v] = DNP_HG_NONE;
    /* Iterative DFS from the roots' node; po[v] = n while v is on the stack. */
    uint32_t count = 0, sp = n; /* the stack is order[sp..n) */
    order[--sp] = 0;
    idom[0] = g->off[0];
    po[0] = n;
    while (sp < n) {
        uint32_t v = order[sp];
        if (idom[v] < g->off[v + 1]) {
            uint32_t s = g->edges[idom[v]++];
            if (po[s] == DNP_HG_NONE) {
                po[s] = n;
                idom[s] = g->off[s];
                order[--sp] = s;
            }
        } else {
            sp++;
            po[v] = count;
            order[count++] = v;
        }
    }
    for (uint32_t v = 0; v < n; v++)
        idom[v] = DNP_HG_NONE;
    idom[0] = 0;
    /* Cooper-Harvey-Kennedy, each node giving its successors their candidate:
     * in reverse postorder, until nothing changes. */
    int changed = 1;
    while (changed) {
        changed = 0;
        for (uint32_t k = count; k-- > 0;) {
            uint32_t b = order[k];
            if (idom[b] == DNP_HG_NONE)
                continue;
            for (uint32_t e = g->off[b]; e < g->off[b + 1]; e++) {
                uint32_t s = g->edges[e];
                if (s == 0)
                    continue;
                uint32_t cur = idom[s], nw;
                if (cur == DNP_HG_NONE) {
                    nw = b;
                } else {
                    uint32_t x = b, y = cur;
                    while (x != y) {
                        while (po[x] < po[y])
                            x = idom[x];
                        while (po[y] < po[x])
                            y = idom[y];
                    }
                    nw = x;
                }
                if (nw != cur) {
                    idom[s] = nw;
                    changed = 1;
                }
            }
        }
    }
    if (free_graph) {
        free(g->edges);
        g->edges = NULL;
        free(g->off);
        g->off = NULL;
    }
    free(po);
    uint64_t *ret = malloc((size_t)n * sizeof *ret);
    if (!ret) {
        free(order);
        free(idom);
        return -1;
    }
    for (uint32_t v = 0; v < n; v++)
        ret[v] = v ? g->size[v] : 0;
    /* Postorder: a node's dominated nodes before it. */
    for (uint32_t k = 0; k < count; k++) {
        uint32_t v = order[k];
        if (v)
            ret[idom[v]] += ret[v];
    }
    free(order);
    g->unreachable = 0;
    g->unreachable_bytes = 0;
    for (uint32_t v = 1; v < n; v++) {
        if (idom[v] == DNP_HG_NONE) {
            g->unreachable++;
            g->unreachable_bytes += g->size[v];
        }
    }
    free(g->idom);
    free(g->retained);
    g->idom = idom;
    g->retained = ret;
    return 0;
}

int dnp_heapgraph_by_type(dnp_heapgraph *g, uint64_t **count_out,
                          uint64_t **bytes_out, uint64_t **ret_out) {
    uint32_t n = g->n, nt = g->ntypes;
    uint64_t *count = calloc(nt, sizeof *count), *bytes = calloc(nt, sizeof *bytes),
             *ret = calloc(nt, sizeof *ret);
    uint32_t *active = calloc(nt, sizeof *active);
    if (!count || !bytes || !ret || !active)
        goto oom;
    for (uint32_t v = 1; v < n; v++) {
        count[g->type[v]]++;
        bytes[g->type[v]] += g->size[v];
    }
    /* The dominator tree as CSR (children of each node), walked depth first
     * with a count of the instances of each type on the way down. */
    uint32_t *coff = calloc((size_t)n + 1, sizeof *coff);
    uint32_t *kids = malloc((size_t)n * sizeof *kids);
    if (!coff || !kids) {
        free(coff);
        free(kids);
        goto oom;
    }
    for (uint32_t v = 1; v < n; v++)
        if (g->idom[v] != DNP_HG_NONE)
            coff[g->idom[v] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        coff[v + 1] += coff[v];
    for (uint32_t v = 1; v < n; v++)
        if (g->idom[v] != DNP_HG_NONE)
            kids[coff[g->idom[v]]++] = v;
    for (uint32_t v = n; v > 0; v--) /* back to the starts */
        coff[v] = coff[v - 1];
    coff[0] = 0;
    /* Depth first without a stack: down through a child (coff[v] is v's
     * cursor up to end[v]), back up through idom. */
    uint32_t *end = malloc((size_t)n * sizeof *end);
    if (!end) {
        free(coff), free(kids);
        goto oom;
    }
    for (uint32_t v = 0; v < n; v++)
        end[v] = coff[v + 1];
    uint32_t v = 0;
    for (;;) {
        if (coff[v] < end[v]) {
            uint32_t c = kids[coff[v]++];
            uint32_t t = g->type[c];
            if (!active[t]++)
                ret[t] += g->retained[c];
            v = c;
        } else {
            if (!v)
                break;
            active[g->type[v]]--;
            v = g->idom[v];
        }
    }
    free(end);
    free(coff);
    free(kids);
    free(active);
    *count_out = count;
    *bytes_out = bytes;
    *ret_out = ret;
    return 0;
oom:
    free(count), free(bytes), free(ret), free(active);
    return -1;
}

/* ---- paths ---- */

int dnp_heapgraph_bfs(const dnp_heapgraph *g, uint32_t **parent_out, uint32_t **order_out,
                      uint32_t *norder) {
    uint32_t n = g->n;
    uint32_t *parent = malloc((size_t)n * sizeof *parent);
    uint32_t *q = malloc((size_t)n * sizeof *q);
    if (!parent || !q) {
        free(parent);
        free(q);
        return -1;
    }
    for (uint32_t v = 0; v < n; v++)
        parent[v] = DNP_HG_NONE;
    uint32_t head = 0, tail = 0;
    parent[0] = 0;
    q[tail++] = 0;
    while (head < tail) {
        uint32_t v = q[head++];
        for (uint32_t e = g->off[v]; e < g->off[v + 1]; e++) {
            uint32_t s = g->edges[e];
            if (parent[s] == DNP_HG_NONE) {
                parent[s] = v;
                q[tail++] = s;
            }
        }
    }
    *parent_out = parent;
    *order_out = q;
    *norder = tail;
    return 0;
}

int dnp_heapgraph_is_dep(const dnp_heapgraph *g, uint32_t from, uint32_t to) {
    uint32_t lo = 0, hi = g->ndeps;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->dep_key[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < g->ndeps && g->dep_key[lo] == from; lo++)
        if (g->dep_val[lo] == to)
            return 1;
    return 0;
}

uint32_t dnp_heapgraph_find(const dnp_heapgraph *g, uint64_t addr) {
    if (!g->addr)
        return 0;
    for (uint32_t v = 1; v < g->n; v++)
        if (addr >= g->addr[v] && addr < g->addr[v] + (g->size[v] ? g->size[v] : 1))
            return v;
    return 0;
}

const dnp_heap_root *dnp_heapgraph_root_of(const dnp_heapgraph *g, uint32_t node) {
    const dnp_heap_root *best = NULL;
    for (uint32_t i = 0; i < g->nroots; i++) {
        if (g->roots[i].node != node)
            continue;
        if (!(g->roots[i].flags & DNP_ROOT_WEAK))
            return &g->roots[i];
        if (!best)
            best = &g->roots[i];
    }
    return best;
}

const char *dnp_heapgraph_edge_field(const dnp_heapgraph *g, uint32_t from, uint64_t e) {
    if (!g->edge_field || !from || !g->edge_field[e])
        return NULL;
    uint32_t t = g->type[from], f = g->edge_field[e];
    if (!g->type_fields || !g->type_fields[t] || f > g->type_nfields[t])
        return NULL;
    const char *name = g->type_fields[t][f - 1];
    return name && *name ? name : NULL;
}

const char *dnp_heapgraph_func(const dnp_heapgraph *g, uint64_t id) {
    for (uint32_t i = 0; i < g->nfuncs; i++)
        if (g->func_ids[i] == id)
            return g->func_names[i];
    return NULL;
}
