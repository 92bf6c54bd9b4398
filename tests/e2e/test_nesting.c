/* test_nesting.c: every Started has its Finished on the same thread. */
#include "e2e.h"
#include "test.h"

static int check_scenario(const char *test, const char *scenario) {
    e2e_run r;
    if (e2e_setup(&r, test) != 0 || e2e_run_scenario(&r, scenario, NULL) != 0)
        return -1;
    if (r.status != 0) {
        fprintf(stderr, "e2e: scenario %s exited with %d\n", scenario, r.status);
        e2e_show_file("stderr", r.err);
        return -1;
    }
    dnp_trace *t = e2e_load(r.trace);
    if (t == NULL)
        return -1;
    char why[512] = "";
    int rc = e2e_check_nesting(t, why, sizeof why);
    if (rc != 0)
        fprintf(stderr, "e2e: scenario %s: %s\n", scenario, why);
    dnp_trace_free(t);
    return rc;
}

TEST(e2e_nesting_balanced) {
    ASSERT_EQ(check_scenario("e2e_nesting_balanced.classes", "classes"), 0);
    ASSERT_EQ(check_scenario("e2e_nesting_balanced.alc", "alc"), 0);
    ASSERT_EQ(check_scenario("e2e_nesting_balanced.exceptions", "exceptions"), 0);
    ASSERT_EQ(check_scenario("e2e_nesting_balanced.threads", "threads"), 0);
    return 0;
}
