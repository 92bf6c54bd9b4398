/* test_calls.c: the enter/leave filter (calls_filter_wants, src/agent/calls.c). */
#include "calls.h"
#include "test.h"

TEST(calls_filter_default_is_the_programs_own_code) {
    ASSERT(calls_filter_wants("MyApp.Program::Main", 0, "", "", 0));
    ASSERT(!calls_filter_wants("System.String::Concat", 0, "", "", 0));
    ASSERT(!calls_filter_wants("Microsoft.Extensions.Hosting.Host::Run", 0, "", "", 0));
    ASSERT(!calls_filter_wants("Internal.Runtime.X::Y", 0, "", "", 0));
    /* a module of the shared framework, whatever its namespace */
    ASSERT(!calls_filter_wants("Foo.Bar::Baz", 0, "", "", 1));
    /* --all-code: everything */
    ASSERT(calls_filter_wants("System.String::Concat", 1, "", "", 1));
    return 0;
}

TEST(calls_filter_globs) {
    ASSERT(calls_filter_wants("MyApp.Orders::Place", 0, "MyApp.*", "", 0));
    ASSERT(!calls_filter_wants("Other.Orders::Place", 0, "MyApp.*", "", 0));
    ASSERT(calls_filter_wants("Other.Orders::Place", 0, "MyApp.*, *::Place", "", 0));
    ASSERT(!calls_filter_wants("MyApp.Logging.Log::Write", 0, "MyApp.*", "MyApp.Logging.*", 0));
    ASSERT(!calls_filter_wants("MyApp.Program::Main", 0, "", "*::Main", 0));
    ASSERT(calls_filter_wants("System.Linq.Enumerable::Where", 0, "System.Linq.*", "", 1));
    ASSERT(calls_filter_wants("A.B::C", 0, "A.?::C", "", 0));
    ASSERT(!calls_filter_wants("A.BB::C", 0, "A.?::C", "", 0));
    ASSERT(calls_filter_wants("A.B::C", 0, "*", "", 0));
    ASSERT(!calls_filter_wants("A.B::C", 0, " , ", "", 0));
    return 0;
}

/* ---- the hooks' cost taken out of the call trees (calltree.c) ---- */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "calltree.h"
#include "synth.h"

static void overhead(synth *s, uint64_t t, uint64_t inner_ps, uint64_t outer_ps, uint64_t wait_ns) {
    uint64_t v[DNP_NV_CallsOverhead] = {1001, inner_ps, outer_ps, wait_ns};
    synth_event(s, 1, t, DNP_EV_CallsOverhead, v);
}

static void node(synth *s, uint64_t t, uint64_t n, uint64_t parent, uint64_t func, uint64_t name, uint64_t calls,
                 uint64_t incl, uint64_t excl) {
    uint64_t v[DNP_NV_CallNode] = {1001, n, parent, func, name, calls, incl, excl, 0};
    synth_event(s, 1, t, DNP_EV_CallNode, v);
}

/* Main > A (100 calls) > B (200 calls), raw totals from the agent. The hooks
 * cost 5 ns inside and 10 ns outside per call until B's first 100 calls were
 * written, then 7 ns inside: each call is charged the cost of its interval. */
TEST(calls_tree_hooks_cost_taken_out) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-calls-%d.trace", (int)getpid());
    synth *s = synth_open(path, 4242, "dotnet app.dll");
    ASSERT_NE(s, NULL);
    uint64_t main_ = synth_string(s, "Ns.P::Main"), a = synth_string(s, "Ns.P::A"), b = synth_string(s, "Ns.P::B");
    synth_thread(s, 1, 1001);
    overhead(s, 10, 5000, 10000, 0);
    node(s, 20, 3, 2, 0x3000, b, 100, 2000, 2000);
    overhead(s, 30, 7000, 10000, 123);
    node(s, 40, 1, 0, 0x1000, main_, 1, 11000, 2000);
    node(s, 41, 2, 1, 0x2000, a, 100, 9000, 5000);
    node(s, 42, 3, 2, 0x3000, b, 200, 4000, 4000);
    ASSERT_EQ(synth_close(s, 1), 0);
    dnp_trace *t = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    dnp_calltree *ct = NULL;
    ASSERT_EQ(dnp_calltree_build(t, &ct, err, sizeof err), 0);
    ASSERT_EQ(ct->nthreads, 1);
    const dnp_ct_tree *tr = &ct->threads[0];
    ASSERT_EQ(tr->nnodes, 4);
    uint64_t self[4] = {0}, total[4] = {0};
    for (uint32_t i = 1; i < tr->nnodes; i++) {
        int k = tr->nodes[i].func == 0x1000 ? 1 : tr->nodes[i].func == 0x2000 ? 2 : 3;
        self[k] = tr->nodes[i].self_ns;
        total[k] = tr->nodes[i].total_ns;
    }
    /* B: 100 x 5 + 100 x 7 inside */
    ASSERT_EQ(total[3], 4000 - 1200);
    ASSERT_EQ(self[3], 4000 - 1200);
    /* A: 100 x 7 inside; 200 x 10 outside its calls of B; and B's whole cost below */
    ASSERT_EQ(self[2], 5000 - 700 - 2000);
    ASSERT_EQ(total[2], 9000 - 700 - (1200 + 2000));
    /* Main: 7 inside, 100 x 10 outside its calls of A; A's and B's below */
    ASSERT_EQ(self[1], 2000 - 7 - 1000);
    ASSERT_EQ(total[1], 11000 - 7 - (700 + 1000 + 1200 + 2000));
    ASSERT_EQ(total[1], self[1] + total[2]);
    ASSERT_EQ(total[2], self[2] + total[3]);
    ASSERT_EQ(tr->nodes[0].total_ns, total[1]);
    ASSERT_EQ(ct->hook_calls, 301);
    ASSERT_EQ((uint64_t)ct->hook_inner_ns, 1907);
    ASSERT_EQ((uint64_t)ct->hook_outer_ns, 3010);
    ASSERT_EQ(ct->cpu_wait_ns, 123);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(path);
    return 0;
}
