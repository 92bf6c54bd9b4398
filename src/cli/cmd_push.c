/* cmd_push.c: `dnprof push DIR`: a sidecar for an agent loaded by `dnprof env`
 * (or by hand) with DNPROF_EVERY and DNPROF_WINDOW_DIR: it follows DIR and
 * ships each window to the same sinks as `dnprof run --every` (windows_cli.h),
 * until SIGINT or SIGTERM (then the windows already there, and the summary),
 * or once with --once. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "windows_cli.h"

static void push_help(void) {
    fputs("usage: dnprof push [options] DIR\n"
          "\n"
          "Follows DIR, where agents loaded with " DNP_ENV_EVERY " write their windows\n"
          "(window-PID-NNNNNN.trace; " DNP_ENV_WINDOW_DIR " names it), and ships each window,\n"
          "as one pprof per profile type (cpu or wall, alloc, exception), to the sinks\n"
          "below; a window shipped is deleted. Runs until Ctrl-C or SIGTERM, then ships\n"
          "what is there and says what was sent and what was not (docs/production.md).\n"
          "\n"
          "options:\n"
          "  -o, --output DIR        write the profiles into DIR (TYPE-PID-NNNNNN.pb.gz)\n"
          "      --keep N            with -o: the newest N files of each type and process\n"
          "      --pyroscope URL     push to Grafana Pyroscope's ingest API; secrets from\n"
          "                          " DNP_ENV_PUSH_TOKEN ", " DNP_ENV_PUSH_BASIC ", " DNP_ENV_PUSH_TENANT "\n"
          "                          (or " DNP_ENV_PUSH_TOKEN_FILE ", " DNP_ENV_PUSH_BASIC_FILE ")\n"
          "      --otlp URL          push to an OpenTelemetry Collector (OTLP/HTTP profiles;\n"
          "                          /v1development/profiles added to a URL without a path);\n"
          "                          --otlp env: OTEL_EXPORTER_OTLP_[PROFILES_]ENDPOINT;\n"
          "                          headers from OTEL_EXPORTER_OTLP_[PROFILES_]HEADERS,\n"
          "                          resource from OTEL_RESOURCE_ATTRIBUTES\n"
          "      --label K=V         a label of every profile pushed; repeatable\n"
          "      --service NAME      the service_name (default: OTEL_SERVICE_NAME with\n"
          "                          --otlp, else each program's name)\n"
          "      --push-timeout TIME per request (default 10s); 2 retries with backoff\n"
          "      --once              ship what is there now, then exit\n"
          "  -q, --quiet             no summary\n"
          "  -h, --help              print this help\n"
          "\n"
          "example (a container: the program loads the agent through dnprof env):\n"
          "  eval \"$(dnprof env --events threads)\"\n"
          "  export " DNP_ENV_SAMPLE "=cpu " DNP_ENV_EVERY "=15000 " DNP_ENV_WINDOW_DIR "=/profiles\n"
          "  dnprof push --pyroscope http://pyroscope:4040 --label env=prod /profiles\n",
          stdout);
}

enum { OPT_KEEP = 300, OPT_ONCE = 400 };

static int parse(int argc, char **argv, window_follow *f, int *once, const char **dir) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"keep", required_argument, NULL, OPT_KEEP + WOPT_KEEP},
        {"pyroscope", required_argument, NULL, OPT_KEEP + WOPT_PYROSCOPE},
        {"label", required_argument, NULL, OPT_KEEP + WOPT_LABEL},
        {"service", required_argument, NULL, OPT_KEEP + WOPT_SERVICE},
        {"push-timeout", required_argument, NULL, OPT_KEEP + WOPT_PUSH_TIMEOUT},
        {"otlp", required_argument, NULL, OPT_KEEP + WOPT_OTLP},
        {"once", no_argument, NULL, OPT_ONCE}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:qh", longopts, NULL)) != -1) {
        if (c == 'o')
            f->out_dir = optarg;
        else if (c == 'q')
            f->quiet = 1;
        else if (c == OPT_ONCE)
            *once = 1;
        else if (c == 'h')
            return push_help(), CLI_HELP_SHOWN;
        else if (c >= OPT_KEEP && c <= OPT_KEEP + WOPT_LAST) {
            if ((rc = window_take_option("push", f, c - OPT_KEEP, optarg)) != 0)
                return rc;
        } else
            return cli_bad_option("push", argv, c);
    }
    if (optind + 1 != argc)
        return usage_error("push", optind >= argc ? "which directory? dnprof push [options] DIR"
                                                  : "one directory at a time");
    *dir = argv[optind];
    struct stat st;
    if (stat(*dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return usage_error("push", "'%s' is not a directory (the agent's " DNP_ENV_WINDOW_DIR ")", *dir);
    return window_check_options("push", f);
}

int cmd_push(int argc, char **argv) {
    static window_follow f;
    memset(&f, 0, sizeof f);
    int once = 0;
    const char *dir = NULL;
    int rc = parse(argc, argv, &f, &once, &dir);
    if (rc)
        return cli_done(rc);
    if (window_follow_open(&f) != 0)
        return 1;
    cli_catch_stop_signals();
    while (!cli_stop_signal) {
        window_follow_pass(&f, dir);
        if (once)
            break;
        struct timespec t = {0, 200000000L};
        nanosleep(&t, NULL);
    }
    if (!once) {
        f.ended = 1; /* stopped: a failing backend is not waited for */
        window_follow_pass(&f, dir);
    }
    window_follow_close(&f);
    return f.pyro_n.unsent || f.otlp_n.unsent || f.bad ? 1 : 0;
}
