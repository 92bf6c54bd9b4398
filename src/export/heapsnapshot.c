/* heapsnapshot.c: a heap snapshot as Chrome DevTools' .heapsnapshot (the V8
 * heap snapshot JSON: a meta block naming the fields, then flat arrays of
 * nodes and edges, then the strings), for the Memory tab of a Chromium browser.
 *
 * Node 0 is the synthetic "(GC roots)" node, with one edge per strong root;
 * every object (arrays too) is a node of type "object" named by its
 * class, whose id is odd, 2 n + 1 for node n (DevTools keeps the nodes in a
 * Uint32Array: an address would not fit). References are "property" edges named
 * "ref" ("element" edges numbered in order, for arrays); a dependent handle's
 * key -> value is an "internal" edge named "dependent handle". */
#include "heapsnapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_format.h"

/* Arrays are "object" nodes too: DevTools groups "array" nodes as "(array)",
 * where a .NET array's type would be lost. */
enum { NT_OBJECT = 3, NT_SYNTHETIC = 9 };
enum { ET_ELEMENT = 1, ET_PROPERTY = 2, ET_INTERNAL = 3 };
#define NODE_FIELDS 7

typedef struct wbuf {
    FILE *out;
    char buf[1 << 16];
    size_t len;
    int err;
} wbuf;

static void wflush(wbuf *w) {
    if (w->len && fwrite(w->buf, 1, w->len, w->out) != w->len)
        w->err = 1;
    w->len = 0;
}

static void wstr(wbuf *w, const char *s) {
    size_t n = strlen(s);
    if (w->len + n > sizeof w->buf)
        wflush(w);
    if (n > sizeof w->buf) {
        if (fwrite(s, 1, n, w->out) != n)
            w->err = 1;
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void wnum(wbuf *w, uint64_t v, char sep) {
    if (w->len + 24 > sizeof w->buf)
        wflush(w);
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char *p = w->buf + w->len;
    while (n)
        *p++ = tmp[--n];
    if (sep)
        *p++ = sep;
    w->len = (size_t)(p - w->buf);
}

static void wjson(wbuf *w, const char *s) {
    char esc[8];
    wstr(w, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p, esc[2] = 0;
            wstr(w, esc);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            wstr(w, esc);
        } else {
            esc[0] = (char)*p, esc[1] = 0;
            wstr(w, esc);
        }
    }
    wstr(w, "\"");
}

static int is_array(const char *name) {
    size_t n = strlen(name);
    return n >= 2 && name[n - 1] == ']';
}

/* Strings: 0 "", 1 "(GC roots)", 2 "ref", 3 "dependent handle", then the
 * types, then the root kinds. */
#define S_ROOTS 1
#define S_REF 2
#define S_DEP 3
#define S_TYPES 4

/* Field names follow the root kinds in the strings: each type's fields in
 * turn, from fbase[t]. */
static uint64_t field_string(const dnp_heapgraph *g, uint32_t v, uint64_t e, const uint64_t *fbase) {
    return fbase[g->type[v]] + g->edge_field[e] - 1;
}

static void write_meta(wbuf *w, const dnp_heapgraph *g) {
    wstr(w, "{\"snapshot\":{\"meta\":{"
            "\"node_fields\":[\"type\",\"name\",\"id\",\"self_size\",\"edge_count\",\"trace_node_id\","
            "\"detachedness\"],"
            "\"node_types\":[[\"hidden\",\"array\",\"string\",\"object\",\"code\",\"closure\",\"regexp\","
            "\"number\",\"native\",\"synthetic\",\"concatenated string\",\"sliced string\",\"symbol\","
            "\"bigint\",\"object shape\"],\"string\",\"number\",\"number\",\"number\",\"number\",\"number\"],"
            "\"edge_fields\":[\"type\",\"name_or_index\",\"to_node\"],"
            "\"edge_types\":[[\"context\",\"element\",\"property\",\"internal\",\"hidden\",\"shortcut\","
            "\"weak\"],\"string_or_number\",\"node\"],"
            "\"trace_function_info_fields\":[\"function_id\",\"name\",\"script_name\",\"script_id\","
            "\"line\",\"column\"],"
            "\"trace_node_fields\":[\"id\",\"function_info_index\",\"count\",\"size\",\"children\"],"
            "\"sample_fields\":[\"timestamp_us\",\"last_assigned_id\"],"
            "\"location_fields\":[\"object_index\",\"script_id\",\"line\",\"column\"]},"
            "\"node_count\":");
    wnum(w, g->n, 0);
    wstr(w, ",\"edge_count\":");
    wnum(w, g->m, 0);
    wstr(w, ",\"trace_function_count\":0},\n");
}

static void write_nodes(wbuf *w, const dnp_heapgraph *g) {
    wstr(w, "\"nodes\":[");
    for (uint32_t v = 0; v < g->n; v++) {
        if (v)
            wstr(w, ",\n");
        if (!v) {
            wnum(w, NT_SYNTHETIC, ',');
            wnum(w, S_ROOTS, ',');
            wnum(w, 1, ',');
            wnum(w, 0, ',');
        } else {
            wnum(w, NT_OBJECT, ',');
            wnum(w, S_TYPES + g->type[v], ',');
            wnum(w, (uint64_t)v * 2 + 1, ',');
            wnum(w, g->size[v], ',');
        }
        wnum(w, g->off[v + 1] - g->off[v], ',');
        wnum(w, 0, ',');
        wnum(w, 0, 0);
    }
    wstr(w, "],\n");
}

/* The roots' edges are named after the root that holds them. */
static void write_edges(wbuf *w, const dnp_heapgraph *g, uint32_t s_kinds, const uint64_t *s_fields) {
    wstr(w, "\"edges\":[");
    uint32_t ri = 0;
    for (uint32_t v = 0; v < g->n; v++) {
        int arr = v && is_array(g->types[g->type[v]]);
        for (uint32_t e = g->off[v], k = 0; e < g->off[v + 1]; e++, k++) {
            uint32_t to = g->edges[e];
            if (v || e)
                wstr(w, ",\n");
            if (!v) {
                while (ri < g->nroots &&
                       (!g->roots[ri].node || (g->roots[ri].flags & DNP_ROOT_WEAK)))
                    ri++;
                unsigned kind = ri < g->nroots ? g->roots[ri].kind : 0;
                kind = kind <= DNP_ROOT_NONGC ? kind : 0;
                ri++;
                wnum(w, ET_PROPERTY, ',');
                wnum(w, s_kinds + kind, ',');
            } else if (dnp_heapgraph_is_dep(g, v, to)) {
                wnum(w, ET_INTERNAL, ',');
                wnum(w, S_DEP, ',');
            } else if (!arr && dnp_heapgraph_edge_field(g, v, e)) {
                wnum(w, ET_PROPERTY, ',');
                wnum(w, field_string(g, v, e, s_fields), ',');
            } else if (arr) {
                wnum(w, ET_ELEMENT, ',');
                wnum(w, k, ',');
            } else {
                wnum(w, ET_PROPERTY, ',');
                wnum(w, S_REF, ',');
            }
            wnum(w, (uint64_t)to * NODE_FIELDS, 0);
        }
    }
    wstr(w, "],\n");
}

static void write_strings(wbuf *w, const dnp_heapgraph *g) {
    wstr(w, "\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],\"locations\":[],"
            "\n\"strings\":[\"\",\"(GC roots)\",\"ref\",\"dependent handle\"");
    for (uint32_t t = 0; t < g->ntypes; t++) {
        wstr(w, ",\n");
        wjson(w, g->types[t]);
    }
    for (unsigned k = 0; k <= DNP_ROOT_NONGC; k++) {
        char name[32];
        snprintf(name, sizeof name, "%s root", dnp_heap_root_kind_name(k));
        wstr(w, ",\n");
        wjson(w, name);
    }
    for (uint32_t t = 0; t < g->ntypes; t++) {
        for (uint32_t k = 0; g->type_fields && g->type_fields[t] && k < g->type_nfields[t]; k++) {
            wstr(w, ",\n");
            wjson(w, g->type_fields[t][k] ? g->type_fields[t][k] : "");
        }
    }
    wstr(w, "]}\n");
}

int dnp_export_heapsnapshot(const dnp_heapgraph *g, FILE *out) {
    wbuf *w = malloc(sizeof *w);
    if (!w)
        return -1;
    w->out = out;
    w->len = 0;
    w->err = 0;
    uint32_t s_kinds = S_TYPES + g->ntypes;
    uint64_t *s_fields = calloc(g->ntypes + 1, sizeof *s_fields);
    if (!s_fields) {
        free(w);
        return -1;
    }
    uint64_t next = s_kinds + DNP_ROOT_NONGC + 1;
    for (uint32_t t = 0; t < g->ntypes; t++) {
        s_fields[t] = next;
        next += g->type_fields && g->type_fields[t] ? g->type_nfields[t] : 0;
    }
    write_meta(w, g);
    write_nodes(w, g);
    write_edges(w, g, s_kinds, s_fields);
    write_strings(w, g);
    free(s_fields);
    wflush(w);
    int rc = w->err ? -1 : 0;
    free(w);
    return rc;
}
