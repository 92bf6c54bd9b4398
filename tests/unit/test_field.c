/* test_field.c: the sampled report's counts: a function's samples are the
 * samples it is in, counted once as its total time is, so that samples x the
 * period is its total (a stack that holds it twice is one sample). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_check.h"
#include "synth.h"
#include "test.h"
#include "trace_format.h"

#ifdef DNPROF_BIN
#define PERIOD 10000000ull /* 100 Hz */

/* Run (10 samples) > F (4) > F (2, a stack with F twice); Run > G (6). */
static int write_sampled(const char *path) {
    synth *w = synth_open(path, 4242, "dotnet sampled.dll");
    if (!w)
        return -1;
    uint64_t run = synth_string(w, "App.P::Run"), f = synth_string(w, "App.P::F"), g = synth_string(w, "App.P::G");
    synth_thread(w, 1, 1001);
    uint64_t cfg[3] = {1, 100, PERIOD};
    synth_event(w, 1, 0, DNP_EV_SampleConfig, cfg);
    uint64_t nodes[4][9] = {
        {1001, 1, 0, 0x100, run, 10, 10 * PERIOD, 0, 0},
        {1001, 2, 1, 0x200, f, 4, 4 * PERIOD, 2 * PERIOD, 2},
        {1001, 3, 2, 0x200, f, 2, 2 * PERIOD, 2 * PERIOD, 2},
        {1001, 4, 1, 0x300, g, 6, 6 * PERIOD, 6 * PERIOD, 6},
    };
    for (int i = 0; i < 4; i++)
        synth_event(w, 1, 1000 + (uint64_t)i, DNP_EV_SampleNode, nodes[i]);
    return synth_close(w, 1);
}

/* The whole stdout of `dnprof ARGS` into buf (static); its length. */
static size_t run_dnprof(const char *args, char *buf, size_t cap) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s", DNPROF_BIN, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    size_t len = fread(buf, 1, cap - 1, p);
    pclose(p);
    buf[len] = 0;
    return len;
}

TEST(report_samples_counted_once) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-field-samples-%d.trace", (int)getpid());
    ASSERT_EQ(write_sampled(path), 0);

    char args[512];
    snprintf(args, sizeof args, "report --json '%s'", path);
    static char buf[1 << 16];
    size_t len = run_dnprof(args, buf, sizeof buf);
    unlink(path);
    char err[160];
    jv *v = json_parse(buf, len, err, sizeof err);
    if (!v)
        fprintf(stderr, "report --json: %s\n%s\n", err, buf);
    ASSERT_NE(v, NULL);
    const jv *fs = json_get(v, "functions");
    ASSERT_NE(fs, NULL);
    int seen = 0;
    for (size_t i = 0; i < fs->n; i++) {
        const jv *fn = json_at(fs, i);
        const char *name = json_str(fn, "name");
        uint64_t calls = (uint64_t)json_num(fn, "calls"), total = (uint64_t)json_num(fn, "totalNs");
        ASSERT_EQ(calls * PERIOD, total);
        if (name && !strcmp(name, "App.P::F")) {
            ASSERT_EQ(calls, 4);
            seen = 1;
        }
    }
    json_free(v);
    ASSERT(seen);
    return 0;
}
/* `dnprof report` of write_sampled's trace (named by tag) into buf: 0, or -1
 * when the trace could not be written. */
static int sampled_report(const char *tag, char *buf, size_t cap) {
    char path[256], args[512];
    snprintf(path, sizeof path, "/tmp/dnprof-field-%s-%d.trace", tag, (int)getpid());
    if (write_sampled(path) != 0)
        return -1;
    snprintf(args, sizeof args, "report '%s'", path);
    run_dnprof(args, buf, cap);
    unlink(path);
    return 0;
}

/* Times in three significant digits with their zeros: G's 6 samples at 10 ms
 * are "60.0 ms" beside "100 ms" and "40.0 ms", not "60 ms" beside "45.4 ms". */
TEST(report_times_three_digits) {
    static char buf[1 << 16];
    ASSERT_EQ(sampled_report("digits", buf, sizeof buf), 0);
    int ok = strstr(buf, "60.0 ms") && strstr(buf, "40.0 ms") && strstr(buf, "100 ms") && !strstr(buf, " 60 ms");
    if (!ok)
        fprintf(stderr, "%s", buf);
    ASSERT(ok);
    return 0;
}

/* The table by self time lists only what has self time: Run, all of whose
 * samples are in F and G, is in the table by total only. */
TEST(report_self_table_without_zero_rows) {
    static char buf[1 << 16];
    ASSERT_EQ(sampled_report("self", buf, sizeof buf), 0);
    char *self = strstr(buf, "top functions by self time"), *total = self ? strstr(self, "top functions by total") : NULL;
    ASSERT_NE(total, NULL);
    *total = 0;
    int ok = strstr(self, "App.P::G") && strstr(self, "App.P::F") && !strstr(self, "App.P::Run") &&
             strstr(total + 1, "App.P::Run");
    if (!ok)
        fprintf(stderr, "%s", buf);
    ASSERT(ok);
    return 0;
}
#endif

#ifdef DNPROF_BIN
/* Run (all samples) > G (all - native), Run > [LIB+0x1000] (native - 1),
 * Run > [LIB+0x2000] (1): native samples in lib's code without names. */
static int write_unnamed(const char *path, uint64_t all, uint64_t native, const char *lib) {
    synth *w = synth_open(path, 4242, "dotnet sampled.dll");
    if (!w)
        return -1;
    char na[96], nb[96];
    snprintf(na, sizeof na, "[%s+0x1000]", lib);
    snprintf(nb, sizeof nb, "[%s+0x2000]", lib);
    uint64_t run = synth_string(w, "App.P::Run"), g = synth_string(w, "App.P::G");
    uint64_t a = synth_string(w, na), b = synth_string(w, nb);
    synth_thread(w, 1, 1001);
    uint64_t cfg[3] = {1, 100, PERIOD};
    synth_event(w, 1, 0, DNP_EV_SampleConfig, cfg);
    uint64_t nodes[4][9] = {
        {1001, 1, 0, 0x100, run, all, all * PERIOD, 0, 0},
        {1001, 2, 1, 0x300, g, all - native, (all - native) * PERIOD, (all - native) * PERIOD, all - native},
        {1001, 3, 1, 0, a, native - 1, (native - 1) * PERIOD, (native - 1) * PERIOD, native - 1},
        {1001, 4, 1, 0, b, 1, PERIOD, PERIOD, 1},
    };
    for (int i = 0; i < 4; i++)
        synth_event(w, 1, 1000 + (uint64_t)i, DNP_EV_SampleNode, nodes[i]);
    return synth_close(w, 1);
}

/* A tenth or more of the time in a library's code without names: the report
 * says so, adds it up over the library's functions, and says how to get the
 * runtime's symbols; less than a tenth: no note. */
TEST(report_unnamed_native_note) {
    char path[256], args[512];
    static char buf[1 << 16];
    snprintf(path, sizeof path, "/tmp/dnprof-field-unnamed-%d.trace", (int)getpid());
    snprintf(args, sizeof args, "report '%s'", path);
    ASSERT_EQ(write_unnamed(path, 10, 3, "libcoreclr.so"), 0);
    run_dnprof(args, buf, sizeof buf);
    int ok = strstr(buf, "note: 30.0% of the time is in code of libcoreclr.so without names") &&
             strstr(buf, "dotnet-symbol --symbols DIR/libcoreclr.so");
    if (!ok)
        fprintf(stderr, "%s\n", buf);
    ASSERT(ok);
    /* a single-file app: the runtime inside the program's executable, its symbols apart too */
    ASSERT_EQ(write_unnamed(path, 10, 4, "app"), 0);
    run_dnprof(args, buf, sizeof buf);
    ok = strstr(buf, "of app without names") && strstr(buf, "dotnet-symbol --symbols PATH/app") && !strstr(buf, "dbgsym");
    if (!ok)
        fprintf(stderr, "%s\n", buf);
    ASSERT(ok);
    ASSERT_EQ(write_unnamed(path, 11, 1, "libcoreclr.so"), 0);
    run_dnprof(args, buf, sizeof buf);
    unlink(path);
    ASSERT(strstr(buf, "App.P::G") && !strstr(buf, "without names"));
    return 0;
}
#endif
