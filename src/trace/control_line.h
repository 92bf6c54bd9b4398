/* control_line.h: the control socket's lines (control.h, attach_blob.h has the
 * words), taken apart without any I/O, so that the agent's control thread and
 * the fuzzer (tests/fuzz/fuzz_control.c) run the same code.
 *
 * A client's bytes gather in a dnp_ctl_buf; each whole line (ended by '\n', a
 * '\r' before it dropped) is handed to the caller as a command and its
 * argument. A line that fills the buffer without ending is refused: the caller
 * says "error line too long" and closes the client. */
#ifndef DNP_CONTROL_LINE_H
#define DNP_CONTROL_LINE_H

#include <stddef.h>

#define DNP_CTL_BUF 4352 /* a command and a path */

typedef enum dnp_ctl_cmd {
    DNP_CTL_UNKNOWN, /* anything else: the reply names the commands */
    DNP_CTL_DETACH,  /* "detach" */
    DNP_CTL_STATUS,  /* "status" */
    DNP_CTL_SNAPSHOT /* "snapshot /absolute/path": arg is the path */
} dnp_ctl_cmd;

typedef struct dnp_ctl_buf {
    size_t len;
    char buf[DNP_CTL_BUF]; /* NUL-terminated: len < DNP_CTL_BUF */
} dnp_ctl_buf;

/* The command of one line (NUL-terminated, no newline); *arg its argument
 * (the snapshot's path) or NULL. */
dnp_ctl_cmd dnp_ctl_parse(const char *line, const char **arg);

/* Where the next bytes go: up to dnp_ctl_room(b) of them at dnp_ctl_tail(b). */
char *dnp_ctl_tail(dnp_ctl_buf *b);
size_t dnp_ctl_room(const dnp_ctl_buf *b);

/* n bytes were written at the tail: calls on_line for each whole line now in
 * the buffer (the line is only valid during the call; a non-zero return stops)
 * and keeps the rest. 0, or -1 when the buffer is full without a line end. */
int dnp_ctl_feed(dnp_ctl_buf *b, size_t n, int (*on_line)(void *ctx, dnp_ctl_cmd cmd, const char *arg,
                                                          const char *line),
                 void *ctx);

#endif
