/* http_push.c: the HTTP of the sinks that push (windows_cli.h): Grafana
 * Pyroscope (sink_pyroscope.c), OTLP (sink_otlp.c).
 *
 * HTTP is libcurl's, loaded with dlopen when a sink needs it: a dnprof that
 * does not push runs where libcurl is not installed. Secrets come from the
 * environment or a file (settings.def: DNP_ENV_PUSH_*), never the command
 * line. A POST is tried again, with backoff, when what failed may pass (no
 * connection, a timeout, 5xx, 429, 408), not when the backend refused it (4xx). */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "windows_cli.h"

typedef struct curl_api {
    void *lib;
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    char *(*easy_escape)(CURL *, const char *, int);
    void (*free_fn)(void *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl_api;

struct http_push {
    curl_api c;
    CURL *h;
    long timeout_ms;
    struct curl_slist *extra; /* headers of the sink's own (OTLP's) */
    char auth[1200];   /* "Authorization: Bearer ..." or "" */
    char basic[600];   /* USER:PASSWORD or "" */
    char tenant[300];  /* "X-Scope-OrgID: ..." or "" */
};

static int load_curl(curl_api *c, const char *what, char *err, size_t errlen) {
    static const char *const names[] = {"libcurl.so.4", "libcurl.so", "libcurl-gnutls.so.4"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !c->lib; i++)
        c->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        snprintf(err, errlen, "%s needs libcurl, which is not installed (Debian, Ubuntu: apt-get install "
                              "libcurl4; Alpine: apk add libcurl)", what);
        return -1;
    }
#define SYM(field, name) ((*(void **)(&c->field) = dlsym(c->lib, name)) != NULL)
    if (!(SYM(global_init, "curl_global_init") && SYM(easy_init, "curl_easy_init") &&
          SYM(easy_setopt, "curl_easy_setopt") && SYM(easy_perform, "curl_easy_perform") &&
          SYM(easy_getinfo, "curl_easy_getinfo") && SYM(easy_cleanup, "curl_easy_cleanup") &&
          SYM(easy_strerror, "curl_easy_strerror") && SYM(easy_escape, "curl_easy_escape") &&
          SYM(free_fn, "curl_free") && SYM(slist_append, "curl_slist_append") &&
          SYM(slist_free_all, "curl_slist_free_all"))) {
        snprintf(err, errlen, "the libcurl found lacks functions dnprof uses (%s): install libcurl 7.60 or later",
                 dlerror());
        return -1;
    }
#undef SYM
    return 0;
}

/* The secret of setting id, or the first line of the file of file_id. 0, or
 * -1 with err when the file cannot be read. */
static int secret(int id, int file_id, char *out, size_t cap, char *err, size_t errlen) {
    const char *v = dnp_setting_getenv(id);
    const char *path = dnp_setting_getenv(file_id);
    out[0] = 0;
    if (v && *v) {
        snprintf(out, cap, "%s", v);
        return 0;
    }
    if (!path || !*path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s '%s': %s", dnp_settings[file_id].name, path, strerror(errno));
        return -1;
    }
    if (!fgets(out, (int)cap, f))
        out[0] = 0;
    fclose(f);
    out[strcspn(out, "\r\n")] = 0;
    return 0;
}

static int read_secrets(http_push *s, char *err, size_t errlen) {
    char token[1024], tenant[256];
    if (secret(DNP_SET_PUSH_TOKEN, DNP_SET_PUSH_TOKEN_FILE, token, sizeof token, err, errlen) < 0 ||
        secret(DNP_SET_PUSH_BASIC, DNP_SET_PUSH_BASIC_FILE, s->basic, sizeof s->basic, err, errlen) < 0 ||
        secret(DNP_SET_PUSH_TENANT, DNP_SET_PUSH_TENANT, tenant, sizeof tenant, err, errlen) < 0)
        return -1;
    if (token[0])
        snprintf(s->auth, sizeof s->auth, "Authorization: Bearer %s", token);
    if (tenant[0])
        snprintf(s->tenant, sizeof s->tenant, "X-Scope-OrgID: %s", tenant);
    if (s->basic[0] && !strchr(s->basic, ':')) {
        snprintf(err, errlen, "%s wants USER:PASSWORD", dnp_settings[DNP_SET_PUSH_BASIC].name);
        return -1;
    }
    return 0;
}

int http_url_ok(const char *url) {
    return !strncmp(url, "http://", 7) || !strncmp(url, "https://", 8) ? 0 : -1;
}

http_push *http_push_open(const char *what, long timeout_ms, char *err, size_t errlen) {
    http_push *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->timeout_ms = timeout_ms;
    if (read_secrets(s, err, errlen) < 0 || load_curl(&s->c, what, err, errlen) < 0) {
        http_push_close(s);
        return NULL;
    }
    s->c.global_init(CURL_GLOBAL_DEFAULT);
    if (!(s->h = s->c.easy_init())) {
        snprintf(err, errlen, "libcurl could not start (curl_easy_init)");
        http_push_close(s);
        return NULL;
    }
    return s;
}

int http_push_header(http_push *s, const char *line) {
    struct curl_slist *l = s->c.slist_append(s->extra, line);
    if (!l)
        return -1;
    s->extra = l;
    return 0;
}

char *http_push_escape(http_push *s, const char *text) {
    char *esc = s->c.easy_escape(s->h, text, 0);
    char *copy = esc ? strdup(esc) : NULL;
    if (esc)
        s->c.free_fn(esc);
    return copy;
}

/* The answer's body: into the caller's reply buffer when it has one (what
 * does not fit is left out), else dropped. */
static size_t keep_reply(char *p, size_t size, size_t n, void *ctx) {
    http_body *b = ctx;
    size_t len = size * n;
    if (b->reply && b->reply_len < b->reply_cap) {
        size_t take = len < b->reply_cap - b->reply_len ? len : b->reply_cap - b->reply_len;
        memcpy(b->reply + b->reply_len, p, take);
        b->reply_len += take;
    }
    return len;
}

/* One try: 0 sent; 1 not sent but worth another try (no connection, a
 * timeout, 5xx, 429); -1 not sent, for good (4xx). why: what happened. */
static int post_once(http_push *s, const char *url, http_body *body, char *why, size_t whylen) {
    const curl_api *c = &s->c;
    CURL *h = s->h;
    char ctype[128];
    snprintf(ctype, sizeof ctype, "Content-Type: %s", body->type);
    struct curl_slist *hdr = c->slist_append(NULL, ctype);
    for (const struct curl_slist *e = s->extra; e; e = e->next)
        hdr = c->slist_append(hdr, e->data);
    if (s->auth[0])
        hdr = c->slist_append(hdr, s->auth);
    if (s->tenant[0])
        hdr = c->slist_append(hdr, s->tenant);
    char cerr[CURL_ERROR_SIZE] = "";
    c->easy_setopt(h, CURLOPT_URL, url);
    c->easy_setopt(h, CURLOPT_POST, 1L);
    c->easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)body->data);
    c->easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body->len);
    c->easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    c->easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    c->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms);
    c->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    c->easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    c->easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_reply);
    c->easy_setopt(h, CURLOPT_WRITEDATA, (void *)body);
    body->reply_len = 0;
    c->easy_setopt(h, CURLOPT_USERAGENT, "dnprof/" DNPROF_VERSION);
    if (s->basic[0]) {
        c->easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        c->easy_setopt(h, CURLOPT_USERPWD, s->basic);
    }
    CURLcode rc = c->easy_perform(h);
    long status = 0;
    c->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    c->easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    c->slist_free_all(hdr);
    if (rc != CURLE_OK) {
        snprintf(why, whylen, "%s", rc == CURLE_OPERATION_TIMEDOUT ? "timed out"
                                    : rc == CURLE_COULDNT_CONNECT ? "connection refused"
                                                                  : cerr[0] ? cerr : c->easy_strerror(rc));
        return 1;
    }
    if (status >= 200 && status < 300)
        return 0;
    snprintf(why, whylen, "HTTP %ld", status);
    return status >= 500 || status == 429 || status == 408 ? 1 : -1;
}

int http_push_post(http_push *s, const char *url, http_body *body, int retries, char *why, size_t whylen) {
    int rc = post_once(s, url, body, why, whylen);
    for (int i = 0; rc == 1 && i < retries; i++) {
        struct timespec back = {0, 250000000L << i}; /* 0.25 s, 0.5 s: backoff */
        while (back.tv_nsec >= 1000000000L) {
            back.tv_sec++;
            back.tv_nsec -= 1000000000L;
        }
        nanosleep(&back, NULL);
        rc = post_once(s, url, body, why, whylen);
    }
    return rc == 0 ? 0 : -1;
}

void http_push_close(http_push *s) {
    if (!s)
        return;
    if (s->extra)
        s->c.slist_free_all(s->extra);
    if (s->h)
        s->c.easy_cleanup(s->h);
    if (s->c.lib)
        dlclose(s->c.lib);
    free(s);
}
