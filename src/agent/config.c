/* config.c: the agent's environment: the one place of the agent that reads
 * it, each variable through its row of the settings table (settings.def). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calls.h"
#include "recorder.h"
#include "sampler.h"
#include "say.h"
#include "sdk_process.h"
#include "settings.h"

static unsigned setting_value(int id);

void config_output_path(char *out, size_t cap, int *exclusive, char *alt, size_t altcap) {
    const char *tmpl = dnp_setting_getenv(DNP_SET_OUTPUT);
    const char *root = dnp_setting_getenv(DNP_SET_ROOT_PID);
    int pid = (int)getpid();
    *exclusive = 0;
    alt[0] = 0;
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
     * a trace of its own beside the root's, never the root's file. Under the
     * SDK (dotnet run, test), whose own processes record nothing, the first
     * program to create the root's file writes it, the others their own. */
    *exclusive = 1;
    size_t len = strlen(out);
    const char *ext = ".trace";
    if (len > 6 && strcmp(out + len - 6, ext) == 0)
        len -= 6;
    char stem[4096];
    snprintf(stem, sizeof stem, "%.*s", (int)len, out);
    if (setting_value(DNP_SET_SDK_ASIDE)) {
        snprintf(alt, altcap, "%s.%d.trace", stem, pid);
        return;
    }
    snprintf(out, cap, "%s.%d.trace", stem, pid);
}

int config_sdk_aside(void) {
    unsigned on = 0;
    if (dnp_setting_parse(DNP_SET_SDK_ASIDE, dnp_setting_getenv(DNP_SET_SDK_ASIDE), &on) < 0 || !on)
        return 0;
    static char line[8192];
    char exe[4096], real[4096], *argv[64];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
    if (fd >= 0)
        close(fd);
    ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || e <= 0)
        return 0;
    line[n] = 0;
    exe[e] = 0;
    int argc = 0;
    for (ssize_t i = 0; i < n && argc < 64; i += (ssize_t)strlen(line + i) + 1)
        argv[argc++] = line + i;
    int k = dnp_sdk_host_runs(exe, argc, argv);
    if (k == DNP_SDK_COMMAND)
        return 1;
    /* the .dll the host runs (MSBuild.dll), or an apphost (the compiler's csc), in <root>/sdk/ */
    const char *path = k > 0 ? realpath(argv[k], real) : exe;
    for (size_t at = path ? dnp_sdk_next_root(path, 0) : 0; at; at = dnp_sdk_next_root(path, at + 1)) {
        char host[4096 + 8];
        snprintf(host, sizeof host, "%.*s/dotnet", (int)at, path);
        if (access(host, X_OK) == 0)
            return 1;
    }
    return 0;
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

/* A setting's value from the environment; a bad value is said, once, in the
 * table's one shape, and the table's on_bad used. */
static unsigned setting_value(int id) {
    const char *text = dnp_setting_getenv(id);
    unsigned v;
    if (dnp_setting_parse(id, text, &v) < 0) {
        char msg[512];
        dnp_setting_bad_text(id, text, msg, sizeof msg);
        agent_say("%s", msg);
    }
    return v;
}

unsigned config_flush_ms(void) {
    const char *s = dnp_setting_getenv(DNP_SET_FLUSH_MS);
    return s && *s ? setting_value(DNP_SET_FLUSH_MS) : 0;
}

const char *config_session_dir(void) {
    return dnp_setting_getenv(DNP_SET_SESSION);
}

int config_say_stderr(void) {
    unsigned v;
    dnp_setting_parse(DNP_SET_STDERR, dnp_setting_getenv(DNP_SET_STDERR), &v); /* said by config_from_env */
    return (int)v;
}

/* The path of the snapshot at exit (DNP_ENV_HEAP_AT=exit), %p expanded; a
 * process it was not meant for (a child the program started) gets its own file
 * beside the root's. "" when none was asked. */
static void heap_path(char *path, size_t cap) {
    const char *out = dnp_setting_getenv(DNP_SET_HEAP_OUTPUT);
    path[0] = 0;
    if (setting_value(DNP_SET_HEAP_AT) != 1 || !out || !*out || cap < 32)
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
    const char *root = dnp_setting_getenv(DNP_SET_ROOT_PID);
    if (!has_pid && root && atol(root) != (long)getpid() && n + 24 < cap)
        snprintf(path + n, cap - n, ".%ld", (long)getpid());
}

/* The settings that go straight into a field of agent_config: text into a
 * char array, a value into an int or an unsigned. The others: OUTPUT and
 * ROOT_PID (config_output_path), HEAP_AT and HEAP_OUTPUT (heap_path), STDERR
 * (config_say_stderr, before the messages have a place), and the front end's own. */
#define TEXT(sym, member) {DNP_SET_##sym, offsetof(agent_config, member), sizeof(((agent_config *)0)->member), 1}
#define VALUE(sym, member)                                                                                   \
    {DNP_SET_##sym, offsetof(agent_config, member),                                                        \
     sizeof(int) + 0 * sizeof(char[sizeof(((agent_config *)0)->member) == sizeof(int) ? 1 : -1]), 0}
static const struct {
    int id;
    size_t offset, size;
    int text;
} fields[] = {
    TEXT(EVENTS, events),       TEXT(SESSION, session),      VALUE(FLUSH_MS, flush_ms),
    VALUE(CALLS, calls),        VALUE(CALLS_RATE, calls_rate),        TEXT(INCLUDE, include),      TEXT(EXCLUDE, exclude),
    VALUE(ALL_CODE, all_code),  VALUE(ALLOC, alloc),         VALUE(ALLOC_SOURCE, alloc_tick),
    VALUE(ALLOC_EACH, alloc_each), VALUE(EXC_STACKS, exc_stacks), VALUE(SAMPLE, sample),
    VALUE(SAMPLE_RATE, sample_rate), VALUE(SAMPLE_TIMERS, sample_timers),
    VALUE(SAMPLE_WALL_THREADS, sample_wall_threads),
    VALUE(LOCKS, locks), VALUE(LOCKS_SLICE_US, lock_slice_us),
    VALUE(GC, gc),              VALUE(THREADPOOL, threadpool),
    VALUE(EVERY, every_ms),     TEXT(WINDOW_DIR, window_dir), VALUE(WINDOW_KEEP, window_keep),
    VALUE(SAMPLE_UNWIND, sample_unwind), TEXT(IL, il), VALUE(ASYNC, async), TEXT(TRACE, trace),
};
#undef TEXT
#undef VALUE

/* agent_config.sample and .calls are the table's words by index
 * (DNP_SAMPLE_*, DNP_CALLS_* in settings.h). */

/* A DNPROF_ variable the table does not know (a typo) is said,
 * not silently ignored. */
static void say_unknown(void) {
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "DNPROF_", 7) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (dnp_setting_find(*e, len) < 0)
            agent_say("unknown setting %.*s ignored; dnprof env --list lists them", (int)(len < 80 ? len : 80), *e);
    }
}

void config_from_env(agent_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    say_unknown();
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char *at = (char *)cfg + fields[i].offset;
        if (fields[i].text) {
            const char *v = dnp_setting_getenv(fields[i].id);
            snprintf(at, fields[i].size, "%s", v ? v : "");
        } else {
            *(int *)(void *)at = (int)setting_value(fields[i].id);
        }
    }
    setting_value(DNP_SET_STDERR); /* a bad value is said here, once */
    setting_value(DNP_SET_ROOT_PID);
    config_output_path(cfg->output, sizeof cfg->output, &cfg->exclusive, cfg->output_alt, sizeof cfg->output_alt);
    heap_path(cfg->heap_at_exit, sizeof cfg->heap_at_exit);
}

int config_sample_mode(const char *text) {
    unsigned v;
    dnp_setting_parse(DNP_SET_SAMPLE, text, &v);
    return (int)v;
}

void config_unwind_cache(char *out, size_t cap) {
    const char *set = dnp_setting_getenv(DNP_SET_UNWIND_CACHE);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (!cap)
        return;
    out[0] = 0;
    if (set && set[0])
        snprintf(out, cap, "%s", strcmp(set, "0") != 0 ? set : "");
    else if (xdg && xdg[0] == '/')
        snprintf(out, cap, "%s/dnprof/unwind", xdg);
    else if (home && home[0] == '/' && home[1])
        snprintf(out, cap, "%s/.cache/dnprof/unwind", home);
}

void config_perf_map(char *out, size_t cap) {
    /* the runtime's own settings, which it reads from this process's environment whatever dnprof asked */
    const char *on = getenv("DOTNET_PerfMapEnabled");
    const char *dir = getenv("DOTNET_PerfMapJitDumpPath");
    if (!on || (strcmp(on, "1") != 0 && strcmp(on, "3") != 0)) { /* no map, or a jitdump only */
        if (cap)
            out[0] = 0;
        return;
    }
    snprintf(out, cap, "%s/perf-%d.map", dir && dir[0] ? dir : "/tmp", (int)getpid());
}
