/* container.c: a process in another container, seen from the host (ipc.h,
 * docs/containers.md).
 *
 * A container is namespaces: in its own mount namespace a process sees its own
 * /tmp, and the host reaches the same files through /proc/PID/root (the kernel
 * follows that link into the process's root, given the right to ptrace it); in
 * its own PID namespace it knows itself by another number, the last one on the
 * "NSpid:" line of /proc/PID/status. The runtime names its diagnostics socket,
 * and dnprof's agent its control socket and log, by that inner number, in the
 * paths the process sees. In its own user namespace it knows its user by
 * another number too (its uid_map), and a file system mounted there takes only
 * files of the users it maps. */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
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

/* From /proc/PID/status: the last number of the NSpid: line (the pid as the
 * process sees itself; pid when the kernel has no such line), and its
 * effective uid and gid as seen from here. */
static void read_status(pid_t pid, ipc_where *w) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    unsigned real, eff;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Uid: %u %u", &real, &eff) == 2)
            w->uid = (uid_t)eff;
        else if (sscanf(line, "Gid: %u %u", &real, &eff) == 2)
            w->gid = (gid_t)eff;
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        char *p = line + 6, *end;
        for (;;) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            w->inner = (pid_t)v;
            p = end;
        }
    }
    fclose(f);
}

/* uid (as seen from here) as pid's user namespace sees it: by its uid_map,
 * whose lines are "inside outside count", outside as seen from here. uid
 * itself when it is not mapped. */
static uid_t uid_in_ns(pid_t pid, uid_t uid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    FILE *f = fopen(path, "re");
    unsigned long in, out, count;
    uid_t got = uid;
    while (f && fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3)
        if (uid >= out && uid - out < count) {
            got = (uid_t)(in + (uid - out));
            break;
        }
    if (f)
        fclose(f);
    return got;
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
    w->uid = w->uid_in = (uid_t)-1;
    w->gid = (gid_t)-1;
    read_status(pid, w);
    if (theirs && ours && theirs != ours) {
        w->container = 1;
        snprintf(w->root, sizeof w->root, "/proc/%d/root", (int)pid);
    }
    unsigned long long their_users = ns_inode(who, "user", NULL), our_users = ns_inode("self", "user", NULL);
    w->userns = their_users && our_users && their_users != our_users;
    w->uid_in = w->userns && w->uid != (uid_t)-1 ? uid_in_ns(pid, w->uid) : w->uid;
    return denied ? -1 : 0;
}

uid_t ipc_uid_inside(const ipc_where *w, uid_t uid) {
    return w && w->userns && uid == w->uid ? w->uid_in : uid;
}

void ipc_as_owner(const ipc_where *w, int on) {
    /* A file system mounted in a user namespace takes no file of a user it does not map (EOVERFLOW):
     * root here is not one of them, the process's own user is. Only the file system's checks change. */
    if (!w || !w->userns || geteuid() != 0 || w->uid == (uid_t)-1 || w->gid == (gid_t)-1)
        return;
    setfsgid(on ? w->gid : getegid());
    setfsuid(on ? w->uid : geteuid());
}

int ipc_outside(const ipc_where *w, const char *inside, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s%s", w ? w->root : "", inside);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

const char *ipc_inside(const ipc_where *w, const char *outside) {
    size_t n = w ? strlen(w->root) : 0;
    return n && strncmp(outside, w->root, n) == 0 ? outside + n : outside;
}

/* Copies the file at from to to (given mode, replaced if there), made as the
 * process's own user in a user namespace (ipc_as_owner); 0 or -1 with errno. */
static int copy_file(const ipc_where *w, const char *from, const char *to, mode_t mode) {
    FILE *in = fopen(from, "rbe"); /* as ourselves: the agent may be where the process's user cannot read */
    if (!in)
        return -1;
    char tmp[PATH_MAX + 24];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", to, (int)getpid());
    ipc_as_owner(w, 1); /* to the end: a rename there is a file made too */
    FILE *outf = fopen(tmp, "wbe");
    if (!outf) {
        int e = errno;
        fclose(in);
        ipc_as_owner(w, 0);
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
        ipc_as_owner(w, 0);
        errno = e;
        return -1;
    }
    ipc_as_owner(w, 0);
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
    if (noexec || copy_file(w, agent, dest, 0755) != 0) {
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
