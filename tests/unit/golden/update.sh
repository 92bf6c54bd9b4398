#!/bin/sh
# Rewrites the golden files of the export tests from the current code, when a
# change of the output is intended: review `git diff tests/unit/golden` after.
#   tests/unit/golden/update.sh [BUILD_DIR]      (default: build)
set -e
build=${1:-build}
DNPROF_GOLDEN_UPDATE=1 "$build/tests/dnprof_unit" export_
