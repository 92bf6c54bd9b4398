#!/bin/sh
# demo.sh: the README's quick start (`cmake --build build --target demo`): runs
# samples/hello once under dnprof, recording its calls and its exceptions, then
# shows what dnprof found: the head of the event log, where the time went, what
# was thrown. The whole log: dnprof print TRACE.
#
#   demo.sh DNPROF DOTNET HELLO_DLL TRACE    (from the top of the source tree)
set -eu
dnprof=$1 dotnet=$2 dll=$3 trace=$4

echo "\$ $dnprof run --calls --exceptions -o $trace -- dotnet $dll"
"$dnprof" run --calls --exceptions -o "$trace" -- "$dotnet" "$dll"

lines=$("$dnprof" print "$trace" | wc -l)
echo
echo "\$ $dnprof print $trace        # the event log: its first 20 of $lines lines"
"$dnprof" print "$trace" | head -n 20
echo "..."

echo
echo "\$ $dnprof report --top 5 $trace       # where the time went"
"$dnprof" report --top 5 "$trace"

echo
echo "\$ $dnprof report --exceptions $trace  # what was thrown, and where it was caught"
"$dnprof" report --exceptions "$trace"
