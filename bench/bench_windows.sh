#!/usr/bin/env bash
# bench_windows.sh: the cost of continuous profiling (dnprof run --every,
# docs/production.md). Runs the Scenarios program's "sample bench server"
# workload (64 threads serving requests; its own time is the Stopwatch it
# prints), made long enough for several 10 s windows, interleaved, RUNS times
# per configuration, and prints the median of the workload's own time and of
# the whole run's CPU time (dnprof, its push thread and libcurl, and the
# program: user + system), and the program's peak RSS:
#   bare      no profiler
#   sample    dnprof run --sample (100 Hz), a trace file, no windows
#   every10s  dnprof run --every 10s --pyroscope (a loopback ingest server)
#   every1s   the same with 1 s windows (ten times the work of the windows)
# Then the front end's CPU per window alone: dnprof push --once over windows
# of the same workload, to Pyroscope, to files, and to OTLP (a second loopback
# server, in its OTLP receiver's mode).
# Then one long run (--every 1s, pushing, LONG seconds) whose program RSS is
# read every 5 s: the agent's memory must stay flat.
# Usage: bench/bench_windows.sh BUILD_DIR [RUNS] [TIMES] [LONG]
set -euo pipefail
build=${1:?build dir}; runs=${2:-3}; times=${3:-25}; long=${4:-60}
dnprof=$build/dnprof; dll=$build/tests/e2e/scenarios/Scenarios.dll
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'kill $srv $srv_otlp 2>/dev/null || true; rm -rf "$tmp"' EXIT
python3 "$src/tests/e2e/ingest/ingest_server.py" --dir "$tmp/ingest" --port-file "$tmp/port" --lifetime 3600 &
srv=$!
python3 "$src/tests/e2e/ingest/ingest_server.py" --otlp --dir "$tmp/ingest-otlp" --port-file "$tmp/port-otlp" \
  --lifetime 3600 &
srv_otlp=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && [ -s "$tmp/port-otlp" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$tmp/port")
url_otlp=http://127.0.0.1:$(cat "$tmp/port-otlp")
export DOTNET_TieredCompilation=0

one() { # config -> "work_ms cpu_s maxrss_kb"
  local cmd=()
  case $1 in
    bare) cmd=(dotnet "$dll" sample bench server "$times");;
    sample) cmd=("$dnprof" run -q --sample -o "$tmp/s.trace" -- dotnet "$dll" sample bench server "$times");;
    every10s) cmd=("$dnprof" run -q --every 10s --pyroscope "$url" -- dotnet "$dll" sample bench server "$times");;
    every1s) cmd=("$dnprof" run -q --every 1s --pyroscope "$url" -- dotnet "$dll" sample bench server "$times");;
  esac
  /usr/bin/time -f "%U %S %M" -o "$tmp/time" "${cmd[@]}" > "$tmp/out" 2>/dev/null
  read -r u s m < "$tmp/time"
  echo "$(awk '{print $2}' "$tmp/out") $(echo "$u + $s" | bc) $m"
}

configs=(bare sample every10s every1s)
for c in "${configs[@]}"; do : > "$tmp/r.$c"; done
for r in $(seq "$runs"); do
  for c in "${configs[@]}"; do one "$c" >> "$tmp/r.$c"; done
done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-9s %14s %12s %12s\n" config "workload ms" "run CPU s" "peak RSS MB"
for c in "${configs[@]}"; do
  w=$(awk '{print $1}' "$tmp/r.$c" | med); cpu=$(awk '{print $2}' "$tmp/r.$c" | med); rss=$(awk '{print $3}' "$tmp/r.$c" | med)
  printf "%-9s %14s %12s %12.1f\n" "$c" "$w" "$cpu" "$(echo "$rss / 1024" | bc -l)"
done
echo "requests received by the ingest server: $(wc -l < "$tmp/ingest/requests.log")"

# The front end's CPU per window: windows of the server workload (500 ms each,
# nobody reading them), then dnprof push --once over them, timed.
mkdir -p "$tmp/w"
DNPROF_EVERY=500 DNPROF_WINDOW_KEEP=100000 DNPROF_WINDOW_DIR="$tmp/w" \
  "$dnprof" run -q --sample --alloc -o "$tmp/w.trace" -- dotnet "$dll" sample bench server "$times" > /dev/null 2>&1
nw=$(ls "$tmp/w" | grep -c '^window-')
bytes=$(du -sk "$tmp/w" | awk '{print $1}')
cp -r "$tmp/w" "$tmp/w2"
cp -r "$tmp/w" "$tmp/w3"
TIMEFORMAT='%3U %3S' # getrusage's microseconds, not time(1)'s 10 ms
{ time "$dnprof" push --once -q --pyroscope "$url" "$tmp/w" || true; } 2> "$tmp/t1"
{ time "$dnprof" push --once -q -o "$tmp/files" "$tmp/w2" || true; } 2> "$tmp/t2"
{ time "$dnprof" push --once -q --otlp "$url_otlp" "$tmp/w3" || true; } 2> "$tmp/t3"
read -r u1 s1 < <(tail -1 "$tmp/t1"); read -r u2 s2 < <(tail -1 "$tmp/t2"); read -r u3 s3 < <(tail -1 "$tmp/t3")
per() { echo "($1 + $2) * 1000 / $nw" | bc -l | xargs printf %.2f; }
otlp_kb=$(cat "$tmp"/ingest-otlp/body-*.pb 2>/dev/null | wc -c | awk '{printf "%.0f", $1 / 1024}')
echo "front end: $nw windows ($bytes KB on disk); ms CPU per window: push to Pyroscope $(per "$u1" "$s1"), to files $(per "$u2" "$s2"), OTLP (decode the pprofs, encode, push) $(per "$u3" "$s3") ($otlp_kb KB of OTLP requests)"

# The long run: the program's RSS every 5 s while windows are cut and pushed.
echo "long run: --every 1s --alloc --sample --pyroscope, ${long} s; the program's RSS (MB) every 5 s:"
"$dnprof" run -q --every 1s --sample --alloc --pyroscope "$url" -- dotnet "$dll" sample shares 1000 > /dev/null 2>&1 &
run=$!
sleep 2
pid=$(pgrep -P $run -f Scenarios.dll | head -1)
rss=()
for _ in $(seq $((long / 5))); do
  rss+=("$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$pid"/status 2>/dev/null || echo -)")
  sleep 5
done
echo "  ${rss[*]}"
kill -TERM "$pid" 2>/dev/null || true
wait $run || true
