/* memread.c: see memread.h. */
#include "memread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_int g_no_vm_readv; /* process_vm_readv said ENOSYS */
static atomic_int g_mem_fd = -1; /* /proc/self/mem, opened at the first need */

static int mem_fd(void) {
    int fd = atomic_load_explicit(&g_mem_fd, memory_order_acquire);
    if (fd >= 0)
        return fd;
    fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mem", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int none = -1;
    if (!atomic_compare_exchange_strong(&g_mem_fd, &none, fd)) {
        syscall(SYS_close, fd); /* another thread opened it first */
        fd = none;
    }
    return fd;
}

ssize_t memread(uint64_t addr, void *out, size_t len) {
    if (!atomic_load_explicit(&g_no_vm_readv, memory_order_relaxed)) {
        struct iovec local = {out, len}, remote = {(void *)(uintptr_t)addr, len};
        long n = syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L);
        if (n >= 0 || errno != ENOSYS)
            return n > 0 ? (ssize_t)n : -1;
        atomic_store_explicit(&g_no_vm_readv, 1, memory_order_relaxed);
    }
    int fd = mem_fd();
    if (fd < 0 || addr > INT64_MAX)
        return -1;
    long n = syscall(SYS_pread64, fd, out, len, (off_t)addr);
    return n > 0 ? (ssize_t)n : -1;
}

const char *memread_path(void) {
    uint64_t probe = 0x646e70726f66ull, copy = 0;
    memread((uint64_t)(uintptr_t)&probe, &copy, sizeof copy);
    if (atomic_load_explicit(&g_no_vm_readv, memory_order_relaxed))
        return "/proc/self/mem (process_vm_readv is not there)";
    return "process_vm_readv";
}
