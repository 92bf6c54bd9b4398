/* ctl.c: the attached agent's control socket, seen from the front end (ipc.h,
 * src/agent/control.h): the private directory, connecting, the commands, the
 * detach, and the sockets that dead agents left behind. */
#include "ipc.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach_blob.h"

/* ---- the agent's control socket ---- */

static int dir_at(const ipc_where *w, const char *base, uid_t uid, int create, char *out, size_t cap, char *err,
                  size_t errlen) {
    char inside[PATH_MAX];
    int n = snprintf(inside, sizeof inside, "%s/dnprof-%u", base, (unsigned)ipc_uid_inside(w, uid));
    if (n < 0 || (size_t)n >= DNP_BLOB_DIR_MAX || ipc_outside(w, inside, out, cap) < 0) {
        snprintf(err, errlen, "control directory path too long");
        return -1;
    }
    ipc_as_owner(w, create);
    int made = create ? mkdir(out, 0700) : -1, made_errno = errno;
    ipc_as_owner(w, 0);
    if (made == 0 && uid != geteuid()) {
        if (chown(out, uid, (gid_t)-1) != 0) {
            int e = errno;
            snprintf(err, errlen, "cannot give '%s' to uid %u: %s", inside, (unsigned)uid, strerror(e));
            rmdir(out);
            return -1;
        }
    }
    struct stat st;
    if (lstat(out, &st) != 0) {
        if (create && made != 0 && made_errno != EEXIST)
            errno = made_errno; /* why it is not there: read-only, ... */
        int e = errno;
        if (create || e != ENOENT)
            snprintf(err, errlen, "cannot use the control directory '%s': %s", out, strerror(e));
        else
            snprintf(err, errlen, "no dnprof control directory '%s'", out);
        errno = e; /* for the caller's fix */
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077)) {
        snprintf(err, errlen,
                 "'%s' is not a private directory of uid %u (mode 0700): someone else made it; "
                 "remove it and try again",
                 out, (unsigned)uid);
        return -1;
    }
    return 0;
}

/* The program's own TMPDIR (absolute, not /tmp), as it sees it: 1, or 0. */
static int their_tmpdir(const ipc_where *w, char *out, size_t cap) {
    if (!w || ipc_proc_env(w->pid, "TMPDIR", out, cap) != 0 || out[0] != '/')
        return 0;
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = 0;
    return strcmp(out, "/tmp") != 0;
}

int ctl_dir(const ipc_where *w, uid_t uid, int create, char *out, size_t cap, char *err, size_t errlen) {
    struct statvfs fs;
    int found = dir_at(w, "/tmp", uid, create, out, cap, err, errlen) == 0, e = errno;
    if (found && (statvfs(out, &fs) != 0 || !(fs.f_flag & ST_RDONLY)))
        return 0;
    /* where /tmp cannot hold it (read-only, as Kubernetes' readOnlyRootFilesystem makes it, whether the
     * directory is there or not), the program's TMPDIR, where its runtime keeps its diagnostics socket,
     * may; else what /tmp gave (its error says why) */
    char tmpdir[PATH_MAX], other[PATH_MAX], why[PATH_MAX + 256];
    int retry = found || (create ? e == EROFS || e == EACCES || e == EPERM || e == ENOENT : e == ENOENT);
    if (retry && their_tmpdir(w, tmpdir, sizeof tmpdir) &&
        dir_at(w, tmpdir, uid, create, other, sizeof other, why, sizeof why) == 0) {
        snprintf(out, cap, "%s", other);
        return 0;
    }
    errno = e;
    return found ? 0 : -1;
}

int ctl_socket_path(pid_t pid, uid_t uid, const char *fmt, char *out, size_t cap) {
    ipc_where w;
    ipc_where_of(pid, &w);
    char dir[PATH_MAX], err[PATH_MAX + 256]; /* room for the directory in any message */
    if (ctl_dir(&w, uid, 0, dir, sizeof dir, err, sizeof err) < 0)
        return -1;
    int n = snprintf(out, cap, fmt, dir, (long)w.inner);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int ctl_connect(pid_t pid, char *err, size_t errlen) {
    ipc_proc p;
    ipc_where w;
    if (ipc_proc_read(pid, &p) < 0) {
        snprintf(err, errlen, "no such process: %d", (int)pid);
        return -1;
    }
    ipc_where_of(pid, &w);
    char dir[PATH_MAX], path[PATH_MAX + 64];
    if (ctl_dir(&w, p.uid, 0, dir, sizeof dir, err, errlen) < 0) {
        if (p.has_agent == 1)
            snprintf(err, errlen,
                     "pid %d (%s) has dnprof's agent loaded at start-up (dnprof run), not attached: "
                     "it records until the program exits",
                     (int)pid, p.comm);
        else
            snprintf(err, errlen, "no dnprof agent is attached to pid %d (%s)", (int)pid, p.comm);
        return -1;
    }
    snprintf(path, sizeof path, DNP_CONTROL_SOCKET_FMT, dir, (long)w.inner);
    int stale = ctl_socket_live(path, pid) == 0;
    if (stale)
        unlink(path); /* a dead agent's, or one of an earlier process with this pid */
    int fd = stale ? (errno = ENOENT, -1) : ipc_unix_connect(path);
    if (fd < 0) {
        if (errno == ENOENT && p.has_agent == 1)
            snprintf(err, errlen,
                     "pid %d (%s) has dnprof's agent loaded at start-up (dnprof run), not attached: "
                     "it records until the program exits",
                     (int)pid, p.comm);
        else if (errno == ENOENT || errno == ECONNREFUSED)
            snprintf(err, errlen, "no dnprof agent is attached to pid %d (%s)%s", (int)pid, p.comm,
                     stale ? " (its stale control socket was removed)" : "");
        else
            snprintf(err, errlen, "cannot reach the agent in pid %d through '%s': %s", (int)pid, path,
                     strerror(errno));
        return -1;
    }
    return fd;
}

int ctl_send(int fd, const char *cmd) {
    char line[PATH_MAX + 64]; /* "snapshot PATH" */
    int n = snprintf(line, sizeof line, "%s\n", cmd);
    return n > 0 && (size_t)n < sizeof line ? ipc_write_all(fd, (const uint8_t *)line, (size_t)n) : -1;
}

int ctl_read_line(int fd, char *line, size_t cap, int timeout_ms) {
    size_t n = 0;
    long long deadline = timeout_ms < 0 ? -1 : ipc_now_ms() + timeout_ms;
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            long long left = deadline - ipc_now_ms();
            if (left <= 0)
                return -1;
            wait = (int)left;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, wait);
        if (r < 0)
            return -1; /* EINTR too: the caller has a signal to look at */
        if (r == 0)
            continue;
        char c;
        ssize_t got = recv(fd, &c, 1, 0);
        if (got < 0)
            return -1;
        if (got == 0) {
            line[n] = 0;
            return n ? 1 : 0;
        }
        if (c == '\n')
            break;
        if (n + 1 < cap)
            line[n++] = c;
    }
    line[n] = 0;
    return 1;
}

int ctl_status(int fd, char *out, size_t cap, char *err, size_t errlen) {
    char line[PATH_MAX + 128];
    if (ctl_send(fd, DNP_CONTROL_STATUS) < 0 || ctl_read_line(fd, line, sizeof line, 10000) != 1) {
        snprintf(err, errlen, "the agent did not answer on its control socket");
        return -1;
    }
    /* "ok recording|detaching <events> <path>" */
    char state[32];
    unsigned long long events;
    int at = 0;
    if (sscanf(line, "ok %31s %llu %n", state, &events, &at) != 2 || !at) {
        snprintf(err, errlen, "the agent answered '%s'", line);
        return -1;
    }
    snprintf(out, cap, "%s", line + at);
    return 0;
}

/* Whether pid is gone, or goes within a few seconds (its sockets close as it
 * exits, a moment before it is reaped). */
static int proc_gone(pid_t pid) {
    ipc_proc p;
    long long give_up = ipc_now_ms() + 3000;
    while (ipc_proc_read(pid, &p) == 0) {
        if (ipc_now_ms() >= give_up)
            return 0;
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

int ctl_detach(pid_t pid, int fd, int timeout_ms, uint64_t *events, char *err, size_t errlen) {
    long long deadline = ipc_now_ms() + timeout_ms;
    char line[512];
    *events = 0;
    if (ctl_send(fd, DNP_CONTROL_DETACH) < 0) {
        if (proc_gone(pid))
            return 1;
        snprintf(err, errlen, "cannot talk to the agent in pid %d any more", (int)pid);
        return -1;
    }
    int got_ok = 0;
    for (;;) {
        long long left = deadline - ipc_now_ms();
        int r = left > 0 ? ctl_read_line(fd, line, sizeof line, (int)left) : -1;
        if (r == 0) { /* the process ended, or the agent went away without a word */
            if (proc_gone(pid))
                return 1;
            snprintf(err, errlen, "the agent in pid %d closed its control socket without detaching",
                     (int)pid);
            return -1;
        }
        if (r < 0) {
            if (errno == EINTR && ipc_now_ms() < deadline)
                continue;
            snprintf(err, errlen,
                     "pid %d did not complete the detach within %d s (%s); the runtime waits until "
                     "no thread is inside the agent: a thread blocked in a callback holds it",
                     (int)pid, timeout_ms / 1000, got_ok ? "asked" : "no answer");
            return -1;
        }
        if (strncmp(line, "error", 5) == 0) {
            /* a detach asked as the program exits: its runtime has begun to
             * shut down and cannot take it (the detach thread's event is gone:
             * ERROR_INVALID_HANDLE); the program's end completes the trace */
            if (proc_gone(pid))
                return 1;
            snprintf(err, errlen, "the agent in pid %d cannot detach: %s", (int)pid, line + 6);
            return -1;
        }
        if (strncmp(line, "ok", 2) == 0) {
            got_ok = 1;
            continue;
        }
        if (strncmp(line, DNP_CONTROL_DETACHED " ", sizeof DNP_CONTROL_DETACHED) == 0) {
            char *end = NULL;
            *events = strtoull(line + sizeof DNP_CONTROL_DETACHED, &end, 10);
            if (end && strcmp(end, " " DNP_CONTROL_INERT) == 0)
                return 2; /* after a ReJIT: the agent stays loaded (docs/attach.md) */
            break;
        }
    }
    long long left = deadline - ipc_now_ms();
    if (ctl_wait_unloaded(pid, left > 1000 ? (int)left : 1000) < 0) {
        snprintf(err, errlen,
                 "the trace is complete, but the runtime of pid %d has not unloaded the agent yet",
                 (int)pid);
        return -1;
    }
    return 0;
}

int ctl_wait_detaching(pid_t pid, uid_t uid, int timeout_ms) {
    char sock[PATH_MAX], st[512] = "";
    if (ctl_socket_path(pid, uid, DNP_CONTROL_SOCKET_FMT, sock, sizeof sock) != 0)
        return 0;
    int fd = ipc_unix_connect(sock);
    if (fd < 0)
        return 0;
    int detaching = ctl_send(fd, DNP_CONTROL_STATUS) == 0 && ctl_read_line(fd, st, sizeof st, 5000) == 1 &&
                    !strncmp(st, "ok detaching", 12);
    close(fd);
    if (!detaching)
        return 0;
    return ctl_wait_unloaded(pid, timeout_ms) == 0 ? 1 : -1;
}

int ctl_wait_unloaded(pid_t pid, int timeout_ms) {
    long long deadline = ipc_now_ms() + timeout_ms;
    for (;;) {
        if (ipc_proc_maps_has(pid, "/libdnprof.so") != 1)
            return 0;
        if (ipc_now_ms() >= deadline)
            return -1;
        struct timespec ts = {0, 2 * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* A socket that refuses connections is stale only when older than this: an
 * agent binds its socket a moment before it listens on it. */
#define CTL_LISTEN_GRACE_S 5

int ctl_socket_live(const char *path, pid_t pid) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode))
        return -1;
    ipc_proc p;
    if (ipc_proc_read(pid, &p) < 0)
        return 0; /* the process is gone */
    long long started = ipc_proc_start_epoch(&p);
    if (started && (long long)st.st_mtime + 1 < started)
        return 0; /* made before this process existed: its pid was reused */
    int fd = ipc_unix_connect(path);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
    if ((errno == ECONNREFUSED || errno == ENOENT) && time(NULL) - st.st_mtime > CTL_LISTEN_GRACE_S)
        return 0;
    return -1;
}

int ctl_sweep(uid_t uid) {
    char dir[128], err[256];
    if (ctl_dir(NULL, uid, 0, dir, sizeof dir, err, sizeof err) < 0)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        if (strncmp(e->d_name, "agent.", 6) != 0)
            continue;
        long pid = strtol(e->d_name + 6, &end, 10);
        if (pid <= 0 || pid > INT_MAX || strcmp(end, ".sock") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (ctl_socket_live(path, (pid_t)pid) != 0)
            continue;
        if (unlink(path) == 0)
            removed++;
        snprintf(path, sizeof path, DNP_CONTROL_LOG_FMT, dir, pid);
        unlink(path);
    }
    closedir(d);
    return removed;
}

void ctl_agent_log(const char *dir, pid_t pid, int quiet) {
    ctl_agent_log_from(dir, pid, quiet, NULL, 1);
}

void ctl_agent_log_from(const char *dir, pid_t pid, int quiet, long *offset, int remove) {
    ipc_where w;
    ipc_where_of(pid, &w);
    char host_dir[PATH_MAX], path[PATH_MAX + 64];
    if (ipc_outside(&w, dir, host_dir, sizeof host_dir) < 0)
        return;
    snprintf(path, sizeof path, DNP_CONTROL_LOG_FMT, host_dir, (long)w.inner);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (offset && *offset > 0 && fseek(f, *offset, SEEK_SET) != 0)
        *offset = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (!strchr(line, '\n') && !remove)
            break; /* a line still being written: the next call prints it */
        if (offset)
            *offset = ftell(f);
        if (!quiet)
            fprintf(stderr, "%s%s", strncmp(line, "dnprof: ", 8) ? "dnprof: " : "", line);
    }
    fclose(f);
    if (remove)
        unlink(path);
}
