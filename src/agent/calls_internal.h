/* calls_internal.h: what the enter/leave files share (calls.c, calls_filter.c,
 * calls_args.c, elt.S). Not for the rest of the agent: calls.h is its interface. */
#ifndef DNP_CALLS_INTERNAL_H
#define DNP_CALLS_INTERNAL_H

#include <stdint.h>

#include "com.h"

/* One hooked function: the client ID the mapper hands the runtime, so the hooks
 * never look anything up. Allocated once, never freed (hooks may run until the
 * process ends). */
typedef struct calls_fn {
    FunctionID id;
    uint32_t name; /* interned name string number */
    uint32_t magic; /* CALLS_FN_MAGIC: what a sample checks a client ID read from code by (calls_sampled.c) */
    ModuleID module;
    mdToken token;
    /* A state machine's MoveNext: a resume's first entry goes under its
     * awaiting callers (async_calls_callers), so its calls take the C path. */
    uint8_t async_move;
    /* The node that a call of this function found or made last, on any thread
     * (a racy cache of the enter fast paths, elt.S: a node is taken only
     * when its parent is the caller's node, so it is the thread's own). */
    struct cnode *last;
} calls_fn;
#define CALLS_FN_MAGIC 0x666e7064u

/* ---- per-thread call trees (calls.c) ---- */

#define CALLS_EMIT_COUNT 65536u /* --calls=counts: leaves between looks at the clock */
#define NODE_CHUNK 4096u
#define MAX_CHUNKS 256u /* 1M nodes per thread; more go to the overflow node */
#define CALLS_SQ 256u   /* sampled nodes a thread queues between two writes (calls_sampled.c) */

typedef struct cnode {
    const calls_fn *fn; /* NULL: the overflow node */
    uint32_t parent;    /* 0: the root */
    uint32_t dirty;
    uint32_t pad;
    uint32_t self;       /* this node's number */
    struct cnode *last_child; /* the child made or found last: most calls repeat it */
    uint64_t calls, incl, excl, tail; /* times in ticks */
    struct cnode *parent_p; /* node_at(parent); NULL for the overflow node */
} cnode; /* 72 bytes */

typedef struct cframe {
    uint32_t node;
    uint32_t pad;
    uintptr_t csp; /* the method's caller SP */
    uint64_t start, child;
    cnode *np; /* node_at(node): chunks never move */
} cframe;

typedef struct calls_thread {
    cframe *stack;
    uint32_t depth, cap, skipped;
    cnode *chunks[MAX_CHUNKS];
    _Atomic uint32_t nnodes; /* nodes 1..nnodes-1 are in use; 0 is the root */
    uint32_t overflow_node; /* 0 until the tree is full */
    uint32_t *hash; /* node numbers, 0 empty; owner only */
    uint32_t hash_mask;
    uint32_t *dirty;
    uint32_t ndirty, dirty_cap;
    uint64_t next_emit, unwind_at;
    uint32_t countdown; /* --calls=counts: leaves left before the next look at the clock */
    uint32_t pad;
    uint64_t unmatched, repaired, overflowed, open_at_end;
    uint64_t tid;
    uint64_t inner_ps, outer_ps; /* the hooks' cost (calibrate), 0: not measured */
    /* Time spent waiting for a CPU is taken out of the clock (docs/calls.md):
     * frame times are the TSC less skew; a gap of more than G.gap_ticks since
     * the thread's last clock read (last) makes it look at its run-queue wait. */
    uint64_t last, skew;
    uint64_t sched_wait; /* the run-queue wait seen last, ns */
    uint64_t waited_ns;  /* taken out so far */
    int sched_fd;        /* /proc/self/task/TID/schedstat, -1: none */
    struct calls_thread *scratch; /* the calibration's tree (calibrate) */
    struct calls_thread *next;
    /* The part of the hooks' outer cost that hides behind a caller's own
     * latency-bound work (calibrate): a call whose clock gap since the thread's
     * last read is at least busy_ticks gives hidden_ticks back to its caller's
     * self time (the assembly enter path). */
    uint64_t busy_ticks, hidden_ticks;
    /* --calls' times from samples (calls_sampled.c). The signal handler, on
     * this thread, adds the period to the top frame's node (exclusive) and to
     * its callers' (inclusive), and queues the node; the owner marks the queued
     * nodes and their callers for writing (calls_sampled_drain). */
    _Atomic uint32_t sq_n;      /* nodes queued */
    uint32_t sq_full;           /* the queue overflowed: every node is written */
    uint32_t sq[CALLS_SQ];
    uint64_t samples, in_hooks, outside; /* samples taken; in the hooks; with no hooked frame */
    uint64_t in_jit;                     /* samples while the JIT compiled a method on the thread */
    /* continuous profiling (calls_window_flush): each node's calls at the last
     * window's end, win_n of them; the window thread's alone */
    uint64_t *win_calls;
    uint32_t win_n;
} calls_thread;

static inline cnode *node_at(calls_thread *t, uint32_t i) {
    return &t->chunks[i / NODE_CHUNK][i % NODE_CHUNK];
}

/* Makes t (NULL: none) the thread's state, for both paths. */
void calls_thread_bind(calls_thread *t);
/* A thread's state with room for cap frames, hash_mask + 1 hash slots and
 * dirty_cap dirty nodes, and its root node; NULL when out of memory. */
calls_thread *calls_thread_alloc(uint32_t cap, uint32_t hash_mask, uint32_t dirty_cap);
/* Frees t and its scratch tree (NULL-tolerant). */
void calls_thread_free(calls_thread *t);
/* The calling thread's state, or NULL (also for a thread whose slot another
 * took); async-signal-safe (calls_sampled.c). */
calls_thread *calls_thread_here(void);
/* Marks node i of the owner's tree for writing. */
void calls_node_dirty(calls_thread *t, uint32_t i);

/* ---- --calls' times from samples of the shadow stack (calls_sampled.c) ---- */

/* Whether the calls' times come from samples; set before the hooks run. */
extern int calls_sampled_on;
/* The agent's own code, whose samples are the hooks' (and no method's). */
void calls_sampled_setup(void);
/* The owner, before it writes its nodes: marks those the samples changed
 * since, and their callers. 1 when every node must be written (the queue
 * overflowed). */
int calls_sampled_drain(calls_thread *t);

/* ---- writing the trees (calls_emit.c) ---- */

/* Calls fn on every live thread's state, under the registry's lock (calls.c). */
void calls_threads_each(void (*fn)(calls_thread *t));

/* The thread's hooks' cost (timed) or its samples' counts (sampled). */
void calls_emit_overhead(calls_thread *t);
/* The nodes that changed since the last write (marked dirty). */
void calls_emit_dirty(calls_thread *t);
/* Every node, and the overhead. */
void calls_emit_all(calls_thread *t);

/* The stubs in use; whether they are the fast timed ones (the calibration's). */
int calls_timed_stubs(void (**enter)(void), void (**leave)(void));

/* ---- the hooks' own cost (calls_calibrate.c) ---- */

/* The calibration's function: never in a tree that is written. */
extern calls_fn calls_cal_dummy;
/* Measures the hooks' cost on this thread (batches of pairs, the median), into
 * t->inner_ps and outer_ps; then binds t (bound) or nothing as the thread's
 * state. Nothing without the fast timed stubs. */
void calls_calibrate(calls_thread *t, int batches, int pairs, int bound);

/* The filter and the mapper (calls_filter.c). */
struct cnode;
/* The filters of agent_config (before calls_install). */
void calls_filter_set(int all_code, const char *include, const char *exclude);
/* A CallsConfig event with mode and the filters. */
void calls_filter_record(uint64_t mode);
/* The runtime's FunctionIDMapper2: a hooked function's calls_fn as client ID. */
UINT_PTR calls_mapper(FunctionID fid, void *data, BOOL *hook);
/* The frame of an awaiting caller (id: its FunctionID marked ASYNC_FRAME_CALLER,
 * name its name), the same for every call; NULL when there is no room. */
const calls_fn *calls_async_caller_fn(uint64_t id, uint32_t name);
/* Clears every hooked function's last node (and extra's) for which
 * owns(owner, node): nodes about to be freed (under the mapper's lock). */
void calls_fns_forget(int (*owns)(const void *owner, const struct cnode *n), const void *owner, calls_fn *extra);

/* The fast-path stubs (elt.S). */
void dnp_elt_enter(void);
void dnp_elt_leave(void);
void dnp_elt_tailcall(void);
/* Fast stubs: a fast path first (calls.c), the full stub when it declines. */
void dnp_elt_enter_timed(void);
void dnp_elt_leave_timed(void);
void dnp_elt_enter_counts(void);
/* The C fast stubs the assembly ones fall back to. */
void dnp_elt_enter_timed_c(void);
void dnp_elt_enter_counts_c(void);
void dnp_elt_leave_counts(void);
/* Runs pairs enter/leave calls of client as JITted code would, around a body
 * of body dependent multiplies, with caller dependent multiplies of the caller
 * between two calls (calibration); dnp_elt_nop: a hook that returns. */
void dnp_elt_calibrate(uintptr_t client, uint64_t pairs, void (*enter)(void), void (*leave)(void),
                       uint64_t body, uint64_t caller);
void dnp_elt_nop(void);

/* What the stubs call: the client ID and the method's caller SP. */
void calls_hook_enter(uintptr_t client, uintptr_t caller_sp);
void calls_hook_leave(uintptr_t client, uintptr_t caller_sp);
void calls_hook_tailcall(uintptr_t client, uintptr_t caller_sp);

/* --args (calls_args.c): the text of the arguments of a call, and of its return
 * value, in out (NUL-terminated, truncated to cap). 0, or -1 when the runtime
 * gave nothing (the text says why). */
int calls_args_text(const calls_fn *f, COR_PRF_ELT_INFO elt, char *out, size_t cap);
int calls_return_text(const calls_fn *f, COR_PRF_ELT_INFO elt, char *out, size_t cap);

#endif
