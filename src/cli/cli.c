/* cli.c: messages and small formatting helpers shared by the subcommands. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "families.h"
#include "heap_format.h"
#include "trace_format.h"
#include "trace_writer.h"

static void vmessage(const char *prefix, const char *fmt, va_list ap) {
    fflush(stdout);
    fprintf(stderr, "dnprof: %s", prefix);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage("", fmt, ap);
    va_end(ap);
    return -1;
}

void warning(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage("warning: ", fmt, ap);
    va_end(ap);
}

int usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "dnprof %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see dnprof %s --help)\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv, int result) {
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    int is_long = optopt == 0 || optopt >= 256 ||
                  (result == ':' && arg[0] == '-' && arg[1] == '-');
    char name[128];
    if (is_long) /* "--events=x": name the option, not its value */
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(name, sizeof name, "-%c", optopt);
    if (result == ':')
        return usage_error(cmd, "option '%s' needs a value", name);
    if (optopt && arg[0] == '-' && arg[1] == '-' && strchr(arg, '=')) { /* "--quiet=1" */
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
        return usage_error(cmd, "option '%s' takes no value", name);
    }
    return usage_error(cmd, "unknown option '%s'", name);
}

int cli_one_file(const char *cmd, const char *usage, int argc, char **argv, const char **path) {
    if (optind >= argc)
        return usage_error(cmd, "no trace file given: %s", usage);
    if (optind + 1 < argc)
        return usage_error(cmd, "one trace file at a time, not '%s' and '%s'", argv[optind], argv[optind + 1]);
    *path = argv[optind];
    return 0;
}

char *cli_fmt_count(uint64_t n, char *buf) {
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    char *p = buf;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            *p++ = ',';
        *p++ = digits[i];
    }
    *p = 0;
    return buf;
}

char *cli_fmt_bytes(uint64_t n, char *buf) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, 32, "%llu B", (unsigned long long)n);
        return buf;
    }
    double v = (double)n / 1024;
    unsigned u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 32, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

static int needs_quotes(const char *s) {
    if (!*s)
        return 1;
    for (; *s; s++)
        if (strchr(" \t\n'\"\\$`*?[]{}()<>|&;#~!", *s))
            return 1;
    return 0;
}

char *cli_fmt_argv(char *const argv[], char *buf, size_t len) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; argv[i] && used + 1 < len; i++) {
        const char *a = argv[i];
        if (i > 0)
            buf[used++] = ' ';
        int q = needs_quotes(a);
        if (q && used + 1 < len)
            buf[used++] = '\'';
        for (; *a && used + 5 < len; a++) {
            if (*a == '\'') { /* ' -> '\'' */
                memcpy(buf + used, "'\\''", 4);
                used += 4;
            } else {
                buf[used++] = *a;
            }
        }
        if (q && used + 1 < len)
            buf[used++] = '\'';
        buf[used] = 0;
    }
    return buf;
}

int cli_events_name_calls(const char *events) {
    for (const char *p = events; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == 5 && !strncmp(p, "calls", 5))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

int cli_check_events(const char *cmd, const char *events) {
    if (cli_events_name_calls(events))
        return usage_error(cmd, "--events calls records nothing by itself: the calls come with "
                                "dnprof run --calls");
    char err[512];
    dnp_event_config cfg;
    if (dnp_events_parse(events, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "dnprof %s: %s\n", cmd, err);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

int cli_not_a_snapshot(const char *path) {
    char magic[sizeof DNP_HEAP_MAGIC - 1];
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) /* a pipe is read once: by the reader */
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if (got != sizeof magic || memcmp(magic, DNP_HEAP_MAGIC, sizeof magic) != 0)
        return 0;
    error("%s is a heap snapshot, not a trace: read it with 'dnprof heap report %s', or convert it "
          "with 'dnprof convert --format heapsnapshot %s'",
          path, path, path);
    return 1;
}

const char *cli_short_path(const char *path) {
    static char cwd[PATH_MAX];
    if (path[0] != '/' || !getcwd(cwd, sizeof cwd))
        return path;
    size_t n = strlen(cwd);
    if (n > 1 && strncmp(path, cwd, n) == 0 && path[n] == '/' && path[n + 1])
        return path + n + 1;
    return path;
}

FILE *cli_create_output(const char *path) {
    int fd = dnp_file_create(path, 0);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
    }
    return f;
}

int cli_abs_path(const char *path, char *out, size_t len) {
    if (path[0] == '/') {
        if (strlen(path) >= len)
            return -1;
        strcpy(out, path);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    int n = snprintf(out, len, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", rel);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int cli_parse_u64(const char *text, uint64_t *out) {
    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

void cli_print_families(FILE *out, const char *indent) {
    size_t col = 0;
    for (int i = 0; i < DNP_FAM_COUNT; i++) {
        if (i == DNP_FAM_REMOTING) /* .NET Framework only: --events refuses it */
            continue;
        size_t w = strlen(dnp_family_words[i]) + 2;
        if (col && col + w > 58) {
            fputs(",\n", out);
            col = 0;
        }
        fprintf(out, "%s%s", col ? ", " : indent, dnp_family_words[i]);
        col += w;
    }
    fputc('\n', out);
}

volatile sig_atomic_t cli_stop_signal;

static void note_stop_signal(int sig) {
    cli_stop_signal = sig;
}

void cli_catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}
