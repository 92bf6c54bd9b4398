/* test_fuzz.c: what the fuzzers (tests/fuzz, docs/testing.md#fuzzing) found,
 * kept as unit tests of the normal build: each committed input of
 * tests/fuzz/corpus/<reader> is read again (every crash, hang and oversized
 * allocation a fuzzer found is one of them), and each fix has a test of its own. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_blob.h"
#include "control_line.h"
#include "heap_format.h"
#include "heapgraph.h"
#include "test.h"
#include "trace_reader.h"

/* ---- every committed input of the fuzzers, read again ---- */

/* Calls fn on each file of tests/fuzz/corpus/<reader>; the number read. */
static int each_input(const char *reader, int (*fn)(const char *path, const uint8_t *data, size_t n)) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", DNPROF_SOURCE_DIR, reader);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t n = 0;
        uint8_t *data = (uint8_t *)test_read_file(path, &n);
        if (!data || fn(path, data, n) != 0) {
            fprintf(stderr, "%s: failed\n", path);
            free(data);
            closedir(d);
            return -1;
        }
        free(data);
        count++;
    }
    closedir(d);
    return count;
}

static int read_trace(const char *path, const uint8_t *data, size_t n) {
    (void)data;
    char err[256];
    dnp_trace *t = NULL;
    if (dnp_trace_load(path, &t, err, sizeof err) == 0) {
        if (t->nthreads > n / 4 + 1)
            return -1;
        dnp_trace_free(t);
    } else if (!err[0] || strchr(err, '\n')) {
        return -1;
    }
    dnp_trace_stream *s = NULL;
    if (dnp_trace_stream_open(path, &s, err, sizeof err) == 0) {
        dnp_trace_event e;
        while (dnp_trace_stream_next(s, &e) > 0)
            ;
    }
    dnp_trace_stream_close(s);
    return 0;
}

static int read_heap(const char *path, const uint8_t *data, size_t n) {
    (void)data, (void)n;
    char err[512] = "";
    dnp_heapgraph g;
    if (dnp_heapgraph_load(path, DNP_HG_ADDR | DNP_HG_FIELDS, &g, err, sizeof err) < 0)
        return !err[0] || strchr(err, '\n') ? -1 : 0;
    uint32_t *parent = NULL, *order = NULL, norder = 0;
    int rc = dnp_heapgraph_bfs(&g, &parent, &order, &norder) == 0 && dnp_heapgraph_dominators(&g, 0) == 0 ? 0 : -1;
    free(parent);
    free(order);
    dnp_heapgraph_release(&g);
    return rc;
}

static int read_blob(const char *path, const uint8_t *data, size_t n) {
    (void)path;
    dnp_attach_blob b;
    char err[256] = "";
    if (dnp_attach_blob_parse(data, n, &b, err, sizeof err) == 0)
        return b.output[0] == '/' && b.control_dir[0] == '/' ? 0 : -1;
    return err[0] ? 0 : -1;
}

static int count_line(void *ctx, dnp_ctl_cmd cmd, const char *arg, const char *line) {
    (void)cmd, (void)arg, (void)line;
    ++*(unsigned *)ctx;
    return 0;
}

static int read_control(const char *path, const uint8_t *data, size_t n) {
    (void)path;
    dnp_ctl_buf b = {.len = 0};
    unsigned lines = 0;
    while (n) {
        size_t k = n < dnp_ctl_room(&b) ? n : dnp_ctl_room(&b);
        memcpy(dnp_ctl_tail(&b), data, k);
        data += k, n -= k;
        if (dnp_ctl_feed(&b, k, count_line, &lines) < 0)
            break;
    }
    return 0;
}

TEST(fuzz_corpus_trace) {
    ASSERT_GT(each_input("trace", read_trace), 0);
    return 0;
}

TEST(fuzz_corpus_heap) {
    ASSERT_GT(each_input("heap", read_heap), 0);
    return 0;
}

TEST(fuzz_corpus_attach_blob) {
    ASSERT_GT(each_input("attach_blob", read_blob), 0);
    return 0;
}

TEST(fuzz_corpus_control) {
    ASSERT_GT(each_input("control", read_control), 0);
    return 0;
}

/* The control socket's lines, as the agent's thread takes them apart. */
typedef struct seen {
    int n;
    dnp_ctl_cmd cmd[8];
    char arg[8][64];
} seen;

static int keep_line(void *ctx, dnp_ctl_cmd cmd, const char *arg, const char *line) {
    seen *s = ctx;
    (void)line;
    if (s->n < 8) {
        s->cmd[s->n] = cmd;
        snprintf(s->arg[s->n], sizeof s->arg[0], "%s", arg ? arg : "");
        s->n++;
    }
    return 0;
}

TEST(control_line_parse) {
    dnp_ctl_buf b = {.len = 0};
    seen s = {.n = 0};
    const char *in = "status\r\ndetach\nsnapshot /tmp/a.dnheap\nsnapshot rel\nsta";
    memcpy(dnp_ctl_tail(&b), in, strlen(in));
    ASSERT_EQ(dnp_ctl_feed(&b, strlen(in), keep_line, &s), 0);
    ASSERT_EQ(s.n, 4);
    ASSERT_EQ(s.cmd[0], DNP_CTL_STATUS);
    ASSERT_EQ(s.cmd[1], DNP_CTL_DETACH);
    ASSERT_EQ(s.cmd[2], DNP_CTL_SNAPSHOT);
    ASSERT_STREQ(s.arg[2], "/tmp/a.dnheap");
    ASSERT_EQ(s.cmd[3], DNP_CTL_UNKNOWN); /* a snapshot's path is absolute */
    ASSERT_EQ(b.len, 3);                  /* "sta" waits for the rest */
    memcpy(dnp_ctl_tail(&b), "tus\n", 4);
    ASSERT_EQ(dnp_ctl_feed(&b, 4, keep_line, &s), 0);
    ASSERT_EQ(s.n, 5);
    ASSERT_EQ(s.cmd[4], DNP_CTL_STATUS);
    /* A line that fills the buffer without ending is refused. */
    size_t room = dnp_ctl_room(&b);
    memset(dnp_ctl_tail(&b), 'x', room);
    ASSERT_EQ(dnp_ctl_feed(&b, room, keep_line, &s), -1);
    return 0;
}
