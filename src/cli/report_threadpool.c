/* report_threadpool.c: thread-pool starvation (dnprof run/attach --threadpool;
 * docs/waits.md): the runtime's changes of the pool's worker count, those it
 * made because the pool was starved listed with their time, and, when the
 * trace has wall-clock samples (--sample=wall), the stacks the pool's threads
 * spent their sampled time in, blocked or not (the samples of the whole
 * recording: a sample tree has no time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "export.h"
#include "prettyname.h"
#include "report.h"
#include "trace_reader.h"

#define REASON_STARVATION 6u
#define MAX_STACKS 256
#define STACK_FRAMES 8

static const char *const reasons[] = {"warm-up", "initializing", "random move", "climbing move", "change point",
                                      "stabilizing", "starvation", "thread timed out", "cooperative blocking"};
#define NREASONS (sizeof reasons / sizeof reasons[0])

typedef struct tp_adjust {
    uint64_t time, threads, reason, milli;
} tp_adjust;

typedef struct tp_stack {
    uint64_t leaf[STACK_FRAMES]; /* frame keys, leaf first */
    unsigned n;
    uint32_t tree, node;         /* one node with this path, for its names */
    uint64_t ns;
} tp_stack;

typedef struct tp_data {
    tp_adjust *a;
    size_t n, cap, starved;
    uint64_t origin, major, by_reason[NREASONS + 1];
    int configured;
    tp_stack stacks[MAX_STACKS];
    size_t nstacks, pool_threads;
    uint64_t pool_ns;
} tp_data;

static int read_events(const char *path, tp_data *d) {
    char err[512];
    dnp_trace_stream *s = NULL;
    if (dnp_trace_stream_open(path, &s, err, sizeof err) != 0)
        return error("%s", err), 1;
    dnp_trace_event e;
    int got;
    while ((got = dnp_trace_stream_next(s, &e)) > 0) {
        if (!d->origin)
            d->origin = dnp_trace_stream_origin(s);
        if (e.kind == DNP_EV_ThreadPoolConfig) {
            d->configured = 1;
            d->major = e.v[0];
        } else if (e.kind == DNP_EV_ThreadPoolAdjustment) {
            d->by_reason[e.v[1] < NREASONS ? e.v[1] : NREASONS]++;
            if (e.v[1] != REASON_STARVATION)
                continue;
            if (d->n == d->cap) {
                size_t c = d->cap ? d->cap * 2 : 64;
                tp_adjust *a = realloc(d->a, c * sizeof *a);
                if (!a)
                    return dnp_trace_stream_close(s), error("out of memory"), 1;
                d->a = a, d->cap = c;
            }
            d->a[d->n++] = (tp_adjust){e.time_ns, e.v[0], e.v[1], e.v[2]};
            d->starved++;
        }
    }
    int rc = got < 0 ? error("%s: %s", path, dnp_trace_stream_error(s)), 1 : 0;
    dnp_trace_stream_close(s);
    return rc;
}

static int pool_thread(const char *name) {
    return name && (strstr(name, "TP Worker") || strstr(name, "ThreadPool") || strstr(name, "Thread Pool"));
}

/* Each node of a pool thread's tree with self time: its path (leaf first) into the table. */
static void add_leaves(tp_data *d, const dnp_ct_tree *tr, uint32_t tree) {
    for (uint32_t i = 1; i < tr->nnodes; i++) {
        const dnp_ct_node *n = &tr->nodes[i];
        if (!n->self_ns)
            continue;
        tp_stack k;
        memset(&k, 0, sizeof k);
        for (uint32_t at = i; at && k.n < STACK_FRAMES; at = tr->nodes[at].parent)
            if (tr->nodes[at].func) /* managed frames: the native ones below are the wait itself */
                k.leaf[k.n++] = dnp_ct_frame_key(tr->nodes[at].func, tr->nodes[at].name);
        d->pool_ns += n->self_ns;
        size_t j = 0;
        while (j < d->nstacks && (d->stacks[j].n != k.n || memcmp(d->stacks[j].leaf, k.leaf, sizeof k.leaf) != 0))
            j++;
        if (j == d->nstacks) {
            if (d->nstacks == MAX_STACKS)
                continue;
            k.tree = tree, k.node = i;
            d->stacks[d->nstacks++] = k;
        }
        d->stacks[j].ns += n->self_ns;
    }
}

static int by_ns(const void *x, const void *y) {
    const tp_stack *a = x, *b = y;
    return (a->ns < b->ns) - (a->ns > b->ns);
}

static void frame_name(const dnp_calltree *ct, const dnp_ct_node *n, char *out, size_t cap) {
    char raw[2048];
    const char *r = dnp_ct_raw_name(ct, n->func, n->name, raw, sizeof raw);
    dnp_pretty_name(r, out, cap);
}

static void print_stacks(const tp_data *d, const dnp_calltree *ct, unsigned top, int json, FILE *out) {
    for (size_t i = 0; i < d->nstacks && i < top; i++) {
        const tp_stack *k = &d->stacks[i];
        const dnp_ct_tree *tr = &ct->threads[k->tree];
        if (json)
            fprintf(out, "%s{\"sampledNs\":%llu,\"share\":%.4f,\"stack\":[", i ? ",\n" : "\n",
                    (unsigned long long)k->ns, d->pool_ns ? (double)k->ns / (double)d->pool_ns : 0.0);
        else
            fprintf(out, "\n%6.2f%% %.1f ms sampled\n", d->pool_ns ? 100.0 * (double)k->ns / (double)d->pool_ns : 0.0,
                    (double)k->ns / 1e6);
        uint32_t at = k->node;
        for (unsigned f = 0; f < k->n && at; at = tr->nodes[at].parent) {
            if (!tr->nodes[at].func)
                continue;
            char name[2048];
            frame_name(ct, &tr->nodes[at], name, sizeof name);
            if (json) {
                fputs(f ? "," : "", out);
                dnp_export_json_str(out, name, 0);
            } else {
                fprintf(out, "        %s\n", name);
            }
            f++;
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
    int wall = ct->sample_mode == 2;
    for (size_t i = 0; wall && i < ct->nthreads; i++)
        if (pool_thread(ct->threads[i].name)) {
            d->pool_threads++;
            add_leaves(d, &ct->threads[i], (uint32_t)i);
        }
    qsort(d->stacks, d->nstacks, sizeof *d->stacks, by_ns);
    if (json) {
        fprintf(out, ",\"wallSamples\":%s,\"poolThreads\":%zu,\"stacks\":[", wall ? "true" : "false", d->pool_threads);
        print_stacks(d, ct, top, 1, out);
        fputs("]", out);
    } else if (!wall) {
        fputs("\nwhere the pool's threads were blocked: not recorded; record wall-clock samples too "
              "(dnprof run --threadpool --sample=wall)\n", out);
    } else if (!d->nstacks) {
        fputs("\nno wall-clock samples of the pool's threads (.NET TP Worker) in this trace\n", out);
    } else {
        fprintf(out, "\nwhere the pool's %zu threads spent their sampled time (wall clock, the whole recording; "
                     "innermost frame first):\n", d->pool_threads);
        print_stacks(d, ct, top, 0, out);
    }
    calls_close(&in);
    return 0;
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
        fprintf(out, ",\"runtimeMajor\":%llu,\"starvation\":%zu,\"adjustments\":{", (unsigned long long)d->major,
                d->starved);
        for (size_t r = 0; r <= NREASONS; r++)
            fprintf(out, "%s\"%s\":%llu", r ? "," : "", r < NREASONS ? reasons[r] : "other",
                    (unsigned long long)d->by_reason[r]);
        fputs("},\"starved\":[", out);
        for (size_t i = 0; i < d->n; i++)
            fprintf(out, "%s{\"timeNs\":%llu,\"newWorkerThreads\":%llu}", i ? "," : "",
                    (unsigned long long)(d->a[i].time - d->origin), (unsigned long long)d->a[i].threads);
        fputs("]", out);
    } else if (rc == 0) {
        fprintf(out, "%s: %zu thread injections because the pool was starved", cli_short_path(path), d->starved);
        uint64_t all = 0;
        for (size_t r = 0; r <= NREASONS; r++)
            all += d->by_reason[r];
        fprintf(out, " (%llu changes of the worker count in all)\n", (unsigned long long)all);
        if (!d->starved)
            fputs("no starvation: the pool never had to inject threads for want of them\n", out);
        for (size_t i = 0; i < d->n; i++)
            fprintf(out, "  at %8.3f s: starved, workers now %llu\n", (double)(d->a[i].time - d->origin) / 1e9,
                    (unsigned long long)d->a[i].threads);
    }
    if (rc == 0)
        rc = stacks(path, d, top, json, out);
    if (rc == 0 && json)
        fputs("}\n", out);
    free(d->a);
    free(d);
    return rc || ferror(out) ? 1 : 0;
}
