/* nesting.c: per-thread nesting levels (nesting.h). */
#include "nesting.h"

int dnp_nest_pair(uint16_t kind) {
    if (kind >= DNP_EV_COUNT || dnp_events[kind].nest != DNP_NEST_FINISH)
        return -1;
    for (int k = kind - 1; k >= 0; k--)
        if (dnp_events[k].nest == DNP_NEST_START)
            return k;
    return -1;
}

static void push(dnp_nest_state *s, uint16_t kind) {
    if (s->depth < DNP_NEST_MAX)
        s->open[s->depth] = kind;
    s->depth++;
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
    int level = s->depth;
    switch (dnp_events[kind].nest) {
    case DNP_NEST_START:
        push(s, kind);
        break;
    case DNP_NEST_FINISH:
        close_kind(s, dnp_nest_pair(kind));
        if (kind == DNP_EV_ExceptionCatcherLeave && s->depth > 0 && s->depth <= DNP_NEST_MAX &&
            s->open[s->depth - 1] == DNP_EV_ExceptionUnwindFunctionEnter)
            s->depth--; /* the catching frame resumes: its unwind is over */
        level = s->depth;
        break;
    case DNP_NEST_TRANSITION: {
        /* values: function ID, its name, the reason (0 call, 1 return) */
        int is_return = v[2] == 1;
        uint16_t other = kind == DNP_EV_ManagedToUnmanagedTransition
                             ? DNP_EV_UnmanagedToManagedTransition
                             : DNP_EV_ManagedToUnmanagedTransition;
        if (is_return) {
            close_kind(s, other);
            level = s->depth;
        } else {
            push(s, kind);
        }
        break;
    }
    default:
        break;
    }
    return level;
}
