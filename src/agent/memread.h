/* memread.h: reading the process's own memory without faulting on what is
 * not mapped, for the sampler (its signal handler and its thread). */
#ifndef DNP_MEMREAD_H
#define DNP_MEMREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Copies up to len bytes at addr into out: the count copied (short when the
 * mapping ends), or -1 when addr is not mapped. process_vm_readv, or where the
 * kernel (or qemu-user, which does not emulate it) has none, a pread of
 * /proc/self/mem. Async-signal-safe; errno may change. */
ssize_t memread(uint64_t addr, void *out, size_t len);

/* Which way memread reads, for the trace's notes (docs/arm64.md: qemu-user has
 * no process_vm_readv): a read of its own is made first if none was. Not for
 * the signal handler. */
const char *memread_path(void);

#endif
