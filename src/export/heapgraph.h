/* heapgraph.h: a heap snapshot (.dnheap, heap_format.h) loaded as a graph
 * (heapload.c), and what the heap commands compute on it (heapgraph.c):
 * dominators, retained sizes, shortest paths from the roots.
 *
 * Node 0 is the roots' node: its edges go to every object a strong root (not a
 * weak handle) holds. Objects are nodes 1..n-1, in the order of the heap walk.
 * Edges are CSR (off/edges); a dependent handle's key has its value among its
 * edges (dnp_heapgraph_is_dep tells them apart). Every algorithm here is
 * iterative: a 10-million-long chain needs no deeper stack than a short one. */
#ifndef DNP_HEAPGRAPH_H
#define DNP_HEAPGRAPH_H

#include <stddef.h>
#include <stdint.h>

#define DNP_HG_NONE UINT32_MAX

typedef struct dnp_heap_root {
    uint32_t node;  /* 0 when the root's object is not in the snapshot */
    uint8_t kind;   /* DNP_ROOT_* */
    uint8_t flags;  /* DNP_ROOT_PINNING ... */
    uint64_t id;    /* a stack root's FunctionID, a handle's GCHandleID */
} dnp_heap_root;

/* An object a static field holds (a STATIC record): a root for the paths (it
 * names the field), not an edge of the roots' node (the dominators stay the
 * runtime's: the statics' pinned arrays, held by handles, hold them). */
typedef struct dnp_heap_static {
    uint32_t node;
    uint32_t name; /* in static_names */
} dnp_heap_static;

typedef struct dnp_heapgraph {
    uint64_t pid, start_real_ns;
    uint64_t host_pid; /* the pid on the host when taken from there into a container (version 4), else 0 */
    uint64_t file_bytes;
    /* what the agent's END record said */
    uint64_t gc_ns, pause_ns, walk_ns;
    uint32_t n;          /* nodes: objects + 1 */
    uint64_t m;          /* edges */
    uint64_t *addr;      /* [n], NULL when loaded without addresses */
    uint32_t *type;      /* [n] type number (classes of the same name are one type) */
    uint32_t *size;      /* [n] shallow bytes (saturated at 4 GiB) */
    uint32_t *off;       /* [n + 1]; a snapshot holds fewer than 4 G references */
    uint32_t *edges;     /* [m] */
    uint8_t *edge_field; /* [m] the field of each edge (1-based in its type's fields, 0
                            unknown), or NULL when loaded without DNP_HG_FIELDS */
    uint64_t unresolved; /* references to objects not in the snapshot (dropped) */
    uint64_t bytes;      /* total shallow bytes */
    dnp_heap_root *roots;
    uint32_t nroots;
    uint32_t *dep_key, *dep_val; /* dependent handles, sorted by key */
    uint32_t ndeps;
    char **types;        /* [ntypes] names */
    uint32_t ntypes;
    char ***type_fields; /* [ntypes] the names of the fields that may hold a reference */
    uint8_t *type_nfields;
    uint64_t *func_ids;  /* stack roots' methods */
    char **func_names;
    uint32_t nfuncs;
    dnp_heap_static *statics; /* by node */
    uint32_t nstatics;
    char **static_names;      /* "Type.Field" */
    uint32_t nstatic_names;
    /* dnp_heapgraph_dominators */
    uint32_t *idom;      /* [n], DNP_HG_NONE when unreachable */
    uint64_t *retained;  /* [n] */
    uint32_t unreachable;
    uint64_t unreachable_bytes;
} dnp_heapgraph;

#define DNP_HG_ADDR 1   /* keep the objects' addresses (paths, exports) */
#define DNP_HG_FIELDS 2 /* and the field of each reference */

/* Loads path, with what flags ask for (DNP_HG_*).
 * 0, or -1 with one line in err naming the file and what is wrong with it
 * (truncated, corrupt, incomplete, not a snapshot). */
int dnp_heapgraph_load(const char *path, int flags, dnp_heapgraph *g, char *err, size_t errlen);

/* The name of the field the edge e (from node from) is in, or NULL. */
const char *dnp_heapgraph_edge_field(const dnp_heapgraph *g, uint32_t from, uint64_t e);

void dnp_heapgraph_release(dnp_heapgraph *g);

/* Immediate dominators (Cooper, Harvey and Kennedy's iterative algorithm over a
 * reverse postorder from an iterative DFS) and retained sizes. free_graph: the
 * edges are released once the dominators are known, making room for the rest.
 * 0 or -1 (memory). */
int dnp_heapgraph_dominators(dnp_heapgraph *g, int free_graph);

/* Per type: count, shallow bytes, and retained bytes (the bytes dominated by
 * the type's instances, an instance under another of its type counted once).
 * Needs dnp_heapgraph_dominators. Arrays of g->ntypes, to free(). */
int dnp_heapgraph_by_type(dnp_heapgraph *g, uint64_t **count, uint64_t **bytes, uint64_t **retained);

/* Breadth-first from the roots' node, then the objects static fields hold:
 * parent[v] (DNP_HG_NONE: unreachable, 0: held by a root or a static). *order: the nodes in the order reached (for the
 * shortest first), *norder their number. Arrays to free(). */
int dnp_heapgraph_bfs(const dnp_heapgraph *g, uint32_t **parent, uint32_t **order, uint32_t *norder);

/* Whether the edge from to is a dependent handle's (key -> value). */
int dnp_heapgraph_is_dep(const dnp_heapgraph *g, uint32_t from, uint32_t to);

/* The node whose object holds addr (its start or inside it), or 0. Needs addr. */
uint32_t dnp_heapgraph_find(const dnp_heapgraph *g, uint64_t addr);

/* The strongest root that holds node (non-weak first), or NULL. */
const dnp_heap_root *dnp_heapgraph_root_of(const dnp_heapgraph *g, uint32_t node);

/* The name ("Type.Field") of a static field that holds node, or NULL. */
const char *dnp_heapgraph_static_of(const dnp_heapgraph *g, uint32_t node);

/* A stack root's method name, or NULL. */
const char *dnp_heapgraph_func(const dnp_heapgraph *g, uint64_t id);

#endif
