/* agent.c: finding libdnprof.so, the agent the runtime loads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "settings.h"

#define AGENT_NAME "libdnprof.so"

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int resolve(const char *path, const char *how, cli_agent *out) {
    if (!realpath(path, out->path))
        return -1;
    out->how = how;
    return 0;
}

int cli_agent_find(cli_agent *out, char *err, size_t errlen) {
    const char *env = dnp_setting_getenv(DNP_SET_AGENT);
    if (env && *env) {
        if (is_file(env) && resolve(env, DNP_ENV_AGENT, out) == 0)
            return 0;
        snprintf(err, errlen, "cannot find the agent at '%s' (" DNP_ENV_AGENT "); set " DNP_ENV_AGENT " to the path of %s",
                 env, AGENT_NAME);
        return -1;
    }

    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(err, errlen, "cannot find the agent: /proc/self/exe is unreadable; set " DNP_ENV_AGENT " to the path of %s",
                 AGENT_NAME);
        return -1;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;

    static const struct {
        const char *rel, *how;
    } places[] = {
        {"/" AGENT_NAME, "next to dnprof"},
        {"/../lib/dnprof/" AGENT_NAME, "in ../lib/dnprof"},
        {"/../lib/" AGENT_NAME, "in ../lib"},
    };
    char tried[3][PATH_MAX + 32];
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        snprintf(tried[i], sizeof tried[i], "%s%s", exe, places[i].rel);
        if (is_file(tried[i]) && resolve(tried[i], places[i].how, out) == 0)
            return 0;
    }
    snprintf(err, errlen, "cannot find the agent %s (tried %s, %s, %s); set " DNP_ENV_AGENT " to its path",
             AGENT_NAME, tried[0], tried[1], tried[2]);
    return -1;
}
