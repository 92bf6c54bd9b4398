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
#include "ct_text.h"
#include "cli.h"
#include "dnp_text.h"
#include "export.h"
#include "lock_site.h"
#include "prettyname.h"
#include "report.h"
#include "settings.h"
#include "trace_reader.h"

#define MAX_SITES 512
#define FRAMES_SHOWN 3

typedef struct site {
    uint64_t key;   /* the hash of a LockSite's text (even), or of a blocked stack's frames (odd) */
    uint64_t ns, count;
    char text[512]; /* frames, innermost first, " < " between */
} site;

typedef struct waits {
    int locks, gc, threadpool, wall;       /* recorded: the config event was there */
    uint64_t lock_mode, lock_major;        /* LockConfig's: 2 with the waits (--locks=waits), the runtime */
    int probe_sites;                       /* a LockProbeBlocked: Lock's LockSites are its probe's calls */
    report_tp_queue pool_queue;            /* ThreadPoolCounters: whether and how long work waited in the queue */
    int attached;                          /* recorded by dnprof attach: the program's pid */
    uint64_t lock_n, lock_ns, wait_n, wait_ns;
    uint64_t slock_n, slock_ns; /* of lock_n, lock_ns: System.Threading.Lock's */
    uint64_t gcs, pause_ns, max_pause_ns, gc_by_gen[3];
    report_tp_tally pool; /* the threads the pool added for want of them */
    uint64_t first_ns, last_ns;
    uint64_t blocked_ns, sampled_ns; /* the program's threads: a managed frame above [waiting] */
    uint64_t native_ns;              /* [waiting] with no managed frame: the runtime's own threads */
    uint64_t house_blocked_ns;       /* [waiting] in the runtime's service threads (lock_site.h) */
    uint64_t gc_stopped_ns;          /* [GC pause]: threads a collection held stopped */
    uint64_t counters_ns;            /* of which the EventCounters thread's (--threadpool's counters) */
    uint64_t house_ns;               /* --locks=waits of the runtime's service threads (lock_site.h) */
    site lsites[MAX_SITES], wsites[MAX_SITES], bsites[MAX_SITES];
    size_t nl, nw, nb;
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

#define STACK_FRAMES 64 /* a blocked sample's frames looked at, innermost first */

/* Appends frame f[0..len) of a stack, pretty, to out (n so far), sep first when n. */
static size_t put_frame(char *out, size_t cap, size_t n, const char *sep, const char *f, size_t len) {
    char pretty[1024];
    int k = snprintf(out + n, cap - n, "%s%s", n ? sep : "", report_frame_name(f, len, pretty, sizeof pretty));
    return n + (k > 0 && (size_t)k < cap - n ? (size_t)k : 0);
}

/* "A\nB\nC\n..." (a stack string, innermost first) as the call that waited
 * and the frames from the one that made it (lock_site): "Task::Wait < Run <
 * Main" for a Task.Wait in Run, the framework's frames under Task::Wait not
 * shown; when the three are all the framework's (a blocking Socket.Receive),
 * the program's first frame further down after " < ... < ". */
static void stack_text(const char *stack, char *out, size_t cap) {
    size_t n = 0, len = 0;
    out[0] = 0;
    const char *site = lock_site(stack, &len), *from = site;
    for (const char *f = stack; f && f < site;) { /* the frame just above the site: the call it made */
        from = f;
        f = strchr(f, '\n');
        f = f ? f + 1 : NULL;
    }
    int own = 0;
    for (int f = 0; from && *from; f++) {
        len = strcspn(from, "\n");
        char raw[1024];
        snprintf(raw, sizeof raw, "%.*s", (int)(len < sizeof raw ? len : sizeof raw - 1), from);
        int user = !dnp_is_framework_name(raw);
        if (f < FRAMES_SHOWN || (user && !own)) {
            n = put_frame(out, cap, n, f < FRAMES_SHOWN ? " < " : " < ... < ", from, len);
            own |= user;
        }
        if (f >= FRAMES_SHOWN - 1 && own)
            break;
        from += len + (from[len] == '\n');
    }
}

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    waits *w = ctx;
    if (!w->first_ns)
        w->first_ns = e->time_ns;
    w->last_ns = e->time_ns;
    switch (e->kind) {
    case DNP_EV_LockConfig:
        w->locks = 1;
        w->lock_mode = e->v[DNP_V(LockConfig, mode)], w->lock_major = e->v[DNP_V(LockConfig, runtimeMajor)];
        break;
    case DNP_EV_InitializeForAttach: w->attached = dnp_trace_host_pid(t) ? (int)dnp_trace_host_pid(t) : 1; break;
    case DNP_EV_LockSite: {
        uint64_t kind = e->v[DNP_V(LockSite, kind)], count = e->v[DNP_V(LockSite, count)];
        uint64_t ns = e->v[DNP_V(LockSite, waitNs)], stack = e->v[DNP_V(LockSite, stack)];
        int wait = DNP_LOCK_IS_WAIT(kind);
        int cls = lock_classify(dnp_trace_string(t, stack), (unsigned)kind);
        if (cls == LOCK_HOUSE)
            w->house_ns += ns;
        if (cls != LOCK_OWN)
            break; /* as report --locks counts them (lock_site.h) */
        if (wait)
            w->wait_n += count, w->wait_ns += ns;
        else
            w->lock_n += count, w->lock_ns += ns;
        if (kind == DNP_LOCK_LOCK)
            w->slock_n += count, w->slock_ns += ns;
        char text[sizeof w->lsites[0].text];
        stack_text(dnp_trace_string(t, stack), text, sizeof text);
        uint64_t key = dnp_text_hash(text, strlen(text)) & ~1ull; /* stacks that read the same, added up */
        site *s = wait ? add_site(w->wsites, &w->nw, key, ns, count) : add_site(w->lsites, &w->nl, key, ns, count);
        if (s && !s->text[0])
            memcpy(s->text, text, sizeof text);
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
    case DNP_EV_LockProbeBlocked: w->probe_sites = 1; break;
    case DNP_EV_ThreadPoolConfig: w->threadpool = 1; break;
    case DNP_EV_ThreadPoolCounters: /* once a second: whether work waited in the queue */
        report_tp_queue_add(&w->pool_queue, e->v[DNP_V(ThreadPoolCounters, queue)],
                            e->v[DNP_V(ThreadPoolCounters, completed)]);
        break;
    case DNP_EV_ThreadPoolAdjustment:
        report_tp_count(&w->pool, e->v[DNP_V(ThreadPoolAdjustment, reason)],
                        e->v[DNP_V(ThreadPoolAdjustment, newWorkerThreads)]);
        break;
    default: break;
    }
    return 0;
}

/* System.Threading.Lock's contention as its slow path's probe timed it, where
 * it saw more than the runtime's events (report_locks.c says the same): read
 * again only from a 1.4 agent's trace, whose LockSites hold the events' waits
 * alone. */
static int read_events(const char *path, waits *w) {
    traced_lock l;
    if (report_read_events(path, feed, w, NULL, 0) != 0)
        return -1;
    if (!w->locks || w->probe_sites)
        return 0;
    if (traced_lock_read(path, &l) != 0)
        return -1;
    uint64_t n = w->slock_n, ns = w->slock_ns;
    traced_lock_merge(&l, &n, &ns);
    w->lock_n += n - w->slock_n, w->lock_ns += ns - w->slock_ns;
    return 0;
}

/* The wall-clock samples' [waiting] time, by the managed frames above it, as
 * the lock waits' (stack_text). A thread blocked with no managed frame above
 * it is one of the runtime's own (the GC's, the JIT's, EventPipe's), one whose
 * managed frames are the runtime's service threads (lock_runtime_thread: an idle
 * pool thread, the timer thread) waits for work: each counted apart. */
static void blocked_tree(waits *w, const dnp_calltree *ct, const dnp_ct_tree *tr) {
    for (uint32_t i = 1; i < tr->nnodes; i++) {
        const dnp_ct_node *nd = &tr->nodes[i];
        w->sampled_ns += nd->self_ns;
        const char *name = nd->func ? NULL : dnp_trace_string(ct->t, nd->name);
        if (nd->self_ns && name && !strcmp(name, "[GC pause]"))
            w->gc_stopped_ns += nd->self_ns;
        if (!nd->self_ns || !name || strcmp(name, "[waiting]") != 0)
            continue;
        char stack[8192], raw[1024];
        size_t len = 0;
        stack[0] = 0;
        for (uint32_t at = nd->parent, n = 0; at && n < STACK_FRAMES; at = tr->nodes[at].parent) {
            if (!tr->nodes[at].func)
                continue;
            const char *frame = dnp_ct_raw_name(ct, tr->nodes[at].func, tr->nodes[at].name, raw, sizeof raw);
            int k = snprintf(stack + len, sizeof stack - len, "%s%s", n++ ? "\n" : "", frame);
            if (k < 0 || (size_t)k >= sizeof stack - len)
                break;
            len += (size_t)k;
        }
        if (!len) {
            w->native_ns += nd->self_ns;
            continue;
        }
        if (lock_runtime_thread(stack)) {
            size_t n;
            const char *site = lock_site(stack, &n);
            w->house_blocked_ns += nd->self_ns;
            if (!strncmp(site, LOCK_COUNTERS_POLL, strlen(LOCK_COUNTERS_POLL))) /* --threadpool's own */
                w->counters_ns += nd->self_ns;
            continue;
        }
        w->blocked_ns += nd->self_ns;
        char text[sizeof w->bsites[0].text];
        stack_text(stack, text, sizeof text);
        site *s = add_site(w->bsites, &w->nb, dnp_text_hash(text, strlen(text)) | 1, nd->self_ns, 1);
        if (s && !s->text[0])
            memcpy(s->text, text, sizeof text);
    }
}

static int read_samples(const char *path, waits *w) {
    calls_input in;
    if (calls_open(path, 0, &in) != 0)
        return 1;
    w->wall = in.ct->sample_mode == DNP_SAMPLE_WALL;
    for (size_t i = 0; w->wall && i < in.ct->nthreads; i++)
        blocked_tree(w, in.ct, &in.ct->threads[i]);
    w->sampled_ns -= w->native_ns + w->house_blocked_ns;
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
                 "\"waitsRecorded\":%s,\"waitHandleWaits\":%llu,\"waitHandleNs\":%llu,\"runtimeThreadsNs\":%llu,"
                 "\"top\":[",
            w->locks ? "true" : "false", (unsigned long long)w->lock_n, (unsigned long long)w->lock_ns,
            w->locks && w->lock_mode >= 2 && w->lock_major >= 9 ? "true" : "false",
            (unsigned long long)w->wait_n, (unsigned long long)w->wait_ns, (unsigned long long)w->house_ns);
    json_sites(out, w->lsites, w->nl, top);
    fputs("],\"waitsTop\":[", out);
    json_sites(out, w->wsites, w->nw, top);
    fprintf(out, "]},\"gc\":{\"recorded\":%s,\"flag\":\"--gc\",\"collections\":%llu,\"pauseNs\":%llu,"
                 "\"maxPauseNs\":%llu,\"pausedShare\":%.6f,\"byGeneration\":[%llu,%llu,%llu]},",
            w->gc ? "true" : "false", (unsigned long long)w->gcs, (unsigned long long)w->pause_ns,
            (unsigned long long)w->max_pause_ns, span ? (double)w->pause_ns / (double)span : 0.0,
            (unsigned long long)w->gc_by_gen[0], (unsigned long long)w->gc_by_gen[1],
            (unsigned long long)w->gc_by_gen[2]);
    fprintf(out, "\"threadpool\":{\"recorded\":%s,\"flag\":\"--threadpool\",\"starvation\":%llu,"
                 "\"blockingRaises\":%llu,\"blockingPeakWorkers\":%llu,\"seconds\":%llu,\"secondsQueued\":%llu,"
                 "\"saturated\":%s},",
            w->threadpool ? "true" : "false", (unsigned long long)w->pool.starved,
            (unsigned long long)w->pool.blocking_raises, (unsigned long long)w->pool.blocking_peak,
            (unsigned long long)w->pool_queue.seconds, (unsigned long long)w->pool_queue.queued,
            report_tp_saturated(&w->pool_queue) ? "true" : "false");
    fprintf(out, "\"blocked\":{\"recorded\":%s,\"flag\":\"--sample=wall\",\"waitingNs\":%llu,\"sampledNs\":%llu,"
                 "\"nativeThreadsNs\":%llu,\"runtimeThreadsNs\":%llu,\"countersThreadNs\":%llu,"
                 "\"gcStoppedNs\":%llu,\"top\":[",
            w->wall ? "true" : "false", (unsigned long long)w->blocked_ns, (unsigned long long)w->sampled_ns,
            (unsigned long long)w->native_ns, (unsigned long long)w->house_blocked_ns, (unsigned long long)w->counters_ns,
            (unsigned long long)w->gc_stopped_ns);
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

/* A line of what the trace does not hold, with the flag that records it: by
 * attach when this trace was recorded by attach. */
static void not_recorded(char *missing, size_t cap, const char *what, const char *flag, int attached) {
    size_t n = strlen(missing);
    char cmd[48];
    snprintf(missing + n, cap - n, "  %s: not recorded (%s %s)\n", what,
             report_recording_cmd(attached, cmd, sizeof cmd), flag);
}

static void write_text(const waits *w, const char *path, unsigned top, FILE *out) {
    uint64_t span = w->last_ns - w->first_ns;
    char a[32], b[32];
    fprintf(out, "%s: where the time waited went (%s recorded)\n", cli_short_path(path), report_fmt_ns(span, a));
    char missing[1024] = "";
    if (w->locks) {
        fprintf(out, "  lock contention        %9s wait%-4s %10s\n", CLI_COUNT(w->lock_n), CLI_PLURAL(w->lock_n),
                report_fmt_ns(w->lock_ns, a));
        if (w->lock_mode >= 2 && w->lock_major >= 9)
            fprintf(out, "  other blocking waits   %9s wait%-4s %10s\n", CLI_COUNT(w->wait_n), CLI_PLURAL(w->wait_n),
                    report_fmt_ns(w->wait_ns, a));
        else if (w->lock_major >= 9)
            not_recorded(missing, sizeof missing, "other blocking waits (WaitHandle, Monitor.Wait)", "--locks=waits",
                         w->attached);
        else
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing),
                     "  other blocking waits (WaitHandle, Monitor.Wait): not recorded (the runtime reports them from "
                     ".NET 9 on; this one is .NET %llu)\n", (unsigned long long)w->lock_major);
    } else {
        not_recorded(missing, sizeof missing, "lock contention", "--locks", w->attached);
    }
    if (w->gc && !w->gcs)
        fprintf(out, "  GC pauses              %9s GCs    %10s  no collection while recording\n", "0", "0 ns");
    else if (w->gc)
        fprintf(out, "  GC pauses              %9s GC%-6s %10s  %.2f%% of the time paused, longest %s\n",
                CLI_COUNT(w->gcs), w->gcs == 1 ? "" : "s", report_fmt_ns(w->pause_ns, a),
                report_pct(w->pause_ns, span), report_fmt_ns(w->max_pause_ns, b));
    else
        not_recorded(missing, sizeof missing, "GC pauses", "--gc", w->attached);
    if (w->threadpool && w->pool.blocking_raises)
        fprintf(out, "  thread-pool starvation %9s thread injection%s; %s raise%s for threads blocked on tasks, to "
                     "%llu workers (sync over async: dnprof report --threadpool)\n",
                CLI_COUNT(w->pool.starved), CLI_PLURAL(w->pool.starved), CLI_COUNT(w->pool.blocking_raises),
                CLI_PLURAL(w->pool.blocking_raises), (unsigned long long)w->pool.blocking_peak);
    else if (w->threadpool && !w->pool.starved && report_tp_saturated(&w->pool_queue))
        fprintf(out, "  thread-pool starvation %9s thread injections; work waited in its queue in %llu of %llu s "
                     "(a saturated pool: dnprof report --threadpool)\n",
                "0", (unsigned long long)w->pool_queue.queued, (unsigned long long)w->pool_queue.seconds);
    else if (w->threadpool)
        fprintf(out, "  thread-pool starvation %9s thread injection%s\n", CLI_COUNT(w->pool.starved),
                CLI_PLURAL(w->pool.starved));
    else
        not_recorded(missing, sizeof missing, "thread-pool starvation", "--threadpool", w->attached);
    if (w->wall) {
        fprintf(out, "  blocked (wall samples) %29s  %.1f%% of the threads' sampled time\n",
                report_fmt_ns(w->blocked_ns, a), report_pct(w->blocked_ns, w->sampled_ns));
        if (w->gc_stopped_ns)
            fprintf(out, "  stopped by collections %29s  %.1f%% of the threads' sampled time: held by the GC where "
                         "they ran ([GC pause]), not blocked\n",
                    report_fmt_ns(w->gc_stopped_ns, a), report_pct(w->gc_stopped_ns, w->sampled_ns));
    } else {
        not_recorded(missing, sizeof missing, "blocked threads by stack", "--sample=wall", w->attached);
    }
    if (missing[0])
        fprintf(out, "not in this trace:\n%s", missing);
    text_sites(out, "lock contention by waiting stack (innermost first; dnprof report --locks has more):", w->lsites,
               w->nl, w->lock_ns, top);
    text_sites(out, "other blocking waits (WaitHandle, Monitor.Wait) by waiting stack:", w->wsites, w->nw, w->wait_ns,
               top);
    if (w->house_ns)
        fprintf(out, "  (and %s on " LOCK_RUNTIME_THREADS_TEXT ": not counted above)\n",
                report_fmt_ns(w->house_ns, a));
    text_sites(out, "blocked time by stack (wall-clock samples in [waiting], the managed frames above it):",
               w->bsites, w->nb, w->blocked_ns, top);
    if (w->native_ns)
        fprintf(out, "  (and %s on the runtime's own threads, with no managed frame: its GC, JIT and event threads, "
                     "not counted above)\n",
                report_fmt_ns(w->native_ns, a));
    if (w->house_blocked_ns)
        fprintf(out, "  (and %s on " LOCK_RUNTIME_THREADS_TEXT ": not counted above)\n",
                report_fmt_ns(w->house_blocked_ns, a));
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
        qsort(w->wsites, w->nw, sizeof *w->wsites, by_ns);
        qsort(w->bsites, w->nb, sizeof *w->bsites, by_ns);
        if (json)
            write_json(w, path, top, out);
        else
            write_text(w, path, top, out);
    }
    free(w);
    return rc || ferror(out) ? 1 : 0;
}
