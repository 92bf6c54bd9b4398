/* symbols.c: names for native code addresses (symbols.h). Runs on the sampler
 * thread only, never in a signal handler: it may take the loader's lock, open
 * files and allocate. */

#include "symbols.h"
#include "unwind.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MODULES 256

typedef struct sym {
    uint64_t start, size;
    const char *name; /* into the module's string table copy */
} sym;

typedef struct module_syms {
    uintptr_t base; /* l_addr */
    sym *syms;      /* FUNC symbols of .symtab by start; NULL: none (a binary without .symtab) */
    size_t n;
    char *strtab;
} module_syms;

static module_syms g_mods[MAX_MODULES];
static size_t g_nmods;

static int by_start(const void *x, const void *y) {
    const sym *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* Reads the FUNC symbols of path's .symtab. */
static void load_symtab(module_syms *m, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *f = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *ss = &sh[i], *str = &sh[ss->sh_link];
        if (ss->sh_offset + ss->sh_size > size || str->sh_offset + str->sh_size > size ||
            ss->sh_entsize != sizeof(Elf64_Sym) || str->sh_size == 0)
            break;
        const Elf64_Sym *syms = (const Elf64_Sym *)(f + ss->sh_offset);
        size_t count = ss->sh_size / sizeof(Elf64_Sym), n = 0;
        m->strtab = malloc(str->sh_size + 1);
        m->syms = calloc(count ? count : 1, sizeof *m->syms);
        if (!m->strtab || !m->syms) {
            free(m->strtab);
            free(m->syms);
            m->strtab = NULL;
            m->syms = NULL;
            break;
        }
        memcpy(m->strtab, f + str->sh_offset, str->sh_size);
        m->strtab[str->sh_size] = 0;
        for (size_t k = 0; k < count; k++) {
            if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_value == 0 ||
                syms[k].st_name >= str->sh_size)
                continue;
            m->syms[n].start = syms[k].st_value;
            m->syms[n].size = syms[k].st_size;
            m->syms[n].name = m->strtab + syms[k].st_name;
            n++;
        }
        qsort(m->syms, n, sizeof *m->syms, by_start);
        m->n = n;
        break;
    }
out:
    munmap((void *)f, size);
}

static module_syms *module_for(uintptr_t base, const char *path) {
    for (size_t i = 0; i < g_nmods; i++)
        if (g_mods[i].base == base)
            return &g_mods[i];
    if (g_nmods == MAX_MODULES)
        return NULL;
    module_syms *m = &g_mods[g_nmods++];
    memset(m, 0, sizeof *m);
    m->base = base;
    if (path && path[0] == '/')
        load_symtab(m, path);
    return m;
}

static const char *symtab_lookup(const module_syms *m, uintptr_t ip) {
    if (!m || !m->n || ip < m->base)
        return NULL;
    uint64_t a = ip - m->base;
    size_t lo = 0, hi = m->n;
    while (lo < hi) { /* the first symbol starting after a */
        size_t mid = (lo + hi) / 2;
        if (m->syms[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k-- > 0;) { /* nested or aliased: the closest that covers a */
        const sym *s = &m->syms[k];
        if (a < s->start + (s->size ? s->size : 1))
            return s->name;
        if (lo - k > 8)
            break;
    }
    return NULL;
}

int symbols_name(uintptr_t ip, char *out, size_t cap) {
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    if (!dladdr1((void *)ip, &info, (void **)&es, RTLD_DL_SYMENT) || !info.dli_fname) {
        snprintf(out, cap, "[anonymous code]");
        return 0;
    }
    const char *mod = strrchr(info.dli_fname, '/');
    mod = mod ? mod + 1 : info.dli_fname;
    if (!*mod)
        mod = "main";
    struct link_map *lm = NULL;
    Dl_info info2;
    uintptr_t base = (uintptr_t)info.dli_fbase;
    const char *path = info.dli_fname;
    if (dladdr1((void *)ip, &info2, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        base = lm->l_addr;
        if (path[0] != '/' && lm->l_name && !lm->l_name[0])
            path = "/proc/self/exe"; /* the program itself, named by argv[0] */
    }
    /* .symtab where the file has one (local functions too), else the dynamic
     * symbol when it really covers ip (dladdr gives the closest exported one
     * below ip, however far), else the function's start by its unwind table
     * (the offset a disassembler or addr2line takes), else the module alone. */
    const char *name = symtab_lookup(module_for(base, path), ip);
    uint64_t start;
    const unw_lib *l;
    if (name)
        snprintf(out, cap, "%s!%s", mod, name);
    else if (info.dli_sname && info.dli_saddr && es && ip >= (uintptr_t)info.dli_saddr &&
             ip < (uintptr_t)info.dli_saddr + (es->st_size ? es->st_size : 1))
        snprintf(out, cap, "%s!%s", mod, info.dli_sname);
    else if ((l = unwind_lib_of(ip)) && l->bias == base && unwind_func_start(l, ip, &start) == 0)
        snprintf(out, cap, "[%s+0x%llx]", mod, (unsigned long long)start);
    else
        snprintf(out, cap, "[%s]", mod);
    return 1;
}

void symbols_release(void) {
    for (size_t i = 0; i < g_nmods; i++) {
        free(g_mods[i].syms);
        free(g_mods[i].strtab);
    }
    g_nmods = 0;
}
