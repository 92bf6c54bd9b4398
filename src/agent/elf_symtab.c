/* elf_symtab.c: elf_symtab.h. */
#include "elf_symtab.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dnp_search.h"

static int by_start(const void *x, const void *y) {
    const dnp_sym *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* Whether [off, off + len) lies within size bytes. */
static int inside(uint64_t off, uint64_t len, size_t size) {
    return off <= size && len <= size - off;
}

static int take_symbols(dnp_symtab *t, const uint8_t *f, const Elf64_Shdr *ss, const Elf64_Shdr *str) {
    size_t count = ss->sh_size / sizeof(Elf64_Sym), n = 0;
    t->strtab = malloc(str->sh_size + 1);
    t->syms = calloc(count ? count : 1, sizeof *t->syms);
    if (!t->strtab || !t->syms) {
        dnp_symtab_free(t);
        return -1;
    }
    memcpy(t->strtab, f + str->sh_offset, str->sh_size);
    t->strtab[str->sh_size] = 0;
    for (size_t k = 0; k < count; k++) {
        Elf64_Sym s;
        memcpy(&s, f + ss->sh_offset + k * sizeof s, sizeof s); /* the file's alignment is its own */
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value == 0 || s.st_name >= str->sh_size)
            continue;
        t->syms[n].start = s.st_value;
        t->syms[n].size = s.st_size;
        t->syms[n].name = t->strtab + s.st_name;
        n++;
    }
    qsort(t->syms, n, sizeof *t->syms, by_start);
    t->n = n;
    return 0;
}

int dnp_symtab_parse(dnp_symtab *t, const uint8_t *f, size_t size) {
    memset(t, 0, sizeof *t);
    Elf64_Ehdr eh;
    if (size < sizeof eh)
        return -1;
    memcpy(&eh, f, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shoff == 0 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size))
        return -1;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr ss, str;
        memcpy(&ss, f + eh.e_shoff + i * sizeof ss, sizeof ss);
        if (ss.sh_type != SHT_SYMTAB || ss.sh_link >= eh.e_shnum)
            continue;
        memcpy(&str, f + eh.e_shoff + ss.sh_link * sizeof str, sizeof str);
        if (!inside(ss.sh_offset, ss.sh_size, size) || !inside(str.sh_offset, str.sh_size, size) ||
            ss.sh_entsize != sizeof(Elf64_Sym) || str.sh_size == 0)
            return 0;
        return take_symbols(t, f, &ss, &str);
    }
    return 0;
}

const char *dnp_symtab_lookup(const dnp_symtab *t, uint64_t a) {
    if (!t || !t->n)
        return NULL;
    size_t lo = DNP_FIRST_AFTER(i, t->n, t->syms[i].start, a);
    for (size_t k = lo; k-- > 0;) { /* nested or aliased: the closest that covers a */
        const dnp_sym *s = &t->syms[k];
        if (a - s->start < (s->size ? s->size : 1))
            return s->name;
        if (lo - k > 8)
            break;
    }
    return NULL;
}

void dnp_symtab_free(dnp_symtab *t) {
    free(t->syms);
    free(t->strtab);
    memset(t, 0, sizeof *t);
}

/* The section called name among nsh headers (shdrs, the file's alignment),
 * their names in names[0, nnames): 0 with where its bytes lie in a file of
 * size bytes, or -1. */
static int find_section(const uint8_t *shdrs, unsigned nsh, const uint8_t *names, uint64_t nnames, size_t size,
                        const char *name, uint64_t *off, uint64_t *len) {
    size_t want = strlen(name) + 1;
    for (unsigned i = 0; i < nsh; i++) {
        Elf64_Shdr ss;
        memcpy(&ss, shdrs + i * sizeof ss, sizeof ss);
        if (ss.sh_name >= nnames || nnames - ss.sh_name < want || memcmp(names + ss.sh_name, name, want) != 0)
            continue;
        /* NOBITS (a stripped file's placeholder) and compressed sections have no bytes to read here */
        if (ss.sh_type == SHT_NOBITS || (ss.sh_flags & SHF_COMPRESSED) || !inside(ss.sh_offset, ss.sh_size, size))
            return -1;
        *off = ss.sh_offset;
        *len = ss.sh_size;
        return 0;
    }
    return -1;
}

/* Whether eh is an ELF64 header whose section headers and their names'
 * header lie inside size bytes. */
static int headers_inside(const Elf64_Ehdr *eh, size_t size) {
    return memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shoff != 0 &&
           eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shstrndx < eh->e_shnum &&
           inside(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), size);
}

int dnp_elf_section(const uint8_t *f, size_t size, const char *name, uint64_t *off, uint64_t *len) {
    Elf64_Ehdr eh;
    if (size < sizeof eh)
        return -1;
    memcpy(&eh, f, sizeof eh);
    if (!headers_inside(&eh, size))
        return -1;
    Elf64_Shdr names;
    memcpy(&names, f + eh.e_shoff + eh.e_shstrndx * sizeof names, sizeof names);
    if (!inside(names.sh_offset, names.sh_size, size))
        return -1;
    return find_section(f + eh.e_shoff, eh.e_shnum, f + names.sh_offset, names.sh_size, size, name, off, len);
}

/* pread of exactly n bytes at off: 0, or -1. */
static int read_at(int fd, void *buf, size_t n, uint64_t off) {
    return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* The section tables of the last files looked at (dnp_elf_section_at). */
#define KEPT 64 /* a .NET process's libraries and their debug-file candidates: about 40 */
typedef struct kept {
    char path[256];
    int ok;        /* an ELF64 file whose tables were read */
    size_t size;   /* the file's */
    uint8_t *sh;   /* its section headers, nsh of them */
    unsigned nsh;
    uint8_t *names; /* their names' section, nnames bytes */
    uint64_t nnames;
} kept;
static kept g_kept[KEPT];
static unsigned g_kept_next;

static int read_tables(int fd, kept *k) {
    struct stat st;
    Elf64_Ehdr eh;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || read_at(fd, &eh, sizeof eh, 0) != 0 ||
        !headers_inside(&eh, (size_t)st.st_size))
        return -1;
    k->size = (size_t)st.st_size;
    k->nsh = eh.e_shnum;
    size_t shbytes = (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
    if (!(k->sh = malloc(shbytes)) || read_at(fd, k->sh, shbytes, eh.e_shoff) != 0)
        return -1;
    Elf64_Shdr names;
    memcpy(&names, k->sh + eh.e_shstrndx * sizeof names, sizeof names);
    /* the names of the sections: a few hundred bytes; more is no file a compiler wrote */
    if (!inside(names.sh_offset, names.sh_size, k->size) || names.sh_size > (1u << 20) ||
        !(k->names = malloc(names.sh_size ? names.sh_size : 1)) ||
        read_at(fd, k->names, names.sh_size, names.sh_offset) != 0)
        return -1;
    k->nnames = names.sh_size;
    return 0;
}

static void kept_free(kept *k) {
    free(k->sh);
    free(k->names);
    memset(k, 0, sizeof *k);
}

/* The kept tables of path, read now if they are not (a file that cannot be
 * read is kept too, as such); NULL for a path too long to keep. */
static const kept *kept_of(const char *path) {
    for (unsigned i = 0; i < KEPT; i++)
        if (g_kept[i].path[0] && strcmp(g_kept[i].path, path) == 0)
            return &g_kept[i];
    if (strlen(path) >= sizeof g_kept[0].path)
        return NULL;
    kept *k = &g_kept[g_kept_next++ % KEPT];
    kept_free(k);
    snprintf(k->path, sizeof k->path, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    k->ok = fd >= 0 && read_tables(fd, k) == 0;
    if (fd >= 0)
        close(fd);
    return k;
}

int dnp_elf_section_at(const char *path, const char *name, uint64_t *off, uint64_t *len) {
    const kept *k = kept_of(path);
    return k && k->ok ? find_section(k->sh, k->nsh, k->names, k->nnames, k->size, name, off, len) : -1;
}

void dnp_elf_forget(void) {
    for (unsigned i = 0; i < KEPT; i++)
        kept_free(&g_kept[i]);
}

int dnp_file_map(const char *path, const uint8_t **map, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    *map = m;
    *len = (size_t)st.st_size;
    return 0;
}
