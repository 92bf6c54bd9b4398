/* exceptions.h: the agent's side of exception stories (issue 4): each thread
 * follows its exceptions through the state machine of exc_machine.h, checks the
 * sequence the runtime sends (an unexpected one becomes a note, never a crash),
 * and at ExceptionThrown records the exception's details: its message and
 * HResult read from the object through the field layout API (no managed code
 * runs), and, when asked, the managed stack of the throw. */
#ifndef DNP_EXCEPTIONS_H
#define DNP_EXCEPTIONS_H

#include <stdint.h>

#include "com_types.h"
#include "config.h"

/* Adds what exception details need to the event mask (before SetEventMask):
 * the stack snapshot bit when cfg->exc_stacks (DNP_ENV_EXC_STACKS=1 at
 * start-up, attach --exceptions after an attach). */
void exceptions_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high);

/* Called by every exception callback after it recorded its event: moves this
 * thread's state machine. fn and object as the callback got them (0 if none).
 * Returns 1 when the frame left by an ExceptionUnwindFunctionLeave was real
 * (0: the stray Leave that ends a first pass with no catcher). */
int exceptions_step(uint16_t kind, FunctionID fn, ObjectID object);

/* Notes in the trace what the runtime's exception handling risks under a
 * profiler that monitors exceptions (after the recorder opened). */
void exceptions_note_runtime(void);

/* At ExceptionThrown, after its event: moves the state machine and records
 * ExceptionDetails. */
void exceptions_thrown(ObjectID object);

#endif
