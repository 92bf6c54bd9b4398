/* test_common.c: the common helpers (src/common): the u64 map and JSON strings. */
#include <stdlib.h>

#include "jsonstr.h"
#include "test.h"
#include "u64map.h"

/* Random puts, replaces and deletes on a small key space, checked against a
 * plain array after every step; the few keys collide in the map's clusters. */
TEST(common_u64map_against_array) {
    enum { KEYS = 300 };
    uint64_t ref[KEYS];
    unsigned char in[KEYS] = {0};
    dnp_u64map m = {0};
    unsigned seed = 12345;
    size_t n = 0;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (seed >> 8) % KEYS, op = (seed >> 20) % 3;
        uint64_t key = k * 0x100000001ull, b = k % 3, v = seed;
        if (op < 2) {
            uint64_t old = 7;
            ASSERT_EQ(dnp_u64map_put2(&m, key, b, v, &old), 0);
            if (in[k])
                ASSERT_EQ(old, ref[k]);
            else
                ASSERT_EQ(old, 7);
            n += !in[k];
            in[k] = 1;
            ref[k] = v;
        } else {
            uint64_t got = 0;
            int had = dnp_u64map_del2(&m, key, b, &got);
            ASSERT_EQ(had, in[k]);
            if (had)
                ASSERT_EQ(got, ref[k]);
            n -= in[k];
            in[k] = 0;
        }
        ASSERT_EQ(m.n, n);
        if (step % 97 == 0)
            for (unsigned i = 0; i < KEYS; i++) {
                uint64_t got = 0;
                ASSERT_EQ(dnp_u64map_get2(&m, i * 0x100000001ull, i % 3, &got), in[i]);
                if (in[i])
                    ASSERT_EQ(got, ref[i]);
                ASSERT_EQ(dnp_u64map_get2(&m, i * 0x100000001ull, i % 3 + 1, NULL), 0);
            }
    }
    dnp_u64map_clear(&m);
    ASSERT_EQ(m.n, 0);
    ASSERT(!dnp_u64map_get(&m, 0, NULL));
    ASSERT_EQ(dnp_u64map_put(&m, 0, UINT64_MAX, NULL), 0); /* any key, any value */
    uint64_t got = 0;
    ASSERT_EQ(dnp_u64map_get(&m, 0, &got), 1);
    ASSERT_EQ(got, UINT64_MAX);
    dnp_u64map_release(&m);
    ASSERT(!dnp_u64map_get(&m, 0, NULL));
    ASSERT(!dnp_u64map_del(&m, 0, NULL));
    return 0;
}

TEST(common_json_str) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_NE(f, NULL);
    dnp_json_str(f, "\r\t\x7f\xed\xa0\x80\xf0\x9f\x98\x80<", 0);
    dnp_json_str(f, "<&>", DNP_JSON_HTML_SAFE);
    fclose(f);
    ASSERT_STREQ(buf, "\"\\r\\t\x7f\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80<\"\"\\u003c\\u0026\\u003e\"");
    free(buf);
    return 0;
}

/* The comparisons of test.h: each holds or fails as numbers do, whatever the
 * operands' types, and evaluates each operand once. */
static int cmp_eq_neg_unsigned(void) { ASSERT_EQ(-1, 4294967295u); return 0; }
static int cmp_lt_neg_unsigned(void) { ASSERT_LT(-1, 0u); return 0; }
static int cmp_ne_null(void) { ASSERT_NE((void *)NULL, NULL); return 0; }
static int cmp_ge_double(void) { ASSERT_GE(0.5, 1); return 0; }
static int cmp_streq_null(void) { ASSERT_STREQ(NULL, "a"); return 0; }
static int cmp_contains(void) { ASSERT_CONTAINS("haystack", "needle"); return 0; }

TEST(common_test_macros) {
    fprintf(stderr, "(five failures printed below are expected)\n");
    ASSERT_EQ(cmp_eq_neg_unsigned(), 1);
    ASSERT_EQ(cmp_lt_neg_unsigned(), 0);
    ASSERT_EQ(cmp_ne_null(), 1);
    ASSERT_EQ(cmp_ge_double(), 1);
    ASSERT_EQ(cmp_streq_null(), 1);
    ASSERT_EQ(cmp_contains(), 1);
    int n = 0;
    ASSERT_EQ(n++, 0);
    ASSERT_EQ(n, 1);
    ASSERT_STREQ("x", "x");
    ASSERT_CONTAINS("haystack", "st");
    return 0;
}
