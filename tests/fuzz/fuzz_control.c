/* fuzz_control.c: the control socket's line parser (src/trace/control_line.c),
 * the code the agent's control thread runs on what a client sends. The input
 * arrives in pieces as recv would hand them: the first byte picks the piece
 * sizes. Checks what the agent relies on: a line handed over holds no newline,
 * a snapshot's path is absolute, the buffer never overflows. Seeds:
 * tests/fuzz/corpus/control; dictionary: tests/fuzz/control.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_line.h"

static int on_line(void *ctx, dnp_ctl_cmd cmd, const char *arg, const char *line) {
    unsigned *lines = ctx;
    ++*lines;
    if (strchr(line, '\n') || (cmd == DNP_CTL_SNAPSHOT && (!arg || arg[0] != '/')) ||
        (cmd != DNP_CTL_SNAPSHOT && arg)) {
        fprintf(stderr, "fuzz_control: a line taken apart wrong\n");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    size_t piece = (size_t)data[0] * 17 + 1; /* 1 .. 4336 bytes a recv */
    data++, size--;
    dnp_ctl_buf *b = calloc(1, sizeof *b);
    unsigned lines = 0;
    while (b && size) {
        size_t n = piece < size ? piece : size;
        if (n > dnp_ctl_room(b))
            n = dnp_ctl_room(b);
        memcpy(dnp_ctl_tail(b), data, n);
        data += n, size -= n;
        if (dnp_ctl_feed(b, n, on_line, &lines) < 0)
            break; /* the agent closes the client */
        if (b->len >= DNP_CTL_BUF || b->buf[b->len] != 0) {
            fprintf(stderr, "fuzz_control: the buffer is not kept terminated\n");
            abort();
        }
    }
    free(b);
    return 0;
}
