/* test_stories.c: the exception state machine and the stories built from it,
 * on synthetic event sequences shaped as .NET 10 sends them (docs/exceptions.md). */
#include <stdlib.h>
#include <string.h>

#include "stories.h"
#include "test.h"

enum { F_A = 0x100, F_B = 0x200, F_C = 0x300, F_MAIN = 0x400, F_FILTER = 0x500, OBJ1 = 0x7000, OBJ2 = 0x8000 };

typedef struct seq {
    dnp_trace_event ev[128];
    size_t n;
} seq;

static void add(seq *s, uint32_t thread, uint16_t kind, uint64_t a, uint64_t b) {
    dnp_trace_event *e = &s->ev[s->n];
    memset(e, 0, sizeof *e);
    e->time_ns = 1000 * (s->n + 1);
    e->thread = thread;
    e->kind = kind;
    e->nvalues = dnp_events[kind].nvalues;
    if (kind == DNP_EV_ExceptionThrown || kind == DNP_EV_ExceptionDetails) {
        e->v[0] = a;
        e->v[4] = b; /* Details: depth */
    } else if (kind == DNP_EV_ExceptionCatcherEnter) {
        e->v[0] = a;
        e->v[2] = b;
    } else {
        e->v[0] = a;
    }
    s->n++;
}

static int build(seq *s, uint32_t threads, dnp_stories *out) {
    static dnp_trace t;
    static dnp_trace_thread th[4];
    memset(&t, 0, sizeof t);
    for (uint32_t i = 0; i < 4; i++)
        th[i].ordinal = i + 1;
    t.events = s->ev;
    t.nevents = s->n;
    t.threads = th;
    t.nthreads = threads;
    return dnp_stories_build(&t, out);
}

/* OBJ1 thrown in A and caught there, on thread 1: its catch entered. */
static void in_catch_of_a(seq *s) {
    add(s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ1);
}

/* A throw through A, a finally in B, caught in MAIN. */
static void across(seq *s, uint32_t thread, uint64_t obj) {
    add(s, thread, DNP_EV_ExceptionThrown, obj, 0);
    add(s, thread, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(s, thread, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(s, thread, DNP_EV_ExceptionSearchFunctionEnter, F_B, 0);
    add(s, thread, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(s, thread, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(s, thread, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(s, thread, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFunctionEnter, F_B, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFinallyEnter, F_B, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFinallyLeave, 0, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(s, thread, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(s, thread, DNP_EV_ExceptionCatcherEnter, F_MAIN, obj);
    add(s, thread, DNP_EV_ExceptionCatcherLeave, 0, 0);
}

TEST(stories_caught_across_frames) {
    seq s = {.n = 0};
    across(&s, 1, OBJ1);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 1);
    ASSERT_EQ(st.v[0].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[0].searched, 3);
    ASSERT_EQ(st.v[0].finallys, 1);
    ASSERT_EQ(st.v[0].unwound, 2);
    ASSERT_EQ(st.v[0].nsteps, 17);
    ASSERT_EQ(st.v[0].t_end - st.v[0].t_thrown, 16000);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* Two threads interleaved: no story takes the other's events. */
TEST(stories_threads_apart) {
    seq a = {.n = 0}, b = {.n = 0}, s = {.n = 0};
    across(&a, 1, OBJ1);
    across(&b, 2, OBJ2);
    for (size_t i = 0; i < a.n; i++) {
        s.ev[s.n++] = a.ev[i];
        s.ev[s.n++] = b.ev[i];
    }
    dnp_stories st;
    ASSERT_EQ(build(&s, 2, &st), 0);
    ASSERT_EQ(st.n, 2);
    for (size_t k = 0; k < 2; k++) {
        ASSERT_EQ(st.v[k].fate, EXC_CAUGHT);
        ASSERT_EQ(st.v[k].nsteps, 17);
        for (size_t j = 0; j < st.v[k].nsteps; j++)
            ASSERT_EQ(s.ev[st.v[k].steps[j].ev].thread, st.v[k].thread);
    }
    ASSERT_NE(st.v[0].thread, st.v[1].thread);
    dnp_stories_free(&st);
    return 0;
}

/* An exception thrown in a filter escapes it (.NET 10: the search stops at the
 * filter's frame, a stray UnwindFunctionLeave, an unwind with no catcher): the
 * runtime takes it, the filter counts as false, the first pass goes on. */
TEST(stories_filter_throws) {
    seq s = {.n = 0};
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFilterEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ2, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_FILTER, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_FILTER, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFilterLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[0].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].fate, EXC_RUNTIME);
    ASSERT_EQ(st.v[1].parent, 1);
    ASSERT_EQ(st.v[1].parent_phase, EXC_FILTER);
    /* The filter's verdict: false, though a catcher is found right after it. */
    int verdict = -1;
    for (size_t k = 0; k < st.v[0].nsteps; k++)
        if (s.ev[st.v[0].steps[k].ev].kind == DNP_EV_ExceptionSearchFilterLeave)
            verdict = st.v[0].steps[k].verdict;
    ASSERT_EQ(verdict, 2);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* Unhandled: no catcher, the unwind runs a finally, and the trace ends. */
TEST(stories_unhandled) {
    seq s = {.n = 0};
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFilterEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFilterLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFinallyEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFinallyLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 1);
    ASSERT_EQ(st.v[0].fate, EXC_OPEN);
    ASSERT_EQ(st.v[0].no_catcher, 1);
    ASSERT_EQ(st.v[0].finallys, 1);
    ASSERT_EQ(st.v[0].unwound, 1);
    ASSERT_EQ(st.v[0].nsteps, 12);
    dnp_stories_free(&st);
    return 0;
}

/* A catch that throws, caught by a try of the same method: the callbacks alone
 * cannot tell it from a throw caught inside the catch; the agent's Details
 * (depth 1 for the next throw) say the first catch was left. */
TEST(stories_catch_abandoned_by_depth) {
    seq s = {.n = 0};
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(&s, 1, DNP_EV_ExceptionDetails, OBJ1, 1);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ2, 0); /* in the catch */
    add(&s, 1, DNP_EV_ExceptionDetails, OBJ2, 2);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ2);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1 + 8, 0); /* later, elsewhere */
    add(&s, 1, DNP_EV_ExceptionDetails, OBJ1 + 8, 1);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 3);
    ASSERT_EQ(st.v[0].fate, EXC_ABANDONED);
    ASSERT_EQ(st.v[0].ended_by, 2);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].parent, 1);
    ASSERT_EQ(st.v[1].parent_phase, EXC_CATCH);
    ASSERT_EQ(st.v[2].parent, 0);
    ASSERT_EQ(st.v[2].fate, EXC_OPEN);
    dnp_stories_free(&st);
    return 0;
}

/* throw; in a catch: the same object again ends the first story as rethrown. */
TEST(stories_rethrow) {
    seq s = {.n = 0};
    in_catch_of_a(&s);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[0].fate, EXC_RETHROWN);
    ASSERT_EQ(st.v[0].ended_by, 2);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].rethrow_of, 1);
    ASSERT_EQ(st.v[1].parent, 0);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* ExceptionDispatchInfo.Throw(e) in a catch (Parallel.For's workers, the
 * framework's rethrow that keeps the trace): the same object's search goes
 * through ExceptionDispatchInfo's frames (F_B) first, then reaches the catch's
 * method with no catcher on the way: the catch is left by a rethrow, not
 * abandoned to a nested exception. */
TEST(stories_rethrow_dispatch) {
    seq s = {.n = 0};
    in_catch_of_a(&s);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    for (int k = 0; k < 2; k++) { /* ExceptionDispatchInfo::Throw, twice */
        add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_B, 0);
        add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    }
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    for (int k = 0; k < 2; k++) {
        add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_B, 0);
        add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    }
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[0].fate, EXC_RETHROWN);
    ASSERT_EQ(st.v[0].ended_by, 2);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].rethrow_of, 1);
    ASSERT_EQ(st.v[1].parent, 0);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* The same object thrown again by a deeper frame called from its catch (an
 * await continuation run inline by the catch rethrows it through
 * ExceptionDispatchInfo) and caught there: the first catch goes on. */
TEST(stories_same_object_deeper) {
    seq s = {.n = 0};
    in_catch_of_a(&s);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0); /* deeper than F_A's catch */
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0); /* the first catch ends */
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[0].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].parent, 1);
    ASSERT_EQ(st.v[1].parent_phase, EXC_CATCH);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* Nonsense is counted, never fatal. */
TEST(stories_unexpected) {
    seq s = {.n = 0};
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 1);
    ASSERT_EQ(st.unexpected, 3);
    ASSERT_EQ(st.v[0].fate, EXC_OPEN);
    dnp_stories_free(&st);
    return 0;
}

static void details(seq *s, uint32_t thread, uint64_t obj, uint64_t depth, uint64_t flags) {
    add(s, thread, DNP_EV_ExceptionDetails, obj, depth);
    s->ev[s->n - 1].v[5] = flags;
}

/* A throw no catch matches (the first pass ends with no catcher), whose finally
 * throws; each up to the catch of the second, in F_A. */
static void replaced_prefix(seq *s) {
    add(s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    add(s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0); /* no catcher */
    add(s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionUnwindFinallyEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionThrown, OBJ2, 0); /* in the finally */
    add(s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ2);
    add(s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
}

/* issue 11: try { try { throw A; } finally { throw B; } } catch (B) {}: B
 * replaced A, whose story ends there; a later throw is nobody's child. */
TEST(stories_replaced_in_finally) {
    seq s = {.n = 0};
    replaced_prefix(&s);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1 + 8, 0); /* later, unrelated */
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ1 + 8);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 3);
    ASSERT_EQ(st.v[0].fate, EXC_ABANDONED);
    ASSERT_EQ(st.v[0].no_catcher, 1);
    ASSERT_EQ(st.v[0].ended_by, 2);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[1].parent, 1);
    ASSERT_EQ(st.v[2].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[2].parent, 0);
    ASSERT_EQ(st.unexpected, 0);
    char buf[512];
    ASSERT_CONTAINS(dnp_story_fate_text(&st.v[0], &st, buf, sizeof buf), "replaced by #2");
    dnp_stories_free(&st);

    /* The same when the trace ends right after B's catch. */
    seq e = {.n = 0};
    replaced_prefix(&e);
    ASSERT_EQ(build(&e, 1, &st), 0);
    ASSERT_EQ(st.v[0].fate, EXC_ABANDONED);
    dnp_stories_free(&st);
    return 0;
}

/* ... but B caught by a try inside the finally: the finally goes on, and A. */
TEST(stories_caught_inside_finally) {
    seq s = {.n = 0};
    replaced_prefix(&s);
    add(&s, 1, DNP_EV_ExceptionUnwindFinallyLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[0].fate, EXC_OPEN);
    ASSERT_EQ(st.v[0].no_catcher, 1);
    ASSERT_EQ(st.v[0].unwound, 1);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* throw; after a GC moved the object: a new ObjectID, which the agent's
 * Details say is the catch's object (EXC_DETAIL_SAME_AS_CATCH). */
TEST(stories_rethrow_moved) {
    seq s = {.n = 0};
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0);
    details(&s, 1, OBJ1, 1, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ1);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ2, 0); /* OBJ1, moved */
    details(&s, 1, OBJ2, 2, EXC_DETAIL_KEPT_TRACE | EXC_DETAIL_SAME_AS_CATCH);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ2);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[0].fate, EXC_RETHROWN);
    ASSERT_EQ(st.v[0].ended_by, 2);
    ASSERT_EQ(st.v[1].rethrow_of, 1);
    ASSERT_EQ(st.v[1].parent, 0);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* A fresh exception at the address of one caught long before (a GC freed and
 * reused it) is not a rethrow of it. */
TEST(stories_address_reused) {
    seq s = {.n = 0};
    across(&s, 1, OBJ1);
    s.ev[s.n++] = s.ev[0];
    details(&s, 1, OBJ1, 1, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 2);
    ASSERT_EQ(st.v[1].rethrow_of, 0);
    dnp_stories_free(&st);
    return 0;
}

/* ---- streamed: the same stories as from the loaded trace ---- */

#include <stdio.h>
#include <unistd.h>

#include "synth.h"

static void ev(synth *w, uint32_t th, uint64_t *t, uint16_t kind, uint64_t a, uint64_t b, uint64_t name) {
    uint64_t v[DNP_MAX_VALUES] = {0};
    if (kind == DNP_EV_ExceptionThrown) {
        v[0] = a; /* object, class, class name */
        v[1] = 0x99;
        v[2] = name;
    } else if (kind == DNP_EV_ExceptionCatcherEnter) {
        v[0] = a, v[1] = name, v[2] = b, v[3] = 0x99, v[4] = 0;
    } else if (kind == DNP_EV_ExceptionDetails) {
        v[0] = a, v[1] = name, v[2] = 0x80131500, v[3] = 0, v[4] = b, v[5] = EXC_DETAIL_KEPT_TRACE * (b == 1 && a == OBJ2);
    } else if (dnp_events[kind].nvalues >= 2) {
        v[0] = a, v[1] = name;
    }
    *t += 100;
    synth_event(w, th, *t, (dnp_event_kind)kind, v);
}

/* Two threads, each writing its own chunks (file order is not time order),
 * and an exception thrown again on the second after its catch ended on the
 * first: `print --exceptions` and `report --exceptions` stream, and must tell
 * the same stories as from the loaded trace. */
TEST(stories_streamed_same) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-stories-%d.trace", (int)getpid());
    synth *w = synth_open(path, 4242, "stories");
    ASSERT_NE(w, NULL);
    uint64_t type = synth_string(w, "Scenarios.StoryException"), fa = synth_string(w, "App::A"),
             fm = synth_string(w, "App::Main"), msg = synth_string(w, "boom");
    synth_thread(w, 1, 101);
    synth_thread(w, 2, 102);
    uint64_t t1 = 0, t2 = 50;
    for (int round = 0; round < 50; round++) {
        uint64_t obj = OBJ1 + (uint64_t)round * 64;
        for (uint32_t th = 1; th <= 2; th++) {
            uint64_t *t = th == 1 ? &t1 : &t2;
            ev(w, th, t, DNP_EV_ExceptionThrown, obj + th, 0, type);
            ev(w, th, t, DNP_EV_ExceptionDetails, obj + th, 1, msg);
            ev(w, th, t, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0, fa);
            ev(w, th, t, DNP_EV_ExceptionSearchFunctionLeave, 0, 0, 0);
            ev(w, th, t, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0, fm);
            ev(w, th, t, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0, fm);
            ev(w, th, t, DNP_EV_ExceptionSearchFunctionLeave, 0, 0, 0);
            ev(w, th, t, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0, fa);
            ev(w, th, t, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0, 0);
            ev(w, th, t, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0, fm);
            ev(w, th, t, DNP_EV_ExceptionCatcherEnter, F_MAIN, obj + th, fm);
            ev(w, th, t, DNP_EV_ExceptionCatcherLeave, 0, 0, 0);
        }
    }
    /* Thread 1's object, thrown again on thread 2 (stack trace kept). */
    t2 = t1 + 1000;
    ev(w, 2, &t2, DNP_EV_ExceptionThrown, OBJ1 + 49 * 64 + 1, 0, type);
    uint64_t v[DNP_MAX_VALUES] = {OBJ1 + 49 * 64 + 1, msg, 0x80131500, 0, 1, EXC_DETAIL_KEPT_TRACE};
    synth_event(w, 2, t2 += 100, DNP_EV_ExceptionDetails, v);
    ASSERT_EQ(synth_close(w, 1), 0);

    char err[256];
    dnp_trace *t = NULL;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    dnp_stories whole, streamed;
    ASSERT_EQ(dnp_stories_build(t, &whole), 0);
    dnp_trace_stream *st = NULL;
    dnp_trace *none = NULL;
    unsetenv("DNPROF_NO_STREAM");
    ASSERT_EQ(dnp_stories_read(path, 1, &streamed, &st, &none, err, sizeof err), 0);
    ASSERT_NE(st, NULL);
    ASSERT_EQ(none, NULL);
    ASSERT_EQ(whole.n, 101);
    ASSERT_EQ(streamed.n, whole.n);
    for (size_t i = 0; i < whole.n; i++) {
        const dnp_story *a = &whole.v[i], *b = &streamed.v[i];
        ASSERT_EQ(a->id, b->id);
        ASSERT_EQ(a->thread, b->thread);
        ASSERT_EQ(a->t_thrown, b->t_thrown);
        ASSERT_EQ(a->t_end, b->t_end);
        ASSERT_EQ(a->fate, b->fate);
        ASSERT_EQ(a->rethrow_of, b->rethrow_of);
        ASSERT_STREQ(a->type, b->type);
        ASSERT_STREQ(a->message, b->message);
        ASSERT_STREQ(a->catcher ? a->catcher : "-", b->catcher ? b->catcher : "-");
        ASSERT_EQ(a->nsteps, b->nsteps);
        for (size_t k = 0; k < a->nsteps; k++) {
            ASSERT_EQ(a->steps[k].kind, b->steps[k].kind);
            ASSERT_EQ(a->steps[k].time_ns, b->steps[k].time_ns);
            ASSERT_STREQ(a->steps[k].function ? a->steps[k].function : "", b->steps[k].function ? b->steps[k].function : "");
        }
    }
    /* The last one is thread 1's last exception thrown again. */
    ASSERT_EQ(streamed.v[100].thread, 2);
    ASSERT_NE(streamed.v[100].rethrow_of, 0);
    ASSERT_EQ(streamed.v[streamed.v[100].rethrow_of - 1].thread, 1);
    dnp_stories_free(&whole);
    dnp_stories_free(&streamed);
    dnp_trace_stream_close(st);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

/* catch { try { throw B; } catch {} throw; }: B, caught inside the catch, did
 * not replace A, which the `throw;` rethrows. */
TEST(stories_rethrow_after_inner_catch) {
    seq s = {.n = 0};
    in_catch_of_a(&s);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ2, 0); /* B, inside the catch */
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ2);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0); /* throw; */
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0);
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 3);
    ASSERT_EQ(st.v[0].fate, EXC_RETHROWN);
    ASSERT_EQ(st.v[0].ended_by, 3);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[2].rethrow_of, 1);
    ASSERT_EQ(st.v[2].fate, EXC_CAUGHT);
    ASSERT_EQ(st.unexpected, 0);
    dnp_stories_free(&st);
    return 0;
}

/* `throw;` in a catch of A, caught by another catch of A, whose catch runs an
 * await continuation inline that throws the same object again and catches it
 * deeper (HttpClient.GetStringAsync's failure awaited by its caller): the
 * continuation's catch ends, then A's second catch, which ends the first,
 * left by its rethrow; no event is out of place. */
TEST(stories_rethrow_then_deeper) {
    seq s = {.n = 0};
    in_catch_of_a(&s);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0); /* throw; from A's catch */
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_A, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_A, OBJ1);
    add(&s, 1, DNP_EV_ExceptionThrown, OBJ1, 0); /* the awaiting caller, run inline from that catch */
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_B, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchCatcherFound, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_B, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
    add(&s, 1, DNP_EV_ExceptionUnwindFunctionEnter, F_MAIN, 0);
    add(&s, 1, DNP_EV_ExceptionCatcherEnter, F_MAIN, OBJ1);
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0); /* MAIN's catch */
    add(&s, 1, DNP_EV_ExceptionCatcherLeave, 0, 0); /* A's second catch */
    dnp_stories st;
    ASSERT_EQ(build(&s, 1, &st), 0);
    ASSERT_EQ(st.n, 3);
    ASSERT_EQ(st.unexpected, 0);
    ASSERT_EQ(st.v[0].fate, EXC_RETHROWN);
    ASSERT_EQ(st.v[1].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[2].fate, EXC_CAUGHT);
    ASSERT_EQ(st.v[2].parent, 2);
    ASSERT(st.v[1].t_end > st.v[2].t_end); /* A's second catch outlived MAIN's */
    dnp_stories_free(&st);
    return 0;
}
