/* test_print.c: `dnprof print` streams the trace (issue 11): its output is the
 * same as from the trace loaded whole (DNPROF_NO_STREAM=1), with threads whose
 * chunks interleave in the file out of time order, equal times on different
 * threads, and STARTs that borrow their names from their FINISH. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "synth.h"
#include "test.h"
#include "trace_format.h"

#ifdef DNPROF_BIN
/* whole: 1 loaded whole, 0 streamed, 2 through a pipe (read once). */
static char *run_print(const char *args, const char *path, int whole) {
    char cmd[2048];
    if (whole == 2)
        snprintf(cmd, sizeof cmd, "cat '%s' | '%s' print %s /dev/stdin 2>&1", path, DNPROF_BIN, args);
    else
        snprintf(cmd, sizeof cmd, "%s '%s' print %s '%s' 2>&1", whole ? "DNPROF_NO_STREAM=1" : "DNPROF_NO_STREAM=",
                 DNPROF_BIN, args, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    char tmp[65536];
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            char *g = realloc(buf, cap);
            if (!g)
                break;
            buf = g;
        }
        memcpy(buf + n, tmp, got);
        n += got;
    }
    pclose(p);
    if (buf)
        buf[n] = 0;
    return buf;
}

/* Thread k's events come in bursts at its own pace; some times are equal across threads. */
static int write_threads_trace_n(const char *path, int n) {
    synth *w = synth_open(path, 777, "print-threads");
    if (!w)
        return -1;
    uint64_t names[8];
    for (int i = 0; i < 8; i++) {
        char n[32];
        snprintf(n, sizeof n, "App.Class%d", i);
        names[i] = synth_string(w, n);
    }
    for (uint32_t th = 1; th <= 3; th++)
        synth_thread(w, th, 1000 + th);
    uint64_t t[4] = {0, 0, 0, 0};
    unsigned seed = 12345;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t th = 1 + (seed >> 16) % 3;
        t[th] += (seed >> 8) % 4 == 0 ? 0 : 100 * ((seed >> 10) % 7); /* equal times now and then */
        uint64_t cls = 0x5000 + (uint64_t)(i % 8) * 16;
        uint64_t start[2] = {cls, 0}; /* no name yet: borrowed from the FINISH */
        synth_event(w, th, t[th], DNP_EV_ClassLoadStarted, start);
        uint64_t fin[3] = {cls, names[i % 8], 0};
        synth_event(w, th, t[th] + 50, DNP_EV_ClassLoadFinished, fin);
        t[th] += 50;
    }
    return synth_close(w, 1);
}

static int write_threads_trace(const char *path) {
    return write_threads_trace_n(path, 30000);
}

/* Peak memory (MiB) of `dnprof ARGS path > /dev/null`, measured in a child of
 * its own so that no other command's peak counts. */
static long peak_mib(const char *args, const char *path, int whole) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "%s '%s' %s '%s' > /dev/null 2>&1",
                 whole ? "DNPROF_NO_STREAM=1" : "DNPROF_NO_STREAM=", DNPROF_BIN, args, path);
        if (system(cmd) != 0)
            _exit(255);
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        long mib = ru.ru_maxrss / 1024;
        _exit(mib > 250 ? 250 : (int)mib);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) == 255)
        return -1;
    return WEXITSTATUS(status);
}

/* 1.6 million events: loaded whole they take about 100 bytes each; print,
 * print --exceptions and report --exceptions stream them. */
TEST(print_memory_bounded) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-print-big-%d.trace", (int)getpid());
    ASSERT_EQ(write_threads_trace_n(path, 800000), 0);
    static const char *const cmds[] = {"print", "print --json", "print --exceptions", "report --exceptions"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        long streamed = peak_mib(cmds[i], path, 0), whole = peak_mib(cmds[i], path, 1);
        fprintf(stderr, "%s: %ld MiB streamed, %ld MiB loaded whole\n", cmds[i], streamed, whole);
        ASSERT_GT(streamed, 0);
        ASSERT_GT(whole, 0);
        ASSERT_GT(whole, 3 * streamed); /* ~100 bytes an event when loaded whole */
#ifndef __SANITIZE_ADDRESS__
        ASSERT_LT(streamed, 40); /* (ASan's shadow memory and quarantine weigh more) */
#endif
    }
    unlink(path);
    return 0;
}

TEST(print_streamed_same_as_loaded) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-print-%d.trace", (int)getpid());
    ASSERT_EQ(write_threads_trace(path), 0);
    static const char *const args[] = {"", "--json", "-t --tid", "--thread 2", "--no-ids --events classes"};
    for (size_t a = 0; a < sizeof args / sizeof args[0]; a++) {
        char *streamed = run_print(args[a], path, 0), *whole = run_print(args[a], path, 1),
             *piped = run_print(args[a], path, 2);
        ASSERT(streamed);
        ASSERT(whole);
        ASSERT(piped);
        int same = strcmp(streamed, whole) == 0 && strcmp(piped, whole) == 0;
        free(piped);
        if (!same)
            fprintf(stderr, "print %s: streamed, piped and loaded outputs differ (%zu and %zu bytes)\n", args[a],
                    strlen(streamed), strlen(whole));
        int borrowed = strstr(whole, "ClassLoadStarted App.Class") != NULL || a == 1 || a == 2;
        size_t len = strlen(whole);
        free(streamed);
        free(whole);
        ASSERT(same);
        ASSERT_GT(len, 100000);
        ASSERT(borrowed);
    }
    unlink(path);
    return 0;
}
/* UBSan (issue 11): report --exceptions on a trace with no exceptions, or none
 * caught, sorted empty groups with qsort(NULL, 0). The sanitized build (.ci/run)
 * reports "runtime error" on stderr; every build checks the outputs. */
TEST(print_exceptions_none) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/dnprof-noexc-%d.trace", (int)getpid());
    synth *w = synth_open(path, 778, "no-exceptions");
    ASSERT_NE(w, NULL);
    uint64_t name = synth_string(w, "App.Thing"), type = synth_string(w, "App.Boom");
    synth_thread(w, 1, 2001);
    uint64_t start[2] = {0x5000, 0}, fin[3] = {0x5000, name, 0};
    synth_event(w, 1, 100, DNP_EV_ClassLoadStarted, start);
    synth_event(w, 1, 200, DNP_EV_ClassLoadFinished, fin);
    ASSERT_EQ(synth_close(w, 1), 0);
    static const char *const cmds[] = {"report --exceptions", "report --exceptions --json", "print --exceptions"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>&1", DNPROF_BIN, cmds[i], path);
        FILE *p = popen(cmd, "r");
        ASSERT_NE(p, NULL);
        char out[4096];
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = 0;
        int status = pclose(p);
        fprintf(stderr, "%s: %s", cmds[i], out);
        ASSERT_EQ(status, 0);
        ASSERT(!strstr(out, "runtime error"));
        ASSERT(strstr(out, "no exception events") || strstr(out, "\"exceptions_total\":0,"));
    }
    /* One exception, never caught (the trace ends in its search): no catch site. */
    w = synth_open(path, 779, "uncaught");
    ASSERT_NE(w, NULL);
    type = synth_string(w, "App.Boom");
    synth_thread(w, 1, 2002);
    uint64_t thrown[3] = {0x7000, 0x99, type};
    synth_event(w, 1, 100, DNP_EV_ExceptionThrown, thrown);
    ASSERT_EQ(synth_close(w, 0), 0);
    for (size_t i = 0; i < 2; i++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>&1", DNPROF_BIN, cmds[i], path);
        FILE *p = popen(cmd, "r");
        ASSERT_NE(p, NULL);
        char out[8192];
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = 0;
        pclose(p);
        ASSERT(!strstr(out, "runtime error"));
        ASSERT(strstr(out, "1 exception: 0 caught") || strstr(out, "\"exceptions_total\":1,"));
    }
    unlink(path);
    return 0;
}
#endif
