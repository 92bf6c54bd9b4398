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

/* n reads of len (at most 16) bytes, the i-th at addrs[i] into out + i * len;
 * ok[i] says whether it was read whole. As few system calls as the reads allow
 * (process_vm_readv takes 64 at once; a piece that fails ends a call, the rest
 * go in the next), where one each cost 13 us in a KVM guest. */
void memread_batch(const uint64_t *addrs, uint32_t n, size_t len, uint8_t *out, uint8_t *ok);

/* The mapping that holds addr, asked of the kernel by address (PROCMAP_QUERY
 * on /proc/self/maps, Linux 6.11+): 1 with its bounds [lo, hi) and flags
 * (MEMREAD_R, _W, _X); 0 when addr is in no mapping; -1 when the kernel has
 * no such query (then read /proc/self/maps: about 1 ms in a VM for a .NET
 * process's thousand mappings, where this is one system call). Not for the
 * signal handler. */
enum { MEMREAD_R = 1, MEMREAD_W = 2, MEMREAD_X = 4 };
int memread_mapping(uint64_t addr, uint64_t *lo, uint64_t *hi, unsigned *flags);
/* The same for the signal handler: one ioctl, only once memread_mapping has
 * opened and checked the file (-1 before); errno may change. */
int memread_mapping_now(uint64_t addr, uint64_t *lo, uint64_t *hi, unsigned *flags);
/* Closes the file the queries use (the sampler's stop, after its handler is
 * gone: a detached agent leaves no descriptor behind). */
void memread_mapping_close(void);

/* A copy of another thread's stack, which the sampler thread walks instead of
 * signalling a thread that waits in a system call (sampler_walk.c): the walks
 * given MEMREAD_VIEW for their `safe` argument read [lo, end) from words, and
 * fail above it. A read that fails in [end, top), the stack the copy left
 * out, sets overrun: the walk needed more of it. The sampler thread's alone. */
enum { MEMREAD_VIEW = 2 };
typedef struct memread_view {
    uint64_t lo, end, top;
    const uint64_t *words;
    int overrun;
} memread_view;
extern memread_view memread_viewed;
/* len bytes at addr from the view into out: 0, or -1 outside it. */
int memread_view_read(uint64_t addr, void *out, size_t len);
/* Where the view holds the len bytes at addr, read in place; NULL outside it. */
const void *memread_view_at(uint64_t addr, size_t len);

/* Which way memread reads, for the trace's notes (docs/arm64.md: qemu-user has
 * no process_vm_readv): a read of its own is made first if none was. Not for
 * the signal handler. */
const char *memread_path(void);

/* This process's id, asked of the kernel once (and again in a forked child). */
long memread_self_pid(void);

#endif
