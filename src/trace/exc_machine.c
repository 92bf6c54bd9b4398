/* exc_machine.c: the per-thread exception state machine (exc_machine.h). */
#include "exc_machine.h"

#include <string.h>

#include "trace_format.h"

int exc_machine_is_event(uint16_t kind) {
    return kind >= DNP_EV_ExceptionThrown && kind <= DNP_EV_ExceptionCLRCatcherExecute;
}

const char *exc_phase_name(int phase) {
    switch (phase) {
    case EXC_SEARCH: return "search";
    case EXC_FILTER: return "filter";
    case EXC_UNWIND: return "unwind";
    case EXC_FINALLY: return "finally";
    case EXC_CATCH: return "catch";
    default: return "normal";
    }
}

/* Whether the event is what a level in this state can receive next. */
static int fits(const exc_level *l, uint16_t kind) {
    switch (kind) {
    case DNP_EV_ExceptionSearchFunctionEnter: return l->phase == EXC_SEARCH && !l->fn_open;
    case DNP_EV_ExceptionSearchFunctionLeave:
    case DNP_EV_ExceptionSearchFilterEnter:
    case DNP_EV_ExceptionSearchCatcherFound: return l->phase == EXC_SEARCH && l->fn_open;
    case DNP_EV_ExceptionSearchFilterLeave: return l->phase == EXC_FILTER;
    case DNP_EV_ExceptionUnwindFunctionEnter: return l->phase == EXC_UNWIND || l->phase == EXC_SEARCH;
    case DNP_EV_ExceptionUnwindFunctionLeave:
        return (l->phase == EXC_UNWIND && l->fn_open) || (l->phase == EXC_SEARCH && !l->caught);
    case DNP_EV_ExceptionUnwindFinallyEnter: return l->phase == EXC_UNWIND;
    case DNP_EV_ExceptionUnwindFinallyLeave: return l->phase == EXC_FINALLY;
    case DNP_EV_ExceptionCatcherEnter: return l->phase == EXC_UNWIND && l->caught;
    case DNP_EV_ExceptionCatcherLeave: return l->phase == EXC_CATCH;
    default: return 1;
    }
}

static void pop(exc_machine *m, exc_step *out, uint8_t fate) {
    exc_level *l = &m->lv[--m->depth];
    l->fate = fate;
    if (m->depth > 0 && l->parent_phase == EXC_FILTER && fate == EXC_RUNTIME)
        m->lv[m->depth - 1].filter_open = 2; /* it threw: the filter counts as false */
    if (out->nended < EXC_MAX_NEST)
        out->ended[out->nended++] = *l;
}

/* Pops every level above index keep: they were left behind. */
static void pop_above(exc_machine *m, int keep, exc_step *out) {
    while (m->depth - 1 > keep) {
        const exc_level *t = &m->lv[m->depth - 1];
        if (t->no_catcher)
            pop(m, out, EXC_RUNTIME);
        else {
            if (t->phase != EXC_CATCH && t->phase != EXC_FINALLY)
                out->flags |= EXC_UNEXPECTED;
            pop(m, out, EXC_ABANDONED);
        }
    }
}

/* The filter that just left gets its verdict from the event after it. */
static void filter_verdict(exc_level *l, int yes, exc_step *out) {
    if (!l->filter_open)
        return;
    out->flags |= yes && l->filter_open == 1 ? EXC_FILTER_TRUE : EXC_FILTER_FALSE;
    l->filter_open = 0;
}

/* A level whose handler a nested exception may have replaced is over unless
 * this event is its handler's Leave, or its own object thrown again from its
 * catch (`throw;` after a try/catch inside the catch). */
static void settle_replaced(exc_machine *m, uint16_t kind, uint64_t object, exc_step *out) {
    if (m->depth == 0 || !m->lv[m->depth - 1].replaced)
        return;
    exc_level *t = &m->lv[m->depth - 1];
    if ((kind != DNP_EV_ExceptionThrown && fits(t, kind)) ||
        (kind == DNP_EV_ExceptionThrown && object && t->phase == EXC_CATCH && t->object == object)) {
        t->replaced = 0; /* the try was inside the block, which goes on */
        return;
    }
    pop(m, out, EXC_ABANDONED);
    out->flags |= EXC_REPLACED;
}

static void thrown(exc_machine *m, uint64_t object, exc_step *out) {
    /* A level unwinding towards no catcher is over once something new starts. */
    while (m->depth > 0) {
        exc_level *t = &m->lv[m->depth - 1];
        if (t->no_catcher && t->phase == EXC_UNWIND)
            pop(m, out, EXC_RUNTIME);
        else
            break;
    }
    /* The same object thrown while its catch runs is either `throw;` (or `throw
     * ex;`) leaving the catch, or a deeper frame called from the catch throwing
     * it again (ExceptionDispatchInfo.Throw in an await continuation run inline)
     * while the catch goes on. The search tells: reaching the catch's own
     * method makes it a rethrow, a catcher found before it does not. */
    int maybe_rethrow = m->depth > 0 && object && m->lv[m->depth - 1].phase == EXC_CATCH &&
                        m->lv[m->depth - 1].object == object;
    uint8_t parent = 0;
    if (m->depth > 0) {
        parent = m->lv[m->depth - 1].phase;
        if (parent == EXC_SEARCH || parent == EXC_UNWIND)
            out->flags |= EXC_UNEXPECTED;
    }
    out->flags |= EXC_BEGIN;
    if (m->depth == EXC_MAX_NEST) {
        /* Too deep to follow: the oldest level is forgotten. */
        memmove(&m->lv[0], &m->lv[1], (EXC_MAX_NEST - 1) * sizeof m->lv[0]);
        m->depth--;
        m->lost++;
        out->flags |= EXC_UNEXPECTED;
    }
    exc_level *l = &m->lv[m->depth++];
    memset(l, 0, sizeof *l);
    l->object = object;
    l->phase = EXC_SEARCH;
    l->parent_phase = parent;
    l->maybe_rethrow = (uint8_t)maybe_rethrow;
}

int exc_machine_details(exc_machine *m, uint64_t object, uint64_t flags) {
    int d = m->depth;
    if (!(flags & EXC_DETAIL_SAME_AS_CATCH) || d < 2 || m->lv[d - 2].phase != EXC_CATCH ||
        m->lv[d - 1].object != object || m->lv[d - 1].fn_open)
        return 0;
    m->lv[d - 2].object = object; /* followed across the GC by the agent */
    m->lv[d - 1].maybe_rethrow = 1;
    return 1;
}

void exc_machine_abandon_top(exc_machine *m, exc_step *out) {
    if (m->depth > 0)
        pop(m, out, EXC_ABANDONED);
}

void exc_machine_operands(uint16_t kind, const uint64_t *v, uint64_t *fn, uint64_t *object) {
    *fn = *object = 0;
    switch (kind) {
    case DNP_EV_ExceptionThrown:
        *object = v[DNP_V(ExceptionThrown, objectId)];
        break;
    case DNP_EV_ExceptionCatcherEnter:
        *fn = v[DNP_V(ExceptionCatcherEnter, functionId)];
        *object = v[DNP_V(ExceptionCatcherEnter, objectId)];
        break;
#define FN(ev)                                                               \
    case DNP_EV_##ev:                                                        \
        *fn = v[DNP_V(ev, functionId)];                                      \
        break;
    FN(ExceptionSearchFunctionEnter)
    FN(ExceptionSearchFilterEnter)
    FN(ExceptionSearchCatcherFound)
    FN(ExceptionUnwindFunctionEnter)
    FN(ExceptionUnwindFinallyEnter)
#undef FN
    default:
        break;
    }
}

/* UnwindFunctionLeave of level l (index at). */
static void unwind_function_leave(exc_machine *m, int at, exc_level *l, exc_step *out) {
    if (l->phase == EXC_SEARCH) {
        /* The first pass ended with no managed catcher (.NET 9+). */
        filter_verdict(l, 0, out);
        l->no_catcher = 1;
        l->phase = EXC_UNWIND;
        l->fn_open = 0;
        l->fn = 0;
        out->flags |= EXC_NO_CATCHER | EXC_STRAY_LEAVE;
        return;
    }
    /* A frame whose catch or finally was running is left: that level is
     * abandoned, with everything above it, once this one ends. */
    for (int i = 0; i < at; i++)
        if ((m->lv[i].phase == EXC_CATCH || m->lv[i].phase == EXC_FINALLY) && m->lv[i].handler == l->fn &&
            m->lv[i].fate != EXC_RETHROWN) {
            m->lv[i].fate = EXC_ABANDONED;
            m->lv[i].ended_with = (uint8_t)at;
        }
    l->fn_open = 0;
    l->fn = 0;
    out->flags |= EXC_FRAME_LEFT;
}

/* CatcherLeave of the top level l: caught; what it ends with it. */
static void catcher_leave(exc_machine *m, exc_level *l, exc_step *out) {
    uint8_t parent_phase = l->parent_phase;
    uint64_t catcher = l->handler;
    pop(m, out, EXC_CAUGHT);
    /* Thrown in the catch or finally below and caught in the same method:
     * by a try inside the block, or by one around it, which replaced the
     * older exception. The next event tells (settle_replaced). */
    if (m->depth > 0) {
        exc_level *b = &m->lv[m->depth - 1];
        if ((b->phase == EXC_CATCH || b->phase == EXC_FINALLY) && parent_phase == b->phase && catcher &&
            catcher == b->handler && b->fate != EXC_ABANDONED && b->fate != EXC_RETHROWN)
            b->replaced = 1;
    }
    /* Levels whose handler frame this exception (or one above it, gone now)
     * left are over too, with what is above them; a level left by a rethrow
     * of a level still running below this one (an await continuation run
     * inline by a catch that a `throw;` had entered) ends with that one. */
    int lowest = -1, gone = m->depth;
    for (int i = 0; i < m->depth; i++)
        if ((m->lv[i].fate == EXC_ABANDONED || m->lv[i].fate == EXC_RETHROWN) && m->lv[i].ended_with >= gone) {
            lowest = i;
            break;
        }
    if (lowest >= 0)
        while (m->depth > lowest)
            pop(m, out, m->lv[m->depth - 1].fate == EXC_RETHROWN ? EXC_RETHROWN : EXC_ABANDONED);
}

void exc_machine_step(exc_machine *m, uint16_t kind, uint64_t fn, uint64_t object, exc_step *out) {
    out->flags = 0;
    out->nended = 0;
    if (!exc_machine_is_event(kind))
        return;
    if (kind == DNP_EV_ExceptionOSHandlerEnter || kind == DNP_EV_ExceptionOSHandlerLeave ||
        kind == DNP_EV_ExceptionCLRCatcherFound || kind == DNP_EV_ExceptionCLRCatcherExecute)
        return; /* documented, never raised by CoreCLR */
    settle_replaced(m, kind, object, out);
    if (kind == DNP_EV_ExceptionThrown) {
        thrown(m, object, out);
        return;
    }

    int at = m->depth - 1;
    while (at >= 0 && !fits(&m->lv[at], kind))
        at--;
    if (at < 0) {
        out->flags |= EXC_UNEXPECTED;
        return;
    }
    pop_above(m, at, out);
    exc_level *l = &m->lv[at];

    switch (kind) {
    case DNP_EV_ExceptionSearchFunctionEnter:
        /* The search reached the catch's own method with no catcher above
         * it: a rethrow (`throw;` first searches that method itself,
         * ExceptionDispatchInfo.Throw(e) in the catch its own frames first).
         * The catch is over; it ends when this one does. */
        if (l->maybe_rethrow && at > 0 && m->lv[at - 1].phase == EXC_CATCH && m->lv[at - 1].handler == fn) {
            l->maybe_rethrow = 0;
            m->lv[at - 1].fate = EXC_RETHROWN;
            m->lv[at - 1].ended_with = (uint8_t)at;
        }
        l->fn_open = 1;
        l->fn = fn;
        break;
    case DNP_EV_ExceptionSearchFunctionLeave:
        filter_verdict(l, 0, out);
        l->fn_open = 0;
        l->fn = 0;
        break;
    case DNP_EV_ExceptionSearchFilterEnter:
        filter_verdict(l, 0, out);
        l->phase = EXC_FILTER;
        l->handler = fn;
        break;
    case DNP_EV_ExceptionSearchFilterLeave:
        l->phase = EXC_SEARCH;
        l->handler = 0;
        if (l->filter_open != 2)
            l->filter_open = 1;
        break;
    case DNP_EV_ExceptionSearchCatcherFound:
        l->maybe_rethrow = 0; /* caught in a frame the catch called: that catch goes on */
        filter_verdict(l, 1, out);
        l->caught = 1;
        l->catcher = fn;
        break;
    case DNP_EV_ExceptionUnwindFunctionEnter:
        if (l->phase == EXC_SEARCH) {
            filter_verdict(l, 0, out);
            l->maybe_rethrow = 0;
            if (!l->caught && !l->no_catcher) {
                l->no_catcher = 1; /* no stray Leave first: as older runtimes do */
                out->flags |= EXC_NO_CATCHER;
            }
            l->phase = EXC_UNWIND;
        } else if (l->fn_open) {
            out->flags |= EXC_UNEXPECTED;
        }
        l->fn_open = 1;
        l->fn = fn;
        break;
    case DNP_EV_ExceptionUnwindFunctionLeave:
        unwind_function_leave(m, at, l, out);
        break;
    case DNP_EV_ExceptionUnwindFinallyEnter:
        l->phase = EXC_FINALLY;
        l->handler = fn;
        break;
    case DNP_EV_ExceptionUnwindFinallyLeave:
        l->phase = EXC_UNWIND;
        l->handler = 0;
        break;
    case DNP_EV_ExceptionCatcherEnter:
        if (object)
            l->object = object; /* a GC may have moved it since the throw */
        l->phase = EXC_CATCH;
        l->handler = fn;
        if (!l->catcher)
            l->catcher = fn;
        break;
    case DNP_EV_ExceptionCatcherLeave:
        catcher_leave(m, l, out);
        break;
    default:
        break;
    }
}
