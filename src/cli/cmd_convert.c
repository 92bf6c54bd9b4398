/* cmd_convert.c: `dnprof convert`: a calls trace in a format a profile viewer
 * opens (export.h): speedscope, Chrome trace events, folded stacks, or an HTML
 * flame graph. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calltree.h"
#include "cli.h"
#include "export.h"
#include "pprof.h"
#include "report.h"
#include "trace_reader.h"

typedef struct format {
    const char *name, *ext;
    int (*fn)(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);
    const char *summary;
} format;

static const format formats[] = {
    {"speedscope", ".speedscope.json", dnp_export_speedscope, "open it at https://www.speedscope.app"},
    {"chrome", ".chrome.json", dnp_export_chrome, "open it at https://ui.perfetto.dev or chrome://tracing"},
    {"folded", ".folded", dnp_export_folded, "for flamegraph.pl, speedscope and other flame graph tools"},
    {"flamegraph", ".html", dnp_export_flamegraph, "a flame graph: open it in a browser, no network needed"},
    {"pprof", ".pb.gz", dnp_export_pprof, "for go tool pprof, Pyroscope, Grafana (gzip'd profile.proto)"},
};

static void convert_help(void) {
    fputs("usage: dnprof convert --format FORMAT [-o OUT] FILE\n"
          "\n"
          "Writes the call tree of a trace recorded with 'dnprof run --calls' (or the\n"
          "exact timeline of every call, with --timeline or --args), or the sampled\n"
          "allocations of one recorded with --alloc (bytes by allocating path, the type\n"
          "as the leaf frame), in a format that a profile viewer opens:\n"
          "\n",
          stdout);
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        printf("  %-11s %-17s %s\n", formats[i].name, formats[i].ext, formats[i].summary);
    printf("  %-11s %-17s %s\n", "heapsnapshot", ".heapsnapshot",
           "a heap snapshot (.dnheap) for Chrome DevTools' Memory tab");
    fputs("\n"
          "options:\n"
          "  -f, --format FORMAT  one of the formats above\n"
          "  -o, --output OUT     the file to write (default: FILE with the format's\n"
          "                       extension in place of .trace); '-' for stdout\n"
          "      --weight WHAT    folded: each line's number is the self time in ns ('time',\n"
          "                       the default) or the number of calls ('calls', the only\n"
          "                       one for a --calls=counts trace: folded and pprof take those)\n"
          "      --thread N       folded, flamegraph: only this thread (dnprof's thread\n"
          "                       number or an OS thread id)\n"
          "      --min-percent P  leave out the call paths under P% of the time (their time\n"
          "                       stays with their caller); for big traces: 0.001\n"
          "      --alloc          the sampled allocations, when the trace has call data too\n"
          "                       (without call data they are taken anyway); not for chrome\n"
          "  -h, --help           print this help\n"
          "\n"
          "examples:\n"
          "  dnprof convert --format speedscope app.trace        # writes app.speedscope.json\n"
          "  dnprof convert --format flamegraph -o app.html app.trace\n"
          "  dnprof convert --format folded -o - app.trace | flamegraph.pl > app.svg\n",
          stdout);
}

typedef struct progress {
    int on;
    int last;
} progress;

static void show_progress(void *ctx, uint64_t done, uint64_t total) {
    progress *p = ctx;
    if (!p->on || !total)
        return;
    int pc = (int)(done * 100 / total);
    if (pc == p->last)
        return;
    p->last = pc;
    fprintf(stderr, "\rdnprof convert: %3d%%", pc);
    if (done >= total)
        fputs("\r                     \r", stderr);
    fflush(stderr);
}

/* FILE with its .trace (or any) extension replaced by ext. */
static int default_output(const char *path, const char *ext, char *out, size_t len) {
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - path) : strlen(path);
    if (stem + strlen(ext) + 1 > len)
        return -1;
    memcpy(out, path, stem);
    strcpy(out + stem, ext);
    return 0;
}

int cmd_convert(int argc, char **argv) {
    enum { OPT_WEIGHT = 256, OPT_THREAD, OPT_MIN_PERCENT, OPT_ALLOC = 340 };
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"weight", required_argument, NULL, OPT_WEIGHT}, {"thread", required_argument, NULL, OPT_THREAD},
        {"min-percent", required_argument, NULL, OPT_MIN_PERCENT}, {"alloc", no_argument, NULL, OPT_ALLOC},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *fmt_name = NULL, *output = NULL, *weight = NULL, *thread = NULL, *min_percent = NULL;
    int c, alloc = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': fmt_name = optarg; break;
        case 'o': output = optarg; break;
        case OPT_WEIGHT: weight = optarg; break;
        case OPT_THREAD: thread = optarg; break;
        case OPT_MIN_PERCENT: min_percent = optarg; break;
        case OPT_ALLOC: alloc = 1; break;
        case 'h': convert_help(); return 0;
        default: return cli_bad_option("convert", argv, c);
        }
    }
    if (!fmt_name)
        return usage_error("convert", "which format? --format speedscope, chrome, folded, flamegraph, pprof or heapsnapshot");
    if (!strcmp(fmt_name, "heapsnapshot")) { /* a heap snapshot, not a trace (cmd_heap.c) */
        if (optind + 1 != argc)
            return usage_error("convert", "--format heapsnapshot wants one heap snapshot file (.dnheap)");
        return heap_convert_heapsnapshot(argv[optind], output);
    }
    const format *fmt = NULL;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(formats[i].name, fmt_name))
            fmt = &formats[i];
    if (!fmt)
        return usage_error("convert", "--format is speedscope, chrome, folded, flamegraph, pprof or heapsnapshot, not '%s'", fmt_name);
    double min_fraction = 0;
    if (min_percent) {
        char *end = NULL;
        double p = strtod(min_percent, &end);
        if (!end || *end || end == min_percent || !(p >= 0 && p < 100))
            return usage_error("convert", "--min-percent takes a percentage from 0 to 100, not '%s'",
                               min_percent);
        min_fraction = p / 100;
    }
    dnp_export_opts eo;
    memset(&eo, 0, sizeof eo);
    if (weight) {
        if (fmt->fn != dnp_export_folded)
            return usage_error("convert", "--weight is for --format folded");
        if (!strcmp(weight, "calls"))
            eo.weight_calls = 1;
        else if (strcmp(weight, "time") != 0)
            return usage_error("convert", "--weight is time or calls, not '%s'", weight);
    }
    uint64_t thread_id = 0;
    if (thread) {
        if (fmt->fn != dnp_export_folded && fmt->fn != dnp_export_flamegraph)
            return usage_error("convert", "--thread is for --format folded and flamegraph");
        if (alloc)
            return usage_error("convert", "--thread is for call data; sampled allocations are merged");
        if (cli_parse_u64(thread, &thread_id) != 0 || thread_id == 0)
            return usage_error("convert", "--thread wants a thread number or an OS thread id, not '%s'", thread);
    }
    if (optind >= argc)
        return usage_error("convert", "no trace file given: dnprof convert --format FORMAT [-o OUT] FILE");
    if (optind + 1 < argc)
        return usage_error("convert", "one trace file at a time, not '%s' and '%s'", argv[optind], argv[optind + 1]);
    const char *path = argv[optind];
    if (cli_not_a_snapshot(path))
        return 1;
    char out_path[PATH_MAX];
    if (output && !*output)
        return usage_error("convert", "--output wants a file name, or '-' for stdout");
    if (!output) {
        if (default_output(path, fmt->ext, out_path, sizeof out_path) != 0) {
            error("cannot name the output after '%s': too long (use -o)", path);
            return 1;
        }
        output = out_path;
    }
    int to_stdout = !strcmp(output, "-");
    if (!to_stdout && !strcmp(output, path)) {
        error("'%s' is the trace itself: give another -o", output);
        return 1;
    }

    /* streamed; the evented speedscope and the Chrome timeline read the file again */
    calls_input in;
    memset(&in, 0, sizeof in);
    alloc_profile *ap = NULL;
    const dnp_calltree *ct = NULL;
    int rc = 0;
    if (!alloc) {
        if (calls_open(path, fmt->fn == dnp_export_speedscope || fmt->fn == dnp_export_chrome, &in) != 0)
            return 1;
        ct = in.ct;
        alloc = !dnp_calltree_has_data(ct) && !in.ct->timeline_events;
        if (alloc)
            calls_close(&in);
    }
    if (alloc) { /* sampled allocations (--alloc): a tree weighted in bytes */
        if (alloc_open(path, &ap) != 0)
            return 1;
        if (!alloc_has_data(ap)) {
            error("%s: this trace has neither call data nor sampled allocations: record it with dnprof "
                  "run --calls, --sample or --alloc", path);
            rc = 1;
        } else if (fmt->fn == dnp_export_chrome) {
            error("%s: sampled allocations have no timeline for chrome: use speedscope, folded, "
                  "flamegraph or pprof", path);
            rc = 1;
        } else if (!(ct = alloc_calltree(ap))) {
            error("out of memory");
            rc = 1;
        }
    } else if (!dnp_calltree_has_data(ct)) {
        error("%s: this trace has no call data: record it with dnprof run --calls", path);
        rc = 1;
    }
    if (rc == 0 && !ap && ct->has_config && ct->mode == 4) { /* --calls=counts: calls, no times */
        if (fmt->fn == dnp_export_folded && weight && !eo.weight_calls) {
            error("%s: recorded with --calls=counts, it has no times: --weight calls", path);
            rc = 1;
        } else if (fmt->fn == dnp_export_folded) {
            eo.weight_calls = 1;
        } else if (fmt->fn != dnp_export_pprof) {
            error("%s: recorded with --calls=counts, it has no times for %s: convert it with --format folded "
                  "or pprof (weighted by calls), or record it with --calls",
                  path, fmt->name);
            rc = 1;
        }
    }
    if (rc == 0 && min_fraction > 0)
        dnp_ct_prune((dnp_calltree *)ct, min_fraction); /* ours: calls_open built it */
    else if (rc == 0 && ct->all.nnodes > 200000 && !(ct->timeline_events && fmt->fn != dnp_export_folded &&
                                                     fmt->fn != dnp_export_flamegraph))
        fprintf(stderr, "dnprof convert: %s call paths make a large file; --min-percent 0.001 leaves "
                        "out the paths under 0.001%% of the time\n",
                cli_fmt_count(ct->all.nnodes - 1, (char[32]){0}));
    if (rc == 0 && thread) {
        eo.tree = dnp_ct_find_thread(ct, thread_id);
        if (!eo.tree) {
            error("%s: no thread %s with call data (see dnprof report --json for the threads)", path, thread);
            rc = 1;
        }
    }
    FILE *out = NULL;
    if (rc == 0) {
        out = to_stdout ? stdout : fopen(output, "w");
        if (!out) {
            error("cannot create '%s': %s", output, strerror(errno));
            rc = 1;
        }
    }
    if (rc == 0) {
        progress pr = {isatty(STDERR_FILENO) && (in.t ? in.t->nevents >= 1000000 : ct->t->file_bytes >= (64u << 20)), -1};
        eo.progress = show_progress;
        eo.progress_ctx = &pr;
        errno = 0;
        if (fmt->fn(ct, out, &eo) != 0 && !(to_stdout && errno == EPIPE)) {
            error("cannot write '%s': %s", to_stdout ? "stdout" : output, strerror(errno ? errno : EIO));
            rc = 1;
        }
        if (pr.on && pr.last >= 0 && pr.last < 100)
            fputs("\r                     \r", stderr);
        if (!to_stdout && fclose(out) != 0 && rc == 0) {
            error("cannot write '%s': %s", output, strerror(errno));
            rc = 1;
        }
        if (rc != 0 && !to_stdout)
            unlink(output);
        else if (!to_stdout)
            fprintf(stderr, "dnprof: wrote %s: %s\n", cli_short_path(output), fmt->summary);
    }
    if (ap)
        alloc_free(ap);
    else
        calls_close(&in);
    return rc;
}
