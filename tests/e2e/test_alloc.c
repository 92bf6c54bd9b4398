/* test_alloc.c: sampled allocations (dnprof run/attach --alloc) on the real
 * runtime. The alloc scenario allocates about 400 MB, 75% of the bytes in
 * Scenarios.Blob objects (from MakeBlobs), 25% in Scenarios.Dot (from MakeDots),
 * and prints the bytes of each as the runtime counted them: the report's shares
 * must be within SHARE_TOLERANCE points of those.
 *
 * The tolerance, from the sampling statistics: with a mean sampling distance of
 * 100 KiB, 400 MB gives n ~ 4,000 samples of about the same weight each (the
 * objects are far smaller than the distance); a type's share is then a binomial
 * proportion with standard error sqrt(p(1-p)/n) = 0.7 points at p = 0.75, so
 * 3 points is over 4 standard errors (a false failure less than once in 10^4
 * runs). The runtime's own allocations (start-up, strings) take ~0.1%. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "pprof_decode.h"
#include "test.h"

#define SHARE_TOLERANCE 3.0
#define ALLOC_MB "400"
#define MIN_SAMPLES 2000

/* Samples in a trace: AllocSites add them up (AllocSample: one each). */
static uint64_t count_samples(const dnp_trace *t) {
    uint64_t n = 0;
    for (size_t i = 0; i < t->nevents; i++)
        n += t->events[i].kind == DNP_EV_AllocSite ? t->events[i].v[3] : t->events[i].kind == DNP_EV_AllocSample;
    return n;
}

typedef struct truth {
    double blob, dot; /* bytes */
} truth;

static int read_truth(const char *path, truth *t) {
    char *out = e2e_read_file(path, NULL);
    if (!out)
        return -1;
    const char *b = strstr(out, "Scenarios.Blob bytes="), *d = strstr(out, "Scenarios.Dot bytes=");
    int rc = b && d ? 0 : -1;
    if (rc == 0) {
        t->blob = strtod(b + strlen("Scenarios.Blob bytes="), NULL);
        t->dot = strtod(d + strlen("Scenarios.Dot bytes="), NULL);
        rc = t->blob > 0 && t->dot > 0 ? 0 : -1;
    }
    if (rc != 0)
        fprintf(stderr, "e2e: the alloc scenario did not print its bytes:\n%s\n", out);
    free(out);
    return rc;
}

/* The value after "key": in the report's JSON object of type name. */
static double json_type_value(const char *json, const char *type, const char *key) {
    char needle[256];
    snprintf(needle, sizeof needle, "{\"type\":\"%s\",\"samples\":", type);
    const char *at = strstr(json, needle);
    if (!at)
        return -1;
    const char *end = strchr(at, '}');
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *v = strstr(at, k);
    return v && v < end ? strtod(v + strlen(k), NULL) : -1;
}

/* Checks the report of trace against the truth: shares, sample count, paths. */
static int check_report(e2e_run *r, const truth *tr) {
    const char *args[] = {"report", "--alloc", "--json", "--top", "50", r->trace, NULL};
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        e2e_show_file("report stderr", r->err);
        return -1;
    }
    char *json = e2e_read_file(r->out, NULL);
    if (!json)
        return -1;
    int rc = 0;
    const char *s = strstr(json, "\"samples\":");
    double samples = s ? strtod(s + 10, NULL) : 0;
    double blob = 100 * json_type_value(json, "Scenarios.Blob", "share");
    double dot = 100 * json_type_value(json, "Scenarios.Dot", "share");
    double want_blob = 100 * tr->blob / (tr->blob + tr->dot), want_dot = 100 - want_blob;
    fprintf(stderr, "e2e: %.0f samples; Blob %.2f%% (truth %.2f%%), Dot %.2f%% (truth %.2f%%)\n", samples, blob,
            want_blob, dot, want_dot);
    if (samples < MIN_SAMPLES || fabs(blob - want_blob) > SHARE_TOLERANCE || fabs(dot - want_dot) > SHARE_TOLERANCE) {
        fprintf(stderr, "e2e: shares out of tolerance (%.1f points) or too few samples\n", SHARE_TOLERANCE);
        rc = -1;
    }
    /* the allocating paths: each type from its own method, called by Run */
    if (!strstr(json, "{\"type\":\"Scenarios.Blob\",\"stack\":[\"Scenarios.AllocScenario::MakeBlobs\","
                      "\"Scenarios.AllocScenario::Run\"") ||
        !strstr(json, "{\"type\":\"Scenarios.Dot\",\"stack\":[\"Scenarios.AllocScenario::MakeDots\","
                      "\"Scenarios.AllocScenario::Run\"")) {
        fprintf(stderr, "e2e: the allocating paths lack MakeBlobs/MakeDots under Run:\n%.4000s\n", json);
        rc = -1;
    }
    free(json);
    return rc;
}

static int run_alloc(e2e_run *r, const char *const env[]) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    if (!dll || !bin)
        return -1;
    const char *argv[] = {bin, "run", "--quiet", "--alloc", "-o", r->trace, "--", e2e_dotnet(), dll, "alloc", ALLOC_MB, NULL};
    if (e2e_exec(r, (char *const *)argv, env) != 0)
        return -1;
    if (r->status != 0) {
        e2e_show_file("stderr", r->err);
        return -1;
    }
    return 0;
}

TEST(e2e_alloc_shares) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_alloc_shares"), 0);
    ASSERT_EQ(run_alloc(&r, NULL), 0);
    truth tr;
    ASSERT_EQ(read_truth(r.out, &tr), 0);
    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_AllocSite, 2);
    ASSERT_NE(t, NULL);
    long cfg = -1;
    for (size_t i = 0; i < t->nevents && cfg < 0; i++)
        if (t->events[i].kind == DNP_EV_AllocSampling)
            cfg = (long)i;
    ASSERT_GE(cfg, 0);
    ASSERT_EQ(t->events[cfg].v[0], 1); /* .NET 10: AllocationSampled */
    ASSERT_GE(count_samples(t), MIN_SAMPLES);
    dnp_trace_free(t);
    ASSERT_EQ(check_report(&r, &tr), 0);

    /* the same as pprof, decoded: Blob's bytes under MakeBlobs agree with the report */
    char pb[PATH_MAX + 8];
    snprintf(pb, sizeof pb, "%s/alloc.pb.gz", r.dir);
    const char *conv[] = {"convert", "--format", "pprof", "-o", pb, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, conv), 0);
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *gz = e2e_read_file(pb, &len);
    ASSERT_NE(gz, NULL);
    pd_profile pr;
    int ok = pd_decode_gzip((const uint8_t *)gz, len, &pr) == 0;
    free(gz);
    ASSERT(ok);
    ASSERT_STREQ(pd_str(&pr, pr.type[1]), "alloc_space");
    double blob = 0, all = 0;
    for (size_t i = 0; i < pr.nsamples; i++) {
        const pd_sample *s = &pr.samples[i];
        all += (double)s->val[1];
        const char *leaf = s->nloc ? pd_loc_name(&pr, s->loc[0]) : NULL;
        const char *caller = s->nloc > 1 ? pd_loc_name(&pr, s->loc[1]) : NULL;
        if (leaf && caller && !strcmp(leaf, "Scenarios.Blob") && !strcmp(caller, "Scenarios.AllocScenario::MakeBlobs"))
            blob += (double)s->val[1];
    }
    pd_free(&pr);
    double want = 100 * tr.blob / (tr.blob + tr.dot);
    fprintf(stderr, "e2e: pprof: Blob under MakeBlobs %.2f%% of %.0f bytes\n", 100 * blob / all, all);
    ASSERT_GT(all, 0);
    ASSERT_LE(fabs(100 * blob / all - want), SHARE_TOLERANCE);

    /* the call-tree exports carry bytes */
    char folded[PATH_MAX + 8];
    snprintf(folded, sizeof folded, "%s/alloc.folded", r.dir);
    const char *fold[] = {"convert", "--format", "folded", "-o", folded, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, fold), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(folded, NULL);
    ASSERT_NE(text, NULL);
    ok = strstr(text, "Scenarios.AllocScenario::Run;Scenarios.AllocScenario::MakeBlobs;Scenarios.Blob ") != NULL;
    free(text);
    ASSERT(ok);
    return 0;
}

/* AllocationTick, the source before .NET 10, forced on .NET 10. Its samples are
 * the objects that cross each ~100 KB step, weighted by the step: with these
 * chunks (1-3 MB of one type at a time) that is as good as random. Recorded one
 * by one (DNPROF_ALLOC_EACH=1: AllocSample events, not AllocSites). */
TEST(e2e_alloc_tick) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_alloc_tick"), 0);
    const char *env[] = {"DNPROF_ALLOC_SOURCE=tick", "DNPROF_ALLOC_EACH=1", NULL};
    ASSERT_EQ(run_alloc(&r, env), 0);
    truth tr;
    ASSERT_EQ(read_truth(r.out, &tr), 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    int tick = 0;
    for (size_t i = 0; i < t->nevents; i++)
        if (t->events[i].kind == DNP_EV_AllocSampling)
            tick = t->events[i].v[0] == 2;
    size_t each = e2e_count(t, DNP_EV_AllocSample), sites = e2e_count(t, DNP_EV_AllocSite);
    dnp_trace_free(t);
    ASSERT(tick);
    ASSERT_GE(each, MIN_SAMPLES);
    ASSERT_EQ(sites, 0);
    ASSERT_EQ(check_report(&r, &tr), 0);
    return 0;
}

/* dnprof attach PID --alloc to a running program, which allocates after it. */
TEST(e2e_alloc_attach) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_alloc_attach"), 0);
    char out[PATH_MAX + 16], aerr[PATH_MAX + 16];
    snprintf(aerr, sizeof aerr, "%s/attach.err", r.dir);
    const char *args[] = {"alloc", ALLOC_MB, NULL};
    ASSERT_EQ(e2e_attach_scenario(&r, args, "--alloc", out, sizeof out), 0);
    truth tr;
    ASSERT_EQ(read_truth(out, &tr), 0);
    dnp_trace *t = NULL; /* an attach trace: InitializeForAttach, not Initialize */
    char lerr[256];
    if (dnp_trace_load(r.trace, &t, lerr, sizeof lerr) != 0) {
        fprintf(stderr, "e2e: %s\n", lerr);
        e2e_show_file("attach stderr", aerr);
    }
    ASSERT_NE(t, NULL);
    ASSERT(t->attached);
    ASSERT_EQ(e2e_count(t, DNP_EV_InitializeForAttach), 1);
    ASSERT_GE(count_samples(t), MIN_SAMPLES);
    dnp_trace_free(t);
    ASSERT_EQ(check_report(&r, &tr), 0);
    return 0;
}

/* .NET 8 and 9 (self-contained builds of the sample): no AllocationSampled
 * there, the agent falls back to AllocationTick; the sample allocates little
 * (start-up, its strings), but past 1 MB, so some samples with types and stacks. */
static int check_older(const char *test, const char *env_name) {
    e2e_run r;
    if (e2e_setup(&r, test) != 0)
        return -1;
    const char *app = e2e_env(env_name), *bin = e2e_env("DNPROF_BIN");
    if (!app || !bin)
        return -1;
    const char *argv[] = {bin, "run", "--quiet", "--alloc", "-o", r.trace, "--", app, NULL};
    if (e2e_exec(&r, (char *const *)argv, NULL) != 0 || r.status != 0) {
        e2e_show_file("stderr", r.err);
        return -1;
    }
    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_AllocSite, 2);
    if (!t)
        return -1;
    int source = 0;
    size_t samples = 0, typed = 0, stacked = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind == DNP_EV_AllocSampling)
            source = (int)e->v[0];
        if (e->kind != DNP_EV_AllocSite)
            continue;
        samples += e->v[3];
        const char *type = dnp_trace_string(t, e->v[0]), *stack = dnp_trace_string(t, e->v[1]);
        typed += type && *type && e->v[4] > 0 ? e->v[3] : 0;
        stacked += stack && strstr(stack, "::") != NULL ? e->v[3] : 0;
    }
    dnp_trace_free(t);
    fprintf(stderr, "e2e: %s: source %d, %zu samples, %zu typed, %zu with stacks\n", env_name, source, samples, typed,
            stacked);
    return source == 2 && samples >= 5 && typed == samples && stacked * 2 >= samples ? 0 : -1;
}

TEST(e2e_alloc_older_runtimes) {
    ASSERT_EQ(check_older("e2e_alloc_older_runtimes.net8", "DNPROF_SAMPLE_NET8"), 0);
    ASSERT_EQ(check_older("e2e_alloc_older_runtimes.net9", "DNPROF_SAMPLE_NET9"), 0);
    return 0;
}

/* The share of the paths through "Scenarios.<via>::Go" in the report's JSON. */
static double path_share(const char *json, const char *via) {
    double share = 0;
    char needle[128];
    snprintf(needle, sizeof needle, "\"Scenarios.AllocScenario::MakeBlobsShared\",\"Scenarios.%s::Go\"", via);
    for (const char *at = strstr(json, needle); at; at = strstr(at + 1, needle)) {
        const char *end = strchr(at, '}'), *v = strstr(at, "\"share\":");
        if (v && end && v < end)
            share += 100 * strtod(v + 8, NULL);
    }
    return share;
}

/* One allocating method reached through two small overrides from one call
 * site: the agent's frame-pointer walk (its cache key) cannot tell them apart
 * when the JIT gives the overrides no frame, and only the snapshots that check
 * the cache keep the two paths apart (without them: 98% / 1.5%, truth 67/33). */
TEST(e2e_alloc_ambiguous_walks) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_alloc_ambiguous_walks"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    const char *argv[] = {bin, "run", "--quiet", "--alloc", "-o", r.trace, "--", e2e_dotnet(), dll, "alloc", ALLOC_MB, "virtual", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    const char *lb = strstr(out, "Scenarios.LeftPath bytes="), *rb = strstr(out, "Scenarios.RightPath bytes=");
    double left = lb ? strtod(lb + strlen("Scenarios.LeftPath bytes="), NULL) : 0;
    double right = rb ? strtod(rb + strlen("Scenarios.RightPath bytes="), NULL) : 0;
    free(out);
    ASSERT_GT(left, 0);
    ASSERT_GT(right, 0);
    const char *args[] = {"report", "--alloc", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *json = e2e_read_file(r.out, NULL);
    ASSERT_NE(json, NULL);
    double want = 100 * left / (left + right), got_left = path_share(json, "LeftPath"),
           got_right = path_share(json, "RightPath");
    free(json);
    fprintf(stderr, "e2e: via LeftPath %.2f%% (truth %.2f%%), via RightPath %.2f%% (truth %.2f%%)\n", got_left, want,
            got_right, 100 - want);
    ASSERT_LE(fabs(got_left - want), SHARE_TOLERANCE);
    ASSERT_LE(fabs(got_right - (100 - want)), SHARE_TOLERANCE);
    return 0;
}

/* The names of sampled types are the agent's (names.c: as ClassLoad,
 * ObjectAllocated and heap snapshots name them), not the runtime's payload
 * names ("Pair`2[System.String,System.Int32]", "Entry[System.String,System.String][]"):
 * a generic class, an array of it and an array of a nested generic struct from
 * the base library, with the generic shares against the scenario's truth (200 MB: ~2,000
 * samples, a standard error of 1.1 points at p = 0.5, so 5 points is over 4). */
TEST(e2e_alloc_generic_names) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_alloc_generic_names"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    /* --events default: the event log's ClassLoad events are checked below
     * (--alloc alone records the threads' names only). */
    const char *argv[] = {bin, "run", "--quiet", "--alloc", "--events", "default", "-o", r.trace, "--", e2e_dotnet(),
                          dll, "alloc", "200", "generic", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    const char *pb = strstr(out, "pair bytes="), *ab = strstr(out, "pair array bytes="),
               *db = strstr(out, "dictionary bytes=");
    double pairs = pb ? strtod(pb + strlen("pair bytes="), NULL) : 0;
    double arrays = ab ? strtod(ab + strlen("pair array bytes="), NULL) : 0;
    double dicts = db ? strtod(db + strlen("dictionary bytes="), NULL) : 0;
    free(out);
    ASSERT_GT(pairs, 0);
    ASSERT_GT(arrays, 0);
    ASSERT_GT(dicts, 0);
    const char *args[] = {"report", "--alloc", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *json = e2e_read_file(r.out, NULL);
    ASSERT_NE(json, NULL);
    const char *pair = "Scenarios.Pair<System.String, System.Int32>";
    const char *array = "Scenarios.Pair<System.String, System.Int32>[]";
    const char *entry = "System.Collections.Generic.Dictionary+Entry<System.String, System.String>[]";
    double got_pair = 100 * json_type_value(json, pair, "share"), got_array = 100 * json_type_value(json, array, "share");
    double got_entry = json_type_value(json, entry, "samples");
    int runtime_form = strstr(json, "`2") || strstr(json, "[System.");
    double want_pair = 100 * pairs / (pairs + arrays + dicts), want_array = 100 * arrays / (pairs + arrays + dicts);
    fprintf(stderr, "e2e: %s %.2f%% (~%.2f%%), %s %.2f%% (~%.2f%%), %s: %.0f samples%s\n", pair, got_pair, want_pair,
            array, got_array, want_array, entry, got_entry, runtime_form ? "; runtime-form names in the report" : "");
    if (got_pair < 0 || got_array < 0 || got_entry <= 0 || runtime_form)
        fprintf(stderr, "%.3000s\n", json);
    free(json);
    ASSERT(!runtime_form);
    ASSERT_GE(got_pair, 0);
    ASSERT_GE(got_array, 0);
    ASSERT_GT(got_entry, 0);
    ASSERT_LE(fabs(got_pair - want_pair), 5.0);
    ASSERT_LE(fabs(got_array - want_array), 5.0);

    /* the event log names the element type as the report does (the exact
     * Pair<String, Int32> raises no ClassLoad of its own: its code is shared) */
    const char *print[] = {"print", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, print), 0);
    ASSERT_STATUS(&r, 0);
    char *log = e2e_read_file(r.out, NULL);
    ASSERT_NE(log, NULL);
    char line[256];
    snprintf(line, sizeof line, "ClassLoadFinished %.*s [", (int)(strlen(entry) - 2), entry);
    int logged = strstr(log, line) != NULL;
    free(log);
    ASSERT(logged);
    return 0;
}
