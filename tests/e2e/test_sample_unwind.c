/* test_sample_unwind.c: native frames by their unwind tables (docs/sampling.md,
 * "Native code") against the truth of the "unwind" scenario (UnwindScenario.cs).
 *
 * Hash, Deflate and Loop run one after the other, each returning before the
 * next starts: every sample inside OpenSSL's libcrypto is Hash's (SHA-256),
 * every sample inside libSystem.IO.Compression.Native Deflate's. libcrypto and
 * the compression library keep no frame pointers: without their unwind tables
 * a sample there has no managed caller at all. The stacks are read from the
 * folded export (root first, ';' between frames), so the export is tested too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

#define WHOLE 0.95   /* a native library's samples that must be under their caller */
#define STALE 0.01   /* at most under a sibling that had already returned */

typedef struct lib_share {
    const char *lib, *caller;
    double all, under, sibling;
} lib_share;

static const char *const METHODS[3] = {"Scenarios.UnwindScenario::Hash", "Scenarios.UnwindScenario::Deflate",
                                       "Scenarios.UnwindScenario::Loop"};

/* Whether the folded stack line (up to its weight) has the frame. */
static int has_frame(const char *line, size_t len, const char *frame) {
    size_t n = strlen(frame);
    for (const char *p = line; p + n <= line + len; p++) {
        p = memmem(p, (size_t)(line + len - p), frame, n);
        if (!p)
            return 0;
        if ((p == line || p[-1] == ';') && (p[n] == ';' || p[n] == ' '))
            return 1;
    }
    return 0;
}

/* Adds a folded line to the shares of the library its leaf is in. */
static void count_line(const char *line, size_t len, lib_share *libs, size_t nlibs) {
    const char *sp = line + len;
    while (sp > line && sp[-1] != ' ')
        sp--;
    if (sp == line)
        return;
    double w = atof(sp);
    const char *leaf = sp - 1;
    while (leaf > line && leaf[-1] != ';')
        leaf--;
    size_t leaf_len = (size_t)(sp - 1 - leaf);
    for (size_t i = 0; i < nlibs; i++) {
        if (!memmem(leaf, leaf_len, libs[i].lib, strlen(libs[i].lib)))
            continue;
        libs[i].all += w;
        if (has_frame(line, (size_t)(sp - 1 - line), libs[i].caller))
            libs[i].under += w;
        for (int m = 0; m < 3; m++)
            if (strcmp(METHODS[m], libs[i].caller) != 0 && has_frame(line, (size_t)(sp - 1 - line), METHODS[m]))
                libs[i].sibling += w;
    }
}

TEST(e2e_sample_unwind_native_callers) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "sample_unwind_native_callers"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *args[] = {"run", "--quiet", "--sample", "--rate", "1000", "-o", r.trace, "--", e2e_dotnet(),
                          dll, "unwind", "calls", "3", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    ASSERT_STATUS(&r, 0);
    dnp_trace *t = e2e_load(r.trace);
    ASSERT(t);
    dnp_trace_free(t);
    char folded[PATH_MAX + 16];
    snprintf(folded, sizeof folded, "%s.folded", r.trace);
    const char *conv[] = {"convert", "--format", "folded", "-o", folded, r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, conv), 0);
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *text = e2e_read_file(folded, &len);
    ASSERT(text);
    lib_share libs[] = {{"libcrypto.so", METHODS[0], 0, 0, 0},
                        {"libSystem.IO.Compression.Native.so", METHODS[1], 0, 0, 0}};
    for (char *line = text; line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        count_line(line, n, libs, 2);
        line += n + 1;
    }
    free(text);
    for (int i = 0; i < 2; i++) {
        lib_share *l = &libs[i];
        fprintf(stderr, "%s: %.0f ms of samples, %.1f%% under %s, %.2f%% under a sibling\n", l->lib, l->all / 1e6,
                l->all > 0 ? 100 * l->under / l->all : 0, l->caller, l->all > 0 ? 100 * l->sibling / l->all : 0);
        /* a third of 3 s of CPU each, at 1 kHz: hundreds of samples */
        ASSERT_GT(l->all / 1e6, 150);
        ASSERT_GE(l->under / l->all, WHOLE);
        ASSERT_LE(l->sibling / l->all, STALE);
    }
    return 0;
}
