/* bench_sample.c: the cost of the sampling profiler (dnprof run --sample).
 * Runs the Scenarios program's "sample bench" workloads (SampleScenario.cs) in
 * every configuration, interleaved, RUNS times each, and prints the median of
 * the workload's own time (Stopwatch, start-up excluded) and of the process's
 * CPU time (user + system, from wait4):
 *   bare      no profiler
 *   agent     the agent loaded as --sample loads it (events: threads), no sampling
 *   cpu100    --sample (cpu) at 100 Hz      cpu1k    --sample at 1 kHz
 *   timers1k  --sample at 1 kHz with DNPROF_SAMPLE_TIMERS=1 (POSIX CPU timers)
 *   wall100   --sample=wall at 100 Hz       susp100  --sample=suspend at 100 Hz
 *   dtrace    dotnet-trace collect at its default settings (if on PATH)
 * then the start-up: `Scenarios hello` from fork to exit, bare and cpu100.
 * Tiered compilation is off in every run (optimized code only).
 * Workloads: cpu = one thread of hot loops; server = 64 threads serving 20000
 * requests of compute, one in eight sleeping 1 ms.
 * Usage: bench_sample AGENT.so SCENARIOS.dll [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

#include "bench_util.h"

enum { BARE, AGENT, CPU100, CPU1K, TIMERS1K, WALL100, SUSP100, DTRACE, NCONFIG };
static const char *const config_names[NCONFIG] = {"bare",    "agent",   "cpu100",  "cpu1k",
                                                  "timers1k", "wall100", "susp100", "dtrace"};

typedef bench_run result;

/* One run; what = NULL runs "hello" (start-up). */
static int run_once(const char *agent, const char *dll, const char *what, int config, result *res) {
    int fd;
    double t0 = bench_now_ms();
    pid_t pid = bench_fork_quiet(&fd);
    if (pid == 0) {
        setenv("DOTNET_TieredCompilation", "0", 1);
        if (config != BARE && config != DTRACE) {
            static const char *const modes[NCONFIG] = {NULL, NULL, "cpu", "cpu", "cpu", "wall", "suspend", NULL};
            bench_agent_env(agent, "/tmp/bench_sample.%p.trace");
            setenv(DNP_ENV_EVENTS, "threads", 1); /* what dnprof run --sample asks for */
            if (modes[config]) {
                setenv(DNP_ENV_SAMPLE, modes[config], 1);
                setenv(DNP_ENV_SAMPLE_RATE, config == CPU1K || config == TIMERS1K ? "1000" : "100", 1);
                if (config == TIMERS1K)
                    setenv(DNP_ENV_SAMPLE_TIMERS, "1", 1);
            }
        }
        if (!what)
            execlp("dotnet", "dotnet", dll, "hello", (char *)NULL);
        else if (config == DTRACE)
            execlp("dotnet-trace", "dotnet-trace", "collect", "--show-child-io", "-o", "/tmp/bench_sample.nettrace",
                   "--", "dotnet", dll, "sample", "bench", what, (char *)NULL);
        else
            execlp("dotnet", "dotnet", dll, "sample", "bench", what, (char *)NULL);
        _exit(127);
    }
    char out[8192];
    int status = bench_run_end(fd, pid, t0, "bench_sample", out, sizeof out, res);
    if (!what)
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
    /* the workload's line, "what MS ms", among what dotnet-trace prints */
    size_t wl = strlen(what);
    char *line = NULL;
    for (char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, what, wl) == 0 && p[wl] == ' ') {
            line = p;
            break;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line ||
        sscanf(line + strlen(what), " %lf ms", &res->work_ms) != 1) {
        fprintf(stderr, "bench_sample: the %s run of '%s' failed (status %d): %.300s\n", config_names[config], what,
                status, out);
        return -1;
    }
    return 0;
}


int main(int argc, char **argv) {
    int runs = bench_runs_arg(argc, argv, 3, "bench_sample AGENT.so SCENARIOS.dll [RUNS]", 3, 5, 49);
    int have_dtrace = system("command -v dotnet-trace >/dev/null 2>&1") == 0;
    if (!have_dtrace)
        fprintf(stderr, "bench_sample: dotnet-trace is not on PATH: left out "
                        "(dotnet tool install -g dotnet-trace; PATH=$PATH:~/.dotnet/tools)\n");
    static const char *const workloads[] = {"cpu", "server"};
    for (size_t w = 0; w < sizeof workloads / sizeof *workloads; w++) {
        static double work[NCONFIG][50], cpu[NCONFIG][50];
        int ok[NCONFIG] = {0};
        for (int r = 0; r < runs; r++)
            for (int c = 0; c < NCONFIG; c++) {
                result res;
                if (c == DTRACE && !have_dtrace)
                    continue;
                if (run_once(argv[1], argv[2], workloads[w], c, &res) == 0)
                    bench_keep(work, cpu, ok, c, &res);
            }
        printf("%s (median of %d runs; workload time, process CPU time):\n", workloads[w], runs);
        bench_print_medians(NCONFIG, config_names, work, cpu, ok, 8);
    }
    static const int st_configs[3] = {BARE, AGENT, CPU100};
    double st[3][100];
    int n[3] = {0, 0, 0};
    for (int r = 0; r < runs * 2; r++)
        for (int c = 0; c < 3; c++) {
            result res;
            if (run_once(argv[1], argv[2], NULL, st_configs[c], &res) == 0)
                st[c][n[c]++] = res.wall_ms;
        }
    if (n[0] && n[1] && n[2]) {
        double b = bench_median(st[0], n[0]), a = bench_median(st[1], n[1]), s = bench_median(st[2], n[2]);
        printf("start-up (hello, fork to exit, median of %d): bare %.1f ms, agent %.1f ms (x%.2f), cpu100 %.1f ms "
               "(x%.2f)\n",
               n[0], b, a, a / b, s, s / b);
    }
    return 0;
}
