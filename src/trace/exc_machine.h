/* exc_machine.h: the exception state machine of one thread (docs/design-notes.md#exceptions), as the
 * runtime really drives it on .NET 9 and 10 (docs/exceptions.md). Shared by the
 * agent, which follows it live in thread-local storage, and the story builder
 * (stories.h), which replays it from a trace. Fixed size, no allocation.
 *
 * Each exception in flight on the thread is a level: the newest on top. A level
 * goes SEARCH -> (FILTER -> SEARCH)* -> UNWIND -> (FINALLY -> UNWIND)* -> CATCH
 * and ends at ExceptionCatcherLeave; an exception thrown while another is in a
 * filter, finally or catch is a new level above it. What .NET 10 does besides
 * the documented sequence:
 *   - the catching frame gets ExceptionUnwindFunctionEnter and no Leave;
 *   - a first pass that finds no managed catcher (the exception escapes a
 *     filter, reaches native code, or is unhandled) ends with a stray
 *     ExceptionUnwindFunctionLeave while the last searched frame is still open,
 *     then the unwind runs up to that frame, and no catcher callback follows;
 *   - a catch or finally left by a nested exception gets no Leave;
 *   - an exception thrown in a catch or finally and caught by a try of the
 *     same method raises the same callbacks whether that try is inside the
 *     block (which goes on) or around it (the block is left, its exception
 *     replaced): the older level is then over unless its very next event is
 *     its handler's Leave (`replaced`). */
#ifndef DNP_EXC_MACHINE_H
#define DNP_EXC_MACHINE_H

#include <stdint.h>

#define EXC_MAX_NEST 32

typedef enum exc_phase {
    EXC_SEARCH = 1, /* first pass: frames searched for a handler */
    EXC_FILTER,     /* a `when` filter runs */
    EXC_UNWIND,     /* second pass: frames unwound */
    EXC_FINALLY,    /* a finally (or fault) block runs */
    EXC_CATCH       /* the catch block runs */
} exc_phase;

/* How a level ended. */
typedef enum exc_fate {
    EXC_OPEN = 0,     /* still in flight (the trace ends here) */
    EXC_CAUGHT,       /* its catch block was entered and left */
    EXC_RUNTIME,      /* no managed catcher: the runtime or native code took it
                         (escaped a filter, crossed into native code) */
    EXC_ABANDONED,    /* a nested exception left its finally or catch block */
    EXC_RETHROWN      /* its catch block threw the same object again */
} exc_fate;

typedef struct exc_level {
    uint64_t object;     /* ObjectID at ExceptionThrown */
    uint64_t fn;         /* the frame now searched or unwound (0: none open) */
    uint64_t catcher;    /* function of SearchCatcherFound, then CatcherEnter */
    uint64_t handler;    /* function of the finally or catch running, or 0 */
    uint8_t phase;       /* exc_phase */
    uint8_t fn_open;     /* a Search/UnwindFunctionEnter is open */
    uint8_t caught;      /* a catcher was found */
    uint8_t no_catcher;  /* the first pass ended without a managed catcher */
    uint8_t parent_phase;/* the phase of the level below when thrown, or 0 */
    uint8_t filter_open; /* a filter left, its verdict not known yet */
    uint8_t fate;        /* exc_fate once it ended; ABANDONED or RETHROWN before: decided, */
    uint8_t ended_with;  /* ... to end with the level of this index (the one that left its handler) */
    uint8_t maybe_rethrow; /* thrown again while its catch runs: a rethrow if the search reaches that catch's method */
    uint8_t replaced;    /* a nested exception thrown in its catch or finally was
                            caught in the handler's own method: over unless its
                            next event is the handler's Leave */
} exc_level;

typedef struct exc_machine {
    exc_level lv[EXC_MAX_NEST];
    int depth;
    uint32_t lost; /* levels not kept: deeper than EXC_MAX_NEST */
} exc_machine;

/* What one step did. Ended levels are the top ones popped, oldest last. */
enum {
    EXC_BEGIN = 1 << 0,        /* a new level (ExceptionThrown) */
    EXC_FILTER_TRUE = 1 << 1,  /* the filter just left said yes (CatcherFound) */
    EXC_FILTER_FALSE = 1 << 2, /* the filter just left said no */
    EXC_NO_CATCHER = 1 << 3,   /* the first pass ended without a managed catcher */
    EXC_UNEXPECTED = 1 << 4,   /* the event did not fit; the machine made the best of it */
    EXC_STRAY_LEAVE = 1 << 5,  /* an UnwindFunctionLeave that left no frame */
    EXC_FRAME_LEFT = 1 << 6,   /* an UnwindFunctionLeave that did leave a frame */
    EXC_REPLACED = 1 << 7      /* a level was ended as replaced by a nested exception */
};

typedef struct exc_step {
    unsigned flags;
    int nended;                  /* levels popped, fates in ended[] */
    exc_level ended[EXC_MAX_NEST];
} exc_step;

/* The exception events events.def numbers; other kinds are ignored. */
int exc_machine_is_event(uint16_t kind);

/* The operands exc_machine_step takes, from an exception event's values (v as
 * dnp_trace_event.v holds them): 0 for what the event does not carry. */
void exc_machine_operands(uint16_t kind, const uint64_t *v, uint64_t *fn, uint64_t *object);

/* Applies one exception event: fn is the FunctionID of the events that carry
 * one, object the ObjectID of ExceptionThrown and ExceptionCatcherEnter. */
void exc_machine_step(exc_machine *m, uint16_t kind, uint64_t fn, uint64_t object, exc_step *out);

/* ExceptionDetails flags (events.def). */
#define EXC_DETAIL_KEPT_TRACE 0x1u    /* _stackTrace already set: thrown before */
#define EXC_DETAIL_TRUNCATED 0x2u     /* the stack cut at its frame limit */
#define EXC_DETAIL_SAME_AS_CATCH 0x4u /* the object whose catch runs below, moved by a GC */

/* Applies an ExceptionDetails event (its object and flags), recorded right
 * after the ExceptionThrown that made the top level: with
 * EXC_DETAIL_SAME_AS_CATCH, the throw is the catch's object thrown again.
 * Returns 1 when it did that. */
int exc_machine_details(exc_machine *m, uint64_t object, uint64_t flags);

/* Ends the top level as abandoned: the agent knows (from the stack of a new
 * throw) that its catch or finally is no longer running. */
void exc_machine_abandon_top(exc_machine *m, exc_step *out);

/* The phase name of a level or of 0 ("normal"), for messages. */
const char *exc_phase_name(int phase);

#endif
