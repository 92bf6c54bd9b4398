/* container.c: a process in another container, seen from the host (ipc.h,
 * docs/containers.md).
 *
 * A container is namespaces: in its own mount namespace a process sees its own
 * /tmp, and the host reaches the same files through /proc/PID/root (the kernel
 * follows that link into the process's root, given the right to ptrace it); in
 * its own PID namespace it knows itself by another number, the last one on the
 * "NSpid:" line of /proc/PID/status. The runtime names its diagnostics socket,
 * and dnprof's agent its control socket and log, by that inner number, in the
 * paths the process sees. */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The inode of /proc/<who>/ns/<ns>; 0 when it cannot be read. */
static unsigned long long ns_inode(const char *who, const char *ns, int *denied) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/ns/%s", who, ns);
    struct stat st;
    if (stat(path, &st) != 0) {
        if (denied && (errno == EACCES || errno == EPERM))
            *denied = 1;
        return 0;
    }
    return (unsigned long long)st.st_ino;
}

/* The last number of the NSpid: line (the pid as the process sees itself), or
 * pid when the kernel has no such line. */
static pid_t inner_pid(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return pid;
    pid_t inner = pid;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        char *p = line + 6, *end;
        for (;;) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            inner = (pid_t)v;
            p = end;
        }
        break;
    }
    fclose(f);
    return inner;
}

int ipc_where_of(pid_t pid, ipc_where *w) {
    memset(w, 0, sizeof *w);
    w->pid = w->inner = pid;
    if (pid <= 0)
        return -1;
    char who[16];
    snprintf(who, sizeof who, "%d", (int)pid);
    int denied = 0;
    unsigned long long theirs = ns_inode(who, "mnt", &denied), ours = ns_inode("self", "mnt", NULL);
    w->denied = denied;
    w->inner = inner_pid(pid);
    if (theirs && ours && theirs != ours) {
        w->container = 1;
        snprintf(w->root, sizeof w->root, "/proc/%d/root", (int)pid);
    }
    return denied ? -1 : 0;
}

int ipc_outside(const ipc_where *w, const char *inside, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s%s", w ? w->root : "", inside);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

const char *ipc_inside(const ipc_where *w, const char *outside) {
    size_t n = w ? strlen(w->root) : 0;
    return n && strncmp(outside, w->root, n) == 0 ? outside + n : outside;
}

/* Copies the file at from to to (given mode, replaced if there); 0 or -1 with
 * errno. */
static int copy_file(const char *from, const char *to, mode_t mode) {
    FILE *in = fopen(from, "rbe");
    if (!in)
        return -1;
    char tmp[PATH_MAX + 24];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", to, (int)getpid());
    FILE *outf = fopen(tmp, "wbe");
    if (!outf) {
        int e = errno;
        fclose(in);
        errno = e;
        return -1;
    }
    char buf[1 << 16];
    size_t got;
    int bad = 0;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, got, outf) != got) {
            bad = 1;
            break;
        }
    int e = errno;
    bad |= ferror(in) != 0;
    fclose(in);
    bad |= fclose(outf) != 0;
    if (bad || chmod(tmp, mode) != 0 || rename(tmp, to) != 0) {
        e = bad ? (e ? e : EIO) : errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int ipc_place_agent(const ipc_where *w, const char *agent, const char *dir_inside, char *out, size_t cap,
                    char *err, size_t errlen) {
    if (!w->container) {
        snprintf(out, cap, "%s", agent);
        return 0;
    }
    char dest[PATH_MAX];
    int n = snprintf(out, cap, "%s/libdnprof.so", dir_inside);
    if (n < 0 || (size_t)n >= cap || ipc_outside(w, out, dest, sizeof dest) < 0) {
        snprintf(err, errlen, "the agent's path in pid %d's container is too long", (int)w->pid);
        return -1;
    }
    char dir_here[PATH_MAX];
    snprintf(dir_here, sizeof dir_here, "%s", dest);
    *strrchr(dir_here, '/') = 0;
    int noexec = ipc_noexec(dir_here);
    if (noexec || copy_file(agent, dest, 0755) != 0) {
        ipc_place_text(w->pid, dir_inside, noexec ? 0 : errno, noexec, err, errlen);
        return -1;
    }
    return 0;
}

int ipc_fetch_at(int dirfd, const char *name, const char *dest, char *err, size_t errlen) {
    /* copied into dest, not renamed over it: dest may be a device (-o /dev/stdout) */
    int in = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int e = errno, bad = in < 0 || out < 0;
    char buf[1 << 16];
    ssize_t got;
    while (!bad && (got = read(in, buf, sizeof buf)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        for (ssize_t done = 0, w; !bad && got > 0 && done < got; done += w > 0 ? w : 0)
            if ((w = write(out, buf + done, (size_t)(got - done))) < 0 && errno != EINTR)
                bad = 1, e = errno;
        if (got < 0)
            bad = 1, e = errno;
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0 && !bad)
        bad = 1, e = errno;
    if (bad) {
        snprintf(err, errlen, "cannot bring '%s' out to '%s': %s", name, dest, strerror(e));
        return -1;
    }
    unlinkat(dirfd, name, 0);
    return 0;
}
