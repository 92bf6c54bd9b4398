/* test_attach.c: `dnprof ps`, `attach` and `detach` against a program that was
 * started without dnprof (the "attach" scenario, which works when told to on
 * its stdin): events from after the attach only, five attach/detach cycles on
 * one process, the program's output and exit code untouched, and each error a
 * person can meet, said clearly. Every test attaches for real at least once, so
 * each fails when the agent cannot load. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach_blob.h"
#include "e2e.h"
#include "session.h"
#include "test.h"

#define CYCLES 5

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- the scenario process, driven through its stdin ---- */

typedef struct scen {
    pid_t pid;
    int in, out;
    char text[16384]; /* everything it printed */
    size_t len;
} scen;

/* Starts `dotnet Scenarios.dll attach` with env ("NAME=VALUE", NULL-ended). */
static int scen_start(scen *s, const e2e_run *r, const char *const env[]) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dll)
        return -1;
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return -1;
    char err_path[PATH_MAX];
    snprintf(err_path, sizeof err_path, "%s/scenario.err", r->dir);
    memset(s, 0, sizeof *s);
    fflush(stdout);
    fflush(stderr);
    s->pid = fork();
    if (s->pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        int efd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (efd >= 0)
            dup2(efd, 2);
        /* Started without dnprof, unless env says otherwise. */
        unsetenv("CORECLR_ENABLE_PROFILING");
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        const char *argv[] = {e2e_dotnet(), dll, "attach", NULL};
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->in = in[1];
    s->out = out[0];
    return s->pid > 0 ? 0 : -1;
}

/* Reads what the scenario prints until a line equal to want, within timeout_ms. */
static int scen_expect(scen *s, const char *want, int timeout_ms) {
    char needle[64];
    snprintf(needle, sizeof needle, "%s\n", want);
    long deadline = now_ms() + timeout_ms;
    size_t from = 0;
    for (;;) {
        s->text[s->len] = 0;
        char *hit = strstr(s->text + from, needle);
        if (hit && (hit == s->text || hit[-1] == '\n'))
            return 0;
        long left = deadline - now_ms();
        if (left <= 0) {
            fprintf(stderr, "e2e: the scenario did not say '%s' within %d ms; it said:\n%s\n", want,
                    timeout_ms, s->text);
            return -1;
        }
        struct pollfd p = {s->out, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        ssize_t n = read(s->out, s->text + s->len, sizeof s->text - 1 - s->len);
        if (n <= 0) {
            fprintf(stderr, "e2e: the scenario ended before saying '%s'; it said:\n%s\n", want, s->text);
            return -1;
        }
        s->len += (size_t)n;
    }
}

static int scen_say(scen *s, const char *line) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    return write(s->in, buf, (size_t)n) == n ? 0 : -1;
}

/* Tells it to quit; its exit code, or -1. */
static int scen_quit(scen *s) {
    scen_say(s, "quit");
    int rc = scen_expect(s, "bye", 20000);
    close(s->in);
    int status = 0;
    e2e_wait(s->pid, 20000, &status);
    close(s->out);
    return rc == 0 ? status : -1;
}

static void scen_kill(scen *s) {
    e2e_kill(s->pid);
    s->pid = 0;
}

/* ---- dnprof attach in the background ---- */

typedef struct attaching {
    pid_t pid;
    char out[PATH_MAX], err[PATH_MAX];
} attaching;

/* Whether the file holds text (read anew each time; no file: no). */
static int file_has(const char *path, const char *text) {
    if (access(path, R_OK) != 0)
        return 0;
    char *s = e2e_read_file(path, NULL);
    int has = s && strstr(s, text);
    free(s);
    return has;
}

/* Starts `dnprof attach PID -o trace [extra...]` and waits until it says it is
 * recording. */
static int attach_start(attaching *a, const e2e_run *r, pid_t pid, const char *trace, int n,
                        const char *const extra[]) {
    const char *bin = e2e_env("DNPROF_BIN");
    if (!bin)
        return -1;
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *argv[16] = {bin, "attach", pidtext, "-o", trace};
    int k = 5;
    for (int i = 0; i < n && k < 15; i++)
        argv[k++] = extra[i];
    argv[k] = NULL;
    snprintf(a->out, sizeof a->out, "%s.attach.out", trace);
    snprintf(a->err, sizeof a->err, "%s.attach.err", trace);
    a->pid = e2e_spawn((char *const *)argv, NULL, r->dir, a->out, NULL, a->err);
    if (a->pid <= 0)
        return -1;
    for (long deadline = now_ms() + 60000; now_ms() < deadline; sleep_ms(20)) {
        if (file_has(a->err, "recording"))
            return 0;
        if (waitpid(a->pid, NULL, WNOHANG) == a->pid) {
            fprintf(stderr, "e2e: dnprof attach ended before recording\n");
            e2e_show_file("dnprof attach stderr", a->err);
            a->pid = 0;
            return -1;
        }
    }
    fprintf(stderr, "e2e: dnprof attach did not start recording within 60 s\n");
    e2e_show_file("dnprof attach stderr", a->err);
    return -1;
}

/* ---- what a trace of round `round` must hold ---- */

static void nested(char *out, size_t cap, const char *outer, const char *inner, int depth) {
    size_t o = 0;
    for (int i = 0; i < depth; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s<", outer);
    o += (size_t)snprintf(out + o, cap - o, "%s", inner);
    for (int i = 0; i < depth; i++)
        o += (size_t)snprintf(out + o, cap - o, ">");
}

static long find_prefix(const dnp_trace *t, int kind, unsigned field, const char *prefix) {
    for (size_t i = 0; i < t->nevents; i++) {
        if (t->events[i].kind != kind)
            continue;
        const char *name = e2e_field_name(t, &t->events[i], field);
        if (name && strncmp(name, prefix, strlen(prefix)) == 0)
            return (long)i;
    }
    return -1;
}

static int check_round_trace(const char *path, int round) {
    dnp_trace *t = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    if (t->status != DNP_TRACE_COMPLETE)
        fprintf(stderr, "e2e: %s: %s\n", path, t->status_text);
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    ASSERT(t->attached);
    ASSERT_GE(t->nevents, E2E_MIN_EVENTS);
    ASSERT_EQ(e2e_count(t, DNP_EV_InitializeForAttach), 1);
    ASSERT_EQ(e2e_count(t, DNP_EV_Initialize), 0);
    ASSERT_EQ(e2e_count(t, DNP_EV_ProfilerAttachComplete), 1);
    ASSERT_EQ(t->events[t->nevents - 1].kind, DNP_EV_ProfilerDetachSucceeded);

    /* Catch-up: what existed before is there, named. */
    ASSERT_GE(e2e_count(t, DNP_EV_ExistingAppDomain), 1);
    ASSERT_GE(e2e_count(t, DNP_EV_ExistingThread), 1);
    ASSERT_GE(e2e_expect(t, DNP_EV_ExistingAssembly, "Scenarios", "Scen"), 0);
    int scenarios_module = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const char *m = t->events[i].kind == DNP_EV_ExistingModule ? e2e_field_name(t, &t->events[i], 0) : NULL;
        size_t n = m ? strlen(m) : 0;
        scenarios_module |= n > 14 && strcmp(m + n - 14, "/Scenarios.dll") == 0;
    }
    ASSERT(scenarios_module);

    /* The round's own work: a class, a JIT compilation, an exception, a GC. */
    char name[1024], jit[1200];
    nested(name, sizeof name, "Scenarios.AttachBox", "Scenarios.AttachRound", round + 1);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, name, "AttachBox"), 0);
    nested(name, sizeof name, "Scenarios.AttachVal", "System.Int32", round + 1);
    snprintf(jit, sizeof jit, "Scenarios.AttachWork::Compute<%s>", name);
    ASSERT_GE(e2e_expect(t, DNP_EV_JITCompilationFinished, jit, "Compute"), 0);
    ASSERT_GE(find_prefix(t, DNP_EV_ExceptionThrown, 1, "Scenarios.AttachRoundException"), 0);
    ASSERT_GE(e2e_count(t, DNP_EV_GarbageCollectionStarted), 1);
    /* Not what happened before the attach: the previous round's class. */
    if (round > 0) {
        nested(name, sizeof name, "Scenarios.AttachBox", "Scenarios.AttachRound", round);
        ASSERT_LT(e2e_find(t, DNP_EV_ClassLoadFinished, name, 0), 0);
    }
    dnp_trace_free(t);
    return 0;
}

/* No code and no thread of the agent left in the process. */
static int agent_gone(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    ASSERT(!file_has(path, "libdnprof.so"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "cat /proc/%d/task/*/comm 2>/dev/null | grep -c dnprof", (int)pid);
    FILE *f = popen(cmd, "r");
    ASSERT_NE(f, NULL);
    int n = -1;
    ASSERT_EQ(fscanf(f, "%d", &n), 1);
    pclose(f);
    ASSERT_EQ(n, 0);
    return 0;
}

static int run_dnprof(e2e_run *r, const char *a0, const char *a1, const char *a2, const char *a3) {
    const char *args[] = {a0, a1, a2, a3, NULL};
    return e2e_dnprof(r, args);
}

static int err_has(const e2e_run *r, const char *text) {
    if (file_has(r->err, text))
        return 1;
    fprintf(stderr, "e2e: expected '%s' in what dnprof said:\n", text);
    e2e_show_file("stderr", r->err);
    return 0;
}

/* Five attach/detach cycles on one process, stopped each way there is:
 * dnprof detach, --duration, Ctrl-C. */
TEST(e2e_attach_cycles) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_cycles"), 0);
    scen s;
    ASSERT_EQ(scen_start(&s, &r, NULL), 0);
    int ok = scen_expect(&s, "ready", 60000) == 0;
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)s.pid);
    for (int round = 0; ok && round < CYCLES; round++) {
        char trace[PATH_MAX], work[32], done[32];
        snprintf(trace, sizeof trace, "%s/round%d.trace", r.dir, round);
        snprintf(work, sizeof work, "work %d", round);
        snprintf(done, sizeof done, "done %d", round);
        int how = round % 3; /* 0: dnprof detach, 1: --duration, 2: Ctrl-C */
        const char *dur[] = {"--duration", "4s"};
        attaching a;
        ok = attach_start(&a, &r, s.pid, trace, how == 1 ? 2 : 0, dur) == 0;
        ok = ok && scen_say(&s, work) == 0 && scen_expect(&s, done, 30000) == 0;
        if (ok && how == 0) {
            ok = run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 0;
            if (!ok)
                e2e_show_file("dnprof detach stderr", r.err);
        } else if (ok && how == 2) {
            kill(a.pid, SIGINT);
        }
        int status = -1;
        if (a.pid > 0)
            e2e_wait(a.pid, 60000, &status);
        if (status != 0) {
            fprintf(stderr, "e2e: round %d: dnprof attach exited with %d\n", round, status);
            e2e_show_file("dnprof attach stderr", a.err);
            ok = 0;
        }
        ok = ok && file_has(a.err, "complete");
        if (ok && check_round_trace(trace, round) != 0) {
            fprintf(stderr, "e2e: round %d's trace %s is wrong\n", round, trace);
            ok = 0;
        }
        if (ok && agent_gone(s.pid) != 0) {
            fprintf(stderr, "e2e: round %d: the agent is still in the process after the detach\n", round);
            ok = 0;
        }
    }
    int code = ok ? scen_quit(&s) : -1;
    scen_kill(&s);
    ASSERT(ok);
    /* The program's own output and exit code, as without dnprof. */
    char want[256];
    size_t w = (size_t)snprintf(want, sizeof want, "ready\n");
    for (int round = 0; round < CYCLES; round++)
        w += (size_t)snprintf(want + w, sizeof want - w, "done %d\n", round);
    snprintf(want + w, sizeof want - w, "bye\n");
    ASSERT_STREQ(s.text, want);
    ASSERT_EQ(code, 3);
    return 0;
}

/* ps lists the process, and that dnprof is attached to it. */
TEST(e2e_attach_ps) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_ps"), 0);
    scen s;
    ASSERT_EQ(scen_start(&s, &r, NULL), 0);
    int ok = scen_expect(&s, "ready", 60000) == 0;
    char pidtext[32], row[64], trace[PATH_MAX];
    snprintf(pidtext, sizeof pidtext, "%d", (int)s.pid);
    snprintf(row, sizeof row, "%-8d %-24s ", (int)s.pid, "Scenarios");
    snprintf(trace, sizeof trace, "%s/ps.trace", r.dir);
    ok = ok && run_dnprof(&r, "ps", NULL, NULL, NULL) == 0 && r.status == 0 && file_has(r.out, row) &&
         file_has(r.out, "Scenarios.dll attach");
    if (!ok)
        e2e_show_file("dnprof ps", r.out);
    attaching a = {0};
    ok = ok && attach_start(&a, &r, s.pid, trace, 0, NULL) == 0;
    snprintf(row, sizeof row, "%-8d %-24s %-8s ", (int)s.pid, "Scenarios", "attached");
    ok = ok && run_dnprof(&r, "ps", NULL, NULL, NULL) == 0 && file_has(r.out, row);
    if (!ok)
        e2e_show_file("dnprof ps while attached", r.out);
    ok = ok && run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 0;
    int status = -1;
    if (a.pid > 0)
        e2e_wait(a.pid, 60000, &status);
    int code = ok ? scen_quit(&s) : -1;
    scen_kill(&s);
    ASSERT(ok);
    ASSERT_EQ(status, 0);
    ASSERT_EQ(code, 3);
    return 0;
}

/* A unix socket file at path that nobody listens on, made an hour ago. */
static int plant_stale_socket(const char *path, int age_s) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    struct timespec then[2];
    clock_gettime(CLOCK_REALTIME, &then[0]);
    then[0].tv_sec -= age_s;
    then[1] = then[0];
    if (rc == 0 && utimensat(AT_FDCWD, path, then, 0) != 0)
        rc = -1;
    return rc;
}

/* Each error names its cause and its fix; and after all of them, a real attach
 * to the same process still works. */
TEST(e2e_attach_errors) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_errors"), 0);
    scen s, off, run;
    const char *no_diag[] = {"DOTNET_EnableDiagnostics=0", NULL};
    /* a program the agent was loaded into at start-up, as dnprof run does */
    const char *agent = e2e_env("DNPROF_AGENT");
    ASSERT_NE(agent, NULL);
    char profiler_path[PATH_MAX + 32], output[PATH_MAX + 32];
    snprintf(profiler_path, sizeof profiler_path, "CORECLR_PROFILER_PATH=%s", agent);
    snprintf(output, sizeof output, "DNPROF_OUTPUT=%s/startup.trace", r.dir);
    const char *startup[] = {"CORECLR_ENABLE_PROFILING=1", "CORECLR_PROFILER=" DNP_CLSID_TEXT,
                             profiler_path, output, NULL};
    ASSERT_EQ(scen_start(&s, &r, NULL), 0);
    ASSERT_EQ(scen_start(&off, &r, no_diag), 0);
    ASSERT_EQ(scen_start(&run, &r, startup), 0);
    int ok = scen_expect(&s, "ready", 60000) == 0 && scen_expect(&off, "ready", 60000) == 0 &&
             scen_expect(&run, "ready", 60000) == 0;
    char pidtext[32], offtext[32], runtext[32], self[32], dead[32], trace[PATH_MAX];
    snprintf(pidtext, sizeof pidtext, "%d", (int)s.pid);
    snprintf(runtext, sizeof runtext, "%d", (int)run.pid);
    snprintf(offtext, sizeof offtext, "%d", (int)off.pid);
    snprintf(self, sizeof self, "%d", (int)getpid());
    snprintf(trace, sizeof trace, "%s/errors.trace", r.dir);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    snprintf(dead, sizeof dead, "%d", (int)gone);

#define EXPECT(cond)                                                             \
    do {                                                                         \
        if (ok && !(cond)) {                                                     \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);   \
            ok = 0;                                                              \
        }                                                                        \
    } while (0)
    /* a dead pid */
    EXPECT(run_dnprof(&r, "attach", dead, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "no such process"));
    /* pid 1, and this test program: not .NET */
    EXPECT(run_dnprof(&r, "attach", "1", NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "not a .NET process"));
    EXPECT(run_dnprof(&r, "attach", self, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "is not a .NET process"));
    /* A dead runtime's socket left under this test's pid (a pid used again, as
     * CI once met it): older than the process, it is not this process's. */
    char stale[96];
    snprintf(stale, sizeof stale, "/tmp/dotnet-diagnostic-%d-1-socket", (int)getpid());
    int planted = plant_stale_socket(stale, 3600);
    EXPECT(planted == 0);
    EXPECT(run_dnprof(&r, "attach", self, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "is not a .NET process") && !err_has(&r, "does not answer"));
    /* Newer than the process, but its key is not the process's start time: the socket
     * of another PID namespace's process of this pid (a container's .NET pid 1 with the
     * host's /tmp), or a dead one's; this process maps no runtime */
    planted = planted == 0 ? plant_stale_socket(stale, 0) : planted;
    EXPECT(planted == 0);
    EXPECT(run_dnprof(&r, "attach", self, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "is not a .NET process") && !err_has(&r, "does not answer"));
    if (planted == 0)
        unlink(stale);
    /* diagnostics disabled */
    EXPECT(run_dnprof(&r, "attach", offtext, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "DOTNET_EnableDiagnostics=0") && err_has(&r, "dnprof run"));
    /* enter/leave hooks: start-up only, said so (not "unknown option") */
    EXPECT(run_dnprof(&r, "attach", pidtext, "--calls", NULL) == 0 && r.status == 2 &&
           err_has(&r, "dnprof run --calls") && err_has(&r, "starts") && err_has(&r, "--sample") &&
           !file_has(r.err, "unknown option"));
    EXPECT(run_dnprof(&r, "attach", "--include", "App.*", pidtext) == 0 && r.status == 2 &&
           err_has(&r, "dnprof run --calls"));
    /* flags an attached profiler cannot have */
    EXPECT(run_dnprof(&r, "attach", pidtext, "--events", "alloc,classes") == 0 && r.status == 2 &&
           err_has(&r, "COR_PRF_ENABLE_OBJECT_ALLOCATED") && err_has(&r, "dnprof run"));
    EXPECT(run_dnprof(&r, "attach", pidtext, "--events", "0x800100") == 0 && r.status == 2 &&
           err_has(&r, "COR_PRF_MONITOR_OBJECT_ALLOCATED"));
    /* an agent loaded at start-up: no second one, and no detach */
    EXPECT(run_dnprof(&r, "attach", runtext, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "loaded at start-up"));
    EXPECT(run_dnprof(&r, "detach", runtext, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "loaded at start-up"));
    /* nothing attached to detach */
    EXPECT(run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "no dnprof agent is attached"));
    /* another user's process: dnprof run as nobody, when we are root */
    if (ok && geteuid() == 0) {
        const char *bin = e2e_env("DNPROF_BIN");
        const char *argv[] = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              bin,       "attach",        pidtext,         NULL};
        if (bin && e2e_exec(&r, (char *const *)argv, NULL) == 0 && r.status != 126 &&
            r.status != 127 && !file_has(r.err, "cannot find the agent") &&
            !file_has(r.err, "Permission denied"))
            EXPECT(r.status == 1 && err_has(&r, "another user"));
        else
            fprintf(stderr, "e2e: (another user's process not checked: cannot run dnprof as nobody)\n");
    }
    /* A real attach, then a second one: a profiler is already there. */
    attaching a = {0};
    EXPECT(attach_start(&a, &r, s.pid, trace, 0, NULL) == 0);
    EXPECT(run_dnprof(&r, "attach", pidtext, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "already has dnprof's agent attached") && err_has(&r, "dnprof detach"));
    EXPECT(scen_say(&s, "work 0") == 0 && scen_expect(&s, "done 0", 30000) == 0);
    EXPECT(run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 0);
    int status = -1;
    if (a.pid > 0)
        e2e_wait(a.pid, 60000, &status);
    EXPECT(status == 0);
    EXPECT(check_round_trace(trace, 0) == 0);
#undef EXPECT
    int code = scen_quit(&s);
    scen_kill(&s);
    scen_kill(&off);
    scen_kill(&run);
    ASSERT(ok);
    ASSERT_EQ(code, 3);
    return 0;
}

/* The program exits while attached: the trace is completed at Shutdown and
 * dnprof attach says so. */
TEST(e2e_attach_program_exits) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_program_exits"), 0);
    scen s;
    ASSERT_EQ(scen_start(&s, &r, NULL), 0);
    int ok = scen_expect(&s, "ready", 60000) == 0;
    char trace[PATH_MAX];
    snprintf(trace, sizeof trace, "%s/exit.trace", r.dir);
    attaching a = {0};
    ok = ok && attach_start(&a, &r, s.pid, trace, 0, NULL) == 0;
    ok = ok && scen_say(&s, "work 0") == 0 && scen_expect(&s, "done 0", 30000) == 0;
    int code = ok ? scen_quit(&s) : -1;
    int status = -1;
    if (a.pid > 0)
        e2e_wait(a.pid, 60000, &status);
    scen_kill(&s);
    ASSERT(ok);
    ASSERT_EQ(code, 3);
    ASSERT_EQ(status, 0);
    ASSERT(file_has(a.err, "exited while attached"));
    dnp_trace *t = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_load(trace, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    ASSERT_EQ(e2e_count(t, DNP_EV_Shutdown), 1);
    ASSERT_EQ(e2e_count(t, DNP_EV_InitializeForAttach), 1);
    dnp_trace_free(t);
    return 0;
}

/* ---- stale control sockets ---- */

/* Leaves a control socket for pid in the control directory, as a killed agent
 * does: bound, no one listening; its time set age_s seconds back. */
static int plant_socket(char *path, size_t cap, pid_t pid, int age_s) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/dnprof-%u", (unsigned)geteuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    snprintf(path, cap, DNP_CONTROL_SOCKET_FMT, dir, (long)pid);
    unlink(path);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "e2e: cannot plant a socket at %s: %s\n", path, strerror(errno));
        return -1;
    }
    close(fd);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_s;
    t[1] = t[0];
    return utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

/* Whether `dnprof ps` (its output in path) lists pid, and says it is attached. */
static int ps_line(const char *path, const char *pidtext, int *attached) {
    char *text = e2e_read_file(path, NULL);
    int found = 0;
    size_t n = strlen(pidtext);
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, pidtext, n) == 0 && line[n] == ' ') {
            size_t len = strcspn(line, "\n");
            char *hit = strstr(line, "attached");
            *attached = hit && hit < line + len;
            found = 1;
            break;
        }
    }
    free(text);
    return found;
}

/* A killed agent's socket (its process gone), and one older than the live
 * process that now has its pid: ps, detach and attach remove both, and never
 * the socket of an agent that is attached. */
TEST(e2e_attach_stale_sockets) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_stale_sockets"), 0);
    scen s;
    ASSERT_EQ(scen_start(&s, &r, NULL), 0);
    int ok = scen_expect(&s, "ready", 60000) == 0;
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    char pidtext[32], dead_sock[256], reused_sock[256], trace[PATH_MAX];
    snprintf(pidtext, sizeof pidtext, "%d", (int)s.pid);
    snprintf(trace, sizeof trace, "%s/stale.trace", r.dir);

#define EXPECT(cond)                                                             \
    do {                                                                         \
        if (ok && !(cond)) {                                                     \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);   \
            ok = 0;                                                              \
        }                                                                        \
    } while (0)
    /* (another dnprof of a test running beside this one may sweep them too: plant again) */
#define PLANT()                                                                                    \
    do {                                                                                           \
        int planted = 0;                                                                           \
        for (int try_ = 0; !planted && try_ < 5; try_++)                                           \
            planted = plant_socket(dead_sock, sizeof dead_sock, gone, 10) == 0 &&                  \
                      plant_socket(reused_sock, sizeof reused_sock, s.pid, 3600) == 0 &&           \
                      access(dead_sock, F_OK) == 0 && access(reused_sock, F_OK) == 0;              \
        EXPECT(planted);                                                                           \
    } while (0)

    /* ps */
    PLANT();
    EXPECT(run_dnprof(&r, "ps", NULL, NULL, NULL) == 0 && r.status == 0);
    int attached = -1;
    EXPECT(ps_line(r.out, pidtext, &attached) && !attached);
    EXPECT(access(dead_sock, F_OK) != 0 && access(reused_sock, F_OK) != 0);
    /* detach: nothing attached, and the stale sockets gone */
    PLANT();
    EXPECT(run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 1 &&
           err_has(&r, "no dnprof agent is attached"));
    EXPECT(access(dead_sock, F_OK) != 0 && access(reused_sock, F_OK) != 0);
    /* attach: works, and ps sees the live agent's socket and leaves it */
    PLANT();
    attaching a = {0};
    EXPECT(attach_start(&a, &r, s.pid, trace, 0, NULL) == 0);
    EXPECT(access(dead_sock, F_OK) != 0 && access(reused_sock, F_OK) == 0);
    EXPECT(run_dnprof(&r, "ps", NULL, NULL, NULL) == 0 && r.status == 0 && ps_line(r.out, pidtext, &attached) &&
           attached);
    EXPECT(access(reused_sock, F_OK) == 0); /* now the live agent's own */
    EXPECT(scen_say(&s, "work 0") == 0 && scen_expect(&s, "done 0", 30000) == 0);
    EXPECT(run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 0);
    int status = -1;
    if (a.pid > 0)
        e2e_wait(a.pid, 60000, &status);
    EXPECT(status == 0);
    EXPECT(check_round_trace(trace, 0) == 0);
#undef PLANT
#undef EXPECT
    int code = scen_quit(&s);
    scen_kill(&s);
    unlink(dead_sock);
    ASSERT(ok);
    ASSERT_EQ(code, 3);
    return 0;
}

/* ---- --duration ---- */

/* `dnprof attach --duration 2s` to a program that throws as fast as it can
 * (millions of events): the command ends within DURATION_SLACK_MS of the
 * duration (the runtime's detach takes 0.3 s of that; it took 2.2-4.7 s more
 * when the closing line loaded the whole trace), and the program's events span
 * the duration: from the first (InitializeForAttach) to the last before
 * ProfilerDetachSucceeded, within -100/+SPAN_SLACK_MS (the machine is shared
 * with other tests). */
#define DURATION_MS 2000
/* Starts `Scenarios stories bench` (throwing and catching in a loop), its
 * stdout to out and stderr to err, and waits until its diagnostics socket is up
 * and it throws. Returns the pid (kill its group when done); *up: the socket
 * appeared within 30 s. */
static pid_t start_thrower(const e2e_run *r, const char *const env[], const char *out, const char *err, int *up) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    *up = 0;
    if (!dll)
        return -1;
    const char *prog[] = {e2e_dotnet(), dll, "stories", "bench", "2000000000", NULL};
    pid_t pid = e2e_spawn((char *const *)prog, env, r->dir, out, NULL, err);
    if (pid <= 0)
        return pid;
    char pattern[128];
    snprintf(pattern, sizeof pattern, "/tmp/dotnet-diagnostic-%d-*-socket", (int)pid);
    for (long deadline = now_ms() + 30000; !*up && now_ms() < deadline; sleep_ms(50)) {
        glob_t g;
        *up = glob(pattern, 0, NULL, &g) == 0;
        globfree(&g);
    }
    sleep_ms(300); /* and throwing */
    return pid;
}

#define DURATION_SLACK_MS 1500
#define SPAN_SLACK_MS 400
TEST(e2e_attach_duration) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_duration"), 0);
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT(bin);
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    char out[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/bench.out", r.dir);
    int up;
    pid_t pid = start_thrower(&r, env, out, out, &up);
    ASSERT_GT(pid, 0);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *argv[] = {bin, "attach", pidtext, "--duration", "2s", "-o", r.trace, NULL};
    long t0 = now_ms();
    int ran = up && e2e_exec(&r, (char *const *)argv, NULL) == 0;
    long wall = now_ms() - t0;
    e2e_kill(pid);
    ASSERT(up);
    ASSERT(ran);
    if (r.status != 0)
        e2e_show_file("dnprof attach stderr", r.err);
    ASSERT_STATUS(&r, 0);

    dnp_trace_stream *st = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_stream_open(r.trace, &st, err, sizeof err), 0);
    dnp_trace_event e;
    uint64_t first = UINT64_MAX, last = 0, detached = 0, n = 0;
    int got;
    while ((got = dnp_trace_stream_next(st, &e)) > 0) {
        n++;
        if (e.kind == DNP_EV_ProfilerDetachSucceeded) {
            detached = e.time_ns;
            continue;
        }
        first = e.time_ns < first ? e.time_ns : first;
        last = e.time_ns > last ? e.time_ns : last;
    }
    int complete = got == 0 && dnp_trace_stream_trace(st)->status == DNP_TRACE_COMPLETE;
    dnp_trace_stream_close(st);
    long span = (long)((last - first) / 1000000), to_detached = (long)((detached - first) / 1000000);
    fprintf(stderr, "e2e: --duration 2s: %llu events, program events span %ld ms, detach at %ld ms, "
            "command %ld ms\n", (unsigned long long)n, span, to_detached, wall);
    ASSERT(complete);
    ASSERT_GT(n, 100000); /* it recorded the throwing program */
    ASSERT_GT(detached, last);
    ASSERT_GE(span, DURATION_MS - 100);
    ASSERT_LE(span, DURATION_MS + SPAN_SLACK_MS);
    ASSERT_GE(wall, DURATION_MS);
    ASSERT_LE(wall, DURATION_MS + DURATION_SLACK_MS);
    return 0;
}

/* issue 10 item 2: after an attach, the agent obeys what dnprof attach asked
 * for (the blob), not the target's environment. A process whose environment
 * says DNPROF_EXCEPTION_STACKS=1 gets no stacks from `attach --events
 * exceptions`; one whose environment says 0 gets them from `attach --exceptions`. */
TEST(e2e_attach_exception_stacks_from_blob) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_exception_stacks_from_blob"), 0);
    static const struct {
        const char *env;
        const char *args[2];
        int want_stack;
    } cases[] = {
        {"DNPROF_EXCEPTION_STACKS=1", {"--events", "exceptions"}, 0},
        {"DNPROF_EXCEPTION_STACKS=0", {"--exceptions", NULL}, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *env[] = {cases[c].env, NULL};
        scen s;
        ASSERT_EQ(scen_start(&s, &r, env), 0);
        int ok = scen_expect(&s, "ready", 60000) == 0;
        char trace[PATH_MAX], pidtext[32];
        snprintf(trace, sizeof trace, "%s/stacks%zu.trace", r.dir, c);
        snprintf(pidtext, sizeof pidtext, "%d", (int)s.pid);
        attaching a = {0};
        ok = ok && attach_start(&a, &r, s.pid, trace, cases[c].args[1] ? 2 : 1, cases[c].args) == 0;
        ok = ok && scen_say(&s, "work 0") == 0 && scen_expect(&s, "done 0", 30000) == 0;
        ok = ok && run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 0;
        int status = -1;
        if (a.pid > 0)
            e2e_wait(a.pid, 60000, &status);
        int code = ok ? scen_quit(&s) : -1;
        scen_kill(&s);
        ASSERT(ok);
        ASSERT_EQ(status, 0);
        ASSERT_EQ(code, 3);
        dnp_trace *t = NULL;
        char err[256];
        ASSERT_EQ(dnp_trace_load(trace, &t, err, sizeof err), 0);
        ASSERT_EQ(e2e_count(t, DNP_EV_InitializeForAttach), 1);
        long thrown = find_prefix(t, DNP_EV_ExceptionThrown, 1, "Scenarios.AttachRoundException");
        ASSERT_GE(thrown, 0);
        long details = -1;
        for (size_t i = (size_t)thrown; i < t->nevents && details < 0; i++)
            if (t->events[i].kind == DNP_EV_ExceptionDetails && t->events[i].thread == t->events[thrown].thread)
                details = (long)i;
        ASSERT_GT(details, thrown);
        const char *stack = dnp_trace_string(t, e2e_field(&t->events[details], 3));
        if (cases[c].want_stack) {
            ASSERT_NE(stack, NULL);
            ASSERT_CONTAINS(stack, "Scenarios.AttachScenario::Work");
        } else {
            if (stack)
                fprintf(stderr, "e2e: case %zu: a stack came from the target's environment:\n%s\n", c, stack);
            ASSERT_EQ(stack, NULL);
        }
        dnp_trace_free(t);
    }
    return 0;
}

/* issue 11: what an attached agent says while it records (here: the disk
 * filled) reaches dnprof attach, never the program's own stderr. The program
 * runs with RLIMIT_FSIZE of 64 KiB (write(2) fails with EFBIG past it, SIGXFSZ
 * ignored), so the trace fails soon after the attach. */
TEST(e2e_attach_messages_to_front_end) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_messages_to_front_end"), 0);
    const char *bin = e2e_env("DNPROF_BIN");
    ASSERT(bin);
    const char *env[] = {"CORECLR_ENABLE_PROFILING", "DOTNET_EnableWriteXorExecute=0", NULL};
    char out[PATH_MAX + 16], perr[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/bench.out", r.dir);
    snprintf(perr, sizeof perr, "%s/bench.err", r.dir);
    struct rlimit old, small = {64 * 1024, 0};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    int up;
    pid_t pid = start_thrower(&r, env, out, perr, &up);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    ASSERT_GT(pid, 0);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *argv[] = {bin, "attach", pidtext, "--duration", "2s", "--flush-ms", "2", "-o", r.trace, NULL};
    int ran = up && e2e_exec(&r, (char *const *)argv, NULL) == 0;
    e2e_kill(pid);
    ASSERT(up);
    ASSERT(ran);
    int told = file_has(r.err, "cannot write trace");
    int leaked = file_has(perr, "dnprof");
    if (!told)
        e2e_show_file("dnprof attach stderr", r.err);
    if (leaked)
        e2e_show_file("the program's own stderr", perr);
    ASSERT(told);
    ASSERT(!leaked);
    return 0;
}

/* issue 24 item 4: attach --alloc and --exceptions without --events record
 * what they ask for and what it needs, not the default families: no gc events
 * (on a server-GC service those are a heap walk after every GC). An explicit
 * --events still wins: the control case records the GCs the rounds make. */
static size_t gc_family_events(const dnp_trace *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->nevents; i++)
        n += t->events[i].kind < DNP_EV_COUNT && dnp_events[t->events[i].kind].family == DNP_FAM_GC;
    return n;
}

TEST(e2e_attach_modes_record_no_gc) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_attach_modes_record_no_gc"), 0);
    static const struct {
        const char *args[3];
        int n, want_gc;
        unsigned want_kind; /* what the mode records */
    } cases[] = {
        {{"--alloc", NULL, NULL}, 1, 0, DNP_EV_AllocSite},
        {{"--exceptions", NULL, NULL}, 1, 0, DNP_EV_ExceptionDetails},
        {{"--alloc", "--events", "default"}, 3, 1, DNP_EV_AllocSite},
    };
    const char *env[] = {"DOTNET_gcConcurrent=0", NULL}; /* so that an attached agent can have gc */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        scen s;
        ASSERT_EQ(scen_start(&s, &r, env), 0);
        int ok = scen_expect(&s, "ready", 60000) == 0;
        char trace[PATH_MAX], pidtext[32], line[32];
        snprintf(trace, sizeof trace, "%s/modes%zu.trace", r.dir, c);
        snprintf(pidtext, sizeof pidtext, "%d", (int)s.pid);
        attaching a = {0};
        ok = ok && attach_start(&a, &r, s.pid, trace, cases[c].n, cases[c].args) == 0;
        for (int round = 0; round < 6 && ok; round++) { /* each collects garbage */
            snprintf(line, sizeof line, "work %d", round);
            char done[32];
            snprintf(done, sizeof done, "done %d", round);
            ok = scen_say(&s, line) == 0 && scen_expect(&s, done, 30000) == 0;
        }
        ok = ok && run_dnprof(&r, "detach", pidtext, NULL, NULL) == 0 && r.status == 0;
        int status = -1;
        if (a.pid > 0)
            e2e_wait(a.pid, 60000, &status);
        int code = ok ? scen_quit(&s) : -1;
        scen_kill(&s);
        ASSERT(ok);
        ASSERT_EQ(status, 0);
        ASSERT_EQ(code, 3);
        dnp_trace *t = NULL;
        char err[256];
        ASSERT_EQ(dnp_trace_load(trace, &t, err, sizeof err), 0);
        size_t gc = gc_family_events(t), gcs = e2e_count(t, DNP_EV_GarbageCollectionStarted);
        size_t got = e2e_count(t, cases[c].want_kind);
        fprintf(stderr, "e2e: attach %s%s%s: %zu events, %zu gc-family (%zu GCs), %zu of what it asked for\n",
                cases[c].args[0], cases[c].n > 1 ? " --events " : "", cases[c].n > 1 ? cases[c].args[2] : "",
                t->nevents, gc, gcs, got);
        dnp_trace_free(t);
        ASSERT_GE(got, 1);
        if (cases[c].want_gc) {
            ASSERT_GE(gcs, 6);
        } else {
            ASSERT_EQ(gc, 0);
        }
    }
    return 0;
}
