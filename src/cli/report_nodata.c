/* report_nodata.c: what `dnprof report` and `convert` say of a trace without
 * the call data they read (report.h): how it was recorded and why it holds
 * none (cut short, nothing called), or which other report reads what it
 * holds. */
#include <stdio.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "report.h"
#include "settings.h"

/* The --sample word of a trace's mode (settings.def's SAMPLE row). */
const char *report_sample_word(uint64_t mode) {
    static char word[3][16];
    static int next;
    char *w = word[next++ % 3];
    dnp_setting_word(DNP_SET_SAMPLE, mode < 16 ? (unsigned)mode : 0, w, sizeof word[0]);
    return *w && mode != DNP_SAMPLE_OFF ? w : "?";
}

/* How a trace that is not complete ended, in a few words. */
static const char *cut_text(dnp_trace_status st) {
    switch (st) {
    case DNP_TRACE_OPEN: return "it has no end record: the process did not shut down cleanly";
    case DNP_TRACE_TRUNCATED: return "the file is cut short inside a chunk";
    case DNP_TRACE_CORRUPT: return "a chunk fails its checks";
    default: return "it is not complete";
    }
}

#define KEEP_THEM "let the program run to its end (after dnprof attach: end with dnprof detach) to keep them"

const char *report_holds_text(unsigned holds, char *buf, size_t cap) {
    static const struct {
        unsigned bit;
        const char *what;
    } parts[] = {{DNP_CT_HOLDS_LOCKS, "lock waits: dnprof report --locks"},
                 {DNP_CT_HOLDS_GC, "GC statistics: dnprof report --gc"},
                 {DNP_CT_HOLDS_THREADPOOL, "the thread pool's adjustments: dnprof report --threadpool"},
                 {DNP_CT_HOLDS_EXCEPTIONS, "exceptions: dnprof report --exceptions"}};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && n < cap; i++)
        if (holds & parts[i].bit) {
            int k = snprintf(buf + n, cap - n, "%s%s", n ? "; " : "; it holds ", parts[i].what);
            n += k > 0 ? (size_t)k : 0;
        }
    if (n < cap && (holds & (DNP_CT_HOLDS_LOCKS | DNP_CT_HOLDS_GC | DNP_CT_HOLDS_THREADPOOL)))
        snprintf(buf + n, cap - n, "; all the waits on one page: dnprof report --waits");
    return buf;
}

const char *report_process_label(const dnp_trace *t, char *buf, size_t cap) {
    if (t->host_pid) /* a container's, attached to from the host */
        snprintf(buf, cap, "%llu (pid %llu on the host)", (unsigned long long)t->pid, (unsigned long long)t->host_pid);
    else
        snprintf(buf, cap, "%llu", (unsigned long long)t->pid);
    return buf;
}

const char *report_recording_cmd(int attached, char *buf, size_t cap) {
    if (!attached)
        snprintf(buf, cap, "dnprof run");
    else if (attached > 1)
        snprintf(buf, cap, "dnprof attach %d", attached);
    else
        snprintf(buf, cap, "dnprof attach PID");
    return buf;
}

/* Why a trace has no call tree, from what it says was recorded (its
 * CallsConfig, SampleConfig, AllocSampling) and how it ends. */
int calls_say_why_none(const dnp_calltree *ct, const char *path) {
    int cut = ct->t && ct->t->status != DNP_TRACE_COMPLETE;
    const char *how = cut ? cut_text(ct->t->status) : "";
    if (ct->sample_mode && cut)
        error("%s: this trace was recorded with --sample=%s but ends early (%s), before its samples were "
              "written: " KEEP_THEM, path, report_sample_word(ct->sample_mode), how);
    else if (ct->sample_mode)
        error("%s: this trace was recorded with --sample=%s but holds no samples", path,
              report_sample_word(ct->sample_mode));
    else if (ct->has_config && cut)
        error("%s: this trace was recorded with --calls but ends early (%s), before its call totals were "
              "written: " KEEP_THEM, path, how);
    else if (ct->has_config)
        error("%s: this trace was recorded with --calls but holds no calls", path);
    else if (ct->alloc_source)
        error("%s: this trace holds sampled allocations (recorded with --alloc), not call data: "
              "dnprof report --alloc %s", path, path);
    else if (cut)
        error("%s: this trace has no call data, and ends early (%s): if it was recorded with --calls or "
              "--sample, " KEEP_THEM, path, how);
    else
        return 0;
    return 1;
}
