/* test_process.c: the profiled process as a whole: killed, exiting with a code,
 * starting a child. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "session.h"
#include "test.h"

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Reads fd until a line "ready" or timeout_ms; 0 when it came. */
static int wait_ready(int fd, int timeout_ms) {
    char buf[4096];
    size_t n = 0;
    long deadline = now_ms() + timeout_ms;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t got = read(fd, buf + n, sizeof buf - 1 - n);
        if (got <= 0)
            return -1; /* the program ended without saying ready */
        n += (size_t)got;
        buf[n] = '\0';
        if (strncmp(buf, "ready\n", 6) == 0 || strstr(buf, "\nready\n") != NULL)
            return 0;
        if (n == sizeof buf - 1)
            n = 0;
    }
}

TEST(e2e_sigkill) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_sigkill"), 0);
    const char *agent = e2e_env("DNPROF_AGENT");
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(agent, NULL);
    ASSERT_NE(dll, NULL);
    char profiler_path[PATH_MAX + 32], output[PATH_MAX + 32];
    snprintf(profiler_path, sizeof profiler_path, DNP_ENV_PROFILER_PATH "=%s", agent);
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    const char *env[] = {
        DNP_ENV_ENABLE "=1", DNP_ENV_PROFILER "=" DNP_CLSID_TEXT, profiler_path, output,
        DNP_ENV_ROOT_PID, DNP_ENV_SESSION, DNP_ENV_EVENTS, NULL,
    };
    const char *argv[] = {e2e_dotnet(), dll, "spin", NULL};
    int out_fd = -1;
    pid_t pid = e2e_spawn((char *const *)argv, env, r.dir, NULL, &out_fd, r.err);
    ASSERT_GT(pid, 0);
    int ready = wait_ready(out_fd, 60000);
    if (ready != 0) {
        fprintf(stderr, "e2e: spin did not say ready within 60 s\n");
        e2e_show_file("stderr", r.err);
    } else {
        struct timespec ts = {0, 500 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    int status = 0;
    e2e_wait(pid, 10000, &status);
    close(out_fd);
    ASSERT_EQ(ready, 0);
    ASSERT_EQ(status, 128 + SIGKILL);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    if (t->status != DNP_TRACE_OPEN && t->status != DNP_TRACE_TRUNCATED)
        fprintf(stderr, "e2e: a killed process's trace has status %d: %s\n", (int)t->status, t->status_text);
    ASSERT(t->status == DNP_TRACE_OPEN || t->status == DNP_TRACE_TRUNCATED);
    ASSERT_GT(e2e_count(t, DNP_EV_ClassLoadFinished), 0);
    ASSERT_GE(e2e_expect(t, DNP_EV_AssemblyLoadFinished, "Scenarios", "Scenarios"), 0);
    ASSERT_EQ(t->pid, pid);
    dnp_trace_free(t);
    return 0;
}

TEST(e2e_exit_code_and_output) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_exit_code_and_output"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);

    /* Without dnprof, as the reference. */
    const char *argv[] = {e2e_dotnet(), dll, "exitcode", NULL};
    const char *no_profiler[] = {DNP_ENV_ENABLE, DNP_ENV_PROFILER, DNP_ENV_PROFILER_PATH, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, no_profiler), 0);
    ASSERT_STATUS(&r, 42);
    char *plain = e2e_read_file(r.out, NULL);
    ASSERT_NE(plain, NULL);
    ASSERT_STREQ(plain, "bye\n");

    ASSERT_EQ(e2e_run_scenario(&r, "exitcode", NULL), 0);
    ASSERT_STATUS(&r, 42);
    char *profiled = e2e_read_file(r.out, NULL);
    ASSERT_NE(profiled, NULL);
    ASSERT_STREQ(profiled, plain);
    free(plain);
    free(profiled);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);
    return 0;
}

/* Does name look like <stem>.<digits>.trace? */
static int is_child_trace(const char *name, const char *stem) {
    size_t n = strlen(stem);
    if (strncmp(name, stem, n) != 0 || name[n] != '.')
        return 0;
    const char *p = name + n + 1, *digits = p;
    while (*p >= '0' && *p <= '9')
        p++;
    return p > digits && strcmp(p, ".trace") == 0;
}

TEST(e2e_children) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_children"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "children", NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, "hello from Scenarios\n");
    ASSERT_CONTAINS(out, "exited with 0\n");
    free(out);

    char child[PATH_MAX] = "";
    int others = 0;
    DIR *d = opendir(r.dir);
    ASSERT_NE(d, NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 6, ".trace") != 0 || strcmp(de->d_name, "e2e_children.trace") == 0)
            continue;
        if (is_child_trace(de->d_name, "e2e_children") && child[0] == '\0')
            snprintf(child, sizeof child, "%s/%s", r.dir, de->d_name);
        else
            fprintf(stderr, "e2e: unexpected trace '%s'\n", de->d_name), others++;
    }
    closedir(d);
    if (child[0] == '\0')
        fprintf(stderr, "e2e: no e2e_children.<pid>.trace in %s\n", r.dir);
    ASSERT_NE(child[0], '\0');
    ASSERT_EQ(others, 0);

    dnp_trace *root = e2e_load(r.trace);
    ASSERT_NE(root, NULL);
    dnp_trace *kid = e2e_load(child);
    ASSERT_NE(kid, NULL);
    ASSERT_NE(root->pid, 0);
    ASSERT_NE(kid->pid, 0);
    ASSERT_NE(root->pid, kid->pid);
    ASSERT_EQ(kid->ppid, root->pid);
    char expect[PATH_MAX + 64];
    snprintf(expect, sizeof expect, "%s/e2e_children.%llu.trace", r.dir, (unsigned long long)kid->pid);
    ASSERT_STREQ(child, expect);
    dnp_trace_free(root);
    dnp_trace_free(kid);
    return 0;
}

/* `dnprof run -- dotnet run --project DIR`: the SDK builds (MSBuild, the
 * compiler) and then starts the program. The SDK's own processes record
 * nothing (DNPROF_SDK_ASIDE), and the program writes the trace -o names: its
 * seven exceptions are there, and no other trace is. Before, -o held the SDK's
 * command (120 MB of MSBuild's events for a small project), the program's
 * trace was <stem>.<pid>.trace beside it, and the compiler wrote a third. */
TEST(e2e_dotnet_run_records_the_program) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_dotnet_run"), 0);
    char proj[PATH_MAX], file[PATH_MAX + 32];
    snprintf(proj, sizeof proj, "%s/app", r.dir);
    ASSERT_EQ(mkdir(proj, 0700) == 0 || errno == EEXIST, 1);
    static const char csproj[] =
        "<Project Sdk=\"Microsoft.NET.Sdk\"><PropertyGroup><OutputType>Exe</OutputType>"
        "<TargetFramework>net10.0</TargetFramework></PropertyGroup></Project>\n";
    static const char program[] =
        "int n = int.Parse(args[0]);\n"
        "for (int i = 0; i < n; i++)\n"
        "    try { throw new System.InvalidOperationException(\"thrown by the program \" + i); }\n"
        "    catch (System.InvalidOperationException) { }\n"
        "System.Console.WriteLine(\"app done\");\n";
    snprintf(file, sizeof file, "%s/app.csproj", proj);
    ASSERT_EQ(e2e_write_text(file, csproj), 0);
    snprintf(file, sizeof file, "%s/Program.cs", proj);
    ASSERT_EQ(e2e_write_text(file, program), 0);
    const char *args[] = {"run", "--exceptions", "-o", r.trace, "--", "dotnet", "run", "--project", proj, "--", "7", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    if (r.status != 0)
        e2e_show_file("dnprof run -- dotnet run said", r.err);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    int done = text && strstr(text, "app done\n");
    free(text);
    ASSERT(done);
    text = e2e_read_file(r.err, NULL);
    int said = text && strstr(text, "the SDK's own processes are not recorded");
    free(text);
    ASSERT(said);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    int its = t->cmdline && strstr(t->cmdline, "/app") && !strstr(t->cmdline, "dotnet run");
    if (!its)
        fprintf(stderr, "e2e: the trace is of '%s', not the program\n", t->cmdline ? t->cmdline : "");
    dnp_trace_free(t);
    ASSERT(its);
    const char *report[] = {"report", "--exceptions", "--json", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, report), 0);
    text = e2e_read_file(r.out, NULL);
    int seven = text && strstr(text, "\"exceptions_total\":7,") && strstr(text, "\"caught\":7,");
    if (!seven)
        e2e_show_file("report --exceptions --json", r.out);
    free(text);
    ASSERT(seven);

    int others = 0; /* nothing of the SDK's: no other trace beside it */
    DIR *d = opendir(r.dir);
    ASSERT_NE(d, NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len > 6 && !strcmp(de->d_name + len - 6, ".trace") && strcmp(de->d_name, "e2e_dotnet_run.trace"))
            fprintf(stderr, "e2e: another trace: %s\n", de->d_name), others++;
    }
    closedir(d);
    ASSERT_EQ(others, 0);
    return 0;
}

/* One run of `dnprof run --sample -- Scenarios sample shares` ended by sig,
 * sent to the program (to_program) or to dnprof run (which passes it on), 1.5 s
 * into its work: the program still dies by the signal, and the trace is whole
 * (complete, its samples up to the end: at least 80% of the CPU time the
 * program had used when the signal was sent). */
static int ended_by(const char *test, int sig, int to_program) {
    e2e_run r;
    if (e2e_setup(&r, test) != 0)
        return -1;
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    if (!dll || !bin)
        return -1;
    char ready[PATH_MAX + 16], go[PATH_MAX + 16], stat_path[64];
    snprintf(ready, sizeof ready, "%s/ready", r.dir);
    snprintf(go, sizeof go, "%s/ready.go", r.dir);
    const char *argv[] = {bin, "run", "--sample", "-o", r.trace, "--", e2e_dotnet(), dll, "sample", "shares", "60",
                          ready, NULL};
    pid_t run = e2e_spawn((char *const *)argv, NULL, r.dir, r.out, NULL, r.err);
    if (run <= 0)
        return -1;
    char *pidtext = NULL;
    for (int i = 0; i < 600 && !(pidtext = access(ready, F_OK) == 0 ? e2e_read_file(ready, NULL) : NULL); i++)
        usleep(50000);
    long pid = pidtext ? strtol(pidtext, NULL, 10) : 0;
    free(pidtext);
    int ok = pid > 0 && e2e_write_text(go, "") == 0;
    usleep(1500000);
    /* the program's CPU time so far (utime + stime, fields 14 and 15 of /proc/PID/stat, in ticks) */
    snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", pid);
    char *st = ok ? e2e_read_file(stat_path, NULL) : NULL;
    const char *rp = st ? strrchr(st, ')') : NULL;
    unsigned long long ut = 0, stt = 0;
    ok = rp && sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) == 2;
    free(st);
    double cpu_ms = (double)(ut + stt) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
    if (ok)
        kill(to_program ? (pid_t)pid : run, sig);
    int status = -1;
    e2e_wait(run, E2E_TIMEOUT_MS, &status);
    if (!ok || status != 128 + sig) {
        fprintf(stderr, "e2e: program pid %ld, status %d (wanted %d, the signal's)\n", pid, status, 128 + sig);
        e2e_show_file("dnprof run said", r.err);
        return -1;
    }
    dnp_trace *t = e2e_load(r.trace);
    int whole = t && t->status == DNP_TRACE_COMPLETE && e2e_note(t, "the program was ended by ");
    if (t)
        dnp_trace_free(t);
    const char *rep[] = {"report", "--json", r.trace, NULL};
    char *json = whole && e2e_dnprof(&r, rep) == 0 ? e2e_read_file(r.out, NULL) : NULL;
    const char *at = json ? strstr(json, "\"source\":\"SampleNode\",\"totalNs\":") : NULL;
    double sampled_ms = at ? strtod(at + strlen("\"source\":\"SampleNode\",\"totalNs\":"), NULL) / 1e6 : 0;
    free(json);
    fprintf(stderr, "e2e: %s: trace %s, %.0f ms sampled; the program had used %.0f ms of CPU when it was sent\n",
            strsignal(sig), whole ? "complete" : "NOT complete", sampled_ms, cpu_ms);
    return whole && sampled_ms >= 0.8 * cpu_ms ? 0 : -1;
}

/* Ctrl-C (SIGINT), SIGTERM and SIGHUP end a console program by the signal: no
 * Shutdown, no exit handler. The agent writes what it holds first. Before,
 * the trace was cut at its last flush, without the sampler's trees since its
 * last write (half a second at first, a minute after an hour). */
TEST(e2e_ended_by_a_signal) {
    ASSERT_EQ(ended_by("e2e_ended_by_sigint", SIGINT, 1), 0);
    ASSERT_EQ(ended_by("e2e_ended_by_sigterm", SIGTERM, 0), 0);
    ASSERT_EQ(ended_by("e2e_ended_by_sighup", SIGHUP, 1), 0); /* the terminal, the ssh session closed */
    return 0;
}
