/* config.c: the agent's environment. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"

void config_output_path(char *out, size_t cap, int *exclusive) {
    const char *tmpl = getenv(DNP_ENV_OUTPUT);
    const char *root = getenv(DNP_ENV_ROOT_PID);
    int pid = (int)getpid();
    *exclusive = 0;
    if (!tmpl || !*tmpl) {
        snprintf(out, cap, "dnprof-%d.trace", pid);
        return;
    }
    size_t o = 0;
    int has_pid = 0;
    for (const char *p = tmpl; *p && o + 24 < cap; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(out + o, cap - o, "%d", pid);
            has_pid = 1;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            out[o++] = '%';
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
    if (has_pid || !root || atoi(root) == pid)
        return;
    /* A process the trace was not meant for (a child the program started):
     * a trace of its own beside the root's, never the root's file. */
    *exclusive = 1;
    size_t len = strlen(out);
    const char *ext = ".trace";
    if (len > 6 && strcmp(out + len - 6, ext) == 0)
        len -= 6;
    char stem[4096];
    snprintf(stem, sizeof stem, "%.*s", (int)len, out);
    snprintf(out, cap, "%s.%d.trace", stem, pid);
}

void config_cmdline(char *out, size_t cap) {
    out[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == 0)
            out[i] = ' ';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = 0;
}

unsigned config_flush_ms(void) {
    const char *s = getenv(DNP_ENV_FLUSH_MS);
    if (!s || !*s)
        return 0;
    long v = strtol(s, NULL, 10);
    return v > 0 && v < 60000 ? (unsigned)v : 0;
}

static void copy_env(char *out, size_t cap, const char *name) {
    const char *v = getenv(name);
    snprintf(out, cap, "%s", v ? v : "");
}

void config_from_env(agent_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    copy_env(cfg->events, sizeof cfg->events, DNP_ENV_EVENTS);
    config_output_path(cfg->output, sizeof cfg->output, &cfg->exclusive);
    copy_env(cfg->session, sizeof cfg->session, DNP_ENV_SESSION);
    cfg->flush_ms = config_flush_ms();
    const char *calls = getenv(DNP_ENV_CALLS);
    if (calls && *calls && strcmp(calls, "0") != 0)
        cfg->calls = strcmp(calls, "args") == 0 ? 2 : strcmp(calls, "timeline") == 0 ? 3 : 1;
    const char *all = getenv(DNP_ENV_ALL_CODE);
    cfg->all_code = all && *all && strcmp(all, "0") != 0;
    copy_env(cfg->include, sizeof cfg->include, DNP_ENV_INCLUDE);
    copy_env(cfg->exclude, sizeof cfg->exclude, DNP_ENV_EXCLUDE);
    cfg->sample = config_sample_mode(getenv(DNP_ENV_SAMPLE));
    const char *rate = getenv(DNP_ENV_SAMPLE_RATE);
    long r = rate ? strtol(rate, NULL, 10) : 0;
    cfg->sample_rate = r > 0 && r <= 100000 ? (unsigned)r : 0;
}

int config_sample_mode(const char *text) {
    if (!text || !*text || strcmp(text, "0") == 0)
        return 0;
    if (strcmp(text, "wall") == 0)
        return 2;
    if (strcmp(text, "suspend") == 0)
        return 3;
    return 1;
}
