/* test.h: a tiny test framework (libuv's shape, self-registering).
 *
 *   TEST(trace_roundtrip) { ... ASSERT(x == 1); ASSERT_EQ_U64(a, b); return 0; }
 *
 * Each TEST registers itself at load time; the runner (runner.c) runs every test
 * whose name starts with the prefix given on its command line. A failed ASSERT
 * prints file:line and the expression and makes the test fail. */
#ifndef DNP_TEST_H
#define DNP_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef int (*dnp_test_fn)(void);
void dnp_test_register(const char *name, dnp_test_fn fn);

#define TEST(name)                                                          \
    static int test_##name(void);                                           \
    __attribute__((constructor)) static void test_register_##name(void) {   \
        dnp_test_register(#name, test_##name);                              \
    }                                                                       \
    static int test_##name(void)

#define ASSERT(expr)                                                        \
    do {                                                                    \
        if (!(expr)) {                                                      \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,      \
                    __LINE__, #expr);                                       \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define ASSERT_EQ_U64(a, b)                                                 \
    do {                                                                    \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                    \
        if (a_ != b_) {                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_);                    \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                 \
    do {                                                                    \
        const char *a_ = (a), *b_ = (b);                                    \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {              \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n",    \
                    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)",         \
                    b_ ? b_ : "(null)");                                    \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#endif
