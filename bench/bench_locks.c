/* bench_locks.c: the cost of lock contention profiling (`dnprof run --locks`)
 * on a program that contends about 10,000 times a second, against the same
 * program bare and under dotnet-trace collecting the same events, in one run.
 * The locks scenario's bench: THREADS threads take one Monitor ROUNDS times
 * each, holding it for a yield (a blocking hold: the waiters give up spinning
 * and wait) and doing GAP_US of busy work between two acquisitions; it prints
 * the wall time of that work ("wall ms=", the program's own time) and the
 * process CPU time ("cpu ms="). Five ways, interleaved, RUNS times each:
 *   bare        no agent, no session
 *   agent       the agent with the threads family only
 *   locks       the same plus --locks (ContentionStart/Stop, .NET 9+ waits,
 *               a stack per contention)
 *   waits       --locks=waits: WaitHandle waits too (verbose; on .NET 10 each
 *               Monitor contention raises a WaitHandle wait from managed code)
 *   dotnet-trace  dotnet-trace collect --providers
 *               Microsoft-Windows-DotNETRuntime:0x4000:4 (the contention events
 *               with their stacks, into a .nettrace file)
 * and the medians are compared.
 * Usage: bench_locks AGENT.so SCENARIOS.dll RUNS [THREADS ROUNDS GAP_US] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"

#include "bench_util.h"

enum { BARE, AGENT, LOCKS, WAITS, DOTNET_TRACE, WAYS };

static const char *g_threads = "4", *g_rounds = "10000", *g_gap = "20";

/* Runs the scenario one way; its wall and CPU ms into *wall, *cpu, and the
 * contended acquisitions a second into *rate. 0, or -1 on failure. */
static int run_once(const char *dll, const char *agent, int way, const char *trace, double *wall, double *cpu,
                    double *rate) {
    int fd;
    pid_t pid = bench_fork_piped(&fd);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (way == AGENT || way == LOCKS || way == WAITS) {
            bench_agent_env(agent, trace);
            setenv(DNP_ENV_EVENTS, "threads", 1);
            if (way != AGENT)
                setenv(DNP_ENV_LOCKS, way == LOCKS ? "1" : "waits", 1);
        }
        if (way == DOTNET_TRACE)
            execlp("dotnet-trace", "dotnet-trace", "collect", "--providers", "Microsoft-Windows-DotNETRuntime:0x4000:4",
                   "-o", trace, "--show-child-io", "--", "dotnet", dll, "locks", "bench", g_threads, g_rounds, "-1",
                   g_gap, (char *)NULL);
        else
            execlp("dotnet", "dotnet", dll, "locks", "bench", g_threads, g_rounds, "-1", g_gap, (char *)NULL);
        _exit(127);
    }
    char buf[8192];
    bench_read_out(fd, buf, sizeof buf);
    int status = 0;
    waitpid(pid, &status, 0);
    const char *w = strstr(buf, "wall ms="), *c = strstr(buf, "cpu ms="), *k = strstr(buf, "contended_per_s=");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !w || !c || !k) {
        fprintf(stderr, "bench_locks: the scenario failed (way %d, status %d):\n%s\n", way, status, buf);
        return -1;
    }
    *wall = atof(w + 8);
    *cpu = atof(c + 7);
    *rate = atof(k + 16);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 7) {
        fprintf(stderr, "usage: bench_locks AGENT.so SCENARIOS.dll RUNS [THREADS ROUNDS GAP_US]\n");
        return 2;
    }
    if (argc == 7)
        g_threads = argv[4], g_rounds = argv[5], g_gap = argv[6];
    int runs = atoi(argv[3]);
    if (runs < 1 || runs > 100)
        runs = 5;
    char trace[64];
    static double wall[WAYS][100], cpu[WAYS][100], rate[WAYS][100];
    for (int i = 0; i < runs; i++)
        for (int w = 0; w < WAYS; w++) {
            snprintf(trace, sizeof trace, "/tmp/bench-locks-%d%s", (int)getpid(), w == DOTNET_TRACE ? ".nettrace" : ".trace");
            if (run_once(argv[2], argv[1], w, trace, &wall[w][i], &cpu[w][i], &rate[w][i]) < 0)
                return 1;
            unlink(trace);
        }
    static const char *const names[WAYS] = {"bare", "agent, threads only", "agent --locks", "agent --locks=waits",
                                               "dotnet-trace 0x4000:4"};
    double mw[WAYS], mc[WAYS];
    printf("%s threads x %s contended acquisitions (a yield held, %s us of work between), %d runs each, "
           "interleaved; medians\n", g_threads, g_rounds, g_gap, runs);
    printf("%-22s %10s %8s %10s %8s %10s %8s %14s\n", "", "wall ms", "x bare", "CPU ms", "x bare", "CPU min", "x bare",
           "contentions/s");
    for (int w = 0; w < WAYS; w++) {
        qsort(wall[w], (size_t)runs, sizeof wall[w][0], bench_cmp_double);
        qsort(cpu[w], (size_t)runs, sizeof cpu[w][0], bench_cmp_double);
        qsort(rate[w], (size_t)runs, sizeof rate[w][0], bench_cmp_double);
        mw[w] = wall[w][runs / 2];
        mc[w] = cpu[w][runs / 2];
        printf("%-22s %10.0f %8.3f %10.0f %8.3f %10.0f %8.3f %14.0f\n", names[w], mw[w], mw[w] / mw[BARE], mc[w],
               mc[w] / mc[BARE], cpu[w][0], cpu[w][0] / cpu[BARE][0], rate[w][runs / 2]);
    }
    printf("--locks: wall %+.1f%%, CPU %+.1f%% over bare; dotnet-trace: wall %+.1f%%, CPU %+.1f%% over bare\n",
           100 * (mw[LOCKS] / mw[BARE] - 1), 100 * (mc[LOCKS] / mc[BARE] - 1), 100 * (mw[DOTNET_TRACE] / mw[BARE] - 1),
           100 * (mc[DOTNET_TRACE] / mc[BARE] - 1));
    return 0;
}
