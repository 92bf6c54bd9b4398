/* sdk_process.c: which processes are the .NET SDK's own (sdk_process.h). */
#include "sdk_process.h"

#include <string.h>
#include <strings.h>

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int is_host(const char *exe) {
    return exe && strcmp(base_name(exe), "dotnet") == 0;
}

static int ends_dll(const char *s) {
    size_t n = strlen(s);
    return n > 4 && strcasecmp(s + n - 4, ".dll") == 0;
}

int dnp_sdk_starts_program(char *const argv[]) {
    if (!argv[0] || !argv[1] || !is_host(argv[0]))
        return 0;
    return !strcmp(argv[1], "run") || !strcmp(argv[1], "test") || !strcmp(argv[1], "watch");
}

int dnp_sdk_host_runs(const char *exe, int argc, char *const argv[]) {
    if (!is_host(exe))
        return DNP_SDK_NOT_HOST;
    if (argc < 2)
        return DNP_SDK_COMMAND; /* `dotnet` alone: the SDK's help */
    /* `dotnet exec [options] app.dll`, or host options (--roll-forward, --fx-version V, ...) before it */
    if (!strcmp(argv[1], "exec") || argv[1][0] == '-') {
        for (int i = 2 - (argv[1][0] == '-'); i < argc; i++)
            if (ends_dll(argv[i]))
                return i;
        return DNP_SDK_COMMAND; /* `dotnet --info`, `dotnet --version` */
    }
    return ends_dll(argv[1]) ? 1 : DNP_SDK_COMMAND;
}

size_t dnp_sdk_next_root(const char *path, size_t from) {
    size_t n = path ? strlen(path) : 0;
    if (from >= n)
        return 0;
    const char *at = strstr(path + from, "/sdk/");
    return at && at > path ? (size_t)(at - path) : 0;
}
