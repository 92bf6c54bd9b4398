/* nesting.c: per-thread nesting levels (nesting.h). */
#include "nesting.h"

static int close_kind(dnp_nest_state *s, int kind);

int dnp_nest_pair(uint16_t kind) {
    if (kind >= DNP_EV_COUNT || dnp_events[kind].nest != DNP_NEST_FINISH)
        return -1;
    for (int k = kind - 1; k >= 0; k--)
        if (dnp_events[k].nest == DNP_NEST_START)
            return k;
    return -1;
}

static void push(dnp_nest_state *s, uint16_t kind, uint8_t exc) {
    if (s->depth < DNP_NEST_MAX) {
        s->open[s->depth] = kind;
        s->exc[s->depth] = exc;
    }
    s->depth++;
}

/* Exception levels from index lowest up have ended: close what they opened,
 * and whatever was left open above it. */
static void close_levels(dnp_nest_state *s, int lowest) {
    int top = s->depth < DNP_NEST_MAX ? s->depth : DNP_NEST_MAX;
    for (int i = 0; i < top; i++)
        if (s->exc[i] > lowest) {
            s->depth = i;
            return;
        }
}

/* The level of an exception event, after the machine applied it. */
static int exception_event(dnp_nest_state *s, uint16_t kind, const uint64_t *v) {
    uint64_t fn, object;
    exc_machine_operands(kind, v, &fn, &object);
    int d0 = s->m.depth;
    exc_step st;
    exc_machine_step(&s->m, kind, fn, object, &st);
    if (st.nended > 0)
        close_levels(s, d0 - st.nended);
    int level = s->depth;
    int top = s->m.depth - 1;
    switch (dnp_events[kind].nest) {
    case DNP_NEST_START:
        push(s, kind, (uint8_t)(st.flags & EXC_UNEXPECTED || top < 0 ? 0 : top + 1));
        break;
    case DNP_NEST_FINISH:
        if (kind == DNP_EV_ExceptionCatcherLeave && st.nended > 0 && !(st.flags & EXC_UNEXPECTED))
            ; /* closed with its level */
        else if (st.flags & EXC_STRAY_LEAVE) {
            /* No Leave comes for the last frame searched. */
            int n = s->depth < DNP_NEST_MAX ? s->depth : DNP_NEST_MAX;
            if (n > 0 && n == s->depth && s->open[n - 1] == DNP_EV_ExceptionSearchFunctionEnter)
                s->depth--;
        } else {
            close_kind(s, dnp_nest_pair(kind));
            if (kind == DNP_EV_ExceptionCatcherLeave && s->depth > 0 && s->depth <= DNP_NEST_MAX &&
                s->open[s->depth - 1] == DNP_EV_ExceptionUnwindFunctionEnter)
                s->depth--; /* the catching frame resumes: its unwind is over */
        }
        level = s->depth;
        break;
    default:
        break;
    }
    return level;
}

/* Closes the nearest open kind, and whatever was left open above it. */
static int close_kind(dnp_nest_state *s, int kind) {
    int top = s->depth < DNP_NEST_MAX ? s->depth : DNP_NEST_MAX;
    for (int i = top - 1; i >= 0; i--) {
        if (s->open[i] == kind) {
            s->skipped += (uint64_t)(top - 1 - i);
            s->depth = i;
            return 1;
        }
    }
    if (s->depth > DNP_NEST_MAX) { /* deeper than kept: trust the count */
        s->depth--;
        return 1;
    }
    s->unmatched++;
    return 0;
}

int dnp_nest_apply(dnp_nest_state *s, uint16_t kind, const uint64_t *v) {
    if (kind >= DNP_EV_COUNT)
        return s->depth;
    if (exc_machine_is_event(kind))
        return exception_event(s, kind, v);
    if (kind == DNP_EV_ExceptionDetails)
        exc_machine_details(&s->m, v[DNP_V(ExceptionDetails, objectId)], v[DNP_V(ExceptionDetails, flags)]);
    int level = s->depth;
    switch (dnp_events[kind].nest) {
    case DNP_NEST_START:
        push(s, kind, 0);
        break;
    case DNP_NEST_FINISH:
        close_kind(s, dnp_nest_pair(kind));
        level = s->depth;
        break;
    case DNP_NEST_TRANSITION: {
        /* the reason: 0 call, 1 return (the same place in both transitions) */
        _Static_assert(DNP_V(ManagedToUnmanagedTransition, reason) == DNP_V(UnmanagedToManagedTransition, reason), "");
        int is_return = v[DNP_V(ManagedToUnmanagedTransition, reason)] == 1;
        uint16_t other = kind == DNP_EV_ManagedToUnmanagedTransition
                             ? DNP_EV_UnmanagedToManagedTransition
                             : DNP_EV_ManagedToUnmanagedTransition;
        if (is_return) {
            close_kind(s, other);
            level = s->depth;
        } else {
            push(s, kind, 0);
        }
        break;
    }
    default:
        break;
    }
    return level;
}
