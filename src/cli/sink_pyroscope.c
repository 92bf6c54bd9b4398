/* sink_pyroscope.c: Grafana Pyroscope's HTTP ingest (windows_cli.h).
 *
 *   POST BASE/ingest?name=SERVICE{k=v,...}&from=S&until=S&format=pprof&spyName=dotnetspy
 *   body: the gzip'd pprof, as is
 *
 * as Pyroscope's own handler reads it (pkg/ingester/pyroscope/ingest_handler.go,
 * pkg/og/convert/pprof/profile.go): with format=pprof the name's part before '{'
 * is the service_name label, and the profile's type comes from the pprof's
 * sample types (cpu -> process_cpu, wall, alloc_* -> memory, exception), so one
 * request per profile type, the name without a ".cpu" suffix. from and until
 * are unix seconds (Pyroscope also reads ms, us and ns by their digits).
 * HTTP, secrets and retries: http_push.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "windows_cli.h"

struct pyroscope_sink {
    http_push *http;
    push_config cfg;
    char base[2048];
    char labels[2048]; /* "k=v,k=v" */
};

int push_label_ok(const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || !eq[1])
        return -1;
    for (const char *p = kv; p < eq; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.')
            return -1;
    return strpbrk(eq + 1, ",{}\"") ? -1 : 0;
}

pyroscope_sink *pyroscope_open(const push_config *c, char *err, size_t errlen) {
    if (http_url_ok(c->pyroscope) != 0) {
        snprintf(err, errlen, "--pyroscope wants an http:// or https:// URL, not '%s'", c->pyroscope);
        return NULL;
    }
    pyroscope_sink *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *c;
    snprintf(s->base, sizeof s->base, "%s", c->pyroscope);
    size_t lb = strlen(s->base);
    while (lb && s->base[lb - 1] == '/')
        s->base[--lb] = 0;
    size_t n = 0;
    for (int i = 0; i < c->nlabels && n < sizeof s->labels; i++)
        n += (size_t)snprintf(s->labels + n, sizeof s->labels - n, "%s%s", i ? "," : "", c->labels[i]);
    if (!(s->http = http_push_open("--pyroscope", c->timeout_ms, err, errlen))) {
        free(s);
        return NULL;
    }
    return s;
}

int pyroscope_send(pyroscope_sink *s, const window_file *w, const window_profile *p, int retries, char *why,
                   size_t whylen) {
    char service[256], name[2600], url[8192];
    if (s->cfg.service)
        snprintf(service, sizeof service, "%s", s->cfg.service);
    else
        window_service_name(w->cmdline, service, sizeof service);
    snprintf(name, sizeof name, "%s{%s}", service, s->labels);
    char *esc = http_push_escape(s->http, name);
    if (!esc) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    /* whole seconds, rounded alike: one window's until is the next one's from */
    unsigned long long from = (w->start_ns + 500000000ull) / 1000000000ull;
    unsigned long long until = (w->start_ns + w->duration_ns + 500000000ull) / 1000000000ull;
    snprintf(url, sizeof url, "%s/ingest?name=%s&from=%llu&until=%llu&format=pprof&spyName=dotnetspy", s->base, esc,
             from, until);
    free(esc);
    http_body body = {"application/octet-stream", p->data, p->len, NULL, 0, 0};
    return http_push_post(s->http, url, &body, retries, why, whylen);
}

void pyroscope_close(pyroscope_sink *s) {
    if (!s)
        return;
    http_push_close(s->http);
    free(s);
}
