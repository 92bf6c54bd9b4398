#!/usr/bin/env bash
# run.sh BUILD_DIR [HARNESS...]: runs each libFuzzer harness (default: all) for
# FUZZ_SECONDS (default 30) under nice, one after another on one core, starting
# from its committed corpus (tests/fuzz/corpus/<harness>, which holds every
# reproducer found so far: each is run first) with its dictionary. New inputs
# go to BUILD_DIR/fuzz-work/<harness>/corpus, never to the source tree; a crash,
# hang (-timeout), leak, memory over FUZZ_MEM_MB (default 512) or one
# allocation over FUZZ_MALLOC_MB (default 64) stops the run with its input in BUILD_DIR/fuzz-work/<harness>/ and a non-zero exit.
# docs/testing.md#fuzzing. FUZZ_ARGS adds libFuzzer options.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: run.sh BUILD_DIR [HARNESS...]" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(trace heap attach_blob control unwind il symtab pprof metadata)
seconds=${FUZZ_SECONDS:-30}
# ASan keeps 256 MiB of freed memory by default before reuse (its quarantine),
# which a harness of tens of thousands of runs a second fills and which counts
# towards -rss_limit_mb: a quarter of it still catches a use after free here.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64}
mem=${FUZZ_MEM_MB:-512}
# One allocation: the inputs are at most tens of KB, so a reader that asks for
# more than this believed a length field the input cannot hold.
malloc_mb=${FUZZ_MALLOC_MB:-64}
status=0
for h in "${harnesses[@]}"; do
  bin=$build/fuzz_$h
  [ -x "$bin" ] || bin=$build/tests/fuzz/fuzz_$h
  if [ ! -x "$bin" ]; then
    echo "run.sh: no fuzz_$h in $build (build with -DDNPROF_FUZZ=ON, CC=clang-14)" >&2
    exit 2
  fi
  work=$build/fuzz-work/$h
  mkdir -p "$work/corpus"
  dict=()
  [ -f "$here/$h.dict" ] && dict=(-dict="$here/$h.dict")
  echo "run.sh: fuzz_$h for $seconds s" >&2
  # -rss_limit_mb and -malloc_limit_mb: a reader that believes a length field
  # and allocates past what the input could hold is a failure, not a slow run.
  if ! (cd "$work" && nice -n 10 "$bin" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb="$mem" -malloc_limit_mb="$malloc_mb" -print_final_stats=1 \
        -artifact_prefix="$work/" "${dict[@]}" ${FUZZ_ARGS:-} "$work/corpus" "$here/corpus/$h" \
        2>&1 | tee "$work/log" | grep -E '^(#[0-9]+.*(INITED|DONE|pulse))|stat::|ERROR|SUMMARY|Test unit written|==[0-9]+=='); then
    :
  fi
  if grep -qE 'Test unit written|ERROR: libFuzzer|SUMMARY: (Address|Undefined|Leak)' "$work/log"; then
    echo "run.sh: fuzz_$h FAILED: see $work/log and the crash-*/leak-*/timeout-*/oom-* file in $work" >&2
    status=1
  fi
done
exit $status
