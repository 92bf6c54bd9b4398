/* proc.c: the target process as /proc shows it (ipc.h). */
#include "ipc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

long long ipc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- /proc ---- */

static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

int ipc_proc_maps_has(pid_t pid, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[PATH_MAX + 128];
    size_t nlen = strlen(name);
    int found = 0, any = 0;
    while (!found && fgets(line, sizeof line, f)) {
        any = 1;
        size_t len = strcspn(line, "\n");
        line[len] = 0;
        /* a file removed while mapped (the agent copied into a container, removed once loaded) */
        static const char deleted[] = " (deleted)";
        if (len >= sizeof deleted - 1 && strcmp(line + len - (sizeof deleted - 1), deleted) == 0)
            line[len -= sizeof deleted - 1] = 0;
        found = len >= nlen && strcmp(line + len - nlen, name) == 0;
    }
    fclose(f);
    return found ? 1 : any ? 0 : -1;
}

int ipc_proc_read(pid_t pid, ipc_proc *p) {
    memset(p, 0, sizeof *p);
    p->pid = pid;
    if (pid <= 0)
        return -1;
    char path[64], buf[1024];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (stat(path, &st) != 0)
        return -1;
    p->uid = st.st_uid;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    char *close_paren = strrchr(buf, ')');
    if (close_paren) {
        /* fields 3.. after the name; starttime is field 22 */
        char *q = close_paren + 2;
        for (int field = 3; field < 22 && q; field++) {
            q = strchr(q, ' ');
            if (q)
                q++;
        }
        if (q)
            p->start = strtoull(q, NULL, 10);
        if (close_paren[2] == 'Z')
            return -1; /* a zombie is no process to attach to */
    }
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (read_small(path, p->comm, sizeof p->comm) > 0)
        p->comm[strcspn(p->comm, "\n")] = 0;
    p->alive = 1;
    p->has_coreclr = ipc_proc_maps_has(pid, "/libcoreclr.so");
    p->has_agent = ipc_proc_maps_has(pid, "/libdnprof.so");
    return 0;
}

int ipc_proc_env(pid_t pid, const char *name, char *out, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    char *buf = malloc(1 << 20);
    if (!buf)
        return -1;
    ssize_t n = read_small(path, buf, 1 << 20);
    int rc = -1;
    size_t nlen = strlen(name);
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
        if (strncmp(buf + i, name, nlen) == 0 && buf[i + (ssize_t)nlen] == '=') {
            snprintf(out, cap, "%s", buf + i + nlen + 1);
            rc = 0;
            break;
        }
    }
    free(buf);
    return rc;
}

int ipc_proc_cmdline(pid_t pid, char *out, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    ssize_t n = cap > 1 ? read_small(path, out, cap) : -1;
    if (n <= 0)
        return -1;
    while (n > 0 && out[n - 1] == 0)
        n--; /* the last argument's NUL */
    for (ssize_t i = 0; i < n; i++)
        out[i] = out[i] ? out[i] : ' ';
    out[n] = 0;
    return n ? 0 : -1;
}

long long ipc_proc_start_epoch(const ipc_proc *p) {
    static long long btime = -1;
    if (btime < 0) {
        btime = 0;
        FILE *f = fopen("/proc/stat", "re");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "btime %lld", &btime) == 1)
                break;
        if (f)
            fclose(f);
    }
    long hz = sysconf(_SC_CLK_TCK);
    if (!btime || hz <= 0 || !p->start)
        return 0;
    return btime + (long long)(p->start / (unsigned long long)hz);
}
