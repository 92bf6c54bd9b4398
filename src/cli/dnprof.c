/* dnprof.c: the dnprof command: picks a subcommand from the table and runs it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct cmd_struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct cmd_struct commands[] = {
    {"run", cmd_run, "run a .NET program with the agent loaded and write a trace"},
    {"print", cmd_print, "print a trace as an indented event log, or as JSON"},
    {"report", cmd_report, "top functions, hottest paths and the call tree of a --calls trace"},
    {"convert", cmd_convert, "a --calls trace for speedscope, Perfetto, flamegraph.pl, or as HTML"},
    {"env", cmd_env, "print the shell exports that load the agent into every .NET program"},
    {"doctor", cmd_doctor, "check why the agent did (or did not) load"},
    {"ps", cmd_ps, "list the running .NET processes you can attach to"},
    {"attach", cmd_attach, "record a running .NET program, then detach and leave it as it was"},
    {"detach", cmd_detach, "stop an attached recording and unload the agent"},
    {"snapshot", cmd_snapshot, "take a heap snapshot of a running .NET program"},
    {"heap", cmd_heap, "report, paths and diff of heap snapshots: what holds the memory"},
};

static void usage(FILE *out) {
    fputs("usage: dnprof <command> [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "dnprof records what the .NET runtime does (class loads, JIT, GC, exceptions, ...)\n"
          "through the CoreCLR profiling API, and prints it as an indented event log.\n"
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
        return cmd->fn(2, help_argv);
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
    return cmd->fn(argc - 1, argv + 1);
}
