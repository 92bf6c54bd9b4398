/* report_waits.c: where the time waited went (dnprof report --waits;
 * docs/waits.md): one page that adds up what each recorder of waits gives —
 * lock contention and WaitHandle waits (--locks), GC pauses (--gc), thread-pool
 * starvation (--threadpool), and the time threads were blocked by stack, from
 * wall-clock samples (--sample=wall) — with a line for each part the trace does
 * not hold, naming the flag that records it. The details are the other
 * reports': report --locks, --gc, --threadpool, and report on the samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "dnp_text.h"
#include "export.h"
#include "prettyname.h"
#include "report.h"
#include "settings.h"
#include "trace_reader.h"

#define MAX_SITES 512
#define FRAMES_SHOWN 3
#define REASON_STARVATION 6u
#define KIND_WAIT_HANDLE 2u /* LockSite kinds 2 and 3: waits, not contention (events.def) */

typedef struct site {
    uint64_t key;   /* a LockSite's stack string, or a blocked stack's hash */
    uint64_t ns, count;
    char text[512]; /* frames, innermost first, " < " between */
} site;

typedef struct waits {
    int locks, gc, threadpool, wall;       /* recorded: the config event was there */
    uint64_t lock_n, lock_ns, wait_n, wait_ns;
    uint64_t gcs, pause_ns, max_pause_ns, gc_by_gen[3];
    uint64_t starved;
    uint64_t first_ns, last_ns;
    uint64_t blocked_ns, sampled_ns; /* the program's threads: a managed frame above [waiting] */
    uint64_t native_ns;              /* [waiting] with no managed frame: the runtime's own threads */
    uint64_t counters_ns;            /* [waiting] in the runtime's EventCounters thread (--threadpool's counters) */
    site lsites[MAX_SITES], bsites[MAX_SITES];
    size_t nl, nb;
} waits;

/* Adds ns (and count) to the site of key in the table, made with text. */
static site *add_site(site *t, size_t *n, uint64_t key, uint64_t ns, uint64_t count) {
    size_t i = 0;
    while (i < *n && t[i].key != key)
        i++;
    if (i == *n) {
        if (*n == MAX_SITES)
            return NULL;
        memset(&t[i], 0, sizeof t[i]);
        t[i].key = key;
        (*n)++;
    }
    t[i].ns += ns;
    t[i].count += count;
    return &t[i];
}

/* The frame of the thread that polls EventCounters (System.Diagnostics.Tracing's
 * CounterGroup), which the runtime starts when a session asks for counters. */
#define COUNTERS_POLL "System.Diagnostics.Tracing.CounterGroup::"

/* The runtime's own lock code at the top of a waiting stack: the site is below it. */
static int lock_code(const char *frame) {
    static const char *const prefixes[] = {"System.Threading.Monitor::", "System.Threading.Lock::",
                                           "System.Threading.Lock+", "System.Diagnostics.Tracing."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(frame, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

/* "A\nB\nC\n..." (a stack string, innermost first) as "A < B < C", from the
 * first frame outside the runtime's lock code. */
static void stack_text(const char *stack, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    while (stack && *stack && lock_code(stack) && strchr(stack, '\n'))
        stack = strchr(stack, '\n') + 1;
    for (int f = 0; stack && *stack && f < FRAMES_SHOWN; f++) {
        size_t len = strcspn(stack, "\n");
        char raw[1024], pretty[1024];
        snprintf(raw, sizeof raw, "%.*s", (int)(len < sizeof raw ? len : sizeof raw - 1), stack);
        dnp_pretty_name(raw, pretty, sizeof pretty);
        int k = snprintf(out + n, cap - n, "%s%s", f ? " < " : "", pretty);
        n += k > 0 && (size_t)k < cap - n ? (size_t)k : 0;
        stack += len + (stack[len] == '\n');
    }
}

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    waits *w = ctx;
    if (!w->first_ns)
        w->first_ns = e->time_ns;
    w->last_ns = e->time_ns;
    switch (e->kind) {
    case DNP_EV_LockConfig: w->locks = 1; break;
    case DNP_EV_LockSite: {
        uint64_t kind = e->v[DNP_V(LockSite, kind)], count = e->v[DNP_V(LockSite, count)];
        uint64_t ns = e->v[DNP_V(LockSite, waitNs)], stack = e->v[DNP_V(LockSite, stack)];
        if (kind >= KIND_WAIT_HANDLE) {
            w->wait_n += count, w->wait_ns += ns;
            break;
        }
        w->lock_n += count, w->lock_ns += ns;
        site *s = add_site(w->lsites, &w->nl, stack, ns, count);
        if (s && !s->text[0])
            stack_text(dnp_trace_string(t, stack), s->text, sizeof s->text);
        break;
    }
    case DNP_EV_GcConfig: w->gc = 1; break;
    case DNP_EV_GcCollection: {
        uint64_t gen = e->v[DNP_V(GcCollection, generation)], pause = e->v[DNP_V(GcCollection, pauseNs)];
        w->gcs++;
        w->pause_ns += pause;
        if (pause > w->max_pause_ns)
            w->max_pause_ns = pause;
        w->gc_by_gen[gen < 2 ? gen : 2]++;
        break;
    }
    case DNP_EV_ThreadPoolConfig: w->threadpool = 1; break;
    case DNP_EV_ThreadPoolAdjustment: w->starved += e->v[DNP_V(ThreadPoolAdjustment, reason)] == REASON_STARVATION; break;
    default: break;
    }
    return 0;
}

static int read_events(const char *path, waits *w) {
    return report_read_events(path, feed, w, NULL, 0);
}

/* Appends frame f of tree tr to text (len so far), " < " before all but the first. */
static size_t put_frame(const dnp_calltree *ct, const dnp_ct_tree *tr, uint32_t f, char *text, size_t cap,
                        size_t len, const char *sep) {
    char raw[1024], pretty[1024];
    dnp_pretty_name(dnp_ct_raw_name(ct, tr->nodes[f].func, tr->nodes[f].name, raw, sizeof raw), pretty, sizeof pretty);
    int k = snprintf(text + len, cap - len, "%s%s", len ? sep : "", pretty);
    return len + (k > 0 && (size_t)k < cap - len ? (size_t)k : 0);
}

/* The wall-clock samples' [waiting] time, by the managed frames above it: the
 * innermost FRAMES_SHOWN and, when those are all the framework's (a
 * Monitor.Wait under Task.Wait), the first frame of the program's own code
 * below them. A thread blocked with no managed frame above it is one of the
 * runtime's own (the GC's, the JIT's, EventPipe's): counted apart. */
static void blocked_tree(waits *w, const dnp_calltree *ct, const dnp_ct_tree *tr) {
    for (uint32_t i = 1; i < tr->nnodes; i++) {
        const dnp_ct_node *nd = &tr->nodes[i];
        w->sampled_ns += nd->self_ns;
        const char *name = nd->func ? NULL : dnp_trace_string(ct->t, nd->name);
        if (!nd->self_ns || !name || strcmp(name, "[waiting]") != 0)
            continue;
        uint64_t key = 0xcbf29ce484222325ull;
        uint32_t frames[FRAMES_SHOWN], n = 0, mine = 0, own = 0, counters = 0;
        char raw[1024];
        for (uint32_t at = nd->parent; at && !mine; at = tr->nodes[at].parent) {
            if (!tr->nodes[at].func)
                continue;
            /* the program's own code, not the framework's: what a user looks for under a wait */
            const char *frame = dnp_ct_raw_name(ct, tr->nodes[at].func, tr->nodes[at].name, raw, sizeof raw);
            int user = !dnp_is_framework_name(frame);
            counters |= !strncmp(frame, COUNTERS_POLL, strlen(COUNTERS_POLL));
            if (n < FRAMES_SHOWN) {
                frames[n++] = at;
                own |= user;
            } else if (user) {
                mine = at;
            }
            key = (key ^ tr->nodes[at].func) * 0x100000001b3ull;
            if (n == FRAMES_SHOWN && own)
                break;
        }
        if (!n) {
            w->native_ns += nd->self_ns;
            continue;
        }
        if (counters) { /* the thread EventCounters run on: --threadpool's own, counted apart */
            w->counters_ns += nd->self_ns;
            continue;
        }
        w->blocked_ns += nd->self_ns;
        site *s = add_site(w->bsites, &w->nb, key | 1, nd->self_ns, 1);
        if (!s || s->text[0])
            continue;
        size_t len = 0;
        for (uint32_t f = 0; f < n; f++)
            len = put_frame(ct, tr, frames[f], s->text, sizeof s->text, len, " < ");
        if (mine)
            put_frame(ct, tr, mine, s->text, sizeof s->text, len, " < ... < ");
    }
}

static int read_samples(const char *path, waits *w) {
    calls_input in;
    if (calls_open(path, 0, &in) != 0)
        return 1;
    w->wall = in.ct->sample_mode == DNP_SAMPLE_WALL;
    for (size_t i = 0; w->wall && i < in.ct->nthreads; i++)
        blocked_tree(w, in.ct, &in.ct->threads[i]);
    w->sampled_ns -= w->native_ns + w->counters_ns;
    calls_close(&in);
    return 0;
}

static int by_ns(const void *x, const void *y) {
    const site *a = x, *b = y;
    return (a->ns < b->ns) - (a->ns > b->ns);
}

static void json_sites(FILE *out, const site *t, size_t n, unsigned top) {
    for (size_t i = 0; i < n && i < top; i++) {
        fprintf(out, "%s{\"ns\":%llu,\"count\":%llu,\"stack\":", i ? "," : "", (unsigned long long)t[i].ns,
                (unsigned long long)t[i].count);
        dnp_export_json_str(out, t[i].text, 0);
        fputc('}', out);
    }
}

static void write_json(const waits *w, const char *path, unsigned top, FILE *out) {
    uint64_t span = w->last_ns - w->first_ns;
    fputs("{\"trace\":", out);
    dnp_export_json_str(out, path, 0);
    fprintf(out, ",\"recordedNs\":%llu,", (unsigned long long)span);
    fprintf(out, "\"locks\":{\"recorded\":%s,\"flag\":\"--locks\",\"contentions\":%llu,\"waitNs\":%llu,"
                 "\"waitHandleWaits\":%llu,\"waitHandleNs\":%llu,\"top\":[",
            w->locks ? "true" : "false", (unsigned long long)w->lock_n, (unsigned long long)w->lock_ns,
            (unsigned long long)w->wait_n, (unsigned long long)w->wait_ns);
    json_sites(out, w->lsites, w->nl, top);
    fprintf(out, "]},\"gc\":{\"recorded\":%s,\"flag\":\"--gc\",\"collections\":%llu,\"pauseNs\":%llu,"
                 "\"maxPauseNs\":%llu,\"pausedShare\":%.6f,\"byGeneration\":[%llu,%llu,%llu]},",
            w->gc ? "true" : "false", (unsigned long long)w->gcs, (unsigned long long)w->pause_ns,
            (unsigned long long)w->max_pause_ns, span ? (double)w->pause_ns / (double)span : 0.0,
            (unsigned long long)w->gc_by_gen[0], (unsigned long long)w->gc_by_gen[1],
            (unsigned long long)w->gc_by_gen[2]);
    fprintf(out, "\"threadpool\":{\"recorded\":%s,\"flag\":\"--threadpool\",\"starvation\":%llu},",
            w->threadpool ? "true" : "false", (unsigned long long)w->starved);
    fprintf(out, "\"blocked\":{\"recorded\":%s,\"flag\":\"--sample=wall\",\"waitingNs\":%llu,\"sampledNs\":%llu,"
                 "\"nativeThreadsNs\":%llu,\"countersThreadNs\":%llu,\"top\":[",
            w->wall ? "true" : "false", (unsigned long long)w->blocked_ns, (unsigned long long)w->sampled_ns,
            (unsigned long long)w->native_ns, (unsigned long long)w->counters_ns);
    json_sites(out, w->bsites, w->nb, top);
    fputs("]}}\n", out);
}

static void text_sites(FILE *out, const char *title, const site *t, size_t n, uint64_t all, unsigned top) {
    if (!n)
        return;
    fprintf(out, "\n%s\n", title);
    char a[32];
    for (size_t i = 0; i < n && i < top; i++)
        fprintf(out, "  %6.2f%% %10s  %s\n", report_pct(t[i].ns, all), report_fmt_ns(t[i].ns, a), t[i].text);
}

static void write_text(const waits *w, const char *path, unsigned top, FILE *out) {
    uint64_t span = w->last_ns - w->first_ns;
    char a[32], b[32];
    fprintf(out, "%s: where the time waited went (%s recorded)\n", cli_short_path(path), report_fmt_ns(span, a));
    char missing[512] = "";
    if (w->locks) {
        fprintf(out, "  lock contention        %9s wait%-4s %10s\n", CLI_COUNT(w->lock_n), CLI_PLURAL(w->lock_n),
                report_fmt_ns(w->lock_ns, a));
        if (w->wait_n)
            fprintf(out, "  WaitHandle waits       %9s wait%-4s %10s\n", CLI_COUNT(w->wait_n), CLI_PLURAL(w->wait_n),
                    report_fmt_ns(w->wait_ns, a));
    } else {
        strcat(missing, "  lock contention: not recorded (dnprof run --locks)\n");
    }
    if (w->gc)
        fprintf(out, "  GC pauses              %9s GC%-6s %10s  %.2f%% of the time paused, longest %s\n",
                CLI_COUNT(w->gcs), w->gcs == 1 ? "" : "s", report_fmt_ns(w->pause_ns, a),
                report_pct(w->pause_ns, span), report_fmt_ns(w->max_pause_ns, b));
    else
        strcat(missing, "  GC pauses: not recorded (dnprof run --gc)\n");
    if (w->threadpool)
        fprintf(out, "  thread-pool starvation %9s thread injection%s\n", CLI_COUNT(w->starved), CLI_PLURAL(w->starved));
    else
        strcat(missing, "  thread-pool starvation: not recorded (dnprof run --threadpool)\n");
    if (w->wall)
        fprintf(out, "  blocked (wall samples) %29s  %.1f%% of the threads' sampled time\n",
                report_fmt_ns(w->blocked_ns, a), report_pct(w->blocked_ns, w->sampled_ns));
    else
        strcat(missing, "  blocked threads by stack: not recorded (dnprof run --sample=wall)\n");
    if (missing[0])
        fprintf(out, "not in this trace:\n%s", missing);
    text_sites(out, "lock contention by waiting stack (innermost first; dnprof report --locks has more):", w->lsites,
               w->nl, w->lock_ns, top);
    text_sites(out, "blocked time by stack (wall-clock samples in [waiting], the managed frames above it):",
               w->bsites, w->nb, w->blocked_ns, top);
    if (w->native_ns)
        fprintf(out, "  (and %s on the runtime's own threads, with no managed frame: its GC, JIT and event threads, "
                     "not counted above)\n",
                report_fmt_ns(w->native_ns, a));
    if (w->counters_ns)
        fprintf(out, "  (and %s on the thread that polls the runtime's EventCounters, which --threadpool's pool "
                     "counters start: not counted above)\n",
                report_fmt_ns(w->counters_ns, a));
}

int report_waits(const char *path, int json, unsigned top, FILE *out) {
    waits *w = calloc(1, sizeof *w);
    if (!w)
        return error("out of memory"), 1;
    int rc = read_events(path, w);
    if (rc == 0)
        rc = read_samples(path, w);
    if (rc == 0) {
        qsort(w->lsites, w->nl, sizeof *w->lsites, by_ns);
        qsort(w->bsites, w->nb, sizeof *w->bsites, by_ns);
        if (json)
            write_json(w, path, top, out);
        else
            write_text(w, path, top, out);
    }
    free(w);
    return rc || ferror(out) ? 1 : 0;
}
