/* config.c: the agent's environment. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"
#include "say.h"
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
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v >= 60000) {
        agent_say(DNP_ENV_FLUSH_MS "='%.40s' is not a period from 1 to 59999 ms; the default, %u ms, "
                  "is used",
                  s, RECORDER_FLUSH_MS);
        return 0;
    }
    return (unsigned)v;
}

const char *config_session_dir(void) {
    return getenv(DNP_ENV_SESSION);
}

int config_say_stderr(void) {
    const char *s = getenv(DNP_ENV_STDERR);
    return s && *s && strcmp(s, "0") != 0;
}

static void copy_env(char *out, size_t cap, const char *name) {
    const char *v = getenv(name);
    snprintf(out, cap, "%s", v ? v : "");
}

/* The path of the snapshot at exit (DNPROF_HEAP_AT=exit), %p expanded; a
 * process it was not meant for (a child the program started) gets its own file
 * beside the root's. "" when none was asked. */
static void heap_path(char *path, size_t cap) {
    const char *at = getenv(DNP_ENV_HEAP_AT), *out = getenv(DNP_ENV_HEAP_OUTPUT);
    path[0] = 0;
    if (!at || strcmp(at, "exit") != 0 || !out || !*out || cap < 32)
        return;
    size_t n = 0;
    int has_pid = 0;
    for (const char *s = out; *s && n + 24 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            n += (size_t)snprintf(path + n, cap - n, "%ld", (long)getpid());
            has_pid = 1;
            s++;
        } else {
            path[n++] = *s;
        }
    }
    path[n] = 0;
    const char *root = getenv(DNP_ENV_ROOT_PID);
    if (!has_pid && root && atol(root) != (long)getpid() && n + 24 < cap)
        snprintf(path + n, cap - n, ".%ld", (long)getpid());
}

void config_from_env(agent_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    copy_env(cfg->events, sizeof cfg->events, DNP_ENV_EVENTS);
    config_output_path(cfg->output, sizeof cfg->output, &cfg->exclusive);
    copy_env(cfg->session, sizeof cfg->session, DNP_ENV_SESSION);
    cfg->flush_ms = config_flush_ms();
    const char *calls = getenv(DNP_ENV_CALLS);
    if (calls && *calls && strcmp(calls, "0") != 0)
        cfg->calls = strcmp(calls, "args") == 0       ? 2
                     : strcmp(calls, "timeline") == 0 ? 3
                     : strcmp(calls, "counts") == 0   ? 4
                                                      : 1;
    if (calls && *calls && strcmp(calls, "0") != 0 && strcmp(calls, "1") != 0 && strcmp(calls, "counts") != 0 &&
        strcmp(calls, "timeline") != 0 && strcmp(calls, "args") != 0)
        snprintf(cfg->calls_bad, sizeof cfg->calls_bad, "%s", calls);
    const char *all = getenv(DNP_ENV_ALL_CODE);
    cfg->all_code = all && *all && strcmp(all, "0") != 0;
    copy_env(cfg->include, sizeof cfg->include, DNP_ENV_INCLUDE);
    copy_env(cfg->exclude, sizeof cfg->exclude, DNP_ENV_EXCLUDE);
    const char *alloc = getenv(DNP_ENV_ALLOC);
    cfg->alloc = alloc && *alloc && strcmp(alloc, "0") != 0;
    const char *source = getenv(DNP_ENV_ALLOC_SOURCE), *each = getenv(DNP_ENV_ALLOC_EACH);
    cfg->alloc_tick = source && strcmp(source, "tick") == 0;
    cfg->alloc_each = each && strcmp(each, "1") == 0;
    const char *stacks = getenv(DNP_ENV_EXC_STACKS);
    cfg->exc_stacks = stacks && strcmp(stacks, "1") == 0;
    heap_path(cfg->heap_at_exit, sizeof cfg->heap_at_exit);
    cfg->sample = config_sample_mode(getenv(DNP_ENV_SAMPLE));
    const char *rate = getenv(DNP_ENV_SAMPLE_RATE);
    long r = rate ? strtol(rate, NULL, 10) : 0;
    cfg->sample_rate = r > 0 && r <= 100000 ? (unsigned)r : 0;
    const char *timers = getenv("DNPROF_SAMPLE_TIMERS");
    cfg->sample_timers = timers && *timers == '1';
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
