/* test_windows.c: continuous profiling (dnprof run --every, dnprof push,
 * docs/production.md) against the truth of the "sample" scenario
 * (SampleScenario.cs: three hot methods do 60/30/10% of the work).
 *
 * Every profile is decoded by `go tool pprof -raw` (Debian's golang-go), a
 * decoder that shares nothing with dnprof's encoder: its sample types, its
 * samples, its time and duration. Pushes go to a loopback stand-in of
 * Pyroscope's ingest API (ingest/ingest_server.py), which keeps each request's
 * query and body. Shares are checked over all windows together, within four
 * binomial standard deviations (at least 5 points): a 1 s window holds too
 * few samples on a loaded 2-CPU machine for a share of its own. Each test
 * fails when the agent is not loaded (no windows, no profiles, no requests). */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "ingest_util.h"
#include "test.h"

/* ---- go tool pprof -raw ---- */

typedef struct raw_profile {
    char types[256];       /* "samples/count cpu/nanoseconds[dflt]" */
    double time_s, duration_s;
    int64_t period;
    double hot[3];         /* the last value of the samples whose leaf is HOT[i] (or the names asked for) */
    double hot_first[3];   /* and their first value */
    double total;          /* of all samples */
    size_t nsamples;
} raw_profile;

static const char *go_tool(char *buf, size_t cap) {
    return e2e_which("go", NULL, buf, cap);
}

/* "2026-12-02 01:51:25.12861201 +0000 UTC" as unix seconds. */
static double parse_time(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    double sec = 0;
    if (sscanf(s, "%d-%d-%d %d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (double)timegm(&tm) + sec;
}

/* The leaf's location of a sample line "  25  250000000: 1 2 3", its last value
 * and its first. */
static int sample_line(const char *line, double *last, double *first, long *leaf) {
    const char *colon = strchr(line, ':');
    if (!colon)
        return -1;
    *first = atof(line);
    char vals[256];
    snprintf(vals, sizeof vals, "%.*s", (int)(colon - line), line);
    char *sp = strrchr(vals, ' ');
    *last = atof(sp ? sp + 1 : vals);
    *leaf = strtol(colon + 1, NULL, 10);
    return 0;
}

static int raw_read_of(const char *go, const char *path, const char *const leaf[3], raw_profile *out);

/* Decodes path with go tool pprof -raw, hot[] for the hot methods. */
static int raw_read(const char *go, const char *path, raw_profile *out) {
    return raw_read_of(go, path, HOT, out);
}

/* Decodes path with go tool pprof -raw, hot[i] the last value of the samples
 * whose leaf is leaf[i]. 0, or -1 with why on stderr. */
static int raw_read_of(const char *go, const char *path, const char *const leaf[3], raw_profile *out) {
    memset(out, 0, sizeof *out);
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "'%s' tool pprof -raw '%s' 2>/dev/null", go, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[4096];
    enum { HEAD, SAMPLES, LOCATIONS, REST } at = HEAD;
    long leaves[4096];
    double lasts[4096], firsts[4096];
    size_t n = 0;
    static char names[4096][160];
    size_t nnames = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "Time: ", 6))
            out->time_s = parse_time(line + 6);
        else if (!strncmp(line, "Period: ", 8))
            out->period = atoll(line + 8);
        else if (!strcmp(line, "Samples:"))
            at = SAMPLES;
        else if (!strcmp(line, "Locations"))
            at = LOCATIONS;
        else if (!strcmp(line, "Mappings"))
            at = REST;
        else if (at == SAMPLES && !out->types[0])
            snprintf(out->types, sizeof out->types, "%.200s", line);
        else if (at == SAMPLES && n < 4096 && sample_line(line, &lasts[n], &firsts[n], &leaves[n]) == 0)
            n++;
        else if (at == LOCATIONS && nnames < 4096) {
            /* "  ID: 0xADDR [M=N] NAME [FILE]:LINE s=0": managed frames have no mapping */
            long id = strtol(line, NULL, 10);
            const char *addr = strstr(line, ": 0x");
            const char *name = addr ? strchr(addr + 2, ' ') : NULL;
            if (name && !strncmp(name, " M=", 3))
                name = strchr(name + 1, ' ');
            const char *end = name ? strstr(name, " :") : NULL;
            if (id > 0 && (size_t)id < 4096 && name && end) {
                int len = (int)(end - name - 1) < 159 ? (int)(end - name - 1) : 159;
                memcpy(names[id], name + 1, (size_t)len);
                names[id][len] = 0;
                nnames = (size_t)id + 1 > nnames ? (size_t)id + 1 : nnames;
            }
        }
    }
    int rc = pclose(p);
    /* -raw prints the duration cut to four characters ("960." for 960ms): -top's header has it whole */
    snprintf(cmd, sizeof cmd, "'%s' tool pprof -top '%s' 2>/dev/null", go, path);
    FILE *q = rc == 0 ? popen(cmd, "r") : NULL;
    while (q && fgets(line, sizeof line, q)) {
        char *d = strstr(line, "Duration: ");
        if (d && !out->duration_s) {
            char *unit;
            double v = strtod(d + 10, &unit);
            out->duration_s = !strncmp(unit, "ms", 2) ? v / 1e3 : !strncmp(unit, "us", 2) ? v / 1e6 : *unit == 'm' ? v * 60 : v;
        }
    }
    if (q && pclose(q) != 0)
        rc = -1;
    if (rc != 0 || !out->types[0]) {
        fprintf(stderr, "go tool pprof -raw %s failed (%d) or printed no samples\n", path, rc);
        return -1;
    }
    out->nsamples = n;
    for (size_t i = 0; i < n; i++) {
        out->total += lasts[i];
        for (int h = 0; h < 3; h++)
            if (leaves[i] > 0 && (size_t)leaves[i] < nnames && !strcmp(names[leaves[i]], leaf[h])) {
                out->hot[h] += lasts[i];
                out->hot_first[h] += firsts[i];
            }
    }
    return 0;
}

/* ---- the files sink ---- */

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir starting with prefix, sorted; *n of them. */
static size_t list_files(const char *dir, const char *prefix, char names[][256], size_t cap) {
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (!strncmp(de->d_name, prefix, strlen(prefix)) && n < cap)
            snprintf(names[n++], 256, "%s", de->d_name);
    if (d)
        closedir(d);
    char *ptrs[64];
    for (size_t i = 0; i < n && i < 64; i++)
        ptrs[i] = strdup(names[i]);
    qsort(ptrs, n < 64 ? n : 64, sizeof *ptrs, by_name);
    for (size_t i = 0; i < n && i < 64; i++) {
        snprintf(names[i], 256, "%s", ptrs[i]);
        free(ptrs[i]);
    }
    return n;
}

/* The files of one type in dir (prefix "alloc-" and the like), each decoded
 * by go tool pprof -raw with the sample types types and added up into sum
 * (totals, and the values of the samples whose leaf is leaf[i]): the number
 * of files, 0 when there is none, -1 when one does not decode as expected. */
static int windows_sum(const char *go, const char *dir, const char *prefix, const char *types,
                       const char *const leaf[3], raw_profile *sum) {
    static char names[64][256];
    size_t n = list_files(dir, prefix, names, 64);
    memset(sum, 0, sizeof *sum);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        raw_profile rp;
        if (raw_read_of(go, path, leaf, &rp) != 0 || strcmp(rp.types, types) != 0) {
            fprintf(stderr, "e2e: %s: sample types '%s', not '%s'\n", path, rp.types, types);
            return -1;
        }
        sum->total += rp.total;
        for (int h = 0; h < 3; h++) {
            sum->hot[h] += rp.hot[h];
            sum->hot_first[h] += rp.hot_first[h];
        }
    }
    return (int)n;
}

TEST(e2e_windows_files) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_files"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/profiles", r.dir);
    const char *argv[] = {bin, "run", "--every", "1s", "-o", dir, "--", e2e_dotnet(), dll, "sample", "shares", "6", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    static char names[64][256];
    size_t n = list_files(dir, "cpu-", names, 64);
    if (n < 3)
        e2e_show_file("dnprof run said", r.err);
    ASSERT_GE(n, 3);
    double hot[3] = {0, 0, 0}, prev_end = 0;
    raw_profile rp;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ASSERT_EQ(raw_read(go, path, &rp), 0);
        ASSERT_STREQ(rp.types, "samples/count cpu/nanoseconds[dflt]");
        ASSERT_EQ(rp.period, 10000000);
        ASSERT_GT(rp.time_s, 1.7e9);
        ASSERT_GT(rp.duration_s, 0);
        ASSERT_LT(rp.duration_s, 2.5);
        /* contiguous: each window starts where the last ended (-top prints the duration to 10 us or 10 ms) */
        if (i > 0 && fabs(rp.time_s - prev_end) > 0.006) {
            fprintf(stderr, "%s starts at %.6f, the window before ended at %.6f\n", names[i], rp.time_s, prev_end);
            return 1;
        }
        prev_end = rp.time_s + rp.duration_s;
        for (int h = 0; h < 3; h++)
            hot[h] += rp.hot[h];
    }
    ASSERT_EQ(shares_ok(hot, 1e7), 0);
    /* the summary counts them */
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    char want[64];
    snprintf(want, sizeof want, "%zu file%s in", n, n == 1 ? "" : "s");
    int said = strstr(err, want) != NULL;
    free(err);
    ASSERT_EQ(said, 1);
    return 0;
}

/* --keep 2: only the newest two files stay. */
TEST(e2e_windows_keep) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_keep"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/profiles", r.dir);
    const char *argv[] = {bin, "run", "--every", "500ms", "-o", dir, "--keep", "2", "--",
                          e2e_dotnet(), dll, "sample", "shares", "6", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    static char names[64][256];
    size_t n = list_files(dir, "cpu-", names, 64);
    ASSERT_EQ(n, 2);
    /* the newest: the two highest window numbers of all that were written */
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    unsigned long written = 0;
    const char *at = strstr(err, "dnprof: profiles: ");
    if (at)
        written = strtoul(at + 18, NULL, 10);
    free(err);
    ASSERT_GE(written, 4);
    unsigned long last = strtoul(strrchr(names[1], '-') + 1, NULL, 10);
    unsigned long before = strtoul(strrchr(names[0], '-') + 1, NULL, 10);
    ASSERT_LT(before, last);
    ASSERT_GE(last, written); /* a window without samples has no file: numbers may skip */
    return 0;
}

/* No reader: at most DNPROF_WINDOW_KEEP windows wait, the oldest are deleted,
 * and the last window counts them. */
TEST(e2e_windows_bounded) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_bounded"), 0);
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/w", r.dir);
    ASSERT_EQ(windows_unread(&r, dir, "200", "3", "2"), 0);
    static char names[64][256];
    size_t n = list_files(dir, "window-", names, 64);
    ASSERT_EQ(n, 3);
    char path[PATH_MAX + 600];
    snprintf(path, sizeof path, "%s/%s", dir, names[n - 1]);
    dnp_trace *t = NULL;
    char why[256];
    ASSERT_EQ(dnp_trace_load(path, &t, why, sizeof why), 0);
    long w = e2e_kind("Window");
    ASSERT_GE(w, 0);
    ASSERT_GT(t->nevents, 0);
    ASSERT_EQ(t->events[0].kind, w);
    uint64_t index = t->events[0].v[0], dropped = t->events[0].v[3];
    dnp_trace_free(t);
    fprintf(stderr, "last window %llu, %llu dropped before it\n", (unsigned long long)index, (unsigned long long)dropped);
    ASSERT_GE(index, 6);
    ASSERT_EQ(dropped, index - 4); /* window k was written after k - 1 - 3 had been dropped */
    return 0;
}

/* ---- pushing: the loopback ingest server ---- */

static int by_from(const void *a, const void *b) {
    const request *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* dnprof run --every 1s --pyroscope: one request per window, with the
 * service, the labels, the token, contiguous from/until, and bodies that
 * go tool pprof decodes into the program's shares. */
TEST(e2e_push_pyroscope) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_push_pyroscope"), 0);
    ingest s;
    const char *env[] = {"DNPROF_PUSH_TOKEN=t0k-e2e", NULL};
    const char *opts[] = {"--label", "env=e2e", "--label", "zone=a", NULL};
    ASSERT_EQ(ingest_push_run(&r, "ok", 0, &s, opts, "6", env), 0);
    static request q[256];
    size_t n = ingest_requests(&s, q, 256);
    ASSERT_GE(n, 3);
    qsort(q, n, sizeof *q, by_from);
    double hot[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        ASSERT_STREQ(q[i].path, "/ingest");
        ASSERT_STREQ(q[i].format, "pprof");
        ASSERT_STREQ(q[i].spy, "dotnetspy");
        ASSERT_STREQ(q[i].name, "Scenarios{env=e2e,zone=a}");
        ASSERT_STREQ(q[i].auth, "Bearer_t0k-e2e");
        ASSERT_GT(q[i].from, 1700000000ull);
        ASSERT_LE(q[i].until - q[i].from, 2);
        if (i > 0)
            ASSERT_EQ(q[i].from, q[i - 1].until); /* contiguous */
        raw_profile rp;
        ASSERT_EQ(raw_read(go, q[i].body, &rp), 0);
        ASSERT_STREQ(rp.types, "samples/count cpu/nanoseconds[dflt]");
        ASSERT_LT(fabs(rp.time_s - (double)q[i].from), 1.0);
        for (int h = 0; h < 3; h++)
            hot[h] += rp.hot[h];
    }
    ASSERT_EQ(shares_ok(hot, 1e7), 0);
    ASSERT_EQ(said_sent(&r, "", n), 1);
    return 0;
}

/* The backend down, answering 500, too slow, or closing the connection: the
 * program runs as it would (its output, its exit code), and the summary
 * counts the windows not sent and says why. */
TEST(e2e_push_faults) {
    static const char *const modes[] = {"down", "500", "slow", "close"};
    static const char *const why[] = {"connection refused", "HTTP 500", "timed out", "not sent"};
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_push_faults"), 0);
    for (int m = 0; m < 4; m++) {
        ingest s;
        static const char *const opts[] = {"--push-timeout", "500ms", NULL};
        fprintf(stderr, "backend %s:\n", modes[m]);
        ASSERT_EQ(ingest_push_run(&r, modes[m], 0, &s, opts, "1.5", NULL), 0);
        ASSERT_EQ(said(&r, " not sent ("), 1); /* "1 window not sent (...", "3 windows not sent (..." */
        ASSERT_EQ(said(&r, why[m]), 1);
        ASSERT_EQ(said(&r, " 0 windows sent"), 1);
        if (m == 1) { /* the first profile not sent tried three times, the later ones once
                       * (the backend was failing), none after the program's end */
            static request q[512];
            size_t n = ingest_requests(&s, q, 512);
            char *err = e2e_read_file(r.err, NULL);
            const char *at = err ? strstr(err, " not sent (") : NULL;
            unsigned long profiles = at ? strtoul(at + strlen(" not sent ("), NULL, 10) : 0;
            free(err);
            ASSERT_GE(profiles, 1);
            ASSERT_GE(n, 3);
            ASSERT_LE(n, profiles + 2);
        }
    }
    return 0;
}

/* dnprof push as a sidecar: the agent loaded through the environment (as
 * dnprof env sets it up) writes windows into a directory; push follows it
 * and ships them, and deletes what it shipped. */
TEST(e2e_push_sidecar) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_push_sidecar"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    ingest s;
    ASSERT_EQ(ingest_start(&r, "ok", 0, &s), 0);
    char wdir[PATH_MAX + 16], wenv[PATH_MAX + 64], url[64], pout[PATH_MAX + 16], perr[PATH_MAX + 16];
    snprintf(wdir, sizeof wdir, "%s/windows", r.dir);
    ASSERT_EQ(mkdir(wdir, 0700), 0);
    snprintf(wenv, sizeof wenv, "DNPROF_WINDOW_DIR=%s", wdir);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    snprintf(pout, sizeof pout, "%s/push.out", r.dir);
    snprintf(perr, sizeof perr, "%s/push.err", r.dir);
    const char *pargv[] = {bin, "push", "--pyroscope", url, "--service", "sidecar-app", wdir, NULL};
    pid_t push = e2e_spawn((char *const *)pargv, NULL, r.dir, pout, NULL, perr);
    ASSERT_GT(push, 0);
    const char *env[] = {"DNPROF_EVERY=1000", wenv, NULL};
    /* 6 s of CPU on two threads: about 3 s, at least three windows of 1 s on a quiet machine */
    const char *argv[] = {bin, "run", "--quiet", "--sample", "-o", r.trace, "--", e2e_dotnet(), dll, "sample", "shares", "6", NULL};
    int ran = e2e_exec(&r, (char *const *)argv, env);
    /* the last window is written at the program's end: push ships it and
     * deletes it; wait for the directory to be empty (20 s at most) */
    for (int waited = 0; waited < 20000 && windows_left(wdir) > 0; waited += 100) {
        struct timespec t = {0, 100 * 1000000L};
        nanosleep(&t, NULL);
    }
    kill(push, SIGTERM);
    int pstatus;
    e2e_wait(push, 30000, &pstatus);
    ingest_stop(&s);
    ASSERT_EQ(ran, 0);
    ASSERT_STATUS(&r, 0);
    ASSERT_EQ(pstatus, 0);
    static request q[256];
    size_t n = ingest_requests(&s, q, 256);
    ASSERT_GE(n, 3);
    double hot[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        ASSERT_STREQ(q[i].name, "sidecar-app{}");
        raw_profile rp;
        ASSERT_EQ(raw_read(go, q[i].body, &rp), 0);
        for (int h = 0; h < 3; h++)
            hot[h] += rp.hot[h];
    }
    ASSERT_EQ(shares_ok(hot, 1e7), 0);
    static char names[64][256];
    ASSERT_EQ(list_files(wdir, "window-", names, 64), 0); /* shipped, deleted */
    return 0;
}

/* dnprof attach --every: windows of a program that was running already. */
TEST(e2e_windows_attach) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_attach"), 0);
    const char *bin = e2e_env("DNPROF_BIN");
    char pid[32], gofile[PATH_MAX + 32], dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/profiles", r.dir);
    pid_t prog = sample_waiting(&r, "4", pid, gofile, sizeof gofile);
    ASSERT_GT(prog, 0);
    const char *argv[] = {bin, "attach", pid, "--every", "1s", "-o", dir, "--duration", "4s", NULL};
    ASSERT_EQ(attach_sample(&r, argv, prog, gofile), 0);
    static char names[64][256];
    size_t n = list_files(dir, "cpu-", names, 64);
    if (n < 2)
        e2e_show_file("dnprof attach said", r.err);
    ASSERT_GE(n, 2);
    double hot[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        raw_profile rp;
        ASSERT_EQ(raw_read(go, path, &rp), 0);
        for (int h = 0; h < 3; h++)
            hot[h] += rp.hot[h];
    }
    ASSERT_EQ(shares_ok(hot, 1e7), 0);
    return 0;
}

/* --every with --alloc and --exceptions: an alloc profile per window whose
 * bytes by type are the program's own shares, and an exception profile that
 * counts the one exception the program throws. */
TEST(e2e_windows_alloc_exceptions) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_alloc_exceptions"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/alloc", r.dir);
    const char *argv[] = {bin, "run", "--every", "100ms", "--alloc", "-o", dir, "--", e2e_dotnet(), dll, "alloc", "300", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    const char *b = strstr(out, "Scenarios.Blob bytes="), *d = strstr(out, "Scenarios.Dot bytes=");
    double blob = b ? atof(b + 21) : 0, dot = d ? atof(d + 20) : 0;
    free(out);
    ASSERT_GT(blob, 0);
    ASSERT_GT(dot, 0);
    static const char *const TYPES[3] = {"Scenarios.Blob", "Scenarios.Dot", "-"};
    raw_profile sum;
    int n = windows_sum(go, dir, "alloc-", "alloc_samples/count alloc_size/bytes[dflt]", TYPES, &sum);
    ASSERT_GE(n, 1); /* the program may take less than 200 ms on an idle machine */
    double bytes[2] = {sum.hot[0], sum.hot[1]};
    double share = 100 * bytes[0] / (bytes[0] + bytes[1]), truth = 100 * blob / (blob + dot);
    fprintf(stderr, "Scenarios.Blob: %.1f%% of the bytes in %d windows (truth %.1f%%)\n", share, n, truth);
    ASSERT_LT(fabs(share - truth), 3.0); /* test_alloc.c: over 4 standard errors at 300 MB */

    snprintf(dir, sizeof dir, "%s/exceptions", r.dir);
    const char *eargv[] = {bin, "run", "--every", "500ms", "--exceptions", "-o", dir, "--", e2e_dotnet(), dll, "exceptions", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)eargv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    static const char *const EXC[3] = {"System.InvalidOperationException", "-", "-"};
    ASSERT_GE(windows_sum(go, dir, "exception-", "exception/count", EXC, &sum), 1);
    double thrown = sum.hot[0];
    ASSERT_EQ(thrown, 1); /* the program throws one */
    return 0;
}

/* The locks scenario in MODE (with its three arguments) under dnprof run
 * --every 200ms --locks, its windows in dir: the program's stdout, or NULL
 * having said why. */
static char *windows_locks_run(e2e_run *r, const char *test, const char *const mode[4], char *dir, size_t cap) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    if (e2e_setup(r, test) != 0 || !dll || !bin)
        return NULL;
    snprintf(dir, cap, "%s/locks", r->dir);
    const char *argv[] = {bin, "run", "--every", "200ms", "--locks", "-o", dir, "--", e2e_dotnet(), dll, "locks",
                          mode[0], mode[1], mode[2], mode[3], NULL};
    if (e2e_exec(r, (char *const *)argv, NULL) != 0 || r->status != 0) {
        e2e_show_file("dnprof run said", r->err);
        return NULL;
    }
    return e2e_read_file(r->out, NULL);
}

/* --locks in windows: each window's lock contention as a pprof of lock_count
 * and lock_time (Pyroscope's .NET names), decoded by go tool pprof; the lock
 * time of all windows against the waits the program timed itself (within
 * 15%, as e2e_locks_truth holds the trace). */
TEST(e2e_windows_locks) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    char dir[PATH_MAX + 16];
    static const char *const mode[4] = {"monitor", "4", "50", "1000"};
    char *out = windows_locks_run(&r, "e2e_windows_locks", mode, dir, sizeof dir);
    ASSERT_NE(out, NULL);
    const char *m = strstr(out, "monitor waited_ns=");
    double waited = m ? atof(m + 18) : 0;
    free(out);
    ASSERT_GT(waited, 0);
    static const char *const NONE[3] = {"-", "-", "-"};
    raw_profile sum;
    int n = windows_sum(go, dir, "lock-", "lock_count/count lock_time/nanoseconds[dflt]", NONE, &sum);
    ASSERT_GE(n, 1);
    double ns = sum.total;
    fprintf(stderr, "e2e: lock_time of %d windows: %.1f ms; the program waited %.1f ms\n", n, ns / 1e6, waited / 1e6);
    ASSERT_LT(fabs(ns - waited), 0.15 * waited);
    return 0;
}

/* --locks in windows on a System.Threading.Lock, whose acquisitions are won
 * by spinning mostly: the probe in Lock's slow path is in place with --every
 * too (from start-up), each probed call one wait with its stack, so the
 * windows' lock_count adds up to the program's contended acquisitions (at most
 * 10% short: those before the probe ran) and lock_time to its stopwatch
 * (15%). Before, the windows held the runtime's blocked waits only: 86 of 163. */
TEST(e2e_windows_lock_spinning) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    char dir[PATH_MAX + 16];
    static const char *const mode[4] = {"lockspin", "6", "30", "3000"};
    char *out = windows_locks_run(&r, "e2e_windows_lock_spinning", mode, dir, sizeof dir);
    ASSERT_NE(out, NULL);
    const char *m = strstr(out, "lock waited_ns="), *c = m ? strstr(m, " contended=") : NULL;
    double waited = m ? atof(m + 15) : 0, contended = c ? atof(c + 11) : 0;
    free(out);
    ASSERT_GT(contended, 0);
    static const char *const LEAF[3] = {"[lock System.Threading.Lock]", "-", "-"};
    raw_profile sum;
    int n = windows_sum(go, dir, "lock-", "lock_count/count lock_time/nanoseconds[dflt]", LEAF, &sum);
    ASSERT_GE(n, 1);
    fprintf(stderr, "e2e: %d windows: %.0f Lock waits, %.1f ms; the program: %.0f contended, %.1f ms\n", n,
            sum.hot_first[0], sum.hot[0] / 1e6, contended, waited / 1e6);
    ASSERT_LE(sum.hot_first[0], contended);
    ASSERT_GE(sum.hot_first[0], 0.9 * contended);
    ASSERT_LT(fabs(sum.hot[0] - waited), 0.15 * waited);
    return 0;
}

/* --calls=counts in windows: each window's calls by call path (the changes
 * since the last window, with their callers), decoded by go tool pprof; over
 * all windows, exactly the program's calls (as e2e_calls_counts_only). */
TEST(e2e_windows_calls) {
    char go[PATH_MAX];
    if (!go_tool(go, sizeof go))
        E2E_SKIP("go is not installed (tools/install-deps, or: apt-get install golang-go)");
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_calls"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/calls", r.dir);
    const char *argv[] = {bin, "run", "--every", "100ms", "--calls=counts", "-o", dir, "--", e2e_dotnet(), dll,
                          "calls", "recursion", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    static const char *const LEAF[3] = {"Scenarios.CallsScenario::Fib", "Scenarios.CallsScenario::Recurse", "-"};
    raw_profile sum;
    int n = windows_sum(go, dir, "calls-", "calls/count time/nanoseconds[dflt]", LEAF, &sum);
    ASSERT_GE(n, 1);
    double fib = sum.hot_first[0], rec = sum.hot_first[1];
    fprintf(stderr, "e2e: %d windows: Fib %.0f calls, Recurse %.0f as leaves\n", n, fib, rec);
    ASSERT_EQ(fib, 21891); /* Fib(20) calls itself 21,891 times, always a leaf path's last frame */
    /* --calls with times is refused with --every, in one line */
    const char *timed[] = {bin, "run", "--every", "1s", "--calls=timed", "-o", dir, "--", e2e_dotnet(), dll, "hello", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)timed, NULL), 0);
    ASSERT_STATUS(&r, 2);
    return 0;
}

/* The front end killed (kill -9) while the program runs: the program runs on
 * to its end, and the agent, with nobody reading its windows, keeps at most
 * DNPROF_WINDOW_KEEP of them and counts the others as dropped. */
TEST(e2e_windows_front_end_killed) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_windows_front_end_killed"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    char pidfile[PATH_MAX + 16], gofile[PATH_MAX + 32], tmpdir[PATH_MAX + 16], dir[PATH_MAX + 16];
    snprintf(pidfile, sizeof pidfile, "%s/pid", r.dir);
    snprintf(gofile, sizeof gofile, "%s.go", pidfile);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", r.dir); /* the session directory goes there */
    snprintf(dir, sizeof dir, "%s/profiles", r.dir);
    const char *env[] = {tmpdir, "DNPROF_WINDOW_KEEP=3", NULL};
    const char *argv[] = {bin, "run", "--every", "200ms", "-o", dir, "--", e2e_dotnet(), dll, "sample", "shares", "2",
                          pidfile, NULL};
    pid_t front = e2e_spawn((char *const *)argv, env, r.dir, r.out, NULL, r.err);
    ASSERT_GT(front, 0);
    long prog = 0;
    for (int i = 0; i < 300 && !prog; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            if (fscanf(f, "%ld", &prog) != 1)
                prog = 0;
            fclose(f);
        }
        struct timespec t = {0, 100000000L};
        if (!prog)
            nanosleep(&t, NULL);
    }
    ASSERT_GT(prog, 0);
    kill(front, SIGKILL); /* the front end only: the program is not in danger */
    int fstatus;
    waitpid(front, &fstatus, 0);
    FILE *g = fopen(gofile, "w");
    ASSERT_NE(g, NULL);
    fclose(g);
    /* the program runs on to its end (then it is a zombie of whoever reaps it, or gone) */
    char stat[64], st[512];
    snprintf(stat, sizeof stat, "/proc/%ld/stat", prog);
    int alive = 1;
    for (int i = 0; i < 600 && alive; i++) {
        FILE *f = fopen(stat, "r");
        alive = f && fgets(st, sizeof st, f) && strstr(st, ") Z ") == NULL;
        if (f)
            fclose(f);
        struct timespec t = {0, 100000000L};
        if (alive)
            nanosleep(&t, NULL);
    }
    ASSERT_EQ(alive, 0);
    char *out = e2e_read_file(r.out, NULL);
    int ran = out && strstr(out, "shares 60 30 10") != NULL;
    free(out);
    ASSERT_EQ(ran, 1);
    /* the session directory dnprof left: at most 3 windows, the rest dropped and counted */
    static char sessions[64][256], names[64][256];
    ASSERT_EQ(list_files(r.dir, "dnprof-session.", sessions, 64), 1);
    char sdir[PATH_MAX + 300];
    snprintf(sdir, sizeof sdir, "%s/%s", r.dir, sessions[0]);
    size_t n = list_files(sdir, "window-", names, 64);
    ASSERT_GE(n, 1);
    ASSERT_LE(n, 3);
    char path[PATH_MAX + 600];
    snprintf(path, sizeof path, "%s/%s", sdir, names[n - 1]);
    dnp_trace *t = NULL;
    char why[256];
    ASSERT_EQ(dnp_trace_load(path, &t, why, sizeof why), 0);
    uint64_t index = t->events[0].v[0], dropped = t->events[0].v[3];
    dnp_trace_free(t);
    fprintf(stderr, "last window %llu, %llu dropped before it\n", (unsigned long long)index, (unsigned long long)dropped);
    ASSERT_GE(index, 5);
    ASSERT_GE(dropped, 1);
    return 0;
}
