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
