/* test_report.c: `dnprof report` and `dnprof convert` on traces the agent
 * recorded with --calls and --timeline: the counts CallsScenario knows, the
 * names as written, and every export parsed back with totals that agree with
 * the report's. A trace without call data fails with "no call data". */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

/* `dnprof run --quiet <mode> -o trace -- dotnet Scenarios.dll calls <sub>`. */
static int run_calls(e2e_run *r, const char *test, const char *mode, const char *sub) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (e2e_setup(r, test) != 0 || !dll)
        return -1;
    const char *args[] = {"run", "--quiet", mode, "-o", r->trace, "--", e2e_dotnet(), dll, "calls", sub, NULL};
    if (e2e_dnprof(r, args) != 0)
        return -1;
    if (r->status != 0) {
        e2e_show_file("stderr", r->err);
        return -1;
    }
    return 0;
}

/* Runs `dnprof ARGS` and parses its stdout as JSON (or the file out_file). */
static jv *dnprof_json(e2e_run *r, const char *const args[], const char *out_file) {
    if (e2e_dnprof(r, args) != 0)
        return NULL;
    if (r->status != 0) {
        e2e_show_file("stderr", r->err);
        return NULL;
    }
    size_t len;
    char *text = e2e_read_file(out_file ? out_file : r->out, &len);
    if (!text)
        return NULL;
    char err[160];
    jv *v = json_parse(text, len, err, sizeof err);
    if (!v)
        fprintf(stderr, "e2e: %s is not valid JSON: %s\n", out_file ? out_file : "the output", err);
    free(text);
    return v;
}

/* The report's function named name (as shown), or NULL with a line. */
static const jv *function(const jv *report, const char *name) {
    const jv *fs = json_get(report, "functions");
    for (size_t i = 0; fs && i < fs->n; i++)
        if (json_str(json_at(fs, i), "name") && !strcmp(json_str(json_at(fs, i), "name"), name))
            return json_at(fs, i);
    fprintf(stderr, "e2e: no function '%s' in the report (%zu functions)\n", name, fs ? fs->n : 0);
    return NULL;
}

/* A function's "belowResolution": 1 true, 0 false, -1 missing (with a line). */
static int below_resolution(const jv *f) {
    const jv *b = f ? json_get(f, "belowResolution") : NULL;
    if (!b || b->type != JV_BOOL) {
        fprintf(stderr, "e2e: no belowResolution in the report's function\n");
        return -1;
    }
    return b->b != 0;
}

/* The text report's line of the first table that names fn (as shown), or NULL. */
static char *table_line(const char *report, const char *fn, char *line, size_t size) {
    size_t len = strlen(fn);
    for (const char *p = report; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n >= len + 2 && !memcmp(p + n - len, fn, len) && p[n - len - 1] == ' ' && n < size) {
            memcpy(line, p, n);
            line[n] = 0;
            return line;
        }
        p = end ? end + 1 : NULL;
    }
    fprintf(stderr, "e2e: no line of the report ends with '%s'\n", fn);
    return NULL;
}

/* The report of r->trace as JSON, checked for "no call data" first. */
static jv *report_json(e2e_run *r) {
    const char *args[] = {"report", "--json", r->trace, NULL};
    jv *rep = dnprof_json(r, args, NULL);
    if (!rep) {
        char *err = e2e_read_file(r->err, NULL);
        if (err && strstr(err, "no call data"))
            fprintf(stderr, "e2e: the agent recorded no call data (no CallNode or MethodEnter events)\n");
        free(err);
    }
    return rep;
}

TEST(e2e_report_calls) {
    e2e_run r;
    ASSERT_EQ(run_calls(&r, "e2e_report_calls", "--calls=timed", "recursion"), 0);
    jv *rep = report_json(&r);
    ASSERT_NE(rep, NULL);
    ASSERT_STREQ(json_str(rep, "source"), "CallNode");
    const jv *fib = function(rep, "Scenarios.CallsScenario::Fib");
    const jv *rec = function(rep, "Scenarios.CallsScenario::Recurse");
    ASSERT(fib);
    ASSERT(rec);
    ASSERT_EQ((uint64_t)json_num(fib, "calls"), 21891);
    ASSERT_EQ((uint64_t)json_num(rec, "calls"), 1010);
    ASSERT_GT(json_num(fib, "selfNs"), 0);
    ASSERT_LE(json_num(fib, "selfNs"), json_num(fib, "totalNs"));
    /* self times add up to the total (the agent reads its clock for each separately:
     * a few ns apart at most per path), and the tree's root is that total */
    const jv *fs = json_get(rep, "functions");
    double self = 0, total = json_num(rep, "totalNs");
    for (size_t i = 0; i < fs->n; i++)
        self += json_num(json_at(fs, i), "selfNs");
    ASSERT_GT(total, 0);
    ASSERT_LE(self, total);
    ASSERT_LE(total - self, total / 1000 + 1000);
    ASSERT_EQ((uint64_t)json_num(json_get(rep, "tree"), "totalNs"), (uint64_t)total);
    /* the hooks' own cost was measured by the agent and taken out (issue 11) */
    const jv *hooks = json_get(rep, "hooks");
    ASSERT_NE(hooks, NULL);
    ASSERT_GE(json_num(hooks, "calls"), 21891 + 1010);
    ASSERT_GT(json_num(hooks, "innerNs"), 0);
    ASSERT_GT(json_num(hooks, "outerNs"), 0);
    /* Fib's few ns per call are less than the hooks' cost taken out of them: marked */
    ASSERT_EQ(below_resolution(fib), 1);
    ASSERT_EQ(below_resolution(function(rep, "Scenarios.Program::Main")), 0);
    json_free(rep);

    /* the text report names them too, and prints the tree */
    const char *args[] = {"report", "--tree", "--top", "5", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int ok = strstr(out, "Scenarios.CallsScenario::Fib") && strstr(out, "call tree") &&
             strstr(out, "hottest call paths") && strstr(out, "without --all-code") &&
             strstr(out, "net of the enter/leave hooks' own cost");
    if (!ok)
        e2e_show_file("report", r.out);
    free(out);
    ASSERT(ok);
    return 0;
}

/* A method of a few ns per call has less time left than the hooks' cost taken
 * out of it (tens of ns per call): its figure is mostly that cost's error, and
 * the report must say so rather than print it as if it were exact (a Fib(20)
 * read 409 ns for tens of us). OsrLeaf (x * 3 + 1, 20,000 calls) is marked "~"
 * in the text and belowResolution in the JSON; OsrHot, hundreds of ms of its
 * own loop in one call, is not; the note under the table says what "~" is. */
TEST(e2e_report_resolution) {
    e2e_run r;
    ASSERT_EQ(run_calls(&r, "e2e_report_resolution", "--calls=timed", "osr"), 0);
    jv *rep = report_json(&r);
    ASSERT_NE(rep, NULL);
    const jv *hot = function(rep, "Scenarios.CallsScenario::OsrHot");
    const jv *leaf = function(rep, "Scenarios.CallsScenario::OsrLeaf");
    ASSERT(hot);
    ASSERT(leaf);
    ASSERT_EQ((uint64_t)json_num(leaf, "calls"), 20000);
    ASSERT_GT(json_num(json_get(rep, "hooks"), "innerNs"), 0);
    fprintf(stderr, "e2e: OsrHot total %.0f ns, OsrLeaf total %.0f ns for 20000 calls\n", json_num(hot, "totalNs"),
            json_num(leaf, "totalNs"));
    int hot_below = below_resolution(hot), leaf_below = below_resolution(leaf);
    json_free(rep);
    ASSERT_EQ(hot_below, 0);
    ASSERT_EQ(leaf_below, 1);

    const char *args[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    char hl[1024], ll[1024];
    int ok = table_line(out, "Scenarios.CallsScenario::OsrHot", hl, sizeof hl) &&
             table_line(out, "Scenarios.CallsScenario::OsrLeaf", ll, sizeof ll) && !strchr(hl, '~') &&
             strstr(ll, " ~") && strstr(out, "\n~ below the resolution of --calls") &&
             strstr(out, "dnprof run --sample");
    if (!ok)
        e2e_show_file("report", r.out);
    free(out);
    ASSERT(ok);
    return 0;
}

TEST(e2e_report_convert) {
    e2e_run r;
    ASSERT_EQ(run_calls(&r, "e2e_report_convert", "--calls=timed", "recursion"), 0);
    jv *rep = report_json(&r);
    ASSERT_NE(rep, NULL);
    const jv *fs = json_get(rep, "functions");
    uint64_t self = 0; /* what the exports weigh: self times */
    for (size_t i = 0; fs && i < fs->n; i++)
        self += (uint64_t)json_num(json_at(fs, i), "selfNs");
    json_free(rep);

    char path[PATH_MAX + 32];
    /* speedscope: sampled profiles whose weights add up to the report's self times */
    snprintf(path, sizeof path, "%s/out.speedscope.json", r.dir);
    const char *ss[] = {"convert", "--format", "speedscope", "-o", path, r.trace, NULL};
    jv *doc = dnprof_json(&r, ss, path);
    ASSERT_NE(doc, NULL);
    const jv *pr = json_at(json_get(doc, "profiles"), 0);
    ASSERT_STREQ(json_str(pr, "type"), "sampled");
    const jv *w = json_get(pr, "weights");
    ASSERT_NE(w, NULL);
    double sum = 0;
    for (size_t i = 0; i < w->n; i++)
        sum += json_at(w, i)->num;
    ASSERT_EQ((uint64_t)sum, self);
    json_free(doc);

    /* chrome: complete events, one per call path */
    snprintf(path, sizeof path, "%s/out.chrome.json", r.dir);
    const char *ch[] = {"convert", "--format", "chrome", "-o", path, r.trace, NULL};
    doc = dnprof_json(&r, ch, path);
    ASSERT_NE(doc, NULL);
    const jv *evs = json_get(doc, "traceEvents");
    size_t x = 0;
    for (size_t i = 0; evs && i < evs->n; i++)
        x += json_str(json_at(evs, i), "ph") && !strcmp(json_str(json_at(evs, i), "ph"), "X");
    ASSERT_GT(x, 100); /* Recurse alone has 101 paths */
    json_free(doc);

    /* folded: the numbers add up to the same */
    const char *fo[] = {"convert", "--format", "folded", "-o", "-", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, fo), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT_NE(text, NULL);
    uint64_t fsum = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (!nl)
            break;
        char *sp = nl;
        while (sp > line && sp[-1] != ' ')
            sp--;
        fsum += strtoull(sp, NULL, 10);
        line = nl + 1;
    }
    int recurse = strstr(text, "Scenarios.CallsScenario::Recurse;Scenarios.CallsScenario::Recurse") != NULL;
    free(text);
    ASSERT(recurse);
    ASSERT_EQ(fsum, self);

    /* the HTML flame graph: one file, nothing from the network */
    snprintf(path, sizeof path, "%s/out.html", r.dir);
    const char *fg[] = {"convert", "--format", "flamegraph", "-o", path, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, fg), 0);
    ASSERT_STATUS(&r, 0);
    text = e2e_read_file(path, NULL);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "<!DOCTYPE html>") && strstr(text, "Scenarios.CallsScenario::Fib") &&
             !strstr(text, "https://") && !strstr(text, "http://");
    free(text);
    ASSERT(ok);
    return 0;
}

TEST(e2e_report_async_names) {
    e2e_run r;
    ASSERT_EQ(run_calls(&r, "e2e_report_async_names", "--calls", "async"), 0);
    jv *rep = report_json(&r);
    ASSERT_NE(rep, NULL);
    const jv *fs = json_get(rep, "functions");
    int machines = 0;
    for (size_t i = 0; fs && i < fs->n; i++) {
        const char *raw = json_str(json_at(fs, i), "raw"), *name = json_str(json_at(fs, i), "name");
        ASSERT(raw);
        ASSERT(name);
        if (strstr(raw, ">d__") && strstr(raw, "::MoveNext")) {
            size_t n = strlen(name);
            if (n < 8 || strcmp(name + n - 8, " (async)") != 0)
                fprintf(stderr, "e2e: '%s' is shown as '%s'\n", raw, name);
            ASSERT_GE(n, 8);
            ASSERT(!strcmp(name + n - 8, " (async)"));
            machines++;
        }
    }
    /* against what the program did: 20 calls of AsyncStep, whose state machine
     * runs twice each (to the await of Task.Yield, then resumed after it) */
    const jv *step = function(rep, "Scenarios.CallsScenario::AsyncStep");
    const jv *machine = function(rep, "Scenarios.CallsScenario::AsyncStep (async)");
    ASSERT_NE(step, NULL);
    ASSERT_NE(machine, NULL);
    ASSERT_EQ((uint64_t)json_num(step, "calls"), 20);
    ASSERT_EQ((uint64_t)json_num(machine, "calls"), 40);
    ASSERT_CONTAINS(json_str(machine, "raw"), "Scenarios.CallsScenario+<AsyncStep>d__");
    ASSERT_EQ((uint64_t)json_num(function(rep, "Scenarios.CallsScenario::Async"), "calls"), 1);
    ASSERT_EQ(machines, 1);
    json_free(rep);
    return 0;
}

TEST(e2e_report_timeline) {
    e2e_run r;
    ASSERT_EQ(run_calls(&r, "e2e_report_timeline", "--timeline", "recursion"), 0);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/out.speedscope.json", r.dir);
    const char *ss[] = {"convert", "--format", "speedscope", "-o", path, r.trace, NULL};
    jv *doc = dnprof_json(&r, ss, path);
    ASSERT_NE(doc, NULL);
    const jv *profiles = json_get(doc, "profiles");
    ASSERT(profiles);
    ASSERT_GT(profiles->n, 0);
    size_t opens = 0;
    for (size_t p = 0; p < profiles->n; p++) {
        const jv *pr = json_at(profiles, p);
        ASSERT_STREQ(json_str(pr, "type"), "evented");
        const jv *evs = json_get(pr, "events");
        long depth = 0;
        double at = 0;
        for (size_t i = 0; evs && i < evs->n; i++) {
            const jv *ev = json_at(evs, i);
            ASSERT_GE(json_num(ev, "at"), at);
            at = json_num(ev, "at");
            if (!strcmp(json_str(ev, "type"), "O")) {
                depth++;
                opens++;
            } else {
                ASSERT_GT(depth, 0);
                depth--;
            }
        }
        ASSERT_EQ(depth, 0);
    }
    ASSERT_GE(opens, 1010 + 21891);
    json_free(doc);
    /* print shows the calls indented by depth */
    const char *pa[] = {"print", "--events", "calls", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, pa), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int indented = strstr(out, "  MethodEnter Scenarios.CallsScenario::Recurse") != NULL;
    free(out);
    ASSERT(indented);
    return 0;
}

TEST(e2e_report_no_call_data) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_report_no_call_data"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "hello", NULL), 0);
    const char *args[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 1);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    int said = strstr(err, "this trace has no call data: record it with dnprof run --calls") != NULL &&
               strstr(err, "; the events it holds: dnprof print ") != NULL; /* the event log: where to read it */
    if (!said)
        e2e_show_file("stderr", r.err);
    free(err);
    ASSERT(said);
    const char *conv[] = {"convert", "--format", "folded", "-o", "-", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, conv), 0);
    ASSERT_STATUS(&r, 1);
    return 0;
}
