/* windows_follow.c: following a window directory (windows_cli.h): each
 * complete window, oldest first, into the sinks, then deleted; the files
 * sink (-o DIR, --keep N); the closing summary. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "windows_cli.h"
#include "dnp_vec.h"

void sink_failures_add(sink_failures *f, const char *why) {
    f->total++;
    int i = 0;
    while (i < WINDOW_MAX_REASONS && f->count[i] && strcmp(f->why[i], why) != 0)
        i++;
    if (i == WINDOW_MAX_REASONS)
        i = WINDOW_MAX_REASONS - 1; /* the last holds the rest */
    if (!f->count[i])
        snprintf(f->why[i], sizeof f->why[i], "%s", why);
    f->count[i]++;
}

void sink_failures_text(const sink_failures *f, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < WINDOW_MAX_REASONS && f->count[i] && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s %s", i ? ", " : "", CLI_COUNT(f->count[i]), f->why[i]);
}

int window_take_option(const char *cmd, window_follow *f, int which, const char *arg) {
    long long ms;
    uint64_t n;
    switch (which) {
    case WOPT_KEEP:
        if (cli_parse_u64(arg, &n) != 0 || n == 0 || n > 1000000)
            return usage_error(cmd, "--keep wants a number of files from 1 to 1000000, not '%s'", arg);
        f->keep = (unsigned)n;
        return 0;
    case WOPT_PYROSCOPE: f->push.pyroscope = arg; return 0;
    case WOPT_LABEL:
        if (push_label_ok(arg) != 0)
            return usage_error(cmd, "--label wants NAME=VALUE (NAME of letters, digits, _ and .; VALUE without , { } \"), "
                                    "not '%s'", arg);
        if (f->push.nlabels == WINDOW_MAX_LABELS)
            return usage_error(cmd, "at most %d --label", WINDOW_MAX_LABELS);
        f->push.labels[f->push.nlabels++] = arg;
        return 0;
    case WOPT_SERVICE: f->push.service = arg; return 0;
    case WOPT_OTLP: f->push.otlp = arg; return 0;
    default:
        if ((ms = cli_parse_duration(arg)) < 100 || ms > 600000)
            return usage_error(cmd, "--push-timeout wants a time from 100ms to 10m, not '%s'", arg);
        f->push.timeout_ms = (long)ms;
        return 0;
    }
}

int window_check_options(const char *cmd, window_follow *f) {
    if (!f->out_dir && !f->push.pyroscope && !f->push.otlp)
        return usage_error(cmd, "the windows want somewhere to go: -o DIR, --pyroscope URL and/or --otlp URL");
    if (f->keep && !f->out_dir)
        return usage_error(cmd, "--keep goes with -o DIR");
    if (!f->push.pyroscope && !f->push.otlp && (f->push.nlabels || f->push.service || f->push.timeout_ms))
        return usage_error(cmd, "--label, --service and --push-timeout go with --pyroscope or --otlp");
    if (!f->push.timeout_ms)
        f->push.timeout_ms = 10000;
    f->push.retries = 2;
    return 0;
}

int window_check_no_every(const char *cmd, const window_follow *f) {
    if (f->keep || f->push.pyroscope || f->push.otlp || f->push.nlabels || f->push.service || f->push.timeout_ms)
        return usage_error(cmd, "--keep, --pyroscope, --otlp, --label, --service and --push-timeout go with --every");
    return 0;
}

int window_follow_open(window_follow *f) {
    if (f->out_dir && mkdir(f->out_dir, 0700) != 0 && errno != EEXIST)
        return error("cannot create the profile directory '%s': %s", f->out_dir, strerror(errno));
    char err[512];
    if (f->push.pyroscope && !(f->pyro = pyroscope_open(&f->push, err, sizeof err)))
        return error("%s", err);
    if (f->push.otlp && !(f->otlp = otlp_open(&f->push, err, sizeof err))) {
        pyroscope_close(f->pyro);
        f->pyro = NULL;
        return error("%s", err);
    }
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir that start with prefix and end with suffix, sorted: a
 * malloc'd array of malloc'd names, *n of them (NULL when none or no memory). */
static char **list_dir(const char *dir, const char *prefix, const char *suffix, size_t *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **names = NULL;
    size_t cap = 0;
    struct dirent *de;
    size_t lp = strlen(prefix), ls = strlen(suffix);
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < lp + ls || strncmp(de->d_name, prefix, lp) || strcmp(de->d_name + l - ls, suffix))
            continue;
        if (DNP_VEC_RESERVE(names, cap, *n + 1, 32) != 0)
            break;
        if ((names[*n] = strdup(de->d_name)) != NULL)
            (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(names, *n, sizeof *names, by_name);
    return names;
}

static void free_list(char **names, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* --keep N: the newest N files of this type and process stay. */
static void rotate(const window_follow *f, const char *type, long pid) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s-%ld-", type, pid);
    size_t n;
    char **names = list_dir(f->out_dir, prefix, ".pb.gz", &n);
    for (size_t i = 0; f->keep && n > f->keep && i < n - f->keep; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", f->out_dir, names[i]);
        unlink(path);
    }
    free_list(names, n);
}

/* DIR/TYPE-PID-NNNNNN.pb.gz, written whole or not at all. */
static int write_file(window_follow *f, const window_file *w, const window_profile *p) {
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/%s-%ld-%06llu.pb.gz", f->out_dir, p->type, w->pid, (unsigned long long)w->index);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = cli_create_output(tmp);
    int ok = out && fwrite(p->data, 1, p->len, out) == p->len;
    if (out && fclose(out) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok) {
        sink_failures_add(&f->file_fail, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    f->files++;
    rotate(f, p->type, w->pid);
    return 0;
}

/* A profile to Pyroscope, or (p NULL) the window to OTLP. Retries while the
 * backend works; one try while it fails; none once the program has ended
 * and it was failing (dnprof would keep a finished program's container
 * waiting). 0 sent, -1 not. */
static int push_one(window_follow *f, sink_tally *t, const window_file *w, const window_profile *p) {
    char why[256] = "not tried: the backend was failing as the program ended";
    int retries = t->failing ? 0 : f->push.retries;
    if (!(f->ended && t->failing) && (p ? pyroscope_send(f->pyro, w, p, retries, why, sizeof why)
                                        : otlp_send(f->otlp, w, retries, why, sizeof why)) == 0) {
        t->sent++;
        t->failing = 0;
        return 0;
    }
    t->unsent++;
    t->failing = 1;
    sink_failures_add(&t->fail, why);
    return -1;
}

static void take_window(window_follow *f, const char *path) {
    window_file w;
    char err[768];
    if (window_file_read(path, &w, err, sizeof err) != 0) {
        f->bad++;
        if (!f->quiet)
            warning("window left out: %s", err);
        return;
    }
    f->windows++;
    if (w.dropped > f->agent_dropped)
        f->agent_dropped = w.dropped;
    f->agent_lost += w.lost;
    if (f->last_pid == w.pid && f->last_end_ns && w.start_ns != f->last_end_ns)
        f->gaps++;
    f->last_pid = w.pid;
    f->last_end_ns = w.start_ns + w.duration_ns;
    uint64_t unsent = f->pyro_n.unsent;
    for (int i = 0; i < w.nprof; i++) {
        f->profiles++;
        if (f->out_dir)
            write_file(f, &w, &w.prof[i]);
        if (f->pyro)
            push_one(f, &f->pyro_n, &w, &w.prof[i]);
    }
    if (f->pyro && w.nprof)
        f->pyro_n.unsent > unsent ? f->pyro_n.windows_unsent++ : f->pyro_n.windows_sent++;
    if (f->otlp && w.nprof)
        push_one(f, &f->otlp_n, &w, NULL) == 0 ? f->otlp_n.windows_sent++ : f->otlp_n.windows_unsent++;
    window_file_free(&w);
}

int window_each(const char *dir, void (*fn)(void *ctx, const char *path), void *ctx) {
    size_t n;
    char **names = list_dir(dir, "window-", ".trace", &n);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        fn(ctx, path);
        unlink(path);
    }
    free_list(names, n);
    return (int)n;
}

static void take_window_of(void *f, const char *path) {
    take_window(f, path);
}

int window_follow_pass(window_follow *f, const char *dir) {
    return window_each(dir, take_window_of, f);
}

/* "dnprof: pyroscope URL: 3 windows sent (6 profiles), 1 window not sent (2 profiles: 2 HTTP 500)" */
static void tally_line(const char *sink, const char *url, const sink_tally *t, int per_profile) {
    char text[1200];
    sink_failures_text(&t->fail, text, sizeof text);
    fprintf(stderr, "dnprof: %s %s: %s window%s sent", sink, url, CLI_COUNT(t->windows_sent), CLI_PLURAL(t->windows_sent));
    if (per_profile)
        fprintf(stderr, " (%s profile%s)", CLI_COUNT(t->sent), CLI_PLURAL(t->sent));
    if (t->windows_unsent && per_profile)
        fprintf(stderr, ", %s window%s not sent (%s profile%s: %s)", CLI_COUNT(t->windows_unsent),
                CLI_PLURAL(t->windows_unsent), CLI_COUNT(t->unsent), CLI_PLURAL(t->unsent), text);
    else if (t->windows_unsent)
        fprintf(stderr, ", %s window%s not sent (%s)", CLI_COUNT(t->windows_unsent), CLI_PLURAL(t->windows_unsent),
                text);
    fputc('\n', stderr);
}

void window_follow_close(window_follow *f) {
    char text[1200];
    if (!f->quiet) {
        fprintf(stderr, "dnprof: windows: %s read, %s profile%s", CLI_COUNT(f->windows), CLI_COUNT(f->profiles),
                CLI_PLURAL(f->profiles));
        if (f->agent_dropped)
            fprintf(stderr, ", %s dropped by the agent (no reader took them in time)", CLI_COUNT(f->agent_dropped));
        if (f->bad)
            fprintf(stderr, ", %s unreadable", CLI_COUNT(f->bad));
        if (f->agent_lost)
            fprintf(stderr, ", %s events left out (a window was full)", CLI_COUNT(f->agent_lost));
        fputc('\n', stderr);
        if (f->out_dir) {
            fprintf(stderr, "dnprof: profiles: %s file%s in %s", CLI_COUNT(f->files), CLI_PLURAL(f->files),
                    cli_short_path(f->out_dir));
            sink_failures_text(&f->file_fail, text, sizeof text);
            fprintf(stderr, "%s%s%s\n", f->file_fail.total ? " (not written: " : "", text, f->file_fail.total ? ")" : "");
        }
        if (f->pyro)
            tally_line("pyroscope", f->push.pyroscope, &f->pyro_n, 1);
        if (f->otlp)
            tally_line("otlp", otlp_url(f->otlp), &f->otlp_n, 0);
    }
    pyroscope_close(f->pyro);
    otlp_close(f->otlp);
    f->pyro = NULL;
    f->otlp = NULL;
}
