/* program_check.c: what the command to run is, before it runs. `dotnet
 * app.dll` with app.dll missing would run the SDK instead. An assembly
 * given as the program (app.dll) is not executable: exec says only "Permission
 * denied", so it is told first, with the command that runs it. A program
 * published with Native AOT carries its own small runtime instead of CoreCLR:
 * no runtime there reads CORECLR_PROFILER_PATH, so the agent would never load
 * and the run would end with "the agent never started" after the program's
 * whole run. It is told by its ELF sections: the AOT compiler puts the
 * managed code in `__managedcode` and its exception tables in
 * `.dotnet_eh_table` (section headers survive strip, which NativeAOT runs by
 * default). */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

int cli_find_in_path(const char *name, char *out, size_t len) {
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(out, len, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", name);
        if (access(out, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    return -1;
}

/* Whether fd is a 64-bit little-endian ELF file with a section of one of the
 * Native AOT compiler's names. Any read that fails or does not add up: 0. */
static int has_aot_sections(int fd) {
    Elf64_Ehdr h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 ||
        h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != ELFDATA2LSB ||
        h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shnum == 0 || h.e_shnum > 4096 || h.e_shstrndx >= h.e_shnum)
        return 0;
    Elf64_Shdr *sh = malloc((size_t)h.e_shnum * sizeof *sh);
    if (!sh)
        return 0;
    int found = 0;
    char *names = NULL;
    size_t table = (size_t)h.e_shnum * sizeof *sh;
    if (pread(fd, sh, table, (off_t)h.e_shoff) != (ssize_t)table)
        goto out;
    const Elf64_Shdr *strs = &sh[h.e_shstrndx];
    if (strs->sh_size == 0 || strs->sh_size > (1u << 20) || !(names = malloc(strs->sh_size + 1)))
        goto out;
    if (pread(fd, names, strs->sh_size, (off_t)strs->sh_offset) != (ssize_t)strs->sh_size)
        goto out;
    names[strs->sh_size] = 0;
    for (unsigned i = 0; i < h.e_shnum && !found; i++) {
        if (sh[i].sh_name >= strs->sh_size)
            continue;
        const char *name = names + sh[i].sh_name;
        found = !strcmp(name, "__managedcode") || !strcmp(name, ".dotnet_eh_table");
    }
out:
    free(names);
    free(sh);
    return found;
}

int cli_is_native_aot(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int aot = has_aot_sections(fd);
    close(fd);
    return aot;
}

/* prog[0] is an assembly (APP.dll) given as the program: it is not
 * executable, and exec says only "Permission denied". */
static int assembly_as_program(const char *cmd, const char *dll) {
    size_t n = strlen(dll);
    if (n < 5 || strcasecmp(dll + n - 4, ".dll") != 0 || access(dll, F_OK) != 0 || access(dll, X_OK) == 0)
        return 0;
    char host[4096];
    snprintf(host, sizeof host, "%.*s", (int)(n - 4), dll);
    int apphost = access(host, X_OK) == 0;
    fprintf(stderr, "dnprof %s: %s is a .NET assembly, not a program: put dotnet before it (dnprof %s [options] "
                    "-- dotnet %s)%s%s\n",
            cmd, dll, cmd, dll, apphost ? ", or run its apphost " : "", apphost ? host : "");
    return CLI_EXIT_NOEXEC;
}

int cli_check_dotnet_app(const char *cmd, char *const *prog) {
    const char *exe = prog && prog[0] ? strrchr(prog[0], '/') : NULL;
    exe = exe ? exe + 1 : prog && prog[0] ? prog[0] : "";
    if (strcmp(exe, "dotnet") != 0)
        return 0;
    for (int i = 1; prog[i]; i++) {
        const char *a = prog[i];
        size_t n = strlen(a);
        if (!strcmp(a, "exec") && i == 1)
            continue;
        if (a[0] == '-') { /* a host option; those of `dotnet exec` take a value */
            if (!strchr(a, '=') && prog[i + 1] && strcmp(a, "--roll-forward-on-no-candidate-fx") != 0)
                i++;
            continue;
        }
        if (n < 5 || strcasecmp(a + n - 4, ".dll") != 0 || access(a, F_OK) == 0)
            return 0;
        fprintf(stderr, "dnprof %s: %s: no such file (dotnet would look for an SDK command of that name); "
                        "give the path of the program's .dll\n", cmd, a);
        return CLI_EXIT_NOEXEC;
    }
    return 0;
}

int cli_check_program(const char *cmd, char *const *prog) {
    if (!prog || !prog[0])
        return 0;
    int missing = cli_check_dotnet_app(cmd, prog);
    if (missing)
        return missing;
    if (assembly_as_program(cmd, prog[0]))
        return CLI_EXIT_NOEXEC;
    char found[4096];
    const char *path = prog[0];
    if (!strchr(path, '/')) {
        if (cli_find_in_path(path, found, sizeof found) != 0)
            return 0; /* the launch says it is not there */
        path = found;
    }
    if (!cli_is_native_aot(path))
        return 0;
    fprintf(stderr, "dnprof %s: %s is a Native AOT program (published with PublishAot): it carries no CoreCLR, "
                    "so no runtime in it loads dnprof's agent. Profile the same program published without "
                    "PublishAot (dotnet publish -p:PublishAot=false, or dotnet run); its native code reads in "
                    "'perf record -g' (docs/agent.md#native-aot)\n", cmd, prog[0]);
    return CLI_EXIT_NOEXEC;
}
