/* fuzz_heap.c: the heap snapshot reader (src/export/heapload.c) and what is
 * computed on the graph: dominators and retained sizes, by type, the
 * breadth-first paths, finding an object by address; then the commands: heap
 * report (text, --json), heap paths (by a type the snapshot has, by an
 * address), heap diff of the snapshot with itself, and the DevTools export.
 * Seeds: tests/fuzz/corpus/heap; dictionary: tests/fuzz/heap.dict. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz_common.h"
#include "heap_format.h"
#include "heapgraph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_init();
    return 0;
}

static char type_name[512], address[32];

/* The graph API; leaves a type name and an address for the commands. */
static void graph_api(int flags) {
    char err[512];
    dnp_heapgraph g;
    type_name[0] = address[0] = 0;
    if (dnp_heapgraph_load(fz.path, flags, &g, err, sizeof err) < 0)
        return;
    if (g.ntypes && g.types[g.ntypes - 1])
        snprintf(type_name, sizeof type_name, "%s", g.types[g.ntypes - 1]);
    uint32_t *parent = NULL, *order = NULL, norder = 0;
    if (dnp_heapgraph_bfs(&g, &parent, &order, &norder) == 0) {
        for (uint32_t i = 0; i < norder; i++) {
            uint32_t v = order[i];
            (void)dnp_heapgraph_root_of(&g, v);
            (void)dnp_heapgraph_static_of(&g, v);
            if (parent[v] != DNP_HG_NONE && parent[v] != 0 && g.edge_field) {
                for (uint64_t e = g.off[parent[v]]; e < g.off[parent[v] + 1]; e++)
                    if (g.edges[e] == v)
                        (void)dnp_heapgraph_edge_field(&g, parent[v], e);
                (void)dnp_heapgraph_is_dep(&g, parent[v], v);
            }
        }
    }
    if (g.addr && g.n > 1) {
        (void)dnp_heapgraph_find(&g, g.addr[g.n - 1] + 1);
        snprintf(address, sizeof address, "%" PRIx64, g.addr[1]);
    }
    for (uint32_t i = 0; i < g.nroots; i++)
        (void)dnp_heapgraph_func(&g, g.roots[i].id);
    free(parent);
    free(order);
    uint64_t *count = NULL, *bytes = NULL, *retained = NULL;
    if (dnp_heapgraph_dominators(&g, !(flags & DNP_HG_ADDR)) == 0)
        dnp_heapgraph_by_type(&g, &count, &bytes, &retained);
    free(count);
    free(bytes);
    free(retained);
    dnp_heapgraph_release(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *fixed = fz_fix_crcs(data, size, DNP_HEAP_CHUNK_HEADER);
    fz_set_file(fixed, size);
    free(fixed);
    fz_quiet(1);
    graph_api(0);
    graph_api(DNP_HG_ADDR | DNP_HG_FIELDS);
    char *P = fz.path;
    char *report[] = {"heap", "report", P, NULL};
    char *report_json[] = {"heap", "report", "--json", "--sort", "bytes", "-n", "0", P, NULL};
    char *diff[] = {"heap", "diff", "--json", P, P, NULL};
    fz_cmd(cmd_heap, report);
    fz_cmd(cmd_heap, report_json);
    fz_cmd(cmd_heap, diff);
    if (type_name[0]) {
        char *paths[] = {"heap", "paths", "--type", type_name, "--json", P, NULL};
        fz_cmd(cmd_heap, paths);
    }
    if (address[0]) {
        char *paths[] = {"heap", "paths", "--address", address, P, NULL};
        fz_cmd(cmd_heap, paths);
    }
    heap_convert_heapsnapshot(P, "-");
    fflush(stdout);
    fz_quiet(0);
    return 0;
}
