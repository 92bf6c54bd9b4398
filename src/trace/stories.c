/* stories.c: exception stories from a trace (stories.h). */
#include "stories.h"

#include "dnp_text.h"
#include "dnp_vec.h"

#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

typedef struct thread_state {
    exc_machine m;
    size_t story_at[EXC_MAX_NEST]; /* story index + 1 of each level */
} thread_state;

struct dnp_stories_builder {
    dnp_stories out;       /* out.v[0] is story base + 1; out.n = nid - base */
    size_t cap;
    thread_state *threads; /* by ordinal */
    size_t nthreads;
    exc_step st;
    int keep_steps;
    size_t nid;            /* stories begun */
    /* in time order (dnp_stories_begin_ordered): each story handed out once it
     * and every earlier one ended, then its steps freed */
    const dnp_trace *t;
    dnp_story_emit emit;
    void *ctx;
    size_t base;           /* stories dropped from the front of out.v */
    size_t next_emit;      /* the next story to hand out */
};

/* The story with this id (>= 1), which must still be held. */
#define SV(b, id) (&(b)->out.v[(id) - 1 - (b)->base])

/* The value index of the first FUNCTION field of an event kind, or -1. */
static int function_at(uint16_t kind) {
    const dnp_event_info *info = &dnp_events[kind];
    unsigned at = 0;
    for (int f = 0; f < info->nfields; f++) {
        if (info->field_types[f] == DNP_FT_FUNCTION)
            return (int)at;
        at += dnp_field_nvalues[info->field_types[f]];
    }
    return -1;
}

/* The string number of an event's function name, or 0. */
static uint64_t function_sid(const dnp_trace_event *e) {
    int at = e->kind < DNP_EV_COUNT ? function_at(e->kind) : -1;
    return at >= 0 && (unsigned)at + 1 < e->nvalues ? e->v[at + 1] : 0;
}

const char *dnp_story_function(const dnp_trace *t, const dnp_trace_event *e) {
    int at = e->kind < DNP_EV_COUNT ? function_at(e->kind) : -1;
    return at >= 0 && (unsigned)at + 1 < e->nvalues ? dnp_trace_string(t, e->v[at + 1]) : NULL;
}

static void resolve(dnp_story *s, const dnp_trace *t, uint64_t origin);
static void link(dnp_stories *o, size_t k);
static int emit_ready(dnp_stories_builder *b);

static int add_step(dnp_stories_builder *b, dnp_story *s, const dnp_trace_event *e, size_t ev) {
    s->t_end = e->time_ns;
    if (!b->keep_steps) {
        s->nsteps++;
        return 0;
    }
    if (DNP_VEC_RESERVE(s->steps, s->capsteps, s->nsteps + 1, 16) < 0)
        return -1;
    dnp_story_step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->ev = ev;
    st->time_ns = e->time_ns;
    st->kind = e->kind;
    st->fn_sid = function_sid(e);
    return 0;
}

/* The verdict of the story's last step (1 filter true, 2 false, 3 stray leave). */
static dnp_story_step *last_step(dnp_story *s) {
    return s->steps && s->nsteps ? &s->steps[s->nsteps - 1] : NULL;
}

static void end_story(dnp_stories_builder *b, size_t id, const exc_level *l) {
    dnp_story *s = SV(b, id);
    s->ended = 1;
    s->fate = l->fate;
    s->phase = l->phase;
    s->no_catcher = l->no_catcher;
}

static void details(dnp_stories_builder *b, const dnp_trace_event *e, thread_state *ts) {
    int d = ts->m.depth;
    if (d == 0 || !ts->story_at[d - 1])
        return;
    dnp_story *s = SV(b, ts->story_at[d - 1]);
    if (s->has_details || s->object != e->v[DNP_V(ExceptionDetails, objectId)])
        return;
    s->has_details = 1;
    s->message_sid = e->v[DNP_V(ExceptionDetails, message)];
    s->hresult = (uint32_t)e->v[DNP_V(ExceptionDetails, hresult)];
    s->kept_trace = e->v[DNP_V(ExceptionDetails, flags)] & EXC_DETAIL_KEPT_TRACE;
    s->stack_sid = e->v[DNP_V(ExceptionDetails, stack)];
    /* The agent followed the object of the catch below across a GC: this is
     * that object thrown again (`throw;` after a collection moved it). */
    if (exc_machine_details(&ts->m, s->object, e->v[DNP_V(ExceptionDetails, flags)]) && ts->story_at[d - 2])
        s->rethrow_of = ts->story_at[d - 2];
    /* The agent saw, from the stack, that levels below this one had left their
     * handlers: they were abandoned. */
    int want = (int)e->v[DNP_V(ExceptionDetails, depth)];
    if (want >= 1 && want < d) {
        exc_level top = ts->m.lv[d - 1];
        size_t top_story = ts->story_at[d - 1];
        while (ts->m.depth > want - 1) {
            int i = ts->m.depth - 1;
            if (i != d - 1) {
                ts->m.lv[i].fate = EXC_ABANDONED;
                if (ts->story_at[i]) {
                    end_story(b, ts->story_at[i], &ts->m.lv[i]);
                    if (!SV(b, ts->story_at[i])->ended_by)
                        SV(b, ts->story_at[i])->ended_by = top_story;
                }
            }
            ts->m.depth--;
        }
        top.parent_phase = want > 1 ? ts->m.lv[want - 2].phase : 0;
        ts->m.lv[want - 1] = top;
        ts->m.depth = want;
        ts->story_at[want - 1] = top_story;
        s->parent = want > 1 ? ts->story_at[want - 2] : 0;
        s->parent_phase = top.parent_phase;
    }
}

dnp_stories_builder *dnp_stories_begin(int keep_steps) {
    dnp_stories_builder *b = calloc(1, sizeof *b);
    if (b)
        b->keep_steps = keep_steps;
    return b;
}

void dnp_stories_abort(dnp_stories_builder *b) {
    if (!b)
        return;
    dnp_stories_free(&b->out);
    free(b->threads);
    free(b);
}

static thread_state *thread_of(dnp_stories_builder *b, uint32_t ordinal) {
    if (ordinal >= b->nthreads) {
        size_t n = b->nthreads ? b->nthreads : 8;
        while (n <= ordinal)
            n *= 2;
        if (n > (size_t)1 << 24)
            return NULL;
        thread_state *p = realloc(b->threads, n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + b->nthreads, 0, (n - b->nthreads) * sizeof *p);
        b->threads = p;
        b->nthreads = n;
    }
    return &b->threads[ordinal];
}

static int feed_one(dnp_stories_builder *b, const dnp_trace_event *e, size_t i);

int dnp_stories_feed(dnp_stories_builder *b, const dnp_trace_event *e, size_t i) {
    if (feed_one(b, e, i) < 0)
        return -1;
    return b->emit ? emit_ready(b) : 0;
}

dnp_stories_builder *dnp_stories_begin_ordered(int keep_steps, const dnp_trace *t, dnp_story_emit emit, void *ctx) {
    dnp_stories_builder *b = dnp_stories_begin(keep_steps);
    if (b) {
        b->t = t;
        b->emit = emit;
        b->ctx = ctx;
        b->next_emit = 1;
    }
    return b;
}

/* Hands out, in order, the stories that ended with every earlier one; keeps
 * the last 4096 handed out (a rethrow looks that far back), drops the rest. */
static int emit_ready(dnp_stories_builder *b) {
    while (b->next_emit <= b->nid) {
        dnp_story *s = SV(b, b->next_emit);
        if (!s->ended)
            break;
        resolve(s, b->t, 0);
        link(&b->out, b->next_emit - 1 - b->base);
        b->emit(b->ctx, s, &b->out);
        free(s->steps);
        s->steps = NULL;
        s->capsteps = 0;
        b->next_emit++;
    }
    size_t done = b->next_emit - 1 - b->base;
    if (done > 3 * 4096) {
        size_t drop = done - 4096;
        for (size_t k = 0; k < drop; k++)
            free(b->out.v[k].site_buf);
        memmove(b->out.v, b->out.v + drop, (b->out.n - drop) * sizeof *b->out.v);
        b->out.n -= drop;
        b->base += drop;
    }
    return 0;
}

/* A new story: the exception event e (index i) began a level; d0 was the depth
 * before it, and the levels it ended are in st. */
static int begin_story(dnp_stories_builder *b, thread_state *ts, const dnp_trace_event *e, size_t i, int d0,
                       uint64_t object, const exc_step *st) {
    dnp_stories *out = &b->out;
    if (d0 == EXC_MAX_NEST && st->nended == 0)
        memmove(&ts->story_at[0], &ts->story_at[1], (EXC_MAX_NEST - 1) * sizeof ts->story_at[0]);
    if (DNP_VEC_RESERVE(out->v, b->cap, out->n + 1, 256) < 0)
        return -1;
    dnp_story *s = &out->v[out->n];
    memset(s, 0, sizeof *s);
    s->id = ++b->nid;
    out->n++;
    s->seq = s->id;
    s->thread = e->thread;
    s->thrown = i;
    s->object = object;
    s->type_sid = e->kind == DNP_EV_ExceptionThrown ? e->v[DNP_VNAME(ExceptionThrown, classId)] : 0;
    s->t_thrown = s->t_end = e->time_ns;
    for (int k = 0; k < st->nended; k++)
        if (st->ended[k].fate == EXC_RETHROWN && ts->story_at[d0 - 1 - k])
            SV(b, ts->story_at[d0 - 1 - k])->ended_by = s->id;
    int top = ts->m.depth - 1;
    ts->story_at[top] = s->id;
    s->parent = top > 0 ? ts->story_at[top - 1] : 0;
    s->parent_phase = ts->m.lv[top].parent_phase;
    if (s->parent && (s->parent_phase == EXC_CATCH || s->parent_phase == EXC_FINALLY) &&
        !SV(b, s->parent)->ended_by)
        SV(b, s->parent)->ended_by = s->id; /* if it ends abandoned, this is why */
    return add_step(b, s, e, i);
}

static int feed_one(dnp_stories_builder *b, const dnp_trace_event *e, size_t i) {
    dnp_stories *out = &b->out;
    if (e->kind >= DNP_EV_COUNT || dnp_events[e->kind].family != DNP_FAM_EXCEPTIONS)
        return 0;
    out->exception_events++;
    thread_state *ts = thread_of(b, e->thread);
    if (!ts)
        return -1;
    if (e->kind == DNP_EV_ExceptionDetails) {
        details(b, e, ts);
        return 0;
    }
    if (!exc_machine_is_event(e->kind))
        return 0;
    uint64_t fn, object;
    exc_machine_operands(e->kind, e->v, &fn, &object);
    int d0 = ts->m.depth;
    exc_step *st = &b->st;
    exc_machine_step(&ts->m, e->kind, fn, object, st);
    if (st->flags & EXC_UNEXPECTED)
        out->unexpected++;

    /* Levels that ended were the top ones, newest first. */
    size_t target = 0; /* the story this event belongs to, + 1 */
    for (int k = 0; k < st->nended; k++) {
        size_t sid = ts->story_at[d0 - 1 - k];
        if (!sid)
            continue;
        if (e->kind == DNP_EV_ExceptionCatcherLeave && st->ended[k].fate == EXC_CAUGHT)
            target = sid;
        if (target == sid && add_step(b, SV(b, sid), e, i) < 0)
            return -1;
        end_story(b, sid, &st->ended[k]);
    }
    if (st->flags & EXC_BEGIN)
        return begin_story(b, ts, e, i, d0, object, st);
    if (target)
        return 0;
    if (ts->m.depth == 0 || !ts->story_at[ts->m.depth - 1])
        return 0;
    dnp_story *s = SV(b, ts->story_at[ts->m.depth - 1]);
    if (add_step(b, s, e, i) < 0)
        return -1;
    uint64_t name = function_sid(e);
    switch (e->kind) {
    case DNP_EV_ExceptionSearchFunctionEnter: {
        s->searched++;
        if (!s->site_sid)
            s->site_sid = name;
        /* The machine has just seen a rethrow from the catch below (at the
         * first frame searched for `throw;`, past ExceptionDispatchInfo's for
         * its Throw): this is the same exception going on, not one nested in it. */
        int d = ts->m.depth;
        if (d >= 2 && ts->m.lv[d - 2].fate == EXC_RETHROWN && s->parent && s->parent == ts->story_at[d - 2]) {
            SV(b, s->parent)->ended_by = s->id;
            s->parent = 0;
            s->parent_phase = 0;
        }
        break;
    }
    case DNP_EV_ExceptionSearchFilterEnter: s->filters++; break;
    case DNP_EV_ExceptionSearchCatcherFound:
    case DNP_EV_ExceptionCatcherEnter: s->catcher_sid = name; break;
    case DNP_EV_ExceptionUnwindFunctionLeave:
        if (st->flags & EXC_FRAME_LEFT)
            s->unwound++;
        break;
    case DNP_EV_ExceptionUnwindFinallyEnter: s->finallys++; break;
    default: break;
    }
    dnp_story_step *last = last_step(s);
    if ((st->flags & EXC_STRAY_LEAVE) && last)
        last->verdict = 3;
    if ((st->flags & (EXC_FILTER_TRUE | EXC_FILTER_FALSE)) && s->steps) {
        /* The verdict belongs to the last filter this story left. */
        for (size_t k = s->nsteps; k-- > 0;)
            if (s->steps[k].kind == DNP_EV_ExceptionSearchFilterLeave) {
                s->steps[k].verdict = st->flags & EXC_FILTER_TRUE ? 1 : 2;
                break;
            }
    }
    return 0;
}

/* ---- finishing: order, names, links ---- */

static int by_throw(const void *x, const void *y) {
    const dnp_story *a = x, *b = y;
    if (a->t_thrown != b->t_thrown)
        return a->t_thrown < b->t_thrown ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int same_text(const char *a, const char *b) {
    return a == b || (a && b && !strcmp(a, b));
}

/* The last earlier story of the same object and type: the exception thrown
 * again. A fresh exception (no stack trace yet) at the address of an earlier
 * one is not: the address was reused after a GC, unless that one is its parent
 * in its catch, or was rethrown as it (`throw ex;` resets the trace). */
static size_t earlier_throw(const dnp_stories *out, size_t idx) {
    const dnp_story *s = &out->v[idx];
    size_t limit = idx > 4096 ? idx - 4096 : 0;
    for (size_t i = idx; i-- > limit;) {
        const dnp_story *o = &out->v[i];
        if (o->object != s->object || !same_text(o->type, s->type))
            continue;
        if (!s->has_details || s->kept_trace || (s->parent == o->id && s->parent_phase == EXC_CATCH) ||
            (o->fate == EXC_RETHROWN && o->ended_by == s->id))
            return o->id;
        return 0;
    }
    return 0;
}

/* A throw whose object already had a stack trace, and no earlier story of the
 * same ObjectID (a GC moved it): the last earlier story of the same type,
 * message and HResult, thrown again (the thread pool's catch, then
 * ExceptionDispatchInfo.Throw in an await). */
static size_t same_exception(const dnp_stories *out, size_t idx) {
    const dnp_story *s = &out->v[idx];
    size_t limit = idx > 4096 ? idx - 4096 : 0;
    if (!s->type)
        return 0;
    for (size_t i = idx; i-- > limit;) {
        const dnp_story *o = &out->v[i];
        if (o->has_details && o->hresult == s->hresult && same_text(o->type, s->type) &&
            same_text(o->message, s->message))
            return o->id;
    }
    return 0;
}


int dnp_stories_finish(dnp_stories_builder *b, const dnp_trace *t, uint64_t origin, dnp_stories *out) {
    dnp_stories *o = &b->out;
    /* Stories still in flight when the trace ends. */
    for (size_t th = 0; th < b->nthreads; th++)
        for (int k = 0; k < b->threads[th].m.depth; k++)
            if (b->threads[th].story_at[k]) {
                exc_level l = b->threads[th].m.lv[k];
                /* One whose handler a nested exception replaced is over. */
                l.fate = l.replaced && k == b->threads[th].m.depth - 1 ? EXC_ABANDONED : EXC_OPEN;
                end_story(b, b->threads[th].story_at[k], &l);
            }
    free(b->threads);
    b->threads = NULL;
    if (b->emit) { /* in time order: the rest go now */
        emit_ready(b);
        *out = *o;
        free(b);
        return 0;
    }

    /* In the order of the throws, numbered again. */
    size_t *renum = NULL;
    int sorted = 1;
    for (size_t k = 1; k < o->n && sorted; k++)
        sorted = by_throw(&o->v[k - 1], &o->v[k]) <= 0;
    if (!sorted) {
        renum = malloc((o->n + 1) * sizeof *renum);
        if (!renum) {
            dnp_stories_abort(b);
            return -1;
        }
        qsort(o->v, o->n, sizeof *o->v, by_throw);
        renum[0] = 0;
        for (size_t k = 0; k < o->n; k++)
            renum[o->v[k].seq] = k + 1;
    }
    for (size_t k = 0; k < o->n; k++) {
        dnp_story *s = &o->v[k];
        if (renum) {
            s->id = k + 1;
            s->parent = renum[s->parent];
            s->rethrow_of = renum[s->rethrow_of];
            s->ended_by = renum[s->ended_by];
        }
        resolve(s, t, origin);
    }
    free(renum);
    for (size_t k = 0; k < o->n; k++)
        link(o, k);
    *out = *o;
    free(b);
    return 0;
}

/* A frame of the code that throws an exception again at an await or after
 * its capture (ExceptionDispatchInfo, the awaiters' GetResult): not where the
 * program threw it. */
static int rethrow_frame(const char *f, size_t n) {
    static const char *const prefixes[] = {
        "System.Runtime.ExceptionServices.ExceptionDispatchInfo::", "System.Runtime.CompilerServices.TaskAwaiter",
        "System.Runtime.CompilerServices.ConfiguredTaskAwaitable", "System.Runtime.CompilerServices.ValueTaskAwaiter",
        "System.Runtime.CompilerServices.ConfiguredValueTaskAwaitable"};
    return dnp_has_prefix(f, n, prefixes, sizeof prefixes / sizeof prefixes[0]);
}

const char *dnp_story_site_in_stack(const char *stack, size_t *len) {
    const char *first = stack;
    size_t first_n = strcspn(stack, "\n");
    for (const char *f = stack; *f;) {
        size_t n = strcspn(f, "\n");
        if (!rethrow_frame(f, n)) {
            *len = n;
            return f;
        }
        if (!f[n])
            break;
        f += n + 1;
    }
    *len = first_n; /* nothing past them: the first frame after all */
    return first;
}

/* A story's times made relative, its names looked up. */
static void resolve(dnp_story *s, const dnp_trace *t, uint64_t origin) {
    {
        s->t_thrown = s->t_thrown > origin ? s->t_thrown - origin : 0;
        s->t_end = s->t_end > origin ? s->t_end - origin : 0;
        s->type = s->type_sid ? dnp_trace_string(t, s->type_sid) : NULL;
        s->message = s->message_sid ? dnp_trace_string(t, s->message_sid) : NULL;
        s->stack = s->stack_sid ? dnp_trace_string(t, s->stack_sid) : NULL;
        s->catcher = s->catcher_sid ? dnp_trace_string(t, s->catcher_sid) : NULL;
        s->throw_site = s->site_sid ? dnp_trace_string(t, s->site_sid) : NULL;
        if (s->stack && *s->stack) {
            /* The throw site is a line of the stack: keep it in a string of its own. */
            size_t n;
            const char *site = dnp_story_site_in_stack(s->stack, &n);
            s->throw_site = s->stack;
            if (site[n] || site != s->stack) {
                s->site_buf = malloc(n + 1);
                if (s->site_buf) {
                    memcpy(s->site_buf, site, n);
                    s->site_buf[n] = 0;
                    s->throw_site = s->site_buf;
                }
            }
        }
        for (size_t j = 0; j < s->nsteps && s->steps; j++) {
            dnp_story_step *st = &s->steps[j];
            st->time_ns = st->time_ns > origin ? st->time_ns - origin : 0;
            st->function = st->fn_sid ? dnp_trace_string(t, st->fn_sid) : NULL;
        }
    }
}

/* Story k's links to earlier ones, once its own and theirs are resolved. */
static void link(dnp_stories *o, size_t k) {
    {
        dnp_story *s = &o->v[k];
        if (!s->rethrow_of)
            s->rethrow_of = earlier_throw(o, k);
        if (!s->rethrow_of && s->kept_trace)
            s->rethrow_of = same_exception(o, k);
        s->internal = s->catcher && dnp_is_framework_name(s->catcher) && dnp_is_framework_name(s->throw_site);
        if (s->fate != EXC_ABANDONED && s->fate != EXC_RETHROWN)
            s->ended_by = 0;
    }
}

int dnp_stories_build(const dnp_trace *t, dnp_stories *out) {
    memset(out, 0, sizeof *out);
    dnp_stories_builder *b = dnp_stories_begin(1);
    if (!b)
        return -1;
    for (size_t i = 0; i < t->nevents; i++) {
        if (t->events[i].thread > t->nthreads)
            continue;
        if (dnp_stories_feed(b, &t->events[i], i) < 0) {
            dnp_stories_abort(b);
            return -1;
        }
    }
    return dnp_stories_finish(b, t, 0, out);
}

int dnp_stories_read(const char *path, int keep_steps, dnp_stories *out, dnp_trace_stream **stream,
                     dnp_trace **loaded, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    *stream = NULL;
    *loaded = NULL;
    if (dnp_setting_env_value(DNP_SET_NO_STREAM)) {
        if (dnp_trace_load(path, loaded, err, errlen) != 0)
            return -1;
        if (dnp_stories_build(*loaded, out) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    if (dnp_trace_stream_open(path, stream, err, errlen) != 0)
        return -1;
    dnp_stories_builder *b = dnp_stories_begin(keep_steps);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    dnp_trace_event e;
    int rc;
    while ((rc = dnp_trace_stream_next(*stream, &e)) > 0)
        if (dnp_stories_feed(b, &e, DNP_STORY_NO_EVENT) < 0) {
            rc = -2;
            break;
        }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, rc == -2 ? "out of memory" : dnp_trace_stream_error(*stream));
        dnp_stories_abort(b);
        return -1;
    }
    if (dnp_stories_finish(b, dnp_trace_stream_trace(*stream), dnp_trace_stream_origin(*stream), out) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void dnp_stories_free(dnp_stories *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].steps);
        free(s->v[i].site_buf);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

const char *dnp_story_fate_text(const dnp_story *s, const dnp_stories *all, char *buf, size_t len) {
    (void)all;
    switch (s->fate) {
    case EXC_CAUGHT:
        snprintf(buf, len, "caught in %s", s->catcher ? s->catcher : "?");
        break;
    case EXC_RUNTIME:
        if (s->parent_phase == EXC_FILTER)
            snprintf(buf, len, "escaped the filter of #%zu: handled by the runtime, the filter counts as false",
                     s->parent);
        else
            snprintf(buf, len, "handled by the runtime or native code: no managed catcher, no catch block ran");
        break;
    case EXC_ABANDONED:
        if (s->ended_by && s->no_catcher && s->phase == EXC_FINALLY)
            snprintf(buf, len, "replaced by #%zu, thrown in its finally block, which left the block (abandoned; "
                               "no catch matched it, and the program went on)", s->ended_by);
        else if (s->ended_by)
            snprintf(buf, len, "abandoned: #%zu, thrown in its %s block, left the block", s->ended_by,
                     exc_phase_name(s->phase));
        else
            snprintf(buf, len, "abandoned in its %s block", exc_phase_name(s->phase));
        break;
    case EXC_RETHROWN:
        snprintf(buf, len, "rethrown from its catch block as #%zu", s->ended_by);
        break;
    default:
        if (s->no_catcher)
            snprintf(buf, len, "unhandled: no catcher was found, and the trace ends during the unwind "
                               "(the process died)");
        else
            snprintf(buf, len, "in flight when the trace ends (%s)", exc_phase_name(s->phase));
        break;
    }
    return buf;
}
