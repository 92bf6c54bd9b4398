/* test_demo.c: the README's quick start demo (samples/hello/demo.sh, the demo
 * target) shows what it says: the program's output, the summary, the head of
 * the log, the hot method with its exact call count, and the exception's throw
 * and catch sites. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

TEST(e2e_demo_shows_findings) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_demo_shows_findings"), 0);
    const char *src = e2e_env("DNPROF_SOURCE_DIR"), *bin = e2e_env("DNPROF_BIN"),
               *dll = e2e_env("DNPROF_SAMPLE_HELLO");
    ASSERT(src && bin && dll);
    char script[4096];
    snprintf(script, sizeof script, "%s/samples/hello/demo.sh", src);
    const char *argv[] = {"sh", script, bin, e2e_dotnet(), dll, r.trace, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    size_t lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    if (lines > 120)
        fprintf(stderr, "e2e: the demo printed %zu lines: a first screen is shorter\n", lines);
    ASSERT_LE(lines, 120);
    ASSERT_CONTAINS(out, "primes below 300000: 25997\n");         /* the program ran */
    ASSERT_CONTAINS(out, "caught: something went wrong on purpose\n");
    ASSERT_CONTAINS(out, "] Initialize ");                       /* the log's head */
    ASSERT_CONTAINS(out, "] ClassLoadStarted System.Object ");    /* the default events, less gc */
    /* IsPrime(2..299999): one call per number, counted exactly */
    ASSERT_CONTAINS(out, "299,998  Hello.Program::IsPrime\n");
    ASSERT_CONTAINS(out, "System.InvalidOperationException\n");
    const char *site = strstr(out, "by throw site");
    ASSERT_NE(site, NULL);
    ASSERT_CONTAINS(site, "Hello.Program::Fail\n");
    const char *catcher = strstr(site, "by catch site");
    ASSERT_NE(catcher, NULL);
    ASSERT_CONTAINS(catcher, "Hello.Program::Main\n");
    free(out);
    char *err = e2e_read_file(r.err, NULL); /* run's summary line goes to stderr */
    ASSERT_NE(err, NULL);
    ASSERT_CONTAINS(err, "events, ");
    ASSERT_CONTAINS(err, ", complete\n");
    free(err);
    return 0;
}
