/* calltree.h: the call tree of a trace recorded with `dnprof run --calls`.
 *
 * One tree per OS thread, and all threads merged into one. A node is a call path
 * (the functions from the thread's first hooked frame down to it) with its calls,
 * total (inclusive) and self (exclusive) time. The trees come from the agent's
 * CallNode events (the last one of a node counts: the agent re-emits the totals
 * so far), or, when a trace holds only the enter/leave timeline (--timeline,
 * --args without CallNodes), are rebuilt from MethodEnter/Leave events.
 *
 * Memory is bounded by the size of the trees (distinct call paths), not by the
 * number of events: the builder takes events one at a time, from a loaded trace
 * (time order) or from a stream (file order: each thread's events in order,
 * which is all it needs; CallNodes count by their largest totals, so their order
 * does not matter). Built from a stream, the timeline exports read the file
 * again (dnp_ct_timeline_walk) instead of holding it. */
#ifndef DNP_CALLTREE_H
#define DNP_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

typedef struct dnp_ct_node {
    uint64_t func;   /* FunctionID; 0 for the root */
    uint64_t name;   /* string number of its name, 0 when unknown */
    uint32_t parent; /* index; the root (0) is its own parent */
    uint32_t first_child, next_sibling; /* indexes, 0 = none; children by total, largest first */
    uint32_t depth;  /* the root is 0 */
    uint64_t calls, tailcalls;
    uint64_t total_ns, self_ns;
} dnp_ct_node;

typedef struct dnp_ct_tree {
    uint32_t thread;  /* dnprof's thread number (print's first column), 0 if unknown or merged */
    uint64_t os_tid;  /* 0 for the merged tree */
    const char *name; /* the thread's name, NULL if none */
    dnp_ct_node *nodes; /* nodes[0] is the root; its total is the sum of its children's */
    uint32_t nnodes, cap;
} dnp_ct_tree;

/* What one function adds up to over a tree. total_ns counts a recursive call
 * once (only its outermost frame on each path). */
typedef struct dnp_ct_func {
    uint64_t func, name;
    uint64_t calls, tailcalls, self_ns, total_ns;
    uint64_t outer_calls; /* the calls of its outermost nodes (recursion counted once, as
                           * total_ns): with samples, the samples it is in */
} dnp_ct_func;

/* A function of the timeline: its FunctionID and name string. */
typedef struct dnp_ct_frame {
    uint64_t func, name;
} dnp_ct_frame;

typedef struct dnp_calltree {
    const dnp_trace *t;        /* for names; not owned (a stream's trace: no events) */
    dnp_trace_stream *stream;  /* built from this stream (not owned), or NULL */
    dnp_ct_tree *threads;      /* by OS thread, in order of the thread number */
    size_t nthreads;
    dnp_ct_tree all;           /* every thread merged */

    int has_config;            /* a CallsConfig event was seen: */
    uint64_t mode;             /* DNP_CALLS_* (settings.h): timed, args, timeline, counts, sampled */
    int all_code;              /* --all-code: inlined and ReadyToRun methods are seen */
    const char *include, *exclude;

    uint64_t call_nodes;       /* CallNode events read */
    uint64_t timeline_events;  /* MethodEnter/Leave/Tailcall/Unwind events */
    int from_timeline;         /* the trees were rebuilt from the timeline */
    uint64_t orphans;          /* CallNodes whose parent never came: put under the root */
    uint64_t unmatched;        /* leaves that closed no open frame */
    uint64_t open_at_end;      /* frames still open at the end, closed at the thread's last event */

    /* The hooks' own cost, measured by the agent per thread (CallsOverhead) and
     * taken out of the trees built from CallNodes: per call, the inner part from
     * the callee, both parts from every caller above it. */
    size_t hook_threads;       /* threads whose trees were corrected */
    uint64_t hook_calls;       /* calls in them */
    double hook_inner_ns, hook_outer_ns; /* the hooks' time taken out, inside and outside the calls */
    uint64_t cpu_wait_ns;      /* time the threads waited for a CPU, left out by the agent */
    /* --calls' times from samples (CallsSampling, CallsSamples): the clock (1
     * CPU time, 2 elapsed; 0: the calls were timed one by one), the rate, and
     * the samples of the threads with trees: all, in the agent's own code, and
     * with no hooked method on the stack (the last two left out of the times) */
    uint64_t calls_clock, calls_rate;
    uint64_t calls_samples, calls_in_agent, calls_outside, calls_in_jit; /* in_jit: while the JIT compiled */

    dnp_ct_frame *tl_funcs;    /* the functions MethodEnter names, by FunctionID (the smallest name id) */
    size_t ntl_funcs;
    uint32_t *tl_threads;      /* the thread numbers with a MethodEnter, ascending */
    size_t ntl_threads;

    /* weighted stacks (dnp_ct_weighted_*): sampled allocations, samples */
    const char *unit;          /* what total_ns/self_ns count: NULL nanoseconds, "bytes" */
    const char *const *own_names; /* names numbered from DNP_CT_OWN_NAMES (not owned) */
    size_t nown_names;
    void *weighted;            /* the builder's state until dnp_ct_weighted_finish */
    const char *count_type;    /* a weighted tree's count and weight as pprof's sample types */
    const char *weight_type;   /* ("contentions", "delay" for --locks); NULL: by unit */
    /* Sampled stacks (dnprof run --sample): SampleNode events make the trees
     * as CallNodes do, a node's calls being its samples and its times the
     * samples times the period (an estimate). */
    uint64_t sample_nodes;     /* SampleNode events read */
    uint64_t sample_mode;      /* SampleConfig: 1 cpu, 2 wall, 3 suspend; 0 none seen */
    uint64_t sample_rate, sample_period_ns;
    uint64_t samples, samples_dropped; /* SampleStats */
    uint64_t sample_instants, sample_periods; /* SampleWeights: the samples behind the periods */
    /* Async callers (docs/async.md): nodes of sampled stacks that were marked
     * as an awaiting caller or a resumed method, and the view the trees show
     * (dnp_calltree_set_physical) */
    uint64_t async_marked;
    int physical;
    int async_stacks;          /* an AsyncStacks event was seen: SampleNodes may carry marks */
    uint64_t async_resumes, async_unknown; /* its counts (the last one) */
    /* Sampled allocations (--alloc), for saying what a trace holds. */
    uint64_t alloc_source;     /* AllocSampling: 1 AllocationSampled, 2 AllocationTick; 0 none seen */
    uint64_t alloc_mean_bytes;
    unsigned holds;            /* DNP_CT_HOLDS_*: what else the trace holds, for saying which report reads it */
} dnp_calltree;

/* dnp_calltree.holds: a LockConfig (--locks), a GcConfig (--gc), a
 * ThreadPoolConfig (--threadpool) event, an exception thrown (--exceptions). */
#define DNP_CT_HOLDS_LOCKS 1u
#define DNP_CT_HOLDS_GC 2u
#define DNP_CT_HOLDS_THREADPOOL 4u
#define DNP_CT_HOLDS_EXCEPTIONS 8u

/* The marks of a sampled frame's FunctionID (FunctionIDs are 8-byte aligned;
 * the agent's async.h sets them): an async caller that awaited the resumed
 * method (not on the thread's stack), and the resumed method, where the
 * logical stack starts. The trees never hold them: they are the view's. */
#define DNP_CT_ASYNC_CALLER 1u
#define DNP_CT_ASYNC_RESUMED 2u

/* The view of sampled async stacks that the trees built from now on take: 0
 * the logical one (the default: a resumed async method under the methods that
 * awaited it), 1 the physical one (under the thread's own frames: `--physical`). */
void dnp_calltree_set_physical(int physical);

/* Builds the trees of t (which must outlive them). Returns 0, or -1 with one
 * line in err (no memory). A trace without call data gives empty trees: check
 * dnp_calltree_has_data(). */
int dnp_calltree_build(const dnp_trace *t, dnp_calltree **out, char *err, size_t errlen);
/* The same from a stream, read to its end (a first pass; the stream must be new
 * and outlive the trees). -1 also when reading fails (err says why). */
int dnp_calltree_build_stream(dnp_trace_stream *s, dnp_calltree **out, char *err, size_t errlen);
void dnp_calltree_free(dnp_calltree *ct);

int dnp_calltree_has_data(const dnp_calltree *ct);

/* What tells one frame from another: its FunctionID, or for native code (no
 * FunctionID, --sample) its name. */
static inline uint64_t dnp_ct_frame_key(uint64_t func, uint64_t name) {
    return func ? func : name | 1ull << 63;
}

/* The raw name of a node ("<function 0x...>" into buf when unknown). */
const char *dnp_ct_raw_name(const dnp_calltree *ct, uint64_t func, uint64_t name, char *buf, size_t len);

/* The tree of a thread given as dnprof's thread number or as an OS thread id. */
const dnp_ct_tree *dnp_ct_find_thread(const dnp_calltree *ct, uint64_t number_or_tid);

/* Depth-first walk from the root: visit(ctx, node, 1) before a node's children,
 * visit(ctx, node, 0) after them. Iterative: any depth. A non-zero return from
 * visit stops the walk and is returned. */
typedef int (*dnp_ct_visit)(void *ctx, const dnp_ct_tree *tr, uint32_t node, int enter);
int dnp_ct_walk(const dnp_ct_tree *tr, dnp_ct_visit visit, void *ctx);

/* Leaves out of every tree the call paths whose total is under min_fraction of
 * their tree's total: their time stays in their caller's self time, so totals do
 * not change. Exports walk the trees, so they shrink with them (the timeline
 * exports do not use the trees). Returns the number of paths left out. */
uint64_t dnp_ct_prune(dnp_calltree *ct, double min_fraction);

/* Per-function totals of a tree, sorted by self time, largest first (free()). */
int dnp_ct_functions(const dnp_ct_tree *tr, dnp_ct_func **out, size_t *n);

/* ---- weighted stacks: a tree from stacks with a weight each ----
 *
 * For profiles that are not enter/leave: sampled allocations (bytes), samples.
 * The weight goes to total_ns/self_ns (ct->unit says what it counts), the count
 * to calls. Only the merged tree is built (nthreads is 0). Frames name their
 * function by name string: a trace string number, or DNP_CT_OWN_NAMES + i for
 * own_names[i], names the caller keeps (set ct->own_names before exporting). */
#define DNP_CT_OWN_NAMES (1ull << 40)

/* A new, empty tree for t's names (t must outlive it). NULL when out of memory. */
dnp_calltree *dnp_ct_weighted_new(const dnp_trace *t, const char *unit);
/* Adds one stack, outermost frame first. 0, or -1 when out of memory. */
int dnp_ct_weighted_add(dnp_calltree *ct, const dnp_ct_frame *frames, size_t n, uint64_t weight,
                        uint64_t count);
/* After the last stack: links and sorts the tree. 0, or -1 when out of memory. */
int dnp_ct_weighted_finish(dnp_calltree *ct);

/* ---- the timeline (MethodEnter/Leave), balanced ---- */

typedef struct dnp_tl_frame {
    uint64_t func, name;   /* the function and its name string */
    uint64_t start_ns;
    uint64_t args, ret;    /* MethodArgs / MethodReturn string numbers, 0 if none */
    uint64_t child_ns;     /* time in the frames it called */
} dnp_tl_frame;

enum { DNP_TL_LEAVE, DNP_TL_TAILCALL, DNP_TL_UNWIND, DNP_TL_REPAIR, DNP_TL_END };

/* Called for each frame opened and closed, in time order per thread and always
 * balanced: a leave that skips frames closes them first (DNP_TL_REPAIR), frames
 * still open at the end are closed at the thread's last event (DNP_TL_END).
 * open is 1 for an open, 0 for a close, and how (DNP_TL_LEAVE..) says why it
 * closed. depth: 0 for a thread's outermost frame. */
typedef int (*dnp_tl_visit)(void *ctx, uint32_t thread, int open, int how, const dnp_tl_frame *f,
                            uint32_t depth, uint64_t now_ns);

typedef struct dnp_tl_stats {
    uint64_t events, unmatched, open_at_end;
} dnp_tl_stats;

/* Walks the timeline of one thread (its number), or of all (0). progress, when
 * given, is called now and then with the events done and the total. */
int dnp_timeline_walk(const dnp_trace *t, uint32_t thread, dnp_tl_visit visit, void *ctx,
                      void (*progress)(void *pctx, uint64_t done, uint64_t total), void *pctx,
                      dnp_tl_stats *stats);

/* The same over the trees' source: the loaded trace, or the stream read again
 * (another pass over the file; only the chunks of thread when one is given).
 * Threads interleave in file order then, each in time order; times are the
 * loader's (relative to the start). progress counts bytes then. */
int dnp_ct_timeline_walk(const dnp_calltree *ct, uint32_t thread, dnp_tl_visit visit, void *ctx,
                         void (*progress)(void *pctx, uint64_t done, uint64_t total), void *pctx,
                         dnp_tl_stats *stats);

#endif
