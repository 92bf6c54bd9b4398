/* cmd_snapshot.c: `dnprof snapshot PID`: a heap snapshot of a running .NET
 * program (docs/heap.md). When the agent is loaded already (dnprof run, or an
 * attach in progress), it is asked on its control socket and stays; otherwise
 * it is attached for the snapshot (the runtime's AttachProfiler, as dnprof
 * attach does) and detached afterwards: the program runs on as before. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach_blob.h"
#include "cli.h"
#include "ipc.h"
#include "session.h"

static void snapshot_help(void) {
    fputs("usage: dnprof snapshot [options] PID\n"
          "\n"
          "Takes a heap snapshot of a running .NET program: one full, blocking GC during\n"
          "which the agent records every root, every object (class, size, references) and\n"
          "every ConditionalWeakTable dependent handle, streamed to FILE as the GC walks the\n"
          "heap. If dnprof's agent is not in the process it is attached for the snapshot and\n"
          "detached again (the runtime unloads it a moment after dnprof returns); if it is\n"
          "(dnprof run, dnprof attach), it is asked and stays.\n"
          "Read the snapshot with 'dnprof heap report|paths|diff' or convert it for a\n"
          "browser's DevTools with 'dnprof convert --format heapsnapshot'.\n"
          "\n"
          "options:\n"
          "  -o, --output FILE     the snapshot file, replaced if it exists (default:\n"
          "                        dnprof-<pid>.dnheap in the current directory); the program\n"
          "                        writes it, so its user must be able to\n"
          "      --timeout SECONDS how long the runtime may take to load the agent (default 10)\n"
          "  -q, --quiet           print nothing but errors\n"
          "  -h, --help            print this help\n"
          "\n"
          "examples:\n"
          "  dnprof snapshot 4242 -o before.dnheap\n"
          "  dnprof heap report before.dnheap\n",
          stdout);
}

static int connect_unix(const char *path) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* One command line of any length (ctl_send keeps to short ones). */
static int send_line(int fd, const char *cmd) {
    char line[PATH_MAX + 64];
    int n = snprintf(line, sizeof line, "%s\n", cmd);
    if (n <= 0 || (size_t)n >= sizeof line)
        return -1;
    for (int done = 0; done < n;) {
        ssize_t w = send(fd, line + done, (size_t)(n - done), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (int)w;
    }
    return 0;
}

/* Asks the agent on fd for the snapshot; 0 with its reply's figures, or -1. */
static int ask(int fd, pid_t pid, const char *path, unsigned long long fig[4]) {
    char cmd[PATH_MAX + 32], line[1100];
    snprintf(cmd, sizeof cmd, DNP_CONTROL_SNAPSHOT " %s", path);
    if (send_line(fd, cmd) < 0)
        return error("cannot talk to the agent in pid %d", (int)pid);
    /* A snapshot of a big heap takes as long as its GC and the disk. */
    int got = ctl_read_line(fd, line, sizeof line, 3600 * 1000);
    if (got != 1)
        return error("pid %d: the agent did not answer the snapshot request%s", (int)pid,
                     got == 0 ? " (the process exited?)" : "");
    if (!strncmp(line, "error ", 6))
        return error("pid %d: no snapshot: %s", (int)pid, line + 6);
    if (strncmp(line, "ok snapshot ", 12) ||
        sscanf(line + 12, "%llu %llu %llu %llu", &fig[0], &fig[1], &fig[2], &fig[3]) != 4)
        return error("pid %d: the agent's answer is not understood: '%s' (an older agent?)",
                     (int)pid, line);
    return 0;
}

int cmd_snapshot(int argc, char **argv) {
    enum { OPT_TIMEOUT = 256 };
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"timeout", required_argument, NULL, OPT_TIMEOUT},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *output = NULL;
    uint64_t timeout_s = 10;
    int quiet = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case OPT_TIMEOUT:
            if (cli_parse_u64(optarg, &timeout_s) != 0 || timeout_s == 0 || timeout_s > 600)
                return usage_error("snapshot", "--timeout wants seconds from 1 to 600, not '%s'",
                                   optarg);
            break;
        case 'q': quiet = 1; break;
        case 'h': snapshot_help(); return 0;
        default: return cli_bad_option("snapshot", argv, c);
        }
    }
    if (optind != argc - 1)
        return usage_error("snapshot", optind >= argc
                                           ? "which process? dnprof snapshot PID (dnprof ps lists them)"
                                           : "one process at a time: dnprof snapshot [options] PID");
    pid_t pid = 0;
    if (cli_parse_pid("snapshot", argv[optind], &pid) != 0)
        return CLI_EXIT_USAGE;
    if (pid == getpid())
        return usage_error("snapshot", "dnprof cannot take a snapshot of itself");
    if (output && !*output)
        return usage_error("snapshot", "--output wants a file name");

    ipc_proc proc;
    if (ipc_proc_read(pid, &proc) < 0) {
        error("no such process: %d (dnprof ps lists the .NET processes)", (int)pid);
        return 1;
    }
    char out_abs[PATH_MAX], def[64];
    snprintf(def, sizeof def, "dnprof-%d.dnheap", (int)pid);
    if (cli_abs_path(output ? output : def, out_abs, sizeof out_abs) != 0 ||
        strlen(out_abs) >= DNP_BLOB_PATH_MAX) {
        error("cannot use the snapshot path '%s': it is too long", output ? output : def);
        return 1;
    }
    char out_dir[PATH_MAX];
    memcpy(out_dir, out_abs, sizeof out_dir);
    char *slash = strrchr(out_dir, '/');
    slash[slash == out_dir] = 0;
    if (access(out_dir, W_OK | X_OK) != 0) {
        error("cannot write the snapshot in '%s': %s%s", cli_short_path(out_dir), strerror(errno),
              output ? "" : " (use -o to put it elsewhere)");
        return 1;
    }
    /* Replaced, not written through: a symbolic link there is removed first, as
     * dnprof run -o does (the agent opens the path as given). */
    if (unlink(out_abs) != 0 && errno != ENOENT) {
        error("cannot replace '%s': %s", cli_short_path(out_abs), strerror(errno));
        return 1;
    }
    long long t0 = ipc_now_ms();
    unsigned long long fig[4];
    char err[IPC_ERR_MAX];

    if (proc.has_agent == 1) {
        /* An agent that an earlier snapshot detached may not be unloaded yet:
         * wait for it to go, then attach anew. */
        char dir[128], sock[256], st[512] = "";
        if (ctl_dir(proc.uid, 0, dir, sizeof dir, err, sizeof err) == 0) {
            snprintf(sock, sizeof sock, DNP_CONTROL_SOCKET_FMT, dir, (long)pid);
            int fd = connect_unix(sock);
            if (fd >= 0 && send_line(fd, DNP_CONTROL_STATUS) == 0 &&
                ctl_read_line(fd, st, sizeof st, 5000) == 1 && !strncmp(st, "ok detaching", 12)) {
                if (ctl_wait_unloaded(pid, 30000) < 0) {
                    close(fd);
                    error("pid %d: dnprof's agent is detaching but not unloaded after 30 s; try "
                          "again later",
                          (int)pid);
                    return 1;
                }
                ipc_proc_read(pid, &proc);
            }
            if (fd >= 0)
                close(fd);
        }
    }
    if (proc.has_agent == 1) {
        /* The agent is there: its socket (attached, or loaded at start-up). */
        char dir[128], sock[256];
        int fd = -1;
        if (ctl_dir(proc.uid, 0, dir, sizeof dir, err, sizeof err) == 0) {
            snprintf(sock, sizeof sock, DNP_CONTROL_SOCKET_FMT, dir, (long)pid);
            fd = connect_unix(sock);
            if (fd < 0) {
                snprintf(sock, sizeof sock, DNP_CONTROL_RUN_SOCKET_FMT, dir, (long)pid);
                fd = connect_unix(sock);
            }
        }
        if (fd < 0) {
            error("pid %d (%s) has dnprof's agent loaded, but it takes no snapshots: it was "
                  "started without gc events (dnprof run --events ... without gc); run the "
                  "program again with gc in --events",
                  (int)pid, proc.comm);
            return 1;
        }
        int rc = ask(fd, pid, out_abs, fig);
        close(fd);
        if (rc < 0)
            return 1;
    } else {
        int probe = ipc_connect(pid, err, sizeof err);
        if (probe < 0) {
            error("%s", err);
            return 1;
        }
        close(probe);
        cli_agent agent;
        if (cli_agent_find(&agent, err, sizeof err) != 0) {
            error("%s", err);
            return 1;
        }
        dnp_attach_blob blob;
        memset(&blob, 0, sizeof blob);
        snprintf(blob.events, sizeof blob.events, "gc");
        blob.trigger_pid = (uint32_t)getpid();
        if (ctl_dir(proc.uid, 1, blob.control_dir, sizeof blob.control_dir, err, sizeof err) < 0) {
            error("%s", err);
            return 1;
        }
        /* The attached agent's own trace is a by-product: kept aside, then removed. */
        snprintf(blob.output, sizeof blob.output, "%s/snapshot.%ld.trace", blob.control_dir,
                 (long)pid);
        char log[256];
        snprintf(log, sizeof log, DNP_CONTROL_LOG_FMT, blob.control_dir, (long)pid);
        unlink(log);
        static uint8_t wire[DNP_BLOB_MAX];
        long wire_len = dnp_attach_blob_encode(&blob, wire, sizeof wire);
        if (wire_len < 0) {
            error("the attach request does not fit");
            return 1;
        }
        uint32_t hr = 0;
        if (ipc_attach_profiler(pid, (uint32_t)timeout_s * 1000, DNP_CLSID_TEXT, agent.path, wire,
                                (size_t)wire_len, &hr, err, sizeof err) < 0) {
            error("%s", err);
            return 1;
        }
        ctl_agent_log(blob.control_dir, pid, quiet && hr == 0); /* its reasons when it failed */
        if (hr != 0) {
            ipc_attach_hr_text(hr, pid, agent.path, err, sizeof err);
            error("%s", err);
            return 1;
        }
        int fd = ctl_connect(pid, err, sizeof err);
        if (fd < 0) {
            error("the agent is in pid %d, but its control socket does not answer: %s", (int)pid, err);
            return 1;
        }
        int rc = ask(fd, pid, out_abs, fig);
        /* The detach is asked for, not waited for: the snapshot is complete,
         * and the runtime unloads the agent on its own a moment later. */
        char line[512] = "";
        if (send_line(fd, DNP_CONTROL_DETACH) < 0 || ctl_read_line(fd, line, sizeof line, 30000) != 1 ||
            strncmp(line, "ok", 2) != 0)
            warning("pid %d: the agent did not agree to detach%s%s; dnprof detach %d asks again",
                    (int)pid, strncmp(line, "error ", 6) ? "" : ": ",
                    strncmp(line, "error ", 6) ? "" : line + 6, (int)pid);
        close(fd);
        unlink(blob.output);
        if (rc < 0)
            return 1;
    }
    if (!quiet) {
        char a[32], b[32], s[32];
        fprintf(stderr,
                "dnprof: snapshot of pid %d (%s): %s objects, %s; GC pause %.1f ms; %s written "
                "to %s in %.2f s\n",
                (int)pid, proc.comm, cli_fmt_count(fig[0], a), cli_fmt_bytes(fig[1], b),
                (double)fig[2] / 1e6, cli_fmt_bytes(fig[3], s), cli_short_path(out_abs),
                (double)(ipc_now_ms() - t0) / 1000);
    }
    return 0;
}
