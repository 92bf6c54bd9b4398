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

/* What a format takes besides the call tree. */
enum {
    FMT_REREAD = 1,   /* reads the trace again, event by event (the evented views) */
    FMT_WEIGHT = 2,   /* --weight */
    FMT_THREAD = 4,   /* --thread */
    FMT_NO_ALLOC = 8, /* no view of sampled allocations: they have no timeline */
    FMT_COUNTS = 16,  /* a --calls=counts trace (calls, no times) */
    FMT_TREE = 32,    /* the tree only, never the timeline: its size is the tree's */
    FMT_SLICES = 64,  /* takes the lock waits as slices of a timeline */
    FMT_EVENTS = 128, /* shows the runtime's events too (GC pauses): taken without call data */
};

typedef struct format {
    const char *name, *ext;
    int (*fn)(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o);
    unsigned takes;
    const char *summary;
} format;

static const format formats[] = {
    {"speedscope", ".speedscope.json", dnp_export_speedscope, FMT_REREAD, "open it at https://www.speedscope.app"},
    {"chrome", ".chrome.json", dnp_export_chrome, FMT_REREAD | FMT_NO_ALLOC | FMT_SLICES | FMT_EVENTS,
     "open it at https://ui.perfetto.dev or chrome://tracing"},
    {"folded", ".folded", dnp_export_folded, FMT_WEIGHT | FMT_THREAD | FMT_COUNTS | FMT_TREE,
     "for flamegraph.pl, speedscope and other flame graph tools"},
    {"flamegraph", ".html", dnp_export_flamegraph, FMT_THREAD | FMT_TREE,
     "a flame graph: open it in a browser, no network needed"},
    {"pprof", ".pb.gz", dnp_export_pprof, FMT_COUNTS, "for go tool pprof, Pyroscope, Grafana (gzip'd profile.proto)"},
};

static void convert_help(void) {
    fputs("usage: dnprof convert --format FORMAT [-o OUT] FILE\n"
          "\n"
          "Writes the call tree of a trace recorded with 'dnprof run --calls' (or the\n"
          "exact timeline of every call, with --timeline or --args), or the sampled\n"
          "allocations of one recorded with --alloc (bytes by allocating path, the type\n"
          "as the leaf frame), or the lock waits of one recorded with --locks (the time\n"
          "waited by waiting path, the lock as the leaf frame; chrome: each long wait a\n"
          "slice on its thread), in a format that a profile viewer opens. chrome also\n"
          "has the GC pauses (--gc) on a track of their own and each throw (--exceptions)\n"
          "as an instant on its thread, with its type, message and throw site:\n"
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
          "      --locks          the lock waits, when the trace has call data or sampled\n"
          "                       allocations too (without them they are taken anyway);\n"
          "                       chrome: the waits and the GC track alone (without it,\n"
          "                       chrome has the waits beside the calls in any case)\n"
          "      --physical       sampled stacks as the threads had them: a resumed async\n"
          "                       method under the thread pool, not under the async methods\n"
          "                       that awaited it (the default view; docs/async.md)\n"
          "  -h, --help           print this help\n"
          "\n"
          "examples:\n"
          "  dnprof convert --format speedscope app.trace        # writes app.speedscope.json\n"
          "  dnprof convert --format flamegraph -o app.html app.trace\n"
          "  dnprof convert --format folded -o - app.trace | flamegraph.pl > app.svg\n"
          "  dnprof convert --format chrome locks.trace    # a --locks trace: each long wait a slice\n",
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

typedef struct convert_opts {
    const char *format, *output, *weight, *thread, *path;
    const format *fmt;
    double min_fraction;
    uint64_t thread_id;
    int alloc, locks;
    dnp_export_opts eo;
    const dnp_calltree *no_calls; /* the trace's empty call trees, while the other data is looked for */
} convert_opts;

/* The options that go with o->fmt; 0, or the exit code of a usage error. */
static int check_options(convert_opts *o, const char *min_percent) {
    const format *fmt = o->fmt;
    if (min_percent) {
        char *end = NULL;
        double p = strtod(min_percent, &end);
        if (!end || *end || end == min_percent || !(p >= 0 && p < 100))
            return usage_error("convert", "--min-percent takes a percentage from 0 to 100, not '%s'",
                               min_percent);
        o->min_fraction = p / 100;
    }
    if (o->weight) {
        if (!(fmt->takes & FMT_WEIGHT))
            return usage_error("convert", "--weight is for --format folded");
        if (!strcmp(o->weight, "calls"))
            o->eo.weight_calls = 1;
        else if (strcmp(o->weight, "time") != 0)
            return usage_error("convert", "--weight is time or calls, not '%s'", o->weight);
    }
    if (o->alloc && o->locks)
        return usage_error("convert", "--alloc or --locks: one profile at a time");
    if (o->thread) {
        if (!(fmt->takes & FMT_THREAD))
            return usage_error("convert", "--thread is for --format folded and flamegraph");
        if (o->alloc)
            return usage_error("convert", "--thread is for call data; sampled allocations are merged");
        if (o->locks)
            return usage_error("convert", "--thread is for call data; lock waits are merged");
        if (cli_parse_u64(o->thread, &o->thread_id) != 0 || o->thread_id == 0)
            return usage_error("convert", "--thread wants a thread number or an OS thread id, not '%s'",
                               o->thread);
    }
    return 0;
}

/* Fills o from argv; 0, or the exit code of a usage error. */
static int parse_options(int argc, char **argv, convert_opts *o) {
    enum { OPT_WEIGHT = 256, OPT_THREAD, OPT_MIN_PERCENT, OPT_PHYSICAL, OPT_ALLOC = 340, OPT_LOCKS = 360 };
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"weight", required_argument, NULL, OPT_WEIGHT}, {"thread", required_argument, NULL, OPT_THREAD},
        {"min-percent", required_argument, NULL, OPT_MIN_PERCENT}, {"alloc", no_argument, NULL, OPT_ALLOC},
        {"locks", no_argument, NULL, OPT_LOCKS}, {"physical", no_argument, NULL, OPT_PHYSICAL},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *min_percent = NULL;
    int c;
    memset(o, 0, sizeof *o);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': o->format = optarg; break;
        case 'o': o->output = optarg; break;
        case OPT_WEIGHT: o->weight = optarg; break;
        case OPT_THREAD: o->thread = optarg; break;
        case OPT_MIN_PERCENT: min_percent = optarg; break;
        case OPT_ALLOC: o->alloc = 1; break;
        case OPT_LOCKS: o->locks = 1; break;
        case OPT_PHYSICAL: dnp_calltree_set_physical(1); break;
        case 'h': convert_help(); return CLI_HELP_SHOWN;
        default: return cli_bad_option("convert", argv, c);
        }
    }
    if (!o->format)
        return usage_error("convert", "which format? --format speedscope, chrome, folded, flamegraph, pprof or heapsnapshot");
    if (!strcmp(o->format, "heapsnapshot")) { /* a heap snapshot, not a trace (cmd_heap.c) */
        if (optind + 1 != argc)
            return usage_error("convert", "--format heapsnapshot wants one heap snapshot file (.dnheap)");
        o->path = argv[optind];
        return 0;
    }
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(formats[i].name, o->format))
            o->fmt = &formats[i];
    if (!o->fmt)
        return usage_error("convert", "--format is speedscope, chrome, folded, flamegraph, pprof or heapsnapshot, not '%s'", o->format);
    int rc = check_options(o, min_percent);
    if (rc)
        return rc;
    if ((rc = cli_one_file("convert", "dnprof convert --format FORMAT [-o OUT] FILE", argc, argv, &o->path)) != 0)
        return rc;
    if (o->output && !*o->output)
        return usage_error("convert", "--output wants a file name, or '-' for stdout");
    return 0;
}

typedef struct convert_input {
    calls_input in;   /* call data, streamed */
    alloc_profile *ap; /* or sampled allocations: a tree weighted in bytes */
    locks_profile *lp; /* or lock waits: a tree weighted in ns waited, the slices of a timeline */
    const dnp_calltree *ct;
} convert_input;

/* The lock waits of the trace: the tree weighted by the time waited, and for a
 * timeline the waits as slices (beside the calls' timeline when ci has one). */
static int open_locks(convert_opts *o, convert_input *ci, int asked) {
    if (locks_open(o->path, &ci->lp) != 0)
        return -1;
    if (!locks_has_data(ci->lp) && !asked && o->no_calls && calls_say_why_none(o->no_calls, o->path))
        return -1;
    char holds[512];
    if (!locks_has_data(ci->lp) && !asked)
        return error("%s: this trace has neither call data, sampled allocations nor lock data: record it with "
                     "dnprof run --calls, --sample, --alloc or --locks%s", o->path,
                     report_holds_text(o->no_calls ? o->no_calls->holds : 0, holds, sizeof holds));
    if (!locks_has_data(ci->lp))
        return error("%s: this trace has no lock data: record it with dnprof run --locks (or dnprof attach PID "
                     "--locks)", o->path);
    size_t slices = o->fmt->takes & FMT_SLICES ? locks_slices(ci->lp, &o->eo) : 0;
    if (ci->ct)
        return 0; /* the calls' timeline, and the waits on it */
    if (!(ci->ct = locks_calltree(ci->lp)))
        return error("out of memory");
    if (ci->ct->all.nnodes <= 1 && !slices)
        return error("%s: no contention was recorded (dnprof report --locks says so): nothing to convert", o->path);
    return 0;
}

static int open_alloc(const convert_opts *o, convert_input *ci, int or_locks) {
    if (alloc_open(o->path, &ci->ap) != 0)
        return -1;
    if (!alloc_has_data(ci->ap)) {
        if (or_locks) { /* neither calls nor allocations: lock waits, if any */
            alloc_free(ci->ap);
            ci->ap = NULL;
            return open_locks((convert_opts *)o, ci, 0);
        }
        return error("%s: this trace has neither call data nor sampled allocations: record it with dnprof "
                     "run --calls, --sample or --alloc", o->path);
    }
    if (o->fmt->takes & FMT_NO_ALLOC)
        return error("%s: sampled allocations have no timeline for %s: use speedscope, folded, "
                     "flamegraph or pprof", o->path, o->fmt->name);
    if (!(ci->ct = alloc_calltree(ci->ap)))
        return error("out of memory");
    return 0;
}

/* Opens the call tree the format is written from; 0, or -1 after saying why
 * (then close it all the same). */
static int open_input(convert_opts *o, convert_input *ci) {
    memset(ci, 0, sizeof *ci);
    if (o->alloc)
        return open_alloc(o, ci, 0);
    if (calls_open(o->path, (o->fmt->takes & FMT_REREAD) != 0, &ci->in) != 0)
        return -1;
    ci->ct = ci->in.ct;
    int calls = dnp_calltree_has_data(ci->ct) || ci->ct->timeline_events;
    if (o->locks && calls && ci->ct->timeline_events && (o->fmt->takes & FMT_SLICES))
        return open_locks(o, ci, 1);
    if (!calls && !o->locks && (o->fmt->takes & FMT_EVENTS)) {
        /* the runtime's events (the GC track), with the lock waits as slices where there are some */
        if (locks_open(o->path, &ci->lp) == 0 && locks_has_data(ci->lp))
            locks_slices(ci->lp, &o->eo);
        return 0;
    }
    if (calls && !o->locks && (ci->ct->holds & DNP_CT_HOLDS_LOCKS) && (o->fmt->takes & FMT_SLICES)) {
        /* the lock waits beside the calls: on the threads' timeline, or on tracks of their own */
        if (locks_open(o->path, &ci->lp) == 0 && locks_has_data(ci->lp))
            locks_slices(ci->lp, &o->eo);
    }
    if (o->locks || !calls) {
        calls_input was = ci->in;
        memset(&ci->in, 0, sizeof ci->in);
        ci->ct = NULL;
        o->no_calls = was.ct;
        int rc = o->locks ? open_locks(o, ci, 1) : open_alloc(o, ci, 1);
        o->no_calls = NULL;
        calls_close(&was);
        return rc;
    }
    if (!dnp_calltree_has_data(ci->ct))
        return error("%s: this trace has no call data: record it with dnprof run --calls", o->path);
    return 0;
}

static void close_input(convert_input *ci) {
    if (ci->ap)
        alloc_free(ci->ap);
    if (ci->lp)
        locks_free(ci->lp);
    calls_close(&ci->in);
}

/* What the trace's data allows of the options: a --calls=counts trace has no
 * times, --min-percent prunes, --thread picks a tree. 0 or -1. */
static int fit_options(convert_opts *o, const convert_input *ci) {
    const dnp_calltree *ct = ci->ct;
    const format *fmt = o->fmt;
    if (!ci->ap && !ci->lp && ct->has_config && ct->mode == 4) { /* --calls=counts: calls, no times */
        if ((fmt->takes & FMT_WEIGHT) && o->weight && !o->eo.weight_calls)
            return error("%s: recorded with --calls=counts, it has no times: --weight calls", o->path);
        if (fmt->takes & FMT_WEIGHT)
            o->eo.weight_calls = 1;
        else if (!(fmt->takes & FMT_COUNTS))
            return error("%s: recorded with --calls=counts, it has no times for %s: convert it with --format folded "
                         "or pprof (weighted by calls), or record it with --calls",
                         o->path, fmt->name);
    }
    if (o->min_fraction > 0)
        dnp_ct_prune((dnp_calltree *)ct, o->min_fraction); /* ours: calls_open built it */
    else if (ct->all.nnodes > 200000 && !(ct->timeline_events && !(fmt->takes & FMT_TREE)))
        fprintf(stderr, "dnprof convert: %s call paths make a large file; --min-percent 0.001 leaves "
                        "out the paths under 0.001%% of the time\n",
                cli_fmt_count(ct->all.nnodes - 1, (char[32]){0}));
    if (o->thread && !(o->eo.tree = dnp_ct_find_thread(ct, o->thread_id)))
        return error("%s: no thread %s with call data (see dnprof report --json for the threads)", o->path,
                     o->thread);
    return 0;
}

/* Writes the format to output ("-": stdout); 0 or -1 after saying why. */
static int write_output(convert_opts *o, const convert_input *ci, const char *output) {
    int to_stdout = !strcmp(output, "-");
    FILE *out = to_stdout ? stdout : cli_create_output(output);
    if (!out)
        return error("cannot create '%s': %s", output, strerror(errno));
    const dnp_calltree *ct = ci->ct;
    progress pr = {isatty(STDERR_FILENO) && (ci->in.t ? ci->in.t->nevents >= 1000000 : ct->t->file_bytes >= (64u << 20)), -1};
    o->eo.progress = show_progress;
    o->eo.progress_ctx = &pr;
    errno = 0;
    int rc = 0;
    if (o->fmt->fn(ct, out, &o->eo) != 0 && !(to_stdout && errno == EPIPE))
        rc = error("cannot write '%s': %s", to_stdout ? "stdout" : output, strerror(errno ? errno : EIO));
    if (pr.on && pr.last >= 0 && pr.last < 100)
        fputs("\r                     \r", stderr);
    if (to_stdout)
        return rc;
    if (fclose(out) != 0 && rc == 0)
        rc = error("cannot write '%s': %s", output, strerror(errno));
    if (rc != 0)
        unlink(output);
    else
        fprintf(stderr, "dnprof: wrote %s: %s\n", cli_short_path(output), o->fmt->summary);
    return rc;
}

int cmd_convert(int argc, char **argv) {
    convert_opts o;
    int rc;
    if ((rc = parse_options(argc, argv, &o)) != 0)
        return cli_done(rc);
    if (!o.fmt)
        return heap_convert_heapsnapshot(o.path, o.output);
    if (cli_not_a_snapshot(o.path))
        return 1;
    char out_path[PATH_MAX];
    const char *output = o.output;
    if (!output) {
        if (default_output(o.path, o.fmt->ext, out_path, sizeof out_path) != 0) {
            error("cannot name the output after '%s': too long (use -o)", o.path);
            return 1;
        }
        output = out_path;
    }
    if (strcmp(output, "-") && !strcmp(output, o.path)) {
        error("'%s' is the trace itself: give another -o", output);
        return 1;
    }
    /* streamed; the evented speedscope and the Chrome timeline read the file again */
    convert_input ci;
    rc = open_input(&o, &ci) < 0 || fit_options(&o, &ci) < 0 || write_output(&o, &ci, output) < 0;
    close_input(&ci);
    return rc;
}
