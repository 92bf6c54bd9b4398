/* test_top.c: `dnprof top` (docs/top.md) against the truth of the "top"
 * scenario (TopScenario.cs: two threads whose three hot methods do 60/30/10% of
 * the work, and a thread that throws 50 exceptions a second, paced by the
 * clock, and says so): batch mode's JSON, the screen in a real terminal
 * (tmux: what capture-pane reads, q, the program left running without the
 * agent), and the errors a person meets. Shares are compared among the three
 * methods, within 5 points; the exception rate within 10% of the program's
 * own. Each test fails when the agent is not loaded or records nothing (no
 * samples, no intervals). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

static const char *const HOT[3] = {"Scenarios.TopScenario::TopSixty", "Scenarios.TopScenario::TopThirty",
                                   "Scenarios.TopScenario::TopTen"};
static const double TRUTH[3] = {60, 30, 10};

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int file_has(const char *path, const char *text) {
    if (access(path, R_OK) != 0)
        return 0;
    size_t n;
    char *s = e2e_read_file(path, &n);
    int has = s && strstr(s, text);
    free(s);
    return has;
}

/* Starts `dotnet Scenarios.dll top ARGS`, or `EXE top ARGS` (the scenario
 * alone, self-contained for an older runtime), stdout to DIR/NAME.out, and
 * waits for its "ready": its pid, or -1 after saying why. */
static pid_t prog_start_exe(const e2e_run *r, const char *exe, const char *name, const char *const *args, char *out,
                            size_t cap) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    if (!dll && !exe)
        return -1;
    char err[PATH_MAX + 64];
    snprintf(out, cap, "%s/%s.out", r->dir, name);
    snprintf(err, sizeof err, "%s/%s.err", r->dir, name);
    const char *argv[12] = {e2e_dotnet(), dll, "top"};
    int at = 3;
    if (exe) {
        argv[0] = exe;
        argv[1] = "top";
        argv[2] = NULL;
        at = 2;
    }
    for (int i = 0; args[i] && i < 8; i++)
        argv[at + i] = args[i];
    pid_t pid = e2e_spawn((char *const *)argv, NULL, r->dir, out, NULL, err);
    for (int i = 0; pid > 0 && i < 600; i++) {
        if (file_has(out, "ready"))
            return pid;
        sleep_ms(100);
    }
    fprintf(stderr, "e2e: the top scenario did not say ready\n");
    e2e_show_file("its stderr", err);
    return -1;
}

static pid_t prog_start_args(const e2e_run *r, const char *name, const char *const *args, char *out, size_t cap) {
    return prog_start_exe(r, NULL, name, args, out, cap);
}

static pid_t prog_start(const e2e_run *r, const char *name, const char *seconds, char *out, size_t cap) {
    const char *args[] = {"run", seconds, NULL};
    return prog_start_args(r, name, args, out, cap);
}

/* The rate the program says it throws at ("throws per second N"). */
static double prog_rate(const char *out) {
    size_t n;
    char *s = e2e_read_file(out, &n);
    const char *p = s ? strstr(s, "throws per second ") : NULL;
    double v = p ? atof(p + strlen("throws per second ")) : -1;
    free(s);
    return v;
}

/* The shares of hot[] among themselves are 60/30/10 within 5 points. */
static int shares_ok(const double hot[3], const char *where) {
    double sum = hot[0] + hot[1] + hot[2];
    if (sum < 50) {
        fprintf(stderr, "e2e: %s: %.0f samples of the hot methods: nothing recorded\n", where, sum);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        double share = 100 * hot[i] / sum;
        if (share < TRUTH[i] - 5 || share > TRUTH[i] + 5) {
            fprintf(stderr, "e2e: %s: %s has %.1f%% of the hot methods' samples, not %.0f%% (+-5): %.0f %.0f %.0f\n",
                    where, HOT[i], share, TRUTH[i], hot[0], hot[1], hot[2]);
            return -1;
        }
    }
    return 0;
}

/* Whether pid maps the agent. */
static int has_agent(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    return file_has(path, "libdnprof.so");
}

/* The agent leaves pid within 15 s, and pid is still running. */
static int left_running(pid_t pid) {
    for (int i = 0; i < 150 && has_agent(pid); i++)
        sleep_ms(100);
    ASSERT_EQ(has_agent(pid), 0);
    ASSERT_EQ(kill(pid, 0), 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    size_t n;
    char *s = e2e_read_file(path, &n);
    ASSERT_NE(s, NULL);
    const char *p = strrchr(s, ')');
    char state = p ? p[2] : '?';
    free(s);
    ASSERT_NE(state, 'Z');
    return 0;
}

/* ---- batch mode: -n 3 --json ---- */

/* One interval's object: the hot methods' self samples into hot[], its
 * exceptions and duration. */
static int interval_of(const jv *o, double hot[3], double *exc, double *secs) {
    const jv *last = json_get(o, "last");
    ASSERT_NE(last, NULL);
    const jv *methods = json_get(last, "methods");
    ASSERT_NE(methods, NULL);
    int at[3] = {-1, -1, -1};
    for (size_t i = 0; i < methods->n; i++)
        for (int h = 0; h < 3; h++)
            if (json_str(json_at(methods, i), "name") && !strcmp(json_str(json_at(methods, i), "name"), HOT[h])) {
                hot[h] += json_num(json_at(methods, i), "self");
                at[h] = (int)i;
            }
    /* ranked in order */
    ASSERT_GE(at[0], 0);
    ASSERT_GT(at[1], at[0]);
    ASSERT_GT(at[2], at[1]);
    *exc += json_num(last, "exceptions");
    *secs += json_num(last, "duration_s");
    return 0;
}

static int batch_body(e2e_run *r, pid_t *prog) {
    char out[PATH_MAX + 64], pid[32];
    ASSERT_GT(*prog = prog_start(r, "program", "60", out, sizeof out), 0);
    snprintf(pid, sizeof pid, "%d", (int)*prog);
    /* --agent-path: the agent where the program sees it (here the host's own
     * path, as in a container whose image holds it); a relative one, or one with
     * a program top starts, is one line */
    const char *agent = e2e_env("DNPROF_AGENT");
    ASSERT_NE(agent, NULL);
    const char *relative[] = {"top", "-b", "--agent-path", "libdnprof.so", pid, NULL};
    ASSERT_EQ(e2e_dnprof(r, relative), 0);
    ASSERT_STATUS(r, 2);
    const char *startup[] = {"top", "-b", "--agent-path", agent, "--", "true", NULL};
    ASSERT_EQ(e2e_dnprof(r, startup), 0);
    ASSERT_STATUS(r, 2);
    const char *args[] = {"top", pid, "-b", "-n", "3", "--json", "--rate", "1000", "--agent-path", agent, NULL};
    ASSERT_EQ(e2e_dnprof(r, args), 0);
    ASSERT_STATUS(r, 0);
    size_t len;
    char *text = e2e_read_file(r->out, &len);
    ASSERT_NE(text, NULL);
    int objects = 0;
    double hot[3] = {0, 0, 0}, exc = 0, secs = 0;
    int bad = 0;
    for (char *line = strtok(text, "\n"); line && !bad; line = strtok(NULL, "\n")) {
        char err[256];
        jv *o = json_parse(line, strlen(line), err, sizeof err);
        if (!o) {
            fprintf(stderr, "e2e: not JSON (%s): %s\n", err, line);
            bad = 1;
            break;
        }
        objects++;
        if (json_num(o, "interval") != objects || json_num(o, "pid") != (double)*prog)
            bad = 1;
        double h[3] = {0, 0, 0}, e = 0, s = 0;
        if (!bad && interval_of(o, h, &e, &s) != 0)
            bad = 1;
        if (objects > 1) /* the later intervals: the first may hold the attach's own work */
            for (int i = 0; i < 3; i++)
                hot[i] += h[i];
        if (objects > 1) {
            exc += e;
            secs += s;
        }
        json_free(o);
    }
    free(text);
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(objects, 3);
    ASSERT_EQ(shares_ok(hot, "top --json, intervals 2 and 3"), 0);
    double want = prog_rate(out);
    ASSERT_GT(want, 0);
    ASSERT_GT(secs, 1.5);
    double got = exc / secs;
    ASSERT_GE(got, want * 0.9);
    ASSERT_LE(got, want * 1.1);
    ASSERT_EQ(left_running(*prog), 0);
    return 0;
}

TEST(e2e_top_batch_json) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_batch_json"), 0);
    pid_t prog = -1;
    int rc = batch_body(&r, &prog);
    e2e_kill(prog);
    return rc;
}

/* ---- the thread pool: top pool N K against the program's own figures ---- */

#define POOL_N 6  /* worker threads, all blocked */
#define POOL_K 40 /* work items queued behind them */

/* The program's last "pool threads T queue Q" line: 0, or -1. */
static int prog_pool(const char *out, long *threads, long *queue) {
    size_t n;
    char *s = e2e_read_file(out, &n);
    const char *p = s, *last = NULL;
    while (p && (p = strstr(p, "pool threads ")) != NULL)
        last = p++;
    int ok = last && sscanf(last, "pool threads %ld queue %ld", threads, queue) == 2;
    free(s);
    return ok ? 0 : -1;
}

/* top pool N K by attach (EXE: the scenario alone, or NULL: Scenarios.dll),
 * top's pool line against the program's own figures; TASKS: the N threads
 * block on a task, and the pool counts all N as blocked on tasks (otherwise
 * on an event: none). */
static int pool_body_bgc(e2e_run *r, const char *exe, pid_t *prog, int tasks, int bgc) {
    char out[PATH_MAX + 64], pid[32], n[16], k[16];
    snprintf(n, sizeof n, "%d", POOL_N);
    snprintf(k, sizeof k, "%d", POOL_K);
    const char *pargs[] = {"pool", n, k, "60", tasks ? "tasks" : bgc ? "bgc" : NULL, NULL};
    ASSERT_GT(*prog = prog_start_exe(r, exe, "program", pargs, out, sizeof out), 0);
    snprintf(pid, sizeof pid, "%d", (int)*prog);
    const char *args[] = {"top", pid, "-b", "-n", "4", "--json", NULL};
    ASSERT_EQ(e2e_dnprof(r, args), 0);
    ASSERT_STATUS(r, 0);
    long want_threads = -1, want_queue = -1;
    ASSERT_EQ(prog_pool(out, &want_threads, &want_queue), 0);
    /* the program's truth is what it set up */
    ASSERT_EQ(want_threads, POOL_N);
    ASSERT_EQ(want_queue, POOL_K);
    size_t len;
    char *text = e2e_read_file(r->out, &len);
    ASSERT_NE(text, NULL);
    int objects = 0, seen = 0, bad = 0;
    for (char *line = strtok(text, "\n"); line && !bad; line = strtok(NULL, "\n")) {
        char err[256];
        jv *o = json_parse(line, strlen(line), err, sizeof err);
        const jv *th = o ? json_get(o, "threadpoolThreads") : NULL, *q = o ? json_get(o, "threadpoolQueue") : NULL;
        const jv *bl = o ? json_get(o, "threadpoolBlocked") : NULL;
        objects++;
        if (!th || !q || !bl) {
            fprintf(stderr, "e2e: no threadpoolThreads/threadpoolQueue/threadpoolBlocked: %s\n", line);
            bad = 1;
        } else if (th->type == JV_NUM && q->type == JV_NUM) {
            seen++;
            fprintf(stderr, "e2e: interval %d: top says pool %.0f threads (%.0f blocked on tasks), queue %.0f; the "
                            "program %ld, %d, %ld\n", objects, th->num, bl->type == JV_NUM ? bl->num : -1.0, q->num,
                    want_threads, tasks ? POOL_N : 0, want_queue);
            /* equal within 2 threads; the queue within 2 items (the program's own figures are exact);
             * blocked on tasks: all N (the last may still be on its way in), or none */
            if (th->num < want_threads - 2 || th->num > want_threads + 2 || q->num < want_queue - 2 ||
                q->num > want_queue + 2 || bl->type != JV_NUM || bl->num > (tasks ? POOL_N : 0) ||
                bl->num < (tasks ? POOL_N - 1 : 0))
                bad = 1;
        } else if (th->type != JV_NULL || q->type != JV_NULL || objects > 1) {
            bad = 1; /* null only before the first counters (they come a second after the attach) */
        }
        json_free(o);
    }
    free(text);
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(objects, 4);
    ASSERT_GE(seen, 3);
    if (bgc) { /* background collections ran while top read the pool */
        char *said = e2e_read_file(out, NULL);
        const char *p = said, *last = NULL;
        while (p && (p = strstr(p, "\nbgc ")) != NULL)
            last = ++p;
        long count = last ? strtol(last + 4, NULL, 10) : 0;
        fprintf(stderr, "e2e: the program's background collections: %ld\n", count);
        free(said);
        ASSERT_GE(count, 2);
    }
    ASSERT_EQ(left_running(*prog), 0);
    return 0;
}

static int pool_body(e2e_run *r, const char *exe, pid_t *prog, int tasks) {
    return pool_body_bgc(r, exe, prog, tasks, 0);
}

TEST(e2e_top_pool) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_pool"), 0);
    pid_t prog = -1;
    int rc = pool_body(&r, NULL, &prog, 0);
    e2e_kill(prog);
    return rc;
}

/* With background collections while top reads: one starts on the thread that
 * allocated and ends on the GC's own, and the agent's "a collection runs",
 * cleared only by the thread that set it, stayed set after the first one:
 * every later read of the pool was refused ("pool n/a" for good). */
TEST(e2e_top_pool_background_gc) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_pool_background_gc"), 0);
    pid_t prog = -1;
    int rc = pool_body_bgc(&r, NULL, &prog, 0, 1);
    e2e_kill(prog);
    return rc;
}

/* Sync over async, live: the pool's line says how many of its threads are
 * blocked on tasks (read from the pool's own count), all of the program's N. */
TEST(e2e_top_pool_blocked_on_tasks) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_pool_blocked_on_tasks"), 0);
    pid_t prog = -1;
    int rc = pool_body(&r, NULL, &prog, 1);
    e2e_kill(prog);
    return rc;
}

/* The same on .NET 8 and 9: the pool's fields are found by name in each
 * runtime's CoreLib (WorkStealingQueueList's array is _queues there, s_queues
 * in .NET 10). */
TEST(e2e_top_pool_older_runtimes) {
    const char *exes[] = {e2e_env("DNPROF_TOP_NET8"), e2e_env("DNPROF_TOP_NET9")};
    const char *names[] = {"e2e_top_pool_older_runtimes.net8", "e2e_top_pool_older_runtimes.net9"};
    for (int i = 0; i < 2; i++) {
        ASSERT(exes[i]);
        e2e_run r;
        ASSERT_EQ(e2e_setup(&r, names[i]), 0);
        pid_t prog = -1;
        int rc = pool_body(&r, exes[i], &prog, 0);
        e2e_kill(prog);
        ASSERT_EQ(rc, 0);
    }
    return 0;
}

/* ---- the screen, in tmux ---- */

typedef struct tmux {
    int missing; /* tmux is not installed: the test is a skip */
    char sock[64];
    char tool[PATH_MAX];
} tmux;

/* tmux ARGS... on our own server socket; 0 when it exited 0. */
static int tmux_run(const tmux *t, const char *args) {
    static char cmd[PATH_MAX * 6];
    snprintf(cmd, sizeof cmd, "'%s' -L %s %.*s", t->tool, t->sock, PATH_MAX * 4, args);
    return system(cmd) == 0 ? 0 : -1;
}

/* The pane's text into buf. */
static int tmux_capture(const tmux *t, char *buf, size_t cap) {
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "'%s' -L %s capture-pane -p -t top", t->tool, t->sock);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    return pclose(f) == 0 ? 0 : -1;
}

/* Starts `dnprof ARGS` in a detached tmux session of cols x lines, its stderr
 * to DIR/top.err and its exit code to DIR/top.rc. */
static int tmux_start(tmux *t, const e2e_run *r, int cols, int lines, const char *args) {
    if (!e2e_which("tmux", NULL, t->tool, sizeof t->tool)) {
        t->missing = 1;
        return 1;
    }
    snprintf(t->sock, sizeof t->sock, "dnprof-e2e-%d", (int)getpid());
    const char *bin = e2e_env("DNPROF_BIN");
    if (!bin)
        return -1;
    char cmd[PATH_MAX * 4];
    snprintf(cmd, sizeof cmd,
             "new-session -d -s top -x %d -y %d \"env TERM=tmux-256color NO_COLOR= '%s' %s 2>'%s/top.err'; "
             "echo \\$? >'%s/top.rc.tmp'; mv '%s/top.rc.tmp' '%s/top.rc'; sleep 60\"",
             cols, lines, bin, args, r->dir, r->dir, r->dir, r->dir);
    return tmux_run(t, cmd);
}

static void tmux_stop(const tmux *t) {
    if (t->sock[0])
        tmux_run(t, "kill-server 2>/dev/null");
}

/* The exit code top left in DIR/top.rc within ms, or -1. */
static int top_rc(const e2e_run *r, long ms) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/top.rc", r->dir);
    for (long waited = 0; waited <= ms; waited += 100) {
        FILE *f = fopen(path, "r");
        int rc = -1;
        if (f) {
            if (fscanf(f, "%d", &rc) != 1)
                rc = -1;
            fclose(f);
            return rc;
        }
        sleep_ms(100);
    }
    return -1;
}

/* The since-start share column (all%) of each hot method's row, in screen order. */
static int screen_rows(const char *screen, double all[3]) {
    const char *at[3];
    for (int h = 0; h < 3; h++) {
        at[h] = strstr(screen, HOT[h]);
        if (!at[h]) {
            fprintf(stderr, "e2e: %s is not on the screen:\n%s\n", HOT[h], screen);
            return -1;
        }
        const char *line = at[h];
        while (line > screen && line[-1] != '\n')
            line--;
        double self, total;
        if (sscanf(line, " %lf%% %lf%% %lf%%", &self, &total, &all[h]) != 3) {
            fprintf(stderr, "e2e: cannot read the row of %s:\n%s\n", HOT[h], screen);
            return -1;
        }
    }
    ASSERT_LT(at[0], at[1]); /* ranked in order */
    ASSERT_LT(at[1], at[2]);
    return 0;
}

static int screen_body(e2e_run *r, tmux *t, pid_t *prog) {
    char out[PATH_MAX + 64], args[128];
    ASSERT_GT(*prog = prog_start(r, "program", "60", out, sizeof out), 0);
    snprintf(args, sizeof args, "top %d --rate 1000", (int)*prog);
    int started = tmux_start(t, r, 100, 30, args);
    if (started == 1)
        return 1;
    ASSERT_EQ(started, 0);
    static char screen[65536];
    int refreshed = 0;
    for (int i = 0; i < 200 && !refreshed; i++) { /* three refreshes at least */
        sleep_ms(100);
        const char *iv = tmux_capture(t, screen, sizeof screen) == 0 ? strstr(screen, "(interval ") : NULL;
        refreshed = iv && atoi(iv + strlen("(interval ")) >= 4;
    }
    if (!refreshed) {
        fprintf(stderr, "e2e: the screen after 20 s:\n%s\n", screen);
        char err[PATH_MAX + 16];
        snprintf(err, sizeof err, "%s/top.err", r->dir);
        e2e_show_file("dnprof top's stderr", err);
    }
    ASSERT_EQ(refreshed, 1);
    double all[3];
    ASSERT_EQ(screen_rows(screen, all), 0);
    ASSERT_EQ(shares_ok(all, "the screen's since-start shares (all%)") , 0);
    ASSERT_NE(strstr(screen, "exceptions "), NULL); /* the header's rate, of the last interval */
    /* e: exceptions by type; i: since the start, whose rate a late second of
     * the program's (a loaded machine) does not move */
    ASSERT_EQ(tmux_run(t, "send-keys -t top e i"), 0);
    const char *row = NULL;
    for (int i = 0; i < 50 && !row; i++) {
        sleep_ms(100);
        if (tmux_capture(t, screen, sizeof screen) == 0 && strstr(screen, "since start"))
            row = strstr(screen, "System.InvalidOperationException");
    }
    if (!row)
        fprintf(stderr, "e2e: no exceptions since the start on the screen:\n%s\n", screen);
    ASSERT_NE(row, NULL);
    while (row > screen && row[-1] != '\n')
        row--;
    double share, rate = -1, want = prog_rate(out);
    ASSERT_EQ(sscanf(row, " %lf%% %lf", &share, &rate), 2);
    ASSERT_GT(want, 0);
    ASSERT_GE(rate, want * 0.9);
    ASSERT_LE(rate, want * 1.1);
    ASSERT_EQ(has_agent(*prog), 1);
    ASSERT_EQ(tmux_run(t, "send-keys -t top q"), 0);
    ASSERT_EQ(top_rc(r, 30000), 0);
    ASSERT_EQ(left_running(*prog), 0);
    return 0;
}

TEST(e2e_top_screen_tmux) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_screen_tmux"), 0);
    tmux t;
    memset(&t, 0, sizeof t);
    pid_t prog = -1;
    int rc = screen_body(&r, &t, &prog);
    tmux_stop(&t);
    e2e_kill(prog);
    if (t.missing)
        E2E_SKIP("tmux is not installed (tools/install-deps, or: apt-get install tmux)");
    return rc;
}

/* ---- errors ---- */

/* stderr is one line holding text. */
static int one_line_with(const char *path, const char *text) {
    size_t n;
    char *s = e2e_read_file(path, &n);
    ASSERT_NE(s, NULL);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    int has = strstr(s, text) != NULL;
    if (lines != 1 || !has)
        fprintf(stderr, "e2e: expected one line with '%s', got:\n%s\n", text, s);
    free(s);
    ASSERT_EQ(lines, 1);
    ASSERT_EQ(has, 1);
    return 0;
}

static int errors_body(e2e_run *r, pid_t *prog, pid_t *other, tmux *t) {
    /* a process that is not .NET */
    const char *sleep_argv[] = {"sleep", "60", NULL};
    char sout[PATH_MAX + 16], serr[PATH_MAX + 16], pid[32];
    snprintf(sout, sizeof sout, "%s/sleep.out", r->dir);
    snprintf(serr, sizeof serr, "%s/sleep.err", r->dir);
    ASSERT_GT(*other = e2e_spawn((char *const *)sleep_argv, NULL, r->dir, sout, NULL, serr), 0);
    sleep_ms(200);
    snprintf(pid, sizeof pid, "%d", (int)*other);
    const char *not_net[] = {"top", "-b", "-n", "1", pid, NULL};
    ASSERT_EQ(e2e_dnprof(r, not_net), 0);
    ASSERT_STATUS(r, 1);
    ASSERT_EQ(one_line_with(r->err, "is not a .NET process"), 0);

    /* a process that exits while it is watched: said, and exit 0 */
    char out[PATH_MAX + 64];
    ASSERT_GT(*prog = prog_start(r, "short", "4", out, sizeof out), 0);
    snprintf(pid, sizeof pid, "%d", (int)*prog);
    const char *watch[] = {"top", "-b", pid, NULL};
    ASSERT_EQ(e2e_dnprof(r, watch), 0);
    ASSERT_STATUS(r, 0);
    ASSERT_EQ(file_has(r->err, "exited"), 1);
    ASSERT_EQ(file_has(r->out, "Scenarios.TopScenario::TopSixty"), 1); /* it was watched */

    /* a terminal too small: the size needed, before anything is attached */
    char args[64];
    snprintf(args, sizeof args, "top %d", (int)*other);
    int started = tmux_start(t, r, 60, 20, args);
    if (started == 1)
        return 1;
    ASSERT_EQ(started, 0);
    ASSERT_EQ(top_rc(r, 20000), 1);
    char err[PATH_MAX + 16];
    snprintf(err, sizeof err, "%s/top.err", r->dir);
    ASSERT_EQ(one_line_with(err, "needs at least 80x24"), 0);
    ASSERT_EQ(file_has(err, "60x20"), 1);
    return 0;
}

TEST(e2e_top_errors) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_errors"), 0);
    tmux t;
    memset(&t, 0, sizeof t);
    pid_t prog = -1, other = -1;
    int rc = errors_body(&r, &prog, &other, &t);
    tmux_stop(&t);
    e2e_kill(prog);
    e2e_kill(other);
    if (t.missing)
        E2E_SKIP("tmux is not installed (tools/install-deps, or: apt-get install tmux)");
    return rc;
}

/* ---- from start-up ---- */

/* dnprof top -- PROGRAM: the same intervals from the start; after -n COUNT
 * the program runs on to its end (its output in --log), and top's exit code
 * is the program's. */
TEST(e2e_top_startup) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_startup"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/program.log", r.dir);
    const char *args[] = {"top", "-n", "2", "--json", "--log", log, "--", e2e_dotnet(), dll, "top", "run", "5", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *text = e2e_read_file(r.out, &len);
    ASSERT_NE(text, NULL);
    int objects = 0, hot = 0;
    double first_cpu = -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char err[256];
        jv *o = json_parse(line, strlen(line), err, sizeof err);
        if (!o)
            continue;
        if (!objects++ && json_get(o, "cpu_percent"))
            first_cpu = json_num(o, "cpu_percent");
        hot += strstr(line, HOT[0]) != NULL;
        json_free(o);
    }
    free(text);
    ASSERT_EQ(objects, 2);
    ASSERT_GE(hot, 1); /* recorded */
    /* the first interval's CPU too (since the process started): the program computes */
    ASSERT_GT(first_cpu, 10);
    ASSERT_EQ(file_has(log, "thrown "), 1); /* it ran to its end, its output in the log */
    ASSERT_EQ(file_has(r.err, "runs on to its end"), 1);
    return 0;
}

/* top --locks in batch mode from start-up: the header's contentions and the
 * table of lock waits by site, with the program's contending method in it. */
TEST(e2e_top_locks_batch) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_top_locks_batch"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(dll, NULL);
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/program.log", r.dir);
    const char *args[] = {"top", "--locks", "-b", "-n", "2", "--log", log, "--", e2e_dotnet(), dll, "locks", "both",
                          "4", "150", "5000", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT_NE(text, NULL);
    const char *table = strstr(text, "\nlock waits by site\n");
    double rate = 0;
    for (const char *p = strstr(text, "locks: "); p; p = strstr(p + 1, "locks: "))
        if (atof(p + 7) > rate)
            rate = atof(p + 7);
    int site = table && (strstr(table, "Scenarios.LocksScenario::ContendMonitor") ||
                         strstr(table, "Scenarios.LocksScenario::ContendLock"));
    if (!site || rate <= 0)
        e2e_show_file("dnprof top --locks -b", r.out);
    free(text);
    ASSERT(site);
    ASSERT_GT(rate, 0);
    return 0;
}

/* From the host into a container: top by the host's pid reads the windows the
 * agent writes in the container's own /tmp (through /proc/PID/root), names the
 * program by that pid, shows its hot methods, and leaves nothing there. */
TEST(e2e_container_top) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_container_top"), 0);
    if (!e2e_can_contain())
        E2E_SKIP("unshare cannot make PID and mount namespaces here (needs root or user namespaces)");
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *agent = e2e_env("DNPROF_AGENT");
    ASSERT(dll);
    ASSERT(agent);
    char out[PATH_MAX + 16], errp[PATH_MAX + 16], pid[32];
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    const char *argv[] = {e2e_dotnet(), dll, "top", "run", "30", NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t host = 0, child = e2e_spawn_contained((char *const *)argv, env, r.dir, out, errp, agent, &host);
    ASSERT_GT(child, 0);
    for (int i = 0; i < 600 && !file_has(out, "ready"); i++)
        sleep_ms(100);
    snprintf(pid, sizeof pid, "%d", (int)host);
    const char *args[] = {"top", pid, "-b", "-n", "2", "--json", NULL};
    int ran = e2e_dnprof(&r, args) == 0 && r.status == 0;
    size_t len;
    char *text = e2e_read_file(r.out, &len);
    int objects = 0, named = 0, hot = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        char err[256];
        jv *o = json_parse(line, strlen(line), err, sizeof err);
        if (!o)
            continue;
        objects++;
        named += json_num(o, "pid") == (double)host;
        hot += strstr(line, HOT[0]) != NULL;
        json_free(o);
    }
    free(text);
    if (!ran || objects != 2)
        e2e_show_file("dnprof top said", r.err);
    e2e_kill(child);
    ASSERT(ran);
    ASSERT_EQ(objects, 2);
    ASSERT_EQ(named, 2); /* the pid the host knows it by, as top was asked */
    ASSERT_GE(hot, 1);
    char said[64];
    snprintf(said, sizeof said, "detached from pid %d", (int)host);
    ASSERT(file_has(r.err, said)); /* and the program runs on */
    return 0;
}
