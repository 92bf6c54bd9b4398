/* top_batch.c: what `dnprof top` shows, as text (top.h): the header's lines,
 * shared with the screen, the plain-text snapshot of batch mode (-b, or
 * stdout not a terminal), and one JSON object per interval (--json). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jsonstr.h"
#include "top.h"

void top_fmt_bytes(uint64_t n, char *buf, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", n);
    else
        snprintf(buf, cap, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
}

static double secs(uint64_t ns) {
    return (double)ns / 1e9;
}

/* Per second over the interval. */
static double rate(uint64_t n, uint64_t duration_ns) {
    return duration_ns ? (double)n / secs(duration_ns) : 0;
}

void top_header(const top_model *m, char lines[TOP_HEADER_LINES][512]) {
    const top_interval *iv = &m->cur;
    char rss[32], heap[5][32], alloc[32];
    top_fmt_bytes(m->rss, rss, sizeof rss);
    snprintf(lines[0], 512, "pid %ld  %.300s%s%.120s", m->pid, m->cmdline[0] ? m->cmdline : "?",
             m->runtime[0] ? "  |  " : "", m->runtime);
    char cpu[32] = "cpu --";
    if (m->cpu_pct >= 0)
        snprintf(cpu, sizeof cpu, "cpu %.1f%%", m->cpu_pct);
    top_fmt_bytes((uint64_t)rate(iv->alloc_bytes, iv->duration_ns), alloc, sizeof alloc);
    snprintf(lines[1], 512, "%s  threads %ld  rss %s  exceptions %.1f/s  alloc %s/s", cpu, m->threads, rss,
             rate(iv->exceptions, iv->duration_ns), alloc);
    if (!m->gc_on && !m->all.gc_seen) {
        snprintf(lines[2], 512, "gc: n/a");
        snprintf(lines[3], 512, "heap: n/a");
    } else {
        snprintf(lines[2], 512,
                 "gc: %" PRIu64 " collection%s: gen0 %" PRIu64 ", gen1 %" PRIu64 ", gen2 %" PRIu64
                 "; paused %.1f ms, max %.1f ms",
                 iv->gcs, iv->gcs == 1 ? "" : "s", iv->gc_gen[0], iv->gc_gen[1], iv->gc_gen[2], secs(iv->gc_pause_ns) * 1e3,
                 secs(iv->gc_pause_max_ns) * 1e3);
        for (int g = 0; g < 5; g++)
            top_fmt_bytes(m->heap[g], heap[g], sizeof heap[g]);
        if (m->have_heap)
            snprintf(lines[3], 512, "heap (last GC): gen0 %s, gen1 %s, gen2 %s, loh %s, poh %s", heap[0],
                     heap[1], heap[2], heap[3], heap[4]);
        else
            snprintf(lines[3], 512, "heap: no GC seen yet");
    }
    /* the pool first; whole ms waited from 100 on: the line fits 80 columns */
    char pool[96] = "pool n/a";
    if (m->tp_threads >= 0 && m->tp_blocked > 0) /* sync over async: said while it lasts */
        snprintf(pool, sizeof pool, "pool %ld threads (%ld blocked on tasks), queue %ld", m->tp_threads,
                 m->tp_blocked, m->tp_queue);
    else if (m->tp_threads >= 0)
        snprintf(pool, sizeof pool, "pool %ld threads, queue %ld", m->tp_threads, m->tp_queue);
    double waited = secs(iv->lock_wait_ns) * 1e3;
    if (m->locks_on || m->all.locks_seen)
        snprintf(lines[4], 512, "%s  locks: %.1f contentions/s, %.*f ms waited", pool,
                 rate(iv->lock_count, iv->duration_ns), waited < 100 ? 1 : 0, waited);
    else
        snprintf(lines[4], 512, "%s  locks: n/a (top --locks)", pool);
}

static const char *const TABLE_NAME[TOP_NTABLES] = {"methods by CPU", "allocations by type", "exceptions by type",
                                                    "exceptions by throw site", "lock waits by site"};

/* The total of a table's first column, for shares. */
static uint64_t table_whole(const top_interval *iv, int table) {
    switch (table) {
    case TOP_CPU: return iv->samples;
    case TOP_ALLOC: return iv->alloc_bytes;
    case TOP_EXC:
    case TOP_SITE: return iv->exceptions;
    default: return iv->lock_count;
    }
}

static void print_table(FILE *out, const top_model *m, int table, const top_show *s) {
    const top_interval *iv = s->since_start ? &m->all : &m->cur;
    const top_row *rows[64];
    unsigned max = s->rows && s->rows < 64 ? s->rows : 64;
    size_t n = top_table_sorted(&iv->t[table], table == s->table ? s->col : 0, rows, max);
    uint64_t whole = table_whole(iv, table);
    fprintf(out, "\n%s%s\n", TABLE_NAME[table], s->since_start ? " (since start)" : "");
    switch (table) {
    case TOP_CPU: fprintf(out, "%7s %7s %7s  %s\n", "self%", "total%", "all%", "method"); break;
    case TOP_ALLOC: fprintf(out, "%7s %10s %10s  %s\n", "bytes%", "bytes", "objects", "type"); break;
    case TOP_LOCKS: fprintf(out, "%7s %10s %10s  %s\n", "count%", "count", "wait ms", "site"); break;
    default: fprintf(out, "%7s %10s %10s  %s\n", "count%", "count", "per s", table == TOP_EXC ? "type" : "throw site");
    }
    for (size_t i = 0; i < n; i++) {
        const top_row *r = rows[i];
        char b[32];
        switch (table) {
        case TOP_CPU: {
            uint64_t since = 0;
            for (size_t k = 0; k < m->all.t[TOP_CPU].n; k++)
                if (!strcmp(m->all.t[TOP_CPU].rows[k].name, r->name))
                    since = m->all.t[TOP_CPU].rows[k].a;
            /* a library folded from several addresses may count a sample twice in its total */
            fprintf(out, "%6.1f%% %6.1f%% %6.1f%%  %s\n", top_pct(r->a, whole), top_pct(r->b < whole ? r->b : whole, whole),
                    top_pct(since, m->all.samples), r->name);
            break;
        }
        case TOP_ALLOC:
            top_fmt_bytes(r->a, b, sizeof b);
            fprintf(out, "%6.1f%% %10s %10" PRIu64 "  %s\n", top_pct(r->a, whole), b, r->b, r->name);
            break;
        case TOP_LOCKS:
            fprintf(out, "%6.1f%% %10" PRIu64 " %10.1f  %s\n", top_pct(r->a, whole), r->a, secs(r->b) * 1e3, r->name);
            break;
        default:
            fprintf(out, "%6.1f%% %10" PRIu64 " %10.1f  %s\n", top_pct(r->a, whole), r->a, rate(r->a, iv->duration_ns),
                    r->name);
        }
    }
    if (!n)
        fprintf(out, "  (none%s)\n", table == TOP_LOCKS && !m->all.locks_seen ? ": not recorded" : "");
}

void top_print_text(FILE *out, const top_model *m, const top_show *s) {
    char h[TOP_HEADER_LINES][512], when[32] = "";
    top_header(m, h);
    time_t t = (time_t)(m->cur.start_ns / 1000000000ull + m->cur.duration_ns / 1000000000ull);
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(when, sizeof when, "%H:%M:%S", &tm);
    fprintf(out, "dnprof top - %s  interval %" PRIu64 " (%.2f s, %" PRIu64 " samples)%s\n", when, m->intervals,
            secs(m->cur.duration_ns), m->cur.samples, m->cur.dropped ? "  [windows dropped]" : "");
    for (int i = 0; i < TOP_HEADER_LINES; i++)
        fprintf(out, "%s\n", h[i]);
    print_table(out, m, TOP_CPU, s);
    if (s->table != TOP_CPU)
        print_table(out, m, s->table, s);
    else {
        print_table(out, m, TOP_EXC, s);
        print_table(out, m, TOP_ALLOC, s);
        if (m->locks_on) /* top --locks: what it was asked for */
            print_table(out, m, TOP_LOCKS, s);
    }
    fputc('\n', out);
    fflush(out);
}

/* ---- JSON ---- */

/* The total of a table's second column, for shares: samples (a method's
 * total is in samples too), objects, time waited. */
static uint64_t table_whole_b(const top_interval *iv, int table) {
    return table == TOP_ALLOC ? iv->alloc_objects : table == TOP_LOCKS ? iv->lock_wait_ns : table_whole(iv, table);
}

static void json_rows(FILE *out, const char *key, const top_interval *iv, int table, unsigned max, const char *fa,
                      const char *fb) {
    const top_row *rows[64];
    size_t n = top_table_sorted(&iv->t[table], 0, rows, max < 64 ? max : 64);
    uint64_t whole = table_whole(iv, table), whole_b = table_whole_b(iv, table);
    fprintf(out, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s{\"name\":", i ? "," : "");
        dnp_json_str(out, rows[i]->name, 0);
        fprintf(out, ",\"%s\":%" PRIu64 ",\"%s_percent\":%.2f", fa, rows[i]->a, fa, top_pct(rows[i]->a, whole));
        if (fb)
            fprintf(out, ",\"%s\":%" PRIu64 ",\"%s_percent\":%.2f", fb, rows[i]->b, fb,
                    top_pct(rows[i]->b < whole_b ? rows[i]->b : whole_b, whole_b));
        fputc('}', out);
    }
    fputc(']', out);
}

static void json_interval(FILE *out, const top_model *m, const top_interval *iv, unsigned rows) {
    fprintf(out, "{\"duration_s\":%.3f,\"samples\":%" PRIu64 ",\"sample_rate_hz\":%" PRIu64, secs(iv->duration_ns),
            iv->samples, iv->rate_hz);
    fprintf(out, ",\"exceptions\":%" PRIu64 ",\"exceptions_per_s\":%.3f", iv->exceptions,
            rate(iv->exceptions, iv->duration_ns));
    fprintf(out, ",\"alloc_bytes\":%" PRIu64 ",\"alloc_objects\":%" PRIu64, iv->alloc_bytes, iv->alloc_objects);
    if (m->gc_on || m->all.gc_seen)
        fprintf(out, ",\"gc\":{\"collections\":%" PRIu64 ",\"gen0\":%" PRIu64 ",\"gen1\":%" PRIu64
                     ",\"gen2\":%" PRIu64 ",\"pause_ms\":%.3f,\"max_pause_ms\":%.3f}",
                iv->gcs, iv->gc_gen[0], iv->gc_gen[1], iv->gc_gen[2], secs(iv->gc_pause_ns) * 1e3,
                secs(iv->gc_pause_max_ns) * 1e3);
    else
        fputs(",\"gc\":null", out);
    if (m->locks_on || m->all.locks_seen)
        fprintf(out, ",\"locks\":{\"contentions\":%" PRIu64 ",\"wait_ms\":%.3f}", iv->lock_count,
                secs(iv->lock_wait_ns) * 1e3);
    else
        fputs(",\"locks\":null", out);
    json_rows(out, "methods", iv, TOP_CPU, rows, "self", "total");
    json_rows(out, "alloc_types", iv, TOP_ALLOC, rows, "bytes", "objects");
    json_rows(out, "exception_types", iv, TOP_EXC, rows, "count", NULL);
    json_rows(out, "throw_sites", iv, TOP_SITE, rows, "count", NULL);
    json_rows(out, "lock_sites", iv, TOP_LOCKS, rows, "count", "wait_ns");
    fputc('}', out);
}

void top_print_json(FILE *out, const top_model *m, const top_show *s) {
    unsigned rows = s->rows ? s->rows : 10;
    fprintf(out, "{\"interval\":%" PRIu64 ",\"time\":%.3f,\"pid\":%ld,\"cmdline\":", m->intervals,
            secs(m->cur.start_ns + m->cur.duration_ns), m->pid);
    dnp_json_str(out, m->cmdline, 0);
    fputs(",\"runtime\":", out);
    dnp_json_str(out, m->runtime[0] ? m->runtime : NULL, 0);
    if (m->cpu_pct >= 0)
        fprintf(out, ",\"cpu_percent\":%.2f", m->cpu_pct);
    else
        fputs(",\"cpu_percent\":null", out);
    fprintf(out,
            ",\"threads\":%ld,\"pool_threads\":%ld,\"rss_bytes\":%" PRIu64 ",\"windows_dropped\":%" PRIu64
            ",\"events_lost\":%" PRIu64,
            m->threads, m->pool_threads, m->rss, m->cur.dropped, m->cur.lost);
    if (m->tp_threads >= 0)
        fprintf(out, ",\"threadpoolThreads\":%ld,\"threadpoolQueue\":%ld", m->tp_threads, m->tp_queue);
    else
        fputs(",\"threadpoolThreads\":null,\"threadpoolQueue\":null", out);
    if (m->tp_blocked >= 0)
        fprintf(out, ",\"threadpoolBlocked\":%ld", m->tp_blocked);
    else
        fputs(",\"threadpoolBlocked\":null", out);
    if (m->have_heap)
        fprintf(out, ",\"heap_bytes\":{\"gen0\":%" PRIu64 ",\"gen1\":%" PRIu64 ",\"gen2\":%" PRIu64 ",\"loh\":%" PRIu64
                     ",\"poh\":%" PRIu64 "}",
                m->heap[0], m->heap[1], m->heap[2], m->heap[3], m->heap[4]);
    else
        fputs(",\"heap_bytes\":null", out);
    fputs(",\"last\":", out);
    json_interval(out, m, &m->cur, rows);
    fputs(",\"since_start\":", out);
    json_interval(out, m, &m->all, rows);
    fputs("}\n", out);
    fflush(out);
}
