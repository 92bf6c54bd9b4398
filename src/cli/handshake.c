/* handshake.c: loading the agent into a running program, as `dnprof attach` and
 * `dnprof snapshot` do (ipc.h, docs/design-notes.md#attach): where the agent
 * writes, the runtime's AttachProfiler with the configuration blob, the agent's
 * log in the control directory, and its control socket. */
#include "ipc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>

#include "attach_blob.h"
#include "cli.h"
#include "session.h"

/* The control directory in the target's container, open (-1: not in one). */
static int g_ctl_dir_fd = -1;
/* --agent-path: the agent as the process sees it; NULL: dnprof's own. */
static const char *g_agent_inside;

void handshake_agent_path(const char *inside) {
    g_agent_inside = inside;
}

static char g_ctl_dir_path[PATH_MAX]; /* the same directory's path from here, for leave() */

/* At exit: the control directory in the container removed if it is empty (the
 * agent gone, the trace out), so that nothing is left there; an agent still
 * attached (a snapshot's unloads a moment later) removes it itself. */
static void leave(void) {
    if (g_ctl_dir_path[0])
        rmdir(g_ctl_dir_path);
}

/* Holds the control directory dir (from here) of a process in a container
 * open: when the program and its container end first, their file system
 * lives on through this descriptor until the trace is out. */
static void hold(const ipc_where *w, const char *dir) {
    if (w->container && g_ctl_dir_fd < 0) {
        g_ctl_dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (g_ctl_dir_fd >= 0 && snprintf(g_ctl_dir_path, sizeof g_ctl_dir_path, "%s", dir) < PATH_MAX)
            atexit(leave);
    }
}

int handshake_output(const char *given, const char *def, const char *noun, char *out, size_t cap) {
    const char *path = given ? given : def;
    if (cli_abs_path(path, out, cap) != 0 || strlen(out) >= DNP_BLOB_PATH_MAX)
        return error("cannot use the %s path '%s': it is too long", noun, path);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/'); /* out is absolute: it has one */
    slash[slash == dir] = 0;
    if (access(dir, W_OK | X_OK) != 0)
        return error("cannot write the %s in '%s': %s%s", noun, cli_short_path(dir), strerror(errno),
                     given ? "" : " (use -o to put it elsewhere)");
    return 0;
}

/* Sends AttachProfiler; 0 once the agent is in, or -1 after saying why (with
 * what the agent logged when it refused). */
static int request(pid_t pid, uint32_t timeout_s, const dnp_attach_blob *blob) {
    char err[IPC_ERR_MAX];
    static uint8_t wire[DNP_BLOB_MAX];
    long wire_len = dnp_attach_blob_encode(blob, wire, sizeof wire);
    if (wire_len < 0)
        return error("the attach request does not fit (--events or -o too long)");
    ipc_where w;
    ipc_where_of(pid, &w);
    char placed[PATH_MAX], placed_here[PATH_MAX];
    if (g_agent_inside) {
        /* --agent-path: the program's own copy, left where it is */
        if (ipc_agent_path_check(w.root, g_agent_inside, ipc_elf_machine_of(pid), err, sizeof err) < 0)
            return error("%s", err);
        snprintf(placed, sizeof placed, "%s", g_agent_inside);
        w.container = 0; /* nothing to remove */
    } else {
        /* In a container the agent is copied into the control directory there:
         * the runtime loads it by the path it sees. The copy goes once loaded
         * (the mapping stays) or refused. */
        cli_agent agent;
        if (cli_agent_find(&agent, err, sizeof err) != 0)
            return error("%s", err);
        if (ipc_place_agent(&w, agent.path, blob->control_dir, placed, sizeof placed, err, sizeof err) < 0)
            return error("%s", err);
    }
    uint32_t hr = 0;
    int rc = ipc_attach_profiler(pid, timeout_s * 1000, DNP_CLSID_TEXT, placed, wire, (size_t)wire_len, &hr, err,
                                 sizeof err);
    if (w.container && ipc_outside(&w, placed, placed_here, sizeof placed_here) == 0)
        unlink(placed_here);
    if (rc < 0)
        return error("%s", err);
    if (hr != 0) {
        ctl_agent_log(blob->control_dir, pid, 0); /* the agent's reasons */
        ipc_attach_hr_text(hr, pid, placed, err, sizeof err);
        return error("%s", err);
    }
    return 0;
}

int handshake_attach(pid_t pid, uid_t uid, uint32_t timeout_s, dnp_attach_blob *blob) {
    char err[IPC_ERR_MAX];
    int probe = ipc_connect(pid, err, sizeof err);
    if (probe < 0)
        return error("%s", err);
    close(probe);
    ipc_process_info info;
    ipc_proc proc;
    if (ipc_process_info_get(pid, &info, err, sizeof err) == 0 && ipc_runtime_too_old(info.version, info.info2)) {
        ipc_runtime_old_text(pid, ipc_proc_read(pid, &proc) == 0 ? proc.comm : "?", info.version, err, sizeof err);
        return error("%s", err);
    }
    blob->trigger_pid = (uint32_t)getpid();
    ipc_where w;
    ipc_where_of(pid, &w);
    blob->host_pid = w.inner && w.inner != w.pid ? (uint32_t)w.pid : 0; /* for the trace's commands */
    char dir[PATH_MAX];
    if (ctl_dir(&w, uid, 1, dir, sizeof dir, err, sizeof err) < 0) {
        if (w.container && errno == EROFS)
            ipc_place_text(pid, "/tmp", EROFS, 0, err, sizeof err);
        return error("%s", err);
    }
    snprintf(blob->control_dir, sizeof blob->control_dir, "%s", ipc_inside(&w, dir));
    /* The agent writes where the program sees: in a container, in the control
     * directory there, and the file comes out at the end (handshake_bring_back). */
    if (!blob->output[0] || w.container)
        snprintf(blob->output, sizeof blob->output, HANDSHAKE_BYPRODUCT_FMT, blob->control_dir, (long)w.inner);
    /* the windows too, in a directory of their own there (the agent makes it), read
     * through /proc/PID/root as they come (handshake_windows_dir) */
    if (w.container && blob->window_dir[0])
        snprintf(blob->window_dir, sizeof blob->window_dir, "%s/windows.%ld", blob->control_dir, (long)w.inner);
    char log[PATH_MAX + 64];
    snprintf(log, sizeof log, DNP_CONTROL_LOG_FMT, dir, (long)w.inner);
    unlink(log); /* an earlier agent's */
    hold(&w, dir);
    return request(pid, timeout_s, blob);
}

int handshake_windows_dir(pid_t pid, const dnp_attach_blob *blob, char *out, size_t cap) {
    ipc_where w;
    ipc_where_of(pid, &w);
    return ipc_outside(w.container ? &w : NULL, blob->window_dir, out, cap);
}

int handshake_written_path(pid_t pid, uid_t uid, const char *dest, const char *name, char *out, size_t cap) {
    ipc_where w;
    ipc_where_of(pid, &w);
    if (!w.container) {
        snprintf(out, cap, "%s", dest);
        return 0;
    }
    char dir[PATH_MAX], err[IPC_ERR_MAX];
    if (ctl_dir(&w, uid, 1, dir, sizeof dir, err, sizeof err) < 0)
        return error("%s", err);
    hold(&w, dir);
    int n = snprintf(out, cap, "%s/%s.%ld", ipc_inside(&w, dir), name, (long)w.inner);
    return n < 0 || (size_t)n >= cap ? error("the path in pid %d's container is too long", (int)pid) : 0;
}

void handshake_remove(pid_t pid, const char *written) {
    ipc_where w;
    ipc_where_of(pid, &w);
    char here[PATH_MAX];
    if (!w.container) {
        unlink(written);
    } else if (g_ctl_dir_fd >= 0) {
        const char *name = strrchr(written, '/');
        unlinkat(g_ctl_dir_fd, name ? name + 1 : written, 0);
    } else if (ipc_outside(&w, written, here, sizeof here) == 0) {
        unlink(here);
    }
}

int handshake_bring_back(pid_t pid, const char *written, const char *dest) {
    if (g_ctl_dir_fd < 0 || !strcmp(written, dest))
        return 0; /* not in a container: the agent wrote dest itself */
    (void)pid;
    const char *name = strrchr(written, '/');
    name = name ? name + 1 : written;
    char err[IPC_ERR_MAX];
    if (ipc_fetch_at(g_ctl_dir_fd, name, dest, err, sizeof err) < 0)
        return error("%s (from pid %d's container)", err, (int)pid);
    return 0;
}

int handshake_connect(pid_t pid) {
    char err[IPC_ERR_MAX];
    int fd = ctl_connect(pid, err, sizeof err);
    if (fd < 0)
        return error("the agent is in pid %d, but its control socket does not answer: %s", (int)pid, err);
    return fd;
}

void handshake_detached(pid_t pid, int rc, int quiet, const char *exited) {
    if (rc == 1)
        fprintf(stderr, "dnprof: pid %d exited %s\n", (int)pid, exited);
    else if (rc == 2) /* said even with -q: the process keeps the library */
        fprintf(stderr, "dnprof: pid %d: the traced methods run their original code again; the agent stays "
                        "loaded but inert (the runtime does not unload a profiler that used ReJIT; docs/attach.md)\n",
                (int)pid);
    else if (!quiet)
        fprintf(stderr, "dnprof: detached from pid %d; the agent is unloaded\n", (int)pid);
}
