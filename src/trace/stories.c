/* stories.c: exception stories from a trace (stories.h). */
#include "stories.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct thread_state {
    exc_machine m;
    size_t story_at[EXC_MAX_NEST]; /* story index + 1 of each level */
} thread_state;

const char *dnp_story_function(const dnp_trace *t, const dnp_trace_event *e) {
    const dnp_event_info *info = &dnp_events[e->kind];
    unsigned at = 0;
    for (int f = 0; f < info->nfields; f++) {
        if (info->field_types[f] == DNP_FT_FUNCTION)
            return at + 1 < e->nvalues ? dnp_trace_string(t, e->v[at + 1]) : NULL;
        at += dnp_field_nvalues[info->field_types[f]];
    }
    return NULL;
}

int dnp_story_is_framework(const char *name) {
    static const char *const prefixes[] = {"System.", "Microsoft.", "Internal.", "Interop"};
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static int add_step(dnp_story *s, size_t ev) {
    if (s->nsteps == s->capsteps) {
        size_t cap = s->capsteps ? s->capsteps * 2 : 16;
        dnp_story_step *p = realloc(s->steps, cap * sizeof *p);
        if (!p)
            return -1;
        s->steps = p;
        s->capsteps = cap;
    }
    s->steps[s->nsteps].ev = ev;
    s->steps[s->nsteps].verdict = 0;
    s->nsteps++;
    return 0;
}

static void end_story(dnp_stories *out, size_t idx, const exc_level *l, const dnp_trace *t) {
    dnp_story *s = &out->v[idx];
    s->fate = l->fate;
    s->phase = l->phase;
    s->no_catcher = l->no_catcher;
    if (s->nsteps)
        s->t_end = t->events[s->steps[s->nsteps - 1].ev].time_ns;
}

/* The last earlier story of the same object and type: the exception thrown again. */
static size_t earlier_throw(const dnp_stories *out, size_t idx) {
    const dnp_story *s = &out->v[idx];
    size_t limit = idx > 4096 ? idx - 4096 : 0;
    for (size_t i = idx; i-- > limit;) {
        const dnp_story *o = &out->v[i];
        if (o->object == s->object && (o->type == s->type || (o->type && s->type && !strcmp(o->type, s->type))))
            return i + 1;
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
        if (o->has_details && o->hresult == s->hresult && o->type && !strcmp(o->type, s->type) &&
            (o->message == s->message || (o->message && s->message && !strcmp(o->message, s->message))))
            return i + 1;
    }
    return 0;
}

static void details(const dnp_trace *t, const dnp_trace_event *e, thread_state *ts, dnp_stories *out) {
    int d = ts->m.depth;
    if (d == 0 || !ts->story_at[d - 1])
        return;
    dnp_story *s = &out->v[ts->story_at[d - 1] - 1];
    if (s->has_details || s->object != e->v[0])
        return;
    s->has_details = 1;
    s->message = e->v[1] ? dnp_trace_string(t, e->v[1]) : NULL;
    s->hresult = (uint32_t)e->v[2];
    s->kept_trace = e->v[5] & 1;
    /* The agent followed the object of the catch below across a GC: this is
     * that object thrown again (`throw;` after a collection moved it). */
    if (exc_machine_details(&ts->m, s->object, e->v[5]) && ts->story_at[d - 2])
        s->rethrow_of = ts->story_at[d - 2];
    /* A fresh exception (no stack trace yet) at the address of an earlier one:
     * the address was reused after a GC, unless that earlier one is in its
     * catch right below (`throw ex;`, which resets the trace). */
    if (s->rethrow_of && !s->kept_trace &&
        !(d >= 2 && ts->story_at[d - 2] == s->rethrow_of && ts->m.lv[d - 2].phase == EXC_CATCH))
        s->rethrow_of = 0;
    if (!s->rethrow_of && s->kept_trace)
        s->rethrow_of = same_exception(out, ts->story_at[d - 1] - 1);
    s->stack = e->v[3] ? dnp_trace_string(t, e->v[3]) : NULL;
    if (s->stack && *s->stack) {
        /* The throw site is the stack's first line: keep it in a string of its own. */
        const char *nl = strchr(s->stack, '\n');
        s->throw_site = s->stack;
        if (nl && !s->site_buf) {
            size_t n = (size_t)(nl - s->stack);
            s->site_buf = malloc(n + 1);
            if (s->site_buf) {
                memcpy(s->site_buf, s->stack, n);
                s->site_buf[n] = 0;
                s->throw_site = s->site_buf;
            }
        }
    }
    /* The agent saw, from the stack, that levels below this one had left their
     * handlers: they were abandoned. */
    int want = (int)e->v[4];
    if (want >= 1 && want < d) {
        exc_level top = ts->m.lv[d - 1];
        size_t top_story = ts->story_at[d - 1];
        while (ts->m.depth > want - 1) {
            int i = ts->m.depth - 1;
            if (i != d - 1) {
                ts->m.lv[i].fate = EXC_ABANDONED;
                if (ts->story_at[i]) {
                    end_story(out, ts->story_at[i] - 1, &ts->m.lv[i], t);
                    if (!out->v[ts->story_at[i] - 1].ended_by)
                        out->v[ts->story_at[i] - 1].ended_by = top_story;
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

int dnp_stories_build(const dnp_trace *t, dnp_stories *out) {
    memset(out, 0, sizeof *out);
    thread_state *threads = calloc(t->nthreads + 1, sizeof *threads);
    size_t cap = 0;
    if (!threads)
        return -1;
    exc_step *st = malloc(sizeof *st);
    if (!st) {
        free(threads);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < t->nevents && rc == 0; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->thread > t->nthreads)
            continue;
        thread_state *ts = &threads[e->thread];
        if (e->kind == DNP_EV_ExceptionDetails) {
            details(t, e, ts, out);
            continue;
        }
        if (!exc_machine_is_event(e->kind))
            continue;
        uint64_t fn = 0, object = 0;
        if (e->kind == DNP_EV_ExceptionThrown)
            object = e->v[0];
        else if (e->kind == DNP_EV_ExceptionCatcherEnter)
            fn = e->v[0], object = e->v[2];
        else if (e->nvalues >= 2)
            fn = e->v[0];
        int d0 = ts->m.depth;
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
            if (target == sid && rc == 0)
                rc = add_step(&out->v[sid - 1], i);
            end_story(out, sid - 1, &st->ended[k], t);
        }
        if (st->flags & EXC_BEGIN) {
            if (d0 == EXC_MAX_NEST && st->nended == 0)
                memmove(&ts->story_at[0], &ts->story_at[1], (EXC_MAX_NEST - 1) * sizeof ts->story_at[0]);
            if (out->n == cap) {
                size_t ncap = cap ? cap * 2 : 256;
                dnp_story *v = realloc(out->v, ncap * sizeof *v);
                if (!v) {
                    rc = -1;
                    break;
                }
                out->v = v;
                cap = ncap;
            }
            dnp_story *s = &out->v[out->n];
            memset(s, 0, sizeof *s);
            s->id = ++out->n;
            s->thread = e->thread;
            s->thrown = i;
            s->object = object;
            s->type = e->nvalues >= 3 ? dnp_trace_string(t, e->v[2]) : NULL;
            s->t_thrown = s->t_end = e->time_ns;
            for (int k = 0; k < st->nended; k++)
                if (st->ended[k].fate == EXC_RETHROWN && ts->story_at[d0 - 1 - k])
                    out->v[ts->story_at[d0 - 1 - k] - 1].ended_by = s->id;
            int top = ts->m.depth - 1;
            ts->story_at[top] = s->id;
            s->parent = top > 0 ? ts->story_at[top - 1] : 0;
            s->parent_phase = ts->m.lv[top].parent_phase;
            s->rethrow_of = earlier_throw(out, s->id - 1);
            if (s->parent && (s->parent_phase == EXC_CATCH || s->parent_phase == EXC_FINALLY) &&
                !out->v[s->parent - 1].ended_by)
                out->v[s->parent - 1].ended_by = s->id; /* if it ends abandoned, this is why */
            rc = add_step(s, i);
            continue;
        }
        if (target)
            continue;
        if (ts->m.depth == 0 || !ts->story_at[ts->m.depth - 1])
            continue;
        dnp_story *s = &out->v[ts->story_at[ts->m.depth - 1] - 1];
        rc = add_step(s, i);
        if (rc)
            break;
        const char *name = dnp_story_function(t, e);
        switch (e->kind) {
        case DNP_EV_ExceptionSearchFunctionEnter: {
            s->searched++;
            if (!s->throw_site)
                s->throw_site = name;
            /* The machine has just seen a rethrow from the catch below: this is
             * the same exception going on, not one nested in it. */
            int d = ts->m.depth;
            if (s->searched == 1 && d >= 2 && ts->m.lv[d - 2].fate == EXC_RETHROWN &&
                s->parent == ts->story_at[d - 2]) {
                out->v[s->parent - 1].ended_by = s->id;
                s->parent = 0;
                s->parent_phase = 0;
            }
            break;
        }
        case DNP_EV_ExceptionSearchFilterEnter: s->filters++; break;
        case DNP_EV_ExceptionSearchCatcherFound:
        case DNP_EV_ExceptionCatcherEnter: s->catcher = name; break;
        case DNP_EV_ExceptionUnwindFunctionLeave:
            if (st->flags & EXC_FRAME_LEFT)
                s->unwound++;
            break;
        case DNP_EV_ExceptionUnwindFinallyEnter: s->finallys++; break;
        default: break;
        }
        s->t_end = e->time_ns;
        if (st->flags & EXC_STRAY_LEAVE)
            s->steps[s->nsteps - 1].verdict = 3;
        if (st->flags & (EXC_FILTER_TRUE | EXC_FILTER_FALSE)) {
            /* The verdict belongs to the last filter this story left. */
            for (size_t k = s->nsteps; k-- > 0;)
                if (t->events[s->steps[k].ev].kind == DNP_EV_ExceptionSearchFilterLeave) {
                    s->steps[k].verdict = st->flags & EXC_FILTER_TRUE ? 1 : 2;
                    break;
                }
        }
    }
    /* Stories still in flight when the trace ends. */
    for (size_t th = 0; th <= t->nthreads && rc == 0; th++)
        for (int k = 0; k < threads[th].m.depth; k++)
            if (threads[th].story_at[k]) {
                exc_level l = threads[th].m.lv[k];
                /* One whose handler a nested exception replaced is over. */
                l.fate = l.replaced && k == threads[th].m.depth - 1 ? EXC_ABANDONED : EXC_OPEN;
                end_story(out, threads[th].story_at[k] - 1, &l, t);
            }
    for (size_t k = 0; k < out->n; k++) {
        dnp_story *s = &out->v[k];
        s->internal = s->catcher && dnp_story_is_framework(s->catcher) && dnp_story_is_framework(s->throw_site);
        if (s->fate != EXC_ABANDONED && s->fate != EXC_RETHROWN)
            s->ended_by = 0;
    }
    free(st);
    free(threads);
    return rc;
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
