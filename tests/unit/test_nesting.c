/* test_nesting.c: per-thread nesting levels (trace/nesting.h). */
#include "nesting.h"
#include "test.h"

static int apply(dnp_nest_state *s, dnp_event_kind k) {
    uint64_t v[DNP_MAX_VALUES] = {0};
    return dnp_nest_apply(s, (uint16_t)k, v);
}

static int transition(dnp_nest_state *s, dnp_event_kind k, int is_return) {
    uint64_t v[DNP_MAX_VALUES] = {0x1234, 0, (uint64_t)is_return};
    return dnp_nest_apply(s, (uint16_t)k, v);
}

TEST(nesting_pairs) {
    ASSERT_EQ(dnp_nest_pair(DNP_EV_ClassLoadFinished), DNP_EV_ClassLoadStarted);
    ASSERT_EQ(dnp_nest_pair(DNP_EV_AssemblyLoadFinished), DNP_EV_AssemblyLoadStarted);
    ASSERT_EQ(dnp_nest_pair(DNP_EV_RuntimeSuspendAborted), DNP_EV_RuntimeSuspendStarted);
    ASSERT_EQ(dnp_nest_pair(DNP_EV_GarbageCollectionFinished), DNP_EV_GarbageCollectionStarted);
    ASSERT_EQ(dnp_nest_pair(DNP_EV_ExceptionCatcherLeave), DNP_EV_ExceptionCatcherEnter);
    ASSERT_EQ(dnp_nest_pair(DNP_EV_DynamicMethodJITCompilationFinished), DNP_EV_DynamicMethodJITCompilationStarted);
    ASSERT_EQ(dnp_nest_pair(DNP_EV_ClassLoadStarted), -1);
    /* Every FINISH has a START to pair with. */
    for (int k = 0; k < DNP_EV_COUNT; k++)
        if (dnp_events[k].nest == DNP_NEST_FINISH)
            ASSERT_GE(dnp_nest_pair((uint16_t)k), 0);
    return 0;
}

TEST(nesting_assembly_load) {
    dnp_nest_state s = {0};
    ASSERT_EQ(apply(&s, DNP_EV_AssemblyLoadStarted), 0);
    ASSERT_EQ(apply(&s, DNP_EV_ModuleLoadStarted), 1);
    ASSERT_EQ(apply(&s, DNP_EV_ModuleLoadFinished), 1);
    ASSERT_EQ(apply(&s, DNP_EV_ModuleAttachedToAssembly), 1);
    ASSERT_EQ(apply(&s, DNP_EV_AssemblyLoadFinished), 0);
    ASSERT_EQ(s.depth, 0);
    ASSERT_EQ(s.unmatched, 0);
    return 0;
}

TEST(nesting_catching_frame_resumes) {
    /* As CoreCLR raises them for a throw caught one frame up. */
    dnp_nest_state s = {0};
    apply(&s, DNP_EV_ExceptionThrown);
    apply(&s, DNP_EV_ExceptionSearchFunctionEnter);
    apply(&s, DNP_EV_ExceptionSearchFunctionLeave);
    apply(&s, DNP_EV_ExceptionSearchFunctionEnter);
    apply(&s, DNP_EV_ExceptionSearchCatcherFound);
    apply(&s, DNP_EV_ExceptionSearchFunctionLeave);
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionUnwindFunctionEnter), 0);
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionUnwindFinallyEnter), 1);
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionUnwindFinallyLeave), 1);
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionUnwindFunctionLeave), 0);
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionUnwindFunctionEnter), 0); /* the catching frame */
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionCatcherEnter), 1);
    ASSERT_EQ(apply(&s, DNP_EV_ExceptionCatcherLeave), 0);
    ASSERT_EQ(s.depth, 0);
    ASSERT_EQ(s.unmatched, 0);
    return 0;
}

TEST(nesting_transitions) {
    dnp_nest_state s = {0};
    ASSERT_EQ(transition(&s, DNP_EV_ManagedToUnmanagedTransition, 0), 0);  /* P/Invoke */
    ASSERT_EQ(transition(&s, DNP_EV_UnmanagedToManagedTransition, 0), 1);  /* callback */
    ASSERT_EQ(transition(&s, DNP_EV_ManagedToUnmanagedTransition, 1), 1);  /* it returns */
    ASSERT_EQ(transition(&s, DNP_EV_UnmanagedToManagedTransition, 1), 0);  /* back in managed */
    ASSERT_EQ(s.depth, 0);
    ASSERT_EQ(s.unmatched, 0);
    return 0;
}

TEST(nesting_never_negative) {
    dnp_nest_state s = {0};
    ASSERT_EQ(apply(&s, DNP_EV_ClassLoadFinished), 0);
    ASSERT_EQ(s.depth, 0);
    ASSERT_EQ(s.unmatched, 1);
    /* A FINISH closes what was left open above its START. */
    apply(&s, DNP_EV_AssemblyLoadStarted);
    apply(&s, DNP_EV_ClassLoadStarted);
    ASSERT_EQ(apply(&s, DNP_EV_AssemblyLoadFinished), 0);
    ASSERT_EQ(s.depth, 0);
    return 0;
}

static int exc(dnp_nest_state *s, dnp_event_kind k, uint64_t fn, uint64_t obj) {
    uint64_t v[DNP_MAX_VALUES] = {0};
    v[0] = k == DNP_EV_ExceptionThrown ? obj : fn;
    if (k == DNP_EV_ExceptionCatcherEnter)
        v[2] = obj;
    return dnp_nest_apply(s, (uint16_t)k, v);
}

/* issue 11: `throw;` leaves its catch with no CatcherLeave; the levels it
 * opened close when the rethrown exception is caught, so print's indentation
 * does not drift by one level per rethrow. */
TEST(nesting_rethrow_closes) {
    dnp_nest_state s = {0};
    for (int i = 0; i < 1000; i++) {
        uint64_t obj = 0x7000 + (uint64_t)i * 16;
        exc(&s, DNP_EV_ExceptionThrown, 0, obj);
        exc(&s, DNP_EV_ExceptionSearchFunctionEnter, 0x100, 0);
        exc(&s, DNP_EV_ExceptionSearchCatcherFound, 0x100, 0);
        exc(&s, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
        exc(&s, DNP_EV_ExceptionUnwindFunctionEnter, 0x100, 0);
        ASSERT_EQ(exc(&s, DNP_EV_ExceptionCatcherEnter, 0x100, obj), 1);
        ASSERT_EQ(exc(&s, DNP_EV_ExceptionThrown, 0, obj), 2); /* throw; */
        exc(&s, DNP_EV_ExceptionSearchFunctionEnter, 0x100, 0);
        exc(&s, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
        exc(&s, DNP_EV_ExceptionSearchFunctionEnter, 0x200, 0);
        exc(&s, DNP_EV_ExceptionSearchCatcherFound, 0x200, 0);
        exc(&s, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
        exc(&s, DNP_EV_ExceptionUnwindFunctionEnter, 0x100, 0);
        exc(&s, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0);
        exc(&s, DNP_EV_ExceptionUnwindFunctionEnter, 0x200, 0);
        exc(&s, DNP_EV_ExceptionCatcherEnter, 0x200, obj);
        ASSERT_EQ(exc(&s, DNP_EV_ExceptionCatcherLeave, 0, 0), 0);
    }
    ASSERT_EQ(s.depth, 0);
    ASSERT_EQ(s.unmatched, 0);
    ASSERT_EQ(s.skipped, 0);
    return 0;
}

/* The stray UnwindFunctionLeave that ends a first pass with no catcher closes
 * that pass's last SearchFunctionEnter, which gets no Leave. */
TEST(nesting_no_catcher_pass) {
    dnp_nest_state s = {0};
    exc(&s, DNP_EV_ExceptionThrown, 0, 0x7000);
    exc(&s, DNP_EV_ExceptionSearchFunctionEnter, 0x100, 0);
    exc(&s, DNP_EV_ExceptionSearchFunctionLeave, 0, 0);
    ASSERT_EQ(exc(&s, DNP_EV_ExceptionSearchFunctionEnter, 0x200, 0), 0);
    ASSERT_EQ(exc(&s, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0), 0);
    ASSERT_EQ(exc(&s, DNP_EV_ExceptionUnwindFunctionEnter, 0x100, 0), 0);
    ASSERT_EQ(exc(&s, DNP_EV_ExceptionUnwindFunctionLeave, 0, 0), 0);
    ASSERT_EQ(s.depth, 0);
    ASSERT_EQ(s.unmatched, 0);
    ASSERT_EQ(s.skipped, 0);
    return 0;
}
