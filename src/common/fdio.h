/* fdio.h: writing a whole buffer to a file descriptor, for the agent (its
 * messages) and the front end (a child's stderr): no allocation, nothing but
 * write(2) (send(2)), so it may run between fork and exec. */
#ifndef DNP_FDIO_H
#define DNP_FDIO_H

#include <stddef.h>

/* Writes all n bytes of p to fd, again after EINTR. 0, or -1 with errno. */
int dnp_write_all(int fd, const void *p, size_t n);

/* The same on a socket, without SIGPIPE when its reader is gone (EPIPE). */
int dnp_send_all(int fd, const void *p, size_t n);

#endif
