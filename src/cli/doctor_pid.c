/* doctor_pid.c: `dnprof doctor PID`: whether dnprof can attach to a running
 * program, one line per check (ok, warn, FAIL), each failure with its fix:
 * the process, its container, its diagnostics socket, its runtime, the
 * control directory the agent will use, and an agent already in it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ipc.h"
#include "attach_blob.h"

static int say(int fail, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int fail, const char *fmt, ...) {
    va_list ap;
    printf("%s  ", fail == 2 ? "FAIL" : fail ? "warn" : "ok  ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    return fail == 2;
}

static int check_where(pid_t pid, const ipc_proc *p, ipc_where *w) {
    char line[IPC_ERR_MAX];
    if (ipc_where_of(pid, w) < 0) {
        ipc_denied_text(pid, p->comm, "ns", EACCES, line, sizeof line);
        return say(2, "%s", line);
    }
    if (!w->container)
        return say(0, "pid %d (%s) runs in this machine's namespaces%s", (int)pid, p->comm,
                   w->inner != pid ? " (in a PID namespace of its own)" : "");
    if (access(w->root, X_OK) != 0) {
        ipc_denied_text(pid, p->comm, "root", errno, line, sizeof line);
        return say(2, "%s", line);
    }
    return say(0, "pid %d (%s) runs in a container: pid %d inside, its files under %s", (int)pid, p->comm,
               (int)w->inner, w->root);
}

static int check_runtime(pid_t pid) {
    char err[IPC_ERR_MAX];
    int fd = ipc_connect(pid, err, sizeof err);
    if (fd < 0)
        return say(2, "%s", err);
    close(fd);
    char path[PATH_MAX] = "";
    ipc_socket_path(pid, path, sizeof path);
    say(0, "its diagnostics socket answers: %s", path);
    ipc_process_info info;
    if (ipc_process_info_get(pid, &info, err, sizeof err) < 0)
        return say(2, "%s", err);
    if (ipc_runtime_too_old(info.version, info.info2)) {
        ipc_proc p;
        ipc_runtime_old_text(pid, ipc_proc_read(pid, &p) == 0 ? p.comm : "?", info.version, err, sizeof err);
        return say(2, "%s", err);
    }
    return say(0, "it runs .NET %s (%s %s)", info.version[0] ? info.version : "(version not told)", info.os,
               info.arch);
}

/* The control directory: made (or found) where the program sees /tmp; the
 * agent copied there, or the one at agent_path (--agent-path). */
static int check_control(pid_t pid, const ipc_proc *p, const ipc_where *w, const char *agent_path) {
    char dir[PATH_MAX], err[IPC_ERR_MAX];
    if (ctl_dir(w, p->uid, 1, dir, sizeof dir, err, sizeof err) < 0) {
        if (w->container && errno == EROFS)
            ipc_place_text(pid, "/tmp", EROFS, 0, err, sizeof err);
        return say(2, "%s%s", err,
                   w->container && errno != EROFS ? " (in its container: mount a writable /tmp there, as a tmpfs or an emptyDir)" : "");
    }
    if (w->container) {
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/.doctor.%d", dir, (int)getpid());
        ipc_as_owner(w, 1);
        FILE *f = fopen(probe, "w");
        ipc_as_owner(w, 0);
        if (!f) {
            ipc_place_text(pid, ipc_inside(w, dir), errno, 0, err, sizeof err);
            return say(2, "%s", err);
        }
        fclose(f);
        unlink(probe);
    }
    if (agent_path) {
        if (ipc_agent_path_check(w->root, agent_path, ipc_elf_machine_of(pid), err, sizeof err) < 0)
            return say(2, "%s", err);
        return say(0, "the control directory %s is ready; the agent %s is loaded from there (--agent-path)",
                   ipc_inside(w, dir), agent_path);
    }
    if (w->container && ipc_noexec(dir)) {
        ipc_place_text(pid, ipc_inside(w, dir), 0, 1, err, sizeof err);
        return say(2, "%s", err);
    }
    return say(0, "the control directory %s is ready%s", ipc_inside(w, dir),
               w->container ? " (the agent is copied there for the attach, and removed once loaded)" : "");
}

static int check_agent_in(pid_t pid, const ipc_proc *p) {
    if (p->has_agent != 1)
        return say(0, "no dnprof agent is in it yet");
    char sock[PATH_MAX];
    if (ctl_socket_path(pid, p->uid, DNP_CONTROL_SOCKET_FMT, sock, sizeof sock) == 0 && ctl_socket_live(sock, pid) == 1)
        return say(1, "dnprof's agent is attached to it already: dnprof detach %d ends that recording", (int)pid);
    return say(1, "dnprof's agent was loaded at its start (dnprof run or dnprof env): it records until the "
                  "program exits; dnprof snapshot %d works, attach does not", (int)pid);
}

int doctor_pid(pid_t pid, const char *agent_path) {
    ipc_proc p;
    if (ipc_proc_read(pid, &p) < 0) {
        say(2, "no such process: %d (dnprof ps lists the .NET processes)", (int)pid);
        return 1;
    }
    ipc_where w;
    int fails = check_where(pid, &p, &w);
    if (!fails)
        fails += check_runtime(pid);
    if (!fails)
        fails += check_control(pid, &p, &w, agent_path);
    if (!fails)
        fails += check_agent_in(pid, &p);
    if (!fails)
        printf("dnprof attach %d and dnprof snapshot %d can work.\n", (int)pid, (int)pid);
    return fails ? 1 : 0;
}
