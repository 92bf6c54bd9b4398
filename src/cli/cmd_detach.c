/* cmd_detach.c: `dnprof detach PID`: tells the agent attached to a process to
 * detach (through its control socket), waits until the trace is complete and
 * the runtime has unloaded the agent, and says what was recorded. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ipc.h"

static void detach_help(void) {
    fputs("usage: dnprof detach [options] PID\n"
          "\n"
          "Stops the recording of the dnprof agent attached to PID (dnprof attach) and\n"
          "unloads it: the program goes on as it was before the attach, and can be\n"
          "attached to again. Waits until the trace is complete and the runtime has\n"
          "unloaded the agent, then prints one line about the trace.\n"
          "\n"
          "options:\n"
          "      --timeout SECONDS  how long to wait for the detach (default 30)\n"
          "  -q, --quiet            print nothing when all went well\n"
          "  -h, --help             print this help\n"
          "\n"
          "An agent loaded at start-up (dnprof run) cannot be detached: it records until\n"
          "the program exits.\n",
          stdout);
}

int cli_parse_pid(const char *cmd, const char *text, pid_t *out) {
    uint64_t v;
    if (cli_parse_u64(text, &v) != 0 || v == 0 || v > INT_MAX)
        return usage_error(cmd, "'%s' is not a process id", text);
    *out = (pid_t)v;
    return 0;
}

int cli_timeout_option(const char *cmd, const char *arg, uint64_t max, uint64_t *out) {
    if (cli_parse_u64(arg, out) != 0 || *out == 0 || *out > max)
        return usage_error(cmd, "--timeout wants seconds from 1 to %llu, not '%s'", (unsigned long long)max, arg);
    return 0;
}

int cli_agent_path_option(const char *cmd, const char *arg, const char **out) {
    if (arg[0] != '/')
        return usage_error(cmd, "--agent-path wants the agent's path as the program sees it, from its '/' "
                                "(/opt/dnprof/libdnprof.so), not '%s'", arg);
    *out = arg;
    return 0;
}

int cli_one_pid(const char *cmd, const char *self, int argc, char **argv, pid_t *pid) {
    if (optind != argc - 1)
        return optind >= argc ? usage_error(cmd, "which process? dnprof %s PID (dnprof ps lists them)", cmd)
                              : usage_error(cmd, "one process at a time: dnprof %s [options] PID", cmd);
    if (cli_parse_pid(cmd, argv[optind], pid) != 0)
        return CLI_EXIT_USAGE;
    if (*pid == getpid())
        return usage_error(cmd, "dnprof cannot %s", self);
    return 0;
}

int cmd_detach(int argc, char **argv) {
    enum { OPT_TIMEOUT = 256 };
    static const struct option longopts[] = {{"timeout", required_argument, NULL, OPT_TIMEOUT},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    uint64_t timeout_s = 30;
    int quiet = 0, c, bad;
    while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_TIMEOUT:
            if ((bad = cli_timeout_option("detach", optarg, 3600, &timeout_s)) != 0)
                return bad;
            break;
        case 'q': quiet = 1; break;
        case 'h': detach_help(); return 0;
        default: return cli_bad_option("detach", argv, c);
        }
    }
    if (optind != argc - 1)
        return usage_error("detach", optind >= argc ? "which process? dnprof detach PID"
                                                    : "one process at a time: dnprof detach PID");
    pid_t pid = 0;
    if (cli_parse_pid("detach", argv[optind], &pid) != 0)
        return CLI_EXIT_USAGE;

    char err[IPC_ERR_MAX], trace[PATH_MAX];
    ctl_sweep(geteuid());
    int fd = ctl_connect(pid, err, sizeof err);
    if (fd < 0) {
        error("%s", err);
        return 1;
    }
    if (ctl_status(fd, trace, sizeof trace, err, sizeof err) < 0) {
        close(fd);
        error("pid %d: %s", (int)pid, err);
        return 1;
    }
    uint64_t events = 0;
    int rc = ctl_detach(pid, fd, (int)timeout_s * 1000, &events, err, sizeof err);
    close(fd);
    if (rc < 0) {
        error("%s", err);
        return 1;
    }
    handshake_detached(pid, rc, quiet, "before the agent detached");
    /* An agent that dnprof snapshot attached has no trace of the user's: its
     * by-product (snapshot.PID.trace in the control directory) is removed. */
    const char *base = strrchr(trace, '/');
    int byproduct = base && !strncmp(base + 1, "snapshot.", 9) && access(trace, F_OK) != 0;
    if (!quiet && !byproduct)
        cli_trace_summary(trace, NULL);
    return 0;
}
