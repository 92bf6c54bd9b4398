/* test_heapgraph.c: the heap graph's algorithms (src/export/heapgraph.c) on
 * graphs built by hand: dominators against a brute-force definition on random
 * graphs, retained sizes by type, and a 10-million-long chain, which any
 * recursive algorithm would overflow the stack on; the reader
 * (src/export/heapload.c) on snapshots written with the format's encoders,
 * checked against the heap they describe; the format's doc table. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"
#include "test.h"

/* A graph of n nodes (0 the roots' node) from an edge list. */
static int build(dnp_heapgraph *g, uint32_t n, const uint32_t *from, const uint32_t *to, uint32_t m) {
    memset(g, 0, sizeof *g);
    g->n = n;
    g->m = m;
    g->off = calloc(n + 1, sizeof *g->off);
    g->edges = malloc((m + 1) * sizeof *g->edges);
    g->size = malloc(n * sizeof *g->size);
    g->type = calloc(n, sizeof *g->type);
    if (!g->off || !g->edges || !g->size || !g->type)
        return -1;
    for (uint32_t i = 0; i < m; i++)
        g->off[from[i] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        g->off[v + 1] += g->off[v];
    uint32_t *at = malloc(n * sizeof *at);
    if (!at)
        return -1;
    memcpy(at, g->off, n * sizeof *at);
    for (uint32_t i = 0; i < m; i++)
        g->edges[at[from[i]]++] = to[i];
    free(at);
    for (uint32_t v = 0; v < n; v++)
        g->size[v] = v ? 10 + v % 7 : 0;
    return 0;
}

/* Whether v is reachable from 0 without passing through d. */
static int reach_without(const dnp_heapgraph *g, uint32_t d, uint32_t v, uint8_t *seen, uint32_t *st) {
    memset(seen, 0, g->n);
    if (d == 0)
        return v == 0 ? 1 : 0;
    uint32_t sp = 0;
    st[sp++] = 0;
    seen[0] = 1;
    while (sp) {
        uint32_t x = st[--sp];
        if (x == v)
            return 1;
        for (uint32_t e = g->off[x]; e < g->off[x + 1]; e++) {
            uint32_t s = g->edges[e];
            if (s != d && !seen[s]) {
                seen[s] = 1;
                st[sp++] = s;
            }
        }
    }
    return 0;
}

TEST(heap_dominators_random) {
    srand(12345);
    for (int round = 0; round < 300; round++) {
        uint32_t n = 2 + (uint32_t)(rand() % 24), m = (uint32_t)(rand() % (3 * n + 1));
        uint32_t from[100], to[100];
        if (m > 100)
            m = 100;
        for (uint32_t i = 0; i < m; i++) {
            from[i] = (uint32_t)rand() % n;
            to[i] = 1 + (uint32_t)rand() % (n - 1);
        }
        dnp_heapgraph g;
        ASSERT_EQ(build(&g, n, from, to, m), 0);
        ASSERT_EQ(dnp_heapgraph_dominators(&g, 0), 0);
        uint8_t seen[32];
        uint32_t st[32];
        for (uint32_t v = 1; v < n; v++) {
            int reachable = reach_without(&g, DNP_HG_NONE, v, seen, st);
            if (!reachable) {
                ASSERT_EQ(g.idom[v], DNP_HG_NONE);
                continue;
            }
            /* the dominators of v: the d whose removal cuts v off (and 0) */
            uint32_t doms[32], nd = 0;
            for (uint32_t d = 0; d < n; d++)
                if (d != v && !reach_without(&g, d, v, seen, st))
                    doms[nd++] = d;
            /* the immediate one is the dominator every other dominator dominates:
             * the one dominated by all the others, i.e. the last on idom's chain */
            uint32_t id = g.idom[v];
            ASSERT_NE(id, DNP_HG_NONE);
            int found = 0;
            for (uint32_t k = 0; k < nd; k++)
                found |= doms[k] == id;
            ASSERT(found);
            /* every dominator of v is id or dominates id */
            for (uint32_t k = 0; k < nd; k++) {
                if (doms[k] == id)
                    continue;
                ASSERT(!reach_without(&g, doms[k], id, seen, st));
            }
        }
        /* retained: own size plus the retained of what v immediately dominates */
        for (uint32_t v = 1; v < n; v++) {
            if (g.idom[v] == DNP_HG_NONE)
                continue;
            uint64_t want = g.size[v];
            for (uint32_t x = 1; x < n; x++)
                if (g.idom[x] == v)
                    want += g.retained[x];
            ASSERT_EQ(g.retained[v], want);
        }
        /* by type: the bytes of the nodes with an instance of the type on their
         * dominator chain (themselves included) */
        g.ntypes = 3;
        for (uint32_t v = 1; v < n; v++)
            g.type[v] = (uint32_t)rand() % 3;
        uint64_t *count, *bytes, *ret;
        ASSERT_EQ(dnp_heapgraph_by_type(&g, &count, &bytes, &ret), 0);
        for (uint32_t t = 0; t < 3; t++) {
            uint64_t want = 0;
            for (uint32_t v = 1; v < n; v++) {
                if (g.idom[v] == DNP_HG_NONE)
                    continue;
                int under = 0;
                for (uint32_t x = v; x != 0 && !under; x = g.idom[x])
                    under = g.type[x] == t;
                if (under)
                    want += g.size[v];
            }
            ASSERT_EQ(ret[t], want);
        }
        free(count), free(bytes), free(ret);
        g.ntypes = 0;
        dnp_heapgraph_release(&g);
    }
    return 0;
}

TEST(heap_dominators_long_chain) {
    const uint32_t n = 10000001; /* roots' node + 10 M objects, each holding the next */
    dnp_heapgraph g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.m = n - 1 + 1;
    g.off = malloc((size_t)(n + 1) * sizeof *g.off);
    g.edges = malloc((size_t)g.m * sizeof *g.edges);
    g.size = malloc((size_t)n * sizeof *g.size);
    g.type = calloc(n, sizeof *g.type);
    ASSERT(g.off);
    ASSERT(g.edges);
    ASSERT(g.size);
    ASSERT(g.type);
    for (uint32_t v = 0; v < n; v++) {
        g.off[v] = v;
        g.edges[v] = v + 1 < n ? v + 1 : 1; /* the last one points back at the first */
        g.size[v] = v ? 32 : 0;
        g.type[v] = v ? 1 + (v & 1) : 0;
    }
    g.off[n] = n;
    g.ntypes = 3;
    g.types = calloc(3, sizeof *g.types);
    ASSERT(g.types);
    for (int t = 0; t < 3; t++)
        g.types[t] = strdup(t == 0 ? "?" : t == 1 ? "A" : "B");
    ASSERT_EQ(dnp_heapgraph_dominators(&g, 0), 0);
    ASSERT_EQ(g.unreachable, 0);
    ASSERT_EQ(g.retained[1], (uint64_t)32 * (n - 1));
    ASSERT_EQ(g.retained[n - 1], 32);
    ASSERT_EQ(g.idom[n - 1], n - 2);
    uint64_t *count, *bytes, *ret;
    ASSERT_EQ(dnp_heapgraph_by_type(&g, &count, &bytes, &ret), 0);
    ASSERT_EQ(count[1] + count[2], n - 1);
    /* node 1 (a B) dominates everything; node 2 (the first A) all but node 1 */
    ASSERT_EQ(ret[2], (uint64_t)32 * (n - 1));
    ASSERT_EQ(ret[1], (uint64_t)32 * (n - 2));
    free(count), free(bytes), free(ret);
    dnp_heapgraph_release(&g);
    return 0;
}

/* ---- the reader, on files written here with heap_format.h's encoders ---- */

#include <stdio.h>

#include "heap_format.h"
#include "trace_format.h"

static void put_chunk(FILE *f, const uint8_t *p, size_t len) {
    uint32_t h[3] = {DNP_HEAP_CHUNK_MAGIC, (uint32_t)len, dnp_crc32(p, len)};
    fwrite(h, sizeof h, 1, f);
    fwrite(p, 1, len, f);
}

#define HOST_PID 4343 /* the host's pid of a version 4 header */

/* A new snapshot file of the version with a header of size bytes (version 4
 * and later: the host's pid at 32): its path in path (a mkstemp template). */
static FILE *snap_open_sized(char *path, uint32_t version, uint32_t size) {
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f)
        return NULL;
    uint8_t hdr[64] = {0};
    memcpy(hdr, DNP_HEAP_MAGIC, 8);
    dnp_put_u32le(hdr + 8, version);
    dnp_put_u32le(hdr + 12, size);
    dnp_put_u64le(hdr + 16, 4242);
    if (version >= 4 && size >= 40)
        dnp_put_u64le(hdr + 32, HOST_PID);
    fwrite(hdr, size, 1, f);
    return f;
}

static FILE *snap_open(char *path, uint32_t version) {
    return snap_open_sized(path, version, version >= 4 ? DNP_HEAP_HEADER_SIZE : DNP_HEAP_HEADER_SIZE_V3);
}

static uint8_t *put_name(uint8_t *p, uint64_t cls, const char *name) {
    return dnp_heap_put_NAME(p, &(struct dnp_heap_NAME){.cls = cls, .name = name, .name_len = strlen(name)});
}

static uint8_t *put_end(uint8_t *p, uint64_t objects, uint64_t refs, uint64_t roots, uint64_t deps,
                        uint64_t bytes) {
    return dnp_heap_put_END(p, &(struct dnp_heap_END){
        .status = DNP_HEAP_COMPLETE, .objects = objects, .refs = refs, .roots = roots, .deps = deps,
        .bytes = bytes, .gc_ns = 1, .pause_ns = 2, .walk_ns = 1, .message = "", .message_len = 0});
}

/* A holder whose 5000 references run over into the last chunk, which thus
 * starts with a MORE record: the reader must take it. References as the
 * format version writes them: version 2 each from the one before in its
 * record (the first from the holder), version 1 each from the holder. */
static int refs_across_chunks(uint32_t version, uint32_t header_size) {
    char path[] = "/tmp/dnprof-unit-heap-XXXXXX";
    FILE *f = header_size ? snap_open_sized(path, version, header_size) : snap_open(path, version);
    ASSERT(f);
    static uint8_t buf[1 << 20];
    uint8_t *p = buf;
    const uint32_t n = 5000;
    const uint64_t base = 0x10000, holder = base + 32ull * n;
    p = dnp_heap_put_CLASS(p, &(struct dnp_heap_CLASS){.index = 1, .class_id = 0x1111});
    p = dnp_heap_put_CLASS(p, &(struct dnp_heap_CLASS){.index = 2, .class_id = 0x2222});
    p = dnp_heap_put_ROOTS(p, &(struct dnp_heap_ROOTS){.n = 1});
    p = dnp_heap_put_ROOTS_item(p, &(struct dnp_heap_ROOTS_item){.kind_flags = DNP_ROOT_HANDLE,
                                                                 .addr = (int64_t)holder, .id = 7});
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        p = dnp_heap_put_OBJECT(p, &(struct dnp_heap_OBJECT){
            .addr = (int64_t)(base + 32ull * i - prev), .cls = 1, .size = 32});
        prev = base + 32ull * i;
    }
    p = dnp_heap_put_OBJECT(p, &(struct dnp_heap_OBJECT){.addr = (int64_t)(holder - prev), .cls = 2,
                                                         .size = 24 + 8 * n, .nrefs = n,
                                                         .n = DNP_HEAP_REFS_PER_RECORD});
    uint64_t from = holder;
    for (uint32_t i = 0; i < n; i++) {
        if (i == DNP_HEAP_REFS_PER_RECORD) { /* the rest in the next chunk */
            put_chunk(f, buf, (size_t)(p - buf));
            p = dnp_heap_put_MORE(buf, &(struct dnp_heap_MORE){.n = n - DNP_HEAP_REFS_PER_RECORD});
            from = holder;
        }
        p = dnp_heap_put_MORE_item(p, &(struct dnp_heap_MORE_item){.ref = (int64_t)(base + 32ull * i - from)});
        if (version >= 2)
            from = base + 32ull * i;
    }
    p = put_name(put_name(p, 1, "Item"), 2, "Item[]");
    p = put_end(p, n + 1, n, 1, 0, 32ull * n + 24 + 8 * n);
    put_chunk(f, buf, (size_t)(p - buf));
    long whole = ftell(f);
    fclose(f);

    dnp_heapgraph g;
    char err[512];
    int rc = dnp_heapgraph_load(path, 1, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(g.n, n + 2);
    ASSERT_EQ(g.m, n + 1);
    ASSERT_EQ(g.pid, 4242);
    ASSERT_EQ(g.host_pid, version >= 4 ? HOST_PID : 0);
    /* every reference resolved to its own item, in order */
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ(g.edges[g.off[n + 1] + i], i + 1);
    ASSERT_EQ(dnp_heapgraph_dominators(&g, 0), 0);
    ASSERT_EQ(g.unreachable, 0);
    ASSERT_EQ(g.retained[n + 1], 32ull * n + 24 + 8 * n);
    dnp_heapgraph_release(&g);

    /* cut anywhere: a clear "truncated" */
    for (long cut = whole - 1; cut > 0; cut = cut * 2 / 3) {
        ASSERT_EQ(truncate(path, cut), 0);
        ASSERT_LT(dnp_heapgraph_load(path, 0, &g, err, sizeof err), 0);
        ASSERT_CONTAINS(err, path);
        ASSERT((strstr(err, "truncated") || strstr(err, "not a dnprof")));
    }
    unlink(path);
    return 0;
}

TEST(heap_reader_refs_across_chunks) {
    return refs_across_chunks(DNP_HEAP_VERSION, 0);
}

/* From version 4 the header says its own size: a later one that grows it
 * still reads (its chunks from where the header says), and a size below
 * version 4's is one clear line. */
TEST(heap_reader_header_size) {
    ASSERT_EQ(refs_across_chunks(4, 56), 0);
    char path[] = "/tmp/dnprof-unit-heap-XXXXXX";
    FILE *f = snap_open_sized(path, 4, 36);
    ASSERT(f);
    uint8_t buf[256], *p = put_end(buf, 0, 0, 0, 0, 0);
    put_chunk(f, buf, (size_t)(p - buf));
    fclose(f);
    dnp_heapgraph g;
    char err[512];
    int rc = dnp_heapgraph_load(path, 0, &g, err, sizeof err);
    unlink(path);
    ASSERT_LT(rc, 0);
    ASSERT_CONTAINS(err, "corrupt: a header of 36 bytes");
    return 0;
}

/* Snapshots of format version 1 (dnprof before version 2) still read. */
TEST(heap_reader_version1) {
    return refs_across_chunks(1, 0);
}

/* A small heap whose every answer is known:
 *
 *   handle root -> Root @0x1000 (32 B) .Items -> Item @0x1100 (24 B)
 *                                      .Next  -> Item @0x1200 (24 B) -> Item @0x1300 (24 B)
 *   pinned handle -> Object[] @0x2000 (40 B) -> Cache @0x3000 (48 B) -> Item @0x3100 (24 B)
 *                    (a statics array: Holder.Cache is the static that holds the Cache)
 *   stack root in App.Main -> Key @0x4000 (16 B) =dependent handle=> Value @0x4100 (16 B)
 *   weak handle -> Item @0x5000 (24 B): held by nothing strong
 *
 * Version 3 names the static (a STATIC record); version 2 cannot. */
enum { N_ROOT = 1, N_I1, N_I2, N_I3, N_ARR, N_CACHE, N_I4, N_KEY, N_VAL, N_GARBAGE, N_OBJECTS = N_GARBAGE };

static const struct {
    uint64_t addr, cls, size;
    uint32_t nrefs;
    uint64_t refs[2];
} objs[N_OBJECTS + 1] = {
    [N_ROOT] = {0x1000, 1, 32, 2, {0x1100, 0x1200}}, [N_I1] = {0x1100, 2, 24, 0, {0}},
    [N_I2] = {0x1200, 2, 24, 1, {0x1300}},           [N_I3] = {0x1300, 2, 24, 0, {0}},
    [N_ARR] = {0x2000, 4, 40, 1, {0x3000}},          [N_CACHE] = {0x3000, 3, 48, 1, {0x3100}},
    [N_I4] = {0x3100, 2, 24, 0, {0}},                [N_KEY] = {0x4000, 5, 16, 0, {0}},
    [N_VAL] = {0x4100, 6, 16, 0, {0}},               [N_GARBAGE] = {0x5000, 2, 24, 0, {0}},
};

static int known_heap_file(char *path, uint32_t version) {
    FILE *f = snap_open(path, version);
    ASSERT(f);
    static uint8_t buf[1 << 16];
    uint8_t *p = buf;
    static const struct { uint64_t kind, addr, id; } roots[] = {
        {DNP_ROOT_HANDLE, 0x1000, 1},
        {DNP_ROOT_HANDLE | DNP_ROOT_PINNING << 3, 0x2000, 2},
        {DNP_ROOT_STACK, 0x4000, 0x77},
        {DNP_ROOT_HANDLE | DNP_ROOT_WEAK << 3, 0x5000, 3},
    };
    p = dnp_heap_put_ROOTS(p, &(struct dnp_heap_ROOTS){.n = 4});
    for (uint64_t i = 0, prev = 0; i < 4; prev = roots[i++].addr)
        p = dnp_heap_put_ROOTS_item(p, &(struct dnp_heap_ROOTS_item){
            .kind_flags = roots[i].kind, .addr = (int64_t)(roots[i].addr - prev), .id = roots[i].id});
    p = dnp_heap_put_DEPS(p, &(struct dnp_heap_DEPS){.n = 1});
    p = dnp_heap_put_DEPS_item(p, &(struct dnp_heap_DEPS_item){.key = 0x4000, .value = 0x100, .handle = 9});
    uint64_t prev = 0, total = 0, nrefs = 0;
    for (int v = 1; v <= N_OBJECTS; v++) {
        p = dnp_heap_put_OBJECT(p, &(struct dnp_heap_OBJECT){
            .addr = (int64_t)(objs[v].addr - prev), .cls = objs[v].cls, .size = objs[v].size,
            .nrefs = objs[v].nrefs, .n = objs[v].nrefs});
        uint64_t from = prev = objs[v].addr;
        for (uint32_t k = 0; k < objs[v].nrefs; from = objs[v].refs[k++])
            p = dnp_heap_put_OBJECT_item(p, &(struct dnp_heap_OBJECT_item){.ref = (int64_t)(objs[v].refs[k] - from)});
        if (v == N_ROOT) { /* Items and Next */
            p = dnp_heap_put_SLOTS(p, &(struct dnp_heap_SLOTS){.n = 2});
            p = dnp_heap_put_SLOTS_item(p, &(struct dnp_heap_SLOTS_item){.slot = 1});
            p = dnp_heap_put_SLOTS_item(p, &(struct dnp_heap_SLOTS_item){.slot = 2});
        }
        total += objs[v].size;
        nrefs += objs[v].nrefs;
    }
    const char *names[] = {NULL, "App.Root", "App.Item", "App.Cache", "System.Object[]", "App.Key", "App.Value"};
    for (int k = 1; k <= 6; k++)
        p = put_name(p, (uint64_t)k, names[k]);
    p = dnp_heap_put_FUNC(p, &(struct dnp_heap_FUNC){.function_id = 0x77, .name = "App.Main", .name_len = 8});
    p = dnp_heap_put_LAYOUT(p, &(struct dnp_heap_LAYOUT){.cls = 1, .n = 2});
    p = dnp_heap_put_LAYOUT_item(p, &(struct dnp_heap_LAYOUT_item){.offset = 8, .name = "Items", .name_len = 5});
    p = dnp_heap_put_LAYOUT_item(p, &(struct dnp_heap_LAYOUT_item){.offset = 16, .name = "Next", .name_len = 4});
    if (version >= 3) {
        const char *st = "App.Holder.Cache";
        p = dnp_heap_put_STATIC(p, &(struct dnp_heap_STATIC){.name = st, .name_len = strlen(st), .n = 1});
        p = dnp_heap_put_STATIC_item(p, &(struct dnp_heap_STATIC_item){.addr = 0x3000});
    }
    p = put_end(p, N_OBJECTS, nrefs, 4, 1, total);
    put_chunk(f, buf, (size_t)(p - buf));
    fclose(f);
    return 0;
}

static const char *type_name(const dnp_heapgraph *g, uint32_t v) {
    return g->types[g->type[v]];
}

static uint32_t type_num(const dnp_heapgraph *g, const char *name) {
    for (uint32_t t = 0; t < g->ntypes; t++)
        if (!strcmp(g->types[t], name))
            return t;
    return DNP_HG_NONE;
}

/* What the report computes: counts, bytes, retained by type, and unreachable. */
static int check_known_sizes(dnp_heapgraph *g) {
    ASSERT_EQ(g->n, N_OBJECTS + 1);
    ASSERT_EQ(g->bytes, 32 + 24 * 5 + 40 + 48 + 16 + 16);
    ASSERT_EQ(g->nroots, 4);
    ASSERT_EQ(g->ndeps, 1);
    ASSERT_EQ(dnp_heapgraph_dominators(g, 0), 0);
    ASSERT_EQ(g->retained[N_ROOT], 32 + 3 * 24);
    ASSERT_EQ(g->retained[N_I2], 2 * 24);
    ASSERT_EQ(g->retained[N_ARR], 40 + 48 + 24); /* a static holds the Cache: the array still dominates it */
    ASSERT_EQ(g->retained[N_CACHE], 48 + 24);
    ASSERT_EQ(g->retained[N_KEY], 16 + 16);
    ASSERT_EQ(g->idom[N_VAL], N_KEY);
    ASSERT_EQ(g->idom[N_GARBAGE], DNP_HG_NONE);
    ASSERT_EQ(g->unreachable, 1);
    ASSERT_EQ(g->unreachable_bytes, 24);
    uint64_t *count, *bytes, *ret;
    ASSERT_EQ(dnp_heapgraph_by_type(g, &count, &bytes, &ret), 0);
    uint32_t item = type_num(g, "App.Item"), root = type_num(g, "App.Root");
    ASSERT_NE(item, DNP_HG_NONE);
    ASSERT_EQ(count[item], 5);
    ASSERT_EQ(bytes[item], 5 * 24);
    ASSERT_EQ(ret[item], 4 * 24); /* the unreachable one retained by nothing */
    ASSERT_EQ(count[root], 1);
    ASSERT_EQ(ret[root], 32 + 3 * 24);
    free(count), free(bytes), free(ret);
    return 0;
}

/* What paths show: the shortest chains, the fields, the roots and their methods. */
static int check_known_paths(dnp_heapgraph *g, int named_static) {
    ASSERT_EQ(g->addr[N_CACHE], 0x3000);
    ASSERT_EQ(dnp_heapgraph_find(g, 0x3010), N_CACHE);
    ASSERT_STREQ(type_name(g, N_CACHE), "App.Cache");
    uint32_t *parent, *order, norder;
    ASSERT_EQ(dnp_heapgraph_bfs(g, &parent, &order, &norder), 0);
    ASSERT_EQ(norder, N_OBJECTS); /* the roots' node and all but the weakly held one */
    ASSERT_EQ(parent[N_GARBAGE], DNP_HG_NONE);
    ASSERT_EQ(parent[N_I3], N_I2);
    ASSERT_EQ(parent[N_I2], N_ROOT);
    ASSERT_EQ(parent[N_VAL], N_KEY);
    ASSERT(dnp_heapgraph_is_dep(g, N_KEY, N_VAL));
    ASSERT(!dnp_heapgraph_is_dep(g, N_ROOT, N_I1));
    /* Root's edges in field order: Items, Next */
    ASSERT_EQ(g->edges[g->off[N_ROOT]], N_I1);
    ASSERT_STREQ(dnp_heapgraph_edge_field(g, N_ROOT, g->off[N_ROOT]), "Items");
    ASSERT_STREQ(dnp_heapgraph_edge_field(g, N_ROOT, g->off[N_ROOT] + 1), "Next");
    const dnp_heap_root *r = dnp_heapgraph_root_of(g, N_KEY);
    ASSERT(r);
    ASSERT_EQ(r->kind, DNP_ROOT_STACK);
    ASSERT_STREQ(dnp_heapgraph_func(g, r->id), "App.Main");
    r = dnp_heapgraph_root_of(g, N_ARR);
    ASSERT(r);
    ASSERT_EQ(r->kind, DNP_ROOT_HANDLE);
    ASSERT_EQ(r->flags, DNP_ROOT_PINNING);
    ASSERT_EQ(dnp_heapgraph_root_of(g, N_CACHE), NULL);
    if (named_static) { /* one step from the roots, through the static */
        ASSERT_EQ(parent[N_CACHE], 0);
        ASSERT_STREQ(dnp_heapgraph_static_of(g, N_CACHE), "App.Holder.Cache");
    } else {
        ASSERT_EQ(parent[N_CACHE], N_ARR);
        ASSERT_EQ(dnp_heapgraph_static_of(g, N_CACHE), NULL);
    }
    ASSERT_EQ(parent[N_I4], N_CACHE);
    free(parent);
    free(order);
    return 0;
}

static int known_heap(uint32_t version) {
    char path[] = "/tmp/dnprof-unit-heap-XXXXXX";
    ASSERT_EQ(known_heap_file(path, version), 0);
    dnp_heapgraph g;
    char err[512];
    int rc = dnp_heapgraph_load(path, DNP_HG_ADDR | DNP_HG_FIELDS, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    unlink(path);
    ASSERT_EQ(rc, 0);
    rc = check_known_sizes(&g) || check_known_paths(&g, version >= 3);
    dnp_heapgraph_release(&g);
    return rc;
}

TEST(heap_reader_known_heap) {
    return known_heap(DNP_HEAP_VERSION);
}

/* A version 2 file (no STATIC records) reads as it did: the same sizes, and
 * the static's object behind its array. */
TEST(heap_reader_known_heap_version2) {
    return known_heap(2);
}

/* docs/heap.md lists every record as heap_format.def defines it. */
TEST(heap_docs_record_table) {
    FILE *f = fopen(DNPROF_SOURCE_DIR "/docs/heap.md", "rb");
    ASSERT(f);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    for (unsigned k = 0; k < dnp_heap_nrecords; k++) {
        const dnp_heap_record_info *r = &dnp_heap_records[k];
        char row[1024];
        snprintf(row, sizeof row, "| `%c` | %s | %s | %s | %s |\n", r->tag, r->name, r->head + 2,
                 r->item[0] ? r->item + 2 : "", r->what);
        if (!strstr(doc, row)) {
            fprintf(stderr, "docs/heap.md lacks the row:\n%s", row);
            return 1;
        }
    }
    return 0;
}
