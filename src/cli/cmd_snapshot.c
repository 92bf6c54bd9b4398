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
#include <unistd.h>

#include "attach.h"
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
          "(dnprof run, dnprof attach), it is asked and stays. A program in a container\n"
          "is reached by the pid the host sees, as root (docs/containers.md).\n"
          "Read the snapshot with 'dnprof heap report|paths|diff' or convert it for a\n"
          "browser's DevTools with 'dnprof convert --format heapsnapshot'.\n"
          "\n"
          "options:\n"
          "  -o, --output FILE     the snapshot file, replaced if it exists (default:\n"
          "                        dnprof-<pid>.dnheap in the current directory); the program\n"
          "                        writes it, so its user must be able to\n"
          DNP_HELP_LOADING_OPTIONS
          "\n"
          "examples:\n"
          "  dnprof snapshot 4242 -o before.dnheap\n"
          "  dnprof heap report before.dnheap\n",
          stdout);
}

/* Asks the agent on fd for the snapshot; 0 with its reply's figures, or -1. */
static int ask(int fd, pid_t pid, const char *path, unsigned long long fig[4]) {
    char cmd[PATH_MAX + 32], line[1100];
    snprintf(cmd, sizeof cmd, DNP_CONTROL_SNAPSHOT " %s", path);
    if (ctl_send(fd, cmd) < 0)
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

typedef struct snapshot_opts {
    const char *output, *agent_path;
    uint64_t timeout_s;
    int quiet;
    pid_t pid;
} snapshot_opts;

/* Fills o from argv; 0, or the exit code of a usage error. */
static int parse_options(int argc, char **argv, snapshot_opts *o) {
    enum { OPT_TIMEOUT = 256, OPT_AGENT_PATH };
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"timeout", required_argument, NULL, OPT_TIMEOUT},
                                             {"agent-path", required_argument, NULL, OPT_AGENT_PATH},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->timeout_s = 10;
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case OPT_TIMEOUT:
            if ((rc = cli_timeout_option("snapshot", optarg, 600, &o->timeout_s)) != 0)
                return rc;
            break;
        case OPT_AGENT_PATH:
            if ((rc = cli_agent_path_option("snapshot", optarg, &o->agent_path)) != 0)
                return rc;
            break;
        case 'q': o->quiet = 1; break;
        case 'h': snapshot_help(); return CLI_HELP_SHOWN;
        default: return cli_bad_option("snapshot", argv, c);
        }
    }
    int bad = cli_one_pid("snapshot", "take a snapshot of itself", argc, argv, &o->pid);
    if (bad)
        return bad;
    if (o->output && !*o->output)
        return usage_error("snapshot", "--output wants a file name");
    return 0;
}

/* The agent's control socket at fmt in the control directory of proc's user, or -1. */
static int agent_socket(const ipc_proc *proc, const char *fmt) {
    char sock[PATH_MAX];
    if (ctl_socket_path(proc->pid, proc->uid, fmt, sock, sizeof sock) != 0)
        return -1;
    return ipc_unix_connect(sock);
}

/* An agent that an earlier snapshot detached may not be unloaded yet: waits
 * for it to go (proc read again), so that it is attached anew. 0 or -1. */
static int wait_detaching(ipc_proc *proc) {
    int w = ctl_wait_detaching(proc->pid, proc->uid, 30000);
    if (w < 0)
        return error("pid %d: dnprof's agent is detaching but not unloaded after 30 s; try again later",
                     (int)proc->pid);
    if (w > 0)
        ipc_proc_read(proc->pid, proc);
    return 0;
}

/* The agent is there (attached, or loaded at start-up): asked on its socket. */
static int ask_loaded(const ipc_proc *proc, const char *out_abs, unsigned long long fig[4]) {
    int fd = agent_socket(proc, DNP_CONTROL_SOCKET_FMT);
    if (fd < 0)
        fd = agent_socket(proc, DNP_CONTROL_RUN_SOCKET_FMT);
    if (fd < 0)
        return error("pid %d (%s) has dnprof's agent loaded, but it takes no snapshots: it was "
                     "started without gc events (dnprof run --events ... without gc); run the "
                     "program again with gc in --events",
                     (int)proc->pid, proc->comm);
    char written[PATH_MAX];
    int rc = handshake_written_path(proc->pid, proc->uid, out_abs, "snapshot.dnheap", written, sizeof written);
    if (rc == 0)
        rc = ask(fd, proc->pid, written, fig);
    close(fd);
    return rc == 0 ? handshake_bring_back(proc->pid, written, out_abs) : rc;
}

/* No agent: one is attached for the snapshot (gc events, its trace a
 * by-product), asked, and asked to detach. */
static int ask_attached(const snapshot_opts *o, const ipc_proc *proc, const char *out_abs,
                        unsigned long long fig[4]) {
    dnp_attach_blob blob;
    memset(&blob, 0, sizeof blob);
    snprintf(blob.events, sizeof blob.events, "gc");
    handshake_agent_path(o->agent_path);
    if (handshake_attach(o->pid, proc->uid, (uint32_t)o->timeout_s, &blob) < 0)
        return -1;
    ctl_agent_log(blob.control_dir, o->pid, o->quiet);
    int fd = handshake_connect(o->pid);
    if (fd < 0)
        return -1;
    char written[PATH_MAX];
    int rc = handshake_written_path(o->pid, proc->uid, out_abs, "snapshot.dnheap", written, sizeof written);
    if (rc == 0)
        rc = ask(fd, o->pid, written, fig);
    if (rc == 0)
        rc = handshake_bring_back(o->pid, written, out_abs);
    /* The detach is asked for, not waited for: the snapshot is complete,
     * and the runtime unloads the agent on its own a moment later. */
    char line[512] = "";
    if (ctl_send(fd, DNP_CONTROL_DETACH) < 0 || ctl_read_line(fd, line, sizeof line, 30000) != 1 ||
        strncmp(line, "ok", 2) != 0)
        warning("pid %d: the agent did not agree to detach%s%s; dnprof detach %d asks again",
                (int)o->pid, strncmp(line, "error ", 6) ? "" : ": ",
                strncmp(line, "error ", 6) ? "" : line + 6, (int)o->pid);
    close(fd);
    handshake_remove(o->pid, blob.output);
    return rc;
}

int cmd_snapshot(int argc, char **argv) {
    snapshot_opts o;
    int rc;
    if ((rc = parse_options(argc, argv, &o)) != 0)
        return cli_done(rc);
    ipc_proc proc;
    if (ipc_proc_read(o.pid, &proc) < 0) {
        error("no such process: %d (dnprof ps lists the .NET processes)", (int)o.pid);
        return 1;
    }
    char out_abs[PATH_MAX], def[64];
    snprintf(def, sizeof def, "dnprof-%d.dnheap", (int)o.pid);
    if (handshake_output(o.output, def, "snapshot", out_abs, sizeof out_abs) < 0)
        return 1;
    /* Replaced, not written through: a symbolic link there is removed first, as
     * dnprof run -o does (the agent opens the path as given). */
    if (unlink(out_abs) != 0 && errno != ENOENT) {
        error("cannot replace '%s': %s", cli_short_path(out_abs), strerror(errno));
        return 1;
    }
    long long t0 = ipc_now_ms();
    unsigned long long fig[4];
    if (proc.has_agent == 1 && wait_detaching(&proc) < 0)
        return 1;
    if ((proc.has_agent == 1 ? ask_loaded(&proc, out_abs, fig) : ask_attached(&o, &proc, out_abs, fig)) < 0)
        return 1;
    if (!o.quiet) {
        char a[32], b[32], s[32];
        fprintf(stderr,
                "dnprof: snapshot of pid %d (%s): %s objects, %s; GC pause %.1f ms; %s written "
                "to %s in %.2f s\n",
                (int)o.pid, proc.comm, cli_fmt_count(fig[0], a), cli_fmt_bytes(fig[1], b),
                (double)fig[2] / 1e6, cli_fmt_bytes(fig[3], s), cli_short_path(out_abs),
                (double)(ipc_now_ms() - t0) / 1000);
    }
    return 0;
}
