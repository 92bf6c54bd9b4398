/* fdio.c: writing a whole buffer (fdio.h). */
#include "fdio.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

/* sock: send(2) without SIGPIPE, for a socket whose reader may be gone. */
static int all(int fd, const char *c, size_t n, int sock) {
    while (n > 0) {
        ssize_t w = sock ? send(fd, c, n, MSG_NOSIGNAL) : write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int dnp_write_all(int fd, const void *p, size_t n) {
    return all(fd, p, n, 0);
}

int dnp_send_all(int fd, const void *p, size_t n) {
    return all(fd, p, n, 1);
}
