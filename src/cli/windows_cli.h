/* windows_cli.h: continuous profiling in the front end (docs/production.md).
 *
 * The agent writes each window as window-PID-NNNNNN.trace into a directory
 * (src/agent/windows.h). The front end follows that directory (dnprof run
 * --every on its session directory, in a thread of its own; dnprof push on
 * any), turns each window into one pprof per profile type (windows_read.c),
 * hands them to the sinks (a directory of rotating files, Grafana Pyroscope:
 * sink_pyroscope.c, OTLP: sink_otlp.c, their HTTP: http_push.c), deletes the window, and at the end says what was sent
 * and what was not, and why (windows_follow.c). */
#ifndef DNP_WINDOWS_CLI_H
#define DNP_WINDOWS_CLI_H

#include <stddef.h>
#include <stdint.h>

/* ---- one window (windows_read.c) ---- */

#define WINDOW_MAX_PROFILES 4

typedef struct window_profile {
    const char *type;   /* Pyroscope's .NET profiler's names: cpu, wall, alloc, exception, lock */
    uint8_t *data;      /* gzip-compressed profile.proto */
    size_t len;
} window_profile;

typedef struct window_file {
    long pid;
    uint64_t index, start_ns, duration_ns; /* start: realtime ns */
    uint64_t dropped;   /* windows the agent dropped so far (no reader) */
    uint64_t lost;      /* events the window had no room for */
    char cmdline[1024];
    window_profile prof[WINDOW_MAX_PROFILES];
    int nprof;
} window_file;

/* Reads a window file into w (its profiles made). 0, or -1 with one line in err. */
int window_file_read(const char *path, window_file *w, char *err, size_t errlen);
void window_file_free(window_file *w);

/* The program's name from a command line: the .dll's stem for "dotnet app.dll",
 * else the executable's base name ("app"). */
void window_service_name(const char *cmdline, char *out, size_t cap);

/* "30s", "500ms", "2m", "1h", "30" (seconds) -> milliseconds; -1 if not one. */
long long cli_parse_duration(const char *text);

/* ---- sinks ---- */

#define WINDOW_MAX_LABELS 32
#define WINDOW_MAX_REASONS 8

/* What could not be sent, by reason ("HTTP 500", "connection refused"). */
typedef struct sink_failures {
    char why[WINDOW_MAX_REASONS][128];
    uint64_t count[WINDOW_MAX_REASONS];
    uint64_t total;
} sink_failures;

void sink_failures_add(sink_failures *f, const char *why);
/* "3 HTTP 500, 1 connection refused" into out. */
void sink_failures_text(const sink_failures *f, char *out, size_t cap);

typedef struct pyroscope_sink pyroscope_sink;
typedef struct otlp_sink otlp_sink;

typedef struct push_config {
    const char *pyroscope;                 /* base URL, or NULL */
    const char *otlp;                      /* URL, "env" (OTEL_EXPORTER_OTLP_*ENDPOINT), or NULL */
    const char *service;                   /* NULL: the program's name */
    const char *labels[WINDOW_MAX_LABELS]; /* "k=v" */
    int nlabels;
    long timeout_ms;                       /* per request */
    int retries;                           /* after the first try */
} push_config;

/* Checks a --label: "k=v" with k of [A-Za-z0-9_.], v without ',', '{', '}' or '"'. 0 or -1. */
int push_label_ok(const char *kv);

/* ---- HTTP (http_push.c) ---- */

typedef struct http_push http_push;

typedef struct http_body {
    const char *type; /* Content-Type */
    const void *data;
    size_t len;
    uint8_t *reply;   /* optional: the answer's body, its first reply_cap bytes */
    size_t reply_cap, reply_len;
} http_body;

/* 0 when url starts with http:// or https://, else -1. */
int http_url_ok(const char *url);
/* Loads libcurl (only now: a dnprof that does not push needs none) and reads
 * the secrets (DNP_ENV_PUSH_TOKEN or _FILE, DNP_ENV_PUSH_BASIC or _FILE,
 * DNP_ENV_PUSH_TENANT). what: the option, for messages ("--otlp"). NULL
 * with one line in err. */
http_push *http_push_open(const char *what, long timeout_ms, char *err, size_t errlen);
/* A header of every request ("Name: value"): 0, or -1 (no memory). */
int http_push_header(http_push *h, const char *line);
/* text %-escaped for a URL: malloc'd, or NULL. */
char *http_push_escape(http_push *h, const char *text);
/* POSTs body to url, with up to retries more tries (backoff 0.25 s, 0.5 s,
 * ...) while what failed may pass; 0, or -1 with why it was not sent in why. */
int http_push_post(http_push *h, const char *url, http_body *body, int retries, char *why, size_t whylen);
void http_push_close(http_push *h);

/* ---- Grafana Pyroscope (sink_pyroscope.c) ---- */

/* NULL with one line in err. */
pyroscope_sink *pyroscope_open(const push_config *c, char *err, size_t errlen);
/* Sends one profile of a window (http_push_post's retries); 0, or -1 with why. */
int pyroscope_send(pyroscope_sink *s, const window_file *w, const window_profile *p, int retries, char *why,
                   size_t whylen);
void pyroscope_close(pyroscope_sink *s);

/* ---- OTLP/HTTP profiles (sink_otlp.c, otlp_encode.c) ---- */

/* The endpoint: c->otlp, or with "env" OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT
 * (as is), OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1development/profiles) or
 * http://localhost:4318; headers from OTEL_EXPORTER_OTLP_HEADERS and
 * OTEL_EXPORTER_OTLP_PROFILES_HEADERS; the resource from --service,
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and --label. NULL with one
 * line in err. */
otlp_sink *otlp_open(const push_config *c, char *err, size_t errlen);
/* Sends a window, all its profiles in one ExportProfilesServiceRequest; 0,
 * or -1 with why it was not sent. */
int otlp_send(otlp_sink *s, const window_file *w, int retries, char *why, size_t whylen);
/* The URL it posts to. */
const char *otlp_url(const otlp_sink *s);
void otlp_close(otlp_sink *s);

/* ---- following a directory (windows_follow.c) ---- */

/* What one pushing sink sent and did not. */
typedef struct sink_tally {
    uint64_t sent, unsent;                 /* requests */
    uint64_t windows_sent, windows_unsent; /* windows: unsent when any of its requests was not sent */
    sink_failures fail;
    int failing; /* the last request was not sent: no retries until one is */
} sink_tally;

typedef struct window_follow {
    /* in */
    const char *out_dir;  /* -o DIR: rotating files, or NULL */
    unsigned keep;        /* --keep N: files per type and process, 0 all */
    push_config push;
    int quiet;
    /* state and counts */
    pyroscope_sink *pyro;
    otlp_sink *otlp;
    uint64_t windows, profiles, files, bad, agent_dropped, agent_lost;
    sink_tally pyro_n, otlp_n;
    sink_failures file_fail;
    uint64_t last_end_ns; /* the last window's end: the next should start there */
    uint64_t gaps;        /* windows that did not start where the one before ended */
    long last_pid;
    int ended;            /* the program has ended: a failing backend is not waited for */
} window_follow;

/* The sinks' options of run, attach and push, in this order: --keep N,
 * --pyroscope URL, --label K=V, --service NAME, --push-timeout TIME, --otlp URL. */
enum { WOPT_KEEP, WOPT_PYROSCOPE, WOPT_LABEL, WOPT_SERVICE, WOPT_PUSH_TIMEOUT, WOPT_OTLP, WOPT_LAST = WOPT_OTLP };
/* One of them into f: 0, or the usage error's exit code (cmd: "run", "push"). */
int window_take_option(const char *cmd, window_follow *f, int which, const char *arg);
/* What the options need of each other, and their defaults: 0 or an exit code. */
int window_check_options(const char *cmd, window_follow *f);
/* Without --every: 0, or the usage error when a sink's option was given. */
int window_check_no_every(const char *cmd, const window_follow *f);

/* Opens the sinks (-1 after saying why). */
int window_follow_open(window_follow *f);
/* Takes every complete window in dir, oldest first: into the sinks, then
 * deleted. Returns the number taken. */
int window_follow_pass(window_follow *f, const char *dir);
/* Calls fn with the path of every complete window in dir, oldest first, and
 * deletes each after it (dnprof top reads them so). Returns how many. */
int window_each(const char *dir, void (*fn)(void *ctx, const char *path), void *ctx);
/* The closing summary on stderr, and the sinks closed. */
void window_follow_close(window_follow *f);

#endif
