/* test_cli.c: the front end as a person uses it: print, --events, mistakes. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t n = fwrite(data, 1, len, f);
    return fclose(f) == 0 && n == len ? 0 : -1;
}

/* The number of lines of text (a last line without '\n' counts). */
static int count_lines(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '\n';
    size_t len = strlen(s);
    return n + (len > 0 && s[len - 1] != '\n');
}

/* `dnprof print path` must fail with one line on stderr that names path. */
static int print_fails(e2e_run *r, const char *path, const char *what) {
    const char *args[] = {"print", path, NULL};
    if (e2e_dnprof(r, args) != 0)
        return -1;
    char *err = e2e_read_file(r->err, NULL);
    if (err == NULL)
        return -1;
    int rc = 0;
    if (r->status == 0) {
        fprintf(stderr, "e2e: dnprof print of %s exited 0\n", what);
        rc = -1;
    }
    if (count_lines(err) != 1 || strstr(err, path) == NULL) {
        fprintf(stderr, "e2e: dnprof print of %s: want one line on stderr naming '%s', got %d lines:\n%s", what,
                path, count_lines(err), err);
        rc = -1;
    }
    free(err);
    return rc;
}

TEST(e2e_print_garbage) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_print_garbage"), 0);

    /* A good trace prints: the failures below are about the files. */
    ASSERT_EQ(e2e_run_scenario(&r, "hello", NULL), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);
    const char *good[] = {"print", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, good), 0);
    ASSERT_STATUS(&r, 0);

    char garbage[PATH_MAX + 16], empty[PATH_MAX + 16], missing[PATH_MAX + 16];
    snprintf(garbage, sizeof garbage, "%s/garbage.trace", r.dir);
    snprintf(empty, sizeof empty, "%s/empty.trace", r.dir);
    snprintf(missing, sizeof missing, "%s/missing.trace", r.dir);
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 7919u >> 3);
    memcpy(junk, "this is not a trace", 19);
    ASSERT_EQ(write_file(garbage, junk, sizeof junk), 0);
    ASSERT_EQ(write_file(empty, "", 0), 0);

    ASSERT_EQ(print_fails(&r, garbage, "a garbage file"), 0);
    ASSERT_EQ(print_fails(&r, empty, "an empty file"), 0);
    ASSERT_EQ(print_fails(&r, missing, "a missing file"), 0);
    return 0;
}

/* The column at which word starts in line, or -1. */
static long column_of(const char *line, size_t len, const char *word) {
    const char *p = memmem(line, len, word, strlen(word));
    return p != NULL ? p - line : -1;
}

TEST(e2e_print_log) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_print_log"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "classes", NULL), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);

    const char *args[] = {"print", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *log = e2e_read_file(r.out, NULL);
    ASSERT_NE(log, NULL);
    ASSERT_CONTAINS(log, "ClassLoadFinished");
    ASSERT_CONTAINS(log, "Scenarios.Outer+Inner");

    /* Indentation: a ModuleLoadStarted right after an AssemblyLoadStarted is
     * further right, with only spaces between. */
    int indented = 0;
    long assembly_col = -1;
    for (const char *line = log; *line && !indented;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
        long col = column_of(line, len, "ModuleLoadStarted");
        if (col > 0 && assembly_col >= 0 && col > assembly_col) {
            indented = 1;
            for (long c = assembly_col; c < col; c++)
                indented &= (size_t)c < len && line[c] == ' ';
        }
        assembly_col = column_of(line, len, "AssemblyLoadStarted");
        line = nl != NULL ? nl + 1 : line + len;
    }
    if (!indented) {
        fprintf(stderr, "e2e: no ModuleLoadStarted indented under an AssemblyLoadStarted in the log\n");
        e2e_show_file("the log", r.out);
    }
    free(log);
    ASSERT(indented);

    const char *json_args[] = {"print", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, json_args), 0);
    ASSERT_STATUS(&r, 0);
    char *json = e2e_read_file(r.out, NULL);
    ASSERT_NE(json, NULL);
    int lines = 0, bad = 0;
    for (char *line = json; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
        if (len > 0) {
            lines++;
            if ((line[0] != '{' || line[len - 1] != '}') && bad++ < 3)
                fprintf(stderr, "e2e: not a JSON object line: %.*s\n", (int)(len > 200 ? 200 : len), line);
        }
        line = nl != NULL ? nl + 1 : line + len;
    }
    int has_class = strstr(json, "Scenarios.Outer+Inner") != NULL;
    free(json);
    ASSERT_EQ(bad, 0);
    ASSERT_GE(lines, E2E_MIN_EVENTS);
    ASSERT(has_class);
    return 0;
}

TEST(e2e_events_filter) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_events_filter"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "classes", "classes"), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    ASSERT_GT(e2e_count(t, DNP_EV_ClassLoadStarted), 0);
    ASSERT_GT(e2e_count(t, DNP_EV_ClassLoadFinished), 0);
    size_t jit = 0, other = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        dnp_family fam = dnp_events[t->events[i].kind].family;
        if (fam == DNP_FAM_JIT && jit++ < 3)
            fprintf(stderr, "e2e: a JIT event with --events classes: %s\n", dnp_events[t->events[i].kind].name);
        if (fam != DNP_FAM_CLASSES && fam != DNP_FAM_RUNTIME && fam != DNP_FAM_JIT && other++ < 3)
            fprintf(stderr, "e2e: a %s event with --events classes: %s\n", dnp_family_words[fam],
                    dnp_events[t->events[i].kind].name);
    }
    dnp_trace_free(t);
    ASSERT_EQ(jit, 0);
    ASSERT_EQ(other, 0);
    return 0;
}

TEST(e2e_bad_events_word) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_bad_events_word"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "hello", "clases"), 0);
    ASSERT_STATUS(&r, 2);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    if (strstr(err, "clases") == NULL)
        fprintf(stderr, "e2e: stderr does not name 'clases':\n%s", err);
    int named = strstr(err, "clases") != NULL;
    free(err);
    ASSERT(named);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int ran = strstr(out, "hello from Scenarios") != NULL;
    free(out);
    ASSERT(!ran);
    struct stat st;
    ASSERT_NE(stat(r.trace, &st), 0);

    /* The same command with the word spelt right runs and records. */
    ASSERT_EQ(e2e_run_scenario(&r, "hello", "classes"), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);
    return 0;
}

/* `dnprof run` of 80,000 exceptions with stacks (about 4 million events): the
 * closing line must come from one streaming pass. Its figures are the trace's
 * (the whole-trace loader's count, last time and status), and dnprof's peak
 * memory stays within 32 MiB of the same run's without the line (-q): the
 * peak RSS of a process tree is its largest process, the program's own. The
 * line after it names the report that reads what was recorded. */
static int run_measured(e2e_run *r, int quiet, long *kib) {
    const char *dnprof = e2e_env("DNPROF_BIN"), *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dnprof || !dll)
        return -1;
    char *argv[] = {(char *)dnprof, "run", quiet ? "-q" : "--exceptions", "--exceptions", "-o", r->trace, "--",
                    (char *)e2e_dotnet(), (char *)dll, "stories", "bench", "80000", NULL};
    pid_t pid = e2e_spawn(argv, NULL, r->dir, r->out, NULL, r->err);
    if (pid < 0)
        return -1;
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid)
        return -1;
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    *kib = ru.ru_maxrss;
    return 0;
}

TEST(e2e_run_summary_streams) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "run_summary_streams"), 0);
    long quiet_kib = 0, kib = 0;
    ASSERT_EQ(run_measured(&r, 1, &quiet_kib), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT_EQ(run_measured(&r, 0, &kib), 0);
    ASSERT_STATUS(&r, 0);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);

    dnp_trace *t = NULL;
    char lerr[256];
    ASSERT_EQ(dnp_trace_load(r.trace, &t, lerr, sizeof lerr), 0);
    ASSERT_GT(t->nevents, 80000 * 10);
    char want[256];
    uint64_t n = t->nevents, digits[8];
    int nd = 0;
    do
        digits[nd++] = n % 1000;
    while ((n /= 1000) != 0);
    int len = snprintf(want, sizeof want, ": %llu", (unsigned long long)digits[--nd]);
    while (nd > 0)
        len += snprintf(want + len, sizeof want - (size_t)len, ",%03llu", (unsigned long long)digits[--nd]);
    snprintf(want + len, sizeof want - (size_t)len, " events, %.2f s, complete\n",
             (double)t->events[t->nevents - 1].time_ns / 1e9);
    dnp_trace_free(t);
    /* then the command that reads it, for what was recorded */
    const char *at = strstr(err, want), *next = at ? strstr(at, "dnprof: read it with: dnprof report --exceptions ") : NULL;
    if (!at || !next || !strstr(next, "run_summary_streams")) {
        fprintf(stderr, "e2e: want the summary '%s' and the report to read it with, got:\n%s", want, err);
        free(err);
        return 1;
    }
    free(err);
    fprintf(stderr, "e2e: peak RSS %ld KiB with the summary, %ld KiB without\n", kib, quiet_kib);
    ASSERT_LE(kib, quiet_kib + 32 * 1024);
    return 0;
}

/* stderr of the last command says the program is a Native AOT one, and where
 * to read why, on one line; the program was not run (its stdout is empty). */
static int said_native_aot(e2e_run *r, const char *what, int ran_nothing) {
    char *err = e2e_read_file(r->err, NULL), *out = e2e_read_file(r->out, NULL);
    int ok = err && strstr(err, "is a Native AOT program") && strstr(err, "PublishAot") &&
             strstr(err, "docs/agent.md#native-aot") && (!ran_nothing || (out && !*out));
    if (!ok)
        fprintf(stderr, "e2e: %s (exit %d) said:\n%s\nand printed:\n%s\n", what, r->status, err ? err : "",
                out ? out : "");
    free(err);
    free(out);
    return ok ? 0 : -1;
}

/* A program published with Native AOT (the sample, e2e.build_sample_aot) has
 * no CoreCLR: no agent can load in it. run, top and doctor say so before
 * running it, instead of its whole run unrecorded and "the agent never
 * started"; attach says so of the running program. */
TEST(e2e_native_aot_refused) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_native_aot_refused"), 0);
    const char *aot = e2e_env("DNPROF_SAMPLE_AOT");
    ASSERT(aot);
    /* the sample as published runs (it is a program, not a stand-in) */
    char *const plain[] = {(char *)aot, NULL};
    ASSERT_EQ(e2e_exec(&r, plain, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    int ran = out && strstr(out, "hello, dnprof");
    free(out);
    ASSERT(ran);
    const char *run[] = {"run", "--sample", "-o", r.trace, "--", aot, NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_EQ(r.status, 127);
    ASSERT_EQ(said_native_aot(&r, "dnprof run", 1), 0);
    struct stat st;
    ASSERT_NE(stat(r.trace, &st), 0);
    const char *top[] = {"top", "--", aot, NULL};
    ASSERT_EQ(e2e_dnprof(&r, top), 0);
    ASSERT_EQ(r.status, 127);
    ASSERT_EQ(said_native_aot(&r, "dnprof top", 1), 0);
    const char *doctor[] = {"doctor", "--", aot, NULL};
    ASSERT_EQ(e2e_dnprof(&r, doctor), 0);
    ASSERT_NE(r.status, 0);
    ASSERT_EQ(said_native_aot(&r, "dnprof doctor", 0), 0);
    /* attach: the running program (`hello async`, about a second of CPU),
     * once it is the program (exec done) */
    char *const async_argv[] = {(char *)aot, "async", NULL};
    char aout[PATH_MAX + 16];
    snprintf(aout, sizeof aout, "%s/aot.out", r.dir);
    pid_t pid = e2e_spawn(async_argv, NULL, r.dir, aout, NULL, r.err);
    ASSERT(pid > 0);
    char exe[64], target[PATH_MAX], real[PATH_MAX];
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    ASSERT(realpath(aot, real) != NULL);
    for (int i = 0; i < 500; i++) {
        ssize_t n = readlink(exe, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        if (!strcmp(target, real))
            break;
        usleep(2000);
    }
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *attach[] = {"attach", "--sample", "--duration", "1s", "-o", r.trace, pidtext, NULL};
    int rc = e2e_dnprof(&r, attach);
    int status = 0;
    e2e_wait(pid, 60000, &status);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(r.status, 1);
    ASSERT_EQ(said_native_aot(&r, "dnprof attach", 0), 0);
    ASSERT_EQ(status, 0); /* the program ran on to its end */
    return 0;
}

/* The sample's hello.dll given as the program (a first hour's mistake): exec
 * would say only "Permission denied"; run and top say what it is and the
 * command that runs it, and run nothing. */
TEST(e2e_assembly_as_program) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_assembly_as_program"), 0);
    const char *dll = e2e_env("DNPROF_SAMPLE_HELLO");
    ASSERT(dll);
    const char *cmds[] = {"run", "top"};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {cmds[i], "--", dll, NULL};
        ASSERT_EQ(e2e_dnprof(&r, args), 0);
        ASSERT_EQ(r.status, 127);
        char *err = e2e_read_file(r.err, NULL), *out = e2e_read_file(r.out, NULL);
        char want[PATH_MAX + 64];
        snprintf(want, sizeof want, "-- dotnet %s)", dll);
        int ok = err && strstr(err, "is a .NET assembly, not a program") && strstr(err, want) &&
                 count_lines(err) == 1 && out && !*out;
        if (!ok)
            fprintf(stderr, "e2e: dnprof %s -- %s said:\n%s\n", cmds[i], dll, err ? err : "");
        free(err);
        free(out);
        ASSERT(ok);
    }
    return 0;
}
