/* symbols.h: names for native code addresses (libcoreclr, libc, the program's
 * own native libraries), off the signal path: the dynamic symbol table through
 * dladdr1, then the file's own .symtab when it has one, else the module's name. */
#ifndef DNP_SYMBOLS_H
#define DNP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

/* Writes "module!symbol" (.symtab, else .dynsym; "[module+0xSTART]" when no
 * symbol covers ip but an unwind table says where its function starts,
 * "[module]" when nothing does, "[stub KIND]" for a stub the runtime's perf
 * map names (perfmap.h), "[anonymous code]" outside every module: JIT stubs
 * and other anonymous code) into out. Returns 1
 * when ip lies in a loaded module (its code is mapped), else 0. */
int symbols_name(uintptr_t ip, char *out, size_t cap);

/* Forgets every .symtab read (the sampler's stop). */
void symbols_release(void);

#endif
