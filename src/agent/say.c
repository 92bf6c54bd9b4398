/* say.c: the agent's messages and its session file (say.h). */
#include "say.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "session.h"

static atomic_int session_fd = -1;
static atomic_int to_stderr = 1; /* no front end, or DNP_ENV_STDERR=1 */
static atomic_int copy_fd = -1;  /* agent_say_copy_to */
static atomic_int front_fd = -1; /* agent_say_front_end */

/* Best effort: a message that cannot be written is lost, nothing else. */
static void write_line(int fd, const char *line, size_t n) {
    (void)dnp_write_all(fd, line, n);
}

void agent_say_copy_to(int fd) {
    atomic_store(&copy_fd, fd);
}

void agent_say_front_end(int fd) {
    atomic_store(&front_fd, fd);
}

void agent_say(const char *fmt, ...) {
    int saved = errno;
    /* "dnprof: " for stderr and the copy; the session file's key "say" replaces it. */
    char line[1024] = "dnprof: ";
    const size_t prefix = 8;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + prefix, sizeof line - prefix - 1, fmt, ap);
    va_end(ap);
    if (m < 0) {
        errno = saved;
        return;
    }
    size_t n = prefix + (size_t)m;
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    for (size_t i = prefix; i < n; i++) /* one message, one line */
        if (line[i] == '\n')
            line[i] = ' ';
    line[n++] = '\n';
    int ffd = atomic_load(&front_fd);
    if (ffd >= 0) { /* dnprof attach prints it */
        write_line(ffd, line, n);
        errno = saved;
        return;
    }
    int sfd = atomic_load(&session_fd);
    int err_too = atomic_load(&to_stderr);
    if (sfd >= 0 && !err_too) { /* said once: where it was asked for */
        char rec[sizeof line];
        memcpy(rec, "say ", 4);
        memcpy(rec + 4, line + prefix, n - prefix);
        write_line(sfd, rec, 4 + n - prefix);
    }
    if (sfd < 0 || err_too)
        write_line(2, line, n);
    int cfd = atomic_load(&copy_fd);
    if (cfd >= 0)
        write_line(cfd, line, n);
    errno = saved;
}

int say_session_open(const char *dir, int also_stderr) {
    atomic_store(&to_stderr, 1);
    if (!dir || !*dir)
        return 0;
    char file[4096];
    int len = snprintf(file, sizeof file, "%s/" DNP_SESSION_FILE_PREFIX "%d", dir, (int)getpid());
    if (len < 0 || (size_t)len >= sizeof file)
        return -1;
    int saved = errno;
    int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    errno = saved;
    if (fd < 0)
        return -1;
    int old = atomic_exchange(&session_fd, fd);
    if (old >= 0)
        close(old);
    atomic_store(&to_stderr, also_stderr);
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    say_session_line("pid", pid);
    return 0;
}

void say_session_line(const char *key, const char *value) {
    int fd = atomic_load(&session_fd);
    if (fd < 0)
        return;
    char line[4096];
    int n = snprintf(line, sizeof line, "%s %s\n", key, value ? value : "");
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line) {
        n = sizeof line - 1;
        line[n - 1] = '\n';
    }
    int saved = errno;
    write_line(fd, line, (size_t)n);
    errno = saved;
}

void say_session_close(void) {
    int fd = atomic_exchange(&session_fd, -1);
    if (fd >= 0)
        close(fd);
    atomic_store(&to_stderr, 1);
}
