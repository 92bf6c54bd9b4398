/* test_sample.c: the README's quick start, samples/hello under dnprof, shows what
 * the sample says it does. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

TEST(e2e_sample_hello) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_sample_hello"), 0);
    const char *dll = e2e_env("DNPROF_SAMPLE_HELLO");
    ASSERT_NE(dll, NULL);
    ASSERT_EQ(e2e_run_dll(&r, dll, NULL, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int said = strstr(out, "hello, dnprof\n") != NULL && strstr(out, "caught: ") != NULL;
    free(out);
    ASSERT(said);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Program+Greeter", "Hello"), 0);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Pair<System.String, System.Int32>", "Hello"), 0);
    int thrown = 0, named = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *ev = &t->events[i];
        const char *name = e2e_field_name(t, ev, 1);
        if (ev->kind == DNP_EV_ExceptionThrown && name != NULL && strcmp(name, "System.InvalidOperationException") == 0)
            thrown = 1;
        if (ev->kind == DNP_EV_ThreadNameChanged && name != NULL && strcmp(name, "hello-worker") == 0)
            named = 1;
    }
    if (!thrown)
        fprintf(stderr, "e2e: no ExceptionThrown of System.InvalidOperationException\n");
    if (!named)
        fprintf(stderr, "e2e: no ThreadNameChanged to \"hello-worker\"\n");
    ASSERT(thrown && named);
    ASSERT_GE(e2e_count(t, DNP_EV_GarbageCollectionStarted), 1);
    ASSERT_GE(e2e_count(t, DNP_EV_GarbageCollectionFinished), 1);
    /* The log a person reads is indented right: every thread back at level 0. */
    char why[512] = "";
    int nested = e2e_check_nesting(t, why, sizeof why);
    if (nested != 0)
        fprintf(stderr, "e2e: samples/hello: %s\n", why);
    ASSERT_EQ(nested, 0);
    dnp_trace_free(t);
    return 0;
}
