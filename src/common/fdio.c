/* fdio.c: writing a whole buffer (fdio.h). */
#include "fdio.h"

#include <errno.h>
#include <unistd.h>

int dnp_write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}
