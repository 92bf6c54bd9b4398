/* cmd_print.c: `dnprof print`: a trace as DNProfiler's indented event log
 * (docs/design-notes.md#event-log), or as one JSON object per event.
 *
 * Nesting is per thread: a START event prints at the thread's level and opens a
 * level, a FINISH closes one and prints at the level it returns to. A START whose
 * entity had no name yet (the runtime's IDs are not usable at *Started) borrows
 * the name of the FINISH that closes it on the same thread with the same ID.
 * Past 32 levels the indentation stops and the level is shown as {N}.
 *
 * The trace is streamed (timeorder.h): a first pass finds the names STARTs
 * borrow, the second hands the events out in time order; memory is bounded by
 * the events that overlap in time, not by the trace. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dnp_vec.h"
#include "families.h"
#include "nesting.h"
#include "print_il.h"
#include "report.h"
#include "timeorder.h"
#include "trace_reader.h"

enum ids_mode { IDS_BOTH, IDS_ONLY, NAMES_ONLY };

/* A name a START event borrows from its FINISH: the START's index in the
 * events' order (the loaded trace's, or the stream's file order), the string. */
typedef struct borrow {
    size_t ev;
    uint64_t sid;
} borrow;

typedef struct borrows {
    borrow *v;
    size_t n, cap;
} borrows;

typedef struct printer {
    const dnp_trace *t;
    FILE *out;
    int json, show_time, use_tid;
    enum ids_mode ids;
    uint32_t families;
    const uint8_t *thread_on; /* by ordinal; NULL: every thread */
    size_t nthread_on;
    borrows borrowed;     /* names taken from FINISH events */
    dnp_nest_state *nest; /* per thread ordinal */
    int tcol;             /* width of the thread column */
} printer;

/* Where each field's values start in dnp_trace_event.v, per event kind. */
static uint8_t value_at[DNP_EV_COUNT][DNP_MAX_FIELDS];
/* The first entity field of each kind, or -1. */
static int8_t first_entity[DNP_EV_COUNT];

static void init_tables(void) {
    for (int k = 0; k < DNP_EV_COUNT; k++) {
        const dnp_event_info *info = &dnp_events[k];
        unsigned at = 0;
        first_entity[k] = -1;
        for (int f = 0; f < info->nfields; f++) {
            value_at[k][f] = (uint8_t)at;
            at += dnp_field_nvalues[info->field_types[f]];
            if (first_entity[k] < 0 && dnp_field_nvalues[info->field_types[f]] == 2)
                first_entity[k] = (int8_t)f;
        }
    }
}

static uint64_t value(const dnp_trace_event *e, unsigned i) {
    return i < e->nvalues && i < DNP_MAX_VALUES ? e->v[i] : 0;
}

/* START, FINISH or NONE for this event; a transition's reason decides. */
static dnp_nest event_nest(const dnp_trace_event *e) {
    const dnp_event_info *info = &dnp_events[e->kind];
    if (info->nest != DNP_NEST_TRANSITION)
        return info->nest;
    for (int f = 0; f < info->nfields; f++) {
        if (info->field_types[f] == DNP_FT_TRANSITION_REASON) {
            uint64_t reason = value(e, value_at[e->kind][f]);
            /* COR_PRF_TRANSITION_CALL = 0, COR_PRF_TRANSITION_RETURN = 1 */
            return reason == 0 ? DNP_NEST_START : reason == 1 ? DNP_NEST_FINISH : DNP_NEST_NONE;
        }
    }
    return DNP_NEST_NONE;
}

/* ---- names borrowed from FINISH events ---- */

typedef struct open_start {
    size_t *ev;
    dnp_trace_event *e; /* the START events themselves (a stream does not keep them) */
    size_t n, cap, ecap;
} open_start;

typedef struct borrower {
    open_start *open; /* per thread ordinal */
    size_t nopen;
    borrows *out;
} borrower;

static int borrow_add(borrows *b, size_t ev, uint64_t sid) {
    if (DNP_VEC_RESERVE(b->v, b->cap, b->n + 1, 256) < 0)
        return -1;
    b->v[b->n++] = (borrow){ev, sid};
    return 0;
}

/* One event, index i, in its thread's order: a START is remembered; a FINISH
 * gives its name to the START with the same ID that had none. */
static int borrow_step(borrower *B, const dnp_trace_event *e, size_t i) {
    if (DNP_VEC_RESERVE_ZERO(B->open, B->nopen, (size_t)e->thread + 1, 16) < 0)
        return -1;
    open_start *s = &B->open[e->thread];
    dnp_nest nest = event_nest(e);
    if (nest == DNP_NEST_START) {
        if (DNP_VEC_RESERVE(s->ev, s->cap, s->n + 1, 32) < 0 || DNP_VEC_RESERVE(s->e, s->ecap, s->n + 1, 32) < 0)
            return 0; /* that START borrows nothing */
        s->ev[s->n] = i;
        s->e[s->n++] = *e;
    } else if (nest == DNP_NEST_FINISH && s->n > 0) {
        int f = first_entity[e->kind];
        if (f < 0) {
            s->n--;
            return 0;
        }
        unsigned at = value_at[e->kind][f];
        uint8_t type = dnp_events[e->kind].field_types[f];
        for (size_t k = s->n; k-- > 0;) {
            const dnp_trace_event *st = &s->e[k];
            int sf = first_entity[st->kind];
            if (sf < 0 || dnp_events[st->kind].field_types[sf] != type)
                continue;
            unsigned sat = value_at[st->kind][sf];
            if (value(st, sat) != value(e, at))
                continue;
            if (value(st, sat + 1) == 0 && value(e, at + 1) && borrow_add(B->out, s->ev[k], value(e, at + 1)) < 0)
                return -1;
            s->n = k; /* it, and any START left open inside it */
            break;
        }
    }
    return 0;
}

static int borrow_hook(void *ctx, const dnp_trace_event *e, size_t idx) {
    return borrow_step(ctx, e, idx);
}

static void borrower_free(borrower *B) {
    for (size_t i = 0; i < B->nopen; i++) {
        free(B->open[i].ev);
        free(B->open[i].e);
    }
    free(B->open);
    memset(B, 0, sizeof *B);
}

static int by_ev(const void *x, const void *y) {
    const borrow *a = x, *b = y;
    return a->ev < b->ev ? -1 : a->ev > b->ev;
}

/* The names in index order, to be looked up. */
static void borrows_sort(borrows *b) {
    if (b->n > 1)
        qsort(b->v, b->n, sizeof *b->v, by_ev);
}

/* The name event i borrows, or 0 (the merge hands events out of index order). */
static uint64_t borrowed_name(borrows *b, size_t i) {
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->v[mid].ev < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < b->n && b->v[lo].ev == i ? b->v[lo].sid : 0;
}

static int needs_quotes(const char *s) {
    if (!*s)
        return 1;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '"' || *s == '\\' || *s == 0x7f)
            return 1;
    return 0;
}

static const dnp_trace_thread *thread_by_managed_id(const dnp_trace *t, uint64_t id) {
    if (!id)
        return NULL;
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].managed_id == id)
            return &t->threads[i];
    return NULL;
}

static void put_gens(FILE *out, uint64_t gens, int json) {
    static const char *const names[] = {"gen0", "gen1", "gen2", "loh", "poh"};
    int first = 1;
    if (json)
        fputc('[', out);
    for (unsigned g = 0; g < 64; g++) {
        if (!(gens >> g & 1))
            continue;
        fputs(first ? "" : ",", out);
        if (json)
            fputc('"', out);
        if (g < sizeof names / sizeof names[0])
            fputs(names[g], out);
        else
            fprintf(out, "gen%u", g);
        if (json)
            fputc('"', out);
        first = 0;
    }
    if (json)
        fputc(']', out);
    else if (first)
        fputs("none", out);
}

static const char *enum_name(uint8_t type, uint64_t v) {
    switch (type) {
    case DNP_FT_GC_REASON: return dnp_gc_reason_name(v);
    case DNP_FT_SUSPEND_REASON: return dnp_suspend_reason_name(v);
    case DNP_FT_JIT_CACHE: return dnp_jit_cache_name(v);
    case DNP_FT_TRANSITION_REASON: return dnp_transition_reason_name(v);
    default: return NULL;
    }
}

/* ---- one event ---- */

/* One field emitter for both forms (issue 10): text `name=value` (the first
 * entity without its name), JSON `,"name":value`. Each field type is written
 * here once; the helpers below are where the two forms differ. */

/* Text: "name=" unless the value speaks for itself. JSON: the key came first. */
static void label(const printer *p, const char *name) {
    if (!p->json)
        fprintf(p->out, "%s=", name);
}

/* A word: as it is in text, a JSON string (null for none) in JSON. */
static void word(const printer *p, const char *s) {
    if (p->json)
        cli_put_json(p->out, s);
    else
        cli_put_text(p->out, s ? s : "", 0);
}

/* A number shown in hex: quoted in JSON, where it would not fit a double. */
static void hexnum(const printer *p, const char *fmt, uint64_t v) {
    if (p->json)
        fputc('"', p->out);
    fprintf(p->out, fmt, (unsigned long long)v);
    if (p->json)
        fputc('"', p->out);
}

/* An entity field: its name string (or the one borrowed), and its ID. */
static void put_entity(printer *p, uint64_t borrowed, const dnp_trace_event *e, int f, const char *name,
                       unsigned at, uint64_t v) {
    FILE *out = p->out;
    uint64_t sid = value(e, at + 1);
    if (!sid)
        sid = borrowed;
    const char *s = dnp_trace_string(p->t, sid);
    if (p->json) { /* the ID, then its name in a key of its own */
        fprintf(out, "\"0x%llx\",\"%s_name\":", (unsigned long long)v, name);
        cli_put_json(out, s);
        return;
    }
    if (f != first_entity[e->kind])
        label(p, name);
    if (p->ids != IDS_ONLY)
        cli_put_text(out, s && *s ? s : "?", 0);
    if (p->ids == IDS_BOTH)
        fprintf(out, " [0x%llx]", (unsigned long long)v);
    else if (p->ids == IDS_ONLY)
        fprintf(out, "0x%llx", (unsigned long long)v);
}

/* A string field: quoted when it must be; a value list as it is. */
static void put_str(printer *p, const dnp_trace_event *e, const char *name, uint64_t v) {
    FILE *out = p->out;
    const char *s = dnp_trace_string(p->t, v);
    if (p->json) {
        cli_put_json(out, s);
        return;
    }
    if (e->kind == DNP_EV_MethodArgs || e->kind == DNP_EV_MethodReturn) { /* a value list: as it is */
        cli_put_text(out, s ? s : "?", 0);
        return;
    }
    label(p, name);
    if (!s)
        s = "";
    int q = needs_quotes(s);
    if (q)
        fputc('"', out);
    cli_put_text(out, s, q);
    if (q)
        fputc('"', out);
}

/* A managed thread ID, with dnprof's number and the name of that thread. */
static void put_thread(printer *p, const char *name, uint64_t v) {
    FILE *out = p->out;
    const dnp_trace_thread *th = thread_by_managed_id(p->t, v);
    label(p, name);
    hexnum(p, "0x%llx", v);
    if (th && p->json) {
        fprintf(out, ",\"%s_thread\":%u,\"%s_name\":", name, th->ordinal, name);
        cli_put_json(out, th->name);
    } else if (th) {
        fprintf(out, " (#%u", th->ordinal);
        if (th->name) {
            fputs(" \"", out);
            cli_put_text(out, th->name, 1);
            fputc('"', out);
        }
        fputc(')', out);
    }
}

static void put_field(printer *p, uint64_t borrowed, const dnp_trace_event *e, int f) {
    FILE *out = p->out;
    const dnp_event_info *info = &dnp_events[e->kind];
    uint8_t type = info->field_types[f];
    const char *name = info->field_names[f];
    unsigned at = value_at[e->kind][f];
    uint64_t v = value(e, at);
    char buf[32];

    if (p->json)
        fprintf(out, ",\"%s\":", name);
    else
        fputc(' ', out);
    switch (type) {
    case DNP_FT_APPDOMAIN:
    case DNP_FT_ASSEMBLY:
    case DNP_FT_MODULE:
    case DNP_FT_CLASS:
    case DNP_FT_FUNCTION:
        put_entity(p, borrowed, e, f, name, at, v);
        break;
    case DNP_FT_HR: {
        const char *hr = dnp_hresult_name((uint32_t)v);
        if (hr)
            word(p, hr);
        else
            hexnum(p, "0x%08llX", (uint32_t)v);
        break;
    }
    case DNP_FT_GENS:
        put_gens(out, v, p->json);
        break;
    case DNP_FT_GC_REASON:
    case DNP_FT_SUSPEND_REASON:
    case DNP_FT_JIT_CACHE:
    case DNP_FT_TRANSITION_REASON: {
        const char *s = enum_name(type, v);
        if (s) {
            word(p, s);
        } else {
            label(p, name);
            fprintf(out, "%llu", (unsigned long long)v);
        }
        break;
    }
    case DNP_FT_U:
        label(p, name);
        fprintf(out, "%llu", (unsigned long long)v);
        break;
    case DNP_FT_BYTES:
        label(p, name);
        if (p->json)
            fprintf(out, "%llu", (unsigned long long)v);
        else
            fputs(cli_fmt_bytes(v, buf), out);
        break;
    case DNP_FT_BOOL:
        label(p, name);
        fputs(v ? "true" : "false", out);
        break;
    case DNP_FT_TOKEN:
        label(p, name);
        hexnum(p, "0x%08llx", v);
        break;
    case DNP_FT_STR:
        put_str(p, e, name, v);
        break;
    case DNP_FT_THREAD:
        put_thread(p, name, v);
        break;
    case DNP_FT_BLOB: { /* hex in JSON; its size in text */
        const char *hex = dnp_trace_string(p->t, v);
        if (p->json)
            cli_put_json(out, hex);
        else
            fprintf(out, "%s=<%zu bytes>", name, hex ? strlen(hex) / 2 : 0);
        break;
    }
    default: /* HEX, ADDR, OBJECT, and any later type */
        label(p, name);
        hexnum(p, "0x%llx", v);
        break;
    }
}

static uint64_t os_tid(const dnp_trace *t, uint32_t ordinal) {
    const dnp_trace_thread *th = dnp_trace_thread_get(t, ordinal);
    return th ? th->os_tid : 0;
}

static void put_columns(printer *p, uint64_t time_ns, uint32_t thread) {
    if (p->use_tid)
        fprintf(p->out, "[%*llu]", p->tcol, (unsigned long long)os_tid(p->t, thread));
    else
        fprintf(p->out, "[%*u]", p->tcol, thread);
    if (p->show_time)
        fprintf(p->out, " %11.6f", (double)time_ns / 1e9);
    fputc(' ', p->out);
}

/* Two spaces a level up to PRINT_INDENT_MAX levels, then the level as a
 * number: a deep recursion prints in space linear in its events. */
#define PRINT_INDENT_MAX 32

static void put_indent(FILE *out, int depth) {
    static const char spaces[2 * PRINT_INDENT_MAX + 1] =
        "                                                                ";
    int n = depth < PRINT_INDENT_MAX ? depth : PRINT_INDENT_MAX;
    fwrite(spaces, 1, (size_t)(2 * n), out);
    if (depth > PRINT_INDENT_MAX)
        fprintf(out, "{%d} ", depth);
}

/* An ILBody's listing, one line each under the event (docs/il.md). */
static void print_il_lines(printer *p, const dnp_trace_event *e, int depth) {
    char *text = il_listing_text(p->t, e);
    for (char *line = text, *eol; line && *line; line = eol + 1) {
        eol = strchr(line, '\n');
        if (!eol)
            break;
        put_columns(p, e->time_ns, e->thread);
        put_indent(p->out, depth);
        fwrite(line, 1, (size_t)(eol - line + 1), p->out);
    }
    free(text);
}

static void print_event(printer *p, const dnp_trace_event *e, uint64_t borrowed, int depth) {
    const dnp_event_info *info = &dnp_events[e->kind];
    FILE *out = p->out;
    if (p->json) {
        fprintf(out, "{\"t_ns\":%llu,\"thread\":%u,\"os_tid\":%llu,\"depth\":%d,\"event\":\"%s\",\"family\":\"%s\"",
                (unsigned long long)e->time_ns, e->thread, (unsigned long long)os_tid(p->t, e->thread), depth,
                info->name, dnp_family_words[info->family]);
        for (int f = 0; f < info->nfields; f++)
            put_field(p, borrowed, e, f);
        if (e->kind == DNP_EV_ILBody)
            il_put_json(out, p->t, e);
        fputs("}\n", out);
        return;
    }
    put_columns(p, e->time_ns, e->thread);
    put_indent(out, depth);
    fputs(info->name, out);
    for (int f = 0; f < info->nfields; f++)
        if (e->kind != DNP_EV_ILBody || value_at[e->kind][f] != DNP_V(ILBody, tokens)) /* in the listing */
            put_field(p, borrowed, e, f);
    fputc('\n', out);
    if (e->kind == DNP_EV_ILBody)
        print_il_lines(p, e, depth + 1);
}

static void print_note(printer *p, const dnp_trace_note *n) {
    static const char *const levels[] = {"note", "warning", "error"};
    const char *level = n->level < 3 ? levels[n->level] : "note";
    if (p->json) {
        fprintf(p->out, "{\"t_ns\":%llu,\"thread\":%u,\"note\":", (unsigned long long)n->time_ns, n->thread);
        cli_put_json(p->out, n->text ? n->text : "");
        fprintf(p->out, ",\"level\":\"%s\"}\n", level);
        return;
    }
    fprintf(p->out, "# %s: ", level);
    cli_put_text(p->out, n->text ? n->text : "", 0);
    fputc('\n', p->out);
}

static int thread_shown(const printer *p, uint32_t thread) {
    return !p->thread_on || (thread < p->nthread_on && p->thread_on[thread]);
}

static int by_time(const void *x, const void *y) {
    const dnp_trace_note *const *a = x, *const *b = y;
    if ((*a)->time_ns != (*b)->time_ns)
        return (*a)->time_ns < (*b)->time_ns ? -1 : 1;
    return *a < *b ? -1 : *a > *b;
}

/* Returns 0, -1 once the output failed (errno says why), -2 when reading failed. */
static int print_all(printer *p, timeorder *src) {
    const dnp_trace *t = p->t;
    const dnp_trace_note **notes = calloc(t->nnotes ? t->nnotes : 1, sizeof *notes);
    p->nest = calloc(t->nthreads + 1, sizeof *p->nest);
    if (!notes || !p->nest) {
        free(notes);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < t->nnotes; i++)
        notes[i] = &t->notes[i];
    if (t->nnotes > 1)
        qsort(notes, t->nnotes, sizeof *notes, by_time);

    size_t ni = 0;
    int rc = 0, got;
    dnp_trace_event ev;
    size_t idx = 0;
    while (rc == 0 && (got = timeorder_next(src, &ev, &idx)) > 0) {
        const dnp_trace_event *e = &ev;
        uint64_t borrowed = borrowed_name(&p->borrowed, idx);
        for (; ni < t->nnotes && notes[ni]->time_ns <= e->time_ns; ni++)
            if (!notes[ni]->thread || thread_shown(p, notes[ni]->thread))
                print_note(p, notes[ni]);
        const dnp_event_info *info = &dnp_events[e->kind];
        /* Every event moves its thread's level, shown or not. */
        int d = e->thread <= t->nthreads ? dnp_nest_apply(&p->nest[e->thread], e->kind, e->v) : 0;
        if (!(p->families >> info->family & 1))
            continue;
        if (thread_shown(p, e->thread))
            print_event(p, e, borrowed, d);
        if (ferror(p->out))
            rc = -1;
    }
    if (rc == 0 && got < 0) {
        free(notes);
        errno = ENOMEM;
        return -2; /* reading failed */
    }
    for (; ni < t->nnotes && rc == 0; ni++)
        if (!notes[ni]->thread || thread_shown(p, notes[ni]->thread))
            print_note(p, notes[ni]);
    free(notes);
    if (fflush(p->out) != 0 || ferror(p->out))
        rc = -1;
    return rc;
}

/* ---- options ---- */

static void print_help(void) {
    fputs("usage: dnprof print [options] FILE\n"
          "\n"
          "Prints a trace written by 'dnprof run' as an event log, one event a line, in\n"
          "the order the runtime raised them: the thread, then the event indented by how\n"
          "deep it is nested on its thread (an event between ClassLoadStarted and\n"
          "ClassLoadFinished is one level in; past 32 levels the level is shown as\n"
          "{N}), then its fields. Classes, functions,\n"
          "modules, assemblies and app domains show their name and their runtime ID\n"
          "(which dotnet-dump's dumpmt and dumpmd take). Notes from the agent are\n"
          "printed in place as '# note: ...' lines.\n"
          "\n"
          "options:\n"
          "  -t, --time          show seconds since the trace began\n"
          "      --tid           show the OS thread id instead of dnprof's thread number\n"
          "      --thread N,...  only these threads (the numbers in the first column)\n"
          "  -e, --events LIST   only these event families, comma-separated:\n",
          stdout);
    cli_print_families(stdout, "                        ");
    fputs("                      or all, default, -NAME to leave one out\n"
          "      --json          one JSON object per event, for jq and other tools\n"
          "      --exceptions    each exception's story instead of the log: type, message,\n"
          "                      stack, frames searched, filters and their verdicts,\n"
          "                      finally blocks, where it was caught, and its time\n"
          "                      (record with 'dnprof run --exceptions')\n"
          "      --raw-ids       show the runtime IDs without names\n"
          "      --no-ids        show the names without runtime IDs (stable across runs)\n"
          "  -h, --help          print this help\n"
          "\n"
          "examples:\n"
          "  dnprof print -t app.trace | less\n"
          "  dnprof print --events classes,jit --thread 1 app.trace\n"
          "  dnprof print --json app.trace | jq 'select(.event == \"ExceptionThrown\")'\n",
          stdout);
}

/* "1,3,5" -> a table by ordinal. */
static int parse_threads(const char *text, uint8_t **on, size_t *n) {
    char *copy = strdup(text);
    if (!copy)
        return error("out of memory");
    size_t cap = 0;
    *on = NULL;
    *n = 0;
    int rc = 0;
    for (char *save = NULL, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (cli_parse_u64(w, &v) != 0 || v == 0 || v > 1000000) {
            rc = usage_error("print", "--thread wants thread numbers such as 1,3 (the first column), not '%s'", w);
            break;
        }
        if (v >= cap) {
            size_t want = (size_t)v + 1;
            uint8_t *grown = realloc(*on, want);
            if (!grown) {
                rc = error("out of memory");
                break;
            }
            memset(grown + cap, 0, want - cap);
            *on = grown;
            cap = want;
        }
        (*on)[v] = 1;
    }
    if (rc == 0 && cap == 0)
        rc = usage_error("print", "--thread wants thread numbers such as 1,3");
    *n = cap;
    free(copy);
    return rc;
}

static int digits(uint64_t v) {
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* The event log of path, in time order, through p (set up by cmd_print);
 * frees thread_on. */
static int print_log(printer *p, const char *path, uint8_t *thread_on) {
    char err[512];
    /* Streamed (a first pass, then a merge by time), or loaded whole when asked
     * (DNP_ENV_NO_STREAM, to compare) or when the file cannot be read twice. */
    init_tables();
    borrower B = {NULL, 0, &p->borrowed};
    timeorder *src = NULL;
    if (timeorder_open(path, borrow_hook, &B, &src, err, sizeof err) != 0) {
        borrower_free(&B);
        free(p->borrowed.v);
        free(thread_on);
        error("%s", err);
        return 1;
    }
    borrower_free(&B);
    borrows_sort(&p->borrowed);
    const dnp_trace *t = timeorder_trace(src);
    report_warn_trace(path, t, 1);

    for (size_t v = 1; v < p->nthread_on; v++) { /* a thread asked for that the trace does not have */
        if (!thread_on[v] || v <= t->nthreads)
            continue;
        error("%s: no thread %zu: its threads are 1 to %zu (print's first column)", path, v, t->nthreads);
        free(p->borrowed.v);
        free(thread_on);
        timeorder_close(src);
        return 1;
    }
    p->t = t;
    p->out = stdout;
    uint64_t widest = t->nthreads;
    if (p->use_tid)
        for (size_t i = 0; i < t->nthreads; i++)
            if (t->threads[i].os_tid > widest)
                widest = t->threads[i].os_tid;
    p->tcol = digits(widest) < 2 ? 2 : digits(widest);

    int rc = 0;
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    int prc = print_all(p, src);
    if (prc == -2) {
        error("%s: %s", path, timeorder_error(src));
        rc = 1;
    } else if (prc != 0 && errno != EPIPE) {
        error("cannot write the log: %s", strerror(errno));
        rc = 1;
    }
    free(p->borrowed.v);
    free(p->nest);
    free(thread_on);
    timeorder_close(src);
    return rc;
}

int cmd_print(int argc, char **argv) {
    enum { OPT_TID = 256, OPT_THREAD, OPT_JSON, OPT_RAW_IDS, OPT_NO_IDS, OPT_EXCEPTIONS };
    static const struct option longopts[] = {
        {"time", no_argument, NULL, 't'},        {"tid", no_argument, NULL, OPT_TID},
        {"thread", required_argument, NULL, OPT_THREAD}, {"events", required_argument, NULL, 'e'},
        {"json", no_argument, NULL, OPT_JSON},   {"raw-ids", no_argument, NULL, OPT_RAW_IDS},
        {"no-ids", no_argument, NULL, OPT_NO_IDS}, {"exceptions", no_argument, NULL, OPT_EXCEPTIONS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    printer p;
    memset(&p, 0, sizeof p);
    p.families = ~0u;
    const char *threads = NULL, *events = NULL;
    int c, exceptions = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":te:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': p.show_time = 1; break;
        case OPT_TID: p.use_tid = 1; break;
        case OPT_THREAD: threads = optarg; break;
        case 'e': events = optarg; break;
        case OPT_JSON: p.json = 1; break;
        case OPT_RAW_IDS: p.ids = IDS_ONLY; break;
        case OPT_NO_IDS: p.ids = NAMES_ONLY; break;
        case OPT_EXCEPTIONS: exceptions = 1; break;
        case 'h': print_help(); return 0;
        default: return cli_bad_option("print", argv, c);
        }
    }
    const char *path;
    int bad = cli_one_file("print", "dnprof print [options] FILE", argc, argv, &path);
    if (bad)
        return bad;
    if (exceptions && (threads || events || p.show_time || p.use_tid || p.ids))
        return usage_error("print", "--exceptions prints each exception's whole story; --thread, --events, "
                                    "-t, --tid, --raw-ids and --no-ids are for the event log");
    if (cli_not_a_snapshot(path))
        return 1;

    char err[512];
    if (events) {
        dnp_event_config cfg;
        if (dnp_events_parse(events, &cfg, err, sizeof err) != 0) {
            fprintf(stderr, "dnprof print: %s\n", err);
            return CLI_EXIT_USAGE;
        }
        p.families = cfg.families;
    }
    uint8_t *thread_on = NULL;
    if (threads) {
        int rc = parse_threads(threads, &thread_on, &p.nthread_on);
        if (rc != 0) {
            free(thread_on);
            return rc < 0 ? 1 : rc;
        }
        p.thread_on = thread_on;
    }

    if (exceptions) { /* streamed: memory bounded by the stories */
        free(thread_on);
        return print_exceptions(path, p.json, stdout);
    }
    return print_log(&p, path, thread_on);
}
