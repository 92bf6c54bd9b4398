/* container_check.c: what dnprof checks before it loads the agent into a
 * process, in a container or not (ipc.h, docs/containers.md): an agent named
 * with --agent-path (present, an ELF shared object of the process's machine,
 * a profiler), the runtime's version, and the one-line errors with their fix
 * (no right to look into the process, a read-only or noexec /tmp). Pure
 * enough for the unit tests (tests/unit/test_container.c). */
#include "ipc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

unsigned ipc_elf_machine_fd(int fd, int *type) {
    Elf64_Ehdr h;
    if (type)
        *type = 0;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 ||
        h.e_ident[EI_CLASS] != ELFCLASS64)
        return 0;
    if (type)
        *type = h.e_type;
    return h.e_machine;
}

unsigned ipc_elf_machine_of(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    unsigned m = ipc_elf_machine_fd(fd, NULL);
    close(fd);
    return m;
}

static const char *machine_name(unsigned m) {
    return m == EM_X86_64 ? "x86-64" : m == EM_AARCH64 ? "arm64" : m == EM_386 ? "x86" : m == EM_ARM ? "arm" : "another machine";
}

/* Whether the open file holds the name the runtime looks the profiler up by. */
static int exports_class_factory(int fd) {
    static char buf[1 << 16];
    static const char want[] = "DllGetClassObject";
    size_t keep = 0;
    off_t at = 0;
    for (;;) {
        ssize_t got = pread(fd, buf + keep, sizeof buf - keep, at);
        if (got <= 0)
            return 0;
        at += got;
        size_t len = keep + (size_t)got;
        if (memmem(buf, len, want, sizeof want))
            return 1;
        keep = len < sizeof want ? len : sizeof want;
        memmove(buf, buf + len - keep, keep);
    }
}

/* Opens path, as the process whose root is root ("" for ours) sees it: inside
 * that root even through absolute symbolic links (openat2 RESOLVE_IN_ROOT),
 * else by the path under root. */
static int open_inside(const char *root, const char *path) {
#if defined(SYS_openat2) && defined(RESOLVE_IN_ROOT)
    if (root[0]) {
        int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rfd >= 0) {
            struct open_how how = {.flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
            int fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof how);
            int e = errno;
            close(rfd);
            if (fd >= 0 || e != ENOSYS) {
                errno = e;
                return fd;
            }
        }
    }
#endif
    char here[PATH_MAX];
    if ((size_t)snprintf(here, sizeof here, "%s%s", root, path) >= sizeof here) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(here, O_RDONLY | O_CLOEXEC);
}

int ipc_agent_path_check(const char *root, const char *path, unsigned machine, char *err, size_t errlen) {
    const char *fix = "name the libdnprof.so of this dnprof's release, as the program sees it";
    if (path[0] != '/') {
        snprintf(err, errlen, "--agent-path '%s': give the path as the program sees it, from its '/'", path);
        return -1;
    }
    int fd = open_inside(root, path);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "--agent-path '%s': %s%s%s; %s", path, strerror(e), root[0] ? " in the container (" : "",
                 root, fix);
        if (root[0])
            snprintf(err + strlen(err), errlen - strlen(err), ")");
        return -1;
    }
    struct stat st;
    int type = 0;
    unsigned m = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ipc_elf_machine_fd(fd, &type) : 0;
    const char *wrong = !S_ISREG(st.st_mode) ? "is not a file"
                        : !m ? "is not a 64-bit ELF file"
                        : type != ET_DYN ? "is not a shared object"
                        : machine && m != machine ? NULL
                        : !exports_class_factory(fd) ? "is not a profiler (it has no DllGetClassObject)"
                        : "";
    close(fd);
    if (!wrong)
        snprintf(err, errlen, "--agent-path '%s' is built for %s, the program runs on %s; %s", path, machine_name(m),
                 machine_name(machine), fix);
    else if (wrong[0])
        snprintf(err, errlen, "--agent-path '%s' %s; %s", path, wrong, fix);
    return !wrong || wrong[0] ? -1 : 0;
}

int ipc_runtime_too_old(const char *version, int info2) {
    if (!info2)
        return 1; /* no GetProcessInfo2: .NET 5 or older */
    if (!version || !version[0] || version[0] < '0' || version[0] > '9')
        return 0; /* not told: let the attach say */
    return atoi(version) < 8;
}

void ipc_runtime_old_text(pid_t pid, const char *comm, const char *version, char *out, size_t cap) {
    snprintf(out, cap,
             "pid %d (%s) runs .NET %s, older than .NET 8: dnprof attaches to .NET 8 and later; run it on .NET 8 or "
             "later (or start it with dnprof run)",
             (int)pid, comm, version && version[0] ? version : "5 or older");
}

void ipc_denied_text(pid_t pid, const char *comm, const char *what, int e, char *out, size_t cap) {
    snprintf(out, cap,
             "pid %d (%s): dnprof may not look into its %s (/proc/%d/%s: %s): run dnprof as root, or give it CAP_SYS_PTRACE "
             "(setcap cap_sys_ptrace+ep, or docker/kubectl's --cap-add SYS_PTRACE for a dnprof in a container)",
             (int)pid, comm, !strcmp(what, "ns") ? "namespaces" : "container", (int)pid, what, strerror(e));
}

void ipc_place_text(pid_t pid, const char *dir_inside, int e, int noexec, char *out, size_t cap) {
    if (noexec)
        snprintf(out, cap,
                 "cannot load the agent from pid %d's %s: it is mounted noexec, the runtime cannot map code from there; "
                 "put libdnprof.so in the image and name it with --agent-path",
                 (int)pid, dir_inside);
    else if (e == EROFS)
        snprintf(out, cap,
                 "pid %d's %s is read-only: the agent needs a writable directory there for its control socket and "
                 "output, and a copy of itself there unless --agent-path names one in the image; mount a writable "
                 "/tmp in the container (a tmpfs, a Kubernetes emptyDir), or start the program with TMPDIR set "
                 "to a writable directory (dnprof uses it when /tmp is read-only)",
                 (int)pid, dir_inside);
    else
        snprintf(out, cap, "cannot copy the agent into pid %d's container as '%s/libdnprof.so': %s", (int)pid,
                 dir_inside, strerror(e));
}

int ipc_noexec(const char *dir) {
    struct statvfs sv;
    return statvfs(dir, &sv) == 0 && (sv.f_flag & ST_NOEXEC) != 0;
}
