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

/* What a test returns when what it needs (a peer tool) is missing: the runner
 * prints "skip" and, when every test it ran skipped, exits with it (CTest's
 * SKIP_RETURN_CODE, tests/CMakeLists.txt). The test prints one line saying why. */
#define DNP_TEST_SKIPPED 77

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

/* One operand of a comparison, whatever its type. */
typedef struct dnp_test_val {
    enum { DNP_TV_SIGNED, DNP_TV_UNSIGNED, DNP_TV_POINTER, DNP_TV_FLOAT } kind;
    intmax_t i;
    uintmax_t u; /* unsigned and pointers */
    long double f;
} dnp_test_val;

static inline dnp_test_val dnp_test_val_s(intmax_t v) {
    return (dnp_test_val){.kind = DNP_TV_SIGNED, .i = v};
}

static inline dnp_test_val dnp_test_val_u(uintmax_t v) {
    return (dnp_test_val){.kind = DNP_TV_UNSIGNED, .u = v};
}

static inline dnp_test_val dnp_test_val_p(const volatile void *v) {
    return (dnp_test_val){.kind = DNP_TV_POINTER, .u = (uintptr_t)v};
}

static inline dnp_test_val dnp_test_val_f(long double v) {
    return (dnp_test_val){.kind = DNP_TV_FLOAT, .f = v};
}

/* -1, 0 or 1 as a is below, equal to or above b, as numbers (2: a NaN). */
static inline int dnp_test_cmp(dnp_test_val a, dnp_test_val b) {
    if (a.kind == DNP_TV_FLOAT || b.kind == DNP_TV_FLOAT) {
        long double x = a.kind == DNP_TV_FLOAT ? a.f : a.kind == DNP_TV_SIGNED ? (long double)a.i : (long double)a.u;
        long double y = b.kind == DNP_TV_FLOAT ? b.f : b.kind == DNP_TV_SIGNED ? (long double)b.i : (long double)b.u;
        return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2; /* 2: NaN, neither */
    }
    int an = a.kind == DNP_TV_SIGNED && a.i < 0, bn = b.kind == DNP_TV_SIGNED && b.i < 0;
    if (an != bn)
        return an ? -1 : 1;
    if (an)
        return a.i < b.i ? -1 : a.i > b.i;
    uintmax_t x = a.kind == DNP_TV_SIGNED ? (uintmax_t)a.i : a.u;
    uintmax_t y = b.kind == DNP_TV_SIGNED ? (uintmax_t)b.i : b.u;
    return x < y ? -1 : x > y;
}

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

/* Prints "file:line: a op b failed: <a> vs <b>" on stderr. */
void dnp_test_fail_cmp(const char *file, int line, const char *a, const char *op,
                       const char *b, dnp_test_val va, dnp_test_val vb);
/* Prints "file:line: a op b failed: "<a>" vs "<b>"" (strings cut short) on stderr. */
void dnp_test_fail_str(const char *file, int line, const char *a, const char *op,
                       const char *b, const char *va, const char *vb);

#define DNP_ASSERT_CMP(a, op, b, sa, sb)                                    \
    do {                                                                    \
        dnp_test_val dnp_a_ = DNP_TEST_VAL(a), dnp_b_ = DNP_TEST_VAL(b);    \
        if (!(dnp_test_cmp(dnp_a_, dnp_b_) op 0)) {                         \
            dnp_test_fail_cmp(__FILE__, __LINE__, sa, #op, sb, dnp_a_, dnp_b_);     \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define ASSERT_EQ(a, b) DNP_ASSERT_CMP(a, ==, b, #a, #b)
#define ASSERT_NE(a, b) DNP_ASSERT_CMP(a, !=, b, #a, #b)
#define ASSERT_LT(a, b) DNP_ASSERT_CMP(a, <, b, #a, #b)
#define ASSERT_LE(a, b) DNP_ASSERT_CMP(a, <=, b, #a, #b)
#define ASSERT_GT(a, b) DNP_ASSERT_CMP(a, >, b, #a, #b)
#define ASSERT_GE(a, b) DNP_ASSERT_CMP(a, >=, b, #a, #b)

#define ASSERT_STREQ(a, b)                                                  \
    do {                                                                    \
        const char *dnp_a_ = (a), *dnp_b_ = (b);                            \
        if (dnp_a_ == NULL || dnp_b_ == NULL || strcmp(dnp_a_, dnp_b_) != 0) {              \
            dnp_test_fail_str(__FILE__, __LINE__, #a, "==", #b, dnp_a_, dnp_b_);    \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define ASSERT_STRNE(a, b)                                                  \
    do {                                                                    \
        const char *dnp_a_ = (a), *dnp_b_ = (b);                            \
        if (dnp_a_ == NULL || dnp_b_ == NULL || strcmp(dnp_a_, dnp_b_) == 0) {              \
            dnp_test_fail_str(__FILE__, __LINE__, #a, "!=", #b, dnp_a_, dnp_b_);    \
            return 1;                                                       \
        }                                                                   \
    } while (0)

/* haystack holds needle (both C strings). */
#define ASSERT_CONTAINS(haystack, needle)                                   \
    do {                                                                    \
        const char *dnp_a_ = (haystack), *dnp_b_ = (needle);                \
        if (dnp_a_ == NULL || dnp_b_ == NULL || strstr(dnp_a_, dnp_b_) == NULL) {           \
            dnp_test_fail_str(__FILE__, __LINE__, #haystack, "contains",    \
                              #needle, dnp_a_, dnp_b_);                     \
            return 1;                                                       \
        }                                                                   \
    } while (0)

/* Older spellings, kept so that tests written against them still build;
 * tools/convert_asserts.py rewrites them. */
#define ASSERT_EQ_U64(a, b) ASSERT_EQ((uint64_t)(a), (uint64_t)(b))
#define ASSERT_STR_EQ(a, b) ASSERT_STREQ(a, b)

/* The whole file at path, NUL-terminated (runner.c); its length in *len when
 * len is not NULL. NULL if it cannot be read. The caller frees it. */
char *test_read_file(const char *path, size_t *len);

#endif
