/* sampler.h: the sampling profiler (dnprof run/attach --sample, docs/sampling.md).
 *
 * Signal mode: every thread of the process gets a CPU-time timer (or, --wall, a
 * signal from the sampler thread every period); the handler walks the
 * interrupted stack by frame pointers into a per-thread lock-free ring. The
 * sampler thread drains the rings, resolves the addresses (managed code by
 * GetFunctionFromIP, native code by symbol, symbols.c) and aggregates the
 * stacks into one tree per OS thread, written as SampleNode events, with each
 * thread's OS name (ExistingThread, no managed ThreadID).
 * Suspend mode: SuspendRuntime, DoStackSnapshot of every managed thread,
 * ResumeRuntime, every period (the runtime's own way, for comparison). */
#ifndef DNP_SAMPLER_H
#define DNP_SAMPLER_H

#include <stdint.h>

#include "config.h"
#include "settings.h"

enum { SAMPLER_OFF = DNP_SAMPLE_OFF, SAMPLER_CPU = DNP_SAMPLE_CPU, SAMPLER_WALL = DNP_SAMPLE_WALL,
       SAMPLER_SUSPEND = DNP_SAMPLE_SUSPEND };

/* Adds to the event mask what sampling needs (suspend mode: stack snapshots). */
void sampler_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* Starts the sampler thread (after the mask is set and recording is on). 0, or
 * -1 after saying why (the rest of the recording goes on). */
int sampler_start(const agent_config *cfg);

/* A thread started (ThreadAssignedToOSThread, os its thread id). Called on
 * that thread, it gets its slot and timer now, with its stack's bounds from
 * the thread library (under the sampler's arm lock, briefly); else the sampler
 * looks for new threads at its next tick instead of its next scan. */
void sampler_thread_started(uint32_t os);
/* ThreadDestroyed (id the thread's): when it runs on the thread that ends, its
 * slot stops standing for its pthread_self(), which the thread library gives
 * the next thread it starts (sampler_threads.c). */
void sampler_thread_ending(uint64_t id);

/* Code may have gone (a module or a dynamic method unloaded): addresses are
 * resolved afresh from the sampler's next tick. Lock-free. */
void sampler_code_unloaded(void);

/* JITCompilationStarted / Finished on the compiling thread: its samples in
 * between read "method > [JIT] > the JIT's frames" (sampler_runtime.c). */
void sampler_jit_started(uint64_t function_id);
/* A collection starts (its generations, from GarbageCollectionStarted) or ends
 * on the calling thread: samples there get a "[GC genN]" frame. */
void sampler_gc_started(int ngens, const int *collected);
void sampler_gc_finished(void);
/* The runtime suspended for a reason (RuntimeSuspendStarted) and resumed
 * (RuntimeResumeStarted, RuntimeSuspendAborted): wall mode's samples of the
 * threads a collection holds read "[GC pause]" (sampler_runtime.c). */
void sampler_suspend_started(int reason);
void sampler_suspend_ended(void);
/* For a reader of the heap's objects outside the runtime's care (pool_state.c):
 * a number that changes as each collection starts and ends, and in *running
 * whether one runs now; UINT64_MAX when the collections are not followed (no
 * --sample). Equal numbers before and after a read, neither running: no
 * collection moved anything meanwhile. */
uint64_t sampler_gc_seq(int *running);
void sampler_jit_finished(void);
/* The function the JIT compiles on OS thread tid now (the innermost), 0 when
 * none: read by the signal handlers (async-signal-safe). */
uint64_t sampler_jit_now(int tid);

/* Native code without frame pointers: among nw words at sp (the stack below
 * limit), the first that points further up the stack at a frame whose saved
 * frame pointer points further up still and whose return address can be one
 * (the managed caller's frame pointer, saved as a callee-saved register). Its index and
 * *fp = the word, or -1. Async-signal-safe: reads only below limit (through
 * process_vm_readv when safe). */
int sampler_saved_fp(const uint64_t *words, uint32_t nw, uint64_t sp, uint64_t limit, int safe, uint64_t *fp);

/* Stops sampling: no timer, no signal left pending, every tree written. Safe to
 * call twice and when it never started. exiting: the process ends (Shutdown, a
 * signal's end), so the sampler's memory, mappings and tables are left to the
 * exit rather than unmapped one by one (each unmap of a multi-threaded process
 * interrupts its other CPUs); a detach frees them (the library is unloaded). */
void sampler_stop(int exiting);

/* Has the sampler thread write every tree that changed now, as it does at
 * intervals, and waits for it at most wait_ms: the samples so far survive an
 * end that comes with no Shutdown (an unhandled exception's abort). Sampling
 * goes on. Returns at once when no sampler thread runs. Not on the sampler thread. */
void sampler_checkpoint(unsigned wait_ms);

#endif
