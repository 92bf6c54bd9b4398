/* test_pprof.c: the pprof encoder decoded back by an independent decoder
 * (pprof_decode.h); a --calls tree and a synthetic --alloc trace as pprof,
 * their values adding up to the trees' totals; the alloc report of known samples;
 * native frames' libraries (frame_lib.c) as pprof Mappings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calltree.h"
#include "export.h"
#include "pprof.h"
#include "pprof_decode.h"
#include "synth.h"
#include "test.h"

static const char *tmp_path(const char *name) {
    static char path[2][512];
    static int k;
    const char *base = getenv("TMPDIR");
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%s/dnprof-pprof-%d-%s", base && *base ? base : "/tmp", (int)getpid(), name);
    return path[k];
}

TEST(pprof_encode_roundtrip) {
    dnp_pprof_type types[2] = {{"samples", "count"}, {"alloc_space", "bytes"}};
    dnp_pprof *p = dnp_pprof_new(types, 2, &types[1], 102400);
    ASSERT_NE(p, NULL);
    dnp_pprof_set_default(p, 1);
    const char *s1[] = {"Leaf", "Mid", "Main"};
    const char *s2[] = {"Other", "Main"};
    int64_t v1[2] = {3, 300000}, v2[2] = {1, 127}; /* 127, 128: a varint's one- and two-byte edge */
    int64_t v3[2] = {128, (int64_t)1 << 40};
    ASSERT_EQ(dnp_pprof_add(p, s1, 3, v1), 0);
    ASSERT_EQ(dnp_pprof_add(p, s2, 2, v2), 0);
    ASSERT_EQ(dnp_pprof_add(p, s1, 3, v3), 0);
    uint8_t *raw;
    size_t len;
    ASSERT_EQ(dnp_pprof_encode(p, &raw, &len), 0);
    pd_profile pr;
    ASSERT_EQ(pd_decode_raw(raw, len, &pr), 0);
    free(raw);
    ASSERT_EQ(pr.ntypes, 2);
    ASSERT_STREQ(pd_str(&pr, pr.type[1]), "alloc_space");
    ASSERT_STREQ(pd_str(&pr, pr.unit[1]), "bytes");
    ASSERT_STREQ(pd_str(&pr, pr.default_type), "alloc_space");
    ASSERT_EQ(pr.period, 102400);
    ASSERT_EQ(pr.nsamples, 3);
    ASSERT_EQ(pr.samples[0].nloc, 3);
    ASSERT_STREQ(pd_loc_name(&pr, pr.samples[0].loc[0]), "Leaf");
    ASSERT_STREQ(pd_loc_name(&pr, pr.samples[0].loc[2]), "Main");
    ASSERT_STREQ(pd_loc_name(&pr, pr.samples[1].loc[0]), "Other");
    ASSERT_EQ(pr.samples[1].loc[1], pr.samples[0].loc[2]); /* Main: one location */
    ASSERT_EQ(pr.samples[1].val[1], 127);
    ASSERT_EQ(pr.samples[2].val[0], 128);
    ASSERT_EQ(pr.samples[2].val[1], (uint64_t)1 << 40);
    ASSERT_EQ(pr.nfns, 4);
    pd_free(&pr);

    const char *out = tmp_path("roundtrip.pb.gz");
    FILE *f = fopen(out, "wb");
    ASSERT_NE(f, NULL);
    ASSERT_EQ(dnp_pprof_write(p, f), 0);
    fclose(f);
    dnp_pprof_free(p);
    uint8_t *gz = (uint8_t *)test_read_file(out, &len);
    ASSERT_NE(gz, NULL);
    ASSERT_GT(len, 18);
    ASSERT_EQ(gz[0], 0x1f);
    ASSERT_EQ(gz[1], 0x8b); /* gzip */
    ASSERT_EQ(pd_decode_gzip(gz, len, &pr), 0);
    ASSERT_EQ(pr.nsamples, 3);
    pd_free(&pr);
    free(gz);
    unlink(out);
    return 0;
}

static void call_node(synth *s, uint64_t t, uint64_t node, uint64_t parent, uint64_t func, uint64_t name,
                      uint64_t calls, uint64_t incl, uint64_t excl) {
    uint64_t v[DNP_NV_CallNode] = {1001, node, parent, func, name, calls, incl, excl, 0};
    synth_event(s, 1, t, DNP_EV_CallNode, v);
}

/* Main(1000/100) > Work(600/200) > Fib(400/400); Main > Log(300/300) */
TEST(pprof_calls_tree) {
    const char *path = tmp_path("calls.trace");
    synth *s = synth_open(path, 4242, "dotnet calls.dll");
    ASSERT_NE(s, NULL);
    uint64_t m = synth_string(s, "Ns.P::Main"), w = synth_string(s, "Ns.P::Work"), f = synth_string(s, "Ns.P::Fib"),
             l = synth_string(s, "Ns.P::Log");
    synth_thread(s, 1, 1001);
    call_node(s, 10, 1, 0, 0x10, m, 1, 1000, 100);
    call_node(s, 10, 2, 1, 0x20, w, 10, 600, 200);
    call_node(s, 10, 3, 2, 0x30, f, 20, 400, 400);
    call_node(s, 10, 4, 1, 0x40, l, 5, 300, 300);
    ASSERT_EQ(synth_close(s, 1), 0);
    dnp_trace *t = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    dnp_calltree *ct = NULL;
    ASSERT_EQ(dnp_calltree_build(t, &ct, err, sizeof err), 0);
    const char *out = tmp_path("calls.pb.gz");
    FILE *fo = fopen(out, "wb");
    ASSERT_NE(fo, NULL);
    ASSERT_EQ(dnp_export_pprof(ct, fo, NULL), 0);
    fclose(fo);
    size_t len;
    uint8_t *gz = (uint8_t *)test_read_file(out, &len);
    pd_profile pr;
    ASSERT_NE(gz, NULL);
    ASSERT_EQ(pd_decode_gzip(gz, len, &pr), 0);
    ASSERT_STREQ(pd_str(&pr, pr.type[0]), "calls");
    ASSERT_STREQ(pd_str(&pr, pr.type[1]), "time");
    ASSERT_STREQ(pd_str(&pr, pr.unit[1]), "nanoseconds");
    ASSERT_EQ(pr.nsamples, 4);
    uint64_t total = 0, calls = 0;
    int fib = 0;
    for (size_t i = 0; i < pr.nsamples; i++) {
        total += (uint64_t)pr.samples[i].val[1];
        calls += (uint64_t)pr.samples[i].val[0];
        if (pr.samples[i].nloc == 3 && !strcmp(pd_loc_name(&pr, pr.samples[i].loc[0]), "Ns.P::Fib") &&
            !strcmp(pd_loc_name(&pr, pr.samples[i].loc[1]), "Ns.P::Work") &&
            !strcmp(pd_loc_name(&pr, pr.samples[i].loc[2]), "Ns.P::Main"))
            fib = pr.samples[i].val[1] == 400 && pr.samples[i].val[0] == 20;
    }
    ASSERT_EQ(total, 1000); /* every self time once: the root's total */
    ASSERT_EQ(calls, 36);
    ASSERT(fib);
    pd_free(&pr);
    free(gz);
    dnp_calltree_free(ct);
    dnp_trace_free(t);
    unlink(out);
    unlink(path);
    return 0;
}

/* Known samples: 3 of Blob (96 B) from Make<-Main one by one (AllocSample),
 * 2 of Dot (24 B) from Main added up (AllocSite, as the agent writes them by
 * default): bytes 3*102400 and 2*102400. */
static const char *write_alloc_trace(void) {
    const char *path = tmp_path("alloc.trace");
    synth *s = synth_open(path, 4343, "dotnet alloc.dll");
    if (!s)
        return NULL;
    uint64_t blob = synth_string(s, "Ns.Blob"), dot = synth_string(s, "Ns.Dot");
    uint64_t st1 = synth_string(s, "Ns.P::Make\nNs.P::Main"), st2 = synth_string(s, "Ns.P::Main");
    synth_thread(s, 1, 2001);
    uint64_t cfg[DNP_NV_AllocSampling] = {1, 102400};
    synth_event(s, 1, 1, DNP_EV_AllocSampling, cfg);
    for (int i = 0; i < 3; i++) {
        uint64_t v[DNP_NV_AllocSample] = {blob, 96, 102400, 0, st1};
        synth_event(s, 1, 10 + (uint64_t)i, DNP_EV_AllocSample, v);
    }
    uint64_t v[DNP_NV_AllocSite] = {dot, st2, 0, 2, 204800, 48, 8533333};
    synth_event(s, 1, 20, DNP_EV_AllocSite, v);
    return synth_close(s, 1) == 0 ? path : NULL;
}

static char *run_out(const char *cmd) {
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    char *b = calloc(1, 65536);
    size_t n = b ? fread(b, 1, 65535, f) : 0;
    (void)n;
    int rc = pclose(f);
    if (rc != 0) {
        fprintf(stderr, "pprof: '%s' exited %d\n", cmd, rc);
        free(b);
        return NULL;
    }
    return b;
}

TEST(pprof_alloc_report_and_export) {
    const char *path = write_alloc_trace();
    ASSERT_NE(path, NULL);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s report --alloc --json %s", DNPROF_BIN, path);
    char *json = run_out(cmd);
    ASSERT_NE(json, NULL);
    int ok = strstr(json, "{\"type\":\"Ns.Blob\",\"samples\":3,\"bytes\":307200,\"objects\":3200,\"share\":0.6000}") &&
             strstr(json, "{\"type\":\"Ns.Dot\",\"samples\":2,\"bytes\":204800,\"objects\":8533,\"share\":0.4000}") &&
             strstr(json, "\"stack\":[\"Ns.P::Make\",\"Ns.P::Main\"]");
    if (!ok)
        fprintf(stderr, "pprof: report --alloc --json said:\n%s\n", json);
    free(json);
    ASSERT(ok);

    const char *out = tmp_path("alloc.pb.gz");
    snprintf(cmd, sizeof cmd, "%s convert --format pprof -o %s %s 2>&1", DNPROF_BIN, out, path);
    char *said = run_out(cmd);
    ASSERT_NE(said, NULL);
    free(said);
    size_t len;
    uint8_t *gz = (uint8_t *)test_read_file(out, &len);
    pd_profile pr;
    ASSERT_NE(gz, NULL);
    ASSERT_EQ(pd_decode_gzip(gz, len, &pr), 0);
    ASSERT_STREQ(pd_str(&pr, pr.type[1]), "alloc_space");
    ASSERT_STREQ(pd_str(&pr, pr.unit[1]), "bytes");
    ASSERT_EQ(pr.nsamples, 2);
    uint64_t blob = 0, dot = 0;
    for (size_t i = 0; i < pr.nsamples; i++) {
        const pd_sample *sm = &pr.samples[i];
        const char *leaf = pd_loc_name(&pr, sm->loc[0]);
        if (leaf && !strcmp(leaf, "Ns.Blob") && sm->nloc == 3 && !strcmp(pd_loc_name(&pr, sm->loc[1]), "Ns.P::Make"))
            blob += (uint64_t)sm->val[1];
        if (leaf && !strcmp(leaf, "Ns.Dot") && sm->nloc == 2)
            dot += (uint64_t)sm->val[1];
    }
    ASSERT_EQ(blob, 307200);
    ASSERT_EQ(dot, 204800);
    pd_free(&pr);
    free(gz);
    unlink(out);
    unlink(path);
    return 0;
}

/* A trace without samples: report --alloc says so and fails. */
TEST(pprof_alloc_report_no_samples) {
    const char *path = tmp_path("nosamples.trace");
    synth *s = synth_open(path, 4444, "dotnet none.dll");
    ASSERT_NE(s, NULL);
    synth_thread(s, 1, 3001);
    uint64_t v[DNP_NV_ThreadCreated] = {0x1234};
    synth_event(s, 1, 1, DNP_EV_ThreadCreated, v);
    ASSERT_EQ(synth_close(s, 1), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s report --alloc %s 2>&1; echo \"exit $?\"", DNPROF_BIN, path);
    char *said = run_out(cmd);
    ASSERT_NE(said, NULL);
    int ok = strstr(said, "has no sampled allocations: record it with dnprof run --alloc") && strstr(said, "exit 1");
    if (!ok)
        fprintf(stderr, "pprof: report --alloc on a trace without samples said:\n%s\n", said);
    free(said);
    unlink(path);
    ASSERT(ok);
    return 0;
}

/* ---- native frames' libraries (src/export/frame_lib.c) and their Mappings ---- */

static const char *lib_of(const char *name) {
    static char buf[256];
    return dnp_frame_library(name, buf, sizeof buf) ? buf : "";
}

TEST(frame_library_of_names) {
    ASSERT_STREQ(lib_of("libcrypto.so.3!SHA256_Update"), "libcrypto.so.3");
    ASSERT_STREQ(lib_of("[libcoreclr.so+0x5fc990]"), "libcoreclr.so");
    ASSERT_STREQ(lib_of("[dotnet+0x6bb0]"), "dotnet");
    ASSERT_STREQ(lib_of("[libc.so.6]"), "libc.so.6");
    ASSERT_STREQ(lib_of("Scenarios.UnwindScenario::Hash"), "");
    ASSERT_STREQ(lib_of("System.Collections.Generic.List`1<T>::Add"), "");
    ASSERT_STREQ(lib_of("[waiting]"), "");
    ASSERT_STREQ(lib_of("[anonymous code]"), "");
    ASSERT_STREQ(lib_of("[GC gen2]"), "");
    ASSERT_STREQ(lib_of("[JIT]"), "");
    ASSERT_STREQ(lib_of(""), "");
    return 0;
}

/* The Mappings (field 3: id, filename) and each Location's mapping_id (field 2). */
static int read_mappings(const uint8_t *p, size_t len, uint64_t file[8], size_t *nmaps, uint64_t loc_map[16]) {
    const uint8_t *end = p + len;
    *nmaps = 0;
    while (p < end) {
        unsigned f, g;
        uint64_t v, w, id = 0, val = 0;
        const uint8_t *b = NULL, *bb;
        int wt = pd_field(&p, end, &f, &v, &b);
        if (wt < 0)
            return -1;
        if (wt != 2 || (f != 3 && f != 4))
            continue;
        for (const uint8_t *m = b; m < b + v;) {
            if (pd_field(&m, b + v, &g, &w, &bb) < 0)
                return -1;
            if (g == 1)
                id = w;
            else if ((f == 3 && g == 5) || (f == 4 && g == 2))
                val = w;
        }
        if (f == 3 && *nmaps < 8)
            file[(*nmaps)++] = val;
        else if (f == 4 && id < 16)
            loc_map[id] = val;
    }
    return 0;
}

/* p encoded (*raw, *len: free it) and decoded, with its mappings; NULL on failure. */
static pd_profile *encode_decode(dnp_pprof *p, uint8_t **raw, size_t *len, uint64_t file[8], size_t *nmaps,
                                 uint64_t loc_map[16]) {
    pd_profile *pr = calloc(1, sizeof *pr);
    if (!pr || dnp_pprof_encode(p, raw, len) != 0 || pd_decode_raw(*raw, *len, pr) != 0 ||
        read_mappings(*raw, *len, file, nmaps, loc_map) != 0) {
        free(pr);
        return NULL;
    }
    return pr;
}

TEST(pprof_native_frames_mapped) {
    dnp_pprof_type types[2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    dnp_pprof *p = dnp_pprof_new(types, 2, &types[1], 1000000);
    ASSERT(p);
    const char *a[] = {"libcrypto.so.3!SHA256_Update", "Ns.Type::Hash", "[libcoreclr.so+0x10]"};
    const char *b[] = {"[libcrypto.so.3+0x29db40]", "Ns.Type::Hash"};
    int64_t v[2] = {1, 1000000};
    ASSERT_EQ(dnp_pprof_add(p, a, 3, v), 0);
    ASSERT_EQ(dnp_pprof_add(p, b, 2, v), 0);
    uint8_t *raw;
    size_t len, nmaps;
    uint64_t file[8], loc_map[16] = {0};
    pd_profile *pr = encode_decode(p, &raw, &len, file, &nmaps, loc_map);
    ASSERT(pr);
    ASSERT_EQ(nmaps, 2); /* libcrypto.so.3, libcoreclr.so: one each */
    ASSERT_STREQ(pr->strs[file[0]], "libcrypto.so.3");
    ASSERT_STREQ(pr->strs[file[1]], "libcoreclr.so");
    /* locations are the functions in order: both libcrypto frames in mapping 1 */
    ASSERT_EQ(loc_map[1], 1);
    ASSERT_EQ(loc_map[2], 0);
    ASSERT_EQ(loc_map[3], 2);
    ASSERT_EQ(loc_map[4], 1);
    pd_free(pr);
    free(pr);
    free(raw);
    dnp_pprof_free(p);
    return 0;
}

/* The program is the first mapping (go tool pprof's "File:"): "web.dll" for
 * "dotnet web.dll"; a function has no system_name, so that pprof keeps its
 * name as written ("Fetch (async)") instead of cutting the parentheses off
 * as it does for a C++ name; with go installed, go tool pprof shows it so. */
TEST(pprof_program_and_names_kept) {
    dnp_pprof_type types[2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    dnp_pprof *p = dnp_pprof_new(types, 2, &types[1], 1000000);
    ASSERT(p);
    dnp_pprof_set_program(p, "/usr/share/dotnet/dotnet /srv/app/web.dll --urls http://*:80");
    const char *a[] = {"App.Orders::Fetch (async)", "[libcoreclr.so+0x10]"};
    int64_t v[2] = {3, 3000000};
    ASSERT_EQ(dnp_pprof_add(p, a, 2, v), 0);
    uint8_t *raw;
    size_t len, nmaps;
    uint64_t file[8], loc_map[16] = {0};
    pd_profile *pr = encode_decode(p, &raw, &len, file, &nmaps, loc_map);
    ASSERT(pr);
    ASSERT_EQ(nmaps, 2);
    ASSERT_STREQ(pr->strs[file[0]], "web.dll");
    ASSERT_STREQ(pr->strs[file[1]], "libcoreclr.so");
    for (size_t i = 0; i < pr->nfns; i++)
        ASSERT_EQ(pr->fn_sys[i], 0);
    char path[] = "/tmp/dnprof-pprof-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    FILE *f = fdopen(fd, "wb");
    ASSERT(f);
    ASSERT_EQ(dnp_pprof_write(p, f), 0);
    fclose(f);
    if (system("go version >/dev/null 2>&1") == 0) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "go tool pprof -top %s 2>/dev/null | grep -q 'App.Orders::Fetch (async)$'", path);
        ASSERT_EQ(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "go tool pprof -top %s 2>/dev/null | grep -q '^File: web.dll$'", path);
        ASSERT_EQ(system(cmd), 0);
    }
    unlink(path);
    pd_free(pr);
    free(pr);
    free(raw);
    dnp_pprof_free(p);
    return 0;
}
