/* stories.h: the story of every exception in a trace (issue 4), built by
 * replaying each thread's exception events through the state machine the agent
 * follows (exc_machine.h). Shared by `dnprof print --exceptions` and `dnprof
 * report --exceptions`; works on any dnp_trace, also one built in memory. */
#ifndef DNP_STORIES_H
#define DNP_STORIES_H

#include <stddef.h>
#include <stdint.h>

#include "exc_machine.h"
#include "trace_reader.h"

/* One event of a story. */
typedef struct dnp_story_step {
    size_t ev;       /* index in dnp_trace.events (dnp_stories_build), or
                        DNP_STORY_NO_EVENT when the stories were streamed */
    uint64_t time_ns;
    const char *function; /* the name of its function field, or NULL */
    uint64_t fn_sid;      /* that name's string number */
    uint16_t kind;
    uint8_t verdict; /* ExceptionSearchFilterLeave: 1 true, 2 false, 0 unknown;
                        ExceptionUnwindFunctionLeave: 3 when it left no frame (the
                        first pass ended with no managed catcher) */
} dnp_story_step;

#define DNP_STORY_NO_EVENT ((size_t)-1)

typedef struct dnp_story {
    size_t id;             /* 1, 2, ... in the order of the throws */
    uint32_t thread;       /* dnprof's thread number */
    size_t thrown;         /* index of its ExceptionThrown */
    uint64_t object;       /* ObjectID */
    const char *type;      /* class name, or NULL */
    const char *message;   /* from ExceptionDetails: NULL when none was read */
    uint32_t hresult;
    int has_details;
    const char *stack;     /* frames, one a line, innermost first; NULL if none */
    const char *throw_site;/* the innermost frame, past the awaiter's and ExceptionDispatchInfo's of a rethrow at an await (the method that awaited); else the first searched */
    const char *catcher;   /* the function whose catch ran (or was found), or NULL */
    uint64_t t_thrown, t_end; /* t_end: its last event (CatcherLeave when caught) */
    uint8_t fate;          /* exc_fate */
    uint8_t no_catcher;    /* the first pass found no managed catcher */
    uint8_t phase;         /* its phase when it ended or the trace did */
    uint8_t parent_phase;  /* what the parent was doing when this was thrown */
    uint8_t internal;
    uint8_t ended;         /* its level ended (set while the stories are built) */
    uint8_t kept_trace;    /* thrown before and its stack trace kept (throw;, an await) */      /* thrown and caught in framework code (first chance) */
    size_t parent;         /* the story in flight below it on the thread, or 0 */
    size_t rethrow_of;     /* an earlier story of the same object, or 0 */
    size_t ended_by;       /* the nested story that abandoned it, or the rethrow, 0 */
    unsigned searched, filters, finallys, unwound; /* frames searched and unwound, blocks run */
    char *site_buf;        /* owns throw_site when cut from the stack */
    uint64_t type_sid, message_sid, stack_sid, site_sid, catcher_sid; /* the strings' numbers */
    size_t seq;            /* the order it was built in (streamed: file order) */
    dnp_story_step *steps;
    size_t nsteps, capsteps;
} dnp_story;

typedef struct dnp_stories {
    dnp_story *v;
    size_t n;
    uint64_t unexpected; /* events that did not fit the state machine */
    uint64_t exception_events; /* events of the exceptions family seen */
} dnp_stories;

/* Builds the stories of t. 0, or -1 when out of memory. */
int dnp_stories_build(const dnp_trace *t, dnp_stories *out);
void dnp_stories_free(dnp_stories *s);

/* ---- built from any sequence of events (a stream) ----
 *
 * Each thread's events must come in its order; threads may interleave in any
 * way (a stream's file order). Memory holds the stories only (without their
 * steps unless keep_steps), never the events. Names are kept as string numbers
 * until dnp_stories_finish resolves them in the trace, which must hold every
 * string by then (a stream's trace after its first pass). Stories are then put
 * in the order of their throws and numbered, and rethrows of the same object
 * are linked across threads. */
typedef struct dnp_stories_builder dnp_stories_builder;

dnp_stories_builder *dnp_stories_begin(int keep_steps);
/* One event; ev its index in a dnp_trace (DNP_STORY_NO_EVENT if none). 0 or -1. */
int dnp_stories_feed(dnp_stories_builder *b, const dnp_trace_event *e, size_t ev);
/* Ends the stories, resolves their names in t, subtracts origin from their times. */
int dnp_stories_finish(dnp_stories_builder *b, const dnp_trace *t, uint64_t origin, dnp_stories *out);
/* The same, for events in time order across threads (as dnp_trace_load sorts
 * them; times already relative): each story is handed to emit, numbered,
 * resolved in t and linked, as soon as it and every earlier one have ended,
 * and its steps are freed then. Memory holds the stories from the oldest one
 * still in flight on, and the last 4096 handed out. dnp_stories_finish (origin
 * 0) hands out the rest, and gives back what is still held (without steps). */
typedef void (*dnp_story_emit)(void *ctx, const dnp_story *s, const dnp_stories *all);
dnp_stories_builder *dnp_stories_begin_ordered(int keep_steps, const dnp_trace *t, dnp_story_emit emit, void *ctx);

/* Frees a builder that was not finished (NULL-tolerant). */
void dnp_stories_abort(dnp_stories_builder *b);

/* The stories of the trace at path, streamed (memory bounded by the stories),
 * or loaded whole when the environment sets DNP_ENV_NO_STREAM. *t gets the
 * stream's trace (no events; the caller closes *stream), or the loaded one.
 * 0, or -1 with one line in err. */
int dnp_stories_read(const char *path, int keep_steps, dnp_stories *out, dnp_trace_stream **stream,
                     dnp_trace **loaded, char *err, size_t errlen);

/* The name of an event's function field (its first FUNCTION), or NULL. */
const char *dnp_story_function(const dnp_trace *t, const dnp_trace_event *e);

/* One line: what became of the exception ("caught in X", "unhandled: ..."). */
const char *dnp_story_fate_text(const dnp_story *s, const dnp_stories *all, char *buf, size_t len);

/* The throw site in a stack (frames one a line, innermost first): its first
 * frame, or for an exception thrown again at an await the first frame past
 * the awaiter's and ExceptionDispatchInfo's, the method that awaited; its
 * length in *len (the stories' throw_site, dnprof top's throw sites). */
const char *dnp_story_site_in_stack(const char *stack, size_t *len);

#endif
