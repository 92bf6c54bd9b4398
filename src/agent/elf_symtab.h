/* elf_symtab.h: the FUNC symbols of an ELF64 file's .symtab, from its bytes
 * (symbols.c maps the file; tests/fuzz/fuzz_symtab.c feeds it anything). The
 * parser trusts nothing in the file: every offset and size is checked against
 * the bytes there are. */
#ifndef DNP_ELF_SYMTAB_H
#define DNP_ELF_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct dnp_sym {
    uint64_t start, size; /* from the module's load bias */
    const char *name;     /* into the table's copy of the string table */
} dnp_sym;

typedef struct dnp_symtab {
    dnp_sym *syms; /* by start; NULL: none */
    size_t n;
    char *strtab;
} dnp_symtab;

/* Reads the FUNC symbols of the file's first .symtab into t (zeroed first).
 * 0, also for a file with none; -1 when it is not an ELF64 file whose section
 * headers lie inside it, or out of memory. */
int dnp_symtab_parse(dnp_symtab *t, const uint8_t *file, size_t size);

/* The name of the symbol that covers offset (the closest of nested or aliased
 * ones), or NULL. */
const char *dnp_symtab_lookup(const dnp_symtab *t, uint64_t offset);

void dnp_symtab_free(dnp_symtab *t);

/* The regular file at path mapped read-only, whole (munmap it): 0, or -1. */
int dnp_file_map(const char *path, const uint8_t **map, size_t *len);

/* Where the section called name lies in the file's bytes: 0, or -1 when the
 * file is not an ELF64 file, has no such section, or holds it compressed or
 * not at all (SHT_NOBITS). Every offset is checked against size. */
int dnp_elf_section(const uint8_t *file, size_t size, const char *name, uint64_t *off, uint64_t *len);

/* The same, of the regular file at path, read with pread and not mapped (a
 * few system calls, where mapping a library to look, and unmapping it while
 * other threads run, a TLB shootdown, cost 0.2-1.4 ms a library in a VM).
 * The section tables of the last 64 files are kept: each library is looked
 * at for .symtab, .debug_frame and .gnu_debuglink, its debug files'
 * candidates too, by two searches. One thread's (the sampler's);
 * dnp_elf_forget drops what is kept. */
int dnp_elf_section_at(const char *path, const char *name, uint64_t *off, uint64_t *len);
void dnp_elf_forget(void);

#endif
