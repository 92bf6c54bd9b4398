/* symbols.c: names for native code addresses (symbols.h). Runs on the sampler
 * thread only, never in a signal handler: it may take the loader's lock, open
 * files and allocate. */

#include "symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_symtab.h"
#include "perfmap.h"
#include "unwind.h"

#define MAX_MODULES 256

typedef struct module_syms {
    uintptr_t base;  /* l_addr */
    dnp_symtab syms; /* none for a binary without .symtab */
} module_syms;

static module_syms g_mods[MAX_MODULES];
static size_t g_nmods;

/* Reads the FUNC symbols of path's .symtab, or of its separate debug file's (unwind.h). */
static void load_symtab(module_syms *m, const char *path) {
    unw_dbg d; /* the file's own, else its separate debug file's: most libraries ship stripped */
    if (unw_debug_section(path, NULL, 0, ".symtab", &d) == 0) {
        dnp_symtab_parse(&m->syms, d.map, d.map_len);
        unw_debug_close(&d);
    }
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
    return m && ip >= m->base ? dnp_symtab_lookup(&m->syms, ip - m->base) : NULL;
}

int symbols_name(uintptr_t ip, char *out, size_t cap) {
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    if (!dladdr1((void *)ip, &info, (void **)&es, RTLD_DL_SYMENT) || !info.dli_fname) {
        if (perfmap_stub_name(ip, out, cap) != 0) /* a stub the runtime's perf map names */
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
    for (size_t i = 0; i < g_nmods; i++)
        dnp_symtab_free(&g_mods[i].syms);
    g_nmods = 0;
    perfmap_release();
    dnp_elf_forget();
}
