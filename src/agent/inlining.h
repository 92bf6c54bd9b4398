/* inlining.h: keeps hooked methods whole (docs/calls.md#what-is-hooked): the
 * JIT may not inline a method whose calls are counted, nor may the runtime run
 * its precompiled (ReadyToRun) code, which has no hooks: either would hide its
 * calls from the enter/leave hooks. Everything else inlines and runs
 * precompiled as it would. */
#ifndef DNP_INLINING_H
#define DNP_INLINING_H

#include <stdint.h>

#include "com.h"
#include "config.h"

/* Adds to the event mask what the decisions need (JIT compilation and cache
 * searches: the runtime asks through JITInlining and
 * JITCachedFunctionSearchStarted), when calls are recorded by hooks that
 * inlining would bypass (not with --all-code, which disables inlining and
 * precompiled code altogether). After calls_configure. */
void inlining_configure(const agent_config *cfg, uint32_t *mask);

/* Whether the JIT may inline callee into its caller (JITInlining): not when
 * the calls filter hooks callee. 1 when nothing is decided here. */
int inlining_allowed(FunctionID callee);

/* Whether the runtime may run fid's precompiled code
 * (JITCachedFunctionSearchStarted): not when the calls filter hooks it. */
int inlining_precompiled_allowed(FunctionID fid);

#endif
