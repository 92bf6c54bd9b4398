/* bench_async.c: the cost of async stacks (docs/async.md). Runs the Scenarios
 * program's "async bench N" (AsyncScenario.cs: a three-deep chain of awaits
 * whose innermost method resumes N times, each after a Task.Yield, computing
 * about a microsecond each time) in every configuration, interleaved, RUNS
 * times each, and prints the median of the resumes' own time (Stopwatch, the
 * start-up and a warm-up excluded) and of the process's CPU time (start-up
 * included):
 *   bare      no profiler
 *   sample    --sample at 1 kHz with DNPROF_ASYNC=0 (physical stacks)
 *   async     --sample at 1 kHz with async stacks (the default)
 *   tpl       dotnet-trace collect (its default CPU sampling) plus the TPL's
 *             events that reconstruct async causality today
 *             (System.Threading.Tasks.TplEventSource, keywords 0x1FF, verbose),
 *             when dotnet-trace is on PATH or in ~/.dotnet/tools
 * then the cost of one resume: (async - sample) / N, and the start-up of
 * `Scenarios hello` (fork to exit) with sample and async.
 * Usage: bench_async AGENT.so SCENARIOS.dll [RUNS] [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"

#include "bench_util.h"

enum { BARE, SAMPLE, ASYNC, TPL, NCONFIG };
static const char *const config_names[NCONFIG] = {"bare", "sample", "async", "tpl"};
static char g_dtrace[4096];

typedef bench_run result;

/* One run; n = NULL runs "hello" (start-up). */
static int run_once(const char *agent, const char *dll, const char *n, int config, result *res) {
    int fd;
    double t0 = bench_now_ms();
    pid_t pid = bench_fork_quiet(&fd);
    if (pid == 0) {
        if (config == SAMPLE || config == ASYNC) {
            bench_agent_env(agent, "/tmp/bench_async.%p.trace");
            setenv(DNP_ENV_EVENTS, "threads", 1); /* what dnprof run --sample asks for */
            setenv(DNP_ENV_SAMPLE, "cpu", 1);
            setenv(DNP_ENV_SAMPLE_RATE, "1000", 1);
            setenv(DNP_ENV_ASYNC, config == ASYNC ? "1" : "0", 1);
        }
        if (!n)
            execlp("dotnet", "dotnet", dll, "hello", (char *)NULL);
        else if (config == TPL)
            execlp(g_dtrace, g_dtrace, "collect", "--show-child-io", "-o", "/tmp/bench_async.nettrace", "--providers",
                  "Microsoft-DotNETCore-SampleProfiler,Microsoft-Windows-DotNETRuntime:0x4c14fccbd:5,"
                  "System.Threading.Tasks.TplEventSource:0x1FF:5",
                  "--", "dotnet", dll, "async", "bench", n, (char *)NULL);
        else
            execlp("dotnet", "dotnet", dll, "async", "bench", n, (char *)NULL);
        _exit(127);
    }
    char out[8192];
    int status = bench_run_end(fd, pid, t0, "bench_async", out, sizeof out, res);
    if (!n)
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
    const char *line = strstr(out, "bench ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line || sscanf(line, "bench %lf ms", &res->work_ms) != 1) {
        fprintf(stderr, "bench_async: the %s run failed (status %d): %.300s\n", config_names[config], status, out);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int runs = bench_runs_arg(argc, argv, 3, "bench_async AGENT.so SCENARIOS.dll [RUNS] [N]", 3, 5, 49);
    int n = bench_count_arg(argc, argv, 4, 200000, 100000000);
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%d", n);
    const char *home = getenv("HOME");
    if (system("command -v dotnet-trace >/dev/null 2>&1") == 0)
        snprintf(g_dtrace, sizeof g_dtrace, "dotnet-trace");
    else if (home)
        snprintf(g_dtrace, sizeof g_dtrace, "%s/.dotnet/tools/dotnet-trace", home);
    int have_dtrace = g_dtrace[0] && (strchr(g_dtrace, '/') == NULL || access(g_dtrace, X_OK) == 0);
    if (!have_dtrace)
        fprintf(stderr, "bench_async: no dotnet-trace: tpl left out (dotnet tool install -g dotnet-trace)\n");
    static double work[NCONFIG][50], cpu[NCONFIG][50];
    int ok[NCONFIG] = {0};
    for (int r = 0; r < runs; r++)
        for (int c = 0; c < NCONFIG; c++) {
            result res;
            if (c == TPL && !have_dtrace)
                continue;
            if (run_once(argv[1], argv[2], nbuf, c, &res) == 0)
                bench_keep(work, cpu, ok, c, &res);
        }
    printf("async bench, %d resumes (median of %d runs; the resumes' time, process CPU time):\n", n, runs);
    bench_print_medians(NCONFIG, config_names, work, cpu, ok, 7);
    if (ok[SAMPLE] && ok[ASYNC])
        printf("  one resume: %+.0f ns with async stacks (async - sample, over the resumes' time)\n",
               (bench_median(work[ASYNC], ok[ASYNC]) - bench_median(work[SAMPLE], ok[SAMPLE])) * 1e6 / n);
    double st[2][100];
    int ns[2] = {0, 0};
    for (int r = 0; r < runs * 2; r++)
        for (int c = 0; c < 2; c++) {
            result res;
            if (run_once(argv[1], argv[2], NULL, c ? ASYNC : SAMPLE, &res) == 0)
                st[c][ns[c]++] = res.wall_ms;
        }
    if (ns[0] && ns[1]) {
        double a = bench_median(st[0], ns[0]), b = bench_median(st[1], ns[1]);
        printf("start-up (hello, fork to exit, median of %d): sample %.1f ms, async %.1f ms (x%.2f)\n", ns[0], a, b,
               b / a);
    }
    return 0;
}
