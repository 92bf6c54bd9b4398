/* test_runtimes.c: the agent on .NET 8 and 9 (self-contained builds of the
 * sample), using a newer interface only where the runtime offers it. */
#include <string.h>

#include "e2e.h"
#include "test.h"

static int check_runtime(const char *test, const char *env, unsigned min_info, const char *version) {
    e2e_run r;
    if (e2e_setup(&r, test) != 0)
        return -1;
    const char *host = e2e_env(env);
    if (!host)
        return -1;
    const char *argv[] = {e2e_env("DNPROF_BIN"), "run", "--quiet", "-o", r.trace, "--", host, NULL};
    if (argv[0] == NULL || e2e_exec(&r, (char *const *)argv, NULL) != 0)
        return -1;
    if (r.status != 0) {
        fprintf(stderr, "e2e: %s exited with %d\n", host, r.status);
        e2e_show_file("stderr", r.err);
        return -1;
    }
    dnp_trace *t = e2e_load(r.trace);
    if (!t)
        return -1;
    int rc = 0;
    long init = -1;
    for (size_t i = 0; i < t->nevents && init < 0; i++)
        if (t->events[i].kind == DNP_EV_Initialize)
            init = (long)i;
    if (init < 0 || t->events[init].v[0] < min_info) {
        fprintf(stderr, "e2e: %s: want ICorProfilerInfo%u or later\n", host, min_info);
        rc = -1;
    }
    if (!t->runtime || !strstr(t->runtime, version)) {
        fprintf(stderr, "e2e: %s: runtime '%s', want %s\n", host, t->runtime ? t->runtime : "", version);
        rc = -1;
    }
    if (e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Program+Greeter", "Hello") < 0 ||
        e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Pair<System.String, System.Int32>", "Hello") < 0)
        rc = -1;
    char why[512] = "";
    if (e2e_check_nesting(t, why, sizeof why) != 0) {
        fprintf(stderr, "e2e: %s: %s\n", host, why);
        rc = -1;
    }
    dnp_trace_free(t);
    return rc;
}

TEST(e2e_older_runtimes) {
    ASSERT_EQ(check_runtime("e2e_older_runtimes.net8", "DNPROF_SAMPLE_NET8", 14, " 8.0."), 0);
    ASSERT_EQ(check_runtime("e2e_older_runtimes.net9", "DNPROF_SAMPLE_NET9", 15, " 9.0."), 0);
    return 0;
}

/* Issue 18's first two parts on .NET 8 and 9: --calls (exact counts, times
 * from samples) and --il on the sample. IsPrime is called for 2..299,999:
 * exactly 299,998 calls; its IL body is recorded once, whole. */
static int check_calls_il(const char *test, const char *env, const char *version) {
    e2e_run r;
    if (e2e_setup(&r, test) != 0)
        return -1;
    const char *host = e2e_env(env);
    if (!host)
        return -1;
    const char *argv[] = {e2e_env("DNPROF_BIN"), "run", "--quiet", "--calls", "--il", "Hello.Program::IsPrime",
                          "-o", r.trace, "--", host, NULL};
    if (argv[0] == NULL || e2e_exec(&r, (char *const *)argv, NULL) != 0 || r.status != 0) {
        e2e_show_file("stderr", r.err);
        return -1;
    }
    dnp_trace *t = e2e_load(r.trace);
    if (!t)
        return -1;
    int rc = t->runtime && strstr(t->runtime, version) ? 0 : -1;
    uint64_t calls = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *ev = &t->events[i];
        const char *fn = ev->kind == DNP_EV_CallNode ? e2e_field_name(t, ev, 3) : NULL;
        if (fn && strcmp(fn, "Hello.Program::IsPrime") == 0 && ev->v[DNP_V(CallNode, calls)] > calls)
            calls = ev->v[DNP_V(CallNode, calls)];
    }
    long il = e2e_find(t, DNP_EV_ILBody, "Hello.Program::IsPrime", 0);
    const char *body = il >= 0 ? dnp_trace_string(t, t->events[il].v[DNP_V(ILBody, body)]) : NULL;
    int ok_il = il >= 0 && t->events[il].v[DNP_V(ILBody, hrStatus)] == 0 && body && strlen(body) > 8 &&
                e2e_find(t, DNP_EV_ILBody, "Hello.Program::IsPrime", (size_t)il + 1) < 0;
    int sampled = e2e_count(t, DNP_EV_CallsSampling) > 0;
    fprintf(stderr, "e2e: %s: IsPrime %llu calls (want 299998), IL body %s, times %s\n", version,
            (unsigned long long)calls, ok_il ? "recorded once" : "missing", sampled ? "from samples" : "missing");
    dnp_trace_free(t);
    return rc == 0 && calls == 299998 && ok_il && sampled ? 0 : -1;
}

TEST(e2e_older_runtimes_calls_il) {
    ASSERT_EQ(check_calls_il("e2e_older_runtimes_calls_il.net8", "DNPROF_SAMPLE_NET8", " 8.0."), 0);
    ASSERT_EQ(check_calls_il("e2e_older_runtimes_calls_il.net9", "DNPROF_SAMPLE_NET9", " 9.0."), 0);
    return 0;
}
