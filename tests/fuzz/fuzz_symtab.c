/* fuzz_symtab.c: the ELF .symtab reader (src/agent/elf_symtab.c), which the
 * sampler runs on every native library of the profiled process that has a
 * .symtab, to name native frames. The input is a whole ELF file (the seeds,
 * tests/fuzz/corpus/symtab, are small real shared objects built with a .symtab,
 * and cuts of them), as libFuzzer hands it: in a heap buffer of its exact
 * size, so that ASan stops any read past it. Checks what the names rely on: symbols sorted by start,
 * every name inside the table's string copy, lookups that stay in the table.
 * Dictionary: tests/fuzz/symtab.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 22))
        return 0;
    dnp_symtab t;
    if (dnp_symtab_parse(&t, data, size) == 0) {
        for (size_t i = 0; i < t.n; i++) {
            if (i && t.syms[i].start < t.syms[i - 1].start) {
                fprintf(stderr, "fuzz_symtab: symbols out of order at %zu\n", i);
                abort();
            }
            if (strlen(t.syms[i].name) > size) /* reads the name: inside the copy, NUL-terminated */
                abort();
        }
        uint64_t probes[] = {0, 1, 0x1000, UINT64_MAX, t.n ? t.syms[0].start : 0,
                             t.n ? t.syms[t.n - 1].start + t.syms[t.n - 1].size : 0};
        for (size_t k = 0; k < sizeof probes / sizeof *probes; k++) {
            const char *name = dnp_symtab_lookup(&t, probes[k]);
            if (name && (name < t.strtab || name > t.strtab + size))
                abort();
        }
        for (size_t i = 0; i < t.n && i < 64; i++)
            dnp_symtab_lookup(&t, t.syms[i].start);
        dnp_symtab_free(&t);
    }
    return 0;
}
