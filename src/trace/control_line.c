/* control_line.c: the control socket's lines (control_line.h). */
#include "control_line.h"

#include <string.h>

#include "attach_blob.h"

dnp_ctl_cmd dnp_ctl_parse(const char *line, const char **arg) {
    *arg = NULL;
    if (strcmp(line, DNP_CONTROL_DETACH) == 0)
        return DNP_CTL_DETACH;
    if (strcmp(line, DNP_CONTROL_STATUS) == 0)
        return DNP_CTL_STATUS;
    if (strncmp(line, DNP_CONTROL_SNAPSHOT " /", sizeof DNP_CONTROL_SNAPSHOT + 1) == 0) {
        *arg = line + sizeof DNP_CONTROL_SNAPSHOT;
        return DNP_CTL_SNAPSHOT;
    }
    return DNP_CTL_UNKNOWN;
}

char *dnp_ctl_tail(dnp_ctl_buf *b) {
    return b->buf + b->len;
}

size_t dnp_ctl_room(const dnp_ctl_buf *b) {
    return sizeof b->buf - 1 - b->len;
}

int dnp_ctl_feed(dnp_ctl_buf *b, size_t n, int (*on_line)(void *ctx, dnp_ctl_cmd cmd, const char *arg,
                                                          const char *line),
                 void *ctx) {
    if (n > dnp_ctl_room(b))
        n = dnp_ctl_room(b);
    b->len += n;
    b->buf[b->len] = 0;
    size_t start = 0;
    int stop = 0;
    char *nl;
    while (!stop && (nl = memchr(b->buf + start, '\n', b->len - start)) != NULL) {
        char *line = b->buf + start;
        *nl = 0;
        if (nl > line && nl[-1] == '\r')
            nl[-1] = 0;
        const char *arg;
        dnp_ctl_cmd cmd = dnp_ctl_parse(line, &arg);
        stop = on_line(ctx, cmd, arg, line);
        start = (size_t)(nl + 1 - b->buf);
    }
    memmove(b->buf, b->buf + start, b->len - start);
    b->len -= start;
    b->buf[b->len] = 0;
    return b->len == sizeof b->buf - 1 ? -1 : 0;
}
