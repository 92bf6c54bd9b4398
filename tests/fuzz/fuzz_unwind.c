/* fuzz_unwind.c: the unwind-table parser (src/agent/unwind_cfi.c), which the
 * sampler runs on every native library of the profiled process, and the
 * lookups the signal handler makes in what it built (src/agent/unwind.c). The
 * input is a library's unwind data as it lies in memory: the bytes from
 * .eh_frame_hdr to the end of .eh_frame (tests/fuzz/make_unwind_seed.py cuts
 * them out of real libraries for the seeds, tests/fuzz/corpus/unwind). It is
 * copied into a buffer of its exact size, so that ASan stops any read past it;
 * the library's code is taken to lie in the 16 MiB before it, as in a real
 * mapping. Checks what the handler relies on: the rows sorted by pc, every
 * lookup inside the table. Dictionary: tests/fuzz/unwind.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind.h"

#define CODE_BEFORE (1ull << 24)

/* What the handler relies on in a parsed table: rows in order, every lookup inside it. */
static void check(unw_lib *l) {
    for (uint32_t i = 1; i < l->nrows; i++)
        if (l->rows[i].pc < l->rows[i - 1].pc) {
            fprintf(stderr, "fuzz_unwind: rows out of order at %u\n", i);
            abort();
        }
    uint64_t span = l->hi > l->lo ? l->hi - l->lo : 0;
    for (unsigned k = 0; k <= 64; k++) { /* the handler's lookups, across the table and past its ends */
        uint64_t pc = l->lo + span * k / 64 - (k == 0) + (k == 64);
        const unw_row *r = unwind_row(l, pc);
        if (r && (r < l->rows || r >= l->rows + l->nrows))
            abort();
        uint64_t off;
        unwind_func_start(l, pc, &off);
    }
    unw_lib_free(l);
}

/* The same bytes also as a .debug_frame section (no header, CIEs by offset,
 * FDEs in any order), the file's addresses taken from the same bias. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8 || size > (1u << 22))
        return 0;
    uint8_t *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    uint64_t lo = (uint64_t)(uintptr_t)buf, hi = lo + size, bias = lo > CODE_BEFORE ? lo - CODE_BEFORE : 0;
    unw_lib l;
    if (unw_parse(buf, lo, hi, bias, &l) == 0)
        check(&l);
    if (unw_parse2(NULL, 0, 0, buf, size, bias, &l) == 0)
        check(&l);
    free(buf);
    return 0;
}
