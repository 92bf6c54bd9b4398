/* perfmap.h: the runtime's stubs by name, from the perf map it writes when
 * asked (DOTNET_PerfMapEnabled; docs/sampling.md, "Stubs"). Sampler thread. */
#ifndef DNP_PERFMAP_H
#define DNP_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

/* "[stub KIND]" for an address in a stub the runtime reported: 0, or -1 when
 * no perf map is written or none of its stubs holds ip. */
int perfmap_stub_name(uint64_t ip, char *out, size_t cap);

/* Forgets the stubs read and closes the map (the sampler's stop). */
void perfmap_release(void);

#endif
