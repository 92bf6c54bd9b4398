/* unwind_debug.c: the .debug_frame of a loaded object (unwind.h), for native
 * code that .eh_frame does not describe: built with
 * -fno-asynchronous-unwind-tables, or assembly with debug information only.
 * .debug_frame is not loaded with the code: it is read from the object's file,
 * or from its separate debug file, found as GDB finds it. Sampler thread only,
 * when a sample first needs the library (unwind_cfi.c). */
#include "unwind.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf_symtab.h"

#define DEBUG_ROOT "/usr/lib/debug"

static int map_file(const char *path, void **map, size_t *len) {
    const uint8_t *m;
    if (dnp_file_map(path, &m, len) != 0)
        return -1;
    *map = (void *)m;
    return 0;
}

/* Whether the file's GNU build ID (its .note.gnu.build-id) is id. */
static int same_build_id(const uint8_t *f, size_t len, const uint8_t *id, size_t id_len) {
    uint64_t off, size;
    if (dnp_elf_section(f, len, ".note.gnu.build-id", &off, &size) != 0 || size < 16)
        return 0;
    const uint8_t *n = f + off;
    uint32_t namesz, descsz;
    memcpy(&namesz, n, 4);
    memcpy(&descsz, n + 4, 4);
    return namesz == 4 && descsz == id_len && 12 + 4 + (uint64_t)descsz <= size && memcmp(n + 16, id, id_len) == 0;
}

/* The section want of the mapped file into out (the mapping handed over), or
 * -1. id: the build ID the file must have (a separate debug file found by
 * name), NULL for none to check. */
static int take_section(void *map, size_t len, const char *path, const char *want, const uint8_t *id, size_t id_len,
                        unw_dbg *out) {
    uint64_t off, size;
    if (dnp_elf_section(map, len, want, &off, &size) != 0 || size < 16 ||
        (id && id_len && !same_build_id(map, len, id, id_len)))
        return -1;
    out->sec = (const uint8_t *)map + off;
    out->len = (size_t)size;
    out->map = map;
    out->map_len = len;
    snprintf(out->from, sizeof out->from, "%s", path);
    return 0;
}

/* Whether the file at path has a section want with bytes (dnp_elf_section_at:
 * its section table read once, with pread). */
static int has_section(const char *path, const char *want) {
    uint64_t off, len;
    return dnp_elf_section_at(path, want, &off, &len) == 0;
}

static int try_file(const char *path, const char *want, const uint8_t *id, size_t id_len, unw_dbg *out) {
    void *map;
    size_t len;
    if (!has_section(path, want) || map_file(path, &map, &len) != 0)
        return -1;
    if (take_section(map, len, path, want, id, id_len, out) == 0)
        return 0;
    munmap(map, len);
    return -1;
}

/* The name path's .gnu_debuglink gives (a file name, NUL-terminated, then a
 * CRC), into name: 0 or -1. Read with pread, as has_section. */
static int debuglink(const char *path, char *name, size_t cap) {
    uint64_t off, size;
    char s[512];
    int fd, rc = -1;
    if (dnp_elf_section_at(path, ".gnu_debuglink", &off, &size) != 0 || size <= 4 || size > sizeof s ||
        (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    if (pread(fd, s, (size_t)size, (off_t)off) == (ssize_t)size) {
        size_t n = strnlen(s, (size_t)size);
        if (n && n < size && n < cap && !memchr(s, '/', n)) {
            memcpy(name, s, n);
            name[n] = 0;
            rc = 0;
        }
    }
    close(fd);
    return rc;
}

int unw_debug_frame(const char *path, const uint8_t *build_id, size_t id_len, unw_dbg *out) {
    return unw_debug_section(path, build_id, id_len, ".debug_frame", out);
}

int unw_debug_section(const char *path, const uint8_t *build_id, size_t id_len, const char *want, unw_dbg *out) {
    memset(out, 0, sizeof *out);
    if (!path || path[0] != '/')
        return -1;
    if (try_file(path, want, NULL, 0, out) == 0)
        return 0;
    char link[256];
    int linked = debuglink(path, link, sizeof link) == 0;
    char cand[512];
    if (id_len >= 2 && id_len <= 20) {
        int k = snprintf(cand, sizeof cand, DEBUG_ROOT "/.build-id/%02x/", build_id[0]);
        for (size_t i = 1; i < id_len; i++)
            k += snprintf(cand + k, sizeof cand - (size_t)k, "%02x", build_id[i]);
        snprintf(cand + k, sizeof cand - (size_t)k, ".debug");
        if (try_file(cand, want, NULL, 0, out) == 0)
            return 0;
    }
    if (!linked)
        return -1;
    const char *slash = strrchr(path, '/');
    int dir = (int)(slash - path);
    const char *const forms[] = {"%.*s/%s", "%.*s/.debug/%s", DEBUG_ROOT "%.*s/%s"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(cand, sizeof cand, forms[i], dir, path, link);
        if (strcmp(cand, path) != 0 && try_file(cand, want, build_id, id_len, out) == 0)
            return 0;
    }
    return -1;
}

void unw_debug_close(unw_dbg *d) {
    if (d->map)
        munmap(d->map, d->map_len);
    memset(d, 0, sizeof *d);
}
