/* sink_otlp.c: OTLP/HTTP profiles (windows_cli.h): each window, all its
 * profiles, as one ExportProfilesServiceRequest (otlp_encode.c)
 *
 *   POST URL   Content-Type: application/x-protobuf
 *
 * URL: --otlp URL (with /v1development/profiles, the signal's path, added
 * when it has none), or with --otlp env what the OpenTelemetry exporter
 * configuration says: OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT as is, else
 * OTEL_EXPORTER_OTLP_ENDPOINT with v1development/profiles appended, else
 * http://localhost:4318/v1development/profiles. Headers from
 * OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_PROFILES_HEADERS (the
 * latter's keys win), "k=v,k=v" with %-escapes; the body gzip'd with
 * OTEL_EXPORTER_OTLP_[PROFILES_]COMPRESSION=gzip. The resource: service.name
 * (--service, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES' service.name, the
 * program's name, in this order), OTEL_RESOURCE_ATTRIBUTES (left out whole,
 * with a warning, when it does not parse), the --labels (theirs win),
 * process.pid. An answer's partial_success that rejected profiles makes the
 * window not sent, with the backend's message. HTTP, secrets and retries:
 * http_push.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "otlp.h"
#include "pprof.h"
#include "windows_cli.h"

#define SIGNAL_PATH "v1development/profiles"
#define MAX_KV 64

typedef struct kv_list {
    char buf[8192]; /* the decoded keys and values */
    const char *key[MAX_KV], *val[MAX_KV];
    int n;
} kv_list;

struct otlp_sink {
    http_push *http;
    push_config cfg;
    char url[2048];
    kv_list res;    /* OTEL_RESOURCE_ATTRIBUTES */
    int gzip;       /* OTEL_EXPORTER_OTLP_[PROFILES_]COMPRESSION=gzip */
    char labels[WINDOW_MAX_LABELS][256]; /* "k\0v" */
    const char *label_val[WINDOW_MAX_LABELS];
    dnp_pb body;
};

/* "k=v,k=v" (OTEL_*_HEADERS, OTEL_RESOURCE_ATTRIBUTES: the W3C baggage's
 * shape, %-escapes decoded, spaces around keys and values left out) into l.
 * 0, or -1 with err naming the variable. */
static int parse_kv(const char *name, const char *text, kv_list *l, char *err, size_t errlen) {
    size_t n = 0;
    for (const char *p = text; p && *p;) {
        const char *end = p + strcspn(p, ",");
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (end == p || strspn(p, " \t") == (size_t)(end - p)) { /* an empty member */
            p = *end ? end + 1 : end;
            continue;
        }
        if (!eq || l->n == MAX_KV || n + (size_t)(end - p) + 2 > sizeof l->buf) {
            snprintf(err, errlen, "%s: %s", name, !eq ? "wants KEY=VALUE,KEY=VALUE" : "too long");
            return -1;
        }
        for (int part = 0; part < 2; part++) {
            const char *a = part ? eq + 1 : p, *b = part ? end : eq;
            while (a < b && isspace((unsigned char)*a))
                a++;
            while (b > a && isspace((unsigned char)b[-1]))
                b--;
            (part ? l->val : l->key)[l->n] = l->buf + n;
            for (; a < b; a++) {
                unsigned hex;
                if (*a == '%' && b - a >= 3 && sscanf(a + 1, "%2x", &hex) == 1 && isxdigit((unsigned char)a[2]))
                    l->buf[n++] = (char)hex, a += 2;
                else
                    l->buf[n++] = *a;
            }
            l->buf[n++] = 0;
        }
        if (!*l->key[l->n]) {
            snprintf(err, errlen, "%s: a member without a key", name);
            return -1;
        }
        l->n++;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* URL with the signal's path added when it has none (http://host:4318 or http://host:4318/). */
static void endpoint(const push_config *c, char *url, size_t cap) {
    const char *signal = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
    const char *base = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (strcmp(c->otlp, "env") != 0) {
        const char *host = strstr(c->otlp, "://");
        const char *path = host ? strchr(host + 3, '/') : NULL;
        int bare = !path || !strcmp(path, "/");
        snprintf(url, cap, "%.*s%s", (int)(path ? path - c->otlp : (long)strlen(c->otlp)), c->otlp,
                 bare ? "/" SIGNAL_PATH : path);
    } else if (signal && *signal)
        snprintf(url, cap, "%s", signal);
    else if (base && *base)
        snprintf(url, cap, "%s%s" SIGNAL_PATH, base, base[strlen(base) - 1] == '/' ? "" : "/");
    else
        snprintf(url, cap, "http://localhost:4318/" SIGNAL_PATH);
}

/* OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION, else OTEL_EXPORTER_OTLP_COMPRESSION:
 * gzip or none. 0, or -1 with err. */
static int compression(otlp_sink *s, char *err, size_t errlen) {
    const char *v = getenv("OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION");
    const char *name = "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION";
    if (!v || !*v) {
        v = getenv("OTEL_EXPORTER_OTLP_COMPRESSION");
        name = "OTEL_EXPORTER_OTLP_COMPRESSION";
    }
    if (!v || !*v || !strcmp(v, "none"))
        return 0;
    if (strcmp(v, "gzip") != 0)
        return snprintf(err, errlen, "%s: gzip or none, not '%s'", name, v), -1;
    s->gzip = 1;
    return http_push_header(s->http, "Content-Encoding: gzip") == 0 ? 0 : (snprintf(err, errlen, "out of memory"), -1);
}

/* The headers of OTEL_EXPORTER_OTLP_HEADERS and _PROFILES_HEADERS. */
static int add_headers(otlp_sink *s, char *err, size_t errlen) {
    static kv_list all, sig; /* large: not on the stack; the sinks open one at a time */
    memset(&all, 0, sizeof all);
    memset(&sig, 0, sizeof sig);
    if (parse_kv("OTEL_EXPORTER_OTLP_HEADERS", getenv("OTEL_EXPORTER_OTLP_HEADERS"), &all, err, errlen) != 0 ||
        parse_kv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS", getenv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS"), &sig, err,
                 errlen) != 0)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        const kv_list *l = pass ? &sig : &all;
        for (int i = 0; i < l->n; i++) {
            int overridden = 0;
            for (int k = 0; !pass && k < sig.n; k++)
                overridden |= !strcasecmp(sig.key[k], l->key[i]);
            char line[2048];
            snprintf(line, sizeof line, "%s: %s", l->key[i], l->val[i]);
            if (!overridden && http_push_header(s->http, line) != 0)
                return snprintf(err, errlen, "out of memory"), -1;
        }
    }
    return 0;
}

otlp_sink *otlp_open(const push_config *c, char *err, size_t errlen) {
    otlp_sink *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *c;
    endpoint(c, s->url, sizeof s->url);
    for (int i = 0; i < c->nlabels; i++) { /* push_label_ok: k=v */
        snprintf(s->labels[i], sizeof s->labels[i], "%s", c->labels[i]);
        char *eq = strchr(s->labels[i], '=');
        s->label_val[i] = eq ? eq + 1 : "";
        if (eq)
            *eq = 0;
    }
    if (parse_kv("OTEL_RESOURCE_ATTRIBUTES", getenv("OTEL_RESOURCE_ATTRIBUTES"), &s->res, err, errlen) != 0) {
        warning("%s: left out, as the OpenTelemetry specification asks", err); /* the whole variable */
        memset(&s->res, 0, sizeof s->res);
    }
    int from_env = !strcmp(c->otlp, "env");
    if (http_url_ok(s->url) != 0)
        snprintf(err, errlen, "%s wants an http:// or https:// URL, not '%s'",
                 from_env ? "the OTLP endpoint" : "--otlp (or env: OTEL_EXPORTER_OTLP_ENDPOINT's)",
                 from_env ? s->url : c->otlp);
    else if ((s->http = http_push_open("--otlp", c->timeout_ms, err, errlen)) != NULL &&
             add_headers(s, err, errlen) == 0 && compression(s, err, errlen) == 0)
        return s;
    otlp_close(s);
    return NULL;
}

/* The resource's attributes of window w into a (names into s, w, service). */
static size_t resource(const otlp_sink *s, const window_file *w, otlp_attr *a, char *service, size_t cap) {
    const char *env = getenv("OTEL_SERVICE_NAME"), *from_res = NULL;
    size_t n = 1;
    for (int i = 0; i < s->res.n; i++) {
        int labelled = 0;
        for (int k = 0; k < s->cfg.nlabels; k++)
            labelled |= !strcmp(s->labels[k], s->res.key[i]);
        if (!strcmp(s->res.key[i], "service.name"))
            from_res = s->res.val[i];
        else if (!labelled && n < OTLP_MAX_ATTRS)
            a[n++] = (otlp_attr){s->res.key[i], s->res.val[i], 0};
    }
    for (int k = 0; k < s->cfg.nlabels && n + 1 < OTLP_MAX_ATTRS; k++)
        a[n++] = (otlp_attr){s->labels[k], s->label_val[k], 0};
    if (s->cfg.service || (env && *env) || (from_res && *from_res))
        snprintf(service, cap, "%s", s->cfg.service ? s->cfg.service : env && *env ? env : from_res);
    else
        window_service_name(w->cmdline, service, cap);
    a[0] = (otlp_attr){"service.name", service, 0};
    if (w->pid > 0 && n < OTLP_MAX_ATTRS)
        a[n++] = (otlp_attr){"process.pid", NULL, w->pid};
    return n;
}

int otlp_send(otlp_sink *s, const window_file *w, int retries, char *why, size_t whylen) {
    otlp_attr attrs[OTLP_MAX_ATTRS];
    char service[256];
    size_t n = resource(s, w, attrs, service, sizeof service);
    if (otlp_encode(attrs, n, w, &s->body, why, whylen) != 0)
        return -1;
    uint8_t reply[1024];
    http_body body = {"application/x-protobuf", s->body.p, s->body.n, reply, sizeof reply, 0};
    char *gz = NULL;
    size_t gzlen = 0;
    if (s->gzip) {
        FILE *f = open_memstream(&gz, &gzlen);
        int ok = f && dnp_gzip_write(s->body.p, s->body.n, f) == 0;
        if ((f && fclose(f) != 0) || !ok) {
            free(gz);
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        body.data = gz;
        body.len = gzlen;
    }
    int rc = http_push_post(s->http, s->url, &body, retries, why, whylen);
    free(gz);
    /* a partial success is not tried again (the rest would be rejected again) */
    return rc == 0 ? otlp_reply_rejected(reply, body.reply_len, why, whylen) : rc;
}

const char *otlp_url(const otlp_sink *s) {
    return s->url;
}

void otlp_close(otlp_sink *s) {
    if (!s)
        return;
    http_push_close(s->http);
    free(s->body.p);
    free(s);
}
