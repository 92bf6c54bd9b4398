/* calls_internal.h: what the enter/leave files share (calls.c, calls_args.c,
 * elt.S). Not for the rest of the agent: calls.h is its interface. */
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
    uint32_t pad;
    ModuleID module;
    mdToken token;
    /* The node that a call of this function found or made last, on any thread
     * (a racy cache of the enter fast paths, elt.S: a node is taken only
     * when its parent is the caller's node, so it is the thread's own). */
    struct cnode *last;
} calls_fn;

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
