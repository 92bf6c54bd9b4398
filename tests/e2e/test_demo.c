/* test_demo.c: first contact (issue 24). The README's quick start demo
 * (samples/hello/demo.sh, the demo target) shows what it says: the program's
 * output, the summary, the head of the log, the hot method with its exact call
 * count, and the exception's throw and catch sites, as the README prints them;
 * the README's families are run --help's; and a missing peer tool makes its
 * test a skip with one line naming the install, not a failure; a mistyped
 * program path is said so before anything runs. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

/* A line of output with its numbers as "#" (a run that starts with a digit:
 * counts, times, percentages, pids, hex addresses) and its runs of spaces as
 * one (the columns' widths follow the numbers), into out. */
static void normalize(const char *line, size_t len, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < len && o + 2 < cap;) {
        if (isdigit((unsigned char)line[i])) {
            while (i < len && (isxdigit((unsigned char)line[i]) || line[i] == 'x' || line[i] == '.' || line[i] == ','))
                i++;
            out[o++] = '#';
        } else if (isspace((unsigned char)line[i])) {
            while (i < len && isspace((unsigned char)line[i]))
                i++;
            if (o > 0)
                out[o++] = ' ';
        } else {
            out[o++] = line[i++];
        }
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = 0;
}

/* Whether a line is a row of the report's tables (it starts with a time)
 * whose first share is under 5%: the times come from samples, and a few more
 * or fewer move such a row in or out of the top five. */
static int small_row(const char *line, size_t len) {
    size_t i = 0;
    while (i < len && line[i] == ' ')
        i++;
    if (i == len || !isdigit((unsigned char)line[i]))
        return 0;
    const char *pct = memchr(line, '%', len);
    if (!pct)
        return 0;
    const char *num = pct;
    while (num > line && (isdigit((unsigned char)num[-1]) || num[-1] == '.'))
        num--;
    return atof(num) < 5.0;
}

/* Whether text has a line that normalizes to want. */
static int has_line(const char *text, const char *want) {
    char norm[1024];
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        normalize(l, len, norm, sizeof norm);
        if (strcmp(norm, want) == 0)
            return 1;
        l += len + (nl != NULL);
    }
    return 0;
}

/* The README's quick start shows what the demo printed: each of its lines is
 * a line of this run's output but for its numbers (times, counts, ids vary from
 * run to run) and for the lines that name the build's paths (the commands and
 * the headers that repeat them) or this machine's clock and load (docs/calls.md:
 * rdtsc, or CLOCK_MONOTONIC where rdtsc is not trusted, the hooks' cost measured
 * with it, the time the threads waited for a CPU; how the sampler's timers
 * work here, and where they fell: docs/calls.md#times-from-samples; and the
 * table rows of a method of microseconds, which a few samples more or less
 * move in or out of the top five). Returns the number of README lines not found; -1: no block. */
static int readme_lines_missing(const char *src, const char *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", src);
    char *readme = e2e_read_file(path, NULL);
    if (!readme)
        return -1;
    const char *start = strstr(readme, "```\n$ build/dnprof run --calls --exceptions");
    const char *end = start ? strstr(start + 4, "```") : NULL;
    if (!start || !end) {
        free(readme);
        return -1;
    }
    int missing = 0, checked = 0;
    char norm[1024];
    for (const char *l = start + 4; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        size_t len = nl ? (size_t)(nl - l) : (size_t)(end - l);
        normalize(l, len, norm, sizeof norm);
        l += len + (nl != NULL);
        if (!norm[0] || !strcmp(norm, "...") || strstr(norm, "build/") || !strncmp(norm, "# note: calls: clock", 20) ||
            !strncmp(norm, "note: times are net of the enter/leave hooks' own cost", 54) ||
            strstr(norm, "spent waiting for a CPU (run queue)") || !strncmp(norm, "# note: cpu sampling by", 23) ||
            !strncmp(norm, "note: left out of the times:", 28) || small_row(l - len - (nl != NULL), len))
            continue;
        checked++;
        if (!has_line(out, norm)) {
            fprintf(stderr, "e2e: the README shows a line the demo did not print: %s\n", norm);
            missing++;
        }
    }
    free(readme);
    fprintf(stderr, "e2e: %d of the README's demo lines checked against this run, %d not printed\n", checked, missing);
    return checked >= 30 ? missing : -1;
}

TEST(e2e_demo_shows_findings) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_demo_shows_findings"), 0);
    const char *src = e2e_env("DNPROF_SOURCE_DIR"), *bin = e2e_env("DNPROF_BIN"),
               *dll = e2e_env("DNPROF_SAMPLE_HELLO");
    ASSERT(src);
    ASSERT(bin);
    ASSERT(dll);
    char script[4096];
    snprintf(script, sizeof script, "%s/samples/hello/demo.sh", src);
    const char *argv[] = {"sh", script, bin, e2e_dotnet(), dll, r.trace, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    size_t lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    if (lines > 120)
        fprintf(stderr, "e2e: the demo printed %zu lines: a first screen is shorter\n", lines);
    ASSERT_LE(lines, 120);
    ASSERT_CONTAINS(out, "primes below 300000: 25997\n");         /* the program ran */
    ASSERT_CONTAINS(out, "caught: something went wrong on purpose\n");
    ASSERT_CONTAINS(out, "] Initialize ");                       /* the log's head */
    ASSERT_CONTAINS(out, "] ClassLoadStarted System.Object ");    /* the default events, less gc */
    /* IsPrime(2..299999): one call per number, counted exactly */
    ASSERT_CONTAINS(out, "299,998  Hello.Program::IsPrime\n");
    ASSERT_CONTAINS(out, "System.InvalidOperationException\n");
    const char *site = strstr(out, "by throw site");
    ASSERT_NE(site, NULL);
    ASSERT_CONTAINS(site, "Hello.Program::Fail\n");
    const char *catcher = strstr(site, "by catch site");
    ASSERT_NE(catcher, NULL);
    ASSERT_CONTAINS(catcher, "Hello.Program::Main\n");
    int missing = readme_lines_missing(src, out);
    free(out);
    ASSERT_EQ(missing, 0);
    char *err = e2e_read_file(r.err, NULL); /* run's summary line goes to stderr */
    ASSERT_NE(err, NULL);
    ASSERT_CONTAINS(err, "events, ");
    ASSERT_CONTAINS(err, ", complete\n");
    free(err);
    return 0;
}

/* The README's list of event families is run --help's (made from the
 * families' table, trace/families.c), word for word and in order. */
TEST(e2e_readme_families_are_run_help_s) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_readme_families"), 0);
    const char *src = e2e_env("DNPROF_SOURCE_DIR");
    ASSERT(src);
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", src);
    char *readme = e2e_read_file(path, NULL);
    ASSERT_NE(readme, NULL);
    const char *list = strstr(readme, "`--events` takes families: `");
    ASSERT_NE(list, NULL);
    list += strlen("`--events` takes families: `");
    const char *close = strchr(list, '`');
    ASSERT_NE(close, NULL);
    char words[512] = "";
    normalize(list, (size_t)(close - list), words, sizeof words);
    free(readme);
    const char *help[] = {"run", "--help", NULL};
    ASSERT_EQ(e2e_dnprof(&r, help), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    const char *fam = strstr(out, "Families:\n");
    const char *also = fam ? strstr(fam, "also all, default") : NULL;
    ASSERT_NE(also, NULL);
    fam += strlen("Families:\n");
    char listed[512] = "";
    size_t n = 0;
    for (const char *c = fam; c < also && n + 1 < sizeof listed; c++)
        if (*c != ',')
            listed[n++] = *c;
    listed[n] = 0;
    char norm_listed[512];
    normalize(listed, strlen(listed), norm_listed, sizeof norm_listed);
    free(out);
    ASSERT_STREQ(words, norm_listed);
    return 0;
}

/* The README's test command on a machine without a peer tool: the test that
 * compares with it is skipped (CTest's skip code, 77), not failed, and says in
 * one line what to install; with DNPROF_E2E_NO_SKIP set (.ci/run) it fails. The
 * tool is hidden: a node that does not exist for the DevTools test, a HOME and
 * PATH without dotnet-gcdump for the gcdump test. */
/* The test runner itself (argv), with the harness's DNPROF_ variables that
 * e2e_exec drops for a program, and env on top. */
static int run_test(e2e_run *r, const char *const argv[], const char *const env[]) {
    extern char **environ;
    const char *all[256];
    size_t n = 0;
    for (size_t i = 0; environ[i] != NULL && n < 200; i++)
        if (strncmp(environ[i], "DNPROF_", 7) == 0)
            all[n++] = environ[i];
    for (size_t i = 0; env[i] != NULL && n < 255; i++)
        all[n++] = env[i];
    all[n] = NULL;
    return e2e_exec(r, (char *const *)argv, all);
}

static int peer_missing(e2e_run *r, const char *test, const char *const env[], const char *install) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    const char *argv[] = {self, test, NULL};
    if (run_test(r, argv, env) != 0)
        return -1;
    char *err = e2e_read_file(r->err, NULL);
    if (!err)
        return -1;
    int lines = 0, named = 0;
    for (const char *l = err; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        lines++;
        named += memmem(l, len, install, strlen(install)) != NULL && memmem(l, len, "is not installed", 16) != NULL;
        l += len + (nl != NULL);
    }
    fprintf(stderr, "e2e: %s with its tool hidden: exit %d, %d line(s) on stderr, %d naming '%s'\n", test, r->status,
            lines, named, install);
    if (named != 1 || lines != 1)
        e2e_show_file("it said", r->err);
    free(err);
    return named == 1 && lines == 1 ? r->status : -1;
}

TEST(e2e_peer_tool_missing_is_a_skip) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_peer_tool_missing"), 0);
    char home[4200];
    snprintf(home, sizeof home, "HOME=%s", r.dir);
    const char *no_node[] = {"DNPROF_NODE=/nonexistent/node", "DNPROF_E2E_NO_SKIP", NULL};
    ASSERT_EQ(peer_missing(&r, "e2e_heap_devtools_loads", no_node, "apt-get install chromium nodejs"), 77);
    const char *no_gcdump[] = {home, "PATH=/usr/bin:/bin", "DNPROF_E2E_NO_SKIP", NULL};
    ASSERT_EQ(peer_missing(&r, "e2e_heap_gcdump_agrees", no_gcdump, "dotnet tool install -g dotnet-gcdump"), 77);
    /* CI installs every tool: there a missing one is a failure */
    const char *ci[] = {"DNPROF_NODE=/nonexistent/node", "DNPROF_E2E_NO_SKIP=1", NULL};
    const char *argv[] = {"/proc/self/exe", "e2e_heap_devtools_loads", NULL};
    ASSERT_EQ(run_test(&r, argv, ci), 0);
    ASSERT_STATUS(&r, 1);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    int said = strstr(err, "FAILED (DNPROF_E2E_NO_SKIP): /nonexistent/node is not installed") != NULL;
    free(err);
    ASSERT(said);
    return 0;
}

/* A mistyped program path (`dotnet app/bin/ap.dll`): the dotnet host would
 * take the name for an SDK command and run the SDK, which dnprof would then
 * record. run and top say so in one line, exit 127 and write no trace, doctor
 * does not run it; a path that exists runs. */
TEST(e2e_run_missing_dll_says_so) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_run_missing_dll_says_so"), 0);
    char missing[PATH_MAX + 32];
    snprintf(missing, sizeof missing, "%s/no-such-app.dll", r.dir);
    const char *run[] = {"run", "-o", r.trace, "--", e2e_dotnet(), missing, NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_EQ(r.status, 127);
    char *err = e2e_read_file(r.err, NULL);
    int ok = err && strstr(err, "no-such-app.dll: no such file (dotnet would look for an SDK command of that name)") &&
             strchr(err, '\n') == strrchr(err, '\n');
    free(err);
    ASSERT(ok);
    ASSERT_NE(access(r.trace, F_OK), 0);
    const char *top[] = {"top", "-b", "-n", "1", "--", e2e_dotnet(), missing, NULL};
    ASSERT_EQ(e2e_dnprof(&r, top), 0);
    ASSERT_EQ(r.status, 127);
    const char *doctor[] = {"doctor", "--", e2e_dotnet(), missing, NULL};
    ASSERT_EQ(e2e_dnprof(&r, doctor), 0);
    ASSERT_NE(r.status, 0);
    char *out = e2e_read_file(r.out, NULL);
    ok = out && strstr(out, "was not run: its .dll does not exist");
    free(out);
    ASSERT(ok);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *fine[] = {"run", "--quiet", "-o", r.trace, "--", e2e_dotnet(), "exec", dll, "locks", "none", NULL};
    ASSERT_EQ(e2e_dnprof(&r, fine), 0);
    ASSERT_STATUS(&r, 0);
    return 0;
}
