/* test_prettyname.c: compiler-generated method names shown as written. */
#include "prettyname.h"
#include "test.h"

static int check(const char *raw, const char *want, int rewritten) {
    char out[512];
    int r = dnp_pretty_name(raw, out, sizeof out);
    if (strcmp(out, want) != 0 || r != rewritten) {
        fprintf(stderr, "prettyname: '%s' -> '%s' (%d), want '%s' (%d)\n", raw, out, r, want, rewritten);
        return 1;
    }
    return 0;
}

TEST(prettyname_plain) {
    ASSERT_EQ(check("Scenarios.Program::Main", "Scenarios.Program::Main", 0), 0);
    ASSERT_EQ(check("System.Collections.Generic.Dictionary<System.String, System.Int32>::TryGetValue", "System.Collections.Generic.Dictionary<System.String, System.Int32>::TryGetValue", 0), 0);
    ASSERT_EQ(check("Scenarios.JitTarget::GenericMethod<System.Int32>", "Scenarios.JitTarget::GenericMethod<System.Int32>", 0), 0);
    ASSERT_EQ(check("Ns.Outer+Inner::.ctor", "Ns.Outer+Inner::.ctor", 0), 0);
    ASSERT_EQ(check("", "", 0), 0);
    ASSERT_EQ(check("<", "<", 0), 0);
    ASSERT_EQ(check("<>", "<>", 0), 0);
    ASSERT_EQ(check("Ns.C+<>c::.cctor", "Ns.C+<>c::.cctor", 0), 0);
    ASSERT_EQ(check("Ns.C+<>c__DisplayClass0_0::.ctor", "Ns.C+<>c__DisplayClass0_0::.ctor", 0), 0);
    return 0;
}

TEST(prettyname_async) {
    ASSERT_EQ(check("<Foo>d__3::MoveNext", "Foo (async)", 1), 0);
    ASSERT_EQ(check("Scenarios.Program+<Foo>d__3::MoveNext", "Scenarios.Program::Foo (async)", 1), 0);
    ASSERT_EQ(check("Ns.C+<LoadAsync>d__12<System.Int32>::MoveNext", "Ns.C::LoadAsync (async)", 1), 0);
    /* an async lambda, an async local function */
    ASSERT_EQ(check("Ns.C+<>c+<<Main>b__0_0>d::MoveNext", "lambda in Ns.C::Main (async)", 1), 0);
    ASSERT_EQ(check("Ns.C+<<Main>g__Fetch|0_1>d::MoveNext", "Fetch (local function in Ns.C::Main) (async)", 1), 0);
    /* the compiler's entry point of an async Main (or of top-level statements that await) */
    ASSERT_EQ(check("Program::<Main>", "Program::Main (entry point)", 1), 0);
    ASSERT_EQ(check("Ns.P::<Main>", "Ns.P::Main (entry point)", 1), 0);
    ASSERT_EQ(check("Program::<Main>$", "Program::Main", 1), 0);
    ASSERT_EQ(check("Ns.P::<Mains>", "Ns.P::<Mains>", 0), 0);
    return 0;
}

TEST(prettyname_iterator) {
    ASSERT_EQ(check("Ns.C+<Numbers>d__2::System.Collections.Generic.IEnumerator<System.Int32>.get_Current", "Ns.C::Numbers (iterator)", 1), 0);
    ASSERT_EQ(check("Ns.C+<Numbers>d__2::System.Collections.Generic.IEnumerable<System.Int32>.GetEnumerator", "Ns.C::Numbers (iterator)", 1), 0);
    ASSERT_EQ(check("Ns.C+<Numbers>d__2::.ctor", "Ns.C::Numbers (iterator)", 1), 0);
    ASSERT_EQ(check("Ns.C+<Numbers>d__2::System.Collections.IEnumerator.MoveNext", "Ns.C::Numbers (iterator)", 1), 0);
    return 0;
}

TEST(prettyname_lambda) {
    ASSERT_EQ(check("<Main>b__0_0", "lambda in Main", 1), 0);
    ASSERT_EQ(check("Scenarios.Program+<>c::<Main>b__0_0", "lambda in Scenarios.Program::Main", 1), 0);
    ASSERT_EQ(check("Scenarios.Program+<>c__DisplayClass4_0::<Threads>b__0", "lambda in Scenarios.Program::Threads", 1), 0);
    ASSERT_EQ(check("Ns.C::<Run>b__5_0", "lambda in Ns.C::Run", 1), 0);
    /* a lambda in a lambda */
    ASSERT_EQ(check("Ns.C+<>c::<<Main>b__0_0>b__0_1", "lambda 2 in lambda in Ns.C::Main", 1), 0);
    /* a method's lambdas told apart: the first "lambda in", then by their
     * ordinal in the source, counted from 1 (cached or in a closure's class) */
    ASSERT_EQ(check("P+<>c::<Main>b__5_0", "lambda in P::Main", 1), 0);
    ASSERT_EQ(check("P+<>c::<Main>b__5_3", "lambda 4 in P::Main", 1), 0);
    ASSERT_EQ(check("P+<>c__DisplayClass5_0::<Main>b__12", "lambda 13 in P::Main", 1), 0);
    ASSERT_EQ(check("P+<>c::<Main>b__5_1<System.Int32>", "lambda 2 in P::Main", 1), 0);
    ASSERT_EQ(check("Ns.C+<>c+<<Main>b__0_2>d::MoveNext", "lambda 3 in Ns.C::Main (async)", 1), 0);
    /* not the compiler's form: no number, no "b__" */
    ASSERT_EQ(check("P::<Main>bx", "lambda in P::Main", 1), 0);
    return 0;
}

TEST(prettyname_local_function) {
    ASSERT_EQ(check("<Main>g__Local|0_0", "Local (local function in Main)", 1), 0);
    ASSERT_EQ(check("Ns.C::<Main>g__Local|0_0", "Local (local function in Ns.C::Main)", 1), 0);
    ASSERT_EQ(check("Ns.C::<<Main>b__0_0>g__Inner|0_1", "Inner (local function in lambda in Ns.C::Main)", 1), 0);
    /* top-level statements */
    ASSERT_EQ(check("Program::<Main>$", "Program::Main", 1), 0);
    return 0;
}

TEST(prettyname_truncates) {
    char out[8];
    dnp_pretty_name("Scenarios.Program+<Foo>d__3::MoveNext", out, sizeof out);
    ASSERT_STREQ(out, "Scenari");
    ASSERT_EQ(dnp_pretty_name(NULL, out, sizeof out), 0);
    ASSERT_STREQ(out, "");
    return 0;
}
