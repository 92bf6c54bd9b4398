/* test_fuzz.c: what the fuzzers (tests/fuzz, docs/testing.md#fuzzing) found,
 * kept as unit tests of the normal build: each committed input of
 * tests/fuzz/corpus/<reader> is read again (every crash, hang and oversized
 * allocation a fuzzer found is one of them), and each fix has a test of its own
 * on a file made here, byte by byte. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach_blob.h"
#include "cli_metadata.h"
#include "control_line.h"
#include "heap_format.h"
#include "heapgraph.h"
#include "pprof.h"
#include "test.h"
#include "trace_reader.h"

/* ---- a trace made byte by byte ---- */

typedef struct rawbuf {
    uint8_t b[4096];
    size_t n;
} rawbuf;

static void raw_put(rawbuf *r, const void *p, size_t n) {
    if (r->n + n <= sizeof r->b) {
        memcpy(r->b + r->n, p, n);
        r->n += n;
    }
}

static void raw_header(rawbuf *r) {
    uint8_t h[DNP_TRACE_HEADER_SIZE] = {0};
    memcpy(h, DNP_TRACE_MAGIC, 8);
    h[8] = DNP_TRACE_MAJOR;
    dnp_put_u32le(h + 12, DNP_TRACE_HEADER_SIZE);
    dnp_put_u64le(h + 16, 4242);
    raw_put(r, h, sizeof h);
}

/* A chunk of thread with payload p (its CRC right), claiming plen bytes
 * (0: the payload's own size). */
static void raw_chunk(rawbuf *r, uint32_t thread, const uint8_t *p, uint32_t n, uint32_t plen) {
    uint8_t h[DNP_CHUNK_HEADER_SIZE] = {0};
    dnp_put_u32le(h, DNP_CHUNK_MAGIC);
    dnp_put_u32le(h + 4, plen ? plen : n);
    dnp_put_u32le(h + 8, dnp_crc32(p, n));
    dnp_put_u32le(h + 12, thread);
    raw_put(r, h, sizeof h);
    raw_put(r, p, n);
}

static const char *raw_write(const rawbuf *r) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/dnprof-fuzz-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    ssize_t w = write(fd, r->b, r->n);
    close(fd);
    return w == (ssize_t)r->n ? path : NULL;
}

/* A THREAD record (or a chunk) naming thread 524288 in a file of a few hundred
 * bytes made the reader grow its table of threads to 524288 (16 MiB), and the
 * front end its tables by thread after it (fuzz_trace, an allocation over
 * -malloc_limit_mb): an ordinal is now at most the file's size / 4. */
TEST(fuzz_trace_thread_ordinal_bounded_by_file) {
    rawbuf r = {.n = 0};
    raw_header(&r);
    uint8_t rec[16], *p = rec;
    *p++ = DNP_REC_THREAD;
    uint8_t body[12], *q = dnp_varint_put(body, 1u << 19);
    q = dnp_varint_put(q, 77);
    *p++ = (uint8_t)(q - body);
    memcpy(p, body, (size_t)(q - body));
    p += q - body;
    raw_chunk(&r, 0, rec, (uint32_t)(p - rec), 0);
    const char *path = raw_write(&r);
    ASSERT(path);
    char err[256];
    dnp_trace *t = NULL;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->nthreads, 0); /* the record is refused, not believed */

    rawbuf c = {.n = 0};
    raw_header(&c);
    raw_chunk(&c, 1u << 19, rec, 0, 0);
    FILE *f = fopen(path, "wb");
    ASSERT(f);
    ASSERT_EQ(fwrite(c.b, 1, c.n, f), c.n);
    fclose(f);
    dnp_trace_free(t);
    t = NULL;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_CORRUPT);
    ASSERT_EQ(t->nthreads, 0);
    ASSERT_CONTAINS(t->status_text, "impossible thread");
    dnp_trace_free(t);
    unlink(path);
    return 0;
}

/* Limits this process's data segment to what it uses now and 8 MiB more. */
static int limit_8mib(void) {
    long pages = 0, data = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %*s %*s %*s %*s %ld", &pages, &data) != 2)
        return -1;
    fclose(f);
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = (rlim_t)data * (rlim_t)sysconf(_SC_PAGESIZE) + (8u << 20);
    return setrlimit(RLIMIT_DATA, &lim);
}

/* Runs fn(arg, err) in a child that may allocate 8 MiB at most (a reader that
 * believes a length field fails there with "out of memory"): its return (0 or
 * 1) and its line in err, or -1. */
static int in_8mib(int (*fn)(const void *arg, char *err, size_t errlen), const void *arg, char *err,
                   size_t errlen) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        char line[512] = "";
        int rc = limit_8mib() == 0 ? fn(arg, line, sizeof line) : 3;
        ssize_t w = write(fds[1], line, strlen(line));
        (void)w;
        _exit(rc);
    }
    close(fds[1]);
    ssize_t n = pid > 0 ? read(fds[0], err, errlen - 1) : -1;
    err[n > 0 ? n : 0] = 0;
    close(fds[0]);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* 0 when the trace at arg loads and is said to be cut short after its header. */
static int load_cut_trace(const void *arg, char *err, size_t errlen) {
    dnp_trace *t = NULL;
    if (dnp_trace_load(arg, &t, err, errlen) != 0)
        return 2;
    return t->status == DNP_TRACE_TRUNCATED && t->bytes_read == DNP_TRACE_HEADER_SIZE ? 0 : 1;
}

/* A chunk claiming 16 MiB in a file of 60 bytes: the file is cut short there,
 * and the reader says so without making room for 16 MiB first (it did, in a
 * file or a pipe alike: any fuzzer input could cost 16 MiB). */
TEST(fuzz_trace_payload_length_past_the_file) {
    rawbuf r = {.n = 0};
    raw_header(&r);
    raw_chunk(&r, 0, (const uint8_t *)"\x06\x01\x05", 3, DNP_CHUNK_MAX_PAYLOAD);
    const char *path = raw_write(&r);
    ASSERT(path);
    char err[512];
    ASSERT_EQ(in_8mib(load_cut_trace, path, err, sizeof err), 0);
    unlink(path);
    /* The same from a pipe, whose size the reader cannot know beforehand. */
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(write(fds[1], r.b, r.n), (ssize_t)r.n);
    close(fds[1]);
    char pipe_path[64];
    snprintf(pipe_path, sizeof pipe_path, "/proc/self/fd/%d", fds[0]);
    ASSERT_EQ(in_8mib(load_cut_trace, pipe_path, err, sizeof err), 0);
    close(fds[0]);
    return 0;
}

/* ---- a heap snapshot made record by record ---- */

/* 0 when the snapshot at arg does not load (the reader's line in err). */
static int heap_refused(const void *arg, char *err, size_t errlen) {
    dnp_heapgraph g;
    if (dnp_heapgraph_load(arg, DNP_HG_ADDR | DNP_HG_FIELDS, &g, err, errlen) < 0)
        return 0;
    dnp_heapgraph_release(&g);
    return 1;
}

/* A snapshot of one chunk of records [buf, p) at path (a mkstemp template),
 * loaded in 8 MiB: 0 when refused, with the reader's line in err. */
static int heap_load_records(char *path, const uint8_t *buf, const uint8_t *p, char *err, size_t errlen) {
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f)
        return -2;
    uint8_t hdr[DNP_HEAP_HEADER_SIZE] = {0};
    memcpy(hdr, DNP_HEAP_MAGIC, 8);
    dnp_put_u32le(hdr + 8, DNP_HEAP_VERSION);
    dnp_put_u32le(hdr + 12, DNP_HEAP_HEADER_SIZE);
    uint32_t h[3] = {DNP_HEAP_CHUNK_MAGIC, (uint32_t)(p - buf), dnp_crc32(buf, (size_t)(p - buf))};
    fwrite(hdr, sizeof hdr, 1, f);
    fwrite(h, sizeof h, 1, f);
    fwrite(buf, 1, (size_t)(p - buf), f);
    fclose(f);
    int rc = in_8mib(heap_refused, path, err, errlen);
    unlink(path);
    return rc;
}

static uint8_t *heap_end(uint8_t *p, uint64_t objects, uint64_t refs) {
    return dnp_heap_put_END(p, &(struct dnp_heap_END){.status = DNP_HEAP_COMPLETE, .objects = objects,
                                                      .refs = refs, .message = "", .message_len = 0});
}

/* An END record saying 100 million objects in a file of 60 bytes: the reader
 * sized its arrays by it (2 GB) before it found one object (the seed with its
 * END record changed: fuzz_heap's 512 MiB -malloc_limit_mb stops the load). */
TEST(fuzz_heap_end_counts_bounded_by_file) {
    uint8_t buf[256], *p = buf;
    char path[] = "/tmp/dnprof-fuzz-heap-XXXXXX", err[512];
    p = dnp_heap_put_OBJECT(p, &(struct dnp_heap_OBJECT){.addr = 0x1000, .cls = 0, .size = 24});
    p = heap_end(p, 100000000, 0);
    ASSERT_EQ(heap_load_records(path, buf, p, err, sizeof err), 0);
    ASSERT_CONTAINS(err, "can hold");
    return 0;
}

/* A class index of ten million in a NAME record grew the class tables to ten
 * million entries (170 MB, zeroed) for a file of 60 bytes. */
TEST(fuzz_heap_class_index_bounded_by_file) {
    uint8_t buf[256], *p = buf;
    char path[] = "/tmp/dnprof-fuzz-heap-XXXXXX", err[512];
    p = dnp_heap_put_OBJECT(p, &(struct dnp_heap_OBJECT){.addr = 0x1000, .cls = 1, .size = 24});
    p = dnp_heap_put_NAME(p, &(struct dnp_heap_NAME){.cls = 9999999, .name = "A", .name_len = 1});
    p = heap_end(p, 1, 0);
    ASSERT_EQ(heap_load_records(path, buf, p, err, sizeof err), 0);
    ASSERT_CONTAINS(err, "class index");
    return 0;
}

/* A trace whose call tree has no samples: the pprof encoder copied its empty
 * sample list from a NULL pointer (memcpy(dst, NULL, 0)), which UBSan reports
 * (fuzz_trace found it). The fuzz build stops on it; -DDNPROF_SANITIZE=ON
 * prints the runtime error and goes on: this test passes there with the line. */
TEST(fuzz_pprof_without_samples) {
    const dnp_pprof_type types[] = {{"calls", "count"}};
    dnp_pprof *p = dnp_pprof_new(types, 1, NULL, 0);
    ASSERT(p);
    uint8_t *out = NULL;
    size_t len = 0;
    ASSERT_EQ(dnp_pprof_encode(p, &out, &len), 0);
    ASSERT_GT(len, 0);
    free(out);
    dnp_pprof_free(p);
    return 0;
}

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

/* A metadata seed: opened, or refused with one line (cli_metadata.h). */
static int read_metadata(const char *path, const uint8_t *data, size_t n) {
    (void)path;
    dnp_md md;
    char err[256] = "";
    if (dnp_md_open(&md, data, n, 1, err, sizeof err) == 0)
        return md.rows[DNP_MD_TYPEDEF] ? 0 : -1;
    return !err[0] || strchr(err, '\n') ? -1 : 0;
}

TEST(fuzz_corpus_metadata) {
    ASSERT_GT(each_input("metadata", read_metadata), 1);
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
