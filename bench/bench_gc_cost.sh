#!/usr/bin/env bash
# bench/bench_gc_cost.sh: the cost of `--gc` on an allocation-heavy program,
# paired (issue 17; BENCHMARKS.md, "GC statistics").
#
#   bench/bench_gc_cost.sh BUILD [RUNS] [GEN0SIZE] [MB]
#
# `Scenarios alloc MB` (default 16000: 4 GB of small objects, about 2 s) RUNS
# times (default 21) in each configuration, interleaved round by round:
#
#   bare    no profiler
#   agent   the agent with nothing asked (DNPROF_EVENTS=threads)
#   gc      the agent with --gc (DNPROF_GC=1)
#
# loaded through the environment (no dnprof process beside the program), the
# program's CPU time (perf stat's task-clock: every thread, the agent's and
# the runtime's event threads included). Prints each configuration's median,
# and the median and quartiles of each round's difference to the bare run of
# the same round (pairs cancel the host's drift), with the collections per
# second the gc runs recorded.
#
# GEN0SIZE (default 0x1000000, 16 MB) sets DOTNET_GCgen0size for every run: a
# guest that shows the runtime no cache sizes (no /sys/devices/system/cpu/
# cpu0/cache, as this one) gets a gen0 budget of about 0.5 MB and collects
# thirty times as often as a machine whose last-level cache the GC can read.
# "default" leaves the runtime's own. A benchmark, not a test: no assertion.
set -euo pipefail
BUILD=${1:?usage: bench/bench_gc_cost.sh BUILD [RUNS] [GEN0SIZE] [MB]}
RUNS=${2:-21}
GEN0=${3:-0x1000000}
MB=${4:-16000}
AGENT=$(cd "$BUILD" && pwd)/libdnprof.so
DNPROF=$(cd "$BUILD" && pwd)/dnprof
DLL=$(cd "$BUILD" && pwd)/tests/e2e/scenarios/Scenarios.dll
[ -f "$AGENT" ] || { echo "bench_gc_cost: no $AGENT (build first)" >&2; exit 2; }
[ -f "$DLL" ] || { echo "bench_gc_cost: no $DLL (ctest -R e2e.build_scenarios)" >&2; exit 2; }
perf stat -x, -e task-clock true >/dev/null 2>&1 || { echo "bench_gc_cost: needs perf stat" >&2; exit 2; }
TMP=$(mktemp -d /tmp/bench_gc_cost.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export DOTNET_CLI_TELEMETRY_OPTOUT=1
[ "$GEN0" = default ] || export DOTNET_GCgen0size=$GEN0
CONFIGS=(bare agent gc)

run_one() { # config round -> appends "round cpu_ms" to $TMP/config
    local cfg=$1 round=$2
    local -a envs=()
    if [ "$cfg" != bare ]; then
        envs=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={19F043F1-C707-4901-97F7-9F6179127630}"
              "CORECLR_PROFILER_PATH=$AGENT" DNPROF_EVENTS=threads "DNPROF_OUTPUT=$TMP/$cfg.trace")
        [ "$cfg" = gc ] && envs+=(DNPROF_GC=1)
    fi
    env "${envs[@]}" perf stat -x, -e task-clock -o "$TMP/stat" dotnet "$DLL" alloc "$MB" >/dev/null 2>&1
    awk -F, -v r="$round" '/task-clock/ {print r, $1}' "$TMP/stat" >> "$TMP/$cfg"
    if [ "$cfg" = gc ]; then
        "$DNPROF" report --gc --json "$TMP/gc.trace" 2>/dev/null |
            grep -o '"collections":[0-9]*' | head -1 | cut -d: -f2 >> "$TMP/gcs" || true
        "$DNPROF" report --gc "$TMP/gc.trace" 2>/dev/null | head -1 |
            grep -o 'in [0-9.]* s' | head -1 | tr -dc '0-9.\n' >> "$TMP/secs" || true
    fi
    rm -f "$TMP"/*.trace
}

pairs() { # BASE OTHER: each round's difference, %
    awk 'NR == FNR {base[$1] = $2; next} ($1 in base) {printf "%.3f\n", 100 * ($2 - base[$1]) / base[$1]}' "$1" "$2"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
quart() { sort -n | awk '{a[NR]=$1} END {printf "%.2f (%.2f to %.2f)", a[int((NR+1)/2)], a[int((NR+3)/4)], a[int((3*NR+1)/4)]}'; }

BUDGET=${DOTNET_GCgen0size:-default}
echo "bench_gc_cost: alloc $MB, gen0 budget $BUDGET, $RUNS rounds of ${CONFIGS[*]}, interleaved; load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
    for c in "${CONFIGS[@]}"; do run_one "$c" "$i"; done
done
printf '\n| config | CPU ms, median | over bare: median of the rounds%s pairs (quartiles), %% |\n|---|---|---|\n' "'"
for c in "${CONFIGS[@]}"; do
    med=$(cut -d' ' -f2 "$TMP/$c" | median)
    pair=$(pairs "$TMP/bare" "$TMP/$c" | quart)
    printf '| %s | %s | %s |\n' "$c" "$med" "$pair"
done
gcpair=$(pairs "$TMP/agent" "$TMP/gc" | quart)
echo
echo "gc over agent, the rounds' pairs: $gcpair %"
if [ -s "$TMP/gcs" ]; then
    echo "collections per gc run: $(median < "$TMP/gcs") (median), in $(median < "$TMP/secs") s"
fi
