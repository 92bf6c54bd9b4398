/* chrome.c: Chrome's trace-event JSON, which ui.perfetto.dev and chrome://tracing
 * open. Every call is a complete ("X") event on its OS thread, written when the
 * call closes (threads interleave in the order the timeline is read: time order
 * from a loaded trace, file order from a stream); thread and process names are "M" metadata events. Without the
 * timeline the tree of each thread is laid out instead: a node starts where the
 * previous sibling ended and lasts its total time, so widths are true but the
 * order in time is not (the events say so in their category). GC pauses have
 * a track of their own, lock waits are slices and throws instants on their
 * threads. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "prettyname.h"

#define EXC_PENDING 64 /* threads whose throw waits for its ExceptionDetails */

/* A throw not written yet: its ExceptionDetails (message, stack) may follow. */
typedef struct exc_pending {
    uint32_t thread; /* 0: none */
    uint64_t at;
    uint64_t type;   /* the class's name, a string number */
} exc_pending;

typedef struct chrome {
    const dnp_calltree *ct;
    FILE *out;
    uint64_t pid;
    uint64_t *start, *end; /* per node of the tree being laid out */
    uint64_t tid;
    exc_pending exc[EXC_PENDING];
    uint8_t *exc_named; /* by thread number: its exceptions' track named */
} chrome;

static void put_us(FILE *out, const char *key, uint64_t ns) {
    fprintf(out, ",\"%s\":%llu.%03u", key, (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

static void put_name_args(chrome *c, uint64_t func, uint64_t name) {
    char buf[2048], raw[64];
    fputs(",\"name\":", c->out);
    dnp_export_json_str(c->out, dnp_export_name(c->ct, func, name, buf, sizeof buf), 0);
    fputs(",\"args\":{\"raw\":", c->out);
    dnp_export_json_str(c->out, dnp_ct_raw_name(c->ct, func, name, raw, sizeof raw), 0);
}

static uint64_t tid_of(const dnp_trace *t, uint32_t thread) {
    const dnp_trace_thread *th = dnp_trace_thread_get(t, thread);
    return th && th->os_tid ? th->os_tid : thread;
}

static int timeline_visit(void *ctx, uint32_t thread, int open, int how, const dnp_tl_frame *f,
                          uint32_t depth, uint64_t now) {
    chrome *c = ctx;
    static const char *const hows[] = {"leave", "tailcall", "unwind", "unwound", "open at end"};
    (void)depth;
    if (open)
        return 0;
    fprintf(c->out, ",\n{\"ph\":\"X\",\"cat\":\"calls\",\"pid\":%llu,\"tid\":%llu", (unsigned long long)c->pid,
            (unsigned long long)tid_of(c->ct->t, thread));
    put_us(c->out, "ts", f->start_ns);
    put_us(c->out, "dur", now > f->start_ns ? now - f->start_ns : 0);
    put_name_args(c, f->func, f->name);
    if (f->args) {
        fputs(",\"arguments\":", c->out);
        dnp_export_json_str(c->out, dnp_trace_string(c->ct->t, f->args), 0);
    }
    if (f->ret) {
        fputs(",\"return\":", c->out);
        dnp_export_json_str(c->out, dnp_trace_string(c->ct->t, f->ret), 0);
    }
    if (how != DNP_TL_LEAVE)
        fprintf(c->out, ",\"end\":\"%s\"", hows[how]);
    fputs("}}", c->out);
    return ferror(c->out) ? -1 : 0;
}

static int layout_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    chrome *c = ctx;
    if (!enter || n == 0)
        return 0;
    const dnp_ct_node *node = &tr->nodes[n];
    uint32_t p = node->parent;
    uint64_t s = c->end[p], e = s + node->total_ns; /* end[] of a parent: where its next child starts */
    uint64_t limit = p ? c->start[p] + tr->nodes[p].total_ns : UINT64_MAX;
    if (e > limit)
        e = limit;
    if (s > e)
        s = e;
    c->start[n] = s;
    c->end[n] = s;
    c->end[p] = e;
    fprintf(c->out, ",\n{\"ph\":\"X\",\"cat\":\"calls (aggregate: laid out, not in time order)\",\"pid\":%llu,\"tid\":%llu",
            (unsigned long long)c->pid, (unsigned long long)c->tid);
    put_us(c->out, "ts", s);
    put_us(c->out, "dur", e - s);
    put_name_args(c, node->func, node->name);
    fprintf(c->out, ",\"calls\":%llu,\"self_ns\":%llu,\"total_ns\":%llu}}", (unsigned long long)node->calls,
            (unsigned long long)node->self_ns, (unsigned long long)node->total_ns);
    return ferror(c->out) ? -1 : 0;
}

static void put_thread_name(chrome *c, uint64_t tid, const char *label) {
    fprintf(c->out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%llu,\"tid\":%llu,\"args\":{\"name\":",
            (unsigned long long)c->pid, (unsigned long long)tid);
    dnp_export_json_str(c->out, label, 0);
    fputs("}}", c->out);
}

/* Names track tid after the trace's thread number thread, with suffix after
 * its label when not NULL (a track of the thread's own). */
static void name_track(chrome *c, uint32_t thread, uint64_t tid, const char *suffix) {
    const dnp_trace_thread *th = dnp_trace_thread_get(c->ct->t, thread);
    dnp_ct_tree tr = {0};
    char label[512];
    tr.thread = thread;
    tr.os_tid = th ? th->os_tid : 0;
    tr.name = th ? th->name : NULL;
    dnp_export_thread_label(&tr, label, sizeof label);
    if (suffix)
        strncat(label, suffix, sizeof label - strlen(label) - 1);
    put_thread_name(c, tid, label);
}

/* The caller's slices (lock waits), each thread named once. Beside a
 * timeline they are on their threads' tracks; beside trees laid out (an
 * aggregate, not in time order) on tracks of their own, one a thread: a
 * Linux thread id is below 2^22, so SLICE_TRACK + tid names no thread. */
#define SLICE_TRACK (1ull << 30)

static int write_slices(chrome *c, const dnp_export_opts *o) {
    const dnp_trace *t = c->ct->t;
    int apart = !c->ct->timeline_events && c->ct->nthreads > 0;
    uint8_t *named = calloc(t->nthreads + 2, 1);
    if (!named)
        return -1;
    for (size_t i = 0; i < o->nslices; i++) {
        const dnp_export_slice *s = &o->slices[i];
        uint64_t tid = tid_of(t, s->thread) + (apart ? SLICE_TRACK : 0);
        if (s->thread <= t->nthreads && !named[s->thread] && !c->ct->timeline_events) {
            named[s->thread] = 1;
            name_track(c, s->thread, tid, apart ? ": lock waits, in time" : NULL);
        }
        fprintf(c->out, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%llu,\"tid\":%llu", s->cat, (unsigned long long)c->pid,
                (unsigned long long)tid);
        put_us(c->out, "ts", s->start_ns);
        put_us(c->out, "dur", s->dur_ns);
        fputs(",\"name\":", c->out);
        dnp_export_json_str(c->out, s->name, 0);
        fputs(",\"args\":{", c->out);
        if (o->slice_args)
            o->slice_args(o->slice_ctx, c->out, s);
        fputs("}}", c->out);
        if (ferror(c->out))
            break;
    }
    free(named);
    return ferror(c->out) ? -1 : 0;
}

/* GC pauses (dnprof run --gc) on a track of their own: a slice per collection,
 * its pause for a blocking one (the event's time is the pause's end), its
 * whole length for a background one, generation and reason in its arguments. */
#define GC_TRACK_TID 1 /* no thread of a process but init's first has the id 1 */

/* asked: the generation the collection began with when the GC took it further
 * (its GcRaised just before), else -1. */
static void put_gc(chrome *c, const dnp_trace_event *e, uint64_t at, int64_t asked, int *named) {
#define F(field) e->v[DNP_V(GcCollection, field)]
    uint64_t number = F(number), gen = F(generation), reason = F(reason), type = F(type), duration = F(durationNs);
    uint64_t suspend = F(suspendNs), pause = F(pauseNs), len = type == 1 ? duration : pause;
#undef F
    if (!*named) {
        *named = 1;
        fprintf(c->out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%llu,\"tid\":%d,\"args\":{\"name\":\"GC\"}}",
                (unsigned long long)c->pid, GC_TRACK_TID);
    }
    fprintf(c->out, ",\n{\"ph\":\"X\",\"cat\":\"gc\",\"pid\":%llu,\"tid\":%d", (unsigned long long)c->pid,
            GC_TRACK_TID);
    put_us(c->out, "ts", at > len ? at - len : 0);
    put_us(c->out, "dur", len);
    fprintf(c->out, ",\"name\":\"GC #%llu gen%llu %s\",\"args\":{\"number\":%llu,\"generation\":%llu,"
                    "\"reason\":\"%s\",\"type\":\"%s\",\"pauseMs\":%.3f,\"suspendMs\":%.3f,\"durationMs\":%.3f",
            (unsigned long long)number, (unsigned long long)gen, dnp_gc_start_reason_id(reason), (unsigned long long)number,
            (unsigned long long)gen, dnp_gc_start_reason(reason), dnp_gc_type_name(type), (double)pause / 1e6,
            (double)suspend / 1e6, (double)duration / 1e6);
    if (asked >= 0)
        fprintf(c->out, ",\"askedGeneration\":%lld", (long long)asked);
    fputs("}}", c->out);
}

/* The generation a GcRaised says the next collection began with (-1: none). */
static int64_t raised_for(const dnp_trace_event *e, uint64_t *number) {
    *number = e->v[DNP_V(GcRaised, number)];
    return (int64_t)e->v[DNP_V(GcRaised, asked)];
}

/* Exceptions (a trace with the exceptions family): each throw an instant on
 * its thread, with its type, and its message and throw site when the trace has
 * its ExceptionDetails (--exceptions). On the thread's own track beside the
 * timeline of its calls; beside trees laid out (not in time order) on a track
 * of the thread's own, as the lock waits are. */
#define EXC_TRACK (1ull << 29)

static void put_throw(chrome *c, const exc_pending *p, const dnp_trace_event *details) {
    const dnp_trace *t = c->ct->t;
    int apart = !c->ct->timeline_events && c->ct->nthreads > 0;
    uint64_t tid = tid_of(t, p->thread) + (apart ? EXC_TRACK : 0);
    if (p->thread <= t->nthreads && c->exc_named && !c->exc_named[p->thread] &&
        !c->ct->timeline_events) { /* the timeline names its threads */
        c->exc_named[p->thread] = 1;
        name_track(c, p->thread, tid, apart ? ": exceptions, in time" : NULL);
    }
    const char *type = dnp_trace_string(t, p->type);
    char name[600];
    snprintf(name, sizeof name, "throw %.580s", type && *type ? type : "[unknown type]");
    fprintf(c->out, ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"exception\",\"pid\":%llu,\"tid\":%llu",
            (unsigned long long)c->pid, (unsigned long long)tid);
    put_us(c->out, "ts", p->at);
    fputs(",\"name\":", c->out);
    dnp_export_json_str(c->out, name, 0);
    fputs(",\"args\":{\"type\":", c->out);
    dnp_export_json_str(c->out, type ? type : "", 0);
    if (details) {
        const char *message = dnp_trace_string(t, details->v[DNP_V(ExceptionDetails, message)]);
        const char *stack = dnp_trace_string(t, details->v[DNP_V(ExceptionDetails, stack)]);
        char site[1024], pretty[1024];
        snprintf(site, sizeof site, "%.*s", stack ? (int)strcspn(stack, "\n") : 0, stack ? stack : "");
        dnp_pretty_name(site, pretty, sizeof pretty);
        fputs(",\"message\":", c->out);
        dnp_export_json_str(c->out, message ? message : "", 0);
        fprintf(c->out, ",\"hresult\":\"0x%08llx\",\"site\":",
                (unsigned long long)(details->v[DNP_V(ExceptionDetails, hresult)] & 0xffffffffu));
        dnp_export_json_str(c->out, pretty, 0);
    }
    fputs("}}", c->out);
}

/* An event of the runtime's, at its time at (from the trace's start): a GC,
 * a throw, or what ends a throw's wait for its details. */
static void runtime_event(chrome *c, const dnp_trace_event *e, uint64_t at, int64_t *asked, uint64_t *raised_number,
                          int *named) {
    exc_pending *p = &c->exc[e->thread % EXC_PENDING];
    if (p->thread && (p->thread != e->thread || e->kind != DNP_EV_ExceptionDetails)) {
        if (p->thread == e->thread || e->kind == DNP_EV_ExceptionThrown)
            put_throw(c, p, NULL), p->thread = 0; /* no details came (or a new throw takes the slot) */
    }
    switch (e->kind) {
    case DNP_EV_GcRaised: *asked = raised_for(e, raised_number); break;
    case DNP_EV_GcCollection:
        put_gc(c, e, at, e->v[DNP_V(GcCollection, number)] == *raised_number ? *asked : -1, named);
        break;
    case DNP_EV_ExceptionThrown:
        if (p->thread)
            put_throw(c, p, NULL);
        *p = (exc_pending){e->thread, at, e->v[DNP_VNAME(ExceptionThrown, classId)]};
        break;
    case DNP_EV_ExceptionDetails:
        if (p->thread == e->thread) {
            put_throw(c, p, e);
            p->thread = 0;
        }
        break;
    default: break;
    }
}

static int runtime_tracks(chrome *c) {
    int named = 0;
    const dnp_trace *t = c->ct->t;
    dnp_trace_stream *s = c->ct->stream;
    uint64_t raised_number = 0;
    int64_t asked = -1;
    int rc = 0;
    c->exc_named = calloc(t->nthreads + 2, 1);
    if (!c->exc_named)
        return -1;
    if (!s) {
        for (size_t i = 0; t && i < t->nevents; i++)
            runtime_event(c, &t->events[i], t->events[i].time_ns, &asked, &raised_number, &named);
    } else if (dnp_trace_stream_rewind(s, 0) != 0) {
        rc = -1;
    } else {
        uint64_t origin = dnp_trace_stream_origin(s);
        dnp_trace_event e;
        int got;
        while ((got = dnp_trace_stream_next(s, &e)) > 0)
            runtime_event(c, &e, e.time_ns > origin ? e.time_ns - origin : 0, &asked, &raised_number, &named);
        rc = got < 0 ? -1 : 0;
    }
    for (size_t k = 0; k < EXC_PENDING && rc == 0; k++)
        if (c->exc[k].thread)
            put_throw(c, &c->exc[k], NULL);
    free(c->exc_named);
    c->exc_named = NULL;
    return rc;
}

int dnp_export_chrome(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o) {
    const dnp_trace *t = ct->t;
    chrome c;
    memset(&c, 0, sizeof c);
    c.ct = ct;
    c.out = out;
    c.pid = t->pid;
    const char *title = o && o->title ? o->title : t->cmdline;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"dnprof " DNPROF_VERSION "\",\"command\":", out);
    dnp_export_json_str(out, title, 0);
    fprintf(out, "},\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%llu,\"tid\":0,\"args\":{\"name\":",
            (unsigned long long)c.pid);
    char label[512];
    snprintf(label, sizeof label, "%s (pid %llu)", title ? title : "dotnet", (unsigned long long)c.pid);
    dnp_export_json_str(out, label, 0);
    fputs("}}", out);

    int rc = 0;
    if (ct->timeline_events) {
        for (size_t i = 0; i < t->nthreads; i++) {
            dnp_ct_tree th = {0};
            th.thread = t->threads[i].ordinal;
            th.os_tid = t->threads[i].os_tid;
            th.name = t->threads[i].name;
            dnp_export_thread_label(&th, label, sizeof label);
            put_thread_name(&c, tid_of(t, th.thread), label);
        }
        rc = dnp_ct_timeline_walk(ct, 0, timeline_visit, &c, o ? o->progress : NULL, o ? o->progress_ctx : NULL, NULL);
    } else {
        for (size_t i = 0; i < ct->nthreads && rc == 0; i++) {
            const dnp_ct_tree *tr = &ct->threads[i];
            c.tid = tr->os_tid ? tr->os_tid : tr->thread;
            dnp_export_thread_label(tr, label, sizeof label);
            put_thread_name(&c, c.tid, label);
            c.start = calloc(tr->nnodes, sizeof *c.start);
            c.end = calloc(tr->nnodes, sizeof *c.end);
            rc = c.start && c.end ? dnp_ct_walk(tr, layout_visit, &c) : -1;
            free(c.start);
            free(c.end);
            if (o && o->progress)
                o->progress(o->progress_ctx, i + 1, ct->nthreads);
        }
    }
    if (rc == 0 && o && o->nslices)
        rc = write_slices(&c, o);
    if (rc == 0)
        rc = runtime_tracks(&c);
    fputs("\n]}\n", out);
    return dnp_export_end(out, rc);
}
