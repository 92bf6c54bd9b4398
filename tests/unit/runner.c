/* runner.c: runs the registered tests whose names start with argv[1] (all if none).
 * Exit status: 0 when every test ran passed, 1 when any failed, 2 when none matched. */
#include <stdlib.h>

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

int main(int argc, char **argv) {
    const char *prefix = argc > 1 ? argv[1] : "";
    int ran = 0, failed = 0;
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < ntests; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    for (int i = 0; i < ntests; i++) {
        if (strncmp(tests[i].name, prefix, strlen(prefix)) != 0)
            continue;
        ran++;
        int rc = tests[i].fn();
        printf("%s %s\n", rc == 0 ? "ok  " : "FAIL", tests[i].name);
        fflush(stdout);
        if (rc != 0)
            failed++;
    }
    if (ran == 0) {
        fprintf(stderr, "no test matches '%s'\n", prefix);
        return 2;
    }
    printf("%d passed, %d failed\n", ran - failed, failed);
    return failed ? 1 : 0;
}
