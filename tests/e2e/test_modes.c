/* test_modes.c: issue 24 item 4. A flag of dnprof run that asks for one thing
 * records that thing and what it needs: --alloc and --exceptions without
 * --events record no gc events (no GarbageCollectionStarted, no heap walk:
 * ObjectReferences, MovedReferences, ...), while they do record the allocation
 * samples and the exception stories. An explicit --events still wins: the
 * control case records the GCs the program makes. Tested by what is recorded. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

static size_t gc_family_events(const dnp_trace *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->nevents; i++)
        n += t->events[i].kind < DNP_EV_COUNT && dnp_events[t->events[i].kind].family == DNP_FAM_GC;
    return n;
}

/* dnprof run FLAGS -o trace -- dotnet Scenarios.dll ARGS; the trace loaded,
 * holding at least one event of want_kind. */
static dnp_trace *run_flags(e2e_run *r, const char *const flags[], const char *const args[], unsigned want_kind) {
    const char *bin = e2e_env("DNPROF_BIN"), *dll = e2e_env("DNPROF_SCENARIOS");
    if (!bin || !dll)
        return NULL;
    const char *argv[24];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "run";
    for (int i = 0; flags[i] && n < 12; i++)
        argv[n++] = flags[i];
    argv[n++] = "-o";
    argv[n++] = r->trace;
    argv[n++] = "--";
    argv[n++] = e2e_dotnet();
    argv[n++] = dll;
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if (e2e_exec(r, (char *const *)argv, NULL) != 0 || r->status != 0) {
        e2e_show_file("dnprof run stderr", r->err);
        return NULL;
    }
    return e2e_load_of(r->trace, want_kind, 1);
}

static int check(e2e_run *r, const char *const flags[], const char *const args[], unsigned want_kind, int want_gc) {
    dnp_trace *t = run_flags(r, flags, args, want_kind);
    ASSERT_NE(t, NULL);
    size_t gc = gc_family_events(t), gcs = e2e_count(t, DNP_EV_GarbageCollectionStarted);
    size_t got = e2e_count(t, want_kind);
    fprintf(stderr, "e2e: run %s%s%s: %zu events, %zu gc-family (%zu GCs), %zu of what it asked for\n", flags[0],
            flags[1] ? " " : "", flags[1] ? flags[2] : "", t->nevents, gc, gcs, got);
    dnp_trace_free(t);
    ASSERT_GE(got, 1);
    if (want_gc) {
        ASSERT_GE(gcs, 1);
    } else {
        ASSERT_EQ(gc, 0);
    }
    return 0;
}

TEST(e2e_run_alloc_records_no_gc) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_run_alloc_records_no_gc"), 0);
    const char *args[] = {"sample", "alloc", "1", NULL}; /* about 1 s of allocating: many GCs */
    const char *alloc[] = {"--alloc", NULL};
    ASSERT_EQ(check(&r, alloc, args, DNP_EV_AllocSite, 0), 0);
    const char *control[] = {"--alloc", "--events", "default", NULL};
    ASSERT_EQ(check(&r, control, args, DNP_EV_AllocSite, 1), 0);
    return 0;
}

TEST(e2e_run_exceptions_records_no_gc) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_run_exceptions_records_no_gc"), 0);
    const char *args[] = {"stories", "gcrethrow", "200", NULL}; /* throws, and collects between */
    const char *exc[] = {"--exceptions", NULL};
    ASSERT_EQ(check(&r, exc, args, DNP_EV_ExceptionDetails, 0), 0);
    const char *control[] = {"--exceptions", "--events", "default", NULL};
    ASSERT_EQ(check(&r, control, args, DNP_EV_ExceptionDetails, 1), 0);
    return 0;
}
