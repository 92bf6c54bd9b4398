/* test.h: a tiny test framework (libuv's shape, self-registering).
 *
 *   TEST(trace_roundtrip) {
 *       ASSERT_EQ(n, 3);  ASSERT_NE(p, NULL);  ASSERT_LT(ns, limit);
 *       ASSERT_STREQ(name, "System.Object");  ASSERT_CONTAINS(log, "Shutdown");
 *       ASSERT(x_is_sorted(v));
 *       return 0;
 *   }
 *
 * Each TEST registers itself at load time; the runner (runner.c) runs the tests
 * named on its command line (see there). A failed assertion prints file:line,
 * the expressions and, for the comparisons, both values, and fails the test.
 *
 * ASSERT_EQ/NE/LT/LE/GT/GE take integers (any width, signed or not: compared
 * as numbers, so -1 < 0u), pointers (NULL too) or floating point; each operand
 * is evaluated once. ASSERT_STREQ/STRNE take C strings (NULL equals nothing). */
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

/* ---- comparisons that print both sides ---- */

/* One operand of a comparison, whatever its type (runner.c). */
typedef struct dnp_test_val {
    enum { DNP_TV_SIGNED, DNP_TV_UNSIGNED, DNP_TV_POINTER, DNP_TV_FLOAT } kind;
    intmax_t i;
    uintmax_t u; /* unsigned and pointers */
    long double f;
} dnp_test_val;

dnp_test_val dnp_test_val_s(intmax_t v);
dnp_test_val dnp_test_val_u(uintmax_t v);
dnp_test_val dnp_test_val_p(const volatile void *v);
dnp_test_val dnp_test_val_f(long double v);

#define DNP_TEST_VAL(x)                                                     \
    _Generic((x),                                                           \
        _Bool: dnp_test_val_u, char: dnp_test_val_s,                        \
        signed char: dnp_test_val_s, short: dnp_test_val_s,                 \
        int: dnp_test_val_s, long: dnp_test_val_s, long long: dnp_test_val_s, \
        unsigned char: dnp_test_val_u, unsigned short: dnp_test_val_u,      \
        unsigned: dnp_test_val_u, unsigned long: dnp_test_val_u,            \
        unsigned long long: dnp_test_val_u,                                 \
        float: dnp_test_val_f, double: dnp_test_val_f,                      \
        long double: dnp_test_val_f,                                        \
        default: dnp_test_val_p)(x)

/* -1, 0 or 1 as a is below, equal to or above b, as numbers. */
int dnp_test_cmp(dnp_test_val a, dnp_test_val b);
/* Prints "file:line: a op b failed: <a> vs <b>" on stderr. */
void dnp_test_fail_cmp(const char *file, int line, const char *a, const char *op,
                       const char *b, dnp_test_val va, dnp_test_val vb);
/* Prints "file:line: a op b failed: "<a>" vs "<b>"" (strings cut short) on stderr. */
void dnp_test_fail_str(const char *file, int line, const char *a, const char *op,
                       const char *b, const char *va, const char *vb);

#define DNP_ASSERT_CMP(a, op, b)                                            \
    do {                                                                    \
        dnp_test_val a_ = DNP_TEST_VAL(a), b_ = DNP_TEST_VAL(b);            \
        if (!(dnp_test_cmp(a_, b_) op 0)) {                                 \
            dnp_test_fail_cmp(__FILE__, __LINE__, #a, #op, #b, a_, b_);     \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define ASSERT_EQ(a, b) DNP_ASSERT_CMP(a, ==, b)
#define ASSERT_NE(a, b) DNP_ASSERT_CMP(a, !=, b)
#define ASSERT_LT(a, b) DNP_ASSERT_CMP(a, <, b)
#define ASSERT_LE(a, b) DNP_ASSERT_CMP(a, <=, b)
#define ASSERT_GT(a, b) DNP_ASSERT_CMP(a, >, b)
#define ASSERT_GE(a, b) DNP_ASSERT_CMP(a, >=, b)

#define ASSERT_STREQ(a, b)                                                  \
    do {                                                                    \
        const char *a_ = (a), *b_ = (b);                                    \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {              \
            dnp_test_fail_str(__FILE__, __LINE__, #a, "==", #b, a_, b_);    \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define ASSERT_STRNE(a, b)                                                  \
    do {                                                                    \
        const char *a_ = (a), *b_ = (b);                                    \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) == 0) {              \
            dnp_test_fail_str(__FILE__, __LINE__, #a, "!=", #b, a_, b_);    \
            return 1;                                                       \
        }                                                                   \
    } while (0)

/* haystack holds needle (both C strings). */
#define ASSERT_CONTAINS(haystack, needle)                                   \
    do {                                                                    \
        const char *a_ = (haystack), *b_ = (needle);                        \
        if (a_ == NULL || b_ == NULL || strstr(a_, b_) == NULL) {           \
            dnp_test_fail_str(__FILE__, __LINE__, #haystack, "contains",    \
                              #needle, a_, b_);                             \
            return 1;                                                       \
        }                                                                   \
    } while (0)

/* Older spellings, kept so that tests written against them still build;
 * tools/convert_asserts.py rewrites them. */
#define ASSERT_EQ_U64(a, b) ASSERT_EQ((uint64_t)(a), (uint64_t)(b))
#define ASSERT_STR_EQ(a, b) ASSERT_STREQ(a, b)

#endif
