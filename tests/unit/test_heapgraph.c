/* test_heapgraph.c: the heap graph's algorithms (src/export/heapgraph.c) on
 * graphs built by hand: dominators against a brute-force definition on random
 * graphs, retained sizes by type, and a 10-million-long chain, which any
 * recursive algorithm would overflow the stack on. */
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
    ASSERT(g.off && g.edges && g.size && g.type);
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

/* ---- the reader, on files written here ---- */

#include <stdio.h>

#include "heap_format.h"
#include "trace_format.h"

static void put_chunk(FILE *f, const uint8_t *p, size_t len) {
    uint32_t h[3] = {DNP_HEAP_CHUNK_MAGIC, (uint32_t)len, dnp_crc32(p, len)};
    fwrite(h, sizeof h, 1, f);
    fwrite(p, 1, len, f);
}

/* A holder whose 5000 references run over into the last chunk, which thus
 * starts with a MORE record: the reader must take it. References as the
 * format version writes them: version 2 each from the one before in its
 * record (the first from the holder), version 1 each from the holder. */
static int refs_across_chunks(uint32_t version) {
    char path[] = "/tmp/dnprof-unit-heap-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    FILE *f = fdopen(fd, "wb");
    ASSERT(f);
    uint8_t hdr[DNP_HEAP_HEADER_SIZE] = {0};
    memcpy(hdr, DNP_HEAP_MAGIC, 8);
    uint32_t v = version, hs = DNP_HEAP_HEADER_SIZE;
    memcpy(hdr + 8, &v, 4);
    memcpy(hdr + 12, &hs, 4);
    fwrite(hdr, sizeof hdr, 1, f);
    static uint8_t buf[1 << 20];
    uint8_t *p = buf;
    const uint32_t n = 5000;
    const uint64_t base = 0x10000, holder = base + 32ull * n;
    *p++ = DNP_HEAP_CLASS, p = dnp_heap_put(p, 1), p = dnp_heap_put(p, 0x1111);
    *p++ = DNP_HEAP_CLASS, p = dnp_heap_put(p, 2), p = dnp_heap_put(p, 0x2222);
    *p++ = DNP_HEAP_ROOTS, p = dnp_heap_put(p, 1), p = dnp_heap_put(p, DNP_ROOT_HANDLE);
    p = dnp_heap_put_zz(p, (int64_t)holder), p = dnp_heap_put(p, 7);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        *p++ = DNP_HEAP_OBJECT;
        p = dnp_heap_put_zz(p, (int64_t)(base + 32ull * i - prev));
        prev = base + 32ull * i;
        p = dnp_heap_put(p, 1), p = dnp_heap_put(p, 32), p = dnp_heap_put(p, 0), p = dnp_heap_put(p, 0);
    }
    *p++ = DNP_HEAP_OBJECT;
    p = dnp_heap_put_zz(p, (int64_t)(holder - prev));
    p = dnp_heap_put(p, 2), p = dnp_heap_put(p, 24 + 8 * n), p = dnp_heap_put(p, n);
    p = dnp_heap_put(p, DNP_HEAP_REFS_PER_RECORD);
    uint64_t from = holder;
    for (uint32_t i = 0; i < DNP_HEAP_REFS_PER_RECORD; i++) {
        p = dnp_heap_put_zz(p, (int64_t)(base + 32ull * i - from));
        if (version >= 2)
            from = base + 32ull * i;
    }
    put_chunk(f, buf, (size_t)(p - buf));
    p = buf;
    *p++ = DNP_HEAP_MORE, p = dnp_heap_put(p, n - DNP_HEAP_REFS_PER_RECORD);
    from = holder;
    for (uint32_t i = DNP_HEAP_REFS_PER_RECORD; i < n; i++) {
        p = dnp_heap_put_zz(p, (int64_t)(base + 32ull * i - from));
        if (version >= 2)
            from = base + 32ull * i;
    }
    const char *names[] = {NULL, "Item", "Item[]"};
    for (int k = 1; k <= 2; k++) {
        *p++ = DNP_HEAP_NAME, p = dnp_heap_put(p, (uint64_t)k), p = dnp_heap_put(p, strlen(names[k]));
        memcpy(p, names[k], strlen(names[k]));
        p += strlen(names[k]);
    }
    *p++ = DNP_HEAP_END;
    uint64_t end[] = {DNP_HEAP_COMPLETE, n + 1, n, 1, 0, 32ull * n + 24 + 8 * n, 1, 2, 1, 0};
    for (size_t i = 0; i < sizeof end / sizeof end[0]; i++)
        p = dnp_heap_put(p, end[i]);
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
        ASSERT(strstr(err, path) && (strstr(err, "truncated") || strstr(err, "not a dnprof")));
    }
    unlink(path);
    return 0;
}

TEST(heap_reader_refs_across_chunks) {
    return refs_across_chunks(DNP_HEAP_VERSION);
}

/* Snapshots of format version 1 (dnprof before version 2) still read. */
TEST(heap_reader_version1) {
    return refs_across_chunks(1);
}
