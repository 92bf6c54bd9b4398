/* test_names.c: the names the agent gives to what the Scenarios program loads. */
#include <string.h>

#include "e2e.h"
#include "test.h"

/* Runs scenario under dnprof and checks that it exited 0. */
static int run_ok(e2e_run *r, const char *test, const char *scenario) {
    if (e2e_setup(r, test) != 0 || e2e_run_scenario(r, scenario, NULL) != 0)
        return -1;
    if (r->status != 0) {
        fprintf(stderr, "e2e: scenario %s under dnprof exited with %d\n", scenario, r->status);
        e2e_show_file("stdout", r->out);
        e2e_show_file("stderr", r->err);
        return -1;
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

TEST(e2e_own_assembly) {
    e2e_run r;
    ASSERT_EQ(run_ok(&r, "e2e_own_assembly", "hello"), 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);

    long a = e2e_expect(t, DNP_EV_AssemblyLoadFinished, "Scenarios", "Scenarios");
    ASSERT_GE(a, 0);
    ASSERT_EQ(e2e_field(&t->events[a], 1), 0); /* S_OK */

    long m = -1;
    for (size_t i = 0; i < t->nevents && m < 0; i++) {
        const char *name = e2e_field_name(t, &t->events[i], 0);
        if (t->events[i].kind == DNP_EV_ModuleLoadFinished && name != NULL && ends_with(name, "/Scenarios.dll"))
            m = (long)i;
    }
    if (m < 0)
        e2e_expect(t, DNP_EV_ModuleLoadFinished, ".../Scenarios.dll", "Scenarios");
    ASSERT_GE(m, 0);
    ASSERT_EQ(e2e_field_name(t, &t->events[m], 0)[0], '/');
    ASSERT_EQ(e2e_field(&t->events[m], 1), 0);
    dnp_trace_free(t);
    return 0;
}

/* The runtime raises no ClassLoad callbacks for array types (not one among the
 * hundreds of classes a run loads), so arrays are looked for where their class
 * IDs do come: the allocations of the "alloc" family. */
TEST(e2e_class_names) {
    static const char *const classes[][2] = {
        {"Scenarios.Outer+Inner", "Outer"},
        {"Scenarios.Box<Scenarios.Outer>", "Box"},
        {"System.Collections.Generic.Dictionary<System.String, System.Int32>", "Dictionary"},
    };
    static const char *const arrays[] = {"System.Int32[]", "System.String[,]", "Scenarios.Outer[]"};
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_class_names"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "classes", "default,alloc"), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    int missing = 0;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        long at = e2e_expect(t, DNP_EV_ClassLoadFinished, classes[i][0], classes[i][1]);
        if (at >= 0 && e2e_field(&t->events[at], 1) != 0) {
            fprintf(stderr, "e2e: ClassLoadFinished %s has status 0x%llx\n", classes[i][0],
                    (unsigned long long)e2e_field(&t->events[at], 1));
            at = -1;
        }
        missing += at < 0;
    }
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        long at = -1;
        for (size_t j = 0; j < t->nevents && at < 0; j++) {
            const char *name = e2e_field_name(t, &t->events[j], 1);
            if (t->events[j].kind == DNP_EV_ObjectAllocated && name != NULL && strcmp(name, arrays[i]) == 0)
                at = (long)j;
        }
        if (at < 0)
            fprintf(stderr, "e2e: no ObjectAllocated of class \"%s\" among %zu\n", arrays[i],
                    e2e_count(t, DNP_EV_ObjectAllocated));
        missing += at < 0;
    }
    dnp_trace_free(t);
    ASSERT_EQ(missing, 0);
    return 0;
}

TEST(e2e_jit_known_method) {
    e2e_run r;
    ASSERT_EQ(run_ok(&r, "e2e_jit_known_method", "jit"), 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);

    long s = e2e_expect(t, DNP_EV_JITCompilationStarted, "Scenarios.JitTarget::KnownMethod", "JitTarget");
    ASSERT_GE(s, 0);
    const dnp_trace_event *start = &t->events[s];
    long f = -1;
    for (size_t i = (size_t)s + 1; i < t->nevents && f < 0; i++)
        if (t->events[i].kind == DNP_EV_JITCompilationFinished && t->events[i].thread == start->thread &&
            e2e_field(&t->events[i], 0) == e2e_field(start, 0))
            f = (long)i;
    if (f < 0)
        fprintf(stderr, "e2e: no JITCompilationFinished for KnownMethod (function 0x%llx) on thread %u\n",
                (unsigned long long)e2e_field(start, 0), start->thread);
    ASSERT_GE(f, 0);
    const char *fname = e2e_field_name(t, &t->events[f], 0);
    ASSERT_STREQ(fname, "Scenarios.JitTarget::KnownMethod");
    ASSERT_EQ(e2e_field(&t->events[f], 1), 0); /* S_OK */

    ASSERT_GE(e2e_expect(t, DNP_EV_JITCompilationStarted, "Scenarios.JitTarget::GenericMethod<System.Int32>", "GenericMethod"), 0);
    ASSERT_GE(e2e_expect(t, DNP_EV_JITCompilationFinished, "Scenarios.JitTarget::GenericMethod<System.Int32>", "GenericMethod"), 0);
    dnp_trace_free(t);
    return 0;
}

TEST(e2e_thread_names) {
    e2e_run r;
    ASSERT_EQ(run_ok(&r, "e2e_thread_names", "threads"), 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    ASSERT_GE(e2e_count(t, DNP_EV_ThreadCreated), 3);
    ASSERT_GE(e2e_count(t, DNP_EV_ThreadAssignedToOSThread), 3);

    int missing = 0;
    for (int w = 1; w <= 3; w++) {
        char name[32];
        snprintf(name, sizeof name, "dnprof-worker-%d", w);
        long ev = -1;
        for (size_t i = 0; i < t->nevents && ev < 0; i++) {
            const char *n = e2e_field_name(t, &t->events[i], 1);
            if (t->events[i].kind == DNP_EV_ThreadNameChanged && n != NULL && strcmp(n, name) == 0)
                ev = (long)i;
        }
        const dnp_trace_thread *named = NULL;
        for (size_t i = 0; i < t->nthreads && named == NULL; i++)
            if (t->threads[i].name != NULL && strcmp(t->threads[i].name, name) == 0)
                named = &t->threads[i];
        if (ev < 0)
            fprintf(stderr, "e2e: no ThreadNameChanged to \"%s\" (%zu ThreadNameChanged in all)\n", name,
                    e2e_count(t, DNP_EV_ThreadNameChanged));
        if (named == NULL)
            fprintf(stderr, "e2e: no thread of the trace is named \"%s\"\n", name);
        missing += ev < 0 || named == NULL;
    }
    if (missing) {
        fprintf(stderr, "  threads of the trace:\n");
        for (size_t i = 0; i < t->nthreads; i++)
            fprintf(stderr, "    %u tid %llu managed 0x%llx \"%s\"\n", t->threads[i].ordinal,
                    (unsigned long long)t->threads[i].os_tid, (unsigned long long)t->threads[i].managed_id,
                    t->threads[i].name != NULL ? t->threads[i].name : "(unnamed)");
    }
    dnp_trace_free(t);
    ASSERT_EQ(missing, 0);
    return 0;
}
