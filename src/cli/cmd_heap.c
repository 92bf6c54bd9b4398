/* cmd_heap.c: `dnprof heap report|paths|diff`: what a heap snapshot (.dnheap,
 * docs/heap.md) holds, what keeps it alive, and what grew between two. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "heap_format.h"
#include "heapgraph.h"
#include "heapsnapshot.h"

static void heap_help(void) {
    fputs("usage: dnprof heap [report] [--json] [--sort retained|bytes|count] [--top N] FILE\n"
          "       dnprof heap paths (--type NAME | --address ADDR) [--max N] [--json] FILE\n"
          "       dnprof heap diff [--json] [--top N] BEFORE AFTER\n"
          "\n"
          "Reads heap snapshots taken with 'dnprof snapshot PID' or 'dnprof run --heap-at exit'.\n"
          "\n"
          "  report   types by retained bytes (what would be freed without them: the dominator\n"
          "           tree of the heap graph), shallow bytes and count; totals: objects, bytes,\n"
          "           roots by kind, and objects no root reaches\n"
          "  paths    the shortest paths from a root to instances of a type (or to one object):\n"
          "           each step shows the root's kind and method, or the edge (a reference, or a\n"
          "           ConditionalWeakTable's dependent handle): why the object is alive\n"
          "  diff     growth by type from BEFORE to AFTER (count, bytes, retained)\n"
          "\n"
          "options:\n"
          "      --json           one JSON document instead of text\n"
          "      --sort KEY       report: retained (default), bytes or count\n"
          "  -n, --top N          report/diff: the first N types (default 30; 0: all)\n"
          "  -t, --type NAME      paths: instances of this type (exact name, as the report shows it)\n"
          "  -a, --address ADDR   paths: the object at (or containing) this hex address\n"
          "      --max N          paths: at most N paths, shortest first (default 5)\n"
          "  -h, --help           print this help\n"
          "\n"
          "examples:\n"
          "  dnprof snapshot 4242 -o app.dnheap && dnprof heap report app.dnheap\n"
          "  dnprof heap paths --type 'MyApp.Session' app.dnheap\n"
          "  dnprof heap diff before.dnheap after.dnheap\n",
          stdout);
}

typedef struct type_row {
    uint32_t t;
    uint64_t count, bytes, retained;
    int64_t dcount, dbytes, dretained; /* diff */
} type_row;

static int g_sort; /* 0 retained, 1 bytes, 2 count */

static int cmp_row(const void *a, const void *b) {
    const type_row *x = a, *y = b;
    uint64_t kx = g_sort == 1 ? x->bytes : g_sort == 2 ? x->count : x->retained;
    uint64_t ky = g_sort == 1 ? y->bytes : g_sort == 2 ? y->count : y->retained;
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The options of the heap commands; each command's table says which it takes. */
typedef struct heap_opts {
    int json;
    uint64_t top, max;
    const char *type, *address;
} heap_opts;

/* Parses argv with the command's longopts and short options, which must
 * leave nfiles files (else the usage error files_wanted): 0, 1 after --help
 * (printed), or minus the exit code after a usage error (said). */
static int parse_opts(int argc, char **argv, const struct option *longopts, const char *shortopts,
                      int nfiles, const char *files_wanted, heap_opts *o) {
    *o = (heap_opts){.top = 30, .max = 5};
    g_sort = 0;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 's':
            if (!strcmp(optarg, "retained")) g_sort = 0;
            else if (!strcmp(optarg, "bytes")) g_sort = 1;
            else if (!strcmp(optarg, "count")) g_sort = 2;
            else return -usage_error("heap", "--sort is retained, bytes or count, not '%s'", optarg);
            break;
        case 'n':
            if (cli_parse_u64(optarg, &o->top) != 0)
                return -usage_error("heap", "--top wants a number, not '%s'", optarg);
            break;
        case 't': o->type = optarg; break;
        case 'a': o->address = optarg; break;
        case 'm':
            if (cli_parse_u64(optarg, &o->max) != 0 || !o->max)
                return -usage_error("heap", "--max wants a number from 1, not '%s'", optarg);
            break;
        case 'h': heap_help(); return 1;
        default: return -cli_bad_option("heap", argv, c);
        }
    }
    if (optind != argc - nfiles)
        return -usage_error("heap", "%s", files_wanted);
    return 0;
}

static int load(const char *path, int flags, dnp_heapgraph *g) {
    char err[1024];
    if (dnp_heapgraph_load(path, flags, g, err, sizeof err) < 0)
        return error("%s", err);
    return 0;
}

/* Loads, computes dominators and the rows by type (sorted). */
static int rows_of(const char *path, dnp_heapgraph *g, type_row **rows_out) {
    if (load(path, 0, g) < 0)
        return -1;
    uint64_t *count, *bytes, *ret;
    if (dnp_heapgraph_dominators(g, 1) < 0 || dnp_heapgraph_by_type(g, &count, &bytes, &ret) < 0) {
        dnp_heapgraph_release(g);
        return error("%s: out of memory for the dominator tree", path);
    }
    type_row *rows = calloc(g->ntypes, sizeof *rows);
    if (!rows) {
        free(count), free(bytes), free(ret);
        dnp_heapgraph_release(g);
        return error("out of memory");
    }
    for (uint32_t t = 0; t < g->ntypes; t++)
        rows[t] = (type_row){t, count[t], bytes[t], ret[t], 0, 0, 0};
    free(count), free(bytes), free(ret);
    *rows_out = rows;
    return 0;
}

static void roots_by_kind(const dnp_heapgraph *g, uint64_t k[5], uint64_t *weak) {
    memset(k, 0, 5 * sizeof *k);
    *weak = 0;
    for (uint32_t i = 0; i < g->nroots; i++) {
        k[g->roots[i].kind <= DNP_ROOT_NONGC ? g->roots[i].kind : DNP_ROOT_OTHER]++;
        if (g->roots[i].flags & DNP_ROOT_WEAK)
            (*weak)++;
    }
}

/* The types with the most unreachable objects, after the totals' line. */
static void print_unreachable(const dnp_heapgraph *g) {
    uint64_t *cnt = calloc(g->ntypes, sizeof *cnt);
    if (!cnt)
        return;
    for (uint32_t v = 1; v < g->n; v++)
        if (g->idom[v] == DNP_HG_NONE)
            cnt[g->type[v]]++;
    for (int k = 0; k < 5; k++) {
        uint32_t best = 0;
        for (uint32_t t = 1; t < g->ntypes; t++)
            if (cnt[t] > cnt[best])
                best = t;
        if (!cnt[best])
            break;
        printf("%s %" PRIu64 " ", k ? "," : "", cnt[best]);
        cli_put_text(stdout, g->types[best], 0);
        cnt[best] = 0;
    }
    putchar('\n');
    free(cnt);
}

static void report_json(const char *path, const dnp_heapgraph *g, const type_row *rows,
                        uint32_t shown, const uint64_t k[5], uint64_t weak) {
    printf("{\"file\":");
    cli_put_json(stdout, path);
    printf(",\"pid\":%" PRIu64 ",\"objects\":%u,\"bytes\":%" PRIu64 ",\"references\":%" PRIu64
           ",\"unresolved_references\":%" PRIu64,
           g->pid, g->n - 1, g->bytes, g->m, g->unresolved);
    if (g->host_pid)
        printf(",\"host_pid\":%" PRIu64, g->host_pid);
    printf(",\"roots\":{\"total\":%u,\"stack\":%" PRIu64 ",\"handle\":%" PRIu64
           ",\"finalizer\":%" PRIu64 ",\"other\":%" PRIu64 ",\"non_gc_heap\":%" PRIu64
           ",\"weak\":%" PRIu64 "}",
           g->nroots, k[DNP_ROOT_STACK], k[DNP_ROOT_HANDLE], k[DNP_ROOT_FINALIZER],
           k[DNP_ROOT_OTHER], k[DNP_ROOT_NONGC], weak);
    printf(",\"dependent_handles\":%u", g->ndeps);
    printf(",\"unreachable\":{\"objects\":%u,\"bytes\":%" PRIu64 "}", g->unreachable,
           g->unreachable_bytes);
    printf(",\"gc_ms\":%.3f,\"pause_ms\":%.3f", g->gc_ns / 1e6, g->pause_ns / 1e6);
    printf(",\"types\":[");
    for (uint32_t i = 0, s = 0; i < g->ntypes && s < shown; i++) {
        if (!rows[i].count)
            continue;
        printf("%s{\"name\":", s++ ? "," : "");
        cli_put_json(stdout, g->types[rows[i].t]);
        printf(",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"retained\":%" PRIu64 "}",
               rows[i].count, rows[i].bytes, rows[i].retained);
    }
    printf("]}\n");
}

static void report_text(const char *path, const dnp_heapgraph *g, const type_row *rows,
                        uint32_t shown, const uint64_t k[5], uint64_t weak) {
    char a[32], b[32], c1[32], d[32];
    char host[48] = "";
    if (g->host_pid) /* a container's, taken from the host */
        snprintf(host, sizeof host, " (pid %" PRIu64 " on the host)", g->host_pid);
    printf("heap snapshot %s: pid %" PRIu64 "%s, %s objects, %s\n", cli_short_path(path), g->pid, host,
           cli_fmt_count(g->n - 1, a), cli_fmt_bytes(g->bytes, b));
    printf("roots: %s (stack %s, handle %s, finalizer %s, other %s; %s weak), %s dependent "
           "handles, %s objects of the non-GC heap\n",
           cli_fmt_count(g->nroots - k[DNP_ROOT_NONGC], c1), CLI_COUNT(k[DNP_ROOT_STACK]),
           CLI_COUNT(k[DNP_ROOT_HANDLE]), CLI_COUNT(k[DNP_ROOT_FINALIZER]), CLI_COUNT(k[DNP_ROOT_OTHER]),
           CLI_COUNT(weak), CLI_COUNT(g->ndeps), CLI_COUNT(k[DNP_ROOT_NONGC]));
    if (g->unreachable) {
        printf("unreachable: %s objects, %s (no strong root in the snapshot "
               "holds them):",
               cli_fmt_count(g->unreachable, a), cli_fmt_bytes(g->unreachable_bytes, b));
        print_unreachable(g);
    } else
        printf("unreachable: none\n");
    printf("gc pause: %.1f ms (walk %.1f ms)\n\n", g->pause_ns / 1e6, g->walk_ns / 1e6);
    printf("%14s %14s %12s  %s\n", "retained", "shallow", "count", "type");
    for (uint32_t i = 0, s = 0; i < g->ntypes && s < shown; i++) {
        if (!rows[i].count)
            continue;
        s++;
        printf("%14s %14s %12s  ", cli_fmt_bytes(rows[i].retained, a),
               cli_fmt_bytes(rows[i].bytes, b), cli_fmt_count(rows[i].count, d));
        cli_put_text(stdout, g->types[rows[i].t], 0);
        putchar('\n');
    }
    uint32_t nonempty = 0;
    for (uint32_t i = 0; i < g->ntypes; i++)
        nonempty += rows[i].count != 0;
    if (shown < nonempty)
        printf("(%s more types; --top 0 shows them all)\n", CLI_COUNT(nonempty - shown));
}

static int heap_report(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"sort", required_argument, NULL, 's'},
        {"top", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    heap_opts o;
    int prc = parse_opts(argc, argv, longopts, ":n:h", 1, "heap report wants one snapshot file", &o);
    if (prc)
        return prc < 0 ? -prc : 0;
    const char *path = argv[optind];
    dnp_heapgraph g;
    type_row *rows;
    if (rows_of(path, &g, &rows) < 0)
        return 1;
    qsort(rows, g.ntypes, sizeof *rows, cmp_row);
    uint64_t k[5], weak;
    roots_by_kind(&g, k, &weak);
    uint32_t shown = 0;
    for (uint32_t i = 0; i < g.ntypes; i++)
        if (rows[i].count && (!o.top || shown < o.top))
            shown++;
    if (o.json)
        report_json(path, &g, rows, shown, k, weak);
    else
        report_text(path, &g, rows, shown, k, weak);
    free(rows);
    dnp_heapgraph_release(&g);
    return 0;
}

/* ---- paths ---- */

static void put_obj(const dnp_heapgraph *g, uint32_t v, int json) {
    if (json) {
        printf("{\"address\":\"0x%" PRIx64 "\",\"type\":", g->addr[v]);
        cli_put_json(stdout, g->types[g->type[v]]);
        printf(",\"size\":%u", g->size[v]);
    } else {
        cli_put_text(stdout, g->types[g->type[v]], 0);
        printf(" @0x%" PRIx64 " (%u B)", g->addr[v], g->size[v]);
    }
}

static void root_text(const dnp_heapgraph *g, const dnp_heap_root *r, char *out, size_t cap) {
    if (!r) {
        snprintf(out, cap, "root");
        return;
    }
    const char *fn = r->kind == DNP_ROOT_STACK ? dnp_heapgraph_func(g, r->id) : NULL;
    snprintf(out, cap, "%s root%s%s%s%s%s%s", dnp_heap_root_kind_name(r->kind),
             r->flags & DNP_ROOT_PINNING ? ", pinned" : "", r->flags & DNP_ROOT_WEAK ? ", weak" : "",
             r->flags & DNP_ROOT_INTERIOR ? ", interior" : "",
             r->flags & DNP_ROOT_REFCOUNTED ? ", ref-counted" : "", fn ? " in " : "", fn ? fn : "");
}

/* The edge from -> to as a step: "dependent handle", the field's name, or
 * "reference" (kind), with the field's name in *field when known. */
static const char *edge_kind(const dnp_heapgraph *g, uint32_t from, uint32_t to, const char **field) {
    *field = NULL;
    if (dnp_heapgraph_is_dep(g, from, to))
        return "dependent handle";
    for (uint32_t e = g->off[from]; e < g->off[from + 1]; e++)
        if (g->edges[e] == to && (*field = dnp_heapgraph_edge_field(g, from, e)) != NULL)
            return "field";
    return "reference";
}

static int print_path(const dnp_heapgraph *g, const uint32_t *parent, uint32_t v, int json,
                      int first) {
    /* The chain, read backwards into an array (no recursion). */
    uint32_t len = 0;
    for (uint32_t x = v; x; x = parent[x])
        len++;
    uint32_t *chain = malloc((size_t)len * sizeof *chain);
    if (!chain)
        return -1;
    uint32_t i = len;
    for (uint32_t x = v; x; x = parent[x])
        chain[--i] = x;
    char rt[512];
    const dnp_heap_root *r = dnp_heapgraph_root_of(g, chain[0]);
    const char *st = !r || (r->flags & DNP_ROOT_WEAK) ? dnp_heapgraph_static_of(g, chain[0]) : NULL;
    if (st) /* reached through a static (heapgraph.h): its name, not the runtime's array */
        snprintf(rt, sizeof rt, "static %s", st);
    else
        root_text(g, r, rt, sizeof rt);
    if (json) {
        printf("%s{\"length\":%u,\"root\":", first ? "" : ",", len);
        cli_put_json(stdout, rt);
        printf(",\"steps\":[");
        for (uint32_t k = 0; k < len; k++) {
            printf("%s", k ? "," : "");
            put_obj(g, chain[k], 1);
            const char *field = NULL;
            const char *via = k == 0 ? "root" : edge_kind(g, chain[k - 1], chain[k], &field);
            printf(",\"via\":\"%s\"", via);
            if (field) {
                printf(",\"field\":");
                cli_put_json(stdout, field);
            }
            printf("}");
        }
        printf("]}");
    } else {
        printf("path of %u step%s:\n  [%s]\n", len, CLI_PLURAL(len), rt);
        for (uint32_t k = 0; k < len; k++) {
            if (k) {
                const char *field = NULL;
                const char *via = edge_kind(g, chain[k - 1], chain[k], &field);
                printf("  %*s-> ", (int)(2 * k), "");
                if (field) {
                    putchar('.');
                    cli_put_text(stdout, field, 0);
                    putchar('\n');
                } else {
                    printf("%s\n", !strcmp(via, "dependent handle")
                                       ? "(dependent handle: ConditionalWeakTable key -> value)"
                                       : "(reference)");
                }
            }
            printf("  %*s", (int)(2 * k), "");
            put_obj(g, chain[k], 0);
            putchar('\n');
        }
        putchar('\n');
    }
    free(chain);
    return 0;
}

static int heap_paths(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},         {"type", required_argument, NULL, 't'},
        {"address", required_argument, NULL, 'a'}, {"max", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    heap_opts o;
    int prc = parse_opts(argc, argv, longopts, ":t:a:h", 1, "heap paths wants one snapshot file", &o);
    if (prc)
        return prc < 0 ? -prc : 0;
    int json = o.json;
    const char *type = o.type, *address = o.address;
    uint64_t max = o.max;
    if (!type == !address)
        return usage_error("heap", "heap paths wants --type NAME or --address ADDR");
    uint64_t want = 0;
    if (address) {
        char *end;
        want = strtoull(address, &end, 16);
        if (!*address || *end)
            return usage_error("heap", "--address wants a hex address such as 0x7f12345678, not '%s'",
                               address);
    }
    const char *path = argv[optind];
    dnp_heapgraph g;
    if (load(path, DNP_HG_ADDR | DNP_HG_FIELDS, &g) < 0)
        return 1;
    int rc = 0;
    uint32_t tnum = DNP_HG_NONE, target = 0;
    if (type) {
        for (uint32_t t = 0; t < g.ntypes; t++)
            if (!strcmp(g.types[t], type))
                tnum = t;
        if (tnum == DNP_HG_NONE) {
            error("%s: no objects of type '%s' (dnprof heap report lists the types)", path, type);
            dnp_heapgraph_release(&g);
            return 1;
        }
    } else if (!(target = dnp_heapgraph_find(&g, want))) {
        error("%s: no object at 0x%" PRIx64, path, want);
        dnp_heapgraph_release(&g);
        return 1;
    }
    uint32_t *parent, *order, norder;
    if (dnp_heapgraph_bfs(&g, &parent, &order, &norder) < 0) {
        dnp_heapgraph_release(&g);
        return error("out of memory");
    }
    uint64_t instances = 0, reached = 0;
    for (uint32_t v = 1; v < g.n; v++)
        if (type ? g.type[v] == tnum : v == target) {
            instances++;
            reached += parent[v] != DNP_HG_NONE;
        }
    if (json) {
        printf("{\"file\":");
        cli_put_json(stdout, path);
        printf(",\"instances\":%" PRIu64 ",\"reachable\":%" PRIu64 ",\"paths\":[", instances, reached);
    } else {
        printf("%s instance%s of ", CLI_COUNT(instances), CLI_PLURAL(instances));
        if (type)
            cli_put_text(stdout, type, 0);
        else
            printf("0x%" PRIx64, g.addr[target]);
        printf(", %s reachable from a root; the shortest paths:\n\n", CLI_COUNT(reached));
    }
    uint64_t shown = 0;
    for (uint32_t i = 1; i < norder && shown < max; i++) {
        uint32_t v = order[i];
        if (type ? g.type[v] != tnum : v != target)
            continue;
        if (print_path(&g, parent, v, json, shown == 0) < 0) {
            rc = error("out of memory");
            break;
        }
        shown++;
    }
    if (json)
        printf("]}\n");
    else if (!shown)
        printf("no path: no strong root reaches %s (only weak handles, or garbage the GC "
               "had not yet freed)\n",
               instances == 1 ? "it" : "them");
    free(parent);
    free(order);
    dnp_heapgraph_release(&g);
    return rc;
}

/* ---- diff ---- */

static int cmp_growth(const void *a, const void *b) {
    const type_row *x = a, *y = b;
    int64_t kx = x->dretained, ky = y->dretained;
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->dbytes != y->dbytes)
        return x->dbytes > y->dbytes ? -1 : 1;
    return 0;
}

typedef struct named_row {
    char *name;
    uint64_t count, bytes, retained;
} named_row;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named_row *)a)->name, ((const named_row *)b)->name);
}

/* The rows of one snapshot by name (sorted by name), the graph released. */
static int named_rows(const char *path, named_row **out, uint32_t *nout, uint64_t tot[2]) {
    dnp_heapgraph g;
    type_row *rows;
    if (rows_of(path, &g, &rows) < 0)
        return -1;
    named_row *nr = calloc(g.ntypes + 1, sizeof *nr);
    uint32_t k = 0;
    tot[0] = g.n - 1;
    tot[1] = g.bytes;
    for (uint32_t t = 0; nr && t < g.ntypes; t++) {
        if (!rows[t].count)
            continue;
        nr[k] = (named_row){g.types[t], rows[t].count, rows[t].bytes, rows[t].retained};
        g.types[t] = NULL;
        k++;
    }
    free(rows);
    dnp_heapgraph_release(&g);
    if (!nr)
        return error("out of memory");
    qsort(nr, k, sizeof *nr, cmp_named);
    *out = nr;
    *nout = k;
    return 0;
}

/* A change, its sign against its number, right-aligned in width: "+62 KiB", "-1,000". */
static void put_signed(int64_t v, int bytes, int width) {
    char b[32], t[40];
    uint64_t m = (uint64_t)(v < 0 ? -v : v);
    snprintf(t, sizeof t, "%s%s", v < 0 ? "-" : v ? "+" : "", bytes ? cli_fmt_bytes(m, b) : cli_fmt_count(m, b));
    printf("%*s", width, t);
}

static void free_named(named_row *r, uint32_t n) {
    for (uint32_t k = 0; r && k < n; k++)
        free(r[k].name);
    free(r);
}

/* The rows of both, merged by name (both sorted by name): counts of after,
 * changes from before; names[rows[k].t] each one's name. The number of rows,
 * or -1 (memory). */
static int64_t merge_rows(const named_row *a, uint32_t na, const named_row *b, uint32_t nb,
                          type_row **rows_out, const char ***names_out) {
    type_row *rows = calloc((size_t)na + nb + 1, sizeof *rows);
    const char **names = calloc((size_t)na + nb + 1, sizeof *names);
    if (!rows || !names) {
        free(rows);
        free(names);
        return -1;
    }
    uint32_t nr = 0, i = 0, j = 0;
    while (i < na || j < nb) {
        int cmp = i >= na ? 1 : j >= nb ? -1 : strcmp(a[i].name, b[j].name);
        type_row *r = &rows[nr];
        names[nr] = cmp <= 0 ? a[i].name : b[j].name;
        r->t = nr;
        if (cmp <= 0) {
            r->dcount -= (int64_t)a[i].count;
            r->dbytes -= (int64_t)a[i].bytes;
            r->dretained -= (int64_t)a[i].retained;
            i++;
        }
        if (cmp >= 0) {
            r->count = b[j].count;
            r->bytes = b[j].bytes;
            r->retained = b[j].retained;
            r->dcount += (int64_t)b[j].count;
            r->dbytes += (int64_t)b[j].bytes;
            r->dretained += (int64_t)b[j].retained;
            j++;
        }
        nr++;
    }
    *rows_out = rows;
    *names_out = names;
    return nr;
}

static int changed(const type_row *r) {
    return r->dcount || r->dbytes || r->dretained;
}

static void diff_json(char **files, const uint64_t ta[2], const uint64_t tb[2], const type_row *rows,
                      uint32_t nr, const char **names, uint32_t shown) {
    printf("{\"before\":");
    cli_put_json(stdout, files[0]);
    printf(",\"after\":");
    cli_put_json(stdout, files[1]);
    printf(",\"objects\":%" PRId64 ",\"bytes\":%" PRId64 ",\"types\":[",
           (int64_t)(tb[0] - ta[0]), (int64_t)(tb[1] - ta[1]));
    for (uint32_t k = 0, s = 0; k < nr && s < shown; k++) {
        if (!changed(&rows[k]))
            continue;
        printf("%s{\"name\":", s++ ? "," : "");
        cli_put_json(stdout, names[rows[k].t]);
        printf(",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"retained\":%" PRIu64
               ",\"count_change\":%" PRId64 ",\"bytes_change\":%" PRId64
               ",\"retained_change\":%" PRId64 "}",
               rows[k].count, rows[k].bytes, rows[k].retained, rows[k].dcount, rows[k].dbytes,
               rows[k].dretained);
    }
    printf("]}\n");
}

static void diff_text(char **files, const uint64_t ta[2], const uint64_t tb[2], const type_row *rows,
                      uint32_t nr, const char **names, uint32_t shown) {
    char x[32], y[32], xb[32], yb[32]; /* a buffer each: one printf reads them all */
    printf("from %s to %s: objects %s -> %s, bytes %s -> %s\n\n", cli_short_path(files[0]),
           cli_short_path(files[1]), cli_fmt_count(ta[0], x), cli_fmt_count(tb[0], y),
           cli_fmt_bytes(ta[1], xb), cli_fmt_bytes(tb[1], yb));
    printf("%14s %14s %12s  %s\n", "retained +/-", "shallow +/-", "count +/-", "type");
    for (uint32_t k = 0, s = 0; k < nr && s < shown; k++) {
        if (!changed(&rows[k]))
            continue;
        s++;
        put_signed(rows[k].dretained, 1, 14);
        putchar(' ');
        put_signed(rows[k].dbytes, 1, 14);
        putchar(' ');
        put_signed(rows[k].dcount, 0, 12);
        fputs("  ", stdout);
        cli_put_text(stdout, names[rows[k].t], 0);
        putchar('\n');
    }
    uint32_t nchanged = 0;
    for (uint32_t k = 0; k < nr; k++)
        nchanged += changed(&rows[k]);
    if (!shown)
        printf("no type changed\n");
    else if (shown < nchanged) /* as heap report says it */
        printf("(%s more types changed; --top 0 shows them all)\n", CLI_COUNT(nchanged - shown));
}

static int heap_diff(int argc, char **argv) {
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"top", required_argument, NULL, 'n'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    heap_opts o;
    int prc = parse_opts(argc, argv, longopts, ":n:h", 2,
                         "heap diff wants two snapshot files: BEFORE AFTER", &o);
    if (prc)
        return prc < 0 ? -prc : 0;
    char **files = argv + optind;
    named_row *a = NULL, *b = NULL;
    uint32_t na = 0, nb = 0;
    uint64_t ta[2], tb[2];
    type_row *rows = NULL;
    const char **names = NULL;
    int rc = 1;
    if (named_rows(files[0], &a, &na, ta) < 0 || named_rows(files[1], &b, &nb, tb) < 0)
        goto out;
    int64_t nr = merge_rows(a, na, b, nb, &rows, &names);
    if (nr < 0) {
        rc = error("out of memory");
        goto out;
    }
    /* The order of the names, kept in rows[].t before sorting. */
    qsort(rows, (size_t)nr, sizeof *rows, cmp_growth);
    uint32_t shown = 0;
    for (uint32_t k = 0; k < nr; k++)
        if (changed(&rows[k]) && (!o.top || shown < o.top))
            shown++;
    if (o.json)
        diff_json(files, ta, tb, rows, (uint32_t)nr, names, shown);
    else
        diff_text(files, ta, tb, rows, (uint32_t)nr, names, shown);
    rc = 0;
out:
    free_named(a, na);
    free_named(b, nb);
    free(rows);
    free(names);
    return rc;
}

int heap_convert_heapsnapshot(const char *path, const char *output) {
    char def[4096];
    if (!output) {
        size_t n = strlen(path);
        if (n > 7 && !strcmp(path + n - 7, ".dnheap"))
            n -= 7;
        if (n + 14 > sizeof def)
            return error("cannot name the output after '%s': too long (use -o)", path), 1;
        snprintf(def, sizeof def, "%.*s.heapsnapshot", (int)n, path);
        output = def;
    }
    int to_stdout = !strcmp(output, "-");
    if (!to_stdout && !strcmp(output, path))
        return error("'%s' is the snapshot itself: give another -o", output), 1;
    dnp_heapgraph g;
    if (load(path, DNP_HG_ADDR | DNP_HG_FIELDS, &g) < 0)
        return 1;
    FILE *out = to_stdout ? stdout : cli_create_output(output);
    if (!out) {
        error("cannot create '%s': %s", output, strerror(errno));
        dnp_heapgraph_release(&g);
        return 1;
    }
    int rc = 0;
    if (dnp_export_heapsnapshot(&g, out) < 0 || (!to_stdout && fclose(out) != 0)) {
        if (!(to_stdout && errno == EPIPE)) /* the reader left (| head): a quiet end, as convert's */
            error("cannot write '%s': %s", to_stdout ? "stdout" : output, strerror(errno ? errno : EIO));
        rc = 1;
        if (!to_stdout)
            unlink(output);
    } else if (!to_stdout) {
        fprintf(stderr, "dnprof: wrote %s: open it in Chrome DevTools (Memory tab, Load)\n",
                cli_short_path(output));
    }
    dnp_heapgraph_release(&g);
    return rc;
}

int cmd_heap(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        heap_help();
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "report"))
        return heap_report(argc - 1, argv + 1);
    if (!strcmp(argv[1], "paths"))
        return heap_paths(argc - 1, argv + 1);
    if (!strcmp(argv[1], "diff"))
        return heap_diff(argc - 1, argv + 1);
    if (argv[1][0] == '-' || access(argv[1], F_OK) == 0)
        return heap_report(argc, argv); /* 'dnprof heap FILE' is the report, as 'dnprof report' is a trace's */
    return usage_error("heap", "'%s' is neither a heap command (report, paths, diff) nor a snapshot file", argv[1]);
}
