/* test_exceptions.c: an exception thrown in Level3, through Level2's finally and
 * Level1, caught in Exceptions: the two passes the runtime reports. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

/* The index of the first event of kind at or after from naming function name
 * (its first FUNCTION field), or -1 with a line. */
static long next_in(const dnp_trace *t, unsigned kind, const char *name, size_t from) {
    long at = e2e_find(t, kind, name, from);
    if (at < 0)
        fprintf(stderr, "e2e: no %s for %s after event %zu\n", dnp_events[kind].name, name, from);
    return at;
}

TEST(e2e_exceptions) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_exceptions"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "exceptions", NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int caught = strstr(out, "caught System.InvalidOperationException: thrown in Level3\n") != NULL;
    free(out);
    ASSERT(caught);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    long thrown = -1;
    for (size_t i = 0; i < t->nevents && thrown < 0; i++) {
        const char *name = e2e_field_name(t, &t->events[i], 1);
        if (t->events[i].kind == DNP_EV_ExceptionThrown && name != NULL &&
            strcmp(name, "System.InvalidOperationException") == 0)
            thrown = (long)i;
    }
    if (thrown < 0)
        fprintf(stderr, "e2e: no ExceptionThrown of System.InvalidOperationException among %zu\n",
                e2e_count(t, DNP_EV_ExceptionThrown));
    ASSERT_GE(thrown, 0);
    uint32_t thread = t->events[thrown].thread;

    /* First pass: the search, from the thrower up to the catcher. */
    long at = thrown;
    at = next_in(t, DNP_EV_ExceptionSearchFunctionEnter, "Scenarios.Program::Level3", (size_t)at);
    ASSERT_GE(at, 0);
    at = next_in(t, DNP_EV_ExceptionSearchFunctionEnter, "Scenarios.Program::Level2", (size_t)at);
    ASSERT_GE(at, 0);
    at = next_in(t, DNP_EV_ExceptionSearchFunctionEnter, "Scenarios.Program::Level1", (size_t)at);
    ASSERT_GE(at, 0);
    at = next_in(t, DNP_EV_ExceptionSearchCatcherFound, "Scenarios.Program::Exceptions", (size_t)at);
    ASSERT_GE(at, 0);
    /* Second pass: the unwind, running Level2's finally, then the catch. */
    at = next_in(t, DNP_EV_ExceptionUnwindFunctionEnter, "Scenarios.Program::Level3", (size_t)at);
    ASSERT_GE(at, 0);
    at = next_in(t, DNP_EV_ExceptionUnwindFinallyEnter, "Scenarios.Program::Level2", (size_t)at);
    ASSERT_GE(at, 0);
    at = next_in(t, DNP_EV_ExceptionUnwindFunctionEnter, "Scenarios.Program::Level1", (size_t)at);
    ASSERT_GE(at, 0);
    at = next_in(t, DNP_EV_ExceptionCatcherEnter, "Scenarios.Program::Exceptions", (size_t)at);
    ASSERT_GE(at, 0);
    ASSERT_STREQ(e2e_field_name(t, &t->events[at], 2), "System.InvalidOperationException");
    /* The same object, unless a collection moved it in between. */
    int collected = 0;
    for (long i = thrown; i < at; i++)
        collected |= t->events[i].kind == DNP_EV_GarbageCollectionStarted;
    if (!collected)
        ASSERT_EQ(e2e_field(&t->events[at], 1), e2e_field(&t->events[thrown], 0));
    ASSERT_EQ(t->events[at].thread, thread);
    long leave = -1;
    for (size_t i = (size_t)at + 1; i < t->nevents && leave < 0; i++)
        if (t->events[i].kind == DNP_EV_ExceptionCatcherLeave && t->events[i].thread == thread)
            leave = (long)i;
    ASSERT_GT(leave, at);
    dnp_trace_free(t);
    return 0;
}
