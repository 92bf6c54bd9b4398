/* memread.c: see memread.h. */
#include "memread.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_int g_no_vm_readv; /* process_vm_readv said ENOSYS */
static atomic_long g_pid;        /* this process's id, 0 until asked, and again in a forked child */

static atomic_int g_maps_fd = -1; /* /proc/self/maps, for PROCMAP_QUERY; -2: the kernel has none */

static void forked_child(void) {
    atomic_store_explicit(&g_pid, 0, memory_order_relaxed);
    int fd = atomic_exchange(&g_maps_fd, -1); /* the parent's mappings: asked again in the child */
    if (fd >= 0)
        close(fd);
}

/* getpid() is a system call (no vDSO): asked once, not at every read (a read
 * was two system calls, 26 us in a KVM guest). Registered when the library
 * loads; glibc drops it again if the library is unloaded. */
__attribute__((constructor)) static void memread_init(void) {
    pthread_atfork(NULL, NULL, forked_child);
}

long memread_self_pid(void) {
    long pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
    if (!pid) {
        pid = (long)syscall(SYS_getpid);
        atomic_store_explicit(&g_pid, pid, memory_order_relaxed);
    }
    return pid;
}
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
        long n = syscall(SYS_process_vm_readv, memread_self_pid(), &local, 1L, &remote, 1L, 0L);
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

void memread_batch(const uint64_t *addrs, uint32_t n, size_t len, uint8_t *out, uint8_t *ok) {
    enum { BATCH = 64 };
    uint32_t i = 0;
    while (i < n && len <= 16 && !atomic_load_explicit(&g_no_vm_readv, memory_order_relaxed)) {
        struct iovec local[BATCH], remote[BATCH];
        uint32_t m = n - i < BATCH ? n - i : BATCH;
        for (uint32_t k = 0; k < m; k++) {
            local[k] = (struct iovec){out + (size_t)(i + k) * len, len};
            remote[k] = (struct iovec){(void *)(uintptr_t)addrs[i + k], len};
        }
        long got = syscall(SYS_process_vm_readv, memread_self_pid(), local, (long)m, remote, (long)m, 0L);
        if (got < 0 && errno == ENOSYS)
            break; /* one by one below */
        uint32_t whole = got > 0 ? (uint32_t)((size_t)got / len) : 0; /* never splits a piece */
        for (uint32_t k = 0; k < whole; k++)
            ok[i + k] = 1;
        if (whole < m)
            ok[i + whole++] = 0; /* the piece that failed */
        i += whole;
    }
    for (; i < n; i++)
        ok[i] = memread(addrs[i], out + (size_t)i * len, len) == (ssize_t)len;
}

const char *memread_path(void) {
    uint64_t probe = 0x646e70726f66ull, copy = 0;
    memread((uint64_t)(uintptr_t)&probe, &copy, sizeof copy);
    if (atomic_load_explicit(&g_no_vm_readv, memory_order_relaxed))
        return "/proc/self/mem (process_vm_readv is not there)";
    return "process_vm_readv";
}

/* PROCMAP_QUERY (include/uapi/linux/fs.h, Linux 6.11): one mapping of
 * /proc/PID/maps by address, without the kernel writing out the text of
 * every mapping (a .NET process has over a thousand). */
#define DNP_PROCMAP_QUERY 0xC0686611u /* _IOWR('f', 17, struct procmap_query) */
struct dnp_procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct dnp_procmap_query) == 104, "PROCMAP_QUERY's argument is 104 bytes");

/* The query on fd, which is open and was checked. */
static int query(int fd, uint64_t addr, uint64_t *lo, uint64_t *hi, unsigned *flags) {
    struct dnp_procmap_query q = {.size = sizeof q, .query_addr = addr};
    if (ioctl(fd, DNP_PROCMAP_QUERY, &q) != 0)
        return errno == ENOENT ? 0 : -1;
    *lo = q.vma_start;
    *hi = q.vma_end;
    *flags = (unsigned)q.vma_flags & (MEMREAD_R | MEMREAD_W | MEMREAD_X);
    return 1;
}

int memread_mapping_now(uint64_t addr, uint64_t *lo, uint64_t *hi, unsigned *flags) {
    int fd = atomic_load_explicit(&g_maps_fd, memory_order_acquire);
    return fd >= 0 ? query(fd, addr, lo, hi, flags) : -1;
}

int memread_mapping(uint64_t addr, uint64_t *lo, uint64_t *hi, unsigned *flags) {
    int fd = atomic_load_explicit(&g_maps_fd, memory_order_acquire);
    if (fd == -2)
        return -1;
    if (fd < 0) {
        fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        /* believed only when it finds this very function in executable memory (an older
         * kernel has no such query; an emulator's /proc/self/maps is a file of its own making) */
        uint64_t me = (uint64_t)(uintptr_t)&memread_mapping, mlo, mhi;
        unsigned mfl;
        if (query(fd, me, &mlo, &mhi, &mfl) != 1 || !(mfl & MEMREAD_X) || me < mlo || me >= mhi) {
            syscall(SYS_close, fd);
            atomic_store(&g_maps_fd, -2);
            return -1;
        }
        int none = -1;
        if (!atomic_compare_exchange_strong(&g_maps_fd, &none, fd)) {
            syscall(SYS_close, fd);
            if (none == -2)
                return -1;
            fd = none;
        }
    }
    return query(fd, addr, lo, hi, flags);
}

void memread_mapping_close(void) {
    int fd = atomic_load(&g_maps_fd);
    if (fd >= 0 && atomic_compare_exchange_strong(&g_maps_fd, &fd, -1))
        syscall(SYS_close, fd);
}

memread_view memread_viewed;

const void *memread_view_at(uint64_t addr, size_t len) {
    const memread_view *v = &memread_viewed;
    if (addr < v->lo || addr + len < addr || addr + len > v->end) {
        if (addr >= v->lo && addr < v->top)
            memread_viewed.overrun = 1;
        return NULL;
    }
    return (const char *)v->words + (addr - v->lo);
}

int memread_view_read(uint64_t addr, void *out, size_t len) {
    const void *at = memread_view_at(addr, len);
    if (!at)
        return -1;
    memcpy(out, at, len);
    return 0;
}
