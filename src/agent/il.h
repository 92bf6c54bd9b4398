/* il.h: IL bodies (issue 18, dnprof run --il PATTERN, docs/il.md): the body of
 * each method whose name matches, as it is JIT-compiled for the first time,
 * with the names of the tokens it uses, as an ILBody event. */
#ifndef DNP_IL_H
#define DNP_IL_H

#include <stdint.h>

#include "com.h"
#include "config.h"

/* Takes the patterns of cfg->il and adds JIT compilation to the mask when
 * there are any. */
void il_configure(const agent_config *cfg, uint32_t *mask);

/* JITCompilationStarted on the compiling thread: records the ILBody of fid
 * when it matches and its method's body was not recorded yet. Never fails:
 * what goes wrong is in the event (hrStatus) or left out. */
void il_jit_started(FunctionID fid);

/* A module is gone (ModuleUnloadFinished, with the modules family): its
 * methods are forgotten, so that a module loaded later at the same ModuleID
 * gets its bodies recorded. */
void il_forget_module(ModuleID module);

#endif
