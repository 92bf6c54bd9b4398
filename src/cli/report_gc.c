/* report_gc.c: GC statistics (dnprof run/attach --gc; docs/waits.md): a line
 * per collection, then by generation and reason the count and the pauses'
 * p50/p95/p99/max, and the share of the recorded time the program was paused.
 *
 * The trace is streamed; memory is one small record per collection. Figures an
 * event the runtime did not send would give are shown as "-" and said, never as
 * zero (GcCollection's seen bits, events.def). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "report.h"
#include "trace_reader.h"
#include "dnp_vec.h"

#define NGENS 5
#define SEEN_START 0x1u
#define SEEN_END 0x2u
#define SEEN_SUSPEND 0x4u
#define SEEN_RESTART 0x8u
#define SEEN_HEAP_STATS 0x10u
#define SEEN_HISTORY 0x20u

typedef struct gc_row {
    uint64_t time, number, gen, reason, type, seen, duration, suspend, pause;
    uint64_t before[NGENS], after[NGENS], promoted;
    int has_before, has_after;
    int raised;                   /* a GcRaised: it began as a collection of asked */
    uint64_t asked, budget, conditions;
} gc_row;

typedef struct gc_data {
    gc_row *rows;
    size_t n, cap;
    uint64_t first, last, origin; /* GcConfig (or the first event) to the last event */
    int configured;
    uint64_t major;
    gc_row pending;               /* GcSizes come before their GcCollection */
    uint64_t pending_number, raised_number;
    int pending_before, pending_after;
} gc_data;

static const char *reason_name(uint64_t r) { return dnp_gc_start_reason(r); }
static const char *reason_id(uint64_t r) { return dnp_gc_start_reason_id(r); }
static const char *type_name(uint64_t t) { return dnp_gc_type_name(t); }

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    gc_data *d = ctx;
    (void)t;
    if (e->time_ns > d->last)
        d->last = e->time_ns;
    if (e->kind == DNP_EV_GcConfig) {
        d->configured = 1;
        d->major = e->v[DNP_V(GcConfig, runtimeMajor)];
        if (!d->first)
            d->first = e->time_ns;
    } else if (e->kind == DNP_EV_GcSizes) {
        uint64_t number = e->v[DNP_V(GcSizes, number)], phase = e->v[DNP_V(GcSizes, phase)];
        if (number != d->pending_number)
            d->pending_before = d->pending_after = 0;
        d->pending_number = number;
        uint64_t *to = phase == 0 ? d->pending.before : d->pending.after;
        _Static_assert(DNP_V(GcSizes, poh) - DNP_V(GcSizes, gen0) == NGENS - 1, "GcSizes: gen0..poh in a row");
        memcpy(to, &e->v[DNP_V(GcSizes, gen0)], NGENS * sizeof *to);
        if (phase == 0)
            d->pending_before = 1;
        else
            d->pending_after = 1, d->pending.promoted = e->v[DNP_V(GcSizes, promoted)];
    } else if (e->kind == DNP_EV_GcRaised) {
        d->raised_number = e->v[DNP_V(GcRaised, number)];
        d->pending.asked = e->v[DNP_V(GcRaised, asked)], d->pending.budget = e->v[DNP_V(GcRaised, budget)];
        d->pending.conditions = e->v[DNP_V(GcRaised, conditions)];
    } else if (e->kind == DNP_EV_GcCollection) {
        if (DNP_VEC_RESERVE(d->rows, d->cap, d->n + 1, 256) != 0)
            return -1;
        gc_row *r = &d->rows[d->n++];
        memset(r, 0, sizeof *r);
        r->time = e->time_ns;
        r->number = e->v[DNP_V(GcCollection, number)], r->gen = e->v[DNP_V(GcCollection, generation)];
        r->reason = e->v[DNP_V(GcCollection, reason)], r->type = e->v[DNP_V(GcCollection, type)];
        r->seen = e->v[DNP_V(GcCollection, seen)], r->duration = e->v[DNP_V(GcCollection, durationNs)];
        r->suspend = e->v[DNP_V(GcCollection, suspendNs)], r->pause = e->v[DNP_V(GcCollection, pauseNs)];
        if (d->pending_number == r->number) {
            r->has_before = d->pending_before, r->has_after = d->pending_after;
            memcpy(r->before, d->pending.before, sizeof r->before);
            memcpy(r->after, d->pending.after, sizeof r->after);
            r->promoted = d->pending.promoted;
        }
        if (d->raised_number == r->number && d->raised_number) {
            r->raised = 1;
            r->asked = d->pending.asked, r->budget = d->pending.budget, r->conditions = d->pending.conditions;
        }
        d->pending_before = d->pending_after = 0;
        d->pending_number = d->raised_number = 0;
    }
    return 0;
}

static int has_pause(const gc_row *r) { return (r->seen & SEEN_RESTART) != 0; }
static uint64_t sum5(const uint64_t *v) { return v[0] + v[1] + v[2] + v[3] + v[4]; }

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest rank of sorted v[0..n). */
static uint64_t pctl(const uint64_t *v, size_t n, double p) {
    if (!n)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    return v[(k ? k : 1) - 1 < n ? (k ? k : 1) - 1 : n - 1];
}

typedef struct gc_group {
    int gen, reason; /* -1: all */
    size_t count, paused;
    uint64_t p50, p95, p99, max, total;
} gc_group;

/* The pauses of the rows of gen and reason (-1: any) into g. */
static int group(const gc_data *d, int gen, int reason, gc_group *g) {
    memset(g, 0, sizeof *g);
    g->gen = gen, g->reason = reason;
    uint64_t *v = malloc((d->n ? d->n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < d->n; i++) {
        const gc_row *r = &d->rows[i];
        if ((gen >= 0 && r->gen != (uint64_t)gen) || (reason >= 0 && r->reason != (uint64_t)reason))
            continue;
        g->count++;
        if (has_pause(r)) {
            v[g->paused++] = r->pause;
            g->total += r->pause;
        }
    }
    qsort(v, g->paused, sizeof *v, cmp_u64);
    g->p50 = pctl(v, g->paused, 50), g->p95 = pctl(v, g->paused, 95), g->p99 = pctl(v, g->paused, 99);
    g->max = g->paused ? v[g->paused - 1] : 0;
    free(v);
    return 0;
}

/* Every (generation, reason) that occurs, then each generation, then all: into *out. */
static int groups(const gc_data *d, gc_group **out, size_t *n) {
    gc_group *g = calloc(3 * 32 + 8, sizeof *g);
    if (!g)
        return -1;
    size_t k = 0, per_gen[3] = {0, 0, 0};
    for (int gen = 0; gen <= 2; gen++)
        for (int reason = 0; reason < 32; reason++) {
            int any = 0;
            for (size_t i = 0; i < d->n && !any; i++)
                any = d->rows[i].gen == (uint64_t)gen && (d->rows[i].reason == (uint64_t)reason ||
                                                          (reason == 31 && d->rows[i].reason >= 31));
            if (any && group(d, gen, reason, &g[k++]) < 0)
                return free(g), -1;
            per_gen[gen] += any;
        }
    for (int gen = 0; gen <= 2; gen++) /* a generation of more than one reason: its own line too */
        if (per_gen[gen] > 1 && group(d, gen, -1, &g[k++]) < 0)
            return free(g), -1;
    if (group(d, -1, -1, &g[k++]) < 0)
        return free(g), -1;
    *out = g, *n = k;
    return 0;
}

static const char *ms(uint64_t ns, char *buf) {
    snprintf(buf, 24, "%.3f", (double)ns / 1e6);
    return buf;
}

static uint64_t span(const gc_data *d) {
    uint64_t from = d->first ? d->first : d->origin;
    return d->last > from ? d->last - from : 0;
}

static void json_gens(FILE *out, const char *key, const uint64_t *v, int have) {
    if (!have) {
        fprintf(out, ",\"%s\":null", key);
        return;
    }
    fprintf(out, ",\"%s\":{\"gen0\":%llu,\"gen1\":%llu,\"gen2\":%llu,\"loh\":%llu,\"poh\":%llu,\"total\":%llu}", key,
            (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[3],
            (unsigned long long)v[4], (unsigned long long)sum5(v));
}

/* When a collection began (GCStart), from the trace's origin: its record
 * comes at its end (a blocking or foreground one's resumption, a background
 * one's GCEnd), so that less its duration (GCStart to GCEnd): exact for a
 * background one, later by the resumption's few microseconds for the others,
 * and in the order of their numbers, which a foreground one begun inside a
 * background one keeps though it ends first. Without GCStart and GCEnd: less
 * its pause. */
static uint64_t row_start(const gc_data *d, const gc_row *r) {
    int both = (r->seen & (SEEN_START | SEEN_END)) == (SEEN_START | SEEN_END);
    uint64_t back = both ? r->duration : has_pause(r) ? r->pause : 0;
    uint64_t at = r->time > back ? r->time - back : 0;
    return at > d->origin ? at - d->origin : 0;
}

static void json_row(FILE *out, const gc_data *d, const gc_row *r) {
    fprintf(out, "{\"number\":%llu,\"timeNs\":%llu,\"startNs\":%llu,\"generation\":%llu,\"reason\":\"%s\","
                 "\"reasonId\":%llu,\"type\":\"%s\",\"durationNs\":%llu",
            (unsigned long long)r->number, (unsigned long long)(r->time - d->origin),
            (unsigned long long)row_start(d, r), (unsigned long long)r->gen,
            reason_id(r->reason), (unsigned long long)r->reason, type_name(r->type), (unsigned long long)r->duration);
    if (r->seen & SEEN_SUSPEND)
        fprintf(out, ",\"suspendNs\":%llu", (unsigned long long)r->suspend);
    else
        fputs(",\"suspendNs\":null", out);
    if (has_pause(r))
        fprintf(out, ",\"pauseNs\":%llu", (unsigned long long)r->pause);
    else
        fputs(",\"pauseNs\":null", out);
    json_gens(out, "before", r->before, r->has_before);
    json_gens(out, "after", r->after, r->has_after);
    if (r->has_after)
        fprintf(out, ",\"promoted\":%llu", (unsigned long long)r->promoted);
    else
        fputs(",\"promoted\":null", out);
    if (!r->raised) {
        fputs(",\"raised\":null}", out);
        return;
    }
    fprintf(out, ",\"raised\":{\"from\":%llu,\"budgetGeneration\":%llu,\"conditions\":[",
            (unsigned long long)r->asked, (unsigned long long)r->budget);
    for (unsigned b = 0, k = 0; b < 32; b++)
        if (r->conditions >> b & 1)
            fprintf(out, "%s\"%s\"", k++ ? "," : "", dnp_gc_condition_id(b));
    fputs("]}}", out);
}

static void json_group(FILE *out, const gc_group *g, uint64_t wall) {
    fputc('{', out);
    if (g->gen >= 0)
        fprintf(out, "\"generation\":%d,", g->gen);
    if (g->reason >= 0)
        fprintf(out, "\"reason\":\"%s\",", reason_id((uint64_t)g->reason));
    fprintf(out, "\"count\":%zu,\"paused\":%zu,\"totalPauseNs\":%llu", g->count, g->paused,
            (unsigned long long)g->total);
    if (g->paused)
        fprintf(out, ",\"p50Ns\":%llu,\"p95Ns\":%llu,\"p99Ns\":%llu,\"maxNs\":%llu,\"pausedShare\":%.6f",
                (unsigned long long)g->p50, (unsigned long long)g->p95, (unsigned long long)g->p99,
                (unsigned long long)g->max, wall ? (double)g->total / (double)wall : 0.0);
    fputc('}', out);
}

/* What the runtime did not say, for every collection that lacks it. */
static size_t unfinished(const gc_data *d) {
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += !(d->rows[i].seen & SEEN_END);
    return n;
}

static void missing(const gc_data *d, size_t *no_pause, size_t *no_before, size_t *no_after) {
    *no_pause = *no_before = *no_after = 0;
    for (size_t i = 0; i < d->n; i++) {
        *no_pause += !has_pause(&d->rows[i]);
        *no_before += !d->rows[i].has_before;
        *no_after += !d->rows[i].has_after;
    }
}

static int write_json(const gc_data *d, const char *path, const gc_group *g, size_t ng, FILE *out) {
    uint64_t wall = span(d);
    size_t np, nb, na;
    missing(d, &np, &nb, &na);
    fputs("{\"trace\":", out);
    dnp_export_json_str(out, path, 0);
    fprintf(out, ",\"source\":\"runtime GC events (EventPipe)\",\"runtimeMajor\":%llu,\"recordedNs\":%llu,"
                 "\"collections\":%zu,\"unfinished\":%zu,\"missing\":{\"pause\":%zu,\"before\":%zu,\"after\":%zu},"
                 "\"gcs\":[",
            (unsigned long long)d->major, (unsigned long long)wall, d->n, unfinished(d), np, nb, na);
    for (size_t i = 0; i < d->n; i++) {
        fputs(i ? ",\n" : "\n", out);
        json_row(out, d, &d->rows[i]);
    }
    fputs("],\"groups\":[", out);
    for (size_t i = 0; i < ng; i++) {
        fputs(i ? ",\n" : "\n", out);
        json_group(out, &g[i], wall);
    }
    fputs("]}\n", out);
    return ferror(out) ? 1 : 0;
}

static void text_row(FILE *out, const gc_data *d, const gc_row *r) {
    char a[24], b[24], c[32], e[32], f[32], why[64];
    snprintf(why, sizeof why, "%s", reason_name(r->reason));
    if (r->raised && dnp_gc_reason_induced(r->reason)) /* GC.Collect(n) that collected more */
        snprintf(why, sizeof why, "%s (asked gen %llu)", reason_name(r->reason), (unsigned long long)r->asked);
    fprintf(out, "%6llu %8.3f %3llu  %-10s %-32.32s %8s %9s %10s %10s %10s\n", (unsigned long long)r->number,
            (double)row_start(d, r) / 1e9, (unsigned long long)r->gen, type_name(r->type), why,
            r->seen & SEEN_SUSPEND ? ms(r->suspend, a) : "-", has_pause(r) ? ms(r->pause, b) : "-",
            r->has_before ? cli_fmt_bytes(sum5(r->before), c) : "-",
            r->has_after ? cli_fmt_bytes(sum5(r->after), e) : "-", r->has_after ? cli_fmt_bytes(r->promoted, f) : "-");
}

/* The induced collections that went further than the generation asked,
 * and why: counted above (and by GC.CollectionCount) by what they collected. */
static void text_raised(FILE *out, const gc_data *d) {
    size_t n = 0, shown = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->rows[i].raised && dnp_gc_reason_induced(d->rows[i].reason);
    if (!n)
        return;
    fprintf(out, "\n%zu induced collection%s collected an older generation than %s asked for, by the GC's "
                 "own rules\n(counted here by the generation collected, as GC.CollectionCount counts %s):\n",
            n, CLI_PLURAL(n), n == 1 ? "GC.Collect" : "their GC.Collect", n == 1 ? "it" : "them");
    for (size_t i = 0; i < d->n && shown < 8; i++) {
        const gc_row *r = &d->rows[i];
        if (!r->raised || !dnp_gc_reason_induced(r->reason))
            continue;
        fprintf(out, "  #%llu: gen %llu asked, gen %llu collected:", (unsigned long long)r->number,
                (unsigned long long)r->asked, (unsigned long long)r->gen);
        const char *sep = " ";
        if (r->budget > r->asked) {
            fprintf(out, " gen%llu's allocation budget was used up", (unsigned long long)r->budget);
            sep = "; ";
        }
        for (unsigned b = 0; b < 32; b++)
            if (r->conditions >> b & 1) {
                fprintf(out, "%s%s", sep, dnp_gc_condition(b));
                sep = ", ";
            }
        fputs(sep[0] == ' ' ? " the runtime did not say why\n" : "\n", out);
        shown++;
    }
    if (n > shown)
        fprintf(out, "  (and %zu more: dnprof report --gc --json has each)\n", n - shown);
}

static void text_groups(FILE *out, const gc_group *g, size_t ng, uint64_t wall) {
    int w = 13; /* the reason column: as wide as its longest ("(all reasons)" at the least) */
    for (size_t i = 0; i < ng; i++)
        if (g[i].reason >= 0 && (int)strlen(reason_name((uint64_t)g[i].reason)) > w)
            w = (int)strlen(reason_name((uint64_t)g[i].reason));
    fprintf(out, "\n%-4s %-*s %6s %9s %9s %9s %9s %10s %7s\n", "gen", w, "reason", "count", "p50 ms", "p95 ms",
            "p99 ms", "max ms", "paused ms", "of time");
    for (size_t i = 0; i < ng; i++) {
        char gen[8], a[24], b[24], c[24], e[24], f[24];
        snprintf(gen, sizeof gen, "%d", g[i].gen);
        const char *reason = g[i].reason >= 0 ? reason_name((uint64_t)g[i].reason) : "(all reasons)";
        if (g[i].gen < 0)
            snprintf(gen, sizeof gen, "all"), reason = "";
        if (!g[i].paused) {
            fprintf(out, "%-4s %-*s %6zu %9s %9s %9s %9s %10s %7s\n", gen, w, reason, g[i].count, "-", "-", "-",
                    "-", "-", "-");
            continue;
        }
        fprintf(out, "%-4s %-*s %6zu %9s %9s %9s %9s %10s %6.2f%%\n", gen, w, reason, g[i].count, ms(g[i].p50, a),
                ms(g[i].p95, b), ms(g[i].p99, c), ms(g[i].max, e), ms(g[i].total, f),
                wall ? 100.0 * (double)g[i].total / (double)wall : 0.0);
    }
}

/* "gen0 1.2 MiB, gen1 0 B, ..." */
static void put_gens(FILE *out, const char *label, const uint64_t *v, int have) {
    static const char *const names[NGENS] = {"gen0", "gen1", "gen2", "LOH", "POH"};
    char b[32];
    fprintf(out, "  %-7s", label);
    if (!have) {
        fputs(" -\n", out);
        return;
    }
    for (int k = 0; k < NGENS; k++)
        fprintf(out, "%s %s %s", k ? "," : "", names[k], cli_fmt_bytes(v[k], b));
    fputc('\n', out);
}

/* The heap by generation around the longest pause and the last collection. */
static void text_heaps(FILE *out, const gc_data *d) {
    const gc_row *longest = NULL, *last = d->n ? &d->rows[d->n - 1] : NULL;
    for (size_t i = 0; i < d->n; i++)
        if (has_pause(&d->rows[i]) && (!longest || d->rows[i].pause > longest->pause))
            longest = &d->rows[i];
    const gc_row *show[2] = {longest, last != longest ? last : NULL};
    for (int k = 0; k < 2; k++) {
        if (!show[k])
            continue;
        fprintf(out, "\nheap by generation, %s (#%llu, gen %llu):\n", k ? "the last collection" : "the longest pause",
                (unsigned long long)show[k]->number, (unsigned long long)show[k]->gen);
        put_gens(out, "before", show[k]->before, show[k]->has_before);
        put_gens(out, "after", show[k]->after, show[k]->has_after);
    }
}

/* 1 when row i is among the `top` longest pauses (ties to the earlier
 * collection); every row when top is 0. */
static int among_longest(const gc_data *d, size_t i, size_t top, uint64_t cut, size_t *ties) {
    if (!top || top >= d->n)
        return 1;
    uint64_t p = has_pause(&d->rows[i]) ? d->rows[i].pause : 0;
    if (p > cut)
        return 1;
    if (p == cut && *ties) {
        (*ties)--;
        return 1;
    }
    return 0;
}

/* The pause of the top-th longest, and how many of that length are in. */
static uint64_t longest_cut(const gc_data *d, size_t top, size_t *ties) {
    *ties = 0;
    if (!top || top >= d->n)
        return 0;
    uint64_t *v = malloc(d->n * sizeof *v);
    if (!v)
        return 0;
    for (size_t i = 0; i < d->n; i++)
        v[i] = has_pause(&d->rows[i]) ? d->rows[i].pause : 0;
    qsort(v, d->n, sizeof *v, cmp_u64);
    uint64_t cut = v[d->n - top]; /* ascending: the top-th from the end */
    for (size_t i = d->n - top; i < d->n && v[i] == cut; i++)
        (*ties)++;
    free(v);
    return cut;
}

static void text_rows(FILE *out, const gc_data *d, size_t top) {
    char count[32];
    if (top && top < d->n)
        fprintf(out, "\nthe %zu longest pauses of %s collections, in their order (without --top: every one)\n", top,
                cli_fmt_count(d->n, count));
    else if (d->n > 100)
        fprintf(out, "\na line per collection (%s), then the pauses by generation and reason; --top N lists only "
                     "the N longest\n", cli_fmt_count(d->n, count));
    fprintf(out, "\n%6s %8s %3s  %-10s %-32s %8s %9s %10s %10s %10s\n", "#", "at s", "gen", "type", "reason",
            "susp ms", "pause ms", "before", "after", "promoted");
    size_t ties;
    uint64_t cut = longest_cut(d, top, &ties);
    for (size_t i = 0; i < d->n; i++)
        if (among_longest(d, i, top, cut, &ties))
            text_row(out, d, &d->rows[i]);
}

static int write_text(const gc_data *d, const char *path, const gc_group *g, size_t ng, size_t top, FILE *out) {
    uint64_t wall = span(d);
    const gc_group *all = &g[ng - 1];
    char a[24], b[24];
    char version[32] = "";
    if (d->major)
        snprintf(version, sizeof version, ", .NET %llu", (unsigned long long)d->major);
    char count[32];
    fprintf(out, "%s: %s collection%s in %.3f s recorded (the runtime's GC events%s)\n", cli_short_path(path),
            cli_fmt_count(d->n, count), CLI_PLURAL(d->n), (double)wall / 1e9, version);
    if (all->paused)
        fprintf(out, "paused %s ms in all, %.2f%% of the time; longest pause %s ms\n", ms(all->total, a),
                wall ? 100.0 * (double)all->total / (double)wall : 0.0, ms(all->max, b));
    if (d->n) {
        text_rows(out, d, top);
        text_raised(out, d);
        text_groups(out, g, ng, wall);
        text_heaps(out, d);
    } else {
        fputs("no collection while recording: the program did not allocate its first generation's budget, nor call "
              "GC.Collect\n", out);
    }
    size_t np, nb, na;
    missing(d, &np, &nb, &na);
    size_t nu = unfinished(d);
    if (nu)
        fprintf(out, "\n%zu collection%s still running when the recording ended (a background GC at exit, or a "
                     "detach): %s figures after it are \"-\"\n", nu, CLI_PLURAL(nu), nu == 1 ? "its" : "their");
    if (np)
        fprintf(out, "%s%zu collection%s without a pause (\"-\"): the runtime's suspension events did not come "
                     "(or the recording began or ended inside one)\n", nu ? "" : "\n", np, CLI_PLURAL(np));
    if (nb)
        fprintf(out, "%zu collection%s without the heap before (\"-\"): no GCPerHeapHistory event for %s "
                     "(or the recording began or ended inside %s)\n", nb, CLI_PLURAL(nb), nb == 1 ? "it" : "them",
                nb == 1 ? "it" : "them");
    if (na)
        fprintf(out, "%zu collection%s without the heap after (\"-\"): no GCHeapStats event for %s (or the "
                     "recording ended inside %s)\n", na, CLI_PLURAL(na), na == 1 ? "it" : "them", na == 1 ? "it" : "them");
    fputs("\npause: from the runtime's suspension (GCSuspendEEBegin) to its resumption (GCRestartEEEnd); "
          "docs/waits.md\n", out);
    return ferror(out) ? 1 : 0;
}

static int by_number(const void *x, const void *y) {
    const gc_row *a = x, *b = y;
    return (a->number > b->number) - (a->number < b->number);
}

int report_gc(const char *path, int json, size_t top, FILE *out) {
    dnp_trace_stream *s = NULL;
    gc_data d;
    memset(&d, 0, sizeof d);
    if (report_read_events(path, feed, &d, &s, 1) != 0) {
        free(d.rows);
        return 1;
    }
    d.origin = dnp_trace_stream_origin(s);
    if (!d.configured && !d.n) {
        error("%s: this trace has no GC statistics: record them with dnprof run --gc (or dnprof attach PID --gc)",
              path);
        dnp_trace_stream_close(s);
        return 1;
    }
    if (d.n) /* by number: a background GC is written when it ends, after those it let run */
        qsort(d.rows, d.n, sizeof *d.rows, by_number);
    gc_group *g = NULL;
    size_t ng = 0;
    int rc = groups(&d, &g, &ng);
    if (rc == 0)
        rc = json ? write_json(&d, path, g, ng, out) : write_text(&d, path, g, ng, top, out);
    else
        rc = (error("out of memory"), 1);
    free(g);
    free(d.rows);
    dnp_trace_stream_close(s);
    return rc;
}
