/* test_attach.c: the attach request's blob (trace/attach_blob.h), written by
 * dnprof and parsed by the agent inside the profiled process: a round trip, then
 * every way a blob can be cut short or lie, then random blobs. The parser must
 * refuse them all with a reason, and never read outside what it was given. Named
 * trace_attach_* (the blob is part of the trace library): `dnprof_unit trace`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attach_blob.h"
#include "test.h"
#include "trace_format.h"

static void sample(dnp_attach_blob *b) {
    memset(b, 0, sizeof *b);
    strcpy(b->events, "classes,jit,exceptions");
    strcpy(b->output, "/tmp/some dir/app.trace");
    strcpy(b->control_dir, "/tmp/dnprof-1000");
    b->flush_ms = 50;
    b->trigger_pid = 4242;
    b->exc_stacks = 1;
    b->host_pid = 5221;
}

static long encode(const dnp_attach_blob *b, uint8_t *buf, size_t cap) {
    return dnp_attach_blob_encode(b, buf, cap);
}

/* Parses a copy of exactly len bytes on the heap, so that a read past the end
 * is an ASan error rather than luck. */
static int parse_exact(const uint8_t *p, size_t len, dnp_attach_blob *out, char *err, size_t errlen) {
    uint8_t *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, p, len);
    int rc = dnp_attach_blob_parse(len ? copy : NULL, len, out, err, errlen);
    free(copy);
    return rc;
}

TEST(trace_attach_blob_roundtrip) {
    dnp_attach_blob in, out;
    uint8_t buf[DNP_BLOB_MAX];
    sample(&in);
    long n = encode(&in, buf, sizeof buf);
    ASSERT_GT(n, DNP_BLOB_HEADER_SIZE);
    ASSERT_EQ(memcmp(buf, "DNPA", 4), 0);
    ASSERT_EQ(dnp_get_u32le(buf + 8), n);
    char err[256] = "";
    ASSERT_EQ(parse_exact(buf, (size_t)n, &out, err, sizeof err), 0);
    ASSERT_STREQ(out.events, in.events);
    ASSERT_STREQ(out.output, in.output);
    ASSERT_STREQ(out.control_dir, in.control_dir);
    ASSERT_EQ(out.exc_stacks, 1);
    ASSERT_EQ(out.flush_ms, 50);
    ASSERT_EQ(out.trigger_pid, 4242);
    ASSERT_EQ(out.host_pid, 5221);

    /* Optional fields left out: events empty means the default. */
    in.events[0] = 0;
    in.flush_ms = 0;
    in.trigger_pid = 0;
    n = encode(&in, buf, sizeof buf);
    ASSERT_EQ(parse_exact(buf, (size_t)n, &out, err, sizeof err), 0);
    ASSERT_STREQ(out.events, "");
    ASSERT_EQ(out.flush_ms, 0);
    return 0;
}

TEST(trace_attach_blob_encode_limits) {
    dnp_attach_blob in;
    uint8_t buf[DNP_BLOB_MAX];
    sample(&in);
    ASSERT_EQ(encode(&in, buf, 20), -1); /* does not fit */
    memset(in.control_dir, 'd', sizeof in.control_dir); /* no NUL: too long */
    ASSERT_EQ(encode(&in, buf, sizeof buf), -1);
    return 0;
}

TEST(trace_attach_blob_truncated) {
    dnp_attach_blob in, out;
    uint8_t buf[DNP_BLOB_MAX];
    sample(&in);
    long n = encode(&in, buf, sizeof buf);
    char err[256];
    /* Every cut: refused, whether or not the total is fixed up to match. */
    for (long len = 0; len < n; len++) {
        ASSERT_EQ(parse_exact(buf, (size_t)len, &out, err, sizeof err), -1);
        ASSERT_NE(err[0], 0);
        if (len >= DNP_BLOB_HEADER_SIZE) {
            uint8_t fixed[DNP_BLOB_MAX];
            memcpy(fixed, buf, (size_t)len);
            dnp_put_u32le(fixed + 8, (uint32_t)len);
            int rc = parse_exact(fixed, (size_t)len, &out, err, sizeof err);
            /* A cut exactly between fields may leave a valid blob only if the
             * required fields are all before it; this sample ends with the
             * trigger pid, so a cut before the control dir's end must fail. */
            if (rc == 0) {
                ASSERT_EQ(out.output[0], '/');
                ASSERT_EQ(out.control_dir[0], '/');
            }
        }
    }
    return 0;
}

TEST(trace_attach_blob_lies) {
    dnp_attach_blob in, out;
    uint8_t buf[DNP_BLOB_MAX], bad[DNP_BLOB_MAX + 16];
    char err[256];
    sample(&in);
    long n = encode(&in, buf, sizeof buf);

    /* the total says more, or less, than arrived */
    memcpy(bad, buf, (size_t)n);
    dnp_put_u32le(bad + 8, (uint32_t)n + 1);
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "says");
    dnp_put_u32le(bad + 8, (uint32_t)n - 1);
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);

    /* bad magic, version, header size */
    memcpy(bad, buf, (size_t)n);
    bad[0] = 'X';
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);
    memcpy(bad, buf, (size_t)n);
    bad[4] = 2;
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "version");
    memcpy(bad, buf, (size_t)n);
    bad[6] = 4;
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);
    memcpy(bad, buf, (size_t)n);
    bad[6] = 0xff;
    bad[7] = 0xff;
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);

    /* the first field's length runs past the end */
    memcpy(bad, buf, (size_t)n);
    bad[DNP_BLOB_HEADER_SIZE + 2] = 0xff;
    bad[DNP_BLOB_HEADER_SIZE + 3] = 0xff;
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "left");

    /* a NUL inside a string */
    memcpy(bad, buf, (size_t)n);
    bad[DNP_BLOB_HEADER_SIZE + 4 + 3] = 0;
    ASSERT_EQ(parse_exact(bad, (size_t)n, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "NUL");

    /* a field twice */
    size_t m = (size_t)n;
    memcpy(bad, buf, m);
    uint8_t dup[] = {1, 0, 3, 0, 'j', 'i', 't'};
    memcpy(bad + m, dup, sizeof dup);
    m += sizeof dup;
    dnp_put_u32le(bad + 8, (uint32_t)m);
    ASSERT_EQ(parse_exact(bad, m, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "twice");

    /* a number of the wrong size */
    m = (size_t)n;
    memcpy(bad, buf, m);
    uint8_t small[] = {3, 0, 2, 0, 1, 2};
    /* replace nothing: flush ms is there already, so build without it */
    dnp_attach_blob no_flush = in;
    no_flush.flush_ms = 0;
    long k = encode(&no_flush, bad, sizeof bad);
    memcpy(bad + k, small, sizeof small);
    dnp_put_u32le(bad + 8, (uint32_t)(k + (long)sizeof small));
    ASSERT_EQ(parse_exact(bad, (size_t)k + sizeof small, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "not 4");

    /* an unknown field is skipped */
    uint8_t future[] = {200, 0, 2, 0, 'h', 'i'};
    k = encode(&in, bad, sizeof bad);
    memcpy(bad + k, future, sizeof future);
    dnp_put_u32le(bad + 8, (uint32_t)(k + (long)sizeof future));
    ASSERT_EQ(parse_exact(bad, (size_t)k + sizeof future, &out, err, sizeof err), 0);
    ASSERT_STREQ(out.output, in.output);

    /* relative or missing paths, a flush period out of range */
    dnp_attach_blob b = in;
    strcpy(b.output, "app.trace");
    k = encode(&b, bad, sizeof bad);
    ASSERT_EQ(parse_exact(bad, (size_t)k, &out, err, sizeof err), -1);
    b = in;
    b.control_dir[0] = 0;
    k = encode(&b, bad, sizeof bad);
    ASSERT_EQ(parse_exact(bad, (size_t)k, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "control directory");
    b = in;
    b.flush_ms = 60000;
    k = encode(&b, bad, sizeof bad);
    ASSERT_EQ(parse_exact(bad, (size_t)k, &out, err, sizeof err), -1);

    /* a string longer than its buffer */
    m = DNP_BLOB_HEADER_SIZE;
    memcpy(bad, buf, DNP_BLOB_HEADER_SIZE);
    bad[m++] = DNP_BLOB_CONTROL_DIR;
    bad[m++] = 0;
    bad[m++] = DNP_BLOB_DIR_MAX;
    bad[m++] = 0;
    bad[m] = '/';
    memset(bad + m + 1, 'a', DNP_BLOB_DIR_MAX - 1);
    m += DNP_BLOB_DIR_MAX;
    dnp_put_u32le(bad + 8, (uint32_t)m);
    ASSERT_EQ(parse_exact(bad, m, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "more than");

    /* NULL data, or nothing */
    ASSERT_EQ(dnp_attach_blob_parse(NULL, 10, &out, err, sizeof err), -1);
    ASSERT_EQ(dnp_attach_blob_parse(buf, 0, &out, err, sizeof err), -1);
    return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

/* Strings that came back are NUL-terminated inside their buffers. */
static int terminated(const dnp_attach_blob *b) {
    return memchr(b->events, 0, sizeof b->events) && memchr(b->output, 0, sizeof b->output) &&
           memchr(b->control_dir, 0, sizeof b->control_dir);
}

TEST(trace_attach_blob_fuzz) {
    dnp_attach_blob in, out;
    uint8_t buf[DNP_BLOB_MAX], m[DNP_BLOB_MAX];
    char err[256];
    sample(&in);
    long n = encode(&in, buf, sizeof buf);
    unsigned accepted = 0;
    for (int round = 0; round < 200000; round++) {
        size_t len;
        if (round % 4 == 0) {
            /* pure noise, sometimes with a valid header in front */
            len = rng() % 256;
            for (size_t i = 0; i < len; i++)
                m[i] = (uint8_t)rng();
            if (round % 8 == 0 && len >= DNP_BLOB_HEADER_SIZE) {
                memcpy(m, buf, DNP_BLOB_HEADER_SIZE);
                dnp_put_u32le(m + 8, (uint32_t)len);
            }
        } else {
            /* a valid blob with a few bytes changed, cut or grown */
            len = (size_t)n;
            memcpy(m, buf, len);
            int flips = 1 + (int)(rng() % 4);
            for (int f = 0; f < flips; f++)
                m[rng() % len] = (uint8_t)rng();
            if (rng() % 3 == 0)
                len = rng() % (len + 1);
            else if (rng() % 5 == 0)
                for (int g = (int)(rng() % 16); g > 0 && len < sizeof m; g--)
                    m[len++] = (uint8_t)rng();
            if (rng() % 2 && len >= DNP_BLOB_HEADER_SIZE)
                dnp_put_u32le(m + 8, (uint32_t)len);
        }
        memset(&out, 0x5a, sizeof out);
        int rc = parse_exact(m, len, &out, err, sizeof err);
        ASSERT(rc == 0 || rc == -1);
        if (rc == 0) {
            accepted++;
            ASSERT(terminated(&out));
            ASSERT_EQ(out.output[0], '/');
            ASSERT_EQ(out.control_dir[0], '/');
        } else {
            ASSERT_NE(err[0], 0);
        }
    }
    /* Flips inside the strings keep some blobs valid: the loop saw both. */
    ASSERT_GT(accepted, 0);
    return 0;
}

TEST(trace_attach_events_appended) {
    /* The catch-up events come after every event that existed before them. */
    ASSERT_GE(DNP_EV_ExistingAppDomain, 102);
    ASSERT_EQ(DNP_EV_ExistingAssembly, DNP_EV_ExistingAppDomain + 1);
    ASSERT_EQ(DNP_EV_ExistingModule, DNP_EV_ExistingAppDomain + 2);
    ASSERT_EQ(DNP_EV_ExistingThread, DNP_EV_ExistingAppDomain + 3);
    ASSERT_EQ(DNP_NV_ExistingAssembly, 4);
    ASSERT_EQ(DNP_NV_ExistingThread, 3);
    return 0;
}

/* The agent's side: InitializeForAttach refuses a bad blob before it touches
 * anything of the runtime's (the info object here is NULL). */
#include "callbacks.h"

TEST(trace_attach_agent_refuses_bad_blobs) {
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rng();
    ASSERT_EQ(cb_InitializeForAttach(NULL, NULL, NULL, 0), E_INVALIDARG);
    ASSERT_EQ(cb_InitializeForAttach(NULL, NULL, junk, sizeof junk), E_INVALIDARG);
    dnp_attach_blob in;
    uint8_t buf[DNP_BLOB_MAX];
    sample(&in);
    long n = encode(&in, buf, sizeof buf);
    ASSERT_EQ(cb_InitializeForAttach(NULL, NULL, buf, (UINT)n - 1), E_INVALIDARG);
    ASSERT(!atomic_load(&g_agent.active));
    return 0;
}

/* dnprof attach --sample: the mode and rate travel in the blob, out of range refused. */
TEST(trace_attach_blob_sample) {
    dnp_attach_blob in, out;
    uint8_t buf[DNP_BLOB_MAX];
    char err[256] = "";
    sample(&in);
    in.sample = 2;
    in.sample_rate = 1000;
    long n = encode(&in, buf, sizeof buf);
    ASSERT_GT(n, 0);
    ASSERT_EQ(parse_exact(buf, (size_t)n, &out, err, sizeof err), 0);
    ASSERT_EQ(out.sample, 2);
    ASSERT_EQ(out.sample_rate, 1000);
    in.sample = 4;
    n = encode(&in, buf, sizeof buf);
    ASSERT_EQ(parse_exact(buf, (size_t)n, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "sampling mode");
    in.sample = 1;
    in.sample_rate = 20000;
    n = encode(&in, buf, sizeof buf);
    ASSERT_EQ(parse_exact(buf, (size_t)n, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "sampling rate");
    return 0;
}

/* A field given twice is refused whatever its tag (fuzz_attach_blob found the
 * trace patterns', tag 40, taken twice: the second overwrote the first and left
 * its tail in the buffer; tests/fuzz/corpus/attach_blob/crash-duplicate-trace-field). */
TEST(trace_attach_blob_field_twice) {
    dnp_attach_blob in, out;
    uint8_t buf[DNP_BLOB_MAX], bad[DNP_BLOB_MAX];
    char err[256];
    sample(&in);
    snprintf(in.trace, sizeof in.trace, "A.B::C");
    long n = encode(&in, buf, sizeof buf);
    ASSERT_GT(n, 0);
    /* the blob again with one more trace field: "xyz" */
    memcpy(bad, buf, (size_t)n);
    const uint8_t extra[] = {DNP_BLOB_TRACE & 0xff, DNP_BLOB_TRACE >> 8, 3, 0, 'x', 'y', 'z'};
    memcpy(bad + n, extra, sizeof extra);
    dnp_put_u32le(bad + 8, (uint32_t)(n + (long)sizeof extra));
    ASSERT_EQ(parse_exact(bad, (size_t)n + sizeof extra, &out, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "appears twice");
    return 0;
}
