/* timeline.c: the enter/leave timeline, one event at a time (timeline.h), and
 * the walks of a loaded trace's or a stream's timeline (dnp_timeline_walk,
 * dnp_ct_timeline_walk, calltree.h). */
#include "timeline.h"
#include "dnp_vec.h"

#include <stdlib.h>
#include <string.h>

static int tl_close(dnp_tl_thread *th, uint32_t thread, int how, uint64_t now, dnp_tl_visit visit, void *ctx) {
    dnp_tl_frame f = th->stack[--th->n];
    uint64_t dur = now > f.start_ns ? now - f.start_ns : 0;
    if (th->n)
        th->stack[th->n - 1].child_ns += dur;
    return visit(ctx, thread, 0, how, &f, (uint32_t)th->n, now);
}

int dnp_tl_feed(dnp_tl_state *s, const dnp_trace_event *e, dnp_tl_visit visit, void *ctx) {
    if (DNP_VEC_RESERVE_ZERO(s->ths, s->nth, (size_t)e->thread + 1, 8) < 0)
        return -1;
    dnp_tl_thread *th = &s->ths[e->thread];
    th->last_ns = e->time_ns;
    switch (e->kind) {
    case DNP_EV_MethodEnter: {
        s->st.events++;
        if (DNP_VEC_RESERVE(th->stack, th->cap, th->n + 1, 64) < 0)
            return -1;
        dnp_tl_frame *f = &th->stack[th->n++];
        memset(f, 0, sizeof *f);
        f->func = e->v[DNP_V(MethodEnter, functionId)];
        f->name = e->v[DNP_VNAME(MethodEnter, functionId)];
        f->start_ns = e->time_ns;
        return visit(ctx, e->thread, 1, 0, f, (uint32_t)(th->n - 1), e->time_ns);
    }
    case DNP_EV_MethodArgs:
        if (th->n)
            th->stack[th->n - 1].args = e->v[DNP_V(MethodArgs, arguments)];
        return 0;
    case DNP_EV_MethodReturn:
        if (th->n)
            th->stack[th->n - 1].ret = e->v[DNP_V(MethodReturn, value)];
        return 0;
    case DNP_EV_MethodLeave:
    case DNP_EV_MethodTailcall:
    case DNP_EV_MethodUnwind: {
        s->st.events++;
        int how = e->kind == DNP_EV_MethodLeave      ? DNP_TL_LEAVE
                  : e->kind == DNP_EV_MethodTailcall ? DNP_TL_TAILCALL
                                                     : DNP_TL_UNWIND;
        size_t k = th->n;
        while (k > 0 && th->stack[k - 1].func != e->v[DNP_V(MethodLeave, functionId)])
            k--;
        if (k == 0) {
            s->st.unmatched++;
            return 0;
        }
        int rc = 0;
        while (rc == 0 && th->n > k)
            rc = tl_close(th, e->thread, DNP_TL_REPAIR, e->time_ns, visit, ctx);
        return rc == 0 ? tl_close(th, e->thread, how, e->time_ns, visit, ctx) : rc;
    }
    default:
        return 0;
    }
}

/* Closes what is still open, thread by thread, at each thread's last event. */
int dnp_tl_end(dnp_tl_state *s, dnp_tl_visit visit, void *ctx) {
    int rc = 0;
    for (size_t k = 0; k < s->nth; k++) {
        s->st.open_at_end += s->ths[k].n;
        while (rc == 0 && s->ths[k].n)
            rc = tl_close(&s->ths[k], (uint32_t)k, DNP_TL_END, s->ths[k].last_ns, visit, ctx);
    }
    return rc;
}

void dnp_tl_release(dnp_tl_state *s) {
    for (size_t k = 0; k < s->nth; k++)
        free(s->ths[k].stack);
    free(s->ths);
    memset(s, 0, sizeof *s);
}

int dnp_timeline_walk(const dnp_trace *t, uint32_t thread, dnp_tl_visit visit, void *ctx,
                      void (*progress)(void *pctx, uint64_t done, uint64_t total), void *pctx,
                      dnp_tl_stats *stats) {
    dnp_tl_state s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    for (size_t i = 0; i < t->nevents && rc == 0; i++) {
        if (progress && (i & 0xFFFFF) == 0)
            progress(pctx, i, t->nevents);
        const dnp_trace_event *e = &t->events[i];
        if (thread && e->thread != thread)
            continue;
        rc = dnp_tl_feed(&s, e, visit, ctx);
    }
    if (rc == 0)
        rc = dnp_tl_end(&s, visit, ctx);
    if (progress)
        progress(pctx, t->nevents, t->nevents);
    if (stats)
        *stats = s.st;
    dnp_tl_release(&s);
    return rc;
}

int dnp_ct_timeline_walk(const dnp_calltree *ct, uint32_t thread, dnp_tl_visit visit, void *ctx,
                         void (*progress)(void *pctx, uint64_t done, uint64_t total), void *pctx,
                         dnp_tl_stats *stats) {
    if (!ct->stream)
        return dnp_timeline_walk(ct->t, thread, visit, ctx, progress, pctx, stats);
    dnp_trace_stream *st = ct->stream;
    if (dnp_trace_stream_rewind(st, thread) != 0)
        return -1;
    uint64_t origin = dnp_trace_stream_origin(st), done, total, n = 0;
    dnp_tl_state s;
    memset(&s, 0, sizeof s);
    dnp_trace_event e;
    int rc = 0, got;
    while (rc == 0 && (got = dnp_trace_stream_next(st, &e)) > 0) {
        if (progress && (n++ & 0xFFFFF) == 0) {
            dnp_trace_stream_progress(st, &done, &total);
            progress(pctx, done, total);
        }
        if (thread && e.thread != thread)
            continue;
        e.time_ns = e.time_ns > origin ? e.time_ns - origin : 0; /* the loader's times */
        rc = dnp_tl_feed(&s, &e, visit, ctx);
    }
    if (rc == 0 && got < 0)
        rc = -1;
    if (rc == 0)
        rc = dnp_tl_end(&s, visit, ctx);
    if (progress) {
        dnp_trace_stream_progress(st, &done, &total);
        progress(pctx, total, total);
    }
    if (stats)
        *stats = s.st;
    dnp_tl_release(&s);
    return rc;
}
