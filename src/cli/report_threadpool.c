/* report_threadpool.c: thread-pool starvation (dnprof run/attach --threadpool;
 * docs/waits.md): the runtime's changes of the pool's worker count, those it
 * made for want of threads (the pool starved, or its threads blocked on tasks)
 * listed with their time, and, when the
 * trace has wall-clock samples (--sample=wall), the stacks the pool's threads
 * spent their sampled time in, blocked or not (the samples of the whole
 * recording: a sample tree has no time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "export.h"
#include "lock_site.h"
#include "idmap.h"
#include "prettyname.h"
#include "report.h"
#include "trace_reader.h"
#include "settings.h"
#include "dnp_vec.h"

#define MAX_STACKS 256
#define STACK_FRAMES 8

static const char *const reasons[] = {"warm-up", "initializing", "random move", "climbing move", "change point",
                                      "stabilizing", "starvation", "thread timed out", "cooperative blocking"};
#define NREASONS (sizeof reasons / sizeof reasons[0])

typedef struct tp_adjust {
    uint64_t time, threads, reason, added;
} tp_adjust;

typedef struct tp_stack {
    uint64_t func[STACK_FRAMES], name[STACK_FRAMES]; /* managed frames, leaf first */
    unsigned n;
    uint64_t ns;
} tp_stack;

/* A node of a pool thread's sampled tree (SampleNode), for the samples taken
 * around the injections: its latest cumulative self samples and when. */
typedef struct tp_node {
    uint64_t tid, node, parent, func, name;
    uint64_t last_t, last_v;
    int64_t around; /* self samples in the windows before each injection */
} tp_node;

typedef struct tp_data {
    tp_adjust *a;
    size_t n, cap;
    uint64_t (*win)[2]; /* the seconds before the injections, overlaps merged */
    size_t nwin;
    report_tp_tally tally;
    uint64_t origin, major, by_reason[NREASONS + 1];
    int configured;
    tp_stack stacks[MAX_STACKS];
    size_t nstacks, pool_threads;
    uint64_t pool_ns;
    int around;         /* the stacks are those of the windows before the injections */
    /* ThreadPoolCounters, once a second: the pool's size and queue */
    report_tp_queue q;
    uint64_t threads_min, threads_max, threads_last, queue_max;
} tp_data;

#define WINDOW_NS 1000000000ull /* "around then": the second before each injection */
#define TIMES_SHOWN 20           /* injections listed in the text */

void report_tp_queue_add(report_tp_queue *q, uint64_t queue, uint64_t completed) {
    q->seconds++;
    q->queued += queue > 0;
    q->queue_sum += queue;
    q->completed += completed; /* each second's */
}

uint64_t report_tp_wait_ns(const report_tp_queue *q) {
    return q->completed ? (uint64_t)((double)q->queue_sum / (double)q->completed * 1e9) : UINT64_MAX;
}

int report_tp_saturated(const report_tp_queue *q) {
    return q->seconds && q->queued >= 2 && 2 * q->queued >= q->seconds && report_tp_wait_ns(q) >= REPORT_TP_SATURATED_NS;
}

uint64_t report_tp_count(report_tp_tally *t, uint64_t reason, uint64_t workers) {
    uint64_t before = t->workers;
    t->workers = workers;
    if (reason == REPORT_TP_STARVATION) {
        t->starved++;
        return before && workers > before ? workers - before : 1;
    }
    if (reason != REPORT_TP_BLOCKING || !before || workers <= before)
        return 0; /* hill climbing, or the count going back down as blocked threads return */
    t->blocking_raises++;
    t->blocking_peak = workers > t->blocking_peak ? workers : t->blocking_peak;
    return workers - before;
}

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    tp_data *d = ctx;
    (void)t;
    if (e->kind == DNP_EV_ThreadPoolConfig) {
        d->configured = 1;
        d->major = e->v[DNP_V(ThreadPoolConfig, runtimeMajor)];
    } else if (e->kind == DNP_EV_ThreadPoolAdjustment) {
        uint64_t reason = e->v[DNP_V(ThreadPoolAdjustment, reason)];
        uint64_t workers = e->v[DNP_V(ThreadPoolAdjustment, newWorkerThreads)];
        d->by_reason[reason < NREASONS ? reason : NREASONS]++;
        uint64_t added = report_tp_count(&d->tally, reason, workers);
        if (!added)
            return 0;
        if (DNP_VEC_RESERVE(d->a, d->cap, d->n + 1, 64) != 0)
            return -1;
        d->a[d->n++] = (tp_adjust){e->time_ns, workers, reason, added};
    } else if (e->kind == DNP_EV_ThreadPoolCounters) {
        uint64_t th = e->v[DNP_V(ThreadPoolCounters, threads)], q = e->v[DNP_V(ThreadPoolCounters, queue)];
        d->threads_min = !d->q.seconds || th < d->threads_min ? th : d->threads_min;
        d->threads_max = th > d->threads_max ? th : d->threads_max;
        d->threads_last = th;
        d->queue_max = q > d->queue_max ? q : d->queue_max;
        report_tp_queue_add(&d->q, q, e->v[DNP_V(ThreadPoolCounters, completed)]);
    }
    return 0;
}

/* The pool's size and queue as the runtime's counters said them, once a second. */
static void print_counters(const tp_data *d, int json, FILE *out) {
    if (json && !d->q.seconds) {
        fputs(",\"counters\":null", out);
    } else if (json) {
        fprintf(out, ",\"counters\":{\"seconds\":%llu,\"threadsMin\":%llu,\"threadsMax\":%llu,\"threadsLast\":%llu,"
                "\"queueMax\":%llu,\"queueMean\":%.1f,\"secondsQueued\":%llu,\"completed\":%llu,\"queueWaitNs\":",
                (unsigned long long)d->q.seconds, (unsigned long long)d->threads_min,
                (unsigned long long)d->threads_max, (unsigned long long)d->threads_last,
                (unsigned long long)d->queue_max, (double)d->q.queue_sum / (double)d->q.seconds,
                (unsigned long long)d->q.queued, (unsigned long long)d->q.completed);
        uint64_t wait = report_tp_wait_ns(&d->q);
        if (wait == UINT64_MAX)
            fputs("null", out);
        else
            fprintf(out, "%llu", (unsigned long long)wait);
        fprintf(out, ",\"saturated\":%s}",
                report_tp_saturated(&d->q) ? "true" : "false");
    } else if (d->q.seconds) {
        fprintf(out, "the pool, once a second for %llu s (the runtime's counters): %llu to %llu threads (%llu at the "
                     "end); work waiting in its queue in %llu of those seconds, %llu item%s at most, %.1f on average; "
                     "%llu item%s completed\n",
                (unsigned long long)d->q.seconds, (unsigned long long)d->threads_min,
                (unsigned long long)d->threads_max, (unsigned long long)d->threads_last,
                (unsigned long long)d->q.queued, (unsigned long long)d->queue_max, CLI_PLURAL(d->queue_max),
                (double)d->q.queue_sum / (double)d->q.seconds, (unsigned long long)d->q.completed,
                CLI_PLURAL(d->q.completed));
    }
}

static int read_events(const char *path, tp_data *d) {
    dnp_trace_stream *s = NULL;
    if (report_read_events(path, feed, d, &s, 0) != 0)
        return 1;
    d->origin = dnp_trace_stream_origin(s);
    dnp_trace_stream_close(s);
    return 0;
}

static int pool_thread(const char *name) {
    return name && (strstr(name, "TP Worker") || strstr(name, "ThreadPool") || strstr(name, "Thread Pool"));
}

/* A path (frames leaf first) and its weight into the table of stacks. */
static void add_stack(tp_data *d, const tp_stack *k, uint64_t ns) {
    d->pool_ns += ns;
    size_t j = 0;
    while (j < d->nstacks && (d->stacks[j].n != k->n || memcmp(d->stacks[j].func, k->func, sizeof k->func) != 0 ||
                              memcmp(d->stacks[j].name, k->name, sizeof k->name) != 0))
        j++;
    if (j == d->nstacks) {
        if (d->nstacks == MAX_STACKS)
            return;
        d->stacks[d->nstacks++] = *k;
        d->stacks[j].ns = 0;
    }
    d->stacks[j].ns += ns;
}

/* Each node of a pool thread's tree with self time (the whole recording). */
static void add_leaves(tp_data *d, const dnp_ct_tree *tr) {
    for (uint32_t i = 1; i < tr->nnodes; i++) {
        if (!tr->nodes[i].self_ns)
            continue;
        tp_stack k;
        memset(&k, 0, sizeof k);
        for (int native = 0; native < 2 && !k.n; native++) /* managed frames (the native ones below are
                                                               the wait itself); else what there is */
            for (uint32_t at = i; at && k.n < STACK_FRAMES; at = tr->nodes[at].parent)
                if (tr->nodes[at].func || native)
                    k.func[k.n] = tr->nodes[at].func, k.name[k.n++] = tr->nodes[at].name;
        add_stack(d, &k, tr->nodes[i].self_ns);
    }
}

/* Moves a node's cumulative count from (last_t, last_v) to (t, v): a window
 * (S, E] counts v(<= E) - v(<= S), the latest snapshot at or before each end
 * standing for it. */
static void node_move(const tp_data *d, tp_node *n, uint64_t t, uint64_t v) {
    for (size_t k = 0; k < d->nwin; k++) {
        uint64_t start = d->win[k][0], end = d->win[k][1];
        if (start >= n->last_t && start < t)
            n->around -= (int64_t)n->last_v;
        if (end >= n->last_t && end < t)
            n->around += (int64_t)n->last_v;
    }
    n->last_t = t, n->last_v = v;
}

static int is_pool_tid(const dnp_calltree *ct, uint64_t tid) {
    for (size_t i = 0; i < ct->nthreads; i++)
        if (ct->threads[i].os_tid == tid)
            return pool_thread(ct->threads[i].name);
    return 0;
}

/* The pool threads' self samples in the second before each injection, from
 * the SampleNode snapshots (cumulative, written every half second or so). */
static int around_injections(const char *path, tp_data *d, const dnp_calltree *ct) {
    /* the windows (T - WINDOW_NS, T], those that overlap made one: a sample
     * counts once however many injections came in the second after it */
    d->win = malloc((d->n ? d->n : 1) * sizeof *d->win);
    if (!d->win)
        return -1;
    for (size_t k = 0; k < d->n; k++) {
        uint64_t end = d->a[k].time, start = end > WINDOW_NS ? end - WINDOW_NS : 0;
        if (d->nwin && start <= d->win[d->nwin - 1][1] && end >= d->win[d->nwin - 1][0])
            d->win[d->nwin - 1][1] = end > d->win[d->nwin - 1][1] ? end : d->win[d->nwin - 1][1];
        else
            d->win[d->nwin][0] = start, d->win[d->nwin++][1] = end;
    }
    char err[512];
    dnp_trace_stream *s = NULL;
    if (dnp_trace_stream_open(path, &s, err, sizeof err) != 0)
        return -1;
    tp_node *nodes = NULL;
    size_t n = 0, cap = 0;
    dnp_idmap map = {0};
    dnp_trace_event e;
    int got, rc = 0;
    while (rc == 0 && (got = dnp_trace_stream_next(s, &e)) > 0) {
#define F(field) e.v[DNP_V(SampleNode, field)]
        if (e.kind != DNP_EV_SampleNode || !is_pool_tid(ct, F(osThreadId)))
            continue;
        uint32_t i;
        if (!dnp_idmap_get(&map, F(osThreadId), F(node), &i)) {
            if (DNP_VEC_RESERVE(nodes, cap, n + 1, 1024) != 0) {
                rc = -1;
                break;
            }
            i = (uint32_t)n++;
            nodes[i] = (tp_node){F(osThreadId), F(node), F(parent), F(functionId) & ~(uint64_t)7, /* no async marks */
                                 e.v[DNP_VNAME(SampleNode, functionId)], 0, 0, 0};
            if (dnp_idmap_put(&map, F(osThreadId), F(node), i) != 0)
                rc = -1;
        }
        node_move(d, &nodes[i], e.time_ns, F(selfSamples));
#undef F
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        node_move(d, &nodes[i], UINT64_MAX, nodes[i].last_v);
        if (nodes[i].around <= 0)
            continue;
        tp_stack k;
        memset(&k, 0, sizeof k);
        for (int native = 0; native < 2 && !k.n; native++) { /* managed frames; else what there is */
            uint32_t at = (uint32_t)i;
            for (int hops = 0; hops < 4096 && k.n < STACK_FRAMES; hops++) {
                if (nodes[at].func || native)
                    k.func[k.n] = nodes[at].func, k.name[k.n++] = nodes[at].name;
                if (!nodes[at].parent || !dnp_idmap_get(&map, nodes[at].tid, nodes[at].parent, &at))
                    break;
            }
        }
        add_stack(d, &k, (uint64_t)nodes[i].around * (ct->sample_period_ns ? ct->sample_period_ns : 10000000));
    }
    free(nodes);
    dnp_idmap_release(&map);
    dnp_trace_stream_close(s);
    return rc || got < 0 ? -1 : 0;
}

static int by_ns(const void *x, const void *y) {
    const tp_stack *a = x, *b = y;
    return (a->ns < b->ns) - (a->ns > b->ns);
}

/* Whether stack k is a pool thread waiting for work (lock_site.h: the pool's
 * own loop reached with no frame of the program's on the way). */
static int idle_stack(const tp_stack *k, const dnp_calltree *ct) {
    char text[8192], raw[1024];
    size_t len = 0;
    text[0] = 0;
    for (unsigned f = 0; f < k->n; f++) {
        int w = snprintf(text + len, sizeof text - len, "%s%s", f ? "\n" : "",
                         dnp_ct_raw_name(ct, k->func[f], k->name[f], raw, sizeof raw));
        if (w < 0 || (size_t)w >= sizeof text - len)
            break;
        len += (size_t)w;
    }
    return lock_runtime_thread(text);
}

static void print_stacks(const tp_data *d, const dnp_calltree *ct, unsigned top, int json, FILE *out) {
    for (size_t i = 0; i < d->nstacks && i < top; i++) {
        const tp_stack *k = &d->stacks[i];
        int idle = idle_stack(k, ct);
        if (json)
            fprintf(out, "%s{\"sampledNs\":%llu,\"share\":%.4f,\"idle\":%s,\"stack\":[", i ? ",\n" : "\n",
                    (unsigned long long)k->ns, d->pool_ns ? (double)k->ns / (double)d->pool_ns : 0.0,
                    idle ? "true" : "false");
        else {
            char t[32];
            fprintf(out, "\n%6.2f%% %s sampled%s\n", d->pool_ns ? 100.0 * (double)k->ns / (double)d->pool_ns : 0.0,
                    report_fmt_ns(k->ns, t), idle ? ", idle: the thread waited for work" : "");
        }
        for (unsigned f = 0; f < k->n; f++) {
            char raw[2048], name[2048];
            dnp_pretty_name(dnp_ct_raw_name(ct, k->func[f], k->name[f], raw, sizeof raw), name, sizeof name);
            if (json) {
                fputs(f ? "," : "", out);
                dnp_export_json_str(out, name, 0);
            } else {
                fprintf(out, "        %s\n", name);
            }
        }
        if (json)
            fputs("]}", out);
    }
}

/* The pool threads' sampled stacks, or a line saying what would record them. */
static int stacks(const char *path, tp_data *d, unsigned top, int json, FILE *out) {
    calls_input in;
    if (calls_open(path, 0, &in) != 0)
        return 1;
    const dnp_calltree *ct = in.ct;
    int wall = ct->sample_mode == DNP_SAMPLE_WALL;
    for (size_t i = 0; wall && i < ct->nthreads; i++)
        d->pool_threads += pool_thread(ct->threads[i].name);
    if (wall && d->n && around_injections(path, d, ct) == 0 && d->nstacks)
        d->around = 1;
    if (!d->around)
        d->nstacks = 0, d->pool_ns = 0;
    for (size_t i = 0; wall && !d->around && i < ct->nthreads; i++)
        if (pool_thread(ct->threads[i].name))
            add_leaves(d, &ct->threads[i]);
    qsort(d->stacks, d->nstacks, sizeof *d->stacks, by_ns);
    if (json) {
        fprintf(out, ",\"wallSamples\":%s,\"poolThreads\":%zu,\"stacksAround\":\"%s\",\"stacks\":[",
                wall ? "true" : "false", d->pool_threads, d->around ? "starvation" : "recording");
        print_stacks(d, ct, top, 1, out);
        fputs("]", out);
    } else if (!wall) {
        fputs("\nwhere the pool's threads were blocked: not recorded; record wall-clock samples too "
              "(dnprof run --threadpool --sample=wall)\n", out);
    } else if (!d->nstacks) {
        fputs("\nno wall-clock samples of the pool's threads (.NET TP Worker) in this trace\n", out);
    } else {
        fprintf(out, "\nwhere the pool's %zu threads spent their sampled time (wall clock, %s; "
                     "innermost managed frame first):\n", d->pool_threads,
                d->around ? "in the second before each injection" : "the whole recording");
        print_stacks(d, ct, top, 0, out);
    }
    calls_close(&in);
    return 0;
}

/* The injections as JSON: the starvation ones ("starved", as before), those
 * for blocked threads ("blockedOnTasks"), the counts by reason. */
static void json_injections(const tp_data *d, FILE *out) {
    fprintf(out, ",\"runtimeMajor\":%llu,\"starvation\":%llu,\"blockingRaises\":%llu,\"blockingPeakWorkers\":%llu,"
                 "\"adjustments\":{",
            (unsigned long long)d->major, (unsigned long long)d->tally.starved,
            (unsigned long long)d->tally.blocking_raises, (unsigned long long)d->tally.blocking_peak);
    for (size_t r = 0; r <= NREASONS; r++)
        fprintf(out, "%s\"%s\":%llu", r ? "," : "", r < NREASONS ? reasons[r] : "other",
                (unsigned long long)d->by_reason[r]);
    for (int blocking = 0; blocking < 2; blocking++) {
        fputs(blocking ? "],\"blockedOnTasks\":[" : "},\"starved\":[", out);
        int first = 1;
        for (size_t i = 0; i < d->n; i++) {
            if ((d->a[i].reason == REPORT_TP_BLOCKING) != blocking)
                continue;
            fprintf(out, "%s{\"timeNs\":%llu,\"newWorkerThreads\":%llu,\"added\":%llu}", first ? "" : ",",
                    (unsigned long long)(d->a[i].time - d->origin), (unsigned long long)d->a[i].threads,
                    (unsigned long long)d->a[i].added);
            first = 0;
        }
    }
    fputs("]", out);
}

#define QUEUE_WAIT_HOW " (the queue's mean length over the items completed per second)"

/* The mean wait of an item in the queue, as text ("none completed"). */
static const char *queue_wait_text(const tp_data *d, char *buf, size_t cap) {
    uint64_t ns = report_tp_wait_ns(&d->q);
    if (ns == UINT64_MAX)
        return "unbounded: none completed";
    char t[32];
    snprintf(buf, cap, "about %s", report_fmt_ns(ns, t));
    return buf;
}

/* The injections as text: how many of each kind, what the second kind means,
 * then each with its time (the first TIMES_SHOWN). */
static void text_injections(const char *path, const tp_data *d, FILE *out) {
    const report_tp_tally *t = &d->tally;
    char wait[64];
    uint64_t all = 0;
    for (size_t r = 0; r <= NREASONS; r++)
        all += d->by_reason[r];
    fprintf(out, "%s: %s thread injection%s because the pool was starved", cli_short_path(path), CLI_COUNT(t->starved),
            CLI_PLURAL(t->starved));
    if (t->blocking_raises)
        fprintf(out, "; %s raise%s of the count for its threads blocked on tasks, to %llu workers at most",
                CLI_COUNT(t->blocking_raises), CLI_PLURAL(t->blocking_raises), (unsigned long long)t->blocking_peak);
    fprintf(out, " (%s change%s of the worker count in all)\n", CLI_COUNT(all), CLI_PLURAL(all));
    if (t->blocking_raises)
        fputs("blocked on tasks: pool threads waited in a task's Wait(), Result or GetAwaiter().GetResult() (sync over "
              "async), and the pool added a thread for each (cooperative blocking), beyond a few only after a delay "
              "of up to 250 ms: work queued behind them waited meanwhile; awaiting the task instead frees the "
              "thread\n",
              out);
    else if (!t->starved && report_tp_saturated(&d->q))
        fprintf(out, "no starvation by the runtime's measure (it injects a thread only when no work item has been "
                     "taken from the queue for a while), but work waited in the pool's queue in %llu of %llu "
                     "seconds, %llu item%s at most, %s an item on average%s: its threads were all busy (a thread "
                     "blocked in a synchronous wait or Thread.Sleep holds its place in the pool)\n",
                (unsigned long long)d->q.queued, (unsigned long long)d->q.seconds, (unsigned long long)d->queue_max,
                CLI_PLURAL(d->queue_max), queue_wait_text(d, wait, sizeof wait), QUEUE_WAIT_HOW);
    else if (!t->starved && d->q.queued)
        fprintf(out, "no starvation: the pool never had to inject threads for want of them; work waited in its "
                     "queue only briefly: %s an item on average%s\n",
                queue_wait_text(d, wait, sizeof wait), QUEUE_WAIT_HOW);
    else if (!t->starved)
        fputs("no starvation: the pool never had to inject threads for want of them\n", out);
    for (size_t i = 0; i < d->n && i < TIMES_SHOWN; i++) {
        if (d->a[i].reason == REPORT_TP_BLOCKING)
            fprintf(out, "  at %8.3f s: +%llu for threads blocked on tasks, workers now %llu\n",
                    (double)(d->a[i].time - d->origin) / 1e9, (unsigned long long)d->a[i].added,
                    (unsigned long long)d->a[i].threads);
        else
            fprintf(out, "  at %8.3f s: starved, workers now %llu\n", (double)(d->a[i].time - d->origin) / 1e9,
                    (unsigned long long)d->a[i].threads);
    }
    if (d->n > TIMES_SHOWN)
        fprintf(out, "  ... and %zu more (--json lists them all)\n", d->n - TIMES_SHOWN);
}

int report_threadpool(const char *path, int json, unsigned top, FILE *out) {
    tp_data *d = calloc(1, sizeof *d);
    if (!d)
        return error("out of memory"), 1;
    int rc = read_events(path, d);
    if (rc == 0 && !d->configured) {
        error("%s: this trace has no thread-pool events: record them with dnprof run --threadpool "
              "(or dnprof attach PID --threadpool)", path);
        rc = 1;
    }
    if (rc == 0 && json) {
        fputs("{\"trace\":", out);
        dnp_export_json_str(out, path, 0);
        json_injections(d, out);
        print_counters(d, 1, out);
    } else if (rc == 0) {
        text_injections(path, d, out);
        print_counters(d, 0, out);
    }
    if (rc == 0)
        rc = stacks(path, d, top, json, out);
    if (rc == 0 && json)
        fputs("}\n", out);
    free(d->a);
    free(d->win);
    free(d);
    return rc || ferror(out) ? 1 : 0;
}
