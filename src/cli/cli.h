/* cli.h: the dnprof front end: its subcommands and the helpers they share.
 *
 * Each subcommand is one file (cmd_*.c) with an entry point taking the argv that
 * starts at its own name; dnprof.c holds the table. Helpers: messages (cli.c),
 * trace strings as text or JSON (text.c), finding the agent (agent.c), the
 * session directory (sessiondir.c) and launching a program with the agent loaded
 * (launch.c). */
#ifndef DNP_CLI_H
#define DNP_CLI_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "settings.h"

#ifndef DNPROF_VERSION
#define DNPROF_VERSION "0.0.0"
#endif

/* ---- subcommands: return the process exit code ---- */
int cmd_run(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
/* dnprof doctor PID (doctor_pid.c): whether one can attach to pid (with the
 * agent at agent_path as it sees it, --agent-path; NULL: dnprof's own); the
 * exit status. */
int doctor_pid(pid_t pid, const char *agent_path);
int cmd_ps(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_heap(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_top(int argc, char **argv);
/* `dnprof convert --format heapsnapshot FILE` (cmd_heap.c); output NULL: FILE.heapsnapshot. */
int heap_convert_heapsnapshot(const char *path, const char *output);

/* "dnprof: trace PATH[ (who)]: N events, T s, status" on stderr, as `dnprof
 * run` ends (cmd_run.c). */
void cli_trace_summary(const char *path, const char *who);

/* What a recording asked for, for the line after the summary that names the
 * command reading it: "dnprof: read it with: dnprof report --locks T (also
 * report --gc, --waits)", or dnprof print when no report applies. */
typedef struct cli_recorded {
    int profile; /* samples, calls or traced methods: dnprof report */
    int exceptions, alloc, locks, gc, threadpool;
} cli_recorded;
void cli_next_step(const cli_recorded *r, const char *path);
/* A process id argument of cmd; 0, or the usage error's exit code (cmd_detach.c). */
int cli_parse_pid(const char *cmd, const char *text, pid_t *out);
/* The one process id after cmd's options (argv[optind]) into *pid: 0, or the
 * usage error when there is none or more than one, when it is no process id,
 * or when it is dnprof's own ("dnprof cannot " self) (cmd_detach.c). */
int cli_one_pid(const char *cmd, const char *self, int argc, char **argv, pid_t *pid);
/* --timeout of cmd: whole seconds from 1 to max into *out: 0, or the usage
 * error's exit code (cmd_detach.c). */
int cli_timeout_option(const char *cmd, const char *arg, uint64_t max, uint64_t *out);
/* --agent-path of cmd: a path from '/', as the program sees it, into *out: 0,
 * or the usage error's exit code (cmd_detach.c). */
int cli_agent_path_option(const char *cmd, const char *arg, const char **out);

/* What a subcommand's option parser returns when it printed the help: the
 * command is done, with exit code 0 (cli_done). */
#define CLI_HELP_SHOWN (-1)
#define cli_done(rc) ((rc) == CLI_HELP_SHOWN ? 0 : (rc))

/* Exit codes besides 0 and 1. */
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_NOEXEC 127

/* ---- messages (cli.c), all on stderr ---- */
/* "dnprof: <message>"; returns -1. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SIGINT, SIGTERM and SIGHUP (Ctrl-C, kill, a closed terminal) each end a
 * recording, a follower or a view cleanly: the handler only notes the signal
 * in cli_stop_signal, which the command's loop reads. */
extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop_signals(void);
/* "dnprof: warning: <message>". */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "dnprof <cmd>: <message> (see dnprof <cmd> --help)"; returns CLI_EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usage error for getopt_long's '?' or ':' result (opterr must be 0). */
int cli_bad_option(const char *cmd, char **argv, int result);
/* The one trace file after the options (argv[optind], getopt's) into *path: 0,
 * or the usage error when there is none (naming usage, "dnprof print
 * [options] FILE") or more than one. */
int cli_one_file(const char *cmd, const char *usage, int argc, char **argv, const char **path);

/* ---- small formatting helpers (cli.c) ---- */
/* 12345 -> "12,345" into buf (at least 32 bytes); returns buf. Every count a
 * person reads (summaries, reports) is written this way. */
char *cli_fmt_count(uint64_t n, char *buf);
/* The same as an expression for one printf: printf("%s caught", CLI_COUNT(n)). */
#define CLI_COUNT(n) cli_fmt_count((uint64_t)(n), (char[32]){0})
/* "s" after a count of anything but one: "%zu collection%s", n, CLI_PLURAL(n) */
#define CLI_PLURAL(n) ((n) == 1 ? "" : "s")
/* 1536 -> "1.5 KiB" into buf (at least 32 bytes); returns buf. */
char *cli_fmt_bytes(uint64_t n, char *buf);
/* argv as one line, words with spaces or quotes quoted for a shell, into buf. */
char *cli_fmt_argv(char *const argv[], char *buf, size_t len);
/* path relative to the cwd when it lies under it, else path itself. */
const char *cli_short_path(const char *path);
/* When path is a heap snapshot (.dnheap), says so with what reads it (an error
 * line) and returns 1; 0 otherwise (a trace, or nothing readable: the
 * caller's own open says why). */
int cli_not_a_snapshot(const char *path);
/* Whether an --events list names the calls family: a family that print and
 * report read (CallNode, ...), but that no event mask records; the enter/leave
 * hooks come with dnprof run --calls. */
int cli_events_name_calls(const char *events);
/* An --events list of cmd (doctor, env) that records something: 0, or the
 * usage error's exit code after saying what is wrong. */
int cli_check_events(const char *cmd, const char *events);
/* prog is `dotnet [exec] [host options] APP.dll ...` with APP.dll missing: says
 * so on one line (the host would take the name for an SDK command and run
 * the SDK instead) and returns CLI_EXIT_NOEXEC; else 0. */
int cli_check_dotnet_app(const char *cmd, char *const *prog);
/* The command is one the agent cannot record: cli_check_dotnet_app's case;
 * prog[0] (a path, or a name looked up on PATH) a program published with
 * Native AOT, which no CoreCLR runs; or an assembly (APP.dll) given as the
 * program, which only dotnet runs. Says so on one line with what to do
 * instead and returns CLI_EXIT_NOEXEC; else 0 (program_check.c, as
 * cli_check_dotnet_app). */
int cli_check_program(const char *cmd, char *const *prog);
/* The file at path is a Native AOT program (its ELF sections say so): 1 or 0. */
int cli_is_native_aot(const char *path);
/* name looked up on PATH as the shell would, the first executable match into
 * out: 0, or -1 when there is none. */
int cli_find_in_path(const char *name, char *out, size_t len);
/* Creates a file the front end writes (an export, a converted snapshot) as the
 * agent creates a trace (dnp_file_create, docs/agent.md): 0600 whatever the
 * umask allows beyond it, a symbolic link at path replaced and never written
 * through. NULL with errno. */
FILE *cli_create_output(const char *path);
/* Makes path absolute against the cwd (no symlinks resolved, need not exist).
 * Returns 0, or -1 when the result does not fit. */
int cli_abs_path(const char *path, char *out, size_t len);
/* The event family words, comma-separated, wrapped, each line after indent. */
void cli_print_families(FILE *out, const char *indent);
/* Parses a non-negative decimal number; 0 or -1. */
int cli_parse_u64(const char *text, uint64_t *out);

/* ---- strings from a trace (text.c): invalid UTF-8 bytes become U+FFFD ---- */
/* For a terminal: control characters as C escapes (\n, \x01); quoted: '"' and
 * '\' escaped too, for a string the caller puts in double quotes. */
void cli_put_text(FILE *out, const char *s, int quoted);
/* A JSON string in double quotes, or null for NULL. */
void cli_put_json(FILE *out, const char *s);

/* ---- the agent (agent.c) ---- */
typedef struct cli_agent {
    char path[PATH_MAX]; /* absolute, symlinks resolved */
    const char *how;     /* DNP_ENV_AGENT, "next to dnprof", ... */
} cli_agent;

/* Finds libdnprof.so: DNP_ENV_AGENT, else next to the dnprof executable, else
 * ../lib/dnprof/ and ../lib/ from there. Returns 0, or -1 with one line in err
 * naming every path tried. */
int cli_agent_find(cli_agent *out, char *err, size_t errlen);

/* ---- the session directory (sessiondir.c) ---- */
typedef struct cli_session_agent {
    long pid;
    char trace[PATH_MAX];
    char cmdline[512];
    int started;
    char runtime[256]; /* what "started" says of the runtime */
    char error[512]; /* empty unless the agent stepped aside */
    int complete;
    uint64_t complete_events;
    char said[4096]; /* the agent's messages ("say" lines), one a line; cut when too many */
} cli_session_agent;

/* Creates a fresh private (0700) directory under $TMPDIR or /tmp. */
int cli_session_create(char *dir, size_t len);
/* Reads every agent.<pid> file of dir, sorted by pid. Returns the count (0 when
 * none), with *out to free(), or -1. */
int cli_session_read(const char *dir, cli_session_agent **out);
/* Removes dir and the files in it. */
void cli_session_remove(const char *dir);

/* ---- settings (src/common/settings.def) ---- */
/* Sets the variable of setting id to value, which must be one of its values
 * (else a bug: said, -1). cmd_env.c. */
int cli_setting_set(int id, const char *value);

/* ---- launching a program with the agent (launch.c) ---- */
typedef struct cli_launch {
    /* in */
    const char *agent;    /* absolute path of libdnprof.so */
    const char *events;   /* DNP_ENV_EVENTS */
    const char *output;   /* absolute trace path, may hold %p; NULL: ./dnprof-<pid>.trace */
    const char *flush_ms; /* DNP_ENV_FLUSH_MS, NULL to leave it alone */
    const char *session;  /* DNP_ENV_SESSION directory */
    int debug_strings;    /* PAL_OUTPUTDEBUGSTRING=1: the runtime says why a load failed */
    int capture_stderr;   /* echo the child's stderr and keep a copy in captured */
    int sdk_aside;        /* DNP_ENV_SDK_ASIDE: the command is dotnet run, test or watch (sdk_process.h; not doctor's) */
    /* out */
    pid_t pid;
    char trace[PATH_MAX]; /* the root process's trace path */
    int exec_errno;       /* the program could not be run (0: it ran) */
    int status;           /* its wait status */
    char *captured;       /* its stderr, NUL-terminated, when capture_stderr (free it) */
    size_t ncaptured;
} cli_launch;

/* Runs argv (PATH searched) with the agent's environment, stdin/stdout shared,
 * SIGINT/SIGQUIT ignored and SIGTERM/SIGHUP forwarded while it runs, and waits
 * for it. Returns 0 once it ran (or could not be exec'd: see exec_errno), -1
 * with a message printed when it could not be started at all. */
int cli_launch_run(cli_launch *l, char *const argv[]);
/* The exit code that mirrors a wait status: the code, or 128 + signal. */
int cli_exit_code(int status);
/* The variables now set that silently disable profiling (DOTNET_EnableDiagnostics=0,
 * DOTNET_EnableDiagnostics_Profiler=0, or their COMPlus_ names): fills names
 * with up to CLI_DISABLING_MAX of them and returns how many. */
#define CLI_DISABLING_MAX 4
int cli_disabling_vars(const char *names[CLI_DISABLING_MAX]);

#endif
