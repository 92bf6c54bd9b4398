/* test_trace.c: `dnprof attach/run --trace` (issue 18 part 3, docs/calls.md)
 * on the "traced" scenario, which calls its methods exactly N times once the
 * file DIR/go appears: the counts of every traced method are exact (a plain
 * method, a generic one through two instantiations, one with try/finally left
 * by an exception every tenth call, one that its caller had inlined before the
 * attach), the program prints what a run without dnprof prints, the probe is
 * there while attached (the program's own ns per call) and gone after the
 * detach. Exact counts fail when the agent is not loaded or records nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

#define N 5000

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void touch(const char *dir, const char *name) {
    char p[2 * PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0)
        close(fd);
}

/* The rest of the first line of path that starts with prefix, into out;
 * waits for it up to timeout_ms. 0, or -1 after showing the file. */
static int wait_line(const char *path, const char *prefix, char *out, size_t cap, int timeout_ms) {
    long deadline = now_ms() + timeout_ms;
    for (;;) {
        FILE *f = fopen(path, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            if (strncmp(line, prefix, strlen(prefix)) == 0) {
                line[strcspn(line, "\n")] = 0;
                snprintf(out, cap, "%s", line + strlen(prefix));
                fclose(f);
                return 0;
            }
        }
        if (f)
            fclose(f);
        if (now_ms() > deadline) {
            fprintf(stderr, "e2e: no line '%s' in %s within %d ms\n", prefix, path, timeout_ms);
            e2e_show_file("it holds", path);
            return -1;
        }
        usleep(20000);
    }
}

/* How many distinct traced methods an open trace says were asked for. */
static size_t methods_asked(const char *path) {
    dnp_trace_stream *s = NULL;
    char err[256];
    if (dnp_trace_stream_open(path, &s, err, sizeof err) != 0)
        return 0;
    dnp_trace_event e;
    uint64_t seen = 0;
    while (dnp_trace_stream_next(s, &e) > 0)
        if (e.kind == DNP_EV_TracedMethod && e.v[DNP_V(TracedMethod, id)] < 64)
            seen |= 1ull << e.v[DNP_V(TracedMethod, id)];
    dnp_trace_stream_close(s);
    return (size_t)__builtin_popcountll(seen);
}

/* The last TracedCalls of the method named name, and its last state. */
static int traced(const dnp_trace *t, const char *name, uint64_t *calls, uint64_t *state) {
    uint64_t id = UINT64_MAX;
    *calls = UINT64_MAX;
    *state = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind == DNP_EV_TracedMethod) {
            const char *n = dnp_trace_string(t, e->v[DNP_V(TracedMethod, name)]);
            if (n && strcmp(n, name) == 0) {
                id = e->v[DNP_V(TracedMethod, id)];
                *state = e->v[DNP_V(TracedMethod, state)];
            }
        } else if (e->kind == DNP_EV_TracedCalls && e->v[DNP_V(TracedCalls, id)] == id) {
            *calls = e->v[DNP_V(TracedCalls, calls)];
        }
    }
    if (id == UINT64_MAX)
        fprintf(stderr, "e2e: no TracedMethod %s in the trace\n", name);
    return id == UINT64_MAX ? -1 : 0;
}

/* `dotnet Scenarios.dll traced DIR N`, or with app (a self-contained build of
 * the scenario, traced-app/) `APP traced DIR N`. */
/* The calls of the method named name that came from the function named caller. */
static uint64_t caller_calls(const dnp_trace *t, const char *name, const char *caller) {
    uint64_t id = UINT64_MAX, calls = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind == DNP_EV_TracedMethod) {
            const char *n = dnp_trace_string(t, e->v[DNP_V(TracedMethod, name)]);
            if (n && strcmp(n, name) == 0)
                id = e->v[DNP_V(TracedMethod, id)];
        } else if (e->kind == DNP_EV_TracedCaller && e->v[DNP_V(TracedCaller, id)] == id) {
            const char *c = e2e_field_name(t, e, 1);
            if (c && strcmp(c, caller) == 0)
                calls += e->v[DNP_V(TracedCaller, calls)];
        }
    }
    return calls;
}

static pid_t start_scenario(const char *app, const char *dir, const char *out, const char *err) {
    const char *dll = app ? "" : e2e_env("DNPROF_SCENARIOS");
    char n[16];
    snprintf(n, sizeof n, "%d", N);
    char *scen[] = {(char *)e2e_dotnet(), (char *)dll, "traced", (char *)dir, n, NULL};
    char *own[] = {(char *)app, "traced", (char *)dir, n, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    return dll ? e2e_spawn(app ? own : scen, env, dir, out, NULL, err) : -1;
}

/* The scenario run without dnprof, its go and detached files there already:
 * its line of results into out. */
static int bare_results(e2e_run *r, const char *app, char *out, size_t cap) {
    char dir[PATH_MAX], o[PATH_MAX + 16], e[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/bare", r->dir);
    mkdir(dir, 0755);
    touch(dir, "go");
    touch(dir, "detached");
    snprintf(o, sizeof o, "%s/out", dir);
    snprintf(e, sizeof e, "%s/err", dir);
    pid_t pid = start_scenario(app, dir, o, e);
    int status = -1;
    if (pid < 0 || e2e_wait(pid, E2E_TIMEOUT_MS, &status) != 0 || status != 0) {
        e2e_show_file("the bare scenario said", e);
        return -1;
    }
    return wait_line(o, "counted ", out, cap, 1000);
}

/* The attach, the calls, the detach, and what they left, on app (NULL: the
 * installed runtime's Scenarios.dll). 0, or 1 when an assertion failed. */
static int attach_exact(const char *test, const char *app) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, test), 0);
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT(bin);
    char out[PATH_MAX + 16], err[PATH_MAX + 16], aout[PATH_MAX + 16], aerr[PATH_MAX + 16], v[256];
    snprintf(out, sizeof out, "%s/scenario.out", r.dir);
    snprintf(err, sizeof err, "%s/scenario.err", r.dir);
    snprintf(aout, sizeof aout, "%s/attach.out", r.dir);
    snprintf(aerr, sizeof aerr, "%s/attach.err", r.dir);
    pid_t pid = start_scenario(app, r.dir, out, err);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(wait_line(out, "ready", v, sizeof v, E2E_TIMEOUT_MS), 0);
    char before[64], during[64], after[64], results[512], bare[512];
    ASSERT_EQ(wait_line(out, "before ", before, sizeof before, 1000), 0);

    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    char *attach[] = {(char *)bin, "attach", pidtext, "--trace", "Scenarios.TracedTarget::*", "-o", r.trace, NULL};
    pid_t apid = e2e_spawn(attach, NULL, r.dir, aout, NULL, aerr);
    ASSERT_GT(apid, 0);
    long deadline = now_ms() + 30000; /* the agent asked for all six before the calls begin */
    while (methods_asked(r.trace) < 6 && now_ms() < deadline)
        usleep(50000);
    size_t asked = methods_asked(r.trace);
    if (asked < 6)
        e2e_show_file("dnprof attach said", aerr);
    ASSERT_EQ(asked, 6);
    touch(r.dir, "go");
    ASSERT_EQ(wait_line(out, "calls done", v, sizeof v, E2E_TIMEOUT_MS), 0);
    ASSERT_EQ(wait_line(out, "during ", during, sizeof during, 1000), 0);
    ASSERT_EQ(wait_line(out, "counted ", results, sizeof results, 1000), 0);

    const char *detach[] = {"detach", pidtext, NULL};
    ASSERT_EQ(e2e_dnprof(&r, detach), 0);
    if (r.status != 0)
        e2e_show_file("dnprof detach said", r.err);
    ASSERT_STATUS(&r, 0);
    char *said = e2e_read_file(r.err, NULL);
    ASSERT(said);
    ASSERT_CONTAINS(said, "stays loaded but inert");
    free(said);
    int astatus = -1;
    ASSERT_EQ(e2e_wait(apid, 30000, &astatus), 0);
    if (astatus != 0)
        e2e_show_file("dnprof attach said", aerr);
    ASSERT_EQ(astatus, 0);
    touch(r.dir, "detached");
    ASSERT_EQ(wait_line(out, "after ", after, sizeof after, E2E_TIMEOUT_MS), 0);
    int status = -1;
    ASSERT_EQ(e2e_wait(pid, E2E_TIMEOUT_MS, &status), 0);
    ASSERT_EQ(status, 0);

    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_TracedCalls, 6);
    ASSERT(t);
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    static const struct {
        const char *name;
        uint64_t calls;
    } want[] = {
        {"Scenarios.TracedTarget::Counted", N},
        {"Scenarios.TracedTarget::Generic", 2 * N},     /* Generic<int> and Generic<string>: one method */
        {"Scenarios.TracedTarget::WithFinally", N},     /* N / 10 left by an exception */
        {"Scenarios.TracedTarget::Inlinee", N},         /* inlined into InlineCaller before the attach */
        {"Scenarios.TracedTarget::InlineCaller", 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t calls, state;
        ASSERT_EQ(traced(t, want[i].name, &calls, &state), 0);
        fprintf(stderr, "e2e: %s: %llu calls, state %llu\n", want[i].name, (unsigned long long)calls,
                (unsigned long long)state);
        ASSERT_EQ(calls, want[i].calls);
        ASSERT_EQ(state, 4); /* reverted */
    }
    /* by caller: the call sites' functions */
    ASSERT_EQ(caller_calls(t, "Scenarios.TracedTarget::Counted", "Scenarios.TracedScenario::Run"), N);
    ASSERT_EQ(caller_calls(t, "Scenarios.TracedTarget::WithFinally", "Scenarios.TracedScenario::Run"), N);
    ASSERT_EQ(caller_calls(t, "Scenarios.TracedTarget::Inlinee", "Scenarios.TracedTarget::InlineCaller"), N);
    dnp_trace_free(t);

    /* the program's results are a bare run's */
    ASSERT_EQ(bare_results(&r, app, bare, sizeof bare), 0);
    ASSERT_STREQ(results, bare);

    /* ns per call of Timed: the probe while attached, none after the detach */
    double b = atof(before), d = atof(during), a = atof(after);
    fprintf(stderr, "e2e: Timed: %.2f ns per call before the attach, %.2f attached, %.2f after the detach\n", b, d,
            a);
    ASSERT_GT(d, b + 5);
    ASSERT_LE(a, 1.5 * b + 2);
    return 0;
}

TEST(e2e_trace_attach_exact) {
    return attach_exact("e2e_trace_attach_exact", NULL);
}

/* The same on .NET 8 and 9 (self-contained builds, traced-app/). */
TEST(e2e_trace_older_runtimes) {
    const char *net8 = e2e_env("DNPROF_TRACED_NET8"), *net9 = e2e_env("DNPROF_TRACED_NET9");
    ASSERT(net8);
    ASSERT(net9);
    ASSERT_EQ(attach_exact("e2e_trace_older_runtimes.net8", net8), 0);
    ASSERT_EQ(attach_exact("e2e_trace_older_runtimes.net9", net9), 0);
    return 0;
}

TEST(e2e_trace_run_startup) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_trace_run_startup"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    touch(r.dir, "go");
    touch(r.dir, "detached");
    char n[16];
    snprintf(n, sizeof n, "%d", N);
    const char *args[] = {"run", "-q", "-o", r.trace, "--trace", "Scenarios.TracedTarget::Counted",
                          "--trace", "Scenarios.Traced?arget::WithFinally,Scenarios.TracedTarget::Generic", /* a type glob: every type walked */
                          "--", e2e_dotnet(), dll, "traced", r.dir, n, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    if (r.status != 0)
        e2e_show_file("dnprof run said", r.err);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_TracedCalls, 3);
    ASSERT(t);
    uint64_t calls, state;
    ASSERT_EQ(traced(t, "Scenarios.TracedTarget::Counted", &calls, &state), 0);
    ASSERT_EQ(calls, N);
    ASSERT_EQ(state, 2); /* instrumented, to the end */
    ASSERT_EQ(traced(t, "Scenarios.TracedTarget::WithFinally", &calls, &state), 0);
    ASSERT_EQ(calls, N);
    ASSERT_EQ(traced(t, "Scenarios.TracedTarget::Generic", &calls, &state), 0);
    ASSERT_EQ(calls, 2 * N);
    ASSERT_EQ(e2e_count(t, DNP_EV_TracedMethod) >= 3, 1);
    dnp_trace_free(t);

    /* report: the section, and "traced" in the JSON */
    const char *rep[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT(text);
    ASSERT_CONTAINS(text, "traced methods");
    ASSERT_CONTAINS(text, "5,000  ");
    ASSERT_CONTAINS(text, "Scenarios.TracedTarget::WithFinally");
    ASSERT_CONTAINS(text, "from Scenarios.TracedScenario::Run");
    free(text);
    const char *js[] = {"report", "--json", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, js);
    ASSERT(j);
    const jv *arr = json_get(j, "traced");
    ASSERT(arr);
    ASSERT_EQ(arr->type, JV_ARR);
    ASSERT_EQ(arr->n, 3);
    int found = 0;
    for (size_t i = 0; i < arr->n; i++) {
        const jv *m = json_at(arr, i);
        if (strcmp(json_str(m, "name"), "Scenarios.TracedTarget::Counted") == 0) {
            found = 1;
            ASSERT_EQ(json_num(m, "calls"), N);
            ASSERT_GT(json_num(m, "totalNs"), 0);
            ASSERT_LE(json_num(m, "p50Ns"), json_num(m, "p99Ns"));
            ASSERT_LE(json_num(m, "p99Ns"), json_num(m, "maxNs"));
            const jv *by = json_get(m, "byCaller");
            ASSERT(by);
            ASSERT_EQ(by->type, JV_ARR);
            ASSERT_GE(by->n, 1);
            ASSERT_STREQ(json_str(json_at(by, 0), "caller"), "Scenarios.TracedScenario::Run");
            ASSERT_EQ(json_num(json_at(by, 0), "calls"), N);
        }
    }
    ASSERT(found);
    json_free(j);
    return 0;
}

/* A method that cannot be traced (in a collectible AssemblyLoadContext's
 * module, which the runtime does not re-JIT) is said once, recorded as
 * failed, and runs unchanged; the module unloads; the program's output and
 * exit are untouched, and a method traced beside it is counted exactly. */
TEST(e2e_trace_collectible_not_traced) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_trace_collectible_not_traced"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *args[] = {"run", "-o", r.trace, "--trace", "PluginA.Widget::Spin,Scenarios.Program::LoadAndUse",
                          "--", e2e_dotnet(), dll, "alc", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    if (r.status != 0)
        e2e_show_file("dnprof run said", r.err);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL), *said = e2e_read_file(r.err, NULL);
    ASSERT(out);
    ASSERT(said);
    ASSERT_CONTAINS(out, "PluginA.Widget.Spin(3) = 9\nPluginA unloaded after");
    ASSERT_CONTAINS(out, "PluginB.Gadget.Turn(3) = 10\nPluginB unloaded after");
    ASSERT_CONTAINS(said, "PluginA.Widget::Spin is not traced: its module is collectible");
    const char *first = strstr(said, "PluginA.Widget::Spin is not traced");
    ASSERT(first);
    ASSERT(!strstr(first + 1, "PluginA.Widget::Spin is not traced")); /* once */
    free(out);
    free(said);
    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_TracedCalls, 2);
    ASSERT(t);
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    uint64_t calls, state;
    ASSERT_EQ(traced(t, "PluginA.Widget::Spin", &calls, &state), 0);
    ASSERT_EQ(state, 3); /* failed */
    ASSERT_EQ(calls, 0);
    ASSERT_EQ(traced(t, "Scenarios.Program::LoadAndUse", &calls, &state), 0);
    ASSERT_EQ(calls, 2);
    dnp_trace_free(t);
    return 0;
}
