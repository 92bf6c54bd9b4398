/* runner.c: runs the registered test named argv[1] or, when no test has that
 * name, those whose names start with it (all when no argument); `--list` lists
 * them. Also the comparisons of test.h. Exit status: 0 when every test ran
 * passed, 1 when any failed, 2 when none matched, DNP_TEST_SKIPPED when all skipped. */
#include <stdlib.h>
#include <stdint.h>

#include "test.h"

#define MAX_TESTS 512

static struct {
    const char *name;
    dnp_test_fn fn;
} tests[MAX_TESTS];
static int ntests;

void dnp_test_register(const char *name, dnp_test_fn fn) {
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].fn = fn;
        ntests++;
    }
}

static void test_val_print(dnp_test_val v) {
    switch (v.kind) {
    case DNP_TV_SIGNED:
        fprintf(stderr, "%jd", v.i);
        if (v.i > 9 || v.i < -9)
            fprintf(stderr, " (0x%jx)", (uintmax_t)v.i);
        break;
    case DNP_TV_UNSIGNED:
        fprintf(stderr, "%ju", v.u);
        if (v.u > 9)
            fprintf(stderr, " (0x%jx)", v.u);
        break;
    case DNP_TV_POINTER:
        if (v.u)
            fprintf(stderr, "(pointer) 0x%jx", v.u);
        else
            fprintf(stderr, "NULL");
        break;
    case DNP_TV_FLOAT:
        fprintf(stderr, "%Lg", v.f);
        break;
    }
}

void dnp_test_fail_cmp(const char *file, int line, const char *a, const char *op, const char *b,
                       dnp_test_val va, dnp_test_val vb) {
    fprintf(stderr, "%s:%d: %s %s %s failed: ", file, line, a, op, b);
    test_val_print(va);
    fprintf(stderr, " vs ");
    test_val_print(vb);
    fputc('\n', stderr);
}

static void test_str_print(const char *s) {
    if (!s) {
        fputs("NULL", stderr);
        return;
    }
    size_t n = strlen(s);
    if (n > 400)
        fprintf(stderr, "\"%.400s\"... (%zu bytes)", s, n);
    else
        fprintf(stderr, "\"%s\"", s);
}

void dnp_test_fail_str(const char *file, int line, const char *a, const char *op, const char *b,
                       const char *va, const char *vb) {
    fprintf(stderr, "%s:%d: %s %s %s failed:\n  ", file, line, a, op, b);
    test_str_print(va);
    fprintf(stderr, "\n  ");
    test_str_print(vb);
    fputc('\n', stderr);
}

char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *grown = realloc(s, cap * 2);
            if (!grown) {
                free(s);
                s = NULL;
                break;
            }
            s = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (s) {
        s[n] = 0;
        if (len)
            *len = n;
    }
    return s;
}

int main(int argc, char **argv) {
    const char *prefix = argc > 1 ? argv[1] : "";
    int ran = 0, failed = 0, skipped = 0;
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < ntests; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    int exact = 0;
    for (int i = 0; i < ntests; i++)
        if (strcmp(tests[i].name, prefix) == 0)
            exact = 1;
    for (int i = 0; i < ntests; i++) {
        if (exact ? strcmp(tests[i].name, prefix) != 0 : strncmp(tests[i].name, prefix, strlen(prefix)) != 0)
            continue;
        ran++;
        int rc = tests[i].fn();
        printf("%s %s\n", rc == 0 ? "ok  " : rc == DNP_TEST_SKIPPED ? "skip" : "FAIL", tests[i].name);
        fflush(stdout);
        skipped += rc == DNP_TEST_SKIPPED;
        failed += rc != 0 && rc != DNP_TEST_SKIPPED;
    }
    if (ran == 0) {
        fprintf(stderr, "no test matches '%s'\n", prefix);
        return 2;
    }
    printf("%d passed, %d failed, %d skipped\n", ran - failed - skipped, failed, skipped);
    return failed ? 1 : skipped == ran ? DNP_TEST_SKIPPED : 0;
}
