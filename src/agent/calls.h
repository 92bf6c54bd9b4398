/* calls.h: method enter/leave (ELT3, seed 001): which functions are hooked, the
 * hooks themselves, and the per-thread call trees they build. */
#ifndef DNP_CALLS_H
#define DNP_CALLS_H

#include <stdint.h>

#include "config.h"

/* Adds to the event mask what cfg->calls needs (before SetEventMask). 0, or -1
 * after saying why. Nothing when cfg->calls is 0. */
int calls_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* Installs the function ID mapper and the enter/leave hooks (after SetEventMask,
 * inside Initialize). 0, or -1 after saying why. */
int calls_install(void);

/* The runtime left a frame by an exception (ExceptionUnwindFunctionLeave): the
 * frame on top of this thread's shadow stack is gone without a Leave. */
void calls_unwind_leave(void);

#endif
