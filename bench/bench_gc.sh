#!/usr/bin/env bash
# bench_gc.sh BUILD_DIR SCENARIOS_DLL [RUNS]: the cost of dnprof run --gc on an
# allocation-heavy program (the alloc scenario, 400 MB in small objects: about
# 200 gen0 collections), against the program alone and against dotnet-trace
# collecting the same events (Microsoft-Windows-DotNETRuntime, GC keyword,
# Informational) when it is installed. Prints the program's own "alloc ms="
# (its allocating time, measured by itself) per run, and the median of each.
set -euo pipefail
build=${1:?build dir}; dll=${2:?Scenarios.dll}; runs=${3:-7}
dnprof=$build/dnprof
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ms() { grep -o 'alloc ms=[0-9.]*' "$1" | head -1 | cut -d= -f2; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # label, command...
  local label=$1; shift
  for i in $(seq "$runs"); do "$@" > "$tmp/out" 2>/dev/null; ms "$tmp/out"; done | median | sed "s/^/$label /"
}
dt=$(command -v dotnet-trace || echo "$HOME/.dotnet/tools/dotnet-trace")
for round in 1 2; do
  run "alone        " dotnet "$dll" alloc 400
  run "dnprof --gc  " "$dnprof" run --gc --quiet -o "$tmp/t.trace" -- dotnet "$dll" alloc 400
  [ -x "$dt" ] && run "dotnet-trace " "$dt" collect --show-child-io --providers Microsoft-Windows-DotNETRuntime:0x1:4 \
      -o "$tmp/t.nettrace" -- dotnet "$dll" alloc 400
done
"$dnprof" report --gc "$tmp/t.trace" | head -2
