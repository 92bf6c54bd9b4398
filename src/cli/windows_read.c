/* windows_read.c: one window file (window-PID-NNNNNN.trace) as pprof
 * profiles, one per type, each with the window's time, duration and period
 * (windows_cli.h). The sample types are the ones Grafana Pyroscope's .NET
 * profiler sends: cpu (samples/count, cpu/nanoseconds), wall, alloc
 * (alloc_samples/count: estimated objects, alloc_size/bytes), exception
 * (exception/count, the type as the frame) and lock (lock_count/contentions,
 * lock_time/nanoseconds); and, with --calls and no sampling, calls
 * (calls/count by call path). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "export.h"
#include "pprof.h"
#include "report.h"
#include "trace_reader.h"
#include "windows_cli.h"
#include "settings.h"

long long cli_parse_duration(const char *text) {
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    char *end;
    double v = strtod(text, &end);
    double unit = 1000;
    if (!strcmp(end, "ms"))
        unit = 1;
    else if (!strcmp(end, "s") || !*end)
        unit = 1000;
    else if (!strcmp(end, "m"))
        unit = 60000;
    else if (!strcmp(end, "h"))
        unit = 3600000;
    else
        return -1;
    double ms = v * unit;
    return ms >= 0 && ms < 1e15 ? (long long)ms : -1;
}

void window_service_name(const char *cmdline, char *out, size_t cap) {
    char file[512];
    const char *b = dnp_program_file(cmdline, file, sizeof file);
    size_t n = 0;
    for (; *b && n + 1 < cap; b++) {
        if (!strcmp(b, ".dll"))
            break;
        /* what Pyroscope allows in a service name */
        n += (size_t)snprintf(out + n, cap - n, "%c", isalnum((unsigned char)*b) || strchr("-._/", *b) ? *b : '_');
    }
    if (!n)
        snprintf(out, cap, "dotnet");
}

/* A call tree's pprof into memory. */
static int export_mem(const dnp_calltree *ct, const dnp_export_opts *o, window_profile *p, const char *type) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return -1;
    int rc = dnp_export_pprof(ct, f, o);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return -1;
    }
    p->type = type;
    p->data = (uint8_t *)buf;
    p->len = len;
    return 0;
}

/* The throw site of the exception thrown at event i (its ExceptionDetails,
 * with --exceptions: the stack, innermost first) into frames[1..]: the count
 * of frames, 1 with the type alone. text: room for the stack's copy. */
static size_t throw_site(const dnp_trace *t, size_t i, const char **frames, size_t cap, char *text, size_t textcap) {
    uint64_t obj = t->events[i].v[DNP_V(ExceptionThrown, objectId)];
    for (size_t j = i + 1; j < t->nevents && j < i + 64; j++) {
        const dnp_trace_event *d = &t->events[j];
        if (d->kind != DNP_EV_ExceptionDetails || d->v[DNP_V(ExceptionDetails, objectId)] != obj)
            continue;
        const char *stack = dnp_trace_string(t, d->v[DNP_V(ExceptionDetails, stack)]);
        snprintf(text, textcap, "%s", stack ? stack : "");
        size_t n = 1;
        for (char *s = text, *nl; *s && n < cap; s = nl + 1) {
            nl = strchr(s, '\n');
            if (nl)
                *nl = 0;
            if (*s)
                frames[n++] = s;
            if (!nl)
                break;
        }
        return n;
    }
    return 1;
}

/* Exceptions thrown in the window, by type (the leaf) and, with
 * --exceptions, by throw site (the stack above it): one pprof of
 * exception/count. */
static int exceptions_profile(const dnp_trace *t, const window_file *w, window_profile *out) {
    int kind = DNP_EV_ExceptionThrown;
    dnp_pprof_type ty = {"exception", "count"};
    dnp_pprof *p = NULL;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind != kind)
            continue;
        if (!p) {
            if (!(p = dnp_pprof_new(&ty, 1, &ty, 1)))
                return -1;
            dnp_pprof_set_program(p, t->cmdline); /* the profile's "File:" */
        }
        const char *name = dnp_trace_string(t, e->v[DNP_VNAME(ExceptionThrown, classId)]);
        const char *frames[64] = {name && *name ? name : "[unknown type]"};
        static char text[16384];
        size_t nframes = throw_site(t, i, frames, 64, text, sizeof text);
        int64_t one = 1;
        if (dnp_pprof_add(p, frames, nframes, &one) != 0) {
            dnp_pprof_free(p);
            return -1;
        }
    }
    if (!p)
        return 0;
    dnp_pprof_set_time(p, (int64_t)w->start_ns, (int64_t)w->duration_ns);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = f ? dnp_pprof_write(p, f) : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    dnp_pprof_free(p);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    out->type = "exception";
    out->data = (uint8_t *)buf;
    out->len = len;
    return 1;
}

/* The Window event and the process: 0, or -1 when the file is no window. */
static int window_head(const dnp_trace *t, window_file *w) {
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        if (e->kind != DNP_EV_Window)
            continue;
        w->index = e->v[DNP_V(Window, index)];
        w->start_ns = e->v[DNP_V(Window, startNs)];
        w->duration_ns = e->v[DNP_V(Window, durationNs)];
        w->dropped = e->v[DNP_V(Window, dropped)];
        w->lost = e->v[DNP_V(Window, lost)];
        w->pid = (long)dnp_trace_host_pid(t); /* in a container: the pid the host knows it by */
        snprintf(w->cmdline, sizeof w->cmdline, "%s", t->cmdline ? t->cmdline : "");
        return 0;
    }
    return -1;
}

/* A tree of the window (calls, allocations, lock waits) as one pprof of type, its
 * two sample types named count_name and weight_name: 1, 0 when it has none. */
static int tree_profile(const dnp_calltree *ct, const window_file *w, window_profile *out, const char *type,
                        const char *count_name, const char *weight_name, char *err, size_t errlen) {
    dnp_export_opts o = {0};
    o.time_ns = (int64_t)w->start_ns;
    o.duration_ns = (int64_t)w->duration_ns;
    o.type_names[0] = count_name;
    o.type_names[1] = weight_name;
    if (ct && export_mem(ct, &o, out, type) == 0)
        return 1;
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int sampled_profile(const dnp_trace *t, const window_file *w, window_profile *out, char *err, size_t errlen) {
    dnp_calltree *ct = NULL;
    if (dnp_calltree_build(t, &ct, err, errlen) != 0)
        return -1;
    int rc = 0;
    if (dnp_calltree_has_data(ct) && ct->sample_nodes) {
        dnp_export_opts o = {0};
        o.time_ns = (int64_t)w->start_ns;
        o.duration_ns = (int64_t)w->duration_ns;
        rc = export_mem(ct, &o, out, ct->sample_mode == DNP_SAMPLE_CPU ? "cpu" : "wall") == 0 ? 1 : -1;
        if (rc < 0)
            snprintf(err, errlen, "out of memory");
    } else if (dnp_calltree_has_data(ct) && ct->call_nodes) {
        /* --calls without --sample: the window's calls by call path (exact counts) */
        rc = tree_profile(ct, w, out, "calls", "calls", "time", err, errlen);
    }
    dnp_calltree_free(ct);
    return rc;
}

static int alloc_profile_of(const char *path, const window_file *w, window_profile *out, char *err, size_t errlen) {
    alloc_profile *ap = NULL;
    if (alloc_open(path, &ap) != 0) {
        snprintf(err, errlen, "%s: cannot read its allocations", path);
        return -1;
    }
    int rc = alloc_has_data(ap) ? tree_profile(alloc_calltree(ap), w, out, "alloc", "alloc_samples", "alloc_size",
                                               err, errlen)
                                : 0;
    alloc_free(ap);
    return rc;
}

/* The lock contention of the window (--locks): lock_count (contentions) and
 * lock_time (nanoseconds waited), as Pyroscope's .NET profiler names them. */
static int lock_profile_of(const char *path, const window_file *w, window_profile *out, char *err, size_t errlen) {
    locks_profile *lp = NULL;
    if (locks_open(path, &lp) != 0) {
        snprintf(err, errlen, "%s: cannot read its lock waits", path);
        return -1;
    }
    /* a window has the waits (LockSite), not the recording's LockConfig */
    const dnp_calltree *ct = locks_calltree(lp);
    int rc = ct && dnp_calltree_has_data(ct)
                 ? tree_profile(ct, w, out, "lock", "lock_count", "lock_time", err, errlen)
                 : 0;
    locks_free(lp);
    return rc;
}

int window_file_read(const char *path, window_file *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    dnp_trace *t = NULL;
    if (dnp_trace_load(path, &t, err, errlen) != 0)
        return -1;
    int rc = -1;
    if (t->status != DNP_TRACE_COMPLETE)
        snprintf(err, errlen, "%s: not complete: %s", path, t->status_text);
    else if (window_head(t, w) != 0)
        snprintf(err, errlen, "%s: no Window event: not a window of dnprof run --every", path);
    else
        rc = 0;
    int got;
    if (rc == 0 && (got = sampled_profile(t, w, &w->prof[w->nprof], err, errlen)) != 0)
        rc = got < 0 ? -1 : (w->nprof++, 0);
    if (rc == 0 && (got = exceptions_profile(t, w, &w->prof[w->nprof])) != 0)
        rc = got < 0 ? (snprintf(err, errlen, "out of memory"), -1) : (w->nprof++, 0);
    dnp_trace_free(t);
    if (rc == 0 && (got = alloc_profile_of(path, w, &w->prof[w->nprof], err, errlen)) != 0)
        rc = got < 0 ? -1 : (w->nprof++, 0);
    if (rc == 0 && w->nprof < WINDOW_MAX_PROFILES &&
        (got = lock_profile_of(path, w, &w->prof[w->nprof], err, errlen)) != 0)
        rc = got < 0 ? -1 : (w->nprof++, 0);
    if (rc != 0)
        window_file_free(w);
    return rc;
}

void window_file_free(window_file *w) {
    for (int i = 0; i < w->nprof; i++)
        free(w->prof[i].data);
    w->nprof = 0;
}
