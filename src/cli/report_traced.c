/* report_traced.c: the traced methods of `dnprof run/attach --trace` in
 * `dnprof report` (report.h): per method its calls, total, mean, p50, p99 and
 * max, from the agent's TracedMethod and TracedCalls events (the last of each
 * id counts), the percentiles from the latency histogram (events.def). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "lock_site.h"
#include "report.h"
#include "u64map.h"

#define BUCKETS DNP_LAT_BUCKETS

typedef struct traced_caller {
    uint64_t name_id, calls, total_ns;
    const char *name; /* NULL: unknown, or beyond the call sites kept */
} traced_caller;

typedef struct traced_row {
    uint64_t id, module, token, calls, total_ns, max_ns;
    uint64_t name_id, hist_id, state, hr;
    char *name;
    uint64_t *hist; /* BUCKETS, or NULL */
    int has_calls;
    int for_locks; /* traced for --locks, not asked for: not shown among the traced methods */
    traced_caller *callers; /* by calls, most first */
    size_t ncallers, capcallers;
} traced_row;

struct traced_set {
    traced_row *rows;
    size_t n, cap;
    traced_lock lock; /* System.Threading.Lock's slow path */
    uint64_t lock_before_n, lock_before_ns; /* Lock's waits the runtime reported before the probe ran */
    dnp_u64map index; /* id -> row */
};

static traced_row *row_of(traced_set *s, uint64_t id) {
    uint64_t at;
    if (dnp_u64map_get(&s->index, id, &at))
        return &s->rows[at];
    if (dnp_u64map_put(&s->index, id, s->n, NULL) != 0)
        return NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        traced_row *r = realloc(s->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        s->rows = r;
        s->cap = cap;
    }
    traced_row *r = &s->rows[s->n++];
    memset(r, 0, sizeof *r);
    r->id = id;
    return r;
}

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    (void)t;
    traced_set *s = ctx;
    if (e->kind == DNP_EV_LockBeforeProbe) { /* cumulative: the last counts */
        s->lock_before_n = e->v[DNP_V(LockBeforeProbe, waits)];
        s->lock_before_ns = e->v[DNP_V(LockBeforeProbe, waitNs)];
        return 0;
    }
    if (e->kind != DNP_EV_TracedMethod && e->kind != DNP_EV_TracedCalls && e->kind != DNP_EV_TracedCaller)
        return 0;
    int m = e->kind == DNP_EV_TracedMethod;
    traced_row *r = row_of(s, e->v[m ? DNP_V(TracedMethod, id)
                                     : e->kind == DNP_EV_TracedCalls ? DNP_V(TracedCalls, id) : DNP_V(TracedCaller, id)]);
    if (!r)
        return -1;
    if (e->kind == DNP_EV_TracedCaller) {
        if (r->ncallers == r->capcallers) {
            size_t cap = r->capcallers ? 2 * r->capcallers : 4;
            traced_caller *c = realloc(r->callers, cap * sizeof *c);
            if (!c)
                return -1;
            r->callers = c;
            r->capcallers = cap;
        }
        r->callers[r->ncallers++] = (traced_caller){e->v[DNP_V(TracedCaller, callerId) + 1], e->v[DNP_V(TracedCaller, calls)],
                                           e->v[DNP_V(TracedCaller, totalNs)], NULL};
        return 0;
    }
    if (m) {
        r->module = e->v[DNP_V(TracedMethod, moduleId)];
        r->token = e->v[DNP_V(TracedMethod, methodToken)];
        r->name_id = e->v[DNP_V(TracedMethod, name)];
        r->state = e->v[DNP_V(TracedMethod, state)] & ~(uint64_t)DNP_TRACED_FOR_LOCKS;
        r->for_locks = (e->v[DNP_V(TracedMethod, state)] & DNP_TRACED_FOR_LOCKS) != 0;
        r->hr = e->v[DNP_V(TracedMethod, hrStatus)];
    } else {
        r->calls = e->v[DNP_V(TracedCalls, calls)];
        r->total_ns = e->v[DNP_V(TracedCalls, totalNs)];
        r->max_ns = e->v[DNP_V(TracedCalls, maxNs)];
        r->hist_id = e->v[DNP_V(TracedCalls, histogram)];
        r->has_calls = 1;
    }
    return 0;
}

/* "index:count index:count ..." into a histogram (a bad pair is skipped). */
static uint64_t *parse_hist(const char *text) {
    uint64_t *h = calloc(BUCKETS, sizeof *h);
    for (const char *p = text; h && p && *p;) {
        char *end;
        unsigned long b = strtoul(p, &end, 10);
        if (end == p || *end != ':')
            break;
        p = end + 1;
        unsigned long long c = strtoull(p, &end, 10);
        if (end == p)
            break;
        if (b < BUCKETS)
            h[b] = c;
        p = end + strspn(end, " ");
    }
    return h;
}

static int by_calls(const void *a, const void *b) {
    const traced_caller *x = a, *y = b;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

static int by_total(const void *a, const void *b) {
    const traced_row *x = a, *y = b;
    return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : x->id < y->id ? -1 : 1;
}

static void free_row(traced_row *r) {
    free(r->name);
    free(r->hist);
    for (size_t k = 0; k < r->ncallers; k++)
        free((char *)r->callers[k].name);
    free(r->callers);
}

/* Lock's slow path (traced for --locks, or by a --trace that named it): its
 * calls but those from Lock.TryEnter() (a try without a timeout, which fails
 * at once), with their time; then the rows traced for --locks alone go. */
static void take_lock_slow_path(traced_set *s) {
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        traced_row *r = &s->rows[i];
        if (r->name && !strcmp(r->name, LOCK_SLOW_PATH) && r->has_calls && r->state != 3) {
            s->lock.known = 1;
            for (size_t k = 0; k < r->ncallers; k++)
                if (!r->callers[k].name || strcmp(r->callers[k].name, LOCK_TRY_ENTER) != 0) {
                    s->lock.calls += r->callers[k].calls;
                    s->lock.ns += r->callers[k].total_ns;
                }
            if (r->max_ns > s->lock.max_ns)
                s->lock.max_ns = r->max_ns;
            s->lock.calls += s->lock_before_n; /* and what it missed: the runtime's waits of before it ran */
            s->lock.ns += s->lock_before_ns;
        }
        if (r->for_locks)
            free_row(r);
        else
            s->rows[kept++] = *r;
    }
    s->n = kept;
}

const traced_lock *traced_lock_slow_path(const traced_set *s) {
    return s && s->lock.known ? &s->lock : NULL;
}

int traced_lock_read(const char *path, traced_lock *out) {
    traced_set *s = NULL;
    memset(out, 0, sizeof *out);
    if (traced_read(path, &s) != 0)
        return -1;
    *out = s->lock;
    traced_free(s);
    return 0;
}

void traced_lock_merge(const traced_lock *l, uint64_t *count, uint64_t *ns) {
    if (!l->known)
        return;
    if (l->calls > *count)
        *count = l->calls;
    if (l->ns > *ns)
        *ns = l->ns;
}

int traced_read(const char *path, traced_set **out) {
    traced_set *s = calloc(1, sizeof *s);
    dnp_trace_stream *st = NULL;
    *out = NULL;
    if (!s || report_read_events(path, feed, s, &st, 0) != 0) {
        free(s);
        return 1;
    }
    const dnp_trace *t = dnp_trace_stream_trace(st);
    for (size_t i = 0; i < s->n; i++) { /* strings are known once the pass is over */
        traced_row *r = &s->rows[i];
        r->name = strdup(report_string(t, r->name_id, "?"));
        r->hist = parse_hist(r->hist_id ? dnp_trace_string(t, r->hist_id) : "");
        for (size_t k = 0; k < r->ncallers; k++) {
            const char *n = r->callers[k].name_id ? dnp_trace_string(t, r->callers[k].name_id) : NULL;
            r->callers[k].name = n && *n ? strdup(n) : NULL;
        }
        if (r->ncallers > 1) /* qsort of no array (NULL) is undefined */
            qsort(r->callers, r->ncallers, sizeof *r->callers, by_calls);
    }
    dnp_trace_stream_close(st);
    take_lock_slow_path(s);
    if (s->n > 1)
        qsort(s->rows, s->n, sizeof *s->rows, by_total);
    *out = s;
    return 0;
}

size_t traced_count(const traced_set *s) {
    return s ? s->n : 0;
}

void traced_free(traced_set *s) {
    for (size_t i = 0; s && i < s->n; i++)
        free_row(&s->rows[i]);
    if (s) {
        free(s->rows);
        dnp_u64map_release(&s->index);
    }
    free(s);
}

/* The q-quantile of a method's latencies: the middle of the bucket it falls
 * in (within 1/16 of the value), at most the maximum. */
static uint64_t quantile(const traced_row *r, double q) {
    if (!r->hist || !r->calls)
        return 0;
    uint64_t n = 0;
    for (unsigned b = 0; b < BUCKETS; b++)
        n += r->hist[b];
    uint64_t rank = (uint64_t)(q * (double)n), seen = 0;
    for (unsigned b = 0; b < BUCKETS; b++) {
        seen += r->hist[b];
        if (seen > rank) {
            uint64_t lo, w;
            dnp_lat_range(b, &lo, &w);
            uint64_t v = lo + w / 2;
            return v > r->max_ns ? r->max_ns : v;
        }
    }
    return r->max_ns;
}

static const char *state_word(uint64_t state) {
    switch (state) {
    case 1: return "asked";
    case 2: return "instrumented";
    case 3: return "failed";
    case 4: return "reverted";
    case 5: return "unloaded";
    default: return "unknown";
    }
}

/* Whether another method of s has r's name (overloads): then its token is shown. */
static int name_shared(const traced_set *s, const traced_row *r) {
    for (size_t i = 0; i < s->n; i++)
        if (&s->rows[i] != r && strcmp(s->rows[i].name, r->name) == 0)
            return 1;
    return 0;
}

void traced_text(const traced_set *s, unsigned top, FILE *out) {
    char a[32], b[32], c[32], d[32], e[32], n[32];
    fputs("\ntraced methods (--trace: every call counted and timed, entry to exit, by probes in the method's "
          "re-JIT-compiled code; under each, its callers)\n",
          out);
    fprintf(out, "%14s %10s %10s %10s %10s %10s  %s\n", "calls", "total", "mean", "p50", "p99", "max", "method");
    size_t shown = 0, failed = 0;
    for (size_t i = 0; i < s->n; i++) {
        const traced_row *r = &s->rows[i];
        if (r->state == 3) {
            failed++;
            continue;
        }
        if (top && shown == top)
            continue;
        shown++;
        char token[24] = "";
        if (name_shared(s, r)) /* an overload: which one */
            snprintf(token, sizeof token, " [0x%08llx]", (unsigned long long)r->token);
        fprintf(out, "%14s %10s %10s %10s %10s %10s  %s%s\n", cli_fmt_count(r->calls, n), report_fmt_ns(r->total_ns, a),
                report_fmt_ns(r->calls ? r->total_ns / r->calls : 0, b), report_fmt_ns(quantile(r, 0.5), c), report_fmt_ns(quantile(r, 0.99), d),
                report_fmt_ns(r->max_ns, e), r->name, token);
        for (size_t k = 0; k < r->ncallers && k < 5 && (r->ncallers > 1 || r->callers[0].name); k++) {
            const traced_caller *c = &r->callers[k];
            fprintf(out, "%14s %10s %10s %32s from %s\n", cli_fmt_count(c->calls, n), report_fmt_ns(c->total_ns, a),
                    report_fmt_ns(c->calls ? c->total_ns / c->calls : 0, b), "", c->name ? c->name : "(other or unknown callers)");
        }
        if (r->ncallers > 5)
            fprintf(out, "%14s ... and %zu more callers (--json has them all)\n", "", r->ncallers - 5);
    }
    if (shown < s->n - failed)
        fprintf(out, "%14s ... and %zu more (--top N to see more)\n", "", s->n - failed - shown);
    for (size_t i = 0; i < s->n; i++)
        if (s->rows[i].state == 3)
            fprintf(out, "note: %s was not traced (0x%08llx): it ran unchanged; the trace's notes say why\n",
                    s->rows[i].name, (unsigned long long)s->rows[i].hr);
    fputs("note: p50 and p99 are read from a histogram of 8 buckets per power of two (within 1/16 of the value)\n",
          out);
}

void traced_json(const traced_set *s, FILE *out) {
    fputs("\"traced\":[", out);
    for (size_t i = 0; i < s->n; i++) {
        const traced_row *r = &s->rows[i];
        fprintf(out, "%s\n{\"id\":%llu,\"name\":", i ? "," : "", (unsigned long long)r->id);
        dnp_export_json_str(out, r->name, 0);
        fprintf(out,
                ",\"module\":%llu,\"methodToken\":%llu,\"state\":\"%s\",\"hrStatus\":%llu,\"calls\":%llu,"
                "\"totalNs\":%llu,\"meanNs\":%llu,\"p50Ns\":%llu,\"p99Ns\":%llu,\"maxNs\":%llu,\"byCaller\":[",
                (unsigned long long)r->module, (unsigned long long)r->token, state_word(r->state),
                (unsigned long long)r->hr, (unsigned long long)r->calls, (unsigned long long)r->total_ns,
                (unsigned long long)(r->calls ? r->total_ns / r->calls : 0), (unsigned long long)quantile(r, 0.5),
                (unsigned long long)quantile(r, 0.99), (unsigned long long)r->max_ns);
        for (size_t k = 0; k < r->ncallers; k++) {
            const traced_caller *c = &r->callers[k];
            fputs(k ? ",{\"caller\":" : "{\"caller\":", out);
            if (c->name)
                dnp_export_json_str(out, c->name, 0);
            else
                fputs("null", out);
            fprintf(out, ",\"calls\":%llu,\"totalNs\":%llu,\"meanNs\":%llu}", (unsigned long long)c->calls,
                    (unsigned long long)c->total_ns, (unsigned long long)(c->calls ? c->total_ns / c->calls : 0));
        }
        fputs("]}", out);
    }
    fputs("]", out);
}

int report_traced_only(const traced_set *s, const report_opts *o, FILE *out) {
    if (o->json) {
        fputs("{\"trace\":", out);
        dnp_export_json_str(out, o->path, 0);
        fputc(',', out);
        traced_json(s, out);
        fputs("}\n", out);
    } else {
        fprintf(out, "dnprof report: %s\n", o->path);
        traced_text(s, o->top, out);
    }
    return fflush(out) != 0 || ferror(out) ? 1 : 0;
}
