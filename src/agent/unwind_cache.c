/* unwind_cache.c: parsed unwind tables kept on disk between runs (unwind.h).
 *
 * Parsing libcoreclr.so's call-frame information (about 96,000 rows) takes
 * 7-9 ms of the sampler thread's CPU, in every profiled process whose samples
 * meet the runtime: most of what --sample costs a half-second program
 * (BENCHMARKS.md, "The fixed cost"). The rows depend only on the library's
 * bytes, so they are kept in a file named by the library's GNU build ID (and
 * this parser's version), and the next process maps that file instead of
 * parsing. Mapped, not read: the rows are the page cache's pages, shared by
 * every process that uses them, where a read into the agent's own memory
 * cost each process a fresh page per 4 KiB (in this VM 2.5-3 ms for
 * libcoreclr's 1.2 MB; the mapping 0.3 ms). A mapped file cut short in place
 * would make a row a SIGBUS in the signal handler, so the contract is the
 * dynamic loader's for a library and fontconfig's for its caches under
 * ~/.cache: the files are replaced whole (written aside, renamed into place)
 * and never truncated, by dnprof or anyone else; they are mapped only from a
 * local file system (local_fs), and read whole from any other.
 *
 * The file's name holds the agent's own build ID too: a new dnprof (another
 * parser) never reads an older one's rows. A file is used only when it is ours
 * (owner, not writable by others), its header matches the library (build ID,
 * the separate debug file's size and time) and its sizes add up; otherwise
 * the table is parsed as before. A library without a build ID is never
 * cached. Writes go to a temporary file renamed into place, so that readers
 * see a whole file or none; the first write of a process removes the files
 * of other agents older than a day and any not read for 30 days. The
 * directory is DNPROF_UNWIND_CACHE's (config.c: by default
 * $XDG_CACHE_HOME/dnprof/unwind or ~/.cache/dnprof/unwind; "0" for none).
 * The tables: sampler thread only. The small files beside them (what async
 * stacks learn of a CoreLib build, async_corelib.c), any thread. */
#include "unwind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"

#define CACHE_VERSION 1u /* the parser's: bump when the rows it makes change */
#define PAGE 4096u

typedef struct cache_hdr {
    char magic[8];
    uint32_t version, row_size, nrows, nfuncs;
    uint32_t fdes, bad_fdes, dbg_fdes, build_id_len;
    uint64_t fde_lo, fde_hi;       /* from the load bias */
    uint64_t dbg_size, dbg_mtime;  /* the separate .debug_frame's file, 0 for none */
    uint8_t build_id[20];
} cache_hdr;

static char g_dir[4096];
static char g_agent[17]; /* the first 8 bytes of the agent's build ID, in hex */

/* The agent's own object: the one whose segments hold this function. */
static int own_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    uintptr_t me = (uintptr_t)&own_object;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && me >= lo && me - lo < p->p_memsz) {
            uint8_t id[20];
            size_t n = unw_note_build_id(info, id, sizeof id);
            for (size_t k = 0; k < n && k < 8; k++)
                snprintf((char *)data + 2 * k, 3, "%02x", id[k]);
            return 1;
        }
    }
    return 0;
}

void unwind_cache_dir(const char *dir) {
    g_agent[0] = 0;
    dl_iterate_phdr(own_object, g_agent);
    snprintf(g_dir, sizeof g_dir, "%s", dir && g_agent[0] ? dir : ""); /* no build ID of its own: no cache */
}

static size_t page_up(size_t n) {
    return (n + PAGE - 1) / PAGE * PAGE;
}

/* The cache file of l: 0, or -1 when l has no build ID or there is no directory. */
static int cache_path(const unw_lib *l, char *out, size_t cap) {
    if (!g_dir[0] || !l->build_id_len || l->build_id_len > sizeof l->build_id)
        return -1;
    char hex[2 * sizeof l->build_id + 1];
    for (unsigned i = 0; i < l->build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", l->build_id[i]);
    int n = snprintf(out, cap, "%s/%s-%s.%s.v%u.unwind", g_dir, g_agent, hex, l->name, CACHE_VERSION);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Whether fd's file is on a local file system, where only a writer on this
 * machine can change it (ext4, XFS, Btrfs, tmpfs, overlayfs, ZFS, F2FS): a
 * file on NFS, SMB or FUSE can shrink under a mapping from elsewhere. */
static int local_fs(int fd) {
    static const long local[] = {0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0x794c7630, 0x2fc12fc1, (long)0xF2F52010};
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0)
        return 0;
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if ((long)fs.f_type == local[i])
            return 1;
    return 0;
}

/* The file read into memory of the agent's own, laid out as its mapping
 * would be (the file system is not local_fs's). */
static void *read_whole(int fd, size_t len) {
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m != MAP_FAILED && pread(fd, m, len, 0) != (ssize_t)len) {
        munmap(m, len);
        m = MAP_FAILED;
    }
    return m;
}

static void expect(const unw_lib *l, const struct stat *dbg, cache_hdr *h) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, "DNPUNWC\n", 8);
    h->version = CACHE_VERSION;
    h->row_size = sizeof(unw_row);
    h->build_id_len = l->build_id_len;
    memcpy(h->build_id, l->build_id, l->build_id_len);
    h->dbg_size = dbg ? (uint64_t)dbg->st_size : 0;
    h->dbg_mtime = dbg ? (uint64_t)dbg->st_mtime : 0;
}

int unw_cache_load(const unw_lib *l, const struct stat *dbg, unw_lib *out) {
    char path[4200];
    if (cache_path(l, path, sizeof path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    cache_hdr h, want;
    struct stat st;
    expect(l, dbg, &want);
    int ok = fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022) &&
             pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && !memcmp(h.magic, want.magic, 8) &&
             h.version == want.version && h.row_size == want.row_size && h.build_id_len == want.build_id_len &&
             !memcmp(h.build_id, want.build_id, sizeof h.build_id) && h.dbg_size == want.dbg_size &&
             h.dbg_mtime == want.dbg_mtime && h.nrows && h.nfuncs && h.nrows < (1u << 26) && h.nfuncs < (1u << 26) &&
             (uint64_t)st.st_size == PAGE + page_up((size_t)h.nrows * sizeof(unw_row)) + (uint64_t)h.nfuncs * 4u;
    void *map = !ok ? MAP_FAILED
                : local_fs(fd) ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)
                               : read_whole(fd, (size_t)st.st_size);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    memset(out, 0, sizeof *out);
    out->map = map;
    out->map_len = (size_t)st.st_size;
    out->rows = (unw_row *)((char *)map + PAGE);
    out->nrows = h.nrows;
    out->funcs = (uint32_t *)((char *)map + PAGE + page_up((size_t)h.nrows * sizeof(unw_row)));
    out->nfuncs = h.nfuncs;
    out->fde_lo = h.fde_lo + l->bias;
    out->fde_hi = h.fde_hi + l->bias;
    out->fdes = h.fdes;
    out->bad_fdes = h.bad_fdes;
    out->dbg_fdes = h.dbg_fdes;
    return 0;
}

/* Makes dir and its parents that are missing, private to the user. */
static int make_dirs(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Whether the directory's last look is a day old (its stamp file, .pruned),
 * which then dates from now: a look at every file is a system call or two a
 * file, and where several builds of the agent ran (a developer's machine, CI)
 * the directory holds hundreds (1,800 system calls, about 15 ms in a VM, for
 * the one run in which a table was written). */
static int prune_due(void) {
    char stamp[4200];
    struct stat st;
    snprintf(stamp, sizeof stamp, "%s/.pruned", g_dir);
    if (stat(stamp, &st) == 0 && time(NULL) - st.st_mtime < 86400)
        return 0;
    int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        futimens(fd, NULL);
        close(fd);
    }
    return 1;
}

/* The files of other agents older than a day, any not read for 30 days, and
 * temporary files left by a process that died writing. */
static void prune(void) {
    DIR *d = opendir(g_dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        int tmp = n > 4 && !strcmp(de->d_name + n - 4, ".tmp"), ours = !strncmp(de->d_name, g_agent, 16);
        struct stat st;
        int small = n > 6 && !strcmp(de->d_name + n - 6, ".async");
        if ((!tmp && !small && (n < 7 || strcmp(de->d_name + n - 7, ".unwind"))) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (now - st.st_atime > 30 * 86400 || (!ours && now - st.st_mtime > 86400) || (tmp && now - st.st_mtime > 3600))
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

/* path written whole from its n pieces: aside (a temporary file of this
 * process), then renamed into place, so that a reader sees a whole file or
 * none. */
static void write_aside(const char *path, const struct iovec *piece, int n) {
    char tmp[4300];
    static atomic_uint serial; /* two threads of a process may write at once (the sampler's, a callback's) */
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = dnp_write_all(fd, piece[i].iov_base, piece[i].iov_len) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

void unw_cache_store(const unw_lib *l, const struct stat *dbg, const unw_lib *t) {
    char path[4200];
    if (!t->nrows || cache_path(l, path, sizeof path) != 0 || make_dirs(g_dir) != 0)
        return;
    static const uint8_t zero[PAGE];
    cache_hdr h;
    expect(l, dbg, &h);
    h.nrows = t->nrows;
    h.nfuncs = t->nfuncs;
    h.fdes = t->fdes;
    h.bad_fdes = t->bad_fdes;
    h.dbg_fdes = t->dbg_fdes;
    h.fde_lo = t->fde_lo - l->bias;
    h.fde_hi = t->fde_hi - l->bias;
    size_t rb = (size_t)t->nrows * sizeof(unw_row);
    const struct iovec piece[] = {{&h, sizeof h},
                                  {(void *)zero, PAGE - sizeof h},
                                  {(void *)t->rows, rb},
                                  {(void *)zero, page_up(rb) - rb},
                                  {(void *)t->funcs, (size_t)t->nfuncs * 4u}};
    write_aside(path, piece, (int)(sizeof piece / sizeof piece[0]));
    static int pruned; /* once a process, and once a day (prune_due) */
    if (!pruned++ && prune_due())
        prune();
}

/* ---- small files: what async stacks learn of a CoreLib build ---- */

int cache_file_enabled(void) {
    return g_dir[0] && (access(g_dir, W_OK) == 0 || (make_dirs(g_dir) == 0 && access(g_dir, W_OK) == 0));
}

static int small_path(const char *name, char *out, size_t cap) {
    int n = g_dir[0] ? snprintf(out, cap, "%s/%s-%s", g_dir, g_agent, name) : -1;
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

long cache_file_read(const char *name, void *buf, size_t cap) {
    char path[4200];
    if (small_path(name, path, sizeof path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    struct stat st;
    long want = fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022) && S_ISREG(st.st_mode) &&
                        (uint64_t)st.st_size <= cap
                    ? (long)st.st_size
                    : -1;
    long n = want >= 0 ? (long)pread(fd, buf, (size_t)want, 0) : -1;
    close(fd);
    return n == want ? n : -1;
}

void cache_file_write(const char *name, const void *buf, size_t len) {
    char path[4200];
    if (small_path(name, path, sizeof path) != 0 || make_dirs(g_dir) != 0)
        return;
    const struct iovec piece = {(void *)buf, len};
    write_aside(path, &piece, 1);
}
