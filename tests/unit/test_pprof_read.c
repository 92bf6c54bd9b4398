/* test_pprof_read.c: a pprof read back (src/export/pprof_read.c) as the
 * encoder (pprof.c) wrote it: sample types, period, time, samples' stacks
 * and values, native frames' mappings; gzip'd or not; and corrupt input
 * (every cut of a profile, a location not there, a sample that is no
 * message, a broken gzip stream) refused
 * with one line, never read past its end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "pprof.h"
#include "test.h"

/* A small profile: two stacks, a native frame, time and period; raw encoding. */
static int sample_profile(uint8_t **raw, size_t *len, uint8_t **gz, size_t *gzlen) {
    dnp_pprof_type types[2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    dnp_pprof *p = dnp_pprof_new(types, 2, &types[1], 10000000);
    if (!p)
        return -1;
    const char *a[] = {"libcrypto.so.3!SHA256_Update", "Ns.Type::Hash", "Ns.Program::Main"};
    const char *b[] = {"Ns.Type::Other", "Ns.Program::Main"};
    int64_t va[2] = {3, 30000000}, vb[2] = {128, (int64_t)1 << 40};
    dnp_pprof_set_time(p, 1796221343803492758LL, 1001273363);
    int rc = dnp_pprof_add(p, a, 3, va) | dnp_pprof_add(p, b, 2, vb) | dnp_pprof_encode(p, raw, len);
    FILE *f = open_memstream((char **)gz, gzlen);
    rc |= !f || dnp_pprof_write(p, f) != 0;
    if (f)
        fclose(f);
    dnp_pprof_free(p);
    return rc ? -1 : 0;
}

static char *str(const dnp_pprof_data *d, uint64_t i) {
    static char buf[4][256];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%.*s", (int)d->strs[i].n, d->strs[i].p);
    return buf[k];
}

/* The name of the function of location id. */
static const char *loc_name(const dnp_pprof_data *d, uint64_t id) {
    return str(d, d->funcs[d->locs[id - 1][1] - 1][0]);
}

TEST(pprof_read_roundtrip) {
    uint8_t *raw, *gz;
    size_t len, gzlen;
    ASSERT_EQ(sample_profile(&raw, &len, &gz, &gzlen), 0);
    for (int zipped = 0; zipped < 2; zipped++) {
        dnp_pprof_data d;
        char err[256] = "";
        ASSERT_EQ(dnp_pprof_read(zipped ? gz : raw, zipped ? gzlen : len, &d, err, sizeof err), 0);
        ASSERT_EQ(d.ntypes, 2);
        ASSERT_STREQ(str(&d, d.types[1][0]), "cpu");
        ASSERT_STREQ(str(&d, d.types[1][1]), "nanoseconds");
        ASSERT_STREQ(str(&d, d.period_type[0]), "cpu");
        ASSERT_EQ(d.period, 10000000);
        ASSERT_EQ(d.time_nanos, 1796221343803492758LL);
        ASSERT_EQ(d.duration_nanos, 1001273363);
        ASSERT_EQ(d.nsamples, 2);
        ASSERT_EQ(d.stack_at[1] - d.stack_at[0], 3);
        ASSERT_STREQ(loc_name(&d, d.stack[0]), "libcrypto.so.3!SHA256_Update");
        ASSERT_STREQ(loc_name(&d, d.stack[2]), "Ns.Program::Main");
        ASSERT_STREQ(loc_name(&d, d.stack[3]), "Ns.Type::Other");
        ASSERT_EQ(d.stack[4], d.stack[2]); /* Main: one location */
        ASSERT_NE(d.locs[d.stack[0] - 1][0], 0); /* the native frame has its library's mapping */
        ASSERT_STREQ(str(&d, d.map_file[d.locs[d.stack[0] - 1][0] - 1]), "libcrypto.so.3");
        ASSERT_EQ(d.locs[d.stack[1] - 1][0], 0);
        ASSERT_EQ(d.values[1], 30000000);
        ASSERT_EQ(d.values[2], 128);
        ASSERT_EQ(d.values[3], (int64_t)1 << 40);
        dnp_pprof_data_free(&d);
    }
    free(raw);
    free(gz);
    return 0;
}

TEST(pprof_read_refuses_corrupt) {
    uint8_t *raw, *gz;
    size_t len, gzlen;
    ASSERT_EQ(sample_profile(&raw, &len, &gz, &gzlen), 0);
    dnp_pprof_data d;
    char err[256];
    /* every cut of the encoding: read or refused, never past the end (ASan's build checks) */
    size_t refused = 0;
    for (size_t n = 0; n < len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        ASSERT(cut);
        memcpy(cut, raw, n);
        if (dnp_pprof_read(cut, n, &d, err, sizeof err) == 0)
            dnp_pprof_data_free(&d);
        else {
            refused++;
            ASSERT_EQ(strncmp(err, "corrupt pprof: ", 15), 0);
        }
        free(cut);
    }
    ASSERT_GT(refused, len / 2);
    /* a gzip stream cut short */
    err[0] = 0;
    ASSERT_EQ(dnp_pprof_read(gz, gzlen / 2, &d, err, sizeof err), -1);
    ASSERT_STREQ(err, "its gzip stream is corrupt or cut short");
    /* a sample's location that is not there: location_id 9 */
    static const uint8_t bad_loc[] = {0x12, 0x02, 0x08, 0x09, 0x32, 0x00}; /* sample {location_id 9}, "" */
    ASSERT_EQ(dnp_pprof_read(bad_loc, sizeof bad_loc, &d, err, sizeof err), -1);
    ASSERT_STREQ(err, "corrupt pprof: a sample's location unknown");
    /* a sample that is no message (fuzz_pprof's find: NULL + 0 before the check) */
    static const uint8_t not_msg[] = {0x10, 0x01, 0x32, 0x00};
    ASSERT_EQ(dnp_pprof_read(not_msg, sizeof not_msg, &d, err, sizeof err), -1);
    ASSERT_STREQ(err, "corrupt pprof: a sample is no message");
    free(raw);
    free(gz);
    return 0;
}

/* A backend's answer to an OTLP push (sink_otlp.c): partial_success with
 * rejected profiles and a message is one line naming them; nothing rejected,
 * an empty answer or one cut short is not a rejection. */
TEST(otlp_reply_rejected_reads_partial_success) {
    char why[256] = "";
    static const uint8_t rejected[] = {0x0a, 0x07, 0x08, 0x02, 0x12, 0x03, 'b', 'a', 'd'};
    ASSERT_EQ(otlp_reply_rejected(rejected, sizeof rejected, why, sizeof why), -1);
    ASSERT_STREQ(why, "rejected by the backend: bad");
    static const uint8_t none[] = {0x0a, 0x02, 0x08, 0x00};
    ASSERT_EQ(otlp_reply_rejected(none, sizeof none, why, sizeof why), 0);
    ASSERT_EQ(otlp_reply_rejected(NULL, 0, why, sizeof why), 0);
    static const uint8_t cut[] = {0x0a, 0x07, 0x08, 0x02, 0x12};
    ASSERT_EQ(otlp_reply_rejected(cut, sizeof cut, why, sizeof why), 0);
    static const uint8_t newline[] = {0x0a, 0x06, 0x08, 0x01, 0x12, 0x02, 'a', '\n'};
    ASSERT_EQ(otlp_reply_rejected(newline, sizeof newline, why, sizeof why), -1);
    ASSERT_EQ(strchr(why, '\n'), NULL);
    return 0;
}
