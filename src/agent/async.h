/* async.h: logical async stacks (docs/async.md). The agent hooks the runtime's
 * resume of an async method (the state machine box's MoveNext) with enter/leave
 * hooks of its own, reads there, where objects cannot move, the chain of the
 * methods that awaited it, and keeps it in the thread's own state; a sample
 * taken while that resume runs appends those callers from agent memory. */
#ifndef DNP_ASYNC_H
#define DNP_ASYNC_H

#include <stdint.h>

#include "com.h"
#include "config.h"

/* The low bits of a sampled frame's FunctionID (FunctionIDs are 8-byte
 * aligned): a logical caller that awaited (not on the thread's stack), and the
 * resumed method's own frame, where the logical view starts (docs/trace-format.md). */
#define ASYNC_FRAME_CALLER 1u
#define ASYNC_FRAME_RESUMED 2u

/* Adds to the event mask what logical stacks need (before SetEventMask): the
 * enter/leave hooks, for the resumes only, with --sample from start-up and
 * without --calls (whose hooks they would share). Says once why not, else. */
void async_configure(const agent_config *cfg, uint32_t *mask);

/* Installs the function ID mapper and the hooks (after SetEventMask). */
void async_install(void);

/* Whether logical stacks are recorded. */
int async_on(void);

/* Whether function fid is a resume the hooks see (for the inlining and the
 * ReadyToRun decisions: a hooked method is kept whole and compiled). */
int async_is_hooked(FunctionID fid);

/* Whether fid is one of the execution context's methods that run a resumed
 * state machine (between the box's MoveNext and the machine's). */
int async_is_plumbing(uint64_t fid);

/* On the interrupted thread (async-signal-safe): the innermost resume running
 * on it: the frame pointer of its MoveNext, the chain of its awaiting callers
 * and the resumed method's FunctionID and name. 0 when none. */
int async_sample_state(uint64_t *fp, uint32_t *chain, uint64_t *resumed, uint32_t *name);

/* The frames of a chain (the sampler thread): innermost caller first, their
 * FunctionIDs marked ASYNC_FRAME_CALLER ("[async caller unknown]" is 1 with its
 * name). Returns the count, at most cap. */
uint32_t async_chain_frames(uint32_t chain, uint64_t *funcs, uint32_t *names, uint32_t cap);

/* The hooks' C side (elt.S's async stubs). */
void async_hook_enter(uintptr_t client, uintptr_t caller_sp, uintptr_t self, uintptr_t fp);
void async_hook_leave(uintptr_t client, uintptr_t caller_sp);
void async_hook_tailcall(uintptr_t client, uintptr_t caller_sp);
void dnp_async_enter(void);
void dnp_async_leave(void);
void dnp_async_tailcall(void);

/* Shutdown: the counts, as a note. */
void async_shutdown(void);

#endif
