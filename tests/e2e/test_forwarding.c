/* test_forwarding.c: type forwarding (docs/design-notes.md#type-forwarding). ForwardClient refers to
 * Fwd.Widget in ForwardLib; at run time ForwardLib only forwards it to
 * ForwardTarget. The runtime reports the class in its real home, and the agent
 * names it and its methods from there. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

TEST(e2e_type_forwarding) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_type_forwarding"), 0);
    const char *dll = e2e_env("DNPROF_FORWARD_CLIENT");
    ASSERT_NE(dll, NULL);
    ASSERT_EQ(e2e_run_dll(&r, dll, NULL, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int forwarded = strcmp(out, "Fwd.Widget from ForwardTarget: ForwardTarget\n") == 0;
    if (!forwarded)
        e2e_show_file("stdout", r.out);
    free(out);
    ASSERT(forwarded);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    long lib = e2e_expect(t, DNP_EV_AssemblyLoadFinished, "ForwardLib", "Forward");
    long target = e2e_expect(t, DNP_EV_AssemblyLoadFinished, "ForwardTarget", "Forward");
    long cls = e2e_expect(t, DNP_EV_ClassLoadFinished, "Fwd.Widget", "Fwd");
    long where = e2e_expect(t, DNP_EV_JITCompilationFinished, "Fwd.Widget::Where", "Fwd");
    ASSERT_GE(lib, 0);
    ASSERT_GE(target, 0);
    ASSERT_GE(cls, 0);
    ASSERT_GE(where, 0);
    /* The class loads once its real home has: the forwarder is followed first. */
    ASSERT_LT(lib, target);
    ASSERT_LT(target, cls);
    dnp_trace_free(t);
    return 0;
}
