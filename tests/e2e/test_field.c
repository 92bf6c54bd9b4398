/* test_field.c: what a review of the merged front end found, each on the real
 * runtime: options the help must list, combinations of options that must do
 * what both ask (--calls --heap-at exit), reports whose every figure is true
 * (--calls=counts has no times to show; "N caught (M of them internal)"), heap
 * diff's totals, a closed pipe that ends every command alike, detach after a
 * snapshot, and a snapshot given where a trace is wanted. */
#include <errno.h>
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

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Whether the file at path holds text (NULL with a line if unreadable). */
static int file_has(const char *path, const char *text) {
    char *s = e2e_read_file(path, NULL);
    int has = s && strstr(s, text);
    free(s);
    return has;
}

/* `dnprof run -q OPTS... -o r->trace -- dotnet Scenarios.dll ARGS...`: opts and
 * args NULL-terminated. 0 when it ran with exit status 0. */
static int run_scen(e2e_run *r, const char *const opts[], const char *const args[]) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dll)
        return -1;
    const char *argv[40];
    size_t n = 0;
    argv[n++] = "run";
    argv[n++] = "-q";
    for (size_t i = 0; opts && opts[i] && n < 20; i++)
        argv[n++] = opts[i];
    argv[n++] = "-o";
    argv[n++] = r->trace;
    argv[n++] = "--";
    argv[n++] = e2e_dotnet();
    argv[n++] = dll;
    for (size_t i = 0; args && args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if (e2e_dnprof(r, argv) != 0)
        return -1;
    if (r->status != 0) {
        e2e_show_file("dnprof run said", r->err);
        return -1;
    }
    return 0;
}

/* `dnprof run --help` lists every option that dnprof run takes. */
TEST(e2e_field_run_help_lists_options) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_run_help_lists_options"), 0);
    const char *args[] = {"run", "--help", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    static const char *const opts[] = {"--events",  "--output",   "--flush-ms", "--exceptions", "--calls ",
                                       "--calls=counts", "--timeline", "--args", "--include",   "--exclude",
                                       "--all-code", "--alloc",   "--sample",   "--rate",       "--cpu",
                                       "--wall",    "--heap-at",  "--heap-output", "--quiet",   "--help"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        if (!file_has(r.out, opts[i])) {
            fprintf(stderr, "e2e: dnprof run --help does not list %s\n", opts[i]);
            ASSERT(0);
        }
    }
    return 0;
}

/* --calls leaves gc out of its default events; --heap-at exit needs them: with
 * both, the snapshot is taken (and holds what the program holds), and the calls
 * are recorded. */
TEST(e2e_field_calls_heap_at_exit) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_calls_heap_at_exit"), 0);
    char snap[PATH_MAX];
    snprintf(snap, sizeof snap, "%s/exit.dnheap", r.dir);
    const char *opts[] = {"--calls", "--heap-at", "exit", "--heap-output", snap, NULL};
    const char *args[] = {"heap", "list=10", "chain=777", "array=10", "cwt=1", NULL};
    ASSERT_EQ(run_scen(&r, opts, args), 0);
    if (access(snap, F_OK) != 0)
        e2e_show_file("dnprof run said", r.err);
    ASSERT_EQ(access(snap, F_OK), 0);
    const char *rep[] = {"heap", "report", "--top", "0", snap, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    const char *line = strstr(out, "Scenarios.HeapChainNode");
    while (line && line > out && line[-1] != '\n')
        line--;
    char rb[32], ru[8], sb[32], su[8], count[32];
    int got = line ? sscanf(line, "%31s %7s %31s %7s %31s", rb, ru, sb, su, count) : 0;
    free(out);
    ASSERT_EQ(got, 5);
    ASSERT_STREQ(count, "777");
    /* and the calls are there */
    const char *calls[] = {"report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, calls), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, "Scenarios.HeapScenario::Run"));
    return 0;
}

/* A --calls=counts trace has exact counts and no times: the report shows the
 * counts and paths by calls, not columns of "0 ns" and an empty list of paths;
 * convert weighs folded stacks by calls (it wrote an empty file) and refuses
 * the formats that need times (they were all zeros). */
TEST(e2e_field_counts_report) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_counts_report"), 0);
    const char *opts[] = {"--calls=counts", NULL};
    const char *args[] = {"calls", "recursion", NULL};
    ASSERT_EQ(run_scen(&r, opts, args), 0);
    /* convert: folded weighted by calls (not an empty file), the time formats refused */
    const char *fo[] = {"convert", "-f", "folded", "-o", "-", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, fo), 0);
    ASSERT_STATUS(&r, 0);
    char *folded = e2e_read_file(r.out, NULL);
    ASSERT_NE(folded, NULL);
    uint64_t fib_calls = 0;
    for (const char *l = folded; l && *l;) {
        const char *nl = strchr(l, '\n');
        const char *sp = nl ? l : NULL;
        for (const char *q = l; nl && q < nl; q++)
            if (*q == ' ')
                sp = q;
        if (sp && sp - l >= 28 && !strncmp(sp - 28, "Scenarios.CallsScenario::Fib", 28))
            fib_calls += strtoull(sp + 1, NULL, 10);
        l = nl ? nl + 1 : NULL;
    }
    free(folded);
    ASSERT_EQ(fib_calls, 21891);
    const char *sp[] = {"convert", "-f", "speedscope", "-o", "-", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, sp), 0);
    ASSERT_STATUS(&r, 1);
    ASSERT(file_has(r.err, "--calls=counts"));

    const char *rep[] = {"report", "--tree", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    /* Fib(20): 21,891 calls, 5,020 of them at depth 14 of Fib, the most of any path */
    const char *paths = strstr(out, "paths");
    const char *fib = strstr(out, "21,891  Scenarios.CallsScenario::Fib");
    int ok = fib && paths && strstr(paths, "5,020  Scenarios.Program::Main") && !strstr(out, "0 ns") &&
             !strstr(out, "0.0%");
    if (!ok)
        e2e_show_file("report", r.out);
    free(out);
    ASSERT(ok);
    return 0;
}

/* The reader of a pipe leaves (| head): every command ends quietly, exit 0. */
TEST(e2e_field_closed_pipe) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_closed_pipe"), 0);
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT(bin);
    const char *opts[] = {"--calls", "--all-code", "--exceptions", NULL};
    const char *args[] = {"stories", "all", NULL};
    ASSERT_EQ(run_scen(&r, opts, args), 0);
    static const char *const cmds[][4] = {
        {"report", NULL}, {"report", "--json", NULL}, {"report", "--tree", "--threshold", "0"},
        {"print", "--exceptions", NULL}, {"report", "--exceptions", "--json", NULL}, {"print", NULL},
        {"convert", "-f", "folded", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *argv[10];
        size_t n = 0;
        argv[n++] = bin;
        for (size_t k = 0; k < 4 && cmds[i][k]; k++)
            argv[n++] = cmds[i][k];
        if (!strcmp(cmds[i][0], "convert")) {
            argv[n++] = "-o";
            argv[n++] = "-";
        }
        argv[n++] = r.trace;
        argv[n] = NULL;
        int fd = -1;
        pid_t pid = e2e_spawn((char *const *)argv, NULL, r.dir, NULL, &fd, r.err);
        ASSERT_GT(pid, 0);
        char buf[16];
        ssize_t got = read(fd, buf, sizeof buf); /* some of it, then the reader is gone */
        close(fd);
        int status = -1;
        ASSERT_EQ(e2e_wait(pid, E2E_TIMEOUT_MS, &status), 0);
        if (got <= 0 || status != 0 || file_has(r.err, "dnprof")) {
            fprintf(stderr, "e2e: dnprof %s %s | head: exit %d after %zd bytes\n", cmds[i][0],
                    cmds[i][1] ? cmds[i][1] : "", status, got);
            e2e_show_file("stderr", r.err);
        }
        ASSERT_GT(got, 0);
        ASSERT_EQ(status, 0);
        ASSERT(!file_has(r.err, "dnprof"));
    }
    return 0;
}

/* "N caught (M of them internal)": M counts caught exceptions only, in the
 * summary, the tables and the JSON; the tables' times read as the stories'. */
TEST(e2e_field_exceptions_internal) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_exceptions_internal"), 0);
    const char *opts[] = {"--exceptions", NULL};
    const char *args[] = {"stories", "all", NULL};
    ASSERT_EQ(run_scen(&r, opts, args), 0);
    const char *rep[] = {"report", "--exceptions", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *text = e2e_read_file(r.out, &len);
    ASSERT_NE(text, NULL);
    char err[160];
    jv *v = json_parse(text, len, err, sizeof err);
    free(text);
    ASSERT_NE(v, NULL);
    /* the truth, from the stories: internal (first chance, thrown and caught in
     * framework code) and caught */
    const jv *list = json_get(v, "exceptions");
    ASSERT_NE(list, NULL);
    uint64_t truth = 0, framework = 0;
    for (size_t i = 0; i < list->n; i++) {
        const jv *x = json_at(list, i);
        const jv *in = json_get(x, "internal");
        int internal = in && in->type == JV_BOOL && in->b;
        framework += internal;
        truth += internal && json_str(x, "outcome") && !strcmp(json_str(x, "outcome"), "caught");
    }
    ASSERT_GT(framework, 0);
    ASSERT_EQ((uint64_t)json_num(v, "internal"), truth);
    const jv *types = json_get(v, "by_type");
    ASSERT_NE(types, NULL);
    for (size_t i = 0; i < types->n; i++)
        ASSERT_LE(json_num(json_at(types, i), "internal"), json_num(json_at(types, i), "caught"));
    json_free(v);

    const char *txt[] = {"report", "--exceptions", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, txt), 0);
    ASSERT_STATUS(&r, 0);
    char want[64];
    snprintf(want, sizeof want, "(%llu of them internal", (unsigned long long)truth);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    /* no "14208.2 us" where the stories say "14.2 ms", nor "3108.0 us" for 3.11 ms */
    int big_us = 0;
    for (const char *p = strstr(out, " us"); p; p = strstr(p + 1, " us")) {
        const char *q = p;
        while (q > out && q[-1] != ' ')
            q--;
        big_us |= atof(q) >= 1000.0;
    }
    int ok = strstr(out, want) && !big_us;
    if (!ok)
        e2e_show_file("report --exceptions", r.out);
    free(out);
    ASSERT(ok);
    /* --top cuts each table (it was ignored); --tree and --thread are refused (ignored) */
    const char *top[] = {"report", "--exceptions", "--top", "1", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, top), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, "more (--top N to see more)"));
    const char *tree[] = {"report", "--exceptions", "--tree", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, tree), 0);
    ASSERT_STATUS(&r, 2);
    return 0;
}

/* heap diff's totals (bytes, not the object count twice) and counts written as
 * every other count (2,000); a snapshot given to print/report/convert is named
 * as one, with the command that reads it. */
TEST(e2e_field_heap_diff) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_heap_diff"), 0);
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%s/a.dnheap", r.dir);
    snprintf(b, sizeof b, "%s/b.dnheap", r.dir);
    const char *oa[] = {"--heap-at", "exit", "--heap-output", a, NULL};
    const char *ob[] = {"--heap-at", "exit", "--heap-output", b, NULL};
    const char *aa[] = {"heap", "list=1000", "chain=10", "array=10", "cwt=1", NULL};
    const char *ab[] = {"heap", "list=3000", "chain=10", "array=10", "cwt=1", NULL};
    ASSERT_EQ(run_scen(&r, oa, aa), 0);
    ASSERT_EQ(run_scen(&r, ob, ab), 0);

    /* the before snapshot's bytes, as heap report --json says them */
    const char *ja[] = {"heap", "report", "--json", a, NULL};
    ASSERT_EQ(e2e_dnprof(&r, ja), 0);
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *text = e2e_read_file(r.out, &len);
    ASSERT_NE(text, NULL);
    char err[160];
    jv *v = json_parse(text, len, err, sizeof err);
    free(text);
    ASSERT_NE(v, NULL);
    double objects = json_num(v, "objects"), bytes = json_num(v, "bytes");
    json_free(v);
    ASSERT_GT(objects, 1000);
    ASSERT_GT(bytes, objects * 24);

    const char *diff[] = {"heap", "diff", a, b, NULL};
    ASSERT_EQ(e2e_dnprof(&r, diff), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    const char *bt = strstr(out, ", bytes ");
    double shown = 0;
    char unit[8] = "";
    int got = bt ? sscanf(bt, ", bytes %lf %7s", &shown, unit) : 0;
    double scale = !strcmp(unit, "B") ? 1 : !strcmp(unit, "KiB") ? 1024 : !strcmp(unit, "MiB") ? 1048576 : 0;
    int ok = got == 2 && scale && shown * scale > bytes * 0.95 && shown * scale < bytes * 1.05 &&
             strstr(out, "+2,000  Scenarios.HeapListItem\n");
    if (!ok) {
        fprintf(stderr, "e2e: before: %.0f objects, %.0f bytes\n", objects, bytes);
        e2e_show_file("heap diff", r.out);
    }
    free(out);
    ASSERT(ok);

    /* --top cuts the list, and says so, as heap report does */
    const char *top[] = {"heap", "diff", "--top", "1", a, b, NULL};
    ASSERT_EQ(e2e_dnprof(&r, top), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, "more types changed; --top 0 shows them all"));

    static const char *const cmds[][4] = {{"print", NULL}, {"report", NULL}, {"convert", "-f", "folded"}};
    for (size_t i = 0; i < 3; i++) {
        const char *argv[6];
        size_t n = 0;
        for (size_t k = 0; k < 3 && cmds[i][k]; k++)
            argv[n++] = cmds[i][k];
        argv[n++] = a;
        argv[n] = NULL;
        ASSERT_EQ(e2e_dnprof(&r, argv), 0);
        ASSERT_STATUS(&r, 1);
        if (!file_has(r.err, "is a heap snapshot") || !file_has(r.err, "dnprof heap report")) {
            e2e_show_file("stderr", r.err);
            ASSERT(0);
        }
    }
    /* a closed pipe ends convert --format heapsnapshot quietly too */
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT(bin);
    const char *cv[] = {bin, "convert", "--format", "heapsnapshot", "-o", "-", b, NULL};
    int fd = -1;
    pid_t pid = e2e_spawn((char *const *)cv, NULL, r.dir, NULL, &fd, r.err);
    ASSERT_GT(pid, 0);
    char buf[16];
    ssize_t head = read(fd, buf, sizeof buf);
    close(fd);
    int status = -1;
    ASSERT_EQ(e2e_wait(pid, E2E_TIMEOUT_MS, &status), 0);
    if (status != 0 || file_has(r.err, "dnprof"))
        e2e_show_file("convert --format heapsnapshot -o - | head", r.err);
    ASSERT_GT(head, 0);
    ASSERT_EQ(status, 0);
    ASSERT(!file_has(r.err, "dnprof"));
    return 0;
}

/* dnprof detach right after dnprof snapshot (whose agent is on its way out):
 * no complaint about the snapshot agent's by-product trace, which is gone. */
TEST(e2e_field_detach_after_snapshot) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_detach_after_snapshot"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], snap[PATH_MAX], waitarg[PATH_MAX + 8];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(snap, sizeof snap, "%s/a.dnheap", r.dir);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    const char *argv[] = {e2e_dotnet(), dll, "heap", "chain=10", waitarg, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t child = e2e_spawn((char *const *)argv, env, r.dir, out, NULL, errp);
    ASSERT_GT(child, 0);
    long pid = 0;
    for (int i = 0; i < 3000 && !pid; i++) {
        char *s = access(out, F_OK) == 0 ? e2e_read_file(out, NULL) : NULL;
        const char *p = s ? strstr(s, "ready ") : NULL;
        if (p && strchr(p, '\n'))
            pid = atol(p + 6);
        free(s);
        if (!pid)
            sleep_ms(20);
    }
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%ld", pid);
    /* -o is a symbolic link to a file of someone else's: replaced, not written through */
    char victim[PATH_MAX];
    snprintf(victim, sizeof victim, "%s/victim", r.dir);
    FILE *vf = fopen(victim, "w");
    ASSERT_NE(vf, NULL);
    fputs("precious\n", vf);
    fclose(vf);
    ASSERT_EQ(symlink(victim, snap), 0);
    const char *sn[] = {"snapshot", "-o", snap, pidtext, NULL};
    int ok = pid > 0 && e2e_dnprof(&r, sn) == 0 && r.status == 0;
    if (!ok)
        e2e_show_file("dnprof snapshot said", r.err);
    struct stat st;
    int replaced = ok && lstat(snap, &st) == 0 && S_ISREG(st.st_mode) && file_has(victim, "precious");
    const char *de[] = {"detach", pidtext, NULL};
    int ran = ok && e2e_dnprof(&r, de) == 0;
    int quiet = ran && !file_has(r.err, "cannot open");
    if (ran && !quiet)
        e2e_show_file("dnprof detach said", r.err);
    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT(replaced);
    ASSERT(ran);
    ASSERT(quiet);
    ASSERT_EQ(status, 0);
    return 0;
}

/* run --heap-at exit --heap-output LINK, LINK a symbolic link to another file:
 * the link is replaced by the snapshot, the file it pointed to is untouched. */
TEST(e2e_field_heap_output_symlink) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_heap_output_symlink"), 0);
    char victim[PATH_MAX], link[PATH_MAX];
    snprintf(victim, sizeof victim, "%s/victim", r.dir);
    snprintf(link, sizeof link, "%s/link.dnheap", r.dir);
    FILE *vf = fopen(victim, "w");
    ASSERT_NE(vf, NULL);
    fputs("precious\n", vf);
    fclose(vf);
    ASSERT_EQ(symlink(victim, link), 0);
    const char *opts[] = {"--heap-at", "exit", "--heap-output", link, NULL};
    const char *args[] = {"heap", "list=10", "chain=10", "array=10", "cwt=1", NULL};
    ASSERT_EQ(run_scen(&r, opts, args), 0);
    struct stat st;
    ASSERT_EQ(lstat(link, &st), 0);
    ASSERT(S_ISREG(st.st_mode));
    ASSERT(file_has(victim, "precious"));
    const char *rep[] = {"heap", "report", link, NULL};
    ASSERT_EQ(e2e_dnprof(&r, rep), 0);
    ASSERT_STATUS(&r, 0);
    return 0;
}

/* print --thread N of a thread the trace does not have says so (it printed
 * nothing, exit 0); print --exceptions with the event log's filters refuses
 * them (it ignored them); convert's "nothing to convert" names --sample too. */
TEST(e2e_field_print_filters) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_print_filters"), 0);
    const char *opts[] = {"--exceptions", NULL};
    const char *args[] = {"exceptions", NULL};
    ASSERT_EQ(run_scen(&r, opts, args), 0);
    const char *none[] = {"print", "--thread", "999", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, none), 0);
    ASSERT_STATUS(&r, 1);
    ASSERT(file_has(r.err, "no thread 999"));
    const char *one[] = {"print", "--thread", "1", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, one), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, "[ 1] "));
    const char *exc[] = {"print", "--exceptions", "--thread", "1", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, exc), 0);
    ASSERT_STATUS(&r, 2);
    ASSERT(file_has(r.err, "--exceptions prints each exception's whole story"));
    /* convert of a trace with nothing to convert names every way to record it */
    const char *conv[] = {"convert", "-f", "folded", "-o", "-", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, conv), 0);
    ASSERT_STATUS(&r, 1);
    ASSERT(file_has(r.err, "--calls, --sample, --alloc or --locks"));
    return 0;
}

/* --events calls was taken, and recorded nothing (2 events, no call data): the
 * calls come with --calls. run, attach and env say so. */
TEST(e2e_field_events_calls) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_field_events_calls"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *run[] = {"run", "-q", "--events", "calls", "-o", r.trace, "--", e2e_dotnet(), dll, "calls", "recursion",
                         NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    if (r.status == 0) { /* what it did instead: a trace without call data */
        const char *rep[] = {"report", r.trace, NULL};
        e2e_dnprof(&r, rep);
        e2e_show_file("dnprof report said", r.err);
        ASSERT(0);
    }
    ASSERT_STATUS(&r, 2);
    ASSERT(file_has(r.err, "--calls"));
    const char *env[] = {"env", "--events", "default,calls", NULL};
    ASSERT_EQ(e2e_dnprof(&r, env), 0);
    ASSERT_STATUS(&r, 2);
    ASSERT(file_has(r.err, "dnprof run --calls"));
    const char *att[] = {"attach", "--events", "calls", "1", NULL};
    ASSERT_EQ(e2e_dnprof(&r, att), 0);
    ASSERT_STATUS(&r, 2);
    ASSERT(file_has(r.err, "dnprof run --calls"));
    return 0;
}
