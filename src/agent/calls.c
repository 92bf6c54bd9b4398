/* calls.c: method enter/leave. */
#include "calls.h"

#include "agent.h"

int calls_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    (void)mask;
    (void)mask_high;
    if (cfg->calls) {
        agent_say("method enter/leave (--calls) is not built into this agent yet; recording "
                  "the other events");
    }
    return 0;
}

int calls_install(void) {
    return 0;
}

void calls_unwind_leave(void) {
}
