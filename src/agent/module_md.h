/* module_md.h: a loaded module's metadata read in place (cli_metadata.h), and
 * which module is CoreLib: for async stacks (async_setup.c) and the pool's
 * line (pool_state.c). */
#ifndef DNP_MODULE_MD_H
#define DNP_MODULE_MD_H

#include "agent.h"
#include "cli_metadata.h"

/* The metadata of the image the runtime loaded for module: the runtime's own
 * IMetaDataImport over CoreLib, opened at start-up, cost every program about
 * 3 ms of CPU (BENCHMARKS.md). 0, or -1 when the module has no image (a
 * dynamic one) or it cannot be read. */
int module_md_read(ModuleID module, dnp_md *md);

/* Whether module is System.Private.CoreLib (by its file's name). */
int module_is_corelib(ModuleID module);

#endif
