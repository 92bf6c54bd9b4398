/* test_windows_otlp.c: dnprof run --every --otlp (docs/production.md)
 * against the truth of the "sample" scenario (ingest_util.h).
 *
 * Every request the loopback stand-in of an OpenTelemetry Collector's
 * OTLP/HTTP receiver (ingest/ingest_server.py --otlp) stored is decoded by
 * `protoc --decode` (Debian's protobuf-compiler) with the protocol's own
 * .proto files (ingest/proto, copies of opentelemetry-proto): a decoder that
 * shares nothing with dnprof's encoder. From its text: the resource's
 * attributes, each profile's sample type, time, duration and period, and the
 * samples' leaf functions through the request's dictionary (stack ->
 * location -> line's function -> name). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "ingest_util.h"
#include "test.h"

#define MAX_ITEMS 16384
#define MAX_PROFILES 8
#define MAX_SAMPLES 32768

/* protoc is there, or the test skips; then r is set up for test. */
#define OTLP_TEST_SETUP(r, test)                                                                       \
    do {                                                                                               \
        char protoc_[PATH_MAX];                                                                        \
        if (!e2e_which("protoc", NULL, protoc_, sizeof protoc_))                                       \
            E2E_SKIP("protoc is not installed (tools/install-deps, or: apt-get install protobuf-compiler)"); \
        ASSERT_EQ(e2e_setup(r, test), 0);                                                              \
    } while (0)

/* ---- protoc --decode's text of one ExportProfilesServiceRequest ---- */

typedef struct otlp_req {
    char attrs[1024];                /* "key=value;" each, the resource's */
    struct {
        long type, unit, period;
        unsigned long long time_ns, duration_ns;
    } prof[MAX_PROFILES];
    int nprof;
    long sample_prof[MAX_SAMPLES], sample_stack[MAX_SAMPLES];
    double sample_value[MAX_SAMPLES];
    size_t nsamples;
    char strs[MAX_ITEMS][160];
    size_t nstrs;
    long fn_name[MAX_ITEMS], loc_fn[MAX_ITEMS], stack_leaf[MAX_ITEMS];
    size_t nfn, nloc, nstack;
} otlp_req;

/* The quoted string of a line 'key: "text"' into out. */
static void quoted(const char *line, char *out, size_t cap) {
    const char *q = strchr(line, '"');
    size_t n = 0;
    for (q = q ? q + 1 : ""; *q && *q != '"' && n + 1 < cap; q++)
        out[n++] = *q == '\\' && q[1] ? *++q : *q;
    out[n] = 0;
}

static long num_after(const char *line) {
    const char *c = strchr(line, ':');
    return c ? strtol(c + 1, NULL, 10) : 0;
}

/* A line within path (the open messages, "/"-joined, e.g. "/resource_profiles/resource/attributes"). */
static void req_line(otlp_req *q, const char *path, const char *line, char *key) {
    char v[160];
    if (!strcmp(path, "/resource_profiles/resource/attributes") && !strncmp(line, "key:", 4))
        quoted(line, key, 128);
    else if (!strcmp(path, "/resource_profiles/resource/attributes/value")) {
        if (!strncmp(line, "string_value:", 13))
            quoted(line, v, sizeof v);
        else
            snprintf(v, sizeof v, "%ld", num_after(line));
        size_t n = strlen(q->attrs);
        snprintf(q->attrs + n, sizeof q->attrs - n, "%s=%s;", key, v);
    } else if (!strncmp(path, "/resource_profiles/scope_profiles/profiles", 42) && q->nprof > 0) {
        int p = q->nprof - 1;
        const char *sub = path + 42;
        if (!strcmp(sub, "/sample_type"))
            *(!strncmp(line, "type_strindex", 13) ? &q->prof[p].type : &q->prof[p].unit) = num_after(line);
        else if (!strcmp(sub, "/samples") && q->nsamples > 0 && !strncmp(line, "stack_index", 11))
            q->sample_stack[q->nsamples - 1] = num_after(line);
        else if (!*sub && !strncmp(line, "time_unix_nano:", 15))
            q->prof[p].time_ns = strtoull(line + 15, NULL, 10);
        else if (!*sub && !strncmp(line, "duration_nano:", 14))
            q->prof[p].duration_ns = strtoull(line + 14, NULL, 10);
        else if (!*sub && !strncmp(line, "period:", 7))
            q->prof[p].period = num_after(line);
    } else if (!strcmp(path, "/dictionary") && !strncmp(line, "string_table:", 13) && q->nstrs < MAX_ITEMS)
        quoted(line, q->strs[q->nstrs++], sizeof q->strs[0]);
    else if (!strcmp(path, "/dictionary/function_table") && !strncmp(line, "name_strindex", 13))
        q->fn_name[q->nfn - 1] = num_after(line);
    else if (!strcmp(path, "/dictionary/location_table/lines") && !strncmp(line, "function_index", 14))
        q->loc_fn[q->nloc - 1] = q->loc_fn[q->nloc - 1] < 0 ? num_after(line) : q->loc_fn[q->nloc - 1];
    else if (!strcmp(path, "/dictionary/stack_table") && q->stack_leaf[q->nstack - 1] < 0)
        q->stack_leaf[q->nstack - 1] = num_after(line); /* innermost first: the leaf */
}

/* A message opened at path (its name last). */
static void req_open(otlp_req *q, const char *path) {
    if (!strcmp(path, "/resource_profiles/scope_profiles/profiles") && q->nprof < MAX_PROFILES)
        memset(&q->prof[q->nprof++], 0, sizeof q->prof[0]);
    else if (!strcmp(path, "/resource_profiles/scope_profiles/profiles/samples") && q->nsamples < MAX_SAMPLES) {
        q->sample_prof[q->nsamples] = q->nprof - 1;
        q->sample_stack[q->nsamples] = 0;
        q->sample_value[q->nsamples++] = 0;
    } else if (!strcmp(path, "/dictionary/function_table") && q->nfn < MAX_ITEMS)
        q->fn_name[q->nfn++] = 0;
    else if (!strcmp(path, "/dictionary/location_table") && q->nloc < MAX_ITEMS)
        q->loc_fn[q->nloc++] = -1;
    else if (!strcmp(path, "/dictionary/stack_table") && q->nstack < MAX_ITEMS)
        q->stack_leaf[q->nstack++] = -1;
}

/* Decodes body with protoc into q. 0, or -1 saying why. */
static int req_read(const char *body, otlp_req *q) {
    const char *script = e2e_env("DNPROF_INGEST_SERVER");
    char dir[PATH_MAX], cmd[PATH_MAX * 3], line[4096], path[512] = "", key[128] = "";
    snprintf(dir, sizeof dir, "%s", script ? script : ".");
    *(strrchr(dir, '/') ? strrchr(dir, '/') : dir) = 0;
    snprintf(cmd, sizeof cmd,
             "protoc --decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest "
             "-I '%s/proto' opentelemetry/proto/collector/profiles/v1development/profiles_service.proto < '%s'",
             dir, body);
    memset(q, 0, offsetof(otlp_req, strs));
    q->nstrs = q->nfn = q->nloc = q->nstack = 0;
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p)) {
        char *t = line + strspn(line, " ");
        t[strcspn(t, "\n")] = 0;
        size_t lt = strlen(t);
        if (lt > 2 && !strcmp(t + lt - 2, " {")) {
            snprintf(path + strlen(path), sizeof path - strlen(path), "/%.*s", (int)(lt - 2), t);
            req_open(q, path);
        } else if (!strcmp(t, "}"))
            *(strrchr(path, '/') ? strrchr(path, '/') : path) = 0;
        else if (!strcmp(path, "/resource_profiles/scope_profiles/profiles/samples") && !strncmp(t, "values:", 7))
            q->sample_value[q->nsamples - 1] += atof(t + 7);
        else
            req_line(q, path, t, key);
    }
    int rc = p ? pclose(p) : -1;
    if (rc != 0 || q->nprof == 0) {
        fprintf(stderr, "protoc --decode of %s failed (%d) or found no profile\n", body, rc);
        return -1;
    }
    return 0;
}

static const char *str_at(const otlp_req *q, long i) {
    return i >= 0 && (size_t)i < q->nstrs ? q->strs[i] : "?";
}

/* Profile p's "type/unit". */
static void type_of(const otlp_req *q, int p, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", str_at(q, q->prof[p].type), str_at(q, q->prof[p].unit));
}

/* The values of profile p's samples whose leaf is HOT[h] into hot[h]. */
static void hot_values(const otlp_req *q, int p, double hot[3]) {
    for (size_t i = 0; i < q->nsamples; i++) {
        long s = q->sample_stack[i];
        if (q->sample_prof[i] != p || s <= 0 || (size_t)s >= q->nstack)
            continue;
        long loc = q->stack_leaf[s];
        long fn = loc >= 0 && (size_t)loc < q->nloc ? q->loc_fn[loc] : -1;
        const char *name = fn >= 0 && (size_t)fn < q->nfn ? str_at(q, q->fn_name[fn]) : "?";
        for (int h = 0; h < 3; h++)
            hot[h] += !strcmp(name, HOT[h]) ? q->sample_value[i] : 0;
    }
}

static int by_time(const void *a, const void *b) {
    const otlp_req *x = *(otlp_req *const *)a, *y = *(otlp_req *const *)b;
    return x->prof[0].time_ns < y->prof[0].time_ns ? -1 : x->prof[0].time_ns > y->prof[0].time_ns;
}

/* dnprof run --every 1s --otlp: one request per window, each with the
 * resource (service.name, OTEL_RESOURCE_ATTRIBUTES, --label, process.pid),
 * the header of OTEL_EXPORTER_OTLP_HEADERS, a samples/count and a
 * cpu/nanoseconds profile of the window's time, windows one after another,
 * and the program's shares over them all. */
TEST(e2e_push_otlp) {
    e2e_run r;
    OTLP_TEST_SETUP(&r, "e2e_push_otlp");
    ingest s;
    const char *env[] = {"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=e2e%20run,env=overridden",
                         "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20otel-e2e", NULL};
    const char *opts[] = {"--label", "env=e2e", NULL};
    ASSERT_EQ(ingest_push_run(&r, "ok", 1, &s, opts, "6", env), 0);
    static request q[64];
    size_t n = ingest_requests(&s, q, 64);
    ASSERT_GE(n, 3);
    static otlp_req reqs[64];
    otlp_req *by[64];
    double hot[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        ASSERT_STREQ(q[i].path, "/v1development/profiles");
        ASSERT_STREQ(q[i].format, "application/x-protobuf");
        ASSERT_STREQ(q[i].auth, "Bearer_otel-e2e");
        ASSERT_STREQ(q[i].spy, "-"); /* no Content-Encoding */
        otlp_req *o = by[i] = &reqs[i];
        ASSERT_EQ(req_read(q[i].body, o), 0);
        fprintf(stderr, "request %zu: %s\n", i + 1, o->attrs);
        ASSERT_NE(strstr(o->attrs, "service.name=Scenarios;"), NULL);
        ASSERT_NE(strstr(o->attrs, "deployment.environment.name=e2e run;"), NULL);
        ASSERT_NE(strstr(o->attrs, ";env=e2e;"), NULL);
        ASSERT_EQ(strstr(o->attrs, "overridden"), NULL);
        ASSERT_NE(strstr(o->attrs, ";process.pid="), NULL);
        ASSERT_EQ(o->nprof, 2);
        char t0[128], t1[128];
        type_of(o, 0, t0, sizeof t0);
        type_of(o, 1, t1, sizeof t1);
        ASSERT_STREQ(t0, "samples/count");
        ASSERT_STREQ(t1, "cpu/nanoseconds");
        ASSERT_EQ(o->prof[1].period, 10000000);
        ASSERT_EQ(o->prof[0].time_ns, o->prof[1].time_ns);
        ASSERT_GT(o->prof[0].time_ns, 1700000000ull * 1000000000ull);
        ASSERT_GT(o->prof[0].duration_ns, 0);
        ASSERT_LT(o->prof[0].duration_ns, 1500000000ull);
        hot_values(o, 1, hot);
    }
    qsort(by, n, sizeof *by, by_time);
    for (size_t i = 1; i < n; i++) { /* one after another: each starts where the one before ended */
        unsigned long long end = by[i - 1]->prof[0].time_ns + by[i - 1]->prof[0].duration_ns;
        ASSERT_GT(by[i]->prof[0].time_ns, by[i - 1]->prof[0].time_ns);
        ASSERT_LT(llabs((long long)(by[i]->prof[0].time_ns - end)), 2000000);
        if (i + 1 < n) /* the last is cut at the program's end */
            ASSERT_GT(by[i]->prof[0].duration_ns, 900000000ull);
    }
    ASSERT_EQ(shares_ok(hot, 1e7), 0);
    ASSERT_EQ(said_sent(&r, "/v1development/profiles: ", n), 1);
    return 0;
}

/* The backend answering 500, or 200 with a partial success that rejected
 * profiles: the program runs as it would (its output, its exit code), and
 * the summary counts the windows not sent and says why. */
TEST(e2e_push_otlp_500) {
    static const char *const modes[] = {"500", "partial"};
    static const char *const why[] = {"HTTP 500", "rejected by the backend: too old"};
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_push_otlp_500"), 0);
    for (int m = 0; m < 2; m++) {
        ingest s;
        const char *opts[] = {"--push-timeout", "500ms", NULL};
        ASSERT_EQ(ingest_push_run(&r, modes[m], 1, &s, opts, "1.5", NULL), 0);
        ASSERT_EQ(said_sent(&r, "/v1development/profiles: ", 0), 1);
        ASSERT_EQ(said(&r, " not sent ("), 1);
        ASSERT_EQ(said(&r, why[m]), 1);
        static request q[64];
        size_t n = ingest_requests(&s, q, 64);
        /* 500: the first window three tries (two retries), the later ones one;
         * a partial success is not tried again: one request a window */
        ASSERT_GE(n, m == 0 ? 3 : 1);
    }
    return 0;
}

/* dnprof push --once --otlp env as a sidecar: windows that an agent loaded
 * through the environment wrote (nobody reading them), shipped to the
 * endpoint of OTEL_EXPORTER_OTLP_ENDPOINT (the signal's path appended) with
 * OTEL_SERVICE_NAME as service.name, gzip'd (OTEL_EXPORTER_OTLP_COMPRESSION),
 * one request per window, each window deleted once shipped. */
TEST(e2e_push_otlp_sidecar) {
    e2e_run r;
    OTLP_TEST_SETUP(&r, "e2e_push_otlp_sidecar");
    const char *bin = e2e_env("DNPROF_BIN");
    char wdir[PATH_MAX + 16], endpoint[128];
    snprintf(wdir, sizeof wdir, "%s/windows", r.dir);
    ASSERT_EQ(windows_unread(&r, wdir, "1000", "100", "3"), 0);
    ingest s;
    ASSERT_EQ(ingest_start(&r, "ok", 1, &s), 0);
    snprintf(endpoint, sizeof endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", s.port);
    const char *penv[] = {endpoint, "OTEL_SERVICE_NAME=sidecar-app", "OTEL_EXPORTER_OTLP_COMPRESSION=gzip", NULL};
    const char *pargv[] = {bin, "push", "--once", "--otlp", "env", wdir, NULL};
    int ran = e2e_exec(&r, (char *const *)pargv, penv);
    ingest_stop(&s);
    ASSERT_EQ(ran, 0);
    ASSERT_STATUS(&r, 0);
    static request q[64];
    size_t n = ingest_requests(&s, q, 64);
    ASSERT_GE(n, 2);
    static otlp_req o;
    for (size_t i = 0; i < n; i++) {
        ASSERT_STREQ(q[i].path, "/v1development/profiles");
        ASSERT_STREQ(q[i].spy, "gzip"); /* Content-Encoding: the server kept the body uncompressed */
        ASSERT_EQ(req_read(q[i].body, &o), 0);
        ASSERT_NE(strstr(o.attrs, "service.name=sidecar-app;"), NULL);
        ASSERT_EQ(o.nprof, 2);
    }
    ASSERT_EQ(said_sent(&r, "/v1development/profiles: ", n), 1);
    ASSERT_EQ(windows_left(wdir), 0); /* shipped, deleted */
    return 0;
}

/* dnprof attach --every --otlp: windows of a program that was running
 * already, each a request with the program's pid and the window's profiles. */
TEST(e2e_push_otlp_attach) {
    e2e_run r;
    OTLP_TEST_SETUP(&r, "e2e_push_otlp_attach");
    const char *bin = e2e_env("DNPROF_BIN");
    char pid[32], gofile[PATH_MAX + 32], url[64], want[64];
    pid_t prog = sample_waiting(&r, "4", pid, gofile, sizeof gofile);
    ASSERT_GT(prog, 0);
    ingest s;
    ASSERT_EQ(ingest_start(&r, "ok", 1, &s), 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    const char *argv[] = {bin, "attach", pid, "--every", "1s", "--otlp", url, "--duration", "4s", NULL};
    int ran = attach_sample(&r, argv, prog, gofile);
    ingest_stop(&s);
    ASSERT_EQ(ran, 0);
    static request q[64];
    size_t n = ingest_requests(&s, q, 64);
    ASSERT_GE(n, 2);
    static otlp_req o;
    double hot[3] = {0, 0, 0};
    snprintf(want, sizeof want, ";process.pid=%s;", pid);
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(req_read(q[i].body, &o), 0);
        ASSERT_NE(strstr(o.attrs, want), NULL);
        ASSERT_EQ(o.nprof, 2);
        hot_values(&o, 1, hot);
    }
    ASSERT_EQ(shares_ok(hot, 1e7), 0);
    ASSERT_EQ(said_sent(&r, "/v1development/profiles: ", n), 1);
    return 0;
}
