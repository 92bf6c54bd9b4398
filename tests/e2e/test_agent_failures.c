/* test_agent_failures.c: when the agent cannot work it says why once on stderr
 * and steps aside; the program's output and exit code stay what they were. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "e2e.h"
#include "session.h"
#include "test.h"

/* Runs `exitcode` with the agent's variables plus extra ("NAME=VALUE"). */
static int run_exitcode4(e2e_run *r, const char *extra1, const char *extra2, const char *extra3,
                         const char *extra4) {
    const char *agent = e2e_env("DNPROF_AGENT");
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!agent || !dll)
        return -1;
    static char profiler_path[PATH_MAX + 32];
    snprintf(profiler_path, sizeof profiler_path, DNP_ENV_PROFILER_PATH "=%s", agent);
    const char *env[] = {DNP_ENV_ENABLE "=1", DNP_ENV_PROFILER "=" DNP_CLSID_TEXT, profiler_path,
                         DNP_ENV_ROOT_PID, DNP_ENV_SESSION, extra1, extra2, extra3, extra4, NULL};
    const char *argv[] = {e2e_dotnet(), dll, "exitcode", NULL};
    return e2e_exec(r, (char *const *)argv, env);
}

static int run_exitcode(e2e_run *r, const char *extra1, const char *extra2) {
    return run_exitcode4(r, extra1, extra2, NULL, NULL);
}

/* The program ran as without dnprof: "bye" and exit code 42. */
static int program_unchanged(const e2e_run *r) {
    char *out = e2e_read_file(r->out, NULL);
    int ok = out && strcmp(out, "bye\n") == 0 && r->status == 42;
    if (!ok) {
        fprintf(stderr, "e2e: the program changed: exit %d\n", r->status);
        e2e_show_file("stdout", r->out);
        e2e_show_file("stderr", r->err);
    }
    free(out);
    return ok;
}

/* stderr holds exactly one line from dnprof, and it contains want. */
static int one_dnprof_line(const e2e_run *r, const char *want) {
    char *err = e2e_read_file(r->err, NULL);
    if (!err)
        return 0;
    int lines = 0, found = 0;
    for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "dnprof: ", 8) != 0)
            continue;
        lines++;
        found |= strstr(line, want) != NULL;
    }
    free(err);
    if (lines != 1 || !found) {
        fprintf(stderr, "e2e: want one 'dnprof:' line containing '%s', got %d lines:\n", want, lines);
        e2e_show_file("stderr", r->err);
    }
    return lines == 1 && found;
}

TEST(e2e_agent_bad_events_word) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_bad_events_word"), 0);
    char output[PATH_MAX + 32];
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    ASSERT_EQ(run_exitcode(&r, DNP_ENV_EVENTS "=classes,clases", output), 0);
    ASSERT(program_unchanged(&r));
    ASSERT(one_dnprof_line(&r, "'clases'"));
    /* The same with a good word records: the agent did load both times. */
    ASSERT_EQ(run_exitcode(&r, DNP_ENV_EVENTS "=classes", output), 0);
    ASSERT(program_unchanged(&r));
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);
    return 0;
}

TEST(e2e_agent_bad_output_path) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_bad_output_path"), 0);
    char output[PATH_MAX + 64];
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s/no-such-dir/x.trace", r.dir);
    ASSERT_EQ(run_exitcode(&r, output, DNP_ENV_EVENTS), 0);
    ASSERT(program_unchanged(&r));
    ASSERT(one_dnprof_line(&r, "no-such-dir/x.trace"));
    return 0;
}

/* A disk that fills up while the program runs: RLIMIT_FSIZE makes write(2) fail
 * with EFBIG once the trace reaches the limit (SIGXFSZ ignored, as a program
 * that handles a full disk would see ENOSPC). The runtime's own W^X double
 * mapping goes through a file too, so it is turned off for this run. */
TEST(e2e_agent_disk_full) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_disk_full"), 0);
    char output[PATH_MAX + 32];
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    struct rlimit old, small = {64 * 1024, 0};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    /* W^X double-maps code through a file that the limit would refuse too; a
     * short flush period writes whole chunks before the disk fills. */
    int rc = run_exitcode4(&r, output, DNP_ENV_EVENTS "=all", "DOTNET_EnableWriteXorExecute=0",
                           DNP_ENV_FLUSH_MS "=2");
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    ASSERT_EQ(rc, 0);
    ASSERT(program_unchanged(&r));
    ASSERT(one_dnprof_line(&r, "cannot write trace"));
    /* What was written before the disk filled is still readable. */
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    ASSERT_NE(t->status, DNP_TRACE_COMPLETE);
    dnp_trace_free(t);
    return 0;
}
