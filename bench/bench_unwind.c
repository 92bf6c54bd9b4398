/* bench_unwind.c: the cost of native unwinding (src/agent/unwind*.c, issue 23).
 *   1. In this process: the unwind tables of every loaded library (rows,
 *      memory, parse time), and the cost of one step of the signal-side walk,
 *      on a stack of frameless functions (this file, -O2) and through libc
 *      (qsort calling back).
 *   2. The Scenarios program's "unwind bench" (SHA-256 through OpenSSL, Deflate
 *      through System.IO.Compression.Native, a managed loop; fixed work),
 *      interleaved, RUNS times each, median of the work's own time and of the
 *      process's CPU time (wait4):
 *        bare      no profiler
 *        fp100     --sample at 100 Hz, native unwinding off (DNP_ENV_SAMPLE_UNWIND=0)
 *        cfi100    --sample at 100 Hz (native frames by their unwind tables)
 *        cfi1k     --sample at 1 kHz
 *        perf100   perf record --call-graph dwarf -F 100 (if perf works), and
 *                  the time of its `perf report` (where perf unwinds)
 * Usage: bench_unwind AGENT.so SCENARIOS.dll [RUNS] [ROUNDS] */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch/arch.h"
#include "bench_util.h"
#include "session.h"
#include "settings.h"
#include "unwind.h"

/* ---- 1. in this process ---- */

#define ITERS 200000
static uint64_t g_top; /* above every frame walked */
static double g_ns_per_frame;
static uint32_t g_frames;

__attribute__((noinline)) static void time_walk(void) {
    ucontext_t uc;
    getcontext(&uc);
    arch_regs g;
    arch_context_regs(&uc, &g);
    uint64_t ip[128];
    const unw_index *ix = unwind_enter();
    uint32_t n = 0;
    double t0 = bench_now_ms();
    for (int i = 0; i < ITERS; i++) {
        unw_frame f = {.pc = g.pc, .sp = g.sp, .fp = g.fp};
        n = 1;
        ip[0] = f.pc;
        unwind_native(ix, ip, &n, 128, &f, 0, g.sp, g_top, 0);
    }
    double ms = bench_now_ms() - t0;
    unwind_leave();
    g_frames = n;
    g_ns_per_frame = ms * 1e6 / ((double)ITERS * (n > 1 ? n - 1 : 1));
}

__attribute__((noinline)) static int deep(int d) {
    if (d == 0) {
        time_walk();
        return 1;
    }
    int r = deep(d - 1) + d;
    __asm__ volatile("" ::: "memory");
    return r;
}

static int g_cmp_done;
static int cmp(const void *a, const void *b) {
    if (!g_cmp_done) {
        g_cmp_done = 1;
        deep(8);
    }
    return *(const int *)a - *(const int *)b;
}

/* The table whose library holds a (its text, or its dynamic section). */
static const unw_lib *by_address(uintptr_t a) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)a, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return NULL;
    for (uintptr_t off = 0; off < (64u << 20); off += 4096) { /* the first address its FDEs cover */
        const unw_lib *l = unwind_lib_of(lm->l_addr + off);
        if (l && l->bias == lm->l_addr)
            return l;
    }
    return NULL;
}

static void in_process(const char *const *lib_paths, int nlibs) {
    int top;
    g_top = (uint64_t)(uintptr_t)&top;
    const unw_lib *seen[64];
    int nseen = 0;
    /* each library once: the one that holds a few known addresses */
    const void *probe[16] = {(const void *)&in_process, (const void *)&qsort};
    size_t nprobe = 2;
    for (int i = 0; i < nlibs && nprobe < 16; i++) {
        void *h = dlopen(lib_paths[i], RTLD_LAZY | RTLD_LOCAL);
        struct link_map *lm = NULL;
        if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_ld)
            probe[nprobe++] = lm->l_ld; /* in the library's mapping, for unwind_lib_of after refresh */
        else
            printf("(%s: %s)\n", lib_paths[i], dlerror());
    }
    double t0 = bench_now_ms();
    unwind_refresh(1);
    double parse = bench_now_ms() - t0;
    uint32_t libs, known, bad, dbg;
    uint64_t rows, bytes, ns;
    unwind_totals(&libs, &known, &rows, &bytes, &ns, &bad, &dbg);
    printf("unwind tables of this process: %u libraries, %llu rows, %.1f KiB, %.1f ms to find and parse\n", libs,
           (unsigned long long)rows, (double)bytes / 1024, parse);
    printf("%-36s %8s %8s %10s %9s %8s\n", "library", "FDEs", "rows", "KiB", "B/FDE", "ms");
    for (size_t i = 0; i < nprobe; i++) {
        const unw_lib *l = by_address((uintptr_t)probe[i]);
        int dup = 0;
        for (int k = 0; k < nseen; k++)
            dup |= seen[k] == l;
        if (!l || dup)
            continue;
        seen[nseen++] = l;
        double kib = ((double)l->nrows * sizeof(unw_row) + l->nfuncs * 4.0) / 1024;
        printf("%-36s %8u %8u %10.1f %9.1f %8.2f\n", l->name, l->fdes, l->nrows, kib,
               l->fdes ? kib * 1024 / l->fdes : 0, (double)l->parse_ns / 1e6);
    }
    deep(40);
    printf("walk: %u frames (frameless recursion, main, libc's start), %.1f ns per frame\n", g_frames, g_ns_per_frame);
    int v[32];
    for (int i = 0; i < 32; i++)
        v[i] = (i * 7) % 32;
    qsort(v, 32, sizeof v[0], cmp);
    printf("walk through libc's qsort: %u frames, %.1f ns per frame\n", g_frames, g_ns_per_frame);
}

/* ---- 2. the program ---- */

enum { BARE, FP100, CFI100, CFI1K, PERF100, NCONFIG };
static const char *const names[NCONFIG] = {"bare", "fp100", "cfi100", "cfi1k", "perf100"};

typedef struct result {
    double work_ms, cpu_ms, report_ms, data_mb;
} result;

static int run_once(const char *agent, const char *dll, const char *rounds, int config, result *res) {
    int fd;
    pid_t pid = bench_fork_quiet(&fd);
    if (pid == 0) {
        if (config != BARE && config != PERF100) {
            bench_agent_env(agent, "/tmp/bench_unwind.%p.trace");
            setenv(DNP_ENV_EVENTS, "threads", 1);
            setenv(DNP_ENV_SAMPLE, "cpu", 1);
            setenv(DNP_ENV_SAMPLE_RATE, config == CFI1K ? "1000" : "100", 1);
            setenv(DNP_ENV_SAMPLE_UNWIND, config == FP100 ? "0" : "1", 1);
        }
        if (config == PERF100)
            execlp("perf", "perf", "record", "-q", "-F", "100", "--call-graph", "dwarf", "-o", "/tmp/bench_unwind.perf",
                   "--", "dotnet", dll, "unwind", "bench", rounds, (char *)NULL);
        execlp("dotnet", "dotnet", dll, "unwind", "bench", rounds, (char *)NULL);
        _exit(127);
    }
    char out[4096];
    int status = bench_child_end(fd, pid, out, sizeof out, &res->cpu_ms);
    bench_unlink_trace("bench_unwind", pid);
    res->report_ms = res->data_mb = 0;
    if (config == PERF100) {
        struct stat st;
        if (stat("/tmp/bench_unwind.perf", &st) == 0)
            res->data_mb = (double)st.st_size / 1e6;
        double t0 = bench_now_ms();
        int rc = system("perf report -q -i /tmp/bench_unwind.perf --stdio -g none > /dev/null 2>&1");
        res->report_ms = rc == 0 ? bench_now_ms() - t0 : 0;
        unlink("/tmp/bench_unwind.perf");
    }
    char *line = strstr(out, "bench ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line || sscanf(line + 6, "%lf ms", &res->work_ms) != 1) {
        fprintf(stderr, "bench_unwind: the %s run failed (status %d): %.300s\n", names[config], status, out);
        return -1;
    }
    return 0;
}

/* The runtime's native libraries and OpenSSL's libcrypto, to read their
 * tables here: from `dotnet --list-runtimes`. */
static int runtime_libs(char paths[][512], int cap) {
    static const char *const want[] = {"libcoreclr.so", "libclrjit.so", "libSystem.Native.so",
                                       "libSystem.IO.Compression.Native.so",
                                       "libSystem.Security.Cryptography.Native.OpenSsl.so"};
    int n = 0;
    snprintf(paths[n++], 512, "libcrypto.so.3");
    FILE *p = popen("dotnet --list-runtimes 2>/dev/null", "r");
    char line[1024], dir[1024] = "";
    while (p && fgets(line, sizeof line, p)) {
        char ver[64], at[900];
        if (sscanf(line, "Microsoft.NETCore.App %63s [%899[^]]]", ver, at) == 2)
            snprintf(dir, sizeof dir, "%s/%s", at, ver);
    }
    if (p)
        pclose(p);
    for (size_t i = 0; dir[0] && i < sizeof want / sizeof want[0] && n < cap; i++)
        snprintf(paths[n++], 512, "%s/%s", dir, want[i]);
    return n;
}

int main(int argc, char **argv) {
    char paths[8][512];
    const char *lp[8];
    int nl = runtime_libs(paths, 8);
    for (int i = 0; i < nl; i++)
        lp[i] = paths[i];
    in_process(lp, nl);
    if (argc < 3) {
        fprintf(stderr, "usage: bench_unwind AGENT.so SCENARIOS.dll [RUNS] [ROUNDS]\n");
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    const char *rounds = argc > 4 ? argv[4] : "20";
    int have_perf = system("perf record -q -o /dev/null -- true > /dev/null 2>&1") == 0;
    double work[NCONFIG][64], cpu[NCONFIG][64], rep[NCONFIG][64], mb[NCONFIG][64];
    int got[NCONFIG] = {0};
    for (int i = 0; i < runs && i < 64; i++)
        for (int c = 0; c < NCONFIG; c++) {
            result res;
            if ((c == PERF100 && !have_perf) || run_once(argv[1], argv[2], rounds, c, &res) != 0)
                continue;
            work[c][got[c]] = res.work_ms;
            cpu[c][got[c]] = res.cpu_ms;
            rep[c][got[c]] = res.report_ms;
            mb[c][got[c]++] = res.data_mb;
        }
    printf("\n%d runs, %s rounds each, medians\n| config | work time | process CPU | |\n|---|---|---|---|\n", runs, rounds);
    double w0 = got[BARE] ? bench_median(work[BARE], got[BARE]) : 0;
    double c0 = got[BARE] ? bench_median(cpu[BARE], got[BARE]) : 0;
    for (int c = 0; c < NCONFIG; c++) {
        if (!got[c])
            continue;
        double w = bench_median(work[c], got[c]), p = bench_median(cpu[c], got[c]);
        printf("| %s | %.1f ms (%+.1f%%) | %.1f ms (%+.1f%%) |", names[c], w, w0 ? 100 * (w / w0 - 1) : 0, p,
               c0 ? 100 * (p / c0 - 1) : 0);
        if (c == PERF100)
            printf(" perf.data %.1f MB, perf report %.0f ms |", bench_median(mb[c], got[c]), bench_median(rep[c], got[c]));
        else
            printf(" |");
        printf("\n");
    }
    if (!have_perf)
        printf("(perf record refused here: no perf100 row)\n");
    return 0;
}
