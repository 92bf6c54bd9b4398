/* dnprof.c: the dnprof command: picks a subcommand from the table and runs it,
 * with what every command shares done once here (git's run_builtin): getopt
 * reports nothing itself (each command says what was wrong, cli_bad_option),
 * and a command whose results go to stdout has SIGPIPE ignored (a closed pipe,
 * `dnprof print t | head`, is a quiet end) and its stdout checked at the end. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Command flags. */
#define CMD_STDOUT 0x1 /* writes its results to stdout (not the program's: not run) */

struct cmd_struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned flags;
    const char *summary;
};

static const struct cmd_struct commands[] = {
    {"run", cmd_run, 0, "run a .NET program with the agent loaded and write a trace"},
    {"print", cmd_print, CMD_STDOUT, "print a trace as an indented event log, or as JSON"},
    {"report", cmd_report, CMD_STDOUT, "what a trace adds up to: CPU, calls, exceptions, allocations, locks, waits, GC, pool"},
    {"convert", cmd_convert, CMD_STDOUT, "a trace or heap snapshot for speedscope, Perfetto, pprof, DevTools, HTML, ..."},
    {"env", cmd_env, CMD_STDOUT, "print the shell exports that load the agent into every .NET program"},
    {"doctor", cmd_doctor, 0, "check why the agent did (or did not) load"},
    {"ps", cmd_ps, CMD_STDOUT, "list the running .NET processes you can attach to"},
    {"attach", cmd_attach, 0, "record a running .NET program, then detach and leave it as it was"},
    {"top", cmd_top, 0, "a live view of a running .NET program: CPU by method, allocations, exceptions, GC"},
    {"detach", cmd_detach, 0, "stop an attached recording and unload the agent"},
    {"snapshot", cmd_snapshot, 0, "take a heap snapshot of a running .NET program"},
    {"push", cmd_push, 0, "ship the windows of agents loaded with " DNP_ENV_EVERY " to Pyroscope or files"},
    {"heap", cmd_heap, CMD_STDOUT, "report, paths and diff of heap snapshots: what holds the memory"},
};

static int run_command(const struct cmd_struct *cmd, int argc, char **argv) {
    opterr = 0;
    optind = 1;
    if (cmd->flags & CMD_STDOUT)
        signal(SIGPIPE, SIG_IGN);
    int rc = cmd->fn(argc, argv);
    if (!(cmd->flags & CMD_STDOUT))
        return rc;
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    int e = errno;
    struct pollfd p = {STDOUT_FILENO, 0, 0}; /* a pipe whose reader is gone: POLLERR */
    if (e == EPIPE || (poll(&p, 1, 0) == 1 && (p.revents & POLLERR)))
        return 0; /* the reader left (| head): a quiet end for every command alike, whatever
                   * the command made of its failed writes */
    if (rc == 0) {
        error("cannot write the output: %s", strerror(e ? e : EIO));
        return 1;
    }
    return rc;
}

static void usage(FILE *out) {
    fputs("usage: dnprof <command> [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "dnprof records what a .NET program and its runtime do (where the CPU goes, calls,\n"
          "exceptions, allocations, lock contention and waits, GC pauses, the heap; class\n"
          "loads, JIT, threads) through the CoreCLR profiling API, and turns the trace into\n"
          "reports, an indented event log, or files for speedscope, Perfetto and pprof.\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "example:\n"
          "  dnprof run -o app.trace -- dotnet app.dll\n"
          "  dnprof print app.trace | less\n"
          "\n"
          "'dnprof <command> --help' describes a command; 'dnprof --version' prints the version.\n",
          out);
}

static const struct cmd_struct *find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        const struct cmd_struct *cmd = find_command(argv[2]);
        if (!cmd) {
            error("unknown command '%s' (see dnprof --help)", argv[2]);
            return CLI_EXIT_USAGE;
        }
        char *help_argv[] = {argv[2], "--help", NULL};
        return run_command(cmd, 2, help_argv);
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("dnprof %s\n", DNPROF_VERSION);
        return 0;
    }
    const struct cmd_struct *cmd = find_command(name);
    if (!cmd) {
        if (name[0] == '-')
            error("unknown option '%s' (see dnprof --help)", name);
        else
            error("unknown command '%s' (see dnprof --help)", name);
        return CLI_EXIT_USAGE;
    }
    return run_command(cmd, argc - 1, argv + 1);
}
