/* report_stack.c: what the reports of recorded stacks share (report.h): a
 * stack's frames, as the agent writes them (innermost first, one a line),
 * named as the call and sample reports name them (prettyname.h), in text and
 * in JSON; a share in percent; a time waited. */
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "prettyname.h"
#include "report.h"

double report_pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Three significant digits, trailing zeros kept: 45.0, 4.50, 450. */
static void fmt3(char *buf, double v, const char *unit) {
    v = v >= 99.95 ? v : v >= 9.995 ? (double)(long)(v * 10 + 0.5) / 10 : v; /* the rounding decides the form */
    snprintf(buf, 32, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, unit);
}

/* Every report's durations, one way: "850 ns", "853 us", "3.11 ms", "45.0 ms",
 * "1.17 s", "117 s". The unit changes where three digits would round up to
 * 1000 (999.5 us is "1.00 ms", never "1e+03 us"). */
const char *report_fmt_ns(uint64_t ns, char *buf) {
    if (ns < 1000)
        snprintf(buf, 32, "%llu ns", (unsigned long long)ns);
    else if (ns < 999500)
        fmt3(buf, (double)ns / 1e3, "us");
    else if (ns < 999500000)
        fmt3(buf, (double)ns / 1e6, "ms");
    else
        fmt3(buf, (double)ns / 1e9, "s");
    return buf;
}

const char *report_string(const dnp_trace *t, uint64_t id, const char *none) {
    const char *s = dnp_trace_string(t, id);
    return s && *s ? s : none;
}

/* One frame (n bytes at raw, cut at 2047) as recorded, into frame. */
static const char *frame_raw(const char *raw, size_t n, char frame[static 2048]) {
    snprintf(frame, 2048, "%.*s", (int)(n < 2048 ? n : 2047), raw);
    return frame;
}

const char *report_frame_name(const char *raw, size_t n, char *out, size_t cap) {
    char frame[2048];
    dnp_pretty_name(frame_raw(raw, n, frame), out, cap);
    return out;
}

void report_json_frames(FILE *out, const char *text, int raw) {
    fputc('[', out);
    for (int first = 1; text && *text; first = 0) {
        const char *end = strchr(text, '\n');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        char frame[2048], shown[2048];
        fputs(first ? "" : ",", out);
        dnp_export_json_str(out, raw ? frame_raw(text, len, frame) : report_frame_name(text, len, shown, sizeof shown),
                            0);
        text = end ? end + 1 : NULL;
    }
    fputc(']', out);
}

void report_print_stack(FILE *out, const char *text) {
    if (!text || !*text) {
        fputs("        [no managed stack]\n", out);
        return;
    }
    unsigned shown = 0;
    while (text && *text && shown < 12) {
        const char *end = strchr(text, '\n');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        char name[2048];
        fprintf(out, "        %s\n", report_frame_name(text, len, name, sizeof name));
        text = end ? end + 1 : NULL;
        shown++;
    }
    if (text && *text)
        fputs("        ...\n", out);
}
