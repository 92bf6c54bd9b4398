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

/* The runtime's major version from "10.0.1", 0 if unknown. */
static int major_of(const char *version) {
    return version[0] ? atoi(version) : 0;
}

static int check_where(pid_t pid, const ipc_proc *p, ipc_where *w) {
    if (ipc_where_of(pid, w) < 0)
        return say(2, "pid %d (%s): its namespaces cannot be read (/proc/%d/ns): run dnprof as root, or give it "
                      "CAP_SYS_PTRACE", (int)pid, p->comm, (int)pid);
    if (!w->container)
        return say(0, "pid %d (%s) runs in this machine's namespaces%s", (int)pid, p->comm,
                   w->inner != pid ? " (in a PID namespace of its own)" : "");
    if (access(w->root, X_OK) != 0)
        return say(2, "pid %d (%s) runs in a container whose files dnprof cannot reach (%s: %s): run dnprof as "
                      "root, or give it CAP_SYS_PTRACE", (int)pid, p->comm, w->root, strerror(errno));
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
    int major = major_of(info.version);
    if (major && major < 8)
        return say(1, "it runs .NET %s: dnprof attaches to .NET 5 and later, and is tested on .NET 8, 9 and 10; "
                      "some figures (sampled allocations, lock owners) need newer runtimes", info.version);
    return say(0, "it runs .NET %s (%s %s)", info.version[0] ? info.version : "(version not told)", info.os,
               info.arch);
}

/* The control directory: made (or found) where the program sees /tmp. */
static int check_control(pid_t pid, const ipc_proc *p, const ipc_where *w) {
    char dir[PATH_MAX], err[IPC_ERR_MAX];
    if (ctl_dir(w, p->uid, 1, dir, sizeof dir, err, sizeof err) < 0)
        return say(2, "%s%s", err,
                   w->container ? " (in its container: mount a writable /tmp there, as a tmpfs or an emptyDir)" : "");
    if (w->container) {
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/.doctor.%d", dir, (int)getpid());
        FILE *f = fopen(probe, "w");
        if (!f)
            return say(2, "cannot write the agent into pid %d's container (%s): %s; mount a writable /tmp there",
                       (int)pid, ipc_inside(w, dir), strerror(errno));
        fclose(f);
        unlink(probe);
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

int doctor_pid(pid_t pid) {
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
        fails += check_control(pid, &p, &w);
    if (!fails)
        fails += check_agent_in(pid, &p);
    if (!fails)
        printf("dnprof attach %d and dnprof snapshot %d can work.\n", (int)pid, (int)pid);
    return fails ? 1 : 0;
}
