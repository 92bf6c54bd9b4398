/* launch.c: running a program with the agent loaded (`run` and `doctor`).
 *
 * Like system(3), dnprof ignores SIGINT and SIGQUIT while the program runs (the
 * terminal sends them to the whole process group, so the program gets them),
 * and passes SIGTERM and SIGHUP on to it. An exec failure comes back through a
 * close-on-exec pipe, so the parent can tell it from the program's own exit. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fdio.h"
#include "session.h"

#define CAPTURE_MAX (4u << 20)

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig) {
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* tmpl with each "%p" replaced by pid and "%%" by "%", or ./dnprof-<pid>.trace made absolute. */
static void trace_path(const char *tmpl, pid_t pid, char *out, size_t len) {
    char def[64];
    if (!tmpl) {
        snprintf(def, sizeof def, "dnprof-%ld.trace", (long)pid);
        if (cli_abs_path(def, out, len) != 0)
            snprintf(out, len, "%s", def);
        return;
    }
    size_t used = 0;
    for (const char *p = tmpl; *p && used + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            int n = snprintf(out + used, len - used, "%ld", (long)pid);
            used = n < 0 || (size_t)n >= len - used ? len - 1 : used + (size_t)n;
            p++;
        } else if (p[0] == '%' && p[1] == '%') { /* as the agent reads it */
            out[used++] = *p++;
        } else {
            out[used++] = *p;
        }
    }
    out[used] = 0;
}

/* In the child, between fork and exec. */
static void child_environment(const cli_launch *l) {
    char buf[PATH_MAX];
    pid_t self = getpid();
    setenv(DNP_ENV_ENABLE, "1", 1);
    setenv(DNP_ENV_PROFILER, DNP_CLSID_TEXT, 1);
    setenv(DNP_ENV_PROFILER_PATH, l->agent, 1);
    /* These win over CORECLR_PROFILER_PATH (RUNTIME-FACTS.md). */
    unsetenv("CORECLR_PROFILER_PATH_64");
    unsetenv("CORECLR_PROFILER_PATH_32");
    unsetenv("CORECLR_PROFILER_PATH_ARM64");
    unsetenv("CORECLR_PROFILER_PATH_ARM32");
    cli_setting_set(DNP_SET_EVENTS, l->events);
    if (l->output) {
        cli_setting_set(DNP_SET_OUTPUT, l->output);
        if (strstr(l->output, "%p")) { /* the parent could not remove it */
            trace_path(l->output, self, buf, sizeof buf);
            unlink(buf);
        }
    } else {
        trace_path(NULL, self, buf, sizeof buf);
        cli_setting_set(DNP_SET_OUTPUT, buf);
    }
    snprintf(buf, sizeof buf, "%ld", (long)self);
    cli_setting_set(DNP_SET_ROOT_PID, buf);
    if (l->sdk_aside)
        cli_setting_set(DNP_SET_SDK_ASIDE, "1");
    cli_setting_set(DNP_SET_SESSION, l->session);
    if (l->flush_ms)
        cli_setting_set(DNP_SET_FLUSH_MS, l->flush_ms);
    if (l->debug_strings)
        setenv("PAL_OUTPUTDEBUGSTRING", "1", 1);
}

/* Echoes what the child writes to fd onto our stderr, keeps a copy, and returns
 * once the pipe is closed or the child has exited (then drains the pipe). */
static void pump_stderr(cli_launch *l, int fd) {
    size_t cap = 0, drained = 0;
    int exited = 0;
    char buf[8192];
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, exited ? 0 : 200);
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0)
                break;
            if (exited && (drained += (size_t)n) > CAPTURE_MAX) /* a grandchild writing on */
                break;
            (void)dnp_write_all(STDERR_FILENO, buf, (size_t)n);
            if (l->ncaptured + (size_t)n < CAPTURE_MAX) {
                if (l->ncaptured + (size_t)n + 1 > cap) {
                    size_t want = cap ? cap * 2 : 65536;
                    while (want < l->ncaptured + (size_t)n + 1)
                        want *= 2;
                    char *grown = realloc(l->captured, want);
                    if (!grown)
                        continue;
                    l->captured = grown;
                    cap = want;
                }
                memcpy(l->captured + l->ncaptured, buf, (size_t)n);
                l->ncaptured += (size_t)n;
                l->captured[l->ncaptured] = 0;
            }
            continue;
        }
        if (exited) /* nothing left to drain: a grandchild may keep the pipe open */
            break;
        /* Has the child exited? Keep it a zombie so waitpid below still sees it. */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)l->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == l->pid)
            exited = 1;
    }
}

int cli_launch_run(cli_launch *l, char *const argv[]) {
    l->pid = 0;
    l->trace[0] = 0;
    l->exec_errno = 0;
    l->status = 0;
    l->captured = NULL;
    l->ncaptured = 0;

    int report[2], cap[2] = {-1, -1};
    if (pipe2(report, O_CLOEXEC) != 0)
        return error("cannot create a pipe: %s", strerror(errno));
    if (l->capture_stderr && pipe2(cap, O_CLOEXEC) != 0) {
        close(report[0]);
        close(report[1]);
        return error("cannot create a pipe: %s", strerror(errno));
    }

    struct sigaction ign, old_int, old_quit, old_term, old_hup;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigset_t block, old_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old_mask);
    fflush(stdout);
    fflush(stderr);

    pid_t pid = fork();
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        if (cap[1] >= 0)
            dup2(cap[1], STDERR_FILENO); /* dup2 clears close-on-exec */
        child_environment(l);
        execvp(argv[0], argv);
        int e = errno;
        (void)dnp_write_all(report[1], &e, sizeof e);
        _exit(CLI_EXIT_NOEXEC);
    }
    int fork_errno = errno;
    close(report[1]);
    if (cap[1] >= 0)
        close(cap[1]);

    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        close(report[0]);
        if (cap[0] >= 0)
            close(cap[0]);
        return error("cannot start '%s': fork: %s", argv[0], strerror(fork_errno));
    }

    l->pid = pid;
    trace_path(l->output, pid, l->trace, sizeof l->trace);
    child_pid = pid;
    struct sigaction fwd;
    memset(&fwd, 0, sizeof fwd);
    fwd.sa_handler = forward_signal;
    fwd.sa_flags = SA_RESTART;
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);

    int e = 0;
    ssize_t n;
    do
        n = read(report[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof e)
        l->exec_errno = e ? e : ENOEXEC;

    if (cap[0] >= 0) {
        if (!l->exec_errno)
            pump_stderr(l, cap[0]);
        close(cap[0]);
    }

    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    l->status = status;

    child_pid = 0;
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return 0;
}

int cli_exit_code(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

/* A runtime DWORD setting: hex, as CLRConfig reads it. */
static int is_zero_setting(const char *v) {
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long x = strtoul(v, &end, 16);
    return *end == 0 && x == 0;
}

int cli_disabling_vars(const char *names[CLI_DISABLING_MAX]) {
    /* CLRConfig reads DOTNET_<name>, then COMPlus_<name>. */
    static const char *const vars[][2] = {
        {"DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics"},
        {"DOTNET_EnableDiagnostics_Profiler", "COMPlus_EnableDiagnostics_Profiler"}};
    int n = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *name = getenv(vars[i][0]) ? vars[i][0] : vars[i][1];
        if (is_zero_setting(getenv(name)))
            names[n++] = name;
    }
    return n;
}
