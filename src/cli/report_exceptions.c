/* report_exceptions.c: exception stories for people and tools (issue 4):
 * `dnprof print --exceptions` tells each story in order, `dnprof report
 * --exceptions` adds them up by type, throw site and catch site, and with
 * --json gives one object per exception with its story. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "prettyname.h"
#include "report.h"
#include "stories.h"
#include "timeorder.h"
#include "dnp_vec.h"

static const char *or_q(const char *s) {
    return s && *s ? s : "?";
}

static const char *fate_word(const dnp_story *s) {
    switch (s->fate) {
    case EXC_CAUGHT: return "caught";
    case EXC_RUNTIME: return "runtime";
    case EXC_ABANDONED: return "abandoned";
    case EXC_RETHROWN: return "rethrown";
    default: return s->no_catcher ? "unhandled" : "open";
    }
}

static void put_us(FILE *out, uint64_t ns) {
    char buf[32];
    fputs(report_fmt_ns(ns, buf), out);
}

/* ---- print --exceptions: each story ---- */

static void story_step_text(const dnp_story_step *st, FILE *out) {
    const char *fn = or_q(st->function);
    fputs("    ", out);
    switch (st->kind) {
    case DNP_EV_ExceptionThrown: fputs("thrown", out); break;
    case DNP_EV_ExceptionSearchFunctionEnter: fprintf(out, "search  %s", fn); break;
    case DNP_EV_ExceptionSearchFilterEnter: fprintf(out, "filter  %s", fn); break;
    case DNP_EV_ExceptionSearchFilterLeave:
        fprintf(out, "filter  -> %s", st->verdict == 1 ? "true" : st->verdict == 2 ? "false" : "?");
        break;
    case DNP_EV_ExceptionSearchCatcherFound: fprintf(out, "catcher found in %s", fn); break;
    case DNP_EV_ExceptionUnwindFunctionEnter: fprintf(out, "unwind  %s", fn); break;
    case DNP_EV_ExceptionUnwindFunctionLeave:
        fputs(st->verdict == 3 ? "no managed catcher: the first pass ends, the unwind begins" : "unwind  <- frame left",
              out);
        break;
    case DNP_EV_ExceptionSearchFunctionLeave: fputs("search  <- frame done", out); break;
    case DNP_EV_ExceptionUnwindFinallyEnter: fprintf(out, "finally %s", fn); break;
    case DNP_EV_ExceptionUnwindFinallyLeave: fputs("finally <- done", out); break;
    case DNP_EV_ExceptionCatcherEnter: fprintf(out, "catch   %s", fn); break;
    case DNP_EV_ExceptionCatcherLeave: fputs("catch   <- done", out); break;
    default: fputs(st->kind < DNP_EV_COUNT ? dnp_events[st->kind].name : "?", out); break;
    }
    fputc('\n', out);
}

static void story_text(const dnp_stories *all, const dnp_story *s, FILE *out) {
    char buf[512];
    fprintf(out, "#%zu thread %u  %s", s->id, s->thread, or_q(s->type));
    if (s->has_details) {
        fputs(": ", out);
        if (s->message) {
            fputc('"', out);
            cli_put_text(out, s->message, 1);
            fputc('"', out);
        } else {
            fputs("(no message set)", out);
        }
        const char *hr = dnp_hresult_name(s->hresult);
        fprintf(out, "  HResult 0x%08X%s%s%s", s->hresult, hr ? " (" : "", hr ? hr : "", hr ? ")" : "");
    }
    fputc('\n', out);
    if (s->parent)
        fprintf(out, "  thrown while #%zu was in its %s%s\n", s->parent, exc_phase_name(s->parent_phase),
                s->parent_phase == EXC_SEARCH || s->parent_phase == EXC_UNWIND ? " pass" : " block");
    if (s->rethrow_of)
        fprintf(out, "  the same object as #%zu, thrown again: %s\n", s->rethrow_of,
                s->kept_trace ? "its stack trace kept (throw; or an await)" : "its stack trace reset (throw ex;)");
    if (s->internal)
        fputs("  first chance, internal: thrown and caught in framework code\n", out);
    if (s->stack) {
        fputs("  stack:\n", out);
        for (const char *p = s->stack; *p;) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(out, "    at %.*s\n", (int)n, p);
            p += n + (nl ? 1 : 0);
        }
    } else if (s->throw_site) {
        fprintf(out, "  thrown in %s\n", s->throw_site);
    }
    fputs("  story:\n", out);
    for (size_t k = 1; k < s->nsteps; k++)
        story_step_text(&s->steps[k], out);
    fprintf(out, "  outcome: %s; ", dnp_story_fate_text(s, all, buf, sizeof buf));
    put_us(out, s->t_end - s->t_thrown);
    fputs(s->fate == EXC_CAUGHT ? " from throw to the end of the catch\n\n" : " from throw to its last event\n\n", out);
}

static void story_json(const dnp_stories *all, const dnp_story *s, FILE *out) {
    char buf[512];
    fprintf(out, "{\"id\":%zu,\"thread\":%u,\"t_ns\":%llu,\"object\":\"0x%llx\",\"type\":", s->id, s->thread,
            (unsigned long long)s->t_thrown, (unsigned long long)s->object);
    cli_put_json(out, s->type);
    fputs(",\"message\":", out);
    cli_put_json(out, s->message);
    if (s->has_details)
        fprintf(out, ",\"hresult\":\"0x%08X\"", s->hresult);
    else
        fputs(",\"hresult\":null", out);
    fputs(",\"stack\":[", out);
    if (s->stack)
        for (const char *p = s->stack; *p;) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            char frame[2048];
            snprintf(frame, sizeof frame, "%.*s", (int)(n < sizeof frame ? n : sizeof frame - 1), p);
            if (p != s->stack)
                fputc(',', out);
            cli_put_json(out, frame);
            p += n + (nl ? 1 : 0);
        }
    fputs("],\"throw_site\":", out);
    cli_put_json(out, s->throw_site);
    fputs(",\"catcher\":", out);
    cli_put_json(out, s->fate == EXC_CAUGHT ? s->catcher : NULL);
    fprintf(out, ",\"outcome\":\"%s\",\"outcome_text\":", fate_word(s));
    cli_put_json(out, dnp_story_fate_text(s, all, buf, sizeof buf));
    fprintf(out, ",\"internal\":%s,\"duration_ns\":%llu", s->internal ? "true" : "false",
            (unsigned long long)(s->t_end - s->t_thrown));
    if (s->parent)
        fprintf(out, ",\"parent\":%zu,\"parent_in\":\"%s\"", s->parent, exc_phase_name(s->parent_phase));
    else
        fputs(",\"parent\":null", out);
    if (s->rethrow_of)
        fprintf(out, ",\"same_object_as\":%zu,\"stack_trace_kept\":%s", s->rethrow_of,
                s->kept_trace ? "true" : "false");
    if (s->ended_by)
        fprintf(out, ",\"ended_by\":%zu", s->ended_by);
    fprintf(out, ",\"frames_searched\":%u,\"filters\":%u,\"finally_blocks\":%u,\"frames_unwound\":%u,\"story\":[",
            s->searched, s->filters, s->finallys, s->unwound);
    for (size_t k = 0; k < s->nsteps; k++) {
        const dnp_story_step *e = &s->steps[k];
        fprintf(out, "%s{\"t_ns\":%llu,\"event\":\"%s\"", k ? "," : "", (unsigned long long)e->time_ns,
                e->kind < DNP_EV_COUNT ? dnp_events[e->kind].name : "?");
        const char *fn = e->function;
        if (fn) {
            fputs(",\"function\":", out);
            cli_put_json(out, fn);
        }
        if (s->steps[k].verdict)
            fprintf(out, ",\"verdict\":%s", s->steps[k].verdict == 1 ? "true" : "false");
        fputc('}', out);
    }
    fputs("]}", out);
}

/* Reads the trace at path in time order (streamed: timeorder.h) and hands each
 * story to emit as soon as it is over, in the order of the throws. Memory
 * holds the stories in flight and the last few thousand, never the events, nor
 * all the stories. *counts gets what is left: the counts of unexpected and of
 * exception events. Warns when the trace is not complete. 0, or 1 after saying
 * why. */
static int read_stories(const char *path, int keep_steps, dnp_story_emit emit, void *ctx, dnp_stories *counts) {
    char err[600];
    timeorder *o = NULL;
    memset(counts, 0, sizeof *counts);
    if (timeorder_open(path, NULL, NULL, &o, err, sizeof err) != 0) {
        error("%s", err);
        return 1;
    }
    const dnp_trace *t = timeorder_trace(o);
    report_warn_trace(path, t, 1);
    dnp_pretty_emit named = {emit, ctx}; /* names as every report shows them */
    dnp_stories_builder *b = dnp_stories_begin_ordered(keep_steps, t, dnp_pretty_story_emit, &named);
    int rc = b ? 0 : -2;
    dnp_trace_event e;
    size_t idx;
    int got = 0;
    while (rc == 0 && (got = timeorder_next(o, &e, &idx)) > 0)
        if (dnp_stories_feed(b, &e, t->nevents ? idx : DNP_STORY_NO_EVENT) < 0)
            rc = -2;
    if (rc == 0 && got < 0) {
        error("%s: %s", path, timeorder_error(o));
        dnp_stories_abort(b);
        timeorder_close(o);
        return 1;
    }
    if (rc == 0 && dnp_stories_finish(b, t, 0, counts) != 0)
        rc = -2;
    else if (rc != 0)
        dnp_stories_abort(b);
    timeorder_close(o);
    if (rc != 0) {
        error("out of memory");
        return 1;
    }
    return 0;
}

typedef struct printing {
    FILE *out;
    int json;
    size_t n;
} printing;

static void print_one(void *ctx, const dnp_story *s, const dnp_stories *all) {
    printing *pr = ctx;
    pr->n++;
    if (pr->json) {
        story_json(all, s, pr->out);
        fputc('\n', pr->out);
    } else {
        story_text(all, s, pr->out);
    }
}

int print_exceptions(const char *path, int json, FILE *out) {
    dnp_stories s;
    printing pr = {out, json, 0};
    if (read_stories(path, 1, print_one, &pr, &s) != 0)
        return 1;
    if (!json && pr.n == 0)
        fputs(s.exception_events ? "no exception was thrown\n"
                                 : "no exception events in this trace: record with 'dnprof run --exceptions'\n",
              out);
    if (!json && s.unexpected) {
        char c[32];
        fprintf(out, "# %s exception events did not fit the state machine (see the '# warning' notes of "
                     "'dnprof print')\n",
                cli_fmt_count(s.unexpected, c));
    }
    dnp_stories_free(&s);
    return fflush(out) == 0 && !ferror(out) ? 0 : 1;
}

/* ---- report --exceptions: sums ---- */

typedef struct group {
    char *key;
    uint64_t count, caught, internal, unhandled, other;
    uint64_t total_ns, max_ns;
} group;

typedef struct groups {
    group *v;
    size_t n, cap;
} groups;

static group *group_of(groups *g, const char *key) {
    key = or_q(key);
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->v[i].key, key))
            return &g->v[i];
    if (DNP_VEC_RESERVE(g->v, g->cap, g->n + 1, 32) != 0)
        return NULL;
    char *copy = strdup(key); /* a throw site may live in a story that goes */
    if (!copy)
        return NULL;
    group *r = &g->v[g->n++];
    memset(r, 0, sizeof *r);
    r->key = copy;
    return r;
}

static void group_add(group *g, const dnp_story *s) {
    if (!g)
        return;
    uint64_t ns = s->t_end - s->t_thrown;
    g->count++;
    g->caught += s->fate == EXC_CAUGHT;
    g->internal += s->internal && s->fate == EXC_CAUGHT; /* of the caught: the column says so */
    g->unhandled += s->fate == EXC_OPEN && s->no_catcher;
    g->other += s->fate != EXC_CAUGHT && !(s->fate == EXC_OPEN && s->no_catcher);
    g->total_ns += ns;
    if (ns > g->max_ns)
        g->max_ns = ns;
}

static int by_count(const void *a, const void *b) {
    const group *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* qsort wants a real array even for no elements (UBSan): sort only what there is. */
static void groups_sort(groups *g) {
    if (g->n > 1)
        qsort(g->v, g->n, sizeof *g->v, by_count);
}

static void groups_text(FILE *out, const char *title, groups *g, unsigned top) {
    groups_sort(g);
    fprintf(out, "%s\n  %10s %8s %8s %8s %10s %10s  %s\n", title, "count", "caught", "internal", "other",
            "mean", "max", "name");
    for (size_t i = 0; i < g->n && (!top || i < top); i++) {
        const group *r = &g->v[i];
        char c[32], k[32], n[32], o[32];
        fprintf(out, "  %10s %8s %8s %8s ", cli_fmt_count(r->count, c), cli_fmt_count(r->caught, k),
                cli_fmt_count(r->internal, n), cli_fmt_count(r->other + r->unhandled, o));
        char mean[32], max[32];
        report_fmt_ns(r->count ? r->total_ns / r->count : 0, mean);
        report_fmt_ns(r->max_ns, max);
        fprintf(out, "%10s %10s  %s\n", mean, max, r->key);
    }
    if (top && g->n > top)
        fprintf(out, "  ... and %s more (--top N to see more)\n", CLI_COUNT(g->n - top));
    fputc('\n', out);
}

static void groups_json(FILE *out, const char *name, groups *g) {
    groups_sort(g);
    fprintf(out, ",\"%s\":[", name);
    for (size_t i = 0; i < g->n; i++) {
        const group *r = &g->v[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", out);
        cli_put_json(out, r->key);
        fprintf(out, ",\"count\":%llu,\"caught\":%llu,\"internal\":%llu,\"unhandled\":%llu,\"total_ns\":%llu,\"max_ns\":%llu}",
                (unsigned long long)r->count, (unsigned long long)r->caught, (unsigned long long)r->internal,
                (unsigned long long)r->unhandled, (unsigned long long)r->total_ns, (unsigned long long)r->max_ns);
    }
    fputc(']', out);
}

typedef struct summing {
    groups types, sites, catchers;
    uint64_t n, caught, internal, unhandled, runtime, abandoned, rethrown, open;
    uint64_t again; /* throws of an object thrown before: `throw;`, `throw ex;`, an await */
    int oom;
} summing;

static void sum_one(void *ctx, const dnp_story *x, const dnp_stories *all) {
    (void)all;
    summing *m = ctx;
    group *g[3] = {group_of(&m->types, x->type), group_of(&m->sites, x->throw_site),
                   x->fate == EXC_CAUGHT ? group_of(&m->catchers, x->catcher) : NULL};
    m->oom |= !g[0] || !g[1] || (x->fate == EXC_CAUGHT && !g[2]);
    for (int k = 0; k < 3; k++)
        group_add(g[k], x);
    m->n++;
    m->caught += x->fate == EXC_CAUGHT;
    m->internal += x->internal && x->fate == EXC_CAUGHT; /* "N caught (M of them internal)" */
    m->runtime += x->fate == EXC_RUNTIME;
    m->abandoned += x->fate == EXC_ABANDONED;
    m->rethrown += x->fate == EXC_RETHROWN;
    m->unhandled += x->fate == EXC_OPEN && x->no_catcher;
    m->open += x->fate == EXC_OPEN && !x->no_catcher;
    m->again += x->rethrow_of != 0;
}

typedef struct listing {
    FILE *out;
    size_t n;
} listing;

static void list_one(void *ctx, const dnp_story *s, const dnp_stories *all) {
    listing *l = ctx;
    if (l->n++)
        fputs(",\n", l->out);
    story_json(all, s, l->out);
}

static void groups_free(groups *g) {
    for (size_t i = 0; i < g->n; i++)
        free(g->v[i].key);
    free(g->v);
}

/* Whether path can be read twice (not a pipe). */
static int rereadable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int report_exceptions(const char *path, int json, unsigned top, FILE *out) {
    /* The sums in one read; with --json, the stories in a second one, after
     * the sums they come after: memory holds neither the events nor all the
     * stories. A pipe is read once, and its stories kept. */
    summing m;
    memset(&m, 0, sizeof m);
    dnp_stories s, kept;
    memset(&kept, 0, sizeof kept);
    dnp_trace_stream *kept_stream = NULL;
    dnp_trace *kept_trace = NULL;
    if (json && !rereadable(path)) {
        char err[600];
        if (dnp_stories_read(path, 1, &kept, &kept_stream, &kept_trace, err, sizeof err) != 0) {
            error("%s", err);
            dnp_trace_stream_close(kept_stream);
            dnp_trace_free(kept_trace);
            return 1;
        }
        for (size_t i = 0; i < kept.n; i++)
            sum_one(&m, &kept.v[i], &kept);
        s = kept;
        s.v = NULL;
        s.n = 0;
    } else if (read_stories(path, 0, sum_one, &m, &s) != 0) {
        return 1;
    }
    int rc = 0;
    if (m.oom) {
        error("out of memory");
        rc = 1;
    } else if (json) {
        fprintf(out, "{\"exceptions_total\":%llu,\"thrown_new\":%llu,\"caught\":%llu,\"internal\":%llu,\"handled_by_runtime\":%llu,"
                     "\"abandoned\":%llu,\"rethrown\":%llu,\"left_by_rethrow\":%llu,\"unhandled\":%llu,"
                     "\"in_flight\":%llu,\"unexpected_events\":%llu",
                (unsigned long long)m.n, (unsigned long long)(m.n - m.again), (unsigned long long)m.caught,
                (unsigned long long)m.internal, (unsigned long long)m.runtime, (unsigned long long)m.abandoned, (unsigned long long)m.again,
                (unsigned long long)m.rethrown, (unsigned long long)m.unhandled, (unsigned long long)m.open,
                (unsigned long long)s.unexpected);
        groups_json(out, "by_type", &m.types);
        groups_json(out, "by_throw_site", &m.sites);
        groups_json(out, "by_catch_site", &m.catchers);
        fputs(",\"exceptions\":[", out);
        listing l = {out, 0};
        if (kept_stream || kept_trace) {
            for (size_t i = 0; i < kept.n; i++)
                list_one(&l, &kept.v[i], &kept);
        } else {
            dnp_stories again;
            if (read_stories(path, 1, list_one, &l, &again) != 0)
                rc = 1;
            dnp_stories_free(&again);
        }
        fputs("]}\n", out);
    } else if (m.n == 0) {
        fputs(s.exception_events ? "no exception was thrown\n"
                                 : "no exception events in this trace: record with 'dnprof run --exceptions'\n",
              out);
    } else {
        char c[11][32];
        if (m.again && m.again < m.n) /* an await rethrows what it awaited: a throw each, one exception */
            fprintf(out, "%s exception%s thrown, %s more throw%s of the same objects (rethrown: throw;, an await); "
                         "each throw counts below\n", cli_fmt_count(m.n - m.again, c[9]), CLI_PLURAL(m.n - m.again),
                    cli_fmt_count(m.again, c[10]), CLI_PLURAL(m.again));
        fprintf(out, "%s exception%s: %s caught (%s of them internal to the framework), %s handled by the "
                     "runtime, %s abandoned%s, %s left their catch by a rethrow, %s unhandled, %s in flight at "
                     "the end; %s rethrown (an object thrown again: throw;, throw ex;, an await)\n\n",
                cli_fmt_count(m.n, c[0]), CLI_PLURAL(m.n), cli_fmt_count(m.caught, c[1]), cli_fmt_count(m.internal, c[2]),
                cli_fmt_count(m.runtime, c[3]), cli_fmt_count(m.abandoned, c[4]),
                m.abandoned ? " (another exception left the catch or finally they ran, as a wrap does)" : "",
                cli_fmt_count(m.rethrown, c[5]),
                cli_fmt_count(m.unhandled, c[6]), cli_fmt_count(m.open, c[7]), cli_fmt_count(m.again, c[8]));
        groups_text(out, "by type (mean and max: from throw to the end of the catch, or to the last event)", &m.types, top);
        groups_text(out, "by throw site", &m.sites, top);
        groups_text(out, "by catch site", &m.catchers, top);
        if (s.unexpected)
            fprintf(out, "%s exception event%s did not fit the state machine\n", cli_fmt_count(s.unexpected, c[0]),
                    CLI_PLURAL(s.unexpected));
    }
    groups_free(&m.types);
    groups_free(&m.sites);
    groups_free(&m.catchers);
    dnp_stories_free(&s);
    dnp_stories_free(&kept);
    dnp_trace_stream_close(kept_stream);
    dnp_trace_free(kept_trace);
    if (fflush(out) != 0 || ferror(out))
        rc = 1;
    return rc;
}
