/* export.h: a call tree (calltree.h) in the formats that profile viewers open.
 *
 *   folded      FlameGraph's folded stacks, "a;b;c N": flamegraph.pl, speedscope,
 *               and most flame graph tools read them
 *   speedscope  speedscope's JSON (https://www.speedscope.app): one profile per
 *               thread, "evented" (exact open/close times) when the trace has the
 *               enter/leave timeline, else "sampled" with weights in ns
 *   chrome      Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): "X"
 *               events from the timeline, or laid out from the tree per thread
 *   flamegraph  one self-contained HTML file: search, click to zoom, tooltips
 *
 * Names are shown pretty (prettyname.h); JSON formats keep the raw name too.
 * Each returns 0, or -1 with errno set when writing failed. */
#ifndef DNP_EXPORT_H
#define DNP_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "calltree.h"
#include "jsonstr.h"

/* A slice of the Chrome timeline besides the calls (a lock wait, ...): on the
 * trace's thread number thread, from start_ns (the trace's clock) for dur_ns;
 * a, b, c are the caller's, for its args writer. */
typedef struct dnp_export_slice {
    uint32_t thread;
    uint64_t start_ns, dur_ns;
    const char *cat, *name; /* not owned */
    uint64_t a, b, c;
} dnp_export_slice;

typedef struct dnp_export_opts {
    int weight_calls;           /* folded: N is calls, not self ns */
    const dnp_ct_tree *tree;    /* folded, flamegraph: this tree; NULL: all threads merged */
    const char *title;          /* shown by the viewers; NULL: the trace's command line */
    /* Called now and then on long work, with work done and the total. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* chrome: these slices too, each on its thread; slice_args writes the
     * members of its "args" object (NULL: none). */
    const dnp_export_slice *slices;
    size_t nslices;
    void (*slice_args)(void *ctx, FILE *out, const dnp_export_slice *s);
    void *slice_ctx;
    /* pprof: when the profile was taken and for how long, in ns (time 0: the
     * trace's start, no duration), and its two sample types' names (NULL: the
     * defaults; continuous profiling names them as Pyroscope does) */
    int64_t time_ns, duration_ns;
    const char *type_names[2];
} dnp_export_opts;

int dnp_export_folded(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);
int dnp_export_speedscope(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);
int dnp_export_chrome(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);
int dnp_export_flamegraph(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);

/* GCStart's reason and type as words (gc_names.c): "induced", "alloc_small", "blocking". */
const char *dnp_gc_start_reason(uint64_t reason);
const char *dnp_gc_start_reason_id(uint64_t reason);
const char *dnp_gc_type_name(uint64_t type);
/* A GC condemn condition (GcRaised's conditions, bit by bit): words, an id. */
const char *dnp_gc_condition(unsigned bit);
const char *dnp_gc_condition_id(unsigned bit);
/* Whether GCStart's reason is an induced one (GC.Collect and its kinds). */
int dnp_gc_reason_induced(uint64_t reason);

/* ---- helpers shared with the report ---- */

/* The name to show for a function: pretty, or "<function 0x...>" when unknown. */
const char *dnp_export_name(const dnp_calltree *ct, uint64_t func, uint64_t name, char *buf, size_t len);

/* The library of a native frame's name ("libc.so.6" of "libc.so.6!memset" or
 * "[libc.so.6+0x16e040]") into out: its length, 0 when the name is no native
 * library's (managed code, [waiting], [anonymous code]). frame_lib.c. */
size_t dnp_frame_library(const char *name, char *out, size_t cap);

/* The program's file from a trace's command line, into out: the application's
 * "web.dll" for "dotnet /srv/web.dll ...", else the executable's own name;
 * "" when there is none. export_common.c. */
const char *dnp_program_file(const char *cmdline, char *out, size_t cap);

/* s as a JSON string (jsonstr.h); html_safe: for JSON inside a <script>. */
static inline void dnp_export_json_str(FILE *out, const char *s, int html_safe) {
    dnp_json_str(out, s, html_safe ? DNP_JSON_HTML_SAFE : 0);
}

/* A thread's label: "thread 3 (worker)", "thread tid 4242", "all threads". */
void dnp_export_thread_label(const dnp_ct_tree *tr, char *buf, size_t len);
/* A thread's JSON object begun: a new line (after a comma when comma), head
 * ("{\"label\":") and the thread's label as a JSON string. */
void dnp_export_thread_object(FILE *out, int comma, const char *head, const dnp_ct_tree *tr, int html_safe);

/* An exporter's last step: flushes out; returns 0 when rc is 0 and all was
 * written, else -1 with errno set (EIO when nothing else set it). */
int dnp_export_end(FILE *out, int rc);

#endif
