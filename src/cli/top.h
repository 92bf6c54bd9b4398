/* top.h: `dnprof top`, a live view of a running .NET program (docs/top.md).
 *
 * The agent cuts what --sample, --alloc, --exceptions and --gc added up into a
 * window file every --interval (src/agent/windows.h); the front end reads each
 * window as it comes, deletes it, and turns it into an interval
 * (top_model.c): tables of methods by CPU samples, allocations and exceptions
 * by type, throw sites, lock waits by site, and the GC's collections, each
 * bounded (TOP_MAX_KEYS distinct names, the rest folded into "other"); the
 * intervals are added up into the tables since the start, bounded alike. The
 * header comes from /proc too (CPU %, threads, RSS). The screen (top_view.c,
 * ncurses) and batch mode (top_batch.c, plain text or one JSON object per
 * interval) show a model; cmd_top.c attaches or launches, and loops. */
#ifndef DNP_TOP_H
#define DNP_TOP_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "u64map.h"

/* Distinct names per table; past it, what comes is folded into "other". */
#define TOP_MAX_KEYS 4096

typedef struct top_row {
    char *name;
    uint64_t a, b; /* cpu: self and total samples; alloc: bytes and objects; exceptions, sites: count;
                    * locks: contentions and ns waited */
} top_row;

typedef struct top_table {
    top_row *rows;
    size_t n, cap;
    dnp_u64map index;      /* hash of the name -> row + 1 */
    uint64_t other_a, other_b, other_keys; /* folded in: past TOP_MAX_KEYS */
} top_table;

void top_table_add(top_table *t, const char *name, uint64_t a, uint64_t b);
void top_table_clear(top_table *t); /* empty, its memory kept */
void top_table_free(top_table *t);
/* Pointers to t's rows, sorted by a (col 0) or b (col 1), largest first; at
 * most max of them into out. Returns how many. */
size_t top_table_sorted(const top_table *t, int col, const top_row **out, size_t max);

/* The tables of the view, in the order of its keys. */
enum { TOP_CPU, TOP_ALLOC, TOP_EXC, TOP_SITE, TOP_LOCKS, TOP_NTABLES };

/* What one interval (a window), or all of them since the start, adds up to. */
typedef struct top_interval {
    uint64_t windows;          /* windows added up (1 for an interval) */
    uint64_t start_ns, duration_ns; /* realtime; the length covered */
    uint64_t samples;          /* CPU samples (of every method) */
    uint64_t period_ns, rate_hz; /* what one sample stands for (SampleConfig) */
    uint64_t exceptions;
    uint64_t alloc_bytes, alloc_objects;
    int gc_seen;               /* the windows carry the GC's events (--gc) */
    uint64_t gcs, gc_gen[3], gc_pause_ns, gc_pause_max_ns;
    int locks_seen;            /* LockSite events came */
    uint64_t lock_count, lock_wait_ns;
    uint64_t dropped, lost;    /* windows the agent dropped so far; events left out */
    top_table t[TOP_NTABLES];
} top_interval;

typedef struct top_model {
    long pid;
    char cmdline[512];
    char runtime[128];
    top_interval cur;          /* the last interval */
    top_interval all;          /* since the start */
    uint64_t intervals;
    int have_heap;             /* heap[] known: sizes after the last GC seen */
    uint64_t heap[5];          /* gen0, gen1, gen2, large, pinned */
    /* from /proc */
    double cpu_pct;            /* of one CPU, over the last interval (-1: not yet) */
    long threads;
    long pool_threads;         /* the runtime's thread-pool workers (.NET TP Worker), -1 unknown */
    long tp_threads, tp_queue; /* the pool's counters (ThreadPoolCounters), the last seen; -1 none yet */
    long tp_blocked;           /* its threads blocked on tasks (ThreadPoolBlocked), the last seen; -1 none */
    uint64_t rss;
    unsigned long long last_ticks;
    double last_wall;
    int gone;                  /* the process has exited */
    int gc_on;                 /* GC events were asked for (the windows carry them) */
    int locks_on;              /* lock contention was asked for */
} top_model;

void top_model_init(top_model *m, long pid);
void top_model_free(top_model *m);
/* Reads a window file into m->cur (the tables since the start get it too).
 * 0, or -1 with one line in err. */
int top_model_window(top_model *m, const char *path, char *err, size_t errlen);
/* Reads /proc/PID (CPU % since the last call, threads, RSS); -1 when the
 * process is gone. */
int top_model_proc(top_model *m);

/* ---- what is shown (top_batch.c, top_view.c) ---- */

typedef struct top_show {
    int table;                 /* TOP_CPU, ... */
    int col;                   /* sort column: 0 the first (self, bytes, count), 1 the second */
    int since_start;           /* the tables since the start rather than the interval's */
    unsigned rows;             /* batch: rows per table */
} top_show;

/* The share of part in whole, in percent (0 when whole is 0). */
double top_pct(uint64_t part, uint64_t whole);
/* "4.2 KiB/s"-style rates and sizes, and a method name cut to width. */
void top_fmt_bytes(uint64_t n, char *buf, size_t cap);
/* The plain-text snapshot of batch mode. */
void top_print_text(FILE *out, const top_model *m, const top_show *s);
/* One JSON object on one line. */
void top_print_json(FILE *out, const top_model *m, const top_show *s);
/* The header's lines (process; CPU, threads, memory, rates; GC; heap; locks), for both. */
#define TOP_HEADER_LINES 5
void top_header(const top_model *m, char lines[TOP_HEADER_LINES][512]);

/* ---- the screen (top_view.c) ---- */
typedef struct top_view top_view;
/* Opens the screen on the terminal (tty_in/tty_out: NULL for stdin/stdout).
 * NULL, with one line said, when it cannot (too small: says the size needed). */
top_view *top_view_open(FILE *tty_in, FILE *tty_out, int no_color);
/* Draws m. */
void top_view_draw(top_view *v, const top_model *m, const char *status);
/* Waits up to ms for a key and handles it: 1 quit, 0 otherwise; -1 the
 * terminal became too small (said on close). */
int top_view_key(top_view *v, int ms);
int top_view_frozen(const top_view *v);
/* Shows last_line (when given) in place of the keys for a moment, and closes. */
void top_view_close(top_view *v, const char *last_line);

#endif
