#!/usr/bin/env bash
# bench/bench_server.sh: what sampling costs server-like programs, to the
# percent (issue 26; BENCHMARKS.md, "Sampling on servers").
#
#   bench/bench_server.sh BUILD [PAIRS] [SECONDS] [WORKLOADS]
#
# BUILD is the build directory (libdnprof.so, the Scenarios program). Each
# workload (default: busy64 busy256 wake64; also block64, the ring of wake64
# through Semaphore, which blocks without spinning: SampleScenario.cs) is first sized
# to about SECONDS (default 10) of wall time alone, then run PAIRS times
# (default 5) in every configuration, interleaved round by round:
#
#   bare     no profiler
#   agent    the agent as --sample loads it, sampling off (threads events):
#            the agent's own fixed cost
#   cpu100   --sample (cpu time) at 100 Hz     cpu1k   at 1 kHz (auto: perf events, which
#            give way to the process timer on a program that switches threads often)
#   proc100  cpu at 100 Hz by one timer on the process's CPU time
#            (DNPROF_SAMPLE_TIMERS=process)
#   perf1k   cpu at 1 kHz by perf events whatever the program does
#            (DNPROF_SAMPLE_TIMERS=0); proc1k by the process's timer; posix1k
#            by a POSIX CPU timer per thread (=1); posix100 the same at 100 Hz
#   cpu1hz   --sample at 1 Hz: the sampler's cost without its samples
#   wall100  --sample=wall at 100 Hz (at most 16 threads a tick, signalled by
#            the sampler thread, a thread still waiting where its last sample
#            found it counted again without a signal: the default)
#   wall1k   the same at 1 kHz
#   wallall  the same, every thread every tick (DNPROF_SAMPLE_WALL_THREADS=0)
#   wallsig  wall100 with every due thread signalled (DNPROF_SAMPLE_TIMERS=0)
#   walltimer wall100 with a timer per thread signalling it (DNPROF_SAMPLE_TIMERS=1)
#   dtrace   dotnet-trace collect at its defaults, when it is on PATH
#   oldCFG   CFG (any of the above) with OLD_AGENT, another build's libdnprof.so
#
# Each run is measured by perf stat (task-clock: the CPU time of every thread
# of the process, the agent's included; context switches; page faults), or by
# /usr/bin/time where perf is missing. Printed per workload: the median CPU
# time and its spread (least to most), the median of the rounds' paired
# differences to bare, and the cost split into a fixed part and a part per
# sample, from the same runs:
#
#   per sample = (CPU(cpu1k) - CPU(cpu100)) / (samples at 1 kHz - samples at 100 Hz)
#   fixed      = CPU(cpu100) - CPU(bare) - per sample * samples at 100 Hz
#
# where the samples are the program's CPU seconds times the rate (a cpu-mode
# sample is taken per 1/rate of a thread's CPU time). No timed assertion: a
# benchmark, not a test.
set -euo pipefail
BUILD=${1:?usage: bench/bench_server.sh BUILD [PAIRS] [SECONDS] [WORKLOADS]}
PAIRS=${2:-5}
SECONDS_WANTED=${3:-10}
WORKLOADS=${4:-busy64 busy256 wake64}
AGENT=$(cd "$BUILD" && pwd)/libdnprof.so
DLL=$(cd "$BUILD" && pwd)/tests/e2e/scenarios/Scenarios.dll
[ -f "$AGENT" ] || { echo "bench_server: no $AGENT (build first)" >&2; exit 2; }
[ -f "$DLL" ] || { echo "bench_server: no $DLL (ctest -R e2e.build_scenarios)" >&2; exit 2; }
CONFIGS=${CONFIGS:-bare agent cpu100 cpu1k proc100 wall100}
[ -z "${NO_DTRACE:-}" ] && command -v dotnet-trace >/dev/null && CONFIGS="$CONFIGS dtrace"
HAVE_PERF=0
perf stat -x, -e task-clock true >/dev/null 2>&1 && HAVE_PERF=1
TMP=$(mktemp -d /tmp/bench_server.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export DOTNET_TieredCompilation=0 DOTNET_CLI_TELEMETRY_OPTOUT=1

# One run: prints "cpu_ms wall_ms ctxsw faults".
run_one() {
    local cfg=$1 what=$2 times=$3 agent=$AGENT
    local -a envs=() cmd=(dotnet "$DLL" sample bench "$what" "$times")
    if [ "${cfg#old}" != "$cfg" ] && [ -n "${OLD_AGENT:-}" ]; then
        agent=$OLD_AGENT # oldwall100 ...: the configuration with another build's agent
        cfg=${cfg#old}
    fi
    if [ "$cfg" != bare ] && [ "$cfg" != dtrace ]; then
        envs=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={19F043F1-C707-4901-97F7-9F6179127630}"
              "CORECLR_PROFILER_PATH=$agent" DNPROF_EVENTS=threads "DNPROF_OUTPUT=$TMP/t.%p.trace")
        case $cfg in
        cpu100) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=100) ;;
        cpu1k) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=1000) ;;
        proc100) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=100 DNPROF_SAMPLE_TIMERS=process) ;;
        perf1k) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=1000 DNPROF_SAMPLE_TIMERS=0) ;;
        proc1k) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=1000 DNPROF_SAMPLE_TIMERS=process) ;;
        posix1k) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=1000 DNPROF_SAMPLE_TIMERS=1) ;;
        posix100) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=100 DNPROF_SAMPLE_TIMERS=1) ;;
        cpu1hz) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=1) ;;
        wall100) envs+=(DNPROF_SAMPLE=wall DNPROF_SAMPLE_RATE=100) ;;
        wall1k) envs+=(DNPROF_SAMPLE=wall DNPROF_SAMPLE_RATE=1000) ;;
        wallall) envs+=(DNPROF_SAMPLE=wall DNPROF_SAMPLE_RATE=100 DNPROF_SAMPLE_WALL_THREADS=0) ;;
        wallsig) envs+=(DNPROF_SAMPLE=wall DNPROF_SAMPLE_RATE=100 DNPROF_SAMPLE_TIMERS=0) ;;
        walltimer) envs+=(DNPROF_SAMPLE=wall DNPROF_SAMPLE_RATE=100 DNPROF_SAMPLE_TIMERS=1) ;;
        esac
    fi
    [ "$cfg" = dtrace ] && cmd=(dotnet-trace collect -o "$TMP/t.nettrace" -- "${cmd[@]}")
    local t0 t1
    t0=$(date +%s%N)
    if [ $HAVE_PERF = 1 ]; then
        env "${envs[@]}" perf stat -x, -e task-clock,context-switches,page-faults -o "$TMP/stat" \
            "${cmd[@]}" >"$TMP/out" 2>&1
        t1=$(date +%s%N)
        awk -F, -v wall=$(((t1 - t0) / 1000000)) '
            $3 == "task-clock" { cpu = $1 } $3 == "context-switches" { cs = $1 } $3 == "page-faults" { pf = $1 }
            END { printf "%.1f %d %d %d\n", cpu, wall, cs, pf }' "$TMP/stat"
    else
        env "${envs[@]}" /usr/bin/time -f "%U %S %c %w" -o "$TMP/stat" "${cmd[@]}" >"$TMP/out" 2>&1
        t1=$(date +%s%N)
        awk -v wall=$(((t1 - t0) / 1000000)) '{ printf "%.1f %d %d 0\n", ($1 + $2) * 1000, wall, $3 + $4 }' "$TMP/stat"
    fi
    rm -f "$TMP"/t.*
}

echo "bench_server: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $PAIRS pairs of ~${SECONDS_WANTED} s," \
     "configs: $CONFIGS; measured by $([ $HAVE_PERF = 1 ] && echo 'perf stat' || echo /usr/bin/time)"
for what in $WORKLOADS; do
    # the size that takes about SECONDS_WANTED alone
    read -r _ w _ _ < <(run_one bare "$what" 1)
    times=$(awk -v w="$w" -v s="$SECONDS_WANTED" 'BEGIN { t = int(s * 1000 / (w > 1 ? w : 1) + 0.5); print t < 1 ? 1 : t }')
    : >"$TMP/rows"
    for ((p = 1; p <= PAIRS; p++)); do
        for cfg in $CONFIGS; do
            echo "$p $cfg $(run_one "$cfg" "$what" "$times")" >>"$TMP/rows"
        done
        echo "  $what: round $p of $PAIRS done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    done
    echo
    echo "### $what (x$times: ~${SECONDS_WANTED} s alone), $PAIRS rounds"
    echo
    echo "| config | CPU s, median | spread (least-most) | over bare, median of pairs | pairs' range | wall s | context switches | page faults |"
    echo "|---|---|---|---|---|---|---|---|"
    awk -v configs="$CONFIGS" '
        function median(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        { cpu[$2, $1] = $3; wall[$2, $1] = $4; cs[$2, $1] = $5; pf[$2, $1] = $6; if ($1 > np) np = $1 }
        END {
            nc = split(configs, cf, " ")
            for (c = 1; c <= nc; c++) {
                k = cf[c]; lo = 1e18; hi = 0
                for (p = 1; p <= np; p++) {
                    x[p] = cpu[k, p]; w[p] = wall[k, p]; s[p] = cs[k, p]; f[p] = pf[k, p]
                    d[p] = 100 * (cpu[k, p] - cpu["bare", p]) / cpu["bare", p]
                    if (x[p] < lo) lo = x[p]; if (x[p] > hi) hi = x[p]
                }
                dl = 1e18; dh = -1e18
                for (p = 1; p <= np; p++) { if (d[p] < dl) dl = d[p]; if (d[p] > dh) dh = d[p] }
                med[k] = median(x, np)
                printf "| %s | %.3f | %.3f-%.3f | %s | %s | %.2f | %d | %d |\n", k, med[k] / 1000, lo / 1000, hi / 1000,
                       k == "bare" ? "" : sprintf("%+.2f%%", median(d, np)), k == "bare" ? "" : sprintf("%+.1f to %+.1f", dl, dh),
                       median(w, np) / 1000, median(s, np), median(f, np)
            }
            if (("cpu100" in med) && ("cpu1k" in med)) {
                s100 = med["cpu100"] / 1000 * 100; s1k = med["cpu1k"] / 1000 * 1000
                per = (med["cpu1k"] - med["cpu100"]) / (s1k - s100)
                fixed = med["cpu100"] - med["bare"] - per * s100
                printf "\nSplit (cpu mode): %.1f us of CPU per sample (%d samples at 100 Hz, %d at 1 kHz); fixed cost %.1f ms (%.2f%% of bare)",
                       per * 1000, s100, s1k, fixed, 100 * fixed / med["bare"]
                if ("agent" in med)
                    printf "; the agent loaded without sampling %+.1f ms", med["agent"] - med["bare"]
                printf ".%s\n", med["cpu1k"] < med["cpu100"] ? " (1 kHz cost less than 100 Hz in these runs: their spread is larger than what the samples cost, so the split means nothing)" : ""
            }
        }' "$TMP/rows"
done
