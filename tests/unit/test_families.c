/* test_families.c: --events / DNPROF_EVENTS parsing, and family <-> mask bits. */
#include "families.h"
#include "test.h"

#define FAM(f) (1u << DNP_FAM_##f)
#define ALL (((1u << DNP_FAM_COUNT) - 1) & ~FAM(REMOTING) & ~FAM(CALLS))
#define DEFAULT (ALL & ~FAM(ALLOC) & ~FAM(TRANSITIONS))
#define DEFAULT_MASK 0x10322FFu /* every COR_PRF_MONITOR bit of the families but alloc, transitions */
#define ALL_MASK (DEFAULT_MASK | 0x100u | 0x800000u | 0x800u)

static int parse(const char *text, dnp_event_config *c, char *err, size_t errlen) {
    memset(c, 0xAB, sizeof *c);
    err[0] = 0;
    return dnp_events_parse(text, c, err, errlen);
}

TEST(families_default) {
    dnp_event_config c;
    char err[512];
    const char *texts[] = {NULL, "", "  ", "default", "DEFAULT", " default ,", "-alloc"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        ASSERT_EQ(parse(texts[i], &c, err, sizeof err), 0);
        ASSERT_EQ(c.families, DEFAULT);
        ASSERT_EQ(c.mask, DEFAULT_MASK);
        ASSERT_EQ(c.mask_high, 0);
    }
    ASSERT(!(c.families & FAM(ALLOC)));
    ASSERT(!(c.families & FAM(REMOTING)));
    ASSERT_EQ(parse(DNP_EVENTS_DEFAULT, &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, DEFAULT);
    return 0;
}

TEST(families_all) {
    dnp_event_config c;
    char err[512];
    ASSERT_EQ(parse("all", &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, ALL);
    ASSERT_EQ(c.mask, ALL_MASK);

    ASSERT_EQ(parse("all,-gc", &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, ALL & ~FAM(GC));
    ASSERT_EQ(c.mask, ALL_MASK & ~0x80u);

    ASSERT_EQ(parse("  All ,  - GC , -Exceptions ", &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, ALL & ~FAM(GC) & ~FAM(EXCEPTIONS));
    ASSERT_EQ(c.mask, ALL_MASK & ~0x80u & ~0x1000040u);

    ASSERT_EQ(parse("-gc", &c, err, sizeof err), 0); /* a removal first: from the default */
    ASSERT_EQ(c.families, DEFAULT & ~FAM(GC));

    ASSERT_EQ(parse("classes,modules", &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, FAM(RUNTIME) | FAM(CLASSES) | FAM(MODULES));
    ASSERT_EQ(c.mask, 0x6);

    ASSERT_EQ(parse("default,alloc,transitions", &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, ALL);

    ASSERT_EQ(parse("gc,-gc", &c, err, sizeof err), 0); /* the runtime family stays */
    ASSERT_EQ(c.families, FAM(RUNTIME));
    ASSERT_EQ(c.mask, 0);

    ASSERT_EQ(parse("alloc", &c, err, sizeof err), 0);
    ASSERT_EQ(c.mask, 0x800100u);
    ASSERT_EQ(parse("exceptions", &c, err, sizeof err), 0);
    ASSERT_EQ(c.mask, 0x1000040u);
    ASSERT_EQ(parse("cache,threads,transitions,suspends,ccw,jit,functions,appdomains,assemblies", &c, err, sizeof err), 0);
    ASSERT_EQ(c.mask, 0x20000u | 0x200 | 0x800 | 0x10000 | 0x2000 | 0x20 | 0x1 | 0x10 | 0x8);
    return 0;
}

TEST(families_hex) {
    dnp_event_config c;
    char err[512];
    ASSERT_EQ(parse("0x1A7FFFF", &c, err, sizeof err), 0); /* DNProfiler's DN_PROFILER_MASK (docs/design-notes.md#event-mask) */
    ASSERT_EQ(c.mask, 0x1A7FFFF);
    ASSERT_EQ(c.families, dnp_families_from_mask(0x1A7FFFF));
    ASSERT(c.families & FAM(ALLOC));
    ASSERT(c.families & FAM(REMOTING)); /* the mask asks for it; the runtime ignores it */
    ASSERT_EQ(c.mask_high, 0);

    ASSERT_EQ(parse(" 0X80 ", &c, err, sizeof err), 0);
    ASSERT_EQ(c.mask, 0x80);
    ASSERT_EQ(c.families, FAM(RUNTIME) | FAM(GC));

    ASSERT_EQ(parse("0x0", &c, err, sizeof err), 0);
    ASSERT_EQ(c.mask, 0);
    ASSERT_EQ(c.families, FAM(RUNTIME));

    ASSERT_EQ(parse("0xFFFFFFFF", &c, err, sizeof err), 0);
    ASSERT_EQ(c.mask, 0xFFFFFFFFu);

    const char *bad[] = {"0x", "0x123456789", "0xZZ", "0x12 34"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(parse(bad[i], &c, err, sizeof err), -1);
        ASSERT_CONTAINS(err, "bad event mask");
    }
    ASSERT_EQ(parse("gc,0x10", &c, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "'0x10'");
    ASSERT_CONTAINS(err, "whole setting");
    return 0;
}

TEST(families_bad_word) {
    dnp_event_config c;
    char err[512];
    ASSERT_EQ(parse("classes,clases", &c, err, sizeof err), -1);
    const char *want = "unknown event family 'clases'; valid: all, default, runtime, appdomains, assemblies, "
                       "modules, classes, functions, jit, cache, threads, transitions, suspends, gc, alloc, "
                       "exceptions, ccw, calls, or a hex mask such as 0x1A7FFFF";
    ASSERT_STREQ(err, want);

    ASSERT_EQ(parse("all,-nope", &c, err, sizeof err), -1);
    ASSERT_EQ(strncmp(err, "unknown event family 'nope';", 28), 0);

    /* a small buffer gets a cut, terminated line */
    char small[24];
    ASSERT_EQ(dnp_events_parse("zzz", &c, small, sizeof small), -1);
    ASSERT_EQ(strlen(small), sizeof small - 1);
    ASSERT_EQ(dnp_events_parse("zzz", &c, NULL, 0), -1);

    char longword[300];
    memset(longword, 'q', sizeof longword - 1);
    longword[sizeof longword - 1] = 0;
    ASSERT_EQ(parse(longword, &c, err, sizeof err), -1);
    ASSERT(strstr(err, "...';") != NULL || strstr(err, "'...") != NULL || strstr(err, "...'") != NULL);
    return 0;
}

TEST(families_remoting_refused) {
    dnp_event_config c;
    char err[512];
    const char *texts[] = {"remoting", "all,remoting", "Remoting", "-remoting"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        ASSERT_EQ(parse(texts[i], &c, err, sizeof err), -1);
        ASSERT_STREQ(err, "remoting does not exist in .NET (Core) runtimes; it was a .NET Framework feature");
    }
    return 0;
}

TEST(families_lookup_and_format) {
    ASSERT_EQ(dnp_family_lookup("gc", 2), DNP_FAM_GC);
    ASSERT_EQ(dnp_family_lookup("GC", 2), DNP_FAM_GC);
    ASSERT_EQ(dnp_family_lookup("gcxyz", 2), DNP_FAM_GC);
    ASSERT_EQ(dnp_family_lookup("gcx", 3), -1);
    ASSERT_EQ(dnp_family_lookup("g", 1), -1);
    ASSERT_EQ(dnp_family_lookup("", 0), -1);
    ASSERT_EQ(dnp_family_lookup(NULL, 0), -1);
    ASSERT_EQ(dnp_family_lookup("remoting", 8), DNP_FAM_REMOTING);
    for (int f = 0; f < DNP_FAM_COUNT; f++)
        ASSERT_EQ(dnp_family_lookup(dnp_family_words[f], strlen(dnp_family_words[f])), f);

    char buf[256];
    ASSERT_STREQ(dnp_families_format(FAM(GC) | FAM(CLASSES), buf, sizeof buf), "classes,gc");
    ASSERT_STREQ(dnp_families_format(0, buf, sizeof buf), "none");
    ASSERT_STREQ(dnp_families_format(FAM(RUNTIME), buf, sizeof buf), "runtime");
    ASSERT_STREQ(dnp_families_format(DEFAULT, buf, sizeof buf),
                  "runtime,appdomains,assemblies,modules,classes,functions,jit,cache,threads,"
                  "suspends,gc,exceptions,ccw");
    char small[12];
    ASSERT_STREQ(dnp_families_format(FAM(RUNTIME) | FAM(APPDOMAINS), small, sizeof small), "runtime");

    /* a formatted set parses back to itself */
    dnp_event_config c;
    char err[256];
    dnp_families_format(ALL & ~FAM(CACHE) & ~FAM(CCW), buf, sizeof buf);
    ASSERT_EQ(dnp_events_parse(buf, &c, err, sizeof err), 0);
    ASSERT_EQ(c.families, ALL & ~FAM(CACHE) & ~FAM(CCW));
    return 0;
}

TEST(families_masks) {
    ASSERT_EQ(dnp_families_mask(0), 0);
    ASSERT_EQ(dnp_families_mask(FAM(RUNTIME)), 0);
    ASSERT_EQ(dnp_families_mask(DEFAULT), DEFAULT_MASK);
    ASSERT_EQ(dnp_families_mask(ALL), ALL_MASK);
    ASSERT_EQ(dnp_families_from_mask(0), FAM(RUNTIME));
    for (int f = 0; f < DNP_FAM_COUNT; f++) {
        uint32_t m = dnp_families_mask(1u << f);
        if (f == DNP_FAM_CALLS) /* no mask bit of its own: --calls sets the hooks */
            continue;
        ASSERT(f == DNP_FAM_RUNTIME || m != 0);
        ASSERT(dnp_families_from_mask(m) & (1u << f));
    }
    ASSERT_EQ(dnp_families_from_mask(ALL_MASK), ALL);
    ASSERT_EQ(dnp_families_from_mask(DEFAULT_MASK), DEFAULT);
    ASSERT_EQ(dnp_families_from_mask(0x800000), FAM(RUNTIME) | FAM(ALLOC));
    return 0;
}

/* The flags table (src/com/flags/prof_flags.def) against corprof.idl's .NET Core values. */
TEST(families_prf_flags_table) {
    ASSERT_EQ(COR_PRF_ALLOWABLE_AFTER_ATTACH, 0x106502FEu);
    ASSERT_EQ(COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH, 0xF6u);
    ASSERT_EQ(COR_PRF_MONITOR_GC, 0x80u);
    ASSERT_EQ(COR_PRF_DISABLE_ALL_NGEN_IMAGES, 0x80000000u);
    ASSERT_EQ(COR_PRF_HIGH_BASIC_GC, 0x10u);
    char buf[512];
    ASSERT_STREQ(dnp_prf_flags_format(0x100u | 0x800000u, 0, buf, sizeof buf),
                  "COR_PRF_MONITOR_OBJECT_ALLOCATED, COR_PRF_ENABLE_OBJECT_ALLOCATED");
    ASSERT_STREQ(dnp_prf_flags_format(0x10u, 1, buf, sizeof buf), "COR_PRF_HIGH_BASIC_GC");
    ASSERT_STREQ(dnp_prf_flags_format(0, 0, buf, sizeof buf), "");
    /* every bit of the low word has a name */
    char all[2048];
    dnp_prf_flags_format(0xFFFFFFFFu, 0, all, sizeof all);
    size_t commas = 0;
    for (const char *p = all; *p; p++)
        commas += *p == ',';
    ASSERT_EQ(commas, 31);
    return 0;
}

/* What an attached profiler keeps, and which families were named outright. */
TEST(families_after_attach) {
    dnp_event_config c;
    dnp_attach_events a;
    char err[512];
    ASSERT_EQ(parse("all", &c, err, sizeof err), 0);
    ASSERT_EQ(c.named, 0);
    ASSERT_EQ(c.from_mask, 0);
    dnp_events_after_attach(&c, &a);
    ASSERT_EQ(a.mask, ALL_MASK & 0x106502FEu);
    ASSERT_EQ(a.dropped, ALL_MASK & ~0x106502FEu);
    ASSERT_EQ(a.whole, FAM(ALLOC) | FAM(TRANSITIONS) | FAM(CACHE) | FAM(FUNCTIONS) | FAM(CCW));
    ASSERT_EQ(a.part, FAM(EXCEPTIONS)); /* MONITOR_CLR_EXCEPTIONS is start-up only */

    ASSERT_EQ(parse("gc,alloc,-gc,classes", &c, err, sizeof err), 0);
    ASSERT_EQ(c.named, FAM(ALLOC) | FAM(CLASSES));
    dnp_events_after_attach(&c, &a);
    ASSERT_EQ(a.whole, FAM(ALLOC));
    ASSERT_EQ(a.mask, 0x2u);

    ASSERT_EQ(parse("0x102", &c, err, sizeof err), 0);
    ASSERT_EQ(c.from_mask, 1);
    dnp_events_after_attach(&c, &a);
    ASSERT_EQ(a.dropped, 0x100u);
    ASSERT_EQ(a.mask, 0x2u);
    return 0;
}
