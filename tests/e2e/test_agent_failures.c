/* test_agent_failures.c: when the agent cannot work it says why once and steps
 * aside; the program's output and exit code stay what they were. Its messages go
 * to stderr without a front end, to `dnprof run` with one, never to the
 * program's stderr then. Every file it writes is its own: never written through
 * a symbolic link, created 0600. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* ---- bad values are said, not silently replaced ---- */

TEST(e2e_agent_bad_flush_ms) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_bad_flush_ms"), 0);
    char output[PATH_MAX + 32];
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    const char *bad[] = {DNP_ENV_FLUSH_MS "=0", DNP_ENV_FLUSH_MS "=-5", DNP_ENV_FLUSH_MS "=abc",
                         DNP_ENV_FLUSH_MS "=20ms"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ASSERT_EQ(run_exitcode(&r, bad[i], output), 0);
        ASSERT(program_unchanged(&r));
        ASSERT(one_dnprof_line(&r, DNP_ENV_FLUSH_MS "="));
        dnp_trace *t = e2e_load(r.trace); /* it records all the same, with the default */
        ASSERT_NE(t, NULL);
        dnp_trace_free(t);
    }
    /* A good value is taken without a word. */
    ASSERT_EQ(run_exitcode(&r, DNP_ENV_FLUSH_MS "=20", output), 0);
    ASSERT(program_unchanged(&r));
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    ASSERT_EQ(strstr(err, "dnprof:"), NULL);
    free(err);
    return 0;
}

/* ---- trace files: never through a symbolic link, 0600 ---- */

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* The file the planted link pointed to is as it was. */
static int victim_intact(const char *path) {
    char *s = e2e_read_file(path, NULL);
    int ok = s && strcmp(s, "precious\n") == 0;
    if (!ok)
        fprintf(stderr, "e2e: '%s', the symbolic link's target, was written through the link\n", path);
    free(s);
    return ok;
}

/* path is a regular file (no longer the link) of mode 0600. */
static int private_file(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        fprintf(stderr, "e2e: no trace at '%s': %s\n", path, strerror(errno));
        return 0;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0600) {
        fprintf(stderr, "e2e: '%s' is %s with mode %04o, want a regular file 0600\n", path,
                S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISREG(st.st_mode) ? "a file" : "not a file",
                (unsigned)(st.st_mode & 07777));
        return 0;
    }
    return 1;
}

/* r->trace becomes a symbolic link to <dir>/victim.txt; the victim's path in victim. */
static int plant_link(const e2e_run *r, char *victim, size_t cap) {
    snprintf(victim, cap, "%s/victim.txt", r->dir);
    if (write_text(victim, "precious\n") != 0 || symlink(victim, r->trace) != 0) {
        fprintf(stderr, "e2e: cannot plant the link '%s': %s\n", r->trace, strerror(errno));
        return -1;
    }
    return 0;
}

/* DNPROF_OUTPUT names a link: the trace replaces the link, the target is left
 * alone. The umask is 0 meanwhile: the trace is 0600 all the same, never wider. */
TEST(e2e_agent_output_symlink) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_output_symlink"), 0);
    char victim[PATH_MAX], output[PATH_MAX + 32];
    ASSERT_EQ(plant_link(&r, victim, sizeof victim), 0);
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    mode_t old = umask(0);
    int rc = run_exitcode(&r, output, NULL);
    umask(old);
    ASSERT_EQ(rc, 0);
    ASSERT(program_unchanged(&r));
    ASSERT(victim_intact(victim));
    ASSERT(private_file(r.trace));
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);
    return 0;
}

/* The heap snapshot at exit (DNPROF_HEAP_OUTPUT) onto a link: the snapshot
 * replaces the link as a trace does, 0600, and the target is left alone. */
TEST(e2e_agent_heap_output_symlink) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_heap_output_symlink"), 0);
    char victim[PATH_MAX], snap[PATH_MAX], output[PATH_MAX + 32], heap_out[PATH_MAX + 32];
    snprintf(victim, sizeof victim, "%s/victim.txt", r.dir);
    snprintf(snap, sizeof snap, "%s/exit.dnheap", r.dir);
    unlink(snap);
    ASSERT_EQ(write_text(victim, "precious\n"), 0);
    ASSERT_EQ(symlink(victim, snap), 0);
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    snprintf(heap_out, sizeof heap_out, DNP_ENV_HEAP_OUTPUT "=%s", snap);
    mode_t old = umask(0);
    int rc = run_exitcode4(&r, output, DNP_ENV_HEAP_AT "=exit", heap_out, NULL);
    umask(old);
    ASSERT_EQ(rc, 0);
    ASSERT(program_unchanged(&r));
    ASSERT(victim_intact(victim));
    ASSERT(private_file(snap));
    char *text = e2e_read_file(snap, NULL);
    ASSERT_NE(text, NULL);
    ASSERT_NE(strcmp(text, "precious\n"), 0); /* a snapshot, not the target's text */
    free(text);
    return 0;
}

/* `dnprof run -o LINK`: the same. */
TEST(e2e_run_output_symlink) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_run_output_symlink"), 0);
    char victim[PATH_MAX];
    ASSERT_EQ(plant_link(&r, victim, sizeof victim), 0);
    mode_t old = umask(0);
    int rc = e2e_run_scenario(&r, "exitcode", NULL);
    umask(old);
    ASSERT_EQ(rc, 0);
    ASSERT(program_unchanged(&r));
    ASSERT(victim_intact(victim));
    ASSERT(private_file(r.trace));
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);
    return 0;
}

/* Reads the program's stdout until it says "ready". */
static int wait_ready_line(int fd, int timeout_ms) {
    char buf[4096];
    size_t n = 0;
    for (int waited = 0; waited < timeout_ms;) {
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, 100);
        if (rc <= 0) {
            waited += 100;
            continue;
        }
        ssize_t got = read(fd, buf + n, sizeof buf - 1 - n);
        if (got <= 0)
            return -1;
        n += (size_t)got;
        buf[n] = 0;
        if (strstr(buf, "ready\n"))
            return 0;
        if (n == sizeof buf - 1)
            n = 0;
    }
    return -1;
}

/* `dnprof attach PID -o LINK`: the same, written by an agent attached late. */
TEST(e2e_attach_output_symlink) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_output_symlink"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    ASSERT_NE(bin, NULL);
    char victim[PATH_MAX];
    ASSERT_EQ(plant_link(&r, victim, sizeof victim), 0);
    const char *plain[] = {DNP_ENV_ENABLE, DNP_ENV_PROFILER, DNP_ENV_PROFILER_PATH, DNP_ENV_SESSION, NULL};
    const char *argv[] = {e2e_dotnet(), dll, "spin", NULL};
    char prog_err[PATH_MAX + 16];
    snprintf(prog_err, sizeof prog_err, "%s/spin.err", r.dir);
    int out_fd = -1;
    pid_t pid = e2e_spawn((char *const *)argv, plain, r.dir, NULL, &out_fd, prog_err);
    ASSERT_GT(pid, 0);
    int ready = wait_ready_line(out_fd, 60000);
    int rc = -1;
    if (ready == 0) {
        char pidtext[32];
        snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
        const char *attach[] = {bin, "attach", pidtext, "-o", r.trace, "--duration", "2s", NULL};
        mode_t old = umask(0);
        rc = e2e_exec(&r, (char *const *)attach, NULL);
        umask(old);
    }
    kill(pid, SIGKILL);
    int status = 0;
    e2e_wait(pid, 10000, &status);
    close(out_fd);
    ASSERT_EQ(ready, 0);
    ASSERT_EQ(rc, 0);
    if (r.status != 0)
        e2e_show_file("dnprof attach stderr", r.err);
    ASSERT_STATUS(&r, 0);
    ASSERT(victim_intact(victim));
    ASSERT(private_file(r.trace));
    dnp_trace *t = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_load(r.trace, &t, err, sizeof err), 0);
    size_t attached = e2e_count(t, DNP_EV_InitializeForAttach);
    dnp_trace_free(t);
    ASSERT_EQ(attached, (size_t)1);
    return 0;
}

/* ---- a full disk under `dnprof run`: the program's stderr stays its own ---- */

/* The disk of e2e_agent_disk_full, under `dnprof run` this time, with the
 * program's stderr kept apart (the shell redirects it to a file before it
 * becomes the program): it stays empty, `dnprof run` says what happened and
 * where, and nothing says the process was killed. */
TEST(e2e_run_disk_full_messages) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_run_disk_full_messages"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    ASSERT_NE(bin, NULL);
    char prog_err[PATH_MAX + 16];
    snprintf(prog_err, sizeof prog_err, "%s/program.err", r.dir);
    const char *argv[] = {bin, "run", "-o", r.trace, "--events", "all", "--flush-ms", "2", "--", "/bin/sh",
                          "-c", "exec \"$0\" \"$1\" exitcode 2>\"$2\"", e2e_dotnet(), dll, prog_err, NULL};
    const char *env[] = {"DOTNET_EnableWriteXorExecute=0", DNP_ENV_STDERR, NULL};
    struct rlimit old, small = {64 * 1024, 0};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    int rc = e2e_exec(&r, (char *const *)argv, env);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    ASSERT_EQ(rc, 0);
    ASSERT(program_unchanged(&r));
    char *perr = e2e_read_file(prog_err, NULL);
    ASSERT_NE(perr, NULL);
    if (perr[0]) {
        fprintf(stderr, "e2e: the program's own stderr got what the agent said:\n");
        e2e_show_file("program stderr", prog_err);
    }
    ASSERT_STREQ(perr, "");
    free(perr);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    int said = strstr(err, "cannot write trace") && strstr(err, "bytes") && strstr(err, "s into the recording");
    int killed = strstr(err, "killed") != NULL;
    if (!said || killed)
        e2e_show_file("dnprof run stderr", r.err);
    free(err);
    ASSERT(said);
    ASSERT(!killed);
    return 0;
}

/* Lines of the file that contain text. */
static int count_lines(const char *path, const char *text) {
    char *s = e2e_read_file(path, NULL);
    int n = 0;
    for (char *line = s ? strtok(s, "\n") : NULL; line; line = strtok(NULL, "\n"))
        n += strstr(line, text) != NULL;
    free(s);
    return n;
}

/* Under `dnprof run` the agent's messages reach the person through dnprof run,
 * not through the program's stderr; DNPROF_STDERR=1 puts them back there (and
 * only there: each is said once). */
TEST(e2e_run_messages_to_front_end) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_run_messages_to_front_end"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT_NE(dll, NULL);
    ASSERT_NE(bin, NULL);
    char prog_err[PATH_MAX + 16];
    snprintf(prog_err, sizeof prog_err, "%s/program.err", r.dir);
    const char *argv[] = {bin, "run", "-o", r.trace, "--", "/bin/sh", "-c", "exec \"$0\" \"$1\" exitcode 2>\"$2\"",
                          e2e_dotnet(), dll, prog_err, NULL};
    const char *said = DNP_ENV_FLUSH_MS "='abc'";
    const char *front[] = {DNP_ENV_FLUSH_MS "=abc", DNP_ENV_STDERR, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, front), 0);
    ASSERT(program_unchanged(&r));
    if (count_lines(prog_err, "dnprof") != 0 || count_lines(r.err, said) != 1) {
        e2e_show_file("program stderr", prog_err);
        e2e_show_file("dnprof run stderr", r.err);
    }
    ASSERT_EQ(count_lines(prog_err, "dnprof"), 0);
    ASSERT_EQ(count_lines(r.err, said), 1);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    dnp_trace_free(t);

    const char *asked[] = {DNP_ENV_FLUSH_MS "=abc", DNP_ENV_STDERR "=1", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, asked), 0);
    ASSERT(program_unchanged(&r));
    ASSERT_EQ(count_lines(prog_err, said), 1);
    ASSERT_EQ(count_lines(r.err, said), 0);
    return 0;
}

/* ---- settings the table does not know ---- */

/* A DNPROF_ variable that is no setting (a typo) is said once, by name, and
 * the program runs as it would (settings.def). */
TEST(e2e_agent_unknown_setting) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_agent_unknown_setting"), 0);
    char output[PATH_MAX + 32];
    snprintf(output, sizeof output, DNP_ENV_OUTPUT "=%s", r.trace);
    const char *said = "unknown setting DNPROF_SAMPEL ignored; dnprof env --list lists them";
    ASSERT_EQ(run_exitcode(&r, "DNPROF_SAMPEL=cpu", output), 0);
    ASSERT(program_unchanged(&r));
    ASSERT(one_dnprof_line(&r, said));
    dnp_trace *t = e2e_load(r.trace); /* it records all the same */
    ASSERT_NE(t, NULL);
    ASSERT_EQ(e2e_count(t, DNP_EV_SampleConfig), 0); /* and did not sample */
    dnp_trace_free(t);

    /* Under dnprof run: said once, through dnprof run. */
    const char *bin = e2e_env("DNPROF_BIN");
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(bin, NULL);
    ASSERT_NE(dll, NULL);
    const char *argv[] = {bin, "run", "-o", r.trace, "--", e2e_dotnet(), dll, "exitcode", NULL};
    const char *env[] = {"DNPROF_SAMPEL=cpu", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, env), 0);
    ASSERT(program_unchanged(&r));
    if (count_lines(r.err, said) != 1)
        e2e_show_file("dnprof run stderr", r.err);
    ASSERT_EQ(count_lines(r.err, said), 1);

    /* A known setting is taken without a word. */
    ASSERT_EQ(run_exitcode(&r, DNP_ENV_SAMPLE "=0", output), 0);
    ASSERT(program_unchanged(&r));
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    ASSERT_EQ(strstr(err, "dnprof:"), NULL);
    free(err);
    return 0;
}

/* dnprof env --list: every setting of the table, with its bounds and default. */
TEST(e2e_env_list) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_env_list"), 0);
    const char *args[] = {"env", "--list", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    int missing = 0;
    for (int i = 0; i < DNP_SET_COUNT; i++) {
        char head[128];
        snprintf(head, sizeof head, "%s (", dnp_settings[i].name);
        if (!strstr(out, head) || !strstr(out, dnp_settings[i].help)) {
            fprintf(stderr, "e2e: dnprof env --list lacks %s\n", dnp_settings[i].name);
            missing++;
        }
    }
    int rate = strstr(out, "DNPROF_SAMPLE_RATE (unsigned, 1-10000 Hz; default 100; read by agent)") != NULL;
    if (missing || !rate)
        e2e_show_file("dnprof env --list", r.out);
    free(out);
    ASSERT_EQ(missing, 0);
    ASSERT(rate);
    return 0;
}
