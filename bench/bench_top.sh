#!/usr/bin/env bash
# bench_top.sh: what `dnprof top` costs the program it watches (docs/top.md).
# Runs the Scenarios program's "top bench ROUNDS" workload (one thread of the
# three hot methods, CPU-bound; it prints its own process CPU time, which
# counts the agent's threads too, its elapsed time, and its working thread's
# CPU time) alone, under `dnprof run --sample` (100 Hz, for reference) and
# under `dnprof top -b` at the defaults (1 s windows, CPU samples at 100 Hz,
# allocations, exceptions, GC events), interleaved, RUNS times each, and
# prints the medians and the differences. From start-up (dnprof top -b --
# ...): the program's own figures start after the runtime's start-up, so the
# agent's start-up cost is not in them.
# Then one long run (dnprof top -b PID, by attach, LONG seconds, the top
# scenario) whose RSS, the program's and dnprof top's, is read every 10 s:
# both must stay flat.
# Usage: bench/bench_top.sh BUILD_DIR [RUNS] [ROUNDS] [LONG]
set -euo pipefail
build=${1:?build dir}; runs=${2:-5}; rounds=${3:-40000}; long=${4:-60}
dnprof=$build/dnprof; dll=$build/tests/e2e/scenarios/Scenarios.dll
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

one() { # config -> "cpu_ms wall_ms thread_ms"
  case $1 in
    bare) dotnet "$dll" top bench "$rounds" > "$tmp/out" 2>/dev/null;;
    sample) "$dnprof" run -q --sample -o "$tmp/s.trace" -- dotnet "$dll" top bench "$rounds" > "$tmp/out" 2>/dev/null;;
    top) "$dnprof" top -b --log "$tmp/out" -- dotnet "$dll" top bench "$rounds" > "$tmp/screen" 2>/dev/null;;
  esac
  awk '/^cpu / {print $2, $5, $8}' "$tmp/out"
}

configs=(bare sample top)
for c in "${configs[@]}"; do : > "$tmp/r.$c"; done
for r in $(seq "$runs"); do
  for c in "${configs[@]}"; do one "$c" >> "$tmp/r.$c"; done
done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "load average before the last run: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
printf "%-6s %14s %14s %14s   (%s runs of %s rounds, interleaved; medians)\n" config "program CPU ms" "elapsed ms" \
  "its thread ms" "$runs" "$rounds"
for c in "${configs[@]}"; do
  printf "%-6s %14s %14s %14s\n" "$c" "$(awk '{print $1}' "$tmp/r.$c" | med)" "$(awk '{print $2}' "$tmp/r.$c" | med)" \
    "$(awk '{print $3}' "$tmp/r.$c" | med)"
done
b=$(awk '{print $1}' "$tmp/r.bare" | med); t=$(awk '{print $1}' "$tmp/r.top" | med)
sm=$(awk '{print $1}' "$tmp/r.sample" | med)
echo "program CPU under top: $(echo "($t - $b) * 100 / $b" | bc -l | xargs printf %+.2f)%;" \
  "under --sample: $(echo "($sm - $b) * 100 / $b" | bc -l | xargs printf %+.2f)%"
pairs=$(paste -d' ' <(awk '{print $1}' "$tmp/r.bare") <(awk '{print $1}' "$tmp/r.top"))
echo "median of the pairs' differences (each top run against the bare run before it): $(echo "$pairs" |
  awk '{print ($2 - $1) * 100 / $1}' | med | xargs printf %+.2f)%"
echo "each run (bare, top): $(paste -d' ' <(awk '{print $1}' "$tmp/r.bare") <(awk '{print $1}' "$tmp/r.top") | tr '\n' ';')"

# The long run: both sides' RSS (MB) every 10 s while top watches by attach.
dotnet "$dll" top run $((long + 20)) > "$tmp/long.out" 2>/dev/null &
prog=$!
for _ in $(seq 100); do grep -q ready "$tmp/long.out" 2>/dev/null && break; sleep 0.1; done
"$dnprof" top -b "$prog" > /dev/null 2>&1 &
top=$!
rp=(); rt=()
for _ in $(seq $((long / 10))); do
  sleep 10
  rp+=("$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$prog"/status 2>/dev/null || echo -)")
  rt+=("$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$top"/status 2>/dev/null || echo -)")
done
kill -INT "$top" 2>/dev/null || true
wait "$top" || true
echo "long run, ${long} s, RSS every 10 s (MB): program ${rp[*]}; dnprof top ${rt[*]}"
kill "$prog" 2>/dev/null || true
wait "$prog" 2>/dev/null || true
