/* test_exceptions_field.c: the exception stories the field test of issue 11
 * found wrong, on the stories scenario (StoriesScenario.cs): an exception
 * replaced by one its finally throws, a task's exception thrown again by an
 * await after the thread pool's catch ended, and `throw;` after a GC moved the
 * object. Each checks the stories, `report --exceptions`, and `print`'s
 * nesting against what the program did; and the throws on the Perfetto
 * timeline. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json_check.h"
#include "stories.h"
#include "test.h"
#include "trace_format.h"

static int run_case(e2e_run *r, const char *what, const char *arg) {
    const char *bin = e2e_env("DNPROF_BIN"), *dll = e2e_env("DNPROF_SCENARIOS");
    if (!bin || !dll)
        return -1;
    const char *argv[] = {bin, "run", "--quiet", "--exceptions", "-o", r->trace, "--", e2e_dotnet(), dll,
                          "stories", what, arg, NULL};
    return e2e_exec(r, (char *const *)argv, NULL);
}

static const dnp_story *find(const dnp_stories *s, const char *type, const char *message, size_t from) {
    for (size_t i = from; i < s->n; i++)
        if (s->v[i].type && !strcmp(s->v[i].type, type) &&
            (!message || (s->v[i].message && !strcmp(s->v[i].message, message))))
            return &s->v[i];
    fprintf(stderr, "e2e: no story of %s \"%s\" among %zu\n", type, message ? message : "*", s->n);
    return NULL;
}

/* The output of `dnprof ARGS...`, NULL when it failed. */
static char *dnprof_out(e2e_run *r, const char *const args[]) {
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        e2e_show_file("stderr", r->err);
        return NULL;
    }
    return e2e_read_file(r->out, NULL);
}

/* print's levels close on every thread: each exception's levels end with it. */
static int nesting_closes(const dnp_trace *t) {
    char why[512];
    if (e2e_check_nesting(t, why, sizeof why) == 0)
        return 1;
    fprintf(stderr, "e2e: print's nesting: %s\n", why);
    return 0;
}

/* try { try { throw A; } finally { throw B; } } catch (B) {}: no catch matches
 * A, the runtime says "unhandled", runs the finally, and B replaces A. */
TEST(e2e_stories_replaced_in_finally) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_stories_replaced_in_finally"), 0);
    ASSERT_EQ(run_case(&r, "replaced", NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int said = strstr(out, "case replaced: caught Scenarios.ReplacementException: replacement") &&
               strstr(out, "case replaced: then caught System.AggregateException");
    free(out);
    ASSERT(said);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_stories s;
    ASSERT_EQ(dnp_stories_build(t, &s), 0);
    const dnp_story *a = find(&s, "Scenarios.LostException", "lost", 0);
    const dnp_story *b = find(&s, "Scenarios.ReplacementException", "replacement", 0);
    const dnp_story *f = find(&s, "System.FormatException", NULL, 0);
    const dnp_story *g = find(&s, "System.AggregateException", "after", 0);
    ASSERT(a);
    ASSERT(b);
    ASSERT(f);
    ASSERT(g);
    ASSERT_EQ(a->no_catcher, 1);
    ASSERT_EQ(a->fate, EXC_ABANDONED); /* not "unhandled: the process died" */
    ASSERT_EQ(a->ended_by, b->id);
    ASSERT_EQ(b->parent, a->id);
    ASSERT_EQ(b->parent_phase, EXC_FINALLY);
    ASSERT_EQ(b->fate, EXC_CAUGHT);
    /* A's story ended with B: what comes later is not thrown in its finally. */
    ASSERT_EQ(f->parent, 0);
    ASSERT_EQ(g->parent, 0);
    ASSERT_EQ(f->fate, EXC_CAUGHT);
    ASSERT_EQ(g->fate, EXC_CAUGHT);
    ASSERT(nesting_closes(t));
    dnp_stories_free(&s);
    dnp_trace_free(t);

    const char *report[] = {"report", "--exceptions", r.trace, NULL};
    out = dnprof_out(&r, report);
    ASSERT_NE(out, NULL);
    int ok = strstr(out, "4 exceptions: 3 caught") && strstr(out, " 1 abandoned (another exception left") && strstr(out, " 0 unhandled,");
    if (!ok)
        fprintf(stderr, "e2e: report --exceptions said:\n%s", out);
    free(out);
    ASSERT(ok);
    const char *print[] = {"print", "--exceptions", r.trace, NULL};
    out = dnprof_out(&r, print);
    ASSERT_NE(out, NULL);
    const char *in_finally = strstr(out, "was in its finally block");
    ok = strstr(out, "outcome: replaced by #") && !strstr(out, "the process died") && in_finally &&
         !strstr(in_finally + 1, "was in its finally block"); /* B only */
    free(out);
    ASSERT(ok);
    return 0;
}

/* Task.Run(() => throw X) caught by the thread pool; the await throws the same
 * object again through ExceptionDispatchInfo.Throw, after that catch ended. */
TEST(e2e_stories_dispatch_rethrow) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_stories_dispatch_rethrow"), 0);
    ASSERT_EQ(run_case(&r, "dispatch", NULL), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_stories s;
    ASSERT_EQ(dnp_stories_build(t, &s), 0);
    const dnp_story *first = find(&s, "Scenarios.DispatchedException", "from a task", 0);
    ASSERT_NE(first, NULL);
    ASSERT_STREQ(first->throw_site, "Scenarios.StoriesScenario::DispatchThrow");
    ASSERT_EQ(first->fate, EXC_CAUGHT);
    /* Every later throw of it (the one the await makes, on the main thread) is linked back. */
    const dnp_story *last = NULL;
    size_t again = 0;
    for (const dnp_story *x = find(&s, "Scenarios.DispatchedException", "from a task", first->id); x;
         x = x->id < s.n ? find(&s, "Scenarios.DispatchedException", "from a task", x->id) : NULL) {
        ASSERT_NE(x->rethrow_of, 0);
        ASSERT_LT(x->rethrow_of, x->id);
        ASSERT_EQ(x->kept_trace, 1);
        again++;
        last = x;
    }
    ASSERT_GE(again, 1);
    ASSERT_NE(last, NULL);
    ASSERT_STREQ(last->catcher, "Scenarios.StoriesScenario::Dispatch");
    /* thrown again where the program waited for the task, not in the awaiter's
     * and ExceptionDispatchInfo's frames above it */
    ASSERT_STREQ(last->throw_site, "Scenarios.StoriesScenario::Dispatch");
    dnp_stories_free(&s);
    dnp_trace_free(t);

    const char *report[] = {"report", "--exceptions", "--json", r.trace, NULL};
    char *out = dnprof_out(&r, report);
    ASSERT_NE(out, NULL);
    char want[64];
    snprintf(want, sizeof want, "\"rethrown\":%zu,", again);
    int ok = strstr(out, want) != NULL;
    /* the exceptions thrown new: every throw but the rethrows */
    const char *total = strstr(out, "\"exceptions_total\":"), *fresh = strstr(out, "\"thrown_new\":");
    ok = ok && total && fresh &&
         strtoull(total + 19, NULL, 10) == strtoull(fresh + 13, NULL, 10) + again;
    if (!ok)
        fprintf(stderr, "e2e: report --exceptions --json wants %s and thrown_new + rethrown = total:\n%.400s\n",
                want, out);
    free(out);
    ASSERT(ok);
    const char *text_args[] = {"report", "--exceptions", r.trace, NULL};
    out = dnprof_out(&r, text_args);
    ok = out && strstr(out, " more throw") && strstr(out, "of the same objects (rethrown: throw;, an await)");
    if (!ok)
        fprintf(stderr, "e2e: report --exceptions does not say what was thrown new:\n%.400s\n", out ? out : "");
    free(out);
    ASSERT(ok);
    return 0;
}

/* ExceptionDispatchInfo.Throw(e) in e's own catch, and Parallel.For's
 * workers, which rethrow a body's exception so: the catch is left by a
 * rethrow of the same exception (its search passes ExceptionDispatchInfo's
 * frames first), not abandoned to a nested one. */
TEST(e2e_stories_dispatch_in_catch) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_stories_dispatch_in_catch"), 0);
    ASSERT_EQ(run_case(&r, "edi", NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *said = e2e_read_file(r.out, NULL);
    int ran = said && strstr(said, "case edi: caught edi") && strstr(said, "Parallel.For threw 1 (parallel)");
    free(said);
    ASSERT(ran);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_stories s;
    ASSERT_EQ(dnp_stories_build(t, &s), 0);
    const char *messages[] = {"edi", "parallel"};
    for (int m = 0; m < 2; m++) {
        const dnp_story *first = find(&s, "Scenarios.StoryException", messages[m], 0);
        ASSERT_NE(first, NULL);
        ASSERT_STREQ(first->throw_site, "Scenarios.StoriesScenario::EdiThrow");
        ASSERT_EQ(first->fate, EXC_RETHROWN);
        ASSERT_NE(first->ended_by, 0);
        const dnp_story *again = &s.v[first->ended_by - 1];
        ASSERT_EQ(again->rethrow_of, first->id);
        ASSERT_EQ(again->parent, 0); /* the same exception going on, not one nested in it */
        ASSERT_EQ(again->fate, EXC_CAUGHT);
        if (m == 0)
            ASSERT_STREQ(again->catcher, "Scenarios.StoriesScenario::Edi");
    }
    ASSERT_EQ(s.unexpected, 0);
    size_t abandoned = 0;
    for (size_t i = 0; i < s.n; i++)
        abandoned += s.v[i].fate == EXC_ABANDONED && s.v[i].type && !strcmp(s.v[i].type, "Scenarios.StoryException");
    ASSERT_EQ(abandoned, 0);
    dnp_stories_free(&s);
    dnp_trace_free(t);
    return 0;
}

/* `throw;` after a compacting GC moved the exception object, 2000 times. */
TEST(e2e_stories_rethrow_after_gc) {
    enum { N = 2000 };
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_stories_rethrow_after_gc"), 0);
    ASSERT_EQ(run_case(&r, "gcrethrow", "2000"), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int said = strstr(out, "gcrethrow: 2000 rethrown, 2000 caught") != NULL;
    free(out);
    ASSERT(said);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_stories s;
    ASSERT_EQ(dnp_stories_build(t, &s), 0);
    size_t first = 0, again = 0, moved = 0;
    for (size_t i = 0; i < s.n; i++) {
        const dnp_story *x = &s.v[i];
        if (!x->type || strcmp(x->type, "Scenarios.MovedException") != 0)
            continue;
        if (x->rethrow_of) {
            const dnp_story *o = &s.v[x->rethrow_of - 1];
            ASSERT_EQ(x->fate, EXC_CAUGHT);
            ASSERT_EQ(x->parent, 0);
            ASSERT_EQ(o->fate, EXC_RETHROWN); /* not "in flight", not abandoned */
            ASSERT_EQ(o->ended_by, x->id);
            ASSERT_STREQ(o->message, x->message);
            moved += o->object != x->object;
            again++;
        } else {
            ASSERT_EQ(x->fate, EXC_RETHROWN);
            first++;
        }
    }
    ASSERT_EQ(first, N);
    ASSERT_EQ(again, N);
    ASSERT_GT(moved, N / 2); /* the GC did move them: the case is tested */
    ASSERT(nesting_closes(t));
    dnp_stories_free(&s);
    dnp_trace_free(t);

    const char *report[] = {"report", "--exceptions", r.trace, NULL};
    out = dnprof_out(&r, report);
    ASSERT_NE(out, NULL);
    int ok = strstr(out, "4,000 exceptions: 2,000 caught") && strstr(out, "2,000 left their catch by a rethrow") &&
             strstr(out, " 0 in flight at the end; 2,000 rethrown");
    if (!ok)
        fprintf(stderr, "e2e: report --exceptions said:\n%.600s\n", out);
    free(out);
    ASSERT(ok);
    return 0;
}

/* A recursion 5000 calls deep under --timeline: print indents up to a limit
 * and shows the level past it as {N}, so its output is linear in the events
 * (it was quadratic: 907 MB for a 30,000-deep recursion). */
TEST(e2e_print_deep_recursion_linear) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_print_deep_recursion_linear"), 0);
    const char *bin = e2e_env("DNPROF_BIN"), *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(bin);
    ASSERT(dll);
    const char *argv[] = {bin, "run", "--quiet", "--timeline", "-o", r.trace, "--", e2e_dotnet(), dll,
                          "stories", "deep", "5000", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    const char *print[] = {"print", "--no-ids", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, print), 0);
    ASSERT_STATUS(&r, 0);
    size_t len = 0;
    char *out = e2e_read_file(r.out, &len);
    ASSERT_NE(out, NULL);
    size_t lines = 0, deepest = 0;
    for (char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    /* The deepest DeepRecurse shows its level as a number. */
    for (char *p = out; (p = strstr(p, "} MethodEnter Scenarios.StoriesScenario::DeepRecurse")) != NULL; p++) {
        char *b = p;
        while (b > out && b[-1] != '{')
            b--;
        size_t level = strtoul(b, NULL, 10);
        if (level > deepest)
            deepest = level;
    }
    free(out);
    fprintf(stderr, "e2e: %zu lines, %zu bytes, deepest level shown %zu\n", lines, len, deepest);
    ASSERT_GT(lines, 10000);        /* 5001 enters and leaves */
    ASSERT_GE(deepest, 5000);
    ASSERT_LT(len, lines * 200);    /* linear: no line is indented 5000 levels */
    return 0;
}

/* `throw;` in an async method's catch; its own catch hands the exception to
 * the awaiting caller, whose continuation runs inline inside that catch and
 * catches it (HttpClient.GetStringAsync's failures awaited by a service).
 * Per round: the throw, left by the rethrow; the rethrow, caught by the
 * method's catch, which goes on; the await's throw, caught by the caller.
 * Every event fits: no catch is taken for over while it still runs. */
TEST(e2e_stories_await_rethrow_inline) {
    enum { N = 20 };
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_stories_await_rethrow_inline"), 0);
    ASSERT_EQ(run_case(&r, "awaitrethrow", "20"), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    int said = out && strstr(out, "awaitrethrow: 20 caught");
    free(out);
    ASSERT(said);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_stories s;
    ASSERT_EQ(dnp_stories_build(t, &s), 0);
    size_t thrown = 0, rethrown = 0, caught_by_caller = 0, caught_in_method = 0, other = 0;
    for (size_t i = 0; i < s.n; i++) {
        const dnp_story *x = &s.v[i];
        if (!x->type || strcmp(x->type, "Scenarios.StoryException") != 0)
            continue;
        const char *c = x->catcher ? x->catcher : "";
        if (x->fate == EXC_RETHROWN)
            thrown++;
        else if (x->fate == EXC_CAUGHT && strstr(c, "AwaitingAsync"))
            caught_by_caller++;
        else if (x->fate == EXC_CAUGHT && strstr(c, "RethrowingAsync"))
            caught_in_method++;
        else
            other++;
        rethrown += x->rethrow_of != 0;
    }
    fprintf(stderr, "e2e: await rethrow: %zu left by the rethrow, %zu caught in the method, %zu by the caller, "
                    "%zu other, %zu rethrows, %llu events out of place\n",
            thrown, caught_in_method, caught_by_caller, other, rethrown, (unsigned long long)s.unexpected);
    ASSERT_EQ(s.unexpected, 0);
    ASSERT_EQ(thrown, N);
    ASSERT_EQ(caught_in_method, N);
    ASSERT_EQ(caught_by_caller, N);
    ASSERT_EQ(other, 0);
    ASSERT_EQ(rethrown, 2 * N);
    dnp_stories_free(&s);
    dnp_trace_free(t);
    return 0;
}

/* convert --format chrome of an --exceptions trace: every throw an instant on
 * the Perfetto timeline with its type, message and throw site; beside sampled
 * stacks (laid out, not in time) on a track of its thread's own, named so. */
TEST(e2e_stories_on_chrome_timeline) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_stories_on_chrome_timeline"), 0);
    const char *bin = e2e_env("DNPROF_BIN"), *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(bin && dll);
    const char *argv[] = {bin, "run", "--quiet", "--exceptions", "--sample", "-o", r.trace, "--", e2e_dotnet(), dll,
                          "stories", "awaitrethrow", "20", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    size_t thrown = e2e_count(t, DNP_EV_ExceptionThrown);
    dnp_trace_free(t);
    char json[PATH_MAX + 16];
    snprintf(json, sizeof json, "%s.json", r.trace);
    const char *conv[] = {"convert", "--format", "chrome", "-o", json, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, conv), 0);
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *text = e2e_read_file(json, &len);
    ASSERT_NE(text, NULL);
    char err[256];
    jv *doc = json_parse(text, len, err, sizeof err);
    free(text);
    ASSERT_NE(doc, NULL);
    const jv *events = json_get(doc, "traceEvents");
    size_t instants = 0, with_message = 0, apart = 0, tracks_named = 0;
    for (size_t i = 0; events && i < events->n; i++) {
        const jv *e = json_at(events, i);
        const char *ph = json_str(e, "ph"), *cat = json_str(e, "cat"), *name = json_str(e, "name");
        if (ph && !strcmp(ph, "i") && cat && !strcmp(cat, "exception")) {
            instants++;
            const char *message = json_str(json_get(e, "args"), "message");
            with_message += name && !strcmp(name, "throw Scenarios.StoryException") && message &&
                            !strncmp(message, "await ", 6);
            apart += json_num(e, "tid") >= (double)(1ull << 29);
        } else if (ph && !strcmp(ph, "M") && name && !strcmp(name, "thread_name")) {
            const char *label = json_str(json_get(e, "args"), "name");
            tracks_named += label && strstr(label, ": exceptions, in time") != NULL;
        }
    }
    json_free(doc);
    fprintf(stderr, "e2e: chrome: %zu throws in the trace, %zu instants (%zu with the scenario's message, %zu on "
                    "tracks of their own, %zu named)\n", thrown, instants, with_message, apart, tracks_named);
    ASSERT_EQ(thrown, 60); /* 20 rounds: the throw, the rethrow, the await's */
    ASSERT_EQ(instants, thrown);
    ASSERT_EQ(with_message, thrown);
    ASSERT_EQ(apart, thrown);
    ASSERT_GE(tracks_named, 1);
    return 0;
}
