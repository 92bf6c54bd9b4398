#!/usr/bin/env bash
# bench/bench_fixed.sh: the fixed cost of `--sample` on short programs (issue
# 26; BENCHMARKS.md, "The fixed cost, third round").
#
#   bench/bench_fixed.sh BUILD [RUNS] [OLD_AGENT] [-- SCENARIO ARGS...]
#
# Runs the Scenarios program (default: `hello`, a .NET program that prints a
# line; `sample bench cpu` is a half-second one) RUNS times (default 31) in
# each configuration, interleaved round by round, and prints the median CPU
# time (perf stat's task-clock: every thread of the process, the agent's
# included) and wall time of each, and their difference to bare:
#
#   bare      no profiler
#   agent     the agent with nothing asked (DNPROF_EVENTS=threads)
#   old       --sample at 100 Hz with OLD_AGENT (another build's libdnprof.so), if given
#   oldagent  OLD_AGENT with nothing asked
#   sample    --sample at 100 Hz (the unwind-table cache as it is: warm after the first run)
#   nocache   the same, DNPROF_UNWIND_CACHE=0 (every table parsed in every run)
#   noasync   the same, DNPROF_ASYNC=0
#   fixed     --sample at 1 Hz: the fixed cost alone, without the samples'
#   oldfixed  the same with OLD_AGENT
#   noop      a profiler that does nothing (bench/noop_profiler.c) with the
#             event mask the agent sets when nothing is asked: the runtime's
#             own cost for such a profiler
#   noopsample the same with the mask --sample sets
#
# CONFIGS="bare agent fixed" picks other configurations (default: bare agent
# [old] sample nocache noasync).
#
# DOTNET_TieredCompilation=0, as the other sampling benchmarks. No timed
# assertion: a benchmark, not a test.
set -euo pipefail
BUILD=${1:?usage: bench/bench_fixed.sh BUILD [RUNS] [OLD_AGENT] [-- SCENARIO ARGS...]}
shift
RUNS=31
OLD=""
if [ $# -gt 0 ] && [ "$1" != -- ]; then RUNS=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != -- ]; then OLD=$1; shift; fi
[ "${1:-}" = -- ] && shift
WHAT=("$@")
[ ${#WHAT[@]} -gt 0 ] || WHAT=(hello)
AGENT=$(cd "$BUILD" && pwd)/libdnprof.so
NOOP=$(cd "$BUILD" && pwd)/libdnprof_noop.so
DLL=$(cd "$BUILD" && pwd)/tests/e2e/scenarios/Scenarios.dll
[ -f "$AGENT" ] || { echo "bench_fixed: no $AGENT (build first)" >&2; exit 2; }
[ -f "$DLL" ] || { echo "bench_fixed: no $DLL (ctest -R e2e.build_scenarios)" >&2; exit 2; }
[ -z "$OLD" ] || [ -f "$OLD" ] || { echo "bench_fixed: no $OLD" >&2; exit 2; }
perf stat -x, -e task-clock true >/dev/null 2>&1 || { echo "bench_fixed: needs perf stat" >&2; exit 2; }
TMP=$(mktemp -d /tmp/bench_fixed.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export DOTNET_TieredCompilation=0 DOTNET_CLI_TELEMETRY_OPTOUT=1
ASKED=${CONFIGS:-}
CONFIGS=(bare agent sample nocache noasync)
[ -z "$OLD" ] || CONFIGS=(bare agent old sample nocache noasync)
[ -z "$ASKED" ] || read -r -a CONFIGS <<< "$ASKED"

# The event masks the agent sets (its trace's Initialize), for the noop configurations.
mask_of() { # extra env... -> "MASK HIGH" (hex)
    env CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={19F043F1-C707-4901-97F7-9F6179127630}" \
        "CORECLR_PROFILER_PATH=$AGENT" DNPROF_EVENTS=threads "DNPROF_OUTPUT=$TMP/m.trace" "$@" \
        dotnet "$DLL" "${WHAT[@]}" >/dev/null 2>&1
    "$BUILD/dnprof" print "$TMP/m.trace" | awk '/ Initialize / {
        for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "eventMask") m = kv[2]; if (kv[1] == "eventMaskHigh") h = kv[2] }
        sub(/^0x/, "", m); sub(/^0x/, "", h); print m, h; exit }'
    rm -f "$TMP/m.trace"
}
case " ${CONFIGS[*]} " in *" noop"*)
    [ -f "$NOOP" ] || { echo "bench_fixed: no $NOOP (build first)" >&2; exit 2; }
    read -r NOOP_AGENT_MASK NOOP_AGENT_HIGH <<< "$(mask_of)"
    read -r NOOP_SAMPLE_MASK NOOP_SAMPLE_HIGH <<< "$(mask_of DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=100)"
    echo "bench_fixed: the agent's masks: nothing asked 0x$NOOP_AGENT_MASK/0x$NOOP_AGENT_HIGH, --sample 0x$NOOP_SAMPLE_MASK/0x$NOOP_SAMPLE_HIGH" ;;
esac

run_one() { # config -> appends "cpu_ms wall_ms" to $TMP/config
    local cfg=$1 path=$AGENT
    local -a envs=()
    case $cfg in old|oldagent|oldfixed) path=$OLD ;; esac
    case $cfg in
        noop) envs=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={19F043F1-C707-4901-97F7-9F6179127630}"
                    "CORECLR_PROFILER_PATH=$NOOP" "NOOP_MASK=$NOOP_AGENT_MASK" "NOOP_HIGH=$NOOP_AGENT_HIGH") ;;
        noopsample) envs=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={19F043F1-C707-4901-97F7-9F6179127630}"
                          "CORECLR_PROFILER_PATH=$NOOP" "NOOP_MASK=$NOOP_SAMPLE_MASK" "NOOP_HIGH=$NOOP_SAMPLE_HIGH") ;;
    esac
    if [ "$cfg" != bare ] && [ "${cfg#noop}" = "$cfg" ]; then
        envs=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={19F043F1-C707-4901-97F7-9F6179127630}"
              "CORECLR_PROFILER_PATH=$path" DNPROF_EVENTS=threads "DNPROF_OUTPUT=$TMP/t.%p.trace")
        case $cfg in agent|oldagent) ;; *) envs+=(DNPROF_SAMPLE=cpu DNPROF_SAMPLE_RATE=100) ;; esac
        case $cfg in fixed|oldfixed) envs+=(DNPROF_SAMPLE_RATE=1) ;; esac
        case $cfg in rate*) envs+=(DNPROF_SAMPLE_RATE=${cfg#rate}) ;; esac
        [ "$cfg" = nocache ] && envs+=(DNPROF_UNWIND_CACHE=0)
        [ "$cfg" = noasync ] && envs+=(DNPROF_ASYNC=0)
    fi
    env "${envs[@]}" perf stat -x, -e task-clock,duration_time -o "$TMP/stat" dotnet "$DLL" "${WHAT[@]}" >/dev/null 2>&1
    awk -F, '/task-clock/ {c=$1} /duration_time/ {w=$1/1e6} END {print c, w}' "$TMP/stat" >> "$TMP/$cfg"
    rm -f "$TMP"/t.*.trace
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "bench_fixed: ${WHAT[*]}, $RUNS runs of each of ${CONFIGS[*]}, interleaved; load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
    for c in "${CONFIGS[@]}"; do run_one "$c"; done
done
bc=$(cut -d' ' -f1 "$TMP/bare" | median)
bw=$(cut -d' ' -f2 "$TMP/bare" | median)
printf '\n| config | CPU ms, median | over bare | wall ms, median | over bare |\n|---|---|---|---|---|\n'
for c in "${CONFIGS[@]}"; do
    mc=$(cut -d' ' -f1 "$TMP/$c" | median)
    mw=$(cut -d' ' -f2 "$TMP/$c" | median)
    awk -v c="$c" -v mc="$mc" -v mw="$mw" -v bc="$bc" -v bw="$bw" 'BEGIN {
        printf "| %s | %.1f | %+.1f (%+.1f%%) | %.1f | %+.1f |\n", c, mc, mc - bc, 100 * (mc - bc) / bc, mw, mw - bw }'
done
