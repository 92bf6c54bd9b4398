/* top_model.c: the data of `dnprof top` (top.h): bounded tables of names and
 * counts, one window file read into an interval and added to the tables since
 * the start, and the header's figures from /proc. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calltree.h"
#include "export.h"
#include "lock_site.h"
#include "prettyname.h"
#include "stories.h"
#include "top.h"
#include "trace_reader.h"

/* ---- tables ---- */

static uint64_t name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

void top_table_add(top_table *t, const char *name, uint64_t a, uint64_t b) {
    uint64_t h = name_hash(name), at;
    if (dnp_u64map_get(&t->index, h, &at)) {
        t->rows[at - 1].a += a;
        t->rows[at - 1].b += b;
        return;
    }
    if (t->n == TOP_MAX_KEYS)
        goto other;
    if (t->n == t->cap) {
        size_t c = t->cap ? t->cap * 2 : 64;
        top_row *r = realloc(t->rows, c * sizeof *r);
        if (!r)
            goto other;
        t->rows = r;
        t->cap = c;
    }
    char *copy = strdup(name);
    if (!copy || dnp_u64map_put(&t->index, h, t->n + 1, NULL) != 0) {
        free(copy);
        goto other;
    }
    t->rows[t->n++] = (top_row){copy, a, b};
    return;
other:
    t->other_a += a;
    t->other_b += b;
    t->other_keys++;
}

void top_table_clear(top_table *t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].name);
    t->n = 0;
    t->other_a = t->other_b = t->other_keys = 0;
    /* the index goes: it is rebuilt as names come (its memory with it) */
    free(t->index.ka);
    free(t->index.kb);
    free(t->index.val);
    free(t->index.full);
    memset(&t->index, 0, sizeof t->index);
}

void top_table_free(top_table *t) {
    top_table_clear(t);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

static int g_sort_col;

static int by_col(const void *x, const void *y) {
    const top_row *a = *(const top_row *const *)x, *b = *(const top_row *const *)y;
    uint64_t va = g_sort_col ? a->b : a->a, vb = g_sort_col ? b->b : b->a;
    uint64_t wa = g_sort_col ? a->a : a->b, wb = g_sort_col ? b->a : b->b;
    if (va != vb)
        return va > vb ? -1 : 1;
    if (wa != wb)
        return wa > wb ? -1 : 1;
    return strcmp(a->name, b->name);
}

size_t top_table_sorted(const top_table *t, int col, const top_row **out, size_t max) {
    if (!t->n || !max)
        return 0;
    const top_row **all = malloc(t->n * sizeof *all);
    if (!all)
        return 0;
    for (size_t i = 0; i < t->n; i++)
        all[i] = &t->rows[i];
    g_sort_col = col;
    qsort(all, t->n, sizeof *all, by_col);
    size_t n = t->n < max ? t->n : max;
    memcpy(out, all, n * sizeof *out);
    free(all);
    return n;
}

/* ---- the model ---- */

void top_model_init(top_model *m, long pid) {
    memset(m, 0, sizeof *m);
    m->pid = pid;
    m->cpu_pct = -1;
    m->threads = -1;
    m->pool_threads = -1;
    m->tp_threads = m->tp_queue = m->tp_blocked = -1;
}

static void interval_free(top_interval *iv) {
    for (int i = 0; i < TOP_NTABLES; i++)
        top_table_free(&iv->t[i]);
}

void top_model_free(top_model *m) {
    interval_free(&m->cur);
    interval_free(&m->all);
}

static void interval_reset(top_interval *iv) {
    top_table keep[TOP_NTABLES];
    for (int i = 0; i < TOP_NTABLES; i++) {
        top_table_clear(&iv->t[i]);
        keep[i] = iv->t[i];
    }
    memset(iv, 0, sizeof *iv);
    memcpy(iv->t, keep, sizeof keep);
}

/* The first line of a stack ("one function a line, innermost first"), pretty. */
static void first_frame(const char *stack, char *out, size_t cap) {
    char raw[1024];
    size_t n = strcspn(stack, "\n");
    snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw ? n : sizeof raw - 1), stack);
    dnp_pretty_name(raw, out, cap);
}

/* The throw site of an exception's stack (past an await's rethrow), named. */
static void throw_site(const char *stack, char *out, size_t cap) {
    size_t n;
    first_frame(dnp_story_site_in_stack(stack, &n), out, cap);
}

static const char *str_or(const dnp_trace *t, uint64_t id, const char *none) {
    const char *s = dnp_trace_string(t, id);
    return s && *s ? s : none;
}

static void gc_event(top_model *m, const dnp_trace_event *e) {
    top_interval *iv = &m->cur;
    iv->gc_seen = 1;
    if (e->kind == DNP_EV_GcConfig)
        return;
    if (e->kind == DNP_EV_GcSizes) {
        if (e->v[DNP_V(GcSizes, phase)] != 1)
            return;
        m->have_heap = 1;
        m->heap[0] = e->v[DNP_V(GcSizes, gen0)];
        m->heap[1] = e->v[DNP_V(GcSizes, gen1)];
        m->heap[2] = e->v[DNP_V(GcSizes, gen2)];
        m->heap[3] = e->v[DNP_V(GcSizes, loh)];
        m->heap[4] = e->v[DNP_V(GcSizes, poh)];
        return;
    }
    uint64_t gen = e->v[DNP_V(GcCollection, generation)], pause = e->v[DNP_V(GcCollection, pauseNs)];
    iv->gcs++;
    iv->gc_gen[gen < 2 ? gen : 2]++;
    iv->gc_pause_ns += pause;
    if (pause > iv->gc_pause_max_ns)
        iv->gc_pause_max_ns = pause;
}

/* One event of the window into m->cur (the samples are read as a tree, below). */
static void take_event(top_model *m, const dnp_trace *t, const dnp_trace_event *e) {
    top_interval *iv = &m->cur;
    char name[512];
    switch (e->kind) {
    case DNP_EV_Window:
        iv->start_ns = e->v[DNP_V(Window, startNs)];
        iv->duration_ns = e->v[DNP_V(Window, durationNs)];
        iv->dropped = e->v[DNP_V(Window, dropped)];
        iv->lost = e->v[DNP_V(Window, lost)];
        break;
    case DNP_EV_SampleConfig:
        iv->period_ns = e->v[DNP_V(SampleConfig, periodNs)];
        iv->rate_hz = e->v[DNP_V(SampleConfig, rateHz)];
        break;
    case DNP_EV_ExceptionThrown:
        iv->exceptions++;
        top_table_add(&iv->t[TOP_EXC], str_or(t, e->v[DNP_VNAME(ExceptionThrown, classId)], "[unknown type]"), 1, 0);
        break;
    case DNP_EV_ExceptionDetails: {
        const char *stack = dnp_trace_string(t, e->v[DNP_V(ExceptionDetails, stack)]);
        if (stack && *stack) {
            throw_site(stack, name, sizeof name);
            top_table_add(&iv->t[TOP_SITE], name, 1, 0);
        }
        break;
    }
    case DNP_EV_AllocSite: {
        uint64_t bytes = e->v[DNP_V(AllocSite, weightBytes)], objs = e->v[DNP_V(AllocSite, objectsMilli)] / 1000;
        iv->alloc_bytes += bytes;
        iv->alloc_objects += objs;
        top_table_add(&iv->t[TOP_ALLOC], str_or(t, e->v[DNP_V(AllocSite, typeName)], "[unknown type]"), bytes, objs);
        break;
    }
    case DNP_EV_LockSite: {
        size_t len = 0;
        const char *stack = dnp_trace_string(t, e->v[DNP_V(LockSite, stack)]);
        if (lock_classify(stack, (unsigned)e->v[DNP_V(LockSite, kind)]) != LOCK_OWN)
            break; /* the runtime's own, tries that failed at once: as report --locks leaves them out */
        const char *site = lock_site(stack, &len);
        uint64_t count = e->v[DNP_V(LockSite, count)], ns = e->v[DNP_V(LockSite, waitNs)];
        if (site && len)
            first_frame(site, name, sizeof name); /* as report --locks names the site */
        else
            snprintf(name, sizeof name, "[unknown site]");
        iv->locks_seen = 1;
        iv->lock_count += count;
        iv->lock_wait_ns += ns;
        top_table_add(&iv->t[TOP_LOCKS], name, count, ns);
        break;
    }
    case DNP_EV_LockConfig: iv->locks_seen = 1; break;
    case DNP_EV_ThreadPoolState: /* read from the pool's objects (dnprof top's agent) */
        m->tp_threads = (long)e->v[DNP_V(ThreadPoolState, threads)];
        m->tp_queue = (long)e->v[DNP_V(ThreadPoolState, queue)];
        break;
    case DNP_EV_ThreadPoolBlocked: m->tp_blocked = (long)e->v[DNP_V(ThreadPoolBlocked, blocked)]; break;
    case DNP_EV_ThreadPoolCounters: /* the runtime's EventCounters (windows of dnprof run --threadpool --every) */
        m->tp_threads = (long)e->v[DNP_V(ThreadPoolCounters, threads)];
        m->tp_queue = (long)e->v[DNP_V(ThreadPoolCounters, queue)];
        break;
    case DNP_EV_GcConfig:
    case DNP_EV_GcSizes:
    case DNP_EV_GcCollection: gc_event(m, e); break;
    default: break;
    }
}

/* Native code without a symbol ("[libcoreclr.so+0x49a4e0]") as its library
 * ("[libcoreclr.so]"): a live view adds up by library what it cannot name. */
static const char *fold_native(const char *name, char *buf, size_t cap) {
    size_t n = strlen(name);
    const char *plus = strstr(name, "+0x");
    if (name[0] != '[' || !plus || n < 2 || name[n - 1] != ']')
        return name;
    snprintf(buf, cap, "%.*s]", (int)(plus - name), name);
    return buf;
}

/* The samples of the stacks that hold some code of each library folded by
 * fold_native, into the CPU table's totals, each stack once per library (the
 * functions' own totals added up counted it once per function, past 100%),
 * and without the native frames that start every thread (the host's, libc's,
 * the runtime's thread start: each "100% by total" and saying nothing, as the
 * report leaves them out): a library's code called from managed code counts
 * from its outermost such frame; the rootward part of a stack only for the
 * samples that never reach managed code (the runtime's own threads). Each
 * node's library is named once, as a small number; the walks up compare
 * numbers. */
static void add_library_totals(top_interval *iv, const dnp_calltree *ct, uint64_t period) {
    enum { LIBS = 255 };
    const dnp_ct_tree *tr = &ct->all;
    uint32_t nn = tr->nnodes ? tr->nnodes : 1;
    uint8_t *lib = calloc(nn, 1), *mgd = calloc(nn, 1);   /* mgd: a managed frame is rootward of it */
    uint64_t *reached = calloc(nn, sizeof *reached);        /* of its total, the stacks that reach managed code */
    char names[LIBS][128];
    unsigned nlibs = 0;
    for (uint32_t i = 1; lib && mgd && reached && i < tr->nnodes; i++) {
        for (uint32_t a = tr->nodes[i].parent; a && !mgd[i]; a = tr->nodes[a].parent)
            mgd[i] = tr->nodes[a].func != 0;
        char buf[1024], folded[1024];
        const dnp_ct_node *nd = &tr->nodes[i];
        if (nd->func || fold_native(dnp_export_name(ct, 0, nd->name, buf, sizeof buf), folded, sizeof folded) != folded)
            continue; /* not native code named by its library */
        char key[sizeof names[0]];
        snprintf(key, sizeof key, "%.*s", (int)sizeof key - 1, folded);
        unsigned k = 0;
        while (k < nlibs && strcmp(names[k], key) != 0)
            k++;
        if (k == nlibs && nlibs < LIBS)
            memcpy(names[nlibs++], key, sizeof key);
        lib[i] = k < nlibs ? (uint8_t)(k + 1) : 0;
    }
    for (uint32_t i = 1; lib && mgd && reached && i < tr->nnodes; i++)
        if (tr->nodes[i].func && !mgd[i]) /* the outermost managed frame of its stacks */
            for (uint32_t a = tr->nodes[i].parent; a; a = tr->nodes[a].parent)
                reached[a] += tr->nodes[i].total_ns;
    for (uint32_t i = 1; lib && mgd && reached && i < tr->nnodes; i++) {
        if (!lib[i])
            continue;
        int outer = 1;
        for (uint32_t a = tr->nodes[i].parent; a && outer; a = tr->nodes[a].parent)
            outer = lib[a] != lib[i] || mgd[a] != mgd[i];
        uint64_t ns = mgd[i] ? tr->nodes[i].total_ns
                             : tr->nodes[i].total_ns - (reached[i] < tr->nodes[i].total_ns ? reached[i] : tr->nodes[i].total_ns);
        if (outer && ns)
            top_table_add(&iv->t[TOP_CPU], names[lib[i] - 1], 0, (ns + period / 2) / period);
    }
    free(lib);
    free(mgd);
    free(reached);
}

/* The window's samples, per method: self and total (recursion once). */
static int take_samples(top_model *m, const dnp_trace *t, char *err, size_t errlen) {
    dnp_calltree *ct = NULL;
    if (dnp_calltree_build(t, &ct, err, errlen) != 0)
        return -1;
    top_interval *iv = &m->cur;
    dnp_ct_func *f = NULL;
    size_t n = 0;
    uint64_t period = ct->sample_period_ns ? ct->sample_period_ns : iv->period_ns;
    if (ct->sample_nodes && period && dnp_ct_functions(&ct->all, &f, &n) == 0) {
        iv->period_ns = period;
        for (size_t i = 0; i < n; i++) {
            char buf[1024], folded[1024];
            uint64_t self = (f[i].self_ns + period / 2) / period;
            const char *name = fold_native(dnp_export_name(ct, f[i].func, f[i].name, buf, sizeof buf), folded,
                                           sizeof folded);
            iv->samples += self;
            /* a library's functions: their total is the library's, added up once below */
            uint64_t total = name == folded ? 0 : f[i].outer_calls;
            if (self || total)
                top_table_add(&iv->t[TOP_CPU], name, self, total);
        }
        free(f);
        add_library_totals(iv, ct, period);
    }
    dnp_calltree_free(ct);
    return 0;
}

static void merge(top_interval *all, const top_interval *iv) {
    if (!all->windows)
        all->start_ns = iv->start_ns;
    all->windows++;
    all->duration_ns += iv->duration_ns;
    all->samples += iv->samples;
    if (iv->period_ns) {
        all->period_ns = iv->period_ns;
        all->rate_hz = iv->rate_hz;
    }
    all->exceptions += iv->exceptions;
    all->alloc_bytes += iv->alloc_bytes;
    all->alloc_objects += iv->alloc_objects;
    all->gc_seen |= iv->gc_seen;
    all->gcs += iv->gcs;
    for (int g = 0; g < 3; g++)
        all->gc_gen[g] += iv->gc_gen[g];
    all->gc_pause_ns += iv->gc_pause_ns;
    if (iv->gc_pause_max_ns > all->gc_pause_max_ns)
        all->gc_pause_max_ns = iv->gc_pause_max_ns;
    all->locks_seen |= iv->locks_seen;
    all->lock_count += iv->lock_count;
    all->lock_wait_ns += iv->lock_wait_ns;
    all->dropped = iv->dropped;
    all->lost += iv->lost;
    for (int k = 0; k < TOP_NTABLES; k++) {
        const top_table *from = &iv->t[k];
        for (size_t i = 0; i < from->n; i++)
            top_table_add(&all->t[k], from->rows[i].name, from->rows[i].a, from->rows[i].b);
        all->t[k].other_a += from->other_a;
        all->t[k].other_b += from->other_b;
    }
}

int top_model_window(top_model *m, const char *path, char *err, size_t errlen) {
    dnp_trace *t = NULL;
    if (dnp_trace_load(path, &t, err, errlen) != 0)
        return -1;
    int rc = 0;
    interval_reset(&m->cur);
    m->cur.windows = 1;
    if (t->status != DNP_TRACE_COMPLETE) {
        snprintf(err, errlen, "%s: not complete: %s", path, t->status_text);
        rc = -1;
    } else {
        if (t->pid) /* in a container: the pid the host knows it by, as it was asked for */
            m->pid = (long)dnp_trace_host_pid(t);
        if (t->cmdline && *t->cmdline)
            snprintf(m->cmdline, sizeof m->cmdline, "%s", t->cmdline);
        if (t->runtime && *t->runtime)
            snprintf(m->runtime, sizeof m->runtime, "%s", t->runtime);
        for (size_t i = 0; i < t->nevents; i++)
            take_event(m, t, &t->events[i]);
        rc = take_samples(m, t, err, errlen);
    }
    dnp_trace_free(t);
    if (rc == 0) {
        merge(&m->all, &m->cur);
        m->intervals++;
    }
    return rc;
}

/* ---- /proc ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The threads named as the runtime names its thread pool's workers. */
static long pool_threads(long pid) {
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char comm[64] = "";
        snprintf(path, sizeof path, "/proc/%ld/task/%.20s/comm", pid, de->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(comm, sizeof comm, f) && !strncmp(comm, ".NET TP Worker", 14))
                n++;
            fclose(f);
        }
    }
    closedir(d);
    return n;
}

int top_model_proc(top_model *m) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/stat", m->pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        m->gone = 1;
        m->cpu_pct = -1; /* not read for this interval: "--", not the last one's */
        return -1;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    char state = 0;
    unsigned long long utime = 0, stime = 0, start = 0;
    /* after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
     * cutime cstime priority nice num_threads itrealvalue starttime */
    int got = p ? sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu",
                         &state, &utime, &stime, &start)
                : 0;
    if (got < 3 || state == 'Z' || state == 'X') {
        m->gone = 1;
        m->cpu_pct = -1;
        return -1;
    }
    double wall = now_s();
    unsigned long long ticks = utime + stime;
    long hz = sysconf(_SC_CLK_TCK);
    if (m->last_wall > 0 && wall > m->last_wall + 0.05 && hz > 0) {
        m->cpu_pct = 100.0 * (double)(ticks - m->last_ticks) / (double)hz / (wall - m->last_wall);
    } else if (m->last_wall <= 0 && got == 4 && hz > 0) {
        /* the first reading: since the process started, as top(1) shows its first screen */
        double up = 0;
        FILE *u = fopen("/proc/uptime", "r");
        if (u && fscanf(u, "%lf", &up) == 1 && up > (double)start / (double)hz + 0.05)
            m->cpu_pct = 100.0 * (double)ticks / (double)hz / (up - (double)start / (double)hz);
        if (u)
            fclose(u);
    }
    m->last_ticks = ticks;
    m->last_wall = wall;
    snprintf(path, sizeof path, "/proc/%ld/status", m->pid);
    if ((f = fopen(path, "r")) != NULL) {
        char line[256];
        unsigned long long kb;
        long th;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "Threads: %ld", &th) == 1)
                m->threads = th;
            else if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
                m->rss = (uint64_t)kb * 1024;
        }
        fclose(f);
    }
    m->pool_threads = pool_threads(m->pid);
    return 0;
}

double top_pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * (double)part / (double)whole : 0;
}
