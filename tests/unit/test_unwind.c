/* test_unwind.c: the unwind tables (src/agent/unwind_cfi.c) of this very
 * program and of libc, and walks by them (unwind.c) from a real context: the
 * functions below are compiled without frame pointers at -O2, so only their
 * call-frame information finds their callers. */
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch/arch.h"
#include "test.h"
#include "unwind.h"

#define DEPTH 32

static uint64_t g_pcs[DEPTH];
static uint32_t g_n;
static int g_how;

/* The walk from right here (getcontext's return address in this function). */
__attribute__((noinline)) static void walk_here(void) {
    ucontext_t uc;
    if (getcontext(&uc) != 0)
        return;
    arch_regs g;
    arch_context_regs(&uc, &g);
    unw_frame f = {.pc = g.pc, .sp = g.sp, .fp = g.fp};
    const unw_index *ix = unwind_enter();
    g_n = 0;
    g_pcs[g_n++] = f.pc;
    /* the stack's top is not known: process_vm_readv, 1 MiB at most */
    g_how = ix ? unwind_native(ix, g_pcs, &g_n, DEPTH, &f, 0, g.sp, g.sp + (1u << 20), 1) : -1;
    if (ix)
        unwind_leave();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void middle(void) {
    walk_here();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void outer(void) {
    middle();
    __asm__ volatile("" ::: "memory");
}

/* The function (its FDE's start) that holds a return address. */
static uint64_t func_of(uint64_t ret) {
    const unw_lib *l = unwind_lib_of(ret - 1);
    uint64_t off;
    return l && unwind_func_start(l, ret - 1, &off) == 0 ? l->bias + off : 0;
}

TEST(unwind_tables_of_self_and_libc) {
    unwind_refresh(1);
    /* a libc function that no sanitizer intercepts (&qsort is ASan's own under DNPROF_SANITIZE) */
    const unw_lib *self = unwind_lib_of((uintptr_t)&middle),
                  *libc = unwind_lib_of((uintptr_t)&gnu_get_libc_version);
    ASSERT(self);
    ASSERT(libc);
    ASSERT_NE(self, libc);
    ASSERT_GT(self->nrows, 100);
    ASSERT_GT(libc->nrows, 1000);
    ASSERT_EQ(strncmp(libc->name, "libc.so", 7), 0);
    /* at a function's first instruction: CFA = SP + 8, the return address at CFA - 8 */
    const unw_row *w = unwind_row(self, (uintptr_t)&middle);
    ASSERT(w);
    ASSERT_EQ(w->cfa_reg, UNW_CFA_SP);
    ASSERT_EQ(w->cfa_off, 8);
    ASSERT_EQ(w->rules & 15, UNW_R_AT);
    ASSERT_EQ(w->ra_w, -1);
    uint64_t off;
    ASSERT_EQ(unwind_func_start(self, (uintptr_t)&middle + 1, &off), 0);
    ASSERT_EQ(self->bias + off, (uintptr_t)&middle);
    unwind_release();
    ASSERT_EQ(unwind_lib_of((uintptr_t)&middle), NULL);
    return 0;
}

/* Lazily: a library's table is parsed at the refresh after a lookup met it
 * unparsed (a sample's), and only then; others stay unparsed. */
TEST(unwind_tables_parsed_when_first_needed) {
    unwind_refresh(0);
    ASSERT_EQ(unwind_lib_of((uintptr_t)&middle), NULL); /* known, not parsed: asked for */
    uint32_t libs, known, bad, dbg;
    uint64_t rows, bytes, ns;
    unwind_totals(&libs, &known, &rows, &bytes, &ns, &bad, &dbg);
    ASSERT_EQ(libs, 0);
    ASSERT_GE(known, 2); /* this program and libc at least */
    unwind_refresh(0);
    const unw_lib *self = unwind_lib_of((uintptr_t)&middle);
    ASSERT(self);
    ASSERT_GT(self->nrows, 100);
    unwind_totals(&libs, &known, &rows, &bytes, &ns, &bad, &dbg);
    ASSERT_EQ(libs, 1); /* libc was not asked for */
    ASSERT_EQ(unwind_lib_of((uintptr_t)&gnu_get_libc_version), NULL);
    unwind_refresh(0);
    ASSERT(unwind_lib_of((uintptr_t)&gnu_get_libc_version));
    unwind_release();
    return 0;
}

TEST(unwind_walks_own_frames) {
    unwind_refresh(1);
    outer();
    ASSERT_GE(g_n, 4);
    ASSERT_EQ(func_of(g_pcs[0]), (uintptr_t)&walk_here);
    ASSERT_EQ(func_of(g_pcs[1]), (uintptr_t)&middle);
    ASSERT_EQ(func_of(g_pcs[2]), (uintptr_t)&outer);
    /* on to the program's entry, through libc's __libc_start_main: its
     * outermost frame ends the walk (the return address is undefined), or the
     * 1 MiB bound */
    ASSERT(g_how == UNW_END || g_how == UNW_BAD_STACK || g_how == UNW_NOT_NATIVE);
    unwind_release();
    return 0;
}

static int by_value(const void *a, const void *b) {
    static int walked;
    if (!walked) {
        walked = 1;
        walk_here();
    }
    return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void sort_some(void) {
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    qsort(v, 64, sizeof v[0], by_value);
    __asm__ volatile("" ::: "memory");
}

/* Through libc, built without frame pointers: qsort calls the comparator. */
TEST(unwind_walks_through_libc) {
    unwind_refresh(1);
    sort_some();
    const unw_lib *libc = unwind_lib_of((uintptr_t)&qsort);
    ASSERT(libc);
    int in_libc = 0, found = 0;
    for (uint32_t k = 1; k < g_n && !found; k++) {
        if (unwind_lib_of(g_pcs[k] - 1) == libc)
            in_libc++;
        found = func_of(g_pcs[k]) == (uintptr_t)&sort_some;
    }
    ASSERT_EQ(func_of(g_pcs[0]), (uintptr_t)&walk_here);
    ASSERT_GT(in_libc, 0);
    ASSERT(found);
    unwind_release();
    return 0;
}

#ifdef DNPROF_SOURCE_DIR
/* A reproducer of fuzz_unwind (tests/fuzz/corpus/unwind), framed as the
 * harness frames it: the table it builds, if any, stays sorted and every
 * lookup in it. */
static int parse_reproducer(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/unwind/%s", DNPROF_SOURCE_DIR, name);
    size_t size = 0;
    char *data = test_read_file(path, &size);
    ASSERT_NE(data, NULL);
    ASSERT_GT(size, 8);
    uint8_t *buf = malloc(size); /* exact size, as the harness has it */
    ASSERT_NE(buf, NULL);
    memcpy(buf, data, size);
    free(data);
    uint64_t lo = (uint64_t)(uintptr_t)buf, bias = lo > (1ull << 24) ? lo - (1ull << 24) : 0;
    unw_lib l;
    if (unw_parse(buf, lo, lo + size, bias, &l) == 0) {
        for (uint32_t i = 1; i < l.nrows; i++)
            ASSERT_GE(l.rows[i].pc, l.rows[i - 1].pc);
        const unw_row *r = unwind_row(&l, l.lo);
        ASSERT(!r || (r >= l.rows && r < l.rows + l.nrows));
        unw_lib_free(&l);
    }
    free(buf);
    return 0;
}

/* fuzz_unwind's finds: a factored offset whose product with the data
 * alignment overflowed int64_t (now wrapping unsigned arithmetic, the rule
 * refused); an augmentation length that moved the cursor past the end of the
 * data (now checked against what is left). */
TEST(unwind_hostile_offsets) {
    ASSERT_EQ(parse_reproducer("crash-scaled-offset-overflow"), 0);
    ASSERT_EQ(parse_reproducer("crash-augmentation-length"), 0);
    return 0;
}
#endif

/* Appends a .debug_frame FDE (32-bit DWARF) for [loc, loc + range) whose CIE
 * is at offset 0: one advance of a byte, then CFA = RSP + 16. */
static size_t dbg_fde(uint8_t *p, uint64_t loc, uint64_t range) {
    uint8_t body[] = {0, 0, 0, 0,                             /* the CIE's offset in the section */
                      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* initial location */
                      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* address range */
                      0x41, 0x0e, 16,                         /* advance_loc 1; def_cfa_offset 16 */
                      0, 0, 0, 0, 0};                         /* padding (nops) to a multiple of 4 */
    memcpy(body + 4, &loc, 8);
    memcpy(body + 12, &range, 8);
    uint32_t len = sizeof body;
    memcpy(p, &len, 4);
    memcpy(p + 4, body, sizeof body);
    return 4 + sizeof body;
}

/* .debug_frame: CIE id 0xffffffff, FDEs pointing at their CIE by offset,
 * the file's addresses, in no order; merged in by address. */
TEST(unwind_debug_frame_section) {
    uint8_t sec[256];
    memset(sec, 0, sizeof sec);
    const uint8_t cie[] = {0xff, 0xff, 0xff, 0xff, /* CIE id */
                           4,                      /* version 4: address and segment sizes follow */
                           0,                      /* no augmentation */
                           8, 0,                   /* address size 8, segment size 0 */
                           1, 0x78, 16,            /* code align 1, data align -8, return address r16 */
                           0x0c, 7, 8,             /* def_cfa rsp + 8 */
                           0x90, 1,                /* offset r16 at cfa - 8 */
                           0, 0, 0, 0};            /* nops */
    uint32_t len = sizeof cie;
    memcpy(sec, &len, 4);
    memcpy(sec + 4, cie, sizeof cie);
    size_t n = 4 + sizeof cie;
    n += dbg_fde(sec + n, 0x3000, 0x40); /* the later function first */
    n += dbg_fde(sec + n, 0x1000, 0x20);
    unw_lib l;
    ASSERT_EQ(unw_parse2(NULL, 0, 0, sec, n, 0x400000, &l), 0);
    ASSERT_EQ(l.dbg_fdes, 2);
    ASSERT_EQ(l.nfuncs, 2);
    ASSERT_EQ(l.fde_lo, 0x401000);
    ASSERT_EQ(l.fde_hi, 0x403040);
    const unw_row *w = unwind_row(&l, 0x401000);
    ASSERT(w);
    ASSERT_EQ(w->cfa_reg, UNW_CFA_SP);
    ASSERT_EQ(w->cfa_off, 8);
    ASSERT_EQ(w->rules & 15, UNW_R_AT);
    ASSERT_EQ(w->ra_w, -1);
    w = unwind_row(&l, 0x401001);
    ASSERT(w);
    ASSERT_EQ(w->cfa_off, 16);
    w = unwind_row(&l, 0x401020); /* between the two functions: no row */
    ASSERT(w);
    ASSERT_EQ(w->cfa_reg, UNW_CFA_NONE);
    w = unwind_row(&l, 0x403010);
    ASSERT(w);
    ASSERT_EQ(w->cfa_off, 16);
    uint64_t off;
    ASSERT_EQ(unwind_func_start(&l, 0x403010, &off), 0);
    ASSERT_EQ(off, 0x3000);
    unw_lib_free(&l);
    /* a CIE pointer past the section: that FDE is dropped, not followed */
    memset(sec + 4 + sizeof cie + 4, 0xee, 4);
    ASSERT_EQ(unw_parse2(NULL, 0, 0, sec, n, 0x400000, &l), 0);
    ASSERT_EQ(l.nfuncs, 1);
    unw_lib_free(&l);
    return 0;
}

/* Whether addr lies in a mapping of a file under dir (/proc/self/maps). */
static int in_file_mapping(uintptr_t addr, const char *dir) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        const char *path = strchr(line, '/');
        found = sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi && path &&
                !strncmp(path, dir, strlen(dir));
    }
    if (f)
        fclose(f);
    return found;
}

/* Kept tables (unwind_cache.c): a table parsed is written to the directory,
 * and after a release the next refresh maps it from there: the same rows, in
 * a mapping of the file (the page cache's pages, not a copy), gone at the
 * release. */
TEST(unwind_cache_maps_kept_tables) {
    char dir[] = "/tmp/dnprof-unwind-XXXXXX";
    ASSERT(mkdtemp(dir));
    unwind_cache_dir(dir);
    /* another agent's file two days old: the first write of the day removes
     * it, and dates the look in .pruned */
    char foreign[256], stamp[256];
    snprintf(foreign, sizeof foreign, "%s/0123456789abcdef-00.libold.so.v1.unwind", dir);
    snprintf(stamp, sizeof stamp, "%s/.pruned", dir);
    FILE *f = fopen(foreign, "w");
    ASSERT(f);
    fclose(f);
    struct timespec old[2] = {{time(NULL) - 2 * 86400, 0}, {time(NULL) - 2 * 86400, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, foreign, old, 0), 0);
    unwind_refresh(1);
    ASSERT_NE(access(foreign, F_OK), 0);
    ASSERT_EQ(access(stamp, F_OK), 0);
    const unw_lib *libc = unwind_lib_of((uintptr_t)&gnu_get_libc_version);
    ASSERT(libc);
    ASSERT_EQ(libc->cached, 0); /* parsed, and written */
    ASSERT_EQ(libc->map, NULL);
    uint32_t nrows = libc->nrows, nfuncs = libc->nfuncs;
    unw_row first = libc->rows[0], last = libc->rows[nrows - 1];
    uint32_t last_func = libc->funcs[nfuncs - 1];
    unwind_release();
    unwind_refresh(1);
    libc = unwind_lib_of((uintptr_t)&gnu_get_libc_version);
    ASSERT(libc);
    ASSERT_EQ(libc->cached, 1);
    ASSERT_NE(libc->map, NULL);
    ASSERT_EQ(libc->nrows, nrows);
    ASSERT_EQ(libc->nfuncs, nfuncs);
    ASSERT_EQ(memcmp(&libc->rows[0], &first, sizeof first), 0);
    ASSERT_EQ(memcmp(&libc->rows[nrows - 1], &last, sizeof last), 0);
    ASSERT_EQ(libc->funcs[nfuncs - 1], last_func);
    ASSERT_GE(unwind_cached(), 1);
    uintptr_t rows = (uintptr_t)libc->rows;
    ASSERT_EQ(in_file_mapping(rows, dir), 1); /* mapped from the file, not read into memory of its own */
    unwind_release();
    ASSERT_EQ(in_file_mapping(rows, dir), 0);
    unwind_cache_dir(NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
    return 0;
}
