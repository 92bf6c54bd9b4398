/* cmd_top.c: `dnprof top PID` and `dnprof top -- PROGRAM [ARGS]`: a live view
 * of what a .NET program is doing (docs/top.md, top.h). By attach it loads the
 * agent as `dnprof attach PID --every` does (attach.h: the same options, the
 * same handshake, the same detach); from start-up it launches the program as
 * `dnprof run --every` does (cli_launch_run, in a thread of its own while the
 * view runs). Either way the agent cuts CPU samples, allocations, exceptions
 * and GC events into a window every --interval in a private session directory,
 * and this reads each window as it comes (window_each), deletes it, and shows
 * it: on the screen (top_view.c) or as text or JSON (top_batch.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "cli.h"
#include "sdk_process.h"
#include "session.h"
#include "top.h"

/* The smallest screen: the header, the column titles, ten rows, the key line. */
#define TOP_MIN_COLS 80
#define TOP_MIN_LINES 24

static void top_help(void) {
    fputs("usage: dnprof top [options] PID\n"
          "       dnprof top [options] -- PROGRAM [ARGS...]\n"
          "\n"
          "A live view of what a .NET program is doing now: the methods that burn CPU\n"
          "(sampled, self and total, in the last interval and since the start), what it\n"
          "allocates and throws, its GC, thread pool, CPU %, threads and memory,\n"
          "refreshed every --interval. By PID it attaches (as dnprof attach), and q or\n"
          "Ctrl-C detaches and leaves the program running as before; with -- it starts\n"
          "the program under the agent (as dnprof run), and q closes the view while the\n"
          "program runs to its end (its output goes to --log FILE, or nowhere). When the\n"
          "program exits, top says so and exits 0. When stdout is not a terminal, or with\n"
          "-b, one plain-text snapshot per interval instead (docs/top.md).\n"
          "\n"
          "options:\n"
          "  -d, --interval TIME   the refresh: 1s (default), 500ms, 5s; from 200ms to 1m\n",
          stdout);
    printf("      --rate HZ         CPU samples per second and thread (default %u)\n",
           dnp_setting_default(DNP_SET_SAMPLE_RATE));
    fputs("      --locks           lock contention too: contentions/s and waits by site\n"
          "  -b, --batch           plain text, one snapshot per interval, to stdout\n"
          "  -n, --count N         stop after N intervals\n"
          "      --json            batch mode, one JSON object per interval and line\n"
          "      --top N           rows per table in batch mode (default 10, at most 64)\n"
          "      --log FILE        from start-up: the program's stdout and stderr (default:\n"
          "                        none on the screen, stderr in batch mode)\n"
          "      --timeout SECONDS how long the runtime may take to load the agent (10)\n"
          "      --agent-path PATH with a PID: a libdnprof.so already in the program's\n"
          "                        filesystem (a container's image), as the program sees\n"
          "                        it: nothing is copied in (docs/containers.md)\n"
          "  -q, --quiet           no lines on stderr but errors (detached, exited, ...)\n"
          "  -h, --help            print this help\n"
          "\n"
          "keys: c CPU by method, a allocations by type, e exceptions by type, t throw\n"
          "sites, l lock waits, s sort column, i interval or since start, f freeze, ? help,\n"
          "q quit. The screen needs 80x24 at least; NO_COLOR turns colour off.\n"
          "\n"
          "examples:\n"
          "  dnprof top 4242\n"
          "  dnprof top -b -n 3 --json 4242 | jq .last.methods\n"
          "  dnprof top --log app.log -- dotnet app.dll\n",
          stdout);
}

typedef struct top_opts {
    int batch, json, quiet, locks;
    uint64_t count, rows, rate, timeout_s;
    long long interval_ms;
    const char *log, *agent_path;
    pid_t pid;
    char **prog;
} top_opts;

enum { OPT_RATE = 256, OPT_JSON, OPT_TOP, OPT_LOG, OPT_TIMEOUT, OPT_LOCKS, OPT_AGENT_PATH };

static int parse_options(int argc, char **argv, top_opts *o) {
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, 'd'}, {"rate", required_argument, NULL, OPT_RATE},
        {"batch", no_argument, NULL, 'b'},          {"count", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, OPT_JSON},      {"top", required_argument, NULL, OPT_TOP},
        {"log", required_argument, NULL, OPT_LOG},  {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"locks", no_argument, NULL, OPT_LOCKS},    {"quiet", no_argument, NULL, 'q'},
        {"agent-path", required_argument, NULL, OPT_AGENT_PATH},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->interval_ms = 1000;
    o->rows = 10;
    o->timeout_s = 10;
    const dnp_setting *rs = &dnp_settings[DNP_SET_SAMPLE_RATE];
    int c, rc;
    while ((c = getopt_long(argc, argv, ":d:bn:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if ((o->interval_ms = cli_parse_duration(optarg)) < 200 || o->interval_ms > 60000)
                return usage_error("top", "--interval wants a time from 200ms to 1m (1s, 500ms), not '%s'", optarg);
            break;
        case OPT_RATE:
            if (cli_parse_u64(optarg, &o->rate) != 0 || o->rate < rs->min || o->rate > rs->max)
                return usage_error("top", "--rate wants samples per second from %u to %u, not '%s'", rs->min, rs->max,
                                   optarg);
            break;
        case 'b': o->batch = 1; break;
        case 'n':
            if (cli_parse_u64(optarg, &o->count) != 0 || o->count == 0)
                return usage_error("top", "--count wants a number of intervals from 1, not '%s'", optarg);
            break;
        case OPT_JSON: o->json = o->batch = 1; break;
        case OPT_TOP:
            if (cli_parse_u64(optarg, &o->rows) != 0 || o->rows == 0 || o->rows > 64)
                return usage_error("top", "--top wants a number of rows from 1 to 64, not '%s'", optarg);
            break;
        case OPT_LOG: o->log = optarg; break;
        case OPT_TIMEOUT:
            if ((rc = cli_timeout_option("top", optarg, 600, &o->timeout_s)) != 0)
                return rc;
            break;
        case OPT_LOCKS: o->locks = 1; break;
        case OPT_AGENT_PATH:
            if ((rc = cli_agent_path_option("top", optarg, &o->agent_path)) != 0)
                return rc;
            break;
        case 'q': o->quiet = 1; break;
        case 'h': top_help(); return CLI_HELP_SHOWN;
        default: return cli_bad_option("top", argv, c);
        }
    }
    int dashes = optind > 1 && !strcmp(argv[optind - 1], "--");
    if (dashes) {
        if (optind >= argc)
            return usage_error("top", "which program? dnprof top -- dotnet app.dll");
        if (o->agent_path)
            return usage_error("top", "--agent-path goes with a PID (dnprof top --agent-path PATH PID): a program "
                                      "top starts loads the agent dnprof has");
        o->prog = argv + optind;
        int missing = cli_check_program("top", o->prog);
        if (missing)
            return missing;
    } else {
        if (optind >= argc)
            return usage_error("top", "which process? dnprof top PID (dnprof ps lists them), or dnprof top -- PROGRAM");
        if (optind != argc - 1)
            return usage_error("top", "one process at a time: dnprof top [options] PID");
        if (cli_parse_pid("top", argv[optind], &o->pid) != 0)
            return CLI_EXIT_USAGE;
        if (o->pid == getpid())
            return usage_error("top", "dnprof cannot watch itself");
        if (o->log)
            return usage_error("top", "--log goes with a program started by top (dnprof top --log FILE -- PROGRAM)");
    }
    if (!isatty(STDOUT_FILENO))
        o->batch = 1;
    return 0;
}

/* ---- signals ---- */

/* The terminal on fd holds at least 80x24: 0, or -1 after saying the size needed. */
static int screen_size_ok(int fd) {
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
        return 0; /* not known: ncurses will say */
    if (ws.ws_col >= TOP_MIN_COLS && ws.ws_row >= TOP_MIN_LINES)
        return 0;
    return error("the terminal is %ux%u: dnprof top needs at least %dx%d (enlarge it, or use -b for plain text)",
                 ws.ws_col, ws.ws_row, TOP_MIN_COLS, TOP_MIN_LINES);
}

/* ---- the loop ---- */

typedef enum { WATCH_QUIT, WATCH_COUNT, WATCH_EXITED, WATCH_DETACHED, WATCH_SMALL } watch_end;

typedef struct top_run {
    const top_opts *o;
    top_model m;
    top_show show;
    top_view *v;
    FILE *out;                  /* batch mode's output */
    const char *dir;            /* where the windows come */
    int ctl_fd;                 /* attach: the agent's control socket; -1 */
    atomic_int *prog_done;      /* start-up: the program has ended */
    uint64_t shown;
    int bad_said;
    int out_gone;               /* batch: stdout's reader left (| head): quit, detach */
} top_run;

static void on_window(void *ctx, const char *path) {
    top_run *r = ctx;
    if (r->o->count && r->shown >= r->o->count)
        return;
    char err[768];
    if (top_model_window(&r->m, path, err, sizeof err) != 0) {
        if (!r->bad_said++ && !r->v)
            warning("window left out: %s", err);
        return;
    }
    if (r->m.pid > 0)
        top_model_proc(&r->m);
    r->shown++;
    if (r->v) {
        if (!top_view_frozen(r->v))
            top_view_draw(r->v, &r->m, NULL);
    } else if (r->o->json) {
        top_print_json(r->out, &r->m, &r->show);
    } else {
        top_print_text(r->out, &r->m, &r->show);
    }
    if (!r->v && ferror(r->out))
        r->out_gone = 1;
}

/* What the control socket says: -1 nothing, else how the recording ended. */
static int control_said(int fd) {
    struct pollfd pf = {fd, POLLIN, 0};
    if (fd < 0 || poll(&pf, 1, 0) <= 0)
        return -1;
    char line[256];
    int got = ctl_read_line(fd, line, sizeof line, 5000);
    if (got == 0)
        return WATCH_EXITED;
    if (got == 1 && strncmp(line, DNP_CONTROL_DETACHED " ", sizeof DNP_CONTROL_DETACHED) == 0)
        return WATCH_DETACHED;
    return -1;
}

/* Shows each window as it comes until q, Ctrl-C, the count, or the program's end. */
static watch_end watch(top_run *r) {
    long long next_pass = 0;
    for (;;) {
        if (cli_stop_signal || r->out_gone)
            return WATCH_QUIT;
        int said = control_said(r->ctl_fd);
        int ended = said >= 0 || (r->prog_done && atomic_load(r->prog_done));
        if (ipc_now_ms() >= next_pass || ended) {
            window_each(r->dir, on_window, r);
            next_pass = ipc_now_ms() + 100;
        }
        if (r->o->count && r->shown >= r->o->count)
            return WATCH_COUNT;
        if (ended)
            return said == WATCH_DETACHED ? WATCH_DETACHED : WATCH_EXITED;
        if (r->v) {
            int k = top_view_key(r->v, 100);
            if (k == 1)
                return WATCH_QUIT;
            if (k < 0)
                return WATCH_SMALL;
        } else {
            struct pollfd pf = {r->ctl_fd, POLLIN, 0};
            poll(&pf, r->ctl_fd >= 0 ? 1 : 0, 100);
        }
    }
}

/* Screen or batch output, set up for r. 0, or -1 after saying why. */
static int open_output(top_run *r, FILE *tty, FILE *out) {
    r->out = out;
    if (r->o->batch)
        return 0;
    r->v = top_view_open(tty, tty, getenv("NO_COLOR") != NULL && *getenv("NO_COLOR"));
    if (!r->v)
        return -1;
    top_view_draw(r->v, &r->m, NULL);
    return 0;
}

/* Closes the screen (showing line a moment) and says line on stderr, unless
 * said says that the attach machinery says it itself. */
static void close_output(top_run *r, const char *line, int said) {
    if (r->v)
        top_view_close(r->v, line);
    if (line && !said && !r->o->quiet)
        fprintf(stderr, "%s\n", line);
    r->v = NULL;
}

/* The last line, by how the watch ended. */
static void end_line(const top_run *r, watch_end how, char *line, size_t cap) {
    long pid = r->m.pid;
    switch (how) {
    case WATCH_EXITED: snprintf(line, cap, "dnprof top: pid %ld exited", pid); break;
    case WATCH_DETACHED: snprintf(line, cap, "dnprof top: pid %ld: detached from elsewhere (dnprof detach)", pid); break;
    case WATCH_SMALL:
        snprintf(line, cap, "dnprof top: the terminal became smaller than %dx%d: enlarge it, or use -b", TOP_MIN_COLS,
                 TOP_MIN_LINES);
        break;
    default: line[0] = 0;
    }
}

/* ---- by attach ---- */

static int top_attach(const top_opts *o, const char *session) {
    static attach_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.pid = o->pid;
    ao.events = "threads,exceptions";
    ao.sample = 1;
    ao.sample_rate = o->rate;
    ao.alloc = ao.exceptions = ao.gc = 1;
    ao.threadpool = 2; /* the pool's line read from its objects, no EventCounters (pool_state.c) */
    ao.locks = o->locks;
    ao.every_ms = (unsigned)o->interval_ms;
    ao.timeout_s = o->timeout_s;
    ao.agent_path = o->agent_path;
    ao.quiet = 1;
    ao.duration_ms = -1;
    static char out[PATH_MAX + 64], def[64];
    snprintf(def, sizeof def, "dnprof-%d.trace", (int)o->pid);
    snprintf(out, sizeof out, "%s/%s", session, def);
    ao.output = out;
    if (!o->batch && screen_size_ok(STDOUT_FILENO) != 0)
        return 1;
    static attach_live a;
    if (attach_begin(&ao, def, &a) != 0)
        return 1;
    cli_catch_stop_signals();
    /* A reader that leaves (dnprof top -b PID | head) ends top as q does:
     * detached, not killed with the agent left in. (Not from start-up: the
     * program would inherit the ignored signal.) */
    signal(SIGPIPE, SIG_IGN);
    static top_run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    top_model_init(&r.m, o->pid);
    r.m.gc_on = 1;
    r.m.locks_on = o->locks;
    r.show.rows = (unsigned)o->rows;
    static char windows[PATH_MAX]; /* the session, or in a container the windows' directory there */
    if (handshake_windows_dir(o->pid, &a.blob, windows, sizeof windows) != 0)
        snprintf(windows, sizeof windows, "%s", session);
    r.dir = windows;
    r.ctl_fd = a.fd;
    snprintf(r.m.cmdline, sizeof r.m.cmdline, "%s", a.proc.comm);
    top_model_proc(&r.m);
    int rc = 0;
    watch_end how = WATCH_QUIT;
    if (open_output(&r, NULL, stdout) != 0)
        rc = 1;
    else
        how = watch(&r);
    char line[256];
    end_line(&r, how, line, sizeof line);
    /* attach_end says that the program exited, or was detached from elsewhere */
    close_output(&r, line[0] ? line : NULL, how == WATCH_EXITED || how == WATCH_DETACHED);
    record_end re = how == WATCH_EXITED ? END_EXITED : how == WATCH_DETACHED ? END_DETACHED_ELSEWHERE : END_STOP;
    if (attach_end(&ao, &a, re) != 0)
        rc = 1;
    else if (re == END_STOP && !o->quiet)
        fprintf(stderr, "dnprof top: detached from pid %d; it runs on without the agent\n", (int)o->pid);
    if (strcmp(windows, session) != 0)
        cli_session_remove(windows); /* in the container: what the agent left there */
    top_model_free(&r.m);
    return rc;
}

/* ---- from start-up ---- */

typedef struct launch_thread {
    cli_launch l;
    char **prog;
    int ran;
    atomic_int done;
} launch_thread;

static void *launch_main(void *arg) {
    launch_thread *lt = arg;
    lt->ran = cli_launch_run(&lt->l, lt->prog);
    atomic_store(&lt->done, 1);
    return NULL;
}

/* The agent's settings for the program (as dnprof run --sample --alloc
 * --exceptions --gc --threadpool --every would set them). 0 or 1. */
static int startup_settings(const top_opts *o) {
    char every[24], rate[24];
    snprintf(every, sizeof every, "%lld", o->interval_ms);
    snprintf(rate, sizeof rate, "%u",
             o->rate ? (unsigned)o->rate : dnp_setting_default(DNP_SET_SAMPLE_RATE));
    return cli_setting_set(DNP_SET_SAMPLE, "cpu") || cli_setting_set(DNP_SET_SAMPLE_RATE, rate) ||
                   cli_setting_set(DNP_SET_ALLOC, "1") || cli_setting_set(DNP_SET_EXC_STACKS, "1") ||
                   cli_setting_set(DNP_SET_GC, "1") || cli_setting_set(DNP_SET_THREADPOOL, "state") ||
                   cli_setting_set(DNP_SET_EVERY, every) ||
                   (o->locks && cli_setting_set(DNP_SET_LOCKS, "1"))
               ? 1
               : 0;
}

/* Where the program's output goes (fds 0, 1, 2 of the child, set here before
 * the launch and put back after): the screen's program writes to --log or
 * nowhere and reads nothing; in batch mode its stdout goes to stderr. The
 * saved descriptors into saved[3]. 0, or -1 after saying why. */
static int redirect_program(const top_opts *o, int saved[3]) {
    for (int i = 0; i < 3; i++)
        saved[i] = dup(i);
    int fd = -1;
    if (o->log) { /* 0600, a symbolic link replaced, as every file dnprof writes */
        FILE *f = cli_create_output(o->log);
        if (!f)
            return error("cannot write the program's output to '%s': %s", o->log, strerror(errno));
        fd = dup(fileno(f));
        fclose(f);
    } else {
        fd = o->batch ? dup(STDERR_FILENO) : open("/dev/null", O_WRONLY | O_CLOEXEC);
    }
    if (fd < 0)
        return error("cannot redirect the program's output: %s", strerror(errno));
    if (!o->batch) {
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            close(nul);
        }
        dup2(fd, STDERR_FILENO);
    }
    dup2(fd, STDOUT_FILENO);
    close(fd);
    return 0;
}

static void restore_fds(int saved[3]) {
    for (int i = 0; i < 3; i++)
        if (saved[i] >= 0) {
            dup2(saved[i], i);
            close(saved[i]);
            saved[i] = -1;
        }
}

static int top_startup(const top_opts *o, const char *session) {
    cli_agent agent;
    char err[512];
    if (cli_agent_find(&agent, err, sizeof err) != 0)
        return error("%s", err), 1;
    FILE *tty = NULL;
    if (!o->batch && (!(tty = fopen("/dev/tty", "r+e")) || screen_size_ok(fileno(tty)) != 0)) {
        if (!tty)
            error("cannot open the terminal (/dev/tty): %s; use -b for plain text", strerror(errno));
        if (tty)
            fclose(tty);
        return 1;
    }
    if (startup_settings(o) != 0)
        return 1;
    static launch_thread lt;
    static char trace[PATH_MAX + 32];
    memset(&lt, 0, sizeof lt);
    snprintf(trace, sizeof trace, "%s/dnprof-%%p.trace", session);
    lt.l.agent = agent.path;
    lt.l.events = "threads,exceptions";
    lt.l.output = trace;
    lt.l.session = session;
    lt.l.sdk_aside = dnp_sdk_starts_program(o->prog); /* dotnet run: the program's view, not MSBuild's */
    lt.prog = o->prog;
    int saved[3] = {-1, -1, -1};
    FILE *out = fdopen(dup(STDOUT_FILENO), "w");
    if (!out || redirect_program(o, saved) != 0) {
        restore_fds(saved);
        if (tty)
            fclose(tty);
        return 1;
    }
    pthread_t th;
    /* Our own output goes to out (batch) or the terminal (the screen) meanwhile:
     * the descriptors are put back once the view is closed. */
    int started = pthread_create(&th, NULL, launch_main, &lt) == 0;
    static top_run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    top_model_init(&r.m, 0);
    r.m.gc_on = 1;
    r.m.locks_on = o->locks;
    r.show.rows = (unsigned)o->rows;
    r.dir = session;
    r.ctl_fd = -1;
    r.prog_done = &lt.done;
    watch_end how = WATCH_EXITED;
    if (started && open_output(&r, tty, out) == 0)
        how = watch(&r);
    char line[256];
    end_line(&r, how, line, sizeof line);
    close_output(&r, line[0] ? line : NULL, 1);
    restore_fds(saved);
    if (line[0] && how != WATCH_EXITED && !o->quiet)
        fprintf(stderr, "%s\n", line);
    if (started && !atomic_load(&lt.done) && !o->quiet)
        fprintf(stderr, "dnprof top: the view is closed; %s runs on to its end%s%s\n", o->prog[0],
                o->log ? ": its output goes to " : "", o->log ? o->log : "");
    if (started)
        pthread_join(th, NULL);
    if (tty)
        fclose(tty);
    fclose(out);
    top_model_free(&r.m);
    if (!started || lt.ran != 0)
        return 1;
    if (lt.l.exec_errno)
        return error("cannot run '%s': %s", o->prog[0], strerror(lt.l.exec_errno)), CLI_EXIT_NOEXEC;
    if (how == WATCH_EXITED && !o->quiet)
        fprintf(stderr, "dnprof top: %s (pid %ld) exited with %d\n", o->prog[0], r.m.pid,
                cli_exit_code(lt.l.status));
    return cli_exit_code(lt.l.status);
}

int cmd_top(int argc, char **argv) {
    static top_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return cli_done(rc);
    char session[PATH_MAX];
    if (cli_session_create(session, sizeof session) != 0)
        return 1;
    rc = o.prog ? top_startup(&o, session) : top_attach(&o, session);
    cli_session_remove(session);
    return rc;
}
