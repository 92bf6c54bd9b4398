/* async.h: logical async stacks (docs/async.md). The agent puts a call to its
 * probe at the start of the runtime's resume of an async method (the state
 * machine box's MoveNext, its IL rewritten as it is first compiled), reads
 * there, where objects cannot move, the chain of the methods that awaited it,
 * and keeps it in the thread's own state; a sample taken while that resume runs
 * appends those callers from agent memory. */
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

/* Adds to the event mask what logical stacks need (before SetEventMask):
 * compilations, inlining and precompiled-code decisions, with --sample from
 * start-up. Says why not in the trace, else. */
void async_configure(const agent_config *cfg, uint32_t *mask);

/* After SetEventMask: the names it writes. */
void async_install(void);

/* Whether logical stacks are recorded. */
int async_on(void);

/* Whether function fid is a resume that gets the probe (for the inlining and
 * the ReadyToRun decisions: it is kept whole and compiled); notes the state
 * machines and the execution context's methods on the way. */
int async_is_hooked(FunctionID fid);

/* A module goes away: its metadata, read in place, is forgotten. */
void async_module_unloading(ModuleID module);

/* JITCompilationStarted: a resume's IL gets the probe (once per method); a
 * state machine's MoveNext is noted. */
void async_jit_started(FunctionID fid);

/* Whether fid is a resume's own frame (a box's MoveNext with the probe). */
int async_is_resume_frame(uint64_t fid);

/* Whether fid is one of the execution context's methods that run a resumed
 * state machine (between the box's MoveNext and the machine's). */
int async_is_plumbing(uint64_t fid);

/* On the interrupted thread (async-signal-safe), sp its stack pointer: the
 * innermost resume on it at or above sp: where its MoveNext's frame is (an
 * address inside it), the chain of its awaiting callers and the resumed
 * method's FunctionID and name. 0 when none. The sampler checks the frame. */
int async_sample_state(uint64_t sp, uint64_t *fp, uint32_t *chain, uint64_t *resumed, uint32_t *name);

/* From another thread (the sampler's): whether the thread whose thread pointer
 * (x86-64: pthread_self()) is tp may be inside an async resume, whose
 * awaiting callers only its own signal handler can read (1 when it cannot
 * tell). */
int async_thread_resuming(uint64_t tp);

/* A resume that started before anything awaited its box (the first resume of
 * a method whose callers had not awaited it yet: their thread was still on the
 * way to its await, often compiling it). In the signal handler, after
 * async_sample_state: the box's address now (from its frame, which the GC
 * keeps current) and the runtime's suspension count, when the resume is such
 * a one and no suspension runs; 0 otherwise. */
uint64_t async_sample_pending(uint64_t sp, uint64_t *seq);

/* On the sampler thread: the chain of the box taken by async_sample_pending
 * (a box of a class already met, resuming the method resumed),
 * followed now through memory reads that cannot fault, kept only when no
 * suspension of the runtime (no object moved) came between; 0 when none or
 * still nobody awaits it. */
uint32_t async_resolve(uint64_t box, uint64_t seq, uint64_t resumed);

/* The runtime's suspensions (RuntimeSuspendStarted, RuntimeSuspendAborted,
 * RuntimeResumeFinished): each moves the count async_resolve checks. */
void async_suspension(void);

/* A stack of this thread (FunctionIDs, innermost first, n of them, room for
 * cap: an exception's, an allocation's, a contention's) made logical: when a resume runs on it and the
 * stack holds the resumed method's frame, the frames after it are its awaiting
 * callers instead. Returns the new count (n when nothing changed). */
unsigned async_logical_stack(uint64_t *f, unsigned n, unsigned cap);

/* What tells this thread's logical stack from its physical one: the innermost
 * resume running on it (its chain and method), 0 when none. For caches keyed
 * by the physical stack (stack_cache.c). */
uint64_t async_here_key(void);

/* In the enter hook of fid, a state machine's MoveNext (calls.c; sp: an
 * address in the hook's frame): when fid is the method the innermost resume on
 * this thread resumed, entered for the first time since, its awaiting callers
 * as async_chain_frames gives them (innermost first, marked); 0 otherwise. */
uint32_t async_calls_callers(uint64_t fid, uintptr_t sp, uint64_t *funcs, uint32_t *names, uint32_t cap);

/* Whether fid (of module, token) is the MoveNext of a compiler-made state
 * machine (noted as async_is_hooked does). Not in a hook. */
int async_machine_move(FunctionID fid, ModuleID module, mdToken token);

/* The frames of a chain (the sampler thread): innermost caller first, their
 * FunctionIDs marked ASYNC_FRAME_CALLER ("[async caller unknown]" is 1 with its
 * name). Returns the count, at most cap. */
uint32_t async_chain_frames(uint32_t chain, uint64_t *funcs, uint32_t *names, uint32_t cap);

/* The probe the resumes call (their new IL), in cooperative mode: this_home
 * is the address of their `this`. */
void async_probe(uintptr_t this_home);

/* Shutdown: the counts, as a note. */
void async_shutdown(void);

#endif
