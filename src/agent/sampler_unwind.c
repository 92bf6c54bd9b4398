/* sampler_unwind.c: what the sampler says of its native unwinding (unwind.h):
 * the counts of each record's walk, and the trace's closing note (tables,
 * their memory, walks that stopped, callers still guessed). Sampler thread. */
#include "sampler_internal.h"

#include "agent.h"
#include "callbacks.h"
#include "settings.h"
#include "unwind.h"

void sampler_unwind_setup(void) {
    char dir[4096] = "";
    if (S.unwind && !g_agent.config.host_pid) /* attached from the host: no files left in the container */
        config_unwind_cache(dir, sizeof dir);
    unwind_cache_dir(dir);
}

void sampler_unwind_counts(uint32_t flags) {
    if (flags & REC_NATIVE_CFI)
        S.native_cfi++;
    if (flags & REC_UNW_STOP)
        S.stopped++;
}

void sampler_unwind_note(void) {
    if (S.deep)
        rec_note(0, "%llu samples were of stacks deeper than %u frames: their innermost %u kept, under a root frame "
                 "[deeper than %u frames] (the outer ones, toward Main, not walked)",
                 (unsigned long long)S.deep, MAX_DEPTH, MAX_DEPTH, MAX_DEPTH);
    if (!S.unwind) {
        rec_note(0, "native unwinding off (" DNP_ENV_SAMPLE_UNWIND "=0): native code walked by frame pointers only");
        return;
    }
    uint32_t libs, known, bad, dbg;
    uint64_t rows, bytes, ns;
    unwind_totals(&libs, &known, &rows, &bytes, &ns, &bad, &dbg);
    rec_note(0, "native unwinding: %u of %u libraries' unwind tables (parsed when a sample first met them), "
             "%llu rows, %.1f KiB, %u FDEs from .debug_frame, parsed in %.1f ms "
             "(%u FDEs the parser stops at); %llu native leaves unwound by them, %llu walks stopped in native code "
             "without a row (marked [unwinding stopped]), %llu native callers guessed from the stack",
             libs, known, (unsigned long long)rows, (double)bytes / 1024, dbg, (double)ns / 1e6, bad,
             (unsigned long long)S.native_cfi, (unsigned long long)S.stopped, (unsigned long long)S.guessed);
    uint32_t cached = unwind_cached();
    if (cached)
        rec_note(0, "native unwinding: %u of those tables came from the cache of parsed tables (" DNP_ENV_UNWIND_CACHE
                    ", docs/sampling.md), not parsed again", cached);
}
