/* cmd_env.c: `dnprof env`: the exports that load the agent into every .NET
 * program started from a shell, like DNProfiler's profiling_on.bat (docs/design-notes.md#activation):
 *   eval "$(dnprof env)"      (sh, bash, zsh)
 *   dnprof env --shell fish | source
 * and `dnprof env --list`, every setting of the table (settings.def); and the
 * front end's one writer of a setting into the environment (cli_setting_set). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "families.h"
#include "session.h"

static void env_help(void) {
    fputs("usage: dnprof env [options]\n"
          "\n"
          "Prints the shell commands that load dnprof's agent into every .NET program\n"
          "started afterwards from the same shell (DNProfiler's profiling_on.bat), and a\n"
          "comment saying how to turn it off again. Each program writes its own trace.\n"
          "\n"
          "options:\n"
          "  -e, --events LIST   what to record (see dnprof run --help; default: default)\n"
          "  -o, --output FILE   the trace file; %p in it becomes the pid\n"
          "                      (default: dnprof-<pid>.trace in each program's working\n"
          "                      directory)\n"
          "      --shell SHELL   sh (also bash, zsh) or fish (default: sh)\n"
          "      --list          every DNPROF_ variable: its values, default and meaning\n"
          "      --markdown      with --list: as the table of docs/settings.md\n"
          "  -h, --help          print this help\n"
          "\n"
          "examples:\n"
          "  eval \"$(dnprof env --events classes,jit)\"; dotnet app.dll\n"
          "  dnprof env --shell fish | source\n",
          stdout);
}

/* A single-quoted word for sh ('it'\''s') or fish ('it\'s'). */
static void put_quoted(const char *s, int fish) {
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'')
            fputs(fish ? "\\'" : "'\\''", stdout);
        else if (fish && *s == '\\')
            fputs("\\\\", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

int cli_setting_set(int id, const char *value) {
    unsigned v;
    if (dnp_setting_parse(id, value, &v) < 0) { /* a bug of the front end's, not the person's */
        char msg[512];
        dnp_setting_bad_text(id, value, msg, sizeof msg);
        return error("%s", msg);
    }
    if (setenv(dnp_settings[id].name, value, 1) != 0)
        return error("cannot set %s: out of memory", dnp_settings[id].name);
    return 0;
}

/* dnprof env --list: "NAME (type, values; default D; read by R)", then the help;
 * with --markdown, the table of docs/settings.md. */
static int list_settings(int markdown) {
    if (markdown) {
        fputs("| variable | type | values | default | read by | meaning |\n|---|---|---|---|---|---|\n", stdout);
        for (int i = 0; i < DNP_SET_COUNT; i++) {
            char row[2048];
            dnp_setting_doc_row(i, row, sizeof row);
            fputs(row, stdout);
        }
        return fflush(stdout) == 0 ? 0 : 1;
    }
    for (int i = 0; i < DNP_SET_COUNT; i++) {
        const dnp_setting *s = &dnp_settings[i];
        char values[256];
        dnp_setting_values(i, values, sizeof values);
        printf("%s (%s, %s; default %s; read by %s)\n    %s\n", s->name, dnp_setting_type_words[s->type], values,
               *s->def ? s->def : "none", dnp_setting_reader_words[s->reader], s->help);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static void put_export(const char *name, const char *value, int fish) {
    printf(fish ? "set -gx %s " : "export %s=", name);
    put_quoted(value, fish);
    putchar('\n');
}

int cmd_env(int argc, char **argv) {
    enum { OPT_SHELL = 256, OPT_LIST, OPT_MARKDOWN };
    static const struct option longopts[] = {
        {"events", required_argument, NULL, 'e'}, {"output", required_argument, NULL, 'o'},
        {"shell", required_argument, NULL, OPT_SHELL}, {"list", no_argument, NULL, OPT_LIST},
        {"markdown", no_argument, NULL, OPT_MARKDOWN}, {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *events = NULL, *output = NULL, *shell = "sh";
    int c, list = 0, markdown = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":e:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': events = optarg; break;
        case 'o': output = optarg; break;
        case OPT_SHELL: shell = optarg; break;
        case OPT_LIST: list = 1; break;
        case OPT_MARKDOWN: markdown = 1; break;
        case 'h': env_help(); return 0;
        default: return cli_bad_option("env", argv, c);
        }
    }
    if (optind < argc)
        return usage_error("env", "unexpected argument '%s'", argv[optind]);
    if (markdown && !list)
        return usage_error("env", "--markdown goes with --list");
    if (list)
        return list_settings(markdown);
    int fish;
    if (!strcmp(shell, "fish"))
        fish = 1;
    else if (!strcmp(shell, "sh") || !strcmp(shell, "bash") || !strcmp(shell, "zsh") || !strcmp(shell, "dash"))
        fish = 0;
    else
        return usage_error("env", "unknown shell '%s': use sh or fish", shell);

    if (cli_events_name_calls(events))
        return usage_error("env", "--events calls records nothing by itself: the calls come with "
                                  "dnprof run --calls");
    char err[512];
    dnp_event_config cfg;
    if (dnp_events_parse(events, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "dnprof env: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    cli_agent agent;
    if (cli_agent_find(&agent, err, sizeof err) != 0) {
        error("%s", err);
        return 1;
    }
    char out_abs[PATH_MAX];
    if (output && (!*output || cli_abs_path(output, out_abs, sizeof out_abs) != 0))
        return usage_error("env", "cannot use '%s' as the trace path", output);

    const char *off[CLI_DISABLING_MAX];
    int noff = cli_disabling_vars(off);
    for (int i = 0; i < noff; i++)
        warning("%s=%s is set: the runtime will not load the agent (unset %s)", off[i], getenv(off[i]), off[i]);

    /* What a later `unset` must take away again. */
    const char *ours[] = {DNP_ENV_ENABLE, DNP_ENV_PROFILER, DNP_ENV_PROFILER_PATH, DNP_ENV_EVENTS, DNP_ENV_OUTPUT};
    size_t nours = output ? 5 : 4;
    printf("# dnprof %s: load the agent %s into every .NET program started from this shell.\n", DNPROF_VERSION,
           agent.path);
    printf("# To turn it off: %s", fish ? "set -e" : "unset");
    for (size_t i = 0; i < nours; i++)
        printf(" %s", ours[i]);
    putchar('\n');
    if (output && !strstr(out_abs, "%p"))
        printf("# Every program started from this shell writes %s; put %%p in the name for one trace each.\n",
               out_abs);

    /* Left over from another profiler or a dnprof run, these would win or mislead. */
    static const char *const stale[] = {"CORECLR_PROFILER_PATH_64", "CORECLR_PROFILER_PATH_32",
                                        "CORECLR_PROFILER_PATH_ARM64", "CORECLR_PROFILER_PATH_ARM32",
                                        DNP_ENV_SESSION, DNP_ENV_ROOT_PID, DNP_ENV_OUTPUT};
    size_t nstale = sizeof stale / sizeof stale[0] - (output ? 1 : 0);
    for (size_t i = 0; i < nstale; i++)
        if (getenv(stale[i]))
            printf(fish ? "set -e %s\n" : "unset %s\n", stale[i]);

    put_export(DNP_ENV_ENABLE, "1", fish);
    put_export(DNP_ENV_PROFILER, DNP_CLSID_TEXT, fish);
    put_export(DNP_ENV_PROFILER_PATH, agent.path, fish);
    put_export(DNP_ENV_EVENTS, events && *events ? events : DNP_EVENTS_DEFAULT, fish);
    if (output)
        put_export(DNP_ENV_OUTPUT, out_abs, fish);
    return fflush(stdout) == 0 ? 0 : 1;
}
