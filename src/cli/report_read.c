/* report_read.c: one pass over a trace's events for the reports that add up
 * the agent's own records, and the warnings of a trace that is not whole
 * (report.h). */
#include "cli.h"
#include "report.h"

void report_warn_trace(const char *path, const dnp_trace *t, int lost) {
    if (t->status != DNP_TRACE_COMPLETE)
        warning("%s: %s", path, t->status_text[0] ? t->status_text : "the trace is not complete");
    if (lost && t->lost) {
        char n[32];
        warning("%s: the agent could not record %s events", path, cli_fmt_count(t->lost, n));
    }
}

int report_read_events(const char *path, report_feed feed, void *ctx, dnp_trace_stream **keep, int warn) {
    char err[512];
    dnp_trace_stream *s = NULL;
    if (keep)
        *keep = NULL;
    if (dnp_trace_stream_open(path, &s, err, sizeof err) != 0)
        return error("%s", err), 1;
    const dnp_trace *t = dnp_trace_stream_trace(s);
    dnp_trace_event e;
    int got, rc = 0;
    while (rc == 0 && (got = dnp_trace_stream_next(s, &e)) > 0)
        rc = feed(ctx, t, &e);
    if (rc != 0 || got < 0) {
        error("%s: %s", path, rc != 0 ? "out of memory" : dnp_trace_stream_error(s));
        dnp_trace_stream_close(s);
        return 1;
    }
    if (warn)
        report_warn_trace(path, t, 0);
    if (keep)
        *keep = s;
    else
        dnp_trace_stream_close(s);
    return 0;
}
