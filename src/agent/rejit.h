/* rejit.h: traced methods (issue 18 part 3, dnprof run/attach --trace PATTERN,
 * docs/calls.md#tracing-chosen-methods-rejit). The methods whose
 * Namespace.Class::Method matches are re-JIT-compiled (RequestReJITWithInliners,
 * so that callers that inlined them are compiled again too) with a rewritten
 * body that calls the agent at entry and at every exit (src/trace/il_rewrite.h);
 * the agent counts and times each call in its own memory and writes the sums
 * as TracedMethod and TracedCalls events at the detach or at the end. */
#ifndef DNP_REJIT_H
#define DNP_REJIT_H

#include <stdint.h>

#include "com.h"
#include "config.h"
#include "il_rewrite.h"

/* Takes cfg->trace's patterns; with any, adds COR_PRF_ENABLE_REJIT and the
 * module loads to the mask. With cfg->locks from start-up on .NET 9+,
 * COR_PRF_ENABLE_REJIT alone, for System.Threading.Lock's slow path. */
void rejit_configure(const agent_config *cfg, uint32_t *mask);

/* Whether ReJIT was asked for: the runtime then refuses to unload the agent
 * (CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT, docs/attach.md). */
int rejit_enabled(void);

/* A module finished loading: its matching methods are asked for. */
void rejit_module_loaded(ModuleID module);

/* A module is being unloaded (a collectible AssemblyLoadContext's): its
 * methods' ModuleID is not used from now on; their sums stay. */
void rejit_module_unloading(ModuleID module);

/* An attach completed: every module already loaded is searched. */
void rejit_attach_complete(void);

/* GetReJITParameters: the rewritten body of a traced method. Never fails: a
 * method that cannot be rewritten is said once and compiled unchanged. */
void rejit_parameters(ModuleID module, mdMethodDef method, ICorProfilerFunctionControl *control);

/* ReJITError: said once per method, recorded. */
void rejit_error(ModuleID module, mdMethodDef method, HRESULT hr);

/* --locks: a managed thread started, or a System.Threading.Lock blocked: its
 * slow path is asked for, once, to time every contended acquisition from then
 * on (no-op without --locks from start-up on .NET 9+). */
void rejit_lock_start(void);
/* Whether that probe is to time Lock and has not run yet: a Lock's wait whose
 * ContentionStart comes now is not in its sums. */
int rejit_lock_before_probe(void);
/* Whether the probe in Lock's slow path has run: the runtime's Lock
 * contention is then the probe's to count (locks.c: LockProbeBlocked). */
int rejit_lock_live(void);

/* Lock.TryEnterSlow(int timeoutMs, ThreadId currentThreadId), method of
 * module, checked in its metadata: an instance method whose ThreadId is a
 * struct of one 4-byte id (the OS thread id, 0 before the thread's first
 * Lock), its class holding a 4-byte _owningThreadId (the holder's, 0 when
 * free). Then the IL that hands the entry probe the holder, the timeout and
 * the caller's id (ldarg.0; ldfld; ldarg.1; ldarga.s 2; ldind.u4) into p's
 * enter_args, for a signature of dnp_il_enter_3i4_sig's, and 0; -1 when the
 * runtime's Lock is not so (rejit_lock.c). */
int rejit_lock_args(ModuleID module, mdMethodDef method, dnp_il_probe *p);

/* Stops counting, reverts the methods to their original code when revert is
 * set (an attached agent's detach), and writes what was counted. Once. */
void rejit_finish(int revert);

#endif
