/* test_report_traced.c: `dnprof report` of the traced methods (--trace,
 * src/cli/report_traced.c) on synthetic traces: the percentiles read from the
 * histogram, the callers, the overloads told apart, a failed method; and
 * traces it must survive: none of these events (an empty set: no qsort of
 * NULL, found by fuzz_trace), calls of an id never named, a histogram that
 * is not one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_check.h"
#include "synth.h"
#include "test.h"

#ifdef DNPROF_BIN
static char *run(const char *args, const char *path, int *status) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>&1", DNPROF_BIN, args, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    while (out && n + 1 < cap) {
        size_t k = fread(out + n, 1, cap - 1 - n, p);
        if (!k)
            break;
        n += k;
    }
    int st = pclose(p);
    if (status)
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (out)
        out[n] = 0;
    return out;
}

/* Two overloads of App.Orders::Place (100 calls: 90 of ~1 us, 10 of ~1 ms;
 * two callers), one failed method, a TracedCalls of an id never named and a
 * histogram that is not one. */
static int write_traced(const char *path) {
    synth *s = synth_open(path, 4242, "dotnet app.dll");
    if (!s)
        return -1;
    synth_thread(s, 1, 4242);
    uint64_t place = synth_string(s, "App.Orders::Place"), failed = synth_string(s, "App.Orders::Weird");
    /* 1000 ns: e = 9, sub = (1000 >> 6) & 7 = 7 -> bucket 63; 1000000 ns: e = 19,
     * sub = (1000000 >> 16) & 7 = 7 -> bucket 143 */
    uint64_t hist = synth_string(s, "63:90 143:10"), other = synth_string(s, "1:1");
    uint64_t bad = synth_string(s, "x:y 999:5 7");
    uint64_t caller1 = synth_string(s, "App.Api::Post"), caller2 = synth_string(s, "App.Jobs::Retry");
    uint64_t m0[] = {0, 0x1000, 0, 0x06000001, place, 4, 0};
    uint64_t m1[] = {1, 0x1000, 0, 0x06000002, place, 4, 0};
    uint64_t m2[] = {2, 0x1000, 0, 0x06000003, failed, 3, 0x80004005u};
    synth_event(s, 1, 10, DNP_EV_TracedMethod, m0);
    synth_event(s, 1, 10, DNP_EV_TracedMethod, m1);
    synth_event(s, 1, 10, DNP_EV_TracedMethod, m2);
    uint64_t c0[] = {0, 100, 90 * 1000 + 10 * 1000000, 1000100, hist};
    uint64_t c1[] = {1, 1, 5, 5, other};
    uint64_t c9[] = {9, 7, 70, 10, bad};
    synth_event(s, 1, 20, DNP_EV_TracedCalls, c0);
    synth_event(s, 1, 20, DNP_EV_TracedCalls, c1);
    synth_event(s, 1, 20, DNP_EV_TracedCalls, c9);
    uint64_t k0[] = {0, 0x7001, caller1, 70, 70 * 1000};
    uint64_t k1[] = {0, 0x7002, caller2, 30, 20 * 1000 + 10 * 1000000};
    synth_event(s, 1, 20, DNP_EV_TracedCaller, k0);
    synth_event(s, 1, 20, DNP_EV_TracedCaller, k1);
    return synth_close(s, 1);
}

TEST(report_traced_percentiles_callers) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-report-traced-%d.trace", (int)getpid());
    ASSERT_EQ(write_traced(path), 0);
    int status = -1;
    char *text = run("report", path, &status);
    ASSERT(text);
    ASSERT_EQ(status, 0);
    ASSERT_CONTAINS(text, "traced methods");
    ASSERT_CONTAINS(text, "App.Orders::Place [0x06000001]");
    ASSERT_CONTAINS(text, "App.Orders::Place [0x06000002]");
    ASSERT_CONTAINS(text, "from App.Api::Post");
    ASSERT_CONTAINS(text, "from App.Jobs::Retry");
    ASSERT_CONTAINS(text, "App.Orders::Weird was not traced (0x80004005)");
    free(text);
    char *json = run("report --json", path, &status);
    ASSERT(json);
    char err[256];
    jv *j = json_parse(json, strlen(json), err, sizeof err);
    if (!j)
        fprintf(stderr, "%s\n%s\n", err, json);
    ASSERT(j);
    const jv *arr = json_get(j, "traced");
    ASSERT(arr);
    ASSERT_EQ(arr->type, JV_ARR);
    ASSERT_EQ(arr->n, 4); /* id 9 too, named "?" */
    const jv *m = json_at(arr, 0); /* by total time: the 100 calls first */
    ASSERT_STREQ(json_str(m, "name"), "App.Orders::Place");
    ASSERT_EQ(json_num(m, "calls"), 100);
    ASSERT_EQ(json_num(m, "meanNs"), (90 * 1000 + 10 * 1000000) / 100);
    ASSERT_EQ(json_num(m, "p50Ns"), 992);     /* bucket 63: [960, 1024), its middle */
    ASSERT_EQ(json_num(m, "p99Ns"), 1000100); /* bucket 143 [983040, 1048576): its middle, past the max: the max */
    ASSERT_EQ(json_num(m, "maxNs"), 1000100);
    const jv *by = json_get(m, "byCaller");
    ASSERT(by);
    ASSERT_EQ(by->n, 2);
    ASSERT_STREQ(json_str(json_at(by, 0), "caller"), "App.Api::Post");
    ASSERT_EQ(json_num(json_at(by, 0), "calls"), 70);
    ASSERT_EQ(json_num(json_at(by, 1), "meanNs"), (20 * 1000 + 10 * 1000000) / 30);
    int failed = 0;
    for (size_t i = 0; i < arr->n; i++)
        failed += strcmp(json_str(json_at(arr, i), "state"), "failed") == 0;
    ASSERT_EQ(failed, 1);
    json_free(j);
    free(json);
    unlink(path);
    return 0;
}

/* A trace without traced methods and without calls: the calls report's one
 * line, and nothing undefined on the way (fuzz_trace, UBSan: qsort of NULL). */
TEST(report_traced_none) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-report-traced-none-%d.trace", (int)getpid());
    synth *s = synth_open(path, 4242, "dotnet app.dll");
    ASSERT(s);
    ASSERT_EQ(synth_close(s, 1), 0);
    int status = 0;
    char *text = run("report", path, &status);
    ASSERT(text);
    ASSERT_EQ(status, 1);
    ASSERT_CONTAINS(text, "no call data");
    ASSERT(!strstr(text, "runtime error"));
    free(text);
    unlink(path);
    return 0;
}
#endif
