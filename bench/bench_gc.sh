#!/usr/bin/env bash
# bench_gc.sh BUILD_DIR SCENARIOS_DLL [RUNS]: the cost of dnprof run --gc, two ways.
#  1. An allocation-heavy program (the alloc scenario, 400 MB in small objects):
#     its own allocating time ("alloc ms=", measured by itself), median of RUNS.
#  2. A GC-heavy one (the gc scenario, 3,000 induced collections): the CPU time
#     of the whole run (user + system, /usr/bin/time), the least of RUNS (the
#     least is what a loaded machine perturbs least).
# Each alone, under dnprof run --events threads (the agent without --gc), under
# dnprof run --gc, and under dotnet-trace collecting the same events
# (Microsoft-Windows-DotNETRuntime, GC keyword, Informational) when installed.
set -uo pipefail
build=${1:?build dir}; dll=${2:?Scenarios.dll}; runs=${3:-7}
dnprof=$build/dnprof
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dt=$(command -v dotnet-trace || echo "$HOME/.dotnet/tools/dotnet-trace")
config() { # name -> the command prefix
  case $1 in
  alone) ;;
  agent) echo "$dnprof run --events threads --quiet -o $tmp/a.trace --" ;;
  gc) echo "$dnprof run --gc --quiet -o $tmp/g.trace --" ;;
  dotnet-trace) echo "$dt collect --show-child-io --providers Microsoft-Windows-DotNETRuntime:0x1:4 -o $tmp/t.nettrace --" ;;
  esac
}
configs="alone agent gc"
[ -x "$dt" ] && configs="$configs dotnet-trace"
echo "alloc scenario, 400 MB: the program's own allocating time, median of $runs (ms)"
for c in $configs; do
  for i in $(seq "$runs"); do
    $(config "$c") dotnet "$dll" alloc 400 2>/dev/null | grep -o 'alloc ms=[0-9.]*' | head -1 | cut -d= -f2
  done | sort -n | awk -v c="$c" '{a[NR]=$1} END {printf "  %-13s %s\n", c, a[int((NR+1)/2)]}'
done
echo "gc scenario, 3,000 induced collections: CPU time of the run, least of $runs (s)"
for c in $configs; do
  for i in $(seq "$runs"); do
    /usr/bin/time -f "%U %S" -o "$tmp/time" $(config "$c") dotnet "$dll" gc 1000 >/dev/null 2>&1
    awk '{print $1 + $2}' "$tmp/time"
  done | sort -n | head -1 | sed "s/^/  $(printf '%-13s' "$c") /"
done
"$dnprof" report --gc "$tmp/g.trace" | head -2
