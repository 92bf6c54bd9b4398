/* fuzz_trace.c: the trace reader (src/trace/trace_reader.c), loaded whole and
 * streamed, down to what the front end makes of a trace: print (text, --json,
 * --exceptions), report (calls, tree, --json, --exceptions, --alloc, --locks,
 * --gc, --threadpool, --waits), every convert format (and --locks), streamed
 * and then in memory (DNP_ENV_NO_STREAM), the continuous profiling window's
 * reader (windows_read.c: a window is a small trace) and what `dnprof top`
 * makes of a window (its model, text and JSON). Seeds:
 * tests/fuzz/corpus/trace; dictionary: tests/fuzz/trace.dict. */
#include <stdint.h>
#include <stdlib.h>

#include "cli.h"
#include "fuzz_common.h"
#include "settings.h"
#include "top.h"
#include "trace_reader.h"
#include "windows_cli.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_init();
    return 0;
}

/* The reader's own API, as a tool would use it. */
static void read_api(void) {
    char err[256];
    dnp_trace *t = NULL;
    if (dnp_trace_load(fz.path, &t, err, sizeof err) == 0) {
        for (size_t i = 0; i < t->nevents; i++)
            for (unsigned k = 0; k < t->events[i].nvalues; k++)
                (void)dnp_trace_string(t, t->events[i].v[k]);
        dnp_trace_free(t);
    }
    dnp_trace_stream *s = NULL;
    if (dnp_trace_stream_open(fz.path, &s, err, sizeof err) == 0) {
        dnp_trace_event e;
        while (dnp_trace_stream_next(s, &e) > 0)
            ;
        const dnp_trace *st = dnp_trace_stream_trace(s);
        if (st->nthreads && dnp_trace_stream_rewind(s, 1) == 0)
            while (dnp_trace_stream_next(s, &e) > 0)
                ;
    }
    dnp_trace_stream_close(s);
    window_file w;
    if (window_file_read(fz.path, &w, err, sizeof err) == 0)
        window_file_free(&w);
}

/* The input as a window of dnprof top: twice (since the start adds them up). */
static void top_window(void) {
    static top_model m;
    char err[256];
    top_model_init(&m, 0);
    top_show s = {0};
    s.rows = 5;
    for (int i = 0; i < 2; i++)
        if (top_model_window(&m, fz.path, err, sizeof err) == 0) {
            FILE *out = fopen("/dev/null", "w");
            if (out) {
                top_print_text(out, &m, &s);
                top_print_json(out, &m, &s);
                fclose(out);
            }
        }
    top_model_free(&m);
}

#define P fz.path
static char *const streamed[][8] = {
    {"print", P, NULL},
    {"print", "--json", "-t", P, NULL},
    {"print", "--exceptions", P, NULL},
    {"print", "--exceptions", "--json", P, NULL},
    {"report", P, NULL},
    {"report", "--tree", "--threshold", "0", "--json", P, NULL},
    {"report", "--exceptions", "--json", P, NULL},
    {"report", "--alloc", P, NULL},
    {"report", "--locks", P, NULL},
    {"report", "--locks", "--json", P, NULL},
    {"report", "--gc", P, NULL},
    {"report", "--gc", "--json", P, NULL},
    {"report", "--threadpool", P, NULL},
    {"report", "--waits", P, NULL},
    {"convert", "--locks", "-f", "chrome", "-o", "-", P, NULL},
    {"convert", "--locks", "-f", "pprof", "-o", "-", P, NULL},
    {"convert", "-f", "speedscope", "-o", "-", P, NULL},
    {"convert", "-f", "chrome", "-o", "-", P, NULL},
    {"convert", "-f", "folded", "-o", "-", P, NULL},
    {"convert", "-f", "flamegraph", "-o", "-", P, NULL},
    {"convert", "-f", "pprof", "-o", "-", P, NULL},
};
static char *const whole[][8] = {
    {"print", "--json", P, NULL},
    {"report", "--json", P, NULL},
    {"report", "--exceptions", P, NULL},
    {"convert", "-f", "speedscope", "-o", "-", P, NULL},
};
#undef P

static int (*fn_of(const char *name))(int, char **) {
    return name[0] == 'p' ? cmd_print : name[0] == 'r' ? cmd_report : cmd_convert;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *fixed = fz_fix_crcs(data, size, DNP_CHUNK_HEADER_SIZE);
    fz_set_file(fixed, size);
    free(fixed);
    fz_quiet(1);
    read_api();
    top_window();
    for (size_t i = 0; i < sizeof streamed / sizeof streamed[0]; i++)
        fz_cmd(fn_of(streamed[i][0]), (char **)streamed[i]);
    setenv(DNP_ENV_NO_STREAM, "1", 1);
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        fz_cmd(fn_of(whole[i][0]), (char **)whole[i]);
    unsetenv(DNP_ENV_NO_STREAM);
    fz_quiet(0);
    return 0;
}
