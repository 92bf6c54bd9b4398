/* report.h: `dnprof report` (cmd_report.c): what a trace adds up to, for a
 * person or, with --json, for tools. One function per kind of report. */
#ifndef DNP_REPORT_H
#define DNP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "trace_reader.h"

/* ---- calls: top functions, hottest paths, the call tree (report_calls.c) ---- */
typedef struct report_opts {
    const char *path;   /* the trace file, for the header */
    unsigned top;       /* --top N */
    int tree;           /* --tree */
    double threshold;   /* --threshold: percent of the total below which the tree is pruned */
    int has_thread;     /* --thread given: */
    uint64_t thread;    /* dnprof's thread number or an OS thread id */
    int json;           /* --json */
} report_opts;

/* Writes the calls report of t to out. Returns the exit code: 0, or 1 after
 * saying why (no call data, no such thread, output failed). */
int report_calls(const dnp_trace *t, const report_opts *o, FILE *out);

/* ---- exceptions (issue 4, report_exceptions.c): return the exit code ---- */
int report_exceptions(const dnp_trace *t, int json, FILE *out);
/* Each exception's story in order (dnprof print --exceptions); --json: one object a line. */
int print_exceptions(const dnp_trace *t, int json, FILE *out);

#endif
