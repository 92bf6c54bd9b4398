#!/bin/sh
# cite_design_notes.sh: replaces the "seed 00N" citations in code comments with
# the sections of docs/design-notes.md they rely on. One-time and idempotent:
# run from the repository root after merging; it prints any citation it left.
set -e
r() { # file perl-substitution
    [ -f "$1" ] && perl -0pi -e "$2" "$1"
}
D='docs\/design-notes.md'  # slashes escaped for perl's s///
r src/trace/exc_machine.h    "s/one thread \(seed 002\)/one thread ($D#exceptions)/"
r src/trace/families.c       "s/\(corprof\.idl; seed 000's profiling_on\.bat\)/(corprof.idl; $D#event-mask)/"
r src/trace/families.h       "s/\(COR_PRF_MONITOR_\*, seed 000's profiling_on\.bat\)/(COR_PRF_MONITOR_*, $D#event-mask)/"
r src/trace/families.h       "s/a hex mask as in seed 000 \(\"0x1A7FFFF\"\), or words/a hex mask as DNProfiler took\n * (\"0x1A7FFFF\", $D#event-mask), or words/"
r src/trace/attach_blob.h    "s/InitializeForAttach \(seed 003:/InitializeForAttach ($D#attach:/"
r src/trace/session.h        "s/\(seed 004: IPC/($D#ipc: IPC/"
r src/agent/cb_exceptions.c  "s/notifications \(seed 002\)/notifications ($D#exceptions)/"
r src/agent/profiler.c       "s/\(seed 000's DNProfiler:/(DNProfiler's, $D#event-log:/"
r src/agent/profiler.c       "s/\/\* Seed 003: background GC/\/* $D#attach-gc: background GC/"
r src/agent/control.h        "s/\(seed 004: a channel of the/($D#ipc: a channel of the/"
r src/agent/control.c        "s/\(seed 003, CORPROF_E_UNSUPPORTED_CALL_SEQUENCE\)/($D#synchronous-calls: CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)/"
r src/agent/catchup.c        "s/synchronous \(seed 003\)/synchronous ($D#synchronous-calls)/"
r src/agent/agent.h          "s/\(\"pick first\", seed 003\)/(\"pick first\", $D#side-by-side)/"
r src/agent/calls.c          "s/\(ELT3, seed 001\)/(ELT3, $D#elt)/"
r src/agent/calls.h          "s/\(ELT3, seed 001\)/(ELT3, $D#elt)/"
r src/agent/recorder.h       "s/Shutdown \(seed 004\)/Shutdown ($D#no-clean-shutdown)/"
r src/agent/names.h          "s/\(at \*Finished, seed 000\)/(at *Finished, $D#started-finished)/"
r src/agent/attach.c         "s/process \(seed 003, \"Profiler\n \* Attach Basics\"\):/process\n * ($D#attach):/"
r src/cli/cmd_doctor.c       "s/load\?\" \(seed 003,\n \* \"Debugging your profiler I: activation\"\)/load?\"\n * ($D#why-not-loaded)/"
r src/cli/cmd_attach.c       "s/the trigger process of seed 003\./the trigger process of $D#attach./"
r src/cli/cmd_env.c          "s/profiling_on\.bat \(seed 000\):/profiling_on.bat ($D#activation):/"
r src/cli/cmd_print.c        "s/indented event log \(seed\n \* 000, figure 8\)/indented event log\n * ($D#event-log)/"
r tests/unit/test_families.c "s/\/\* seed 000's DN_PROFILER_MASK \*\//\/* DNProfiler's DN_PROFILER_MASK ($D#event-mask) *\//"
r tests/unit/test_agent.c    "s/Side by side \(seed 003\):/Side by side ($D#side-by-side):/"
r tests/e2e/test_forwarding.c "s/type forwarding \(seed 003\)\./type forwarding ($D#type-forwarding)./"
r tests/e2e/forwarding/build.cmake "s/\(seed 003, \"Type Forwarding\"\)/($D#type-forwarding)/"
r tests/e2e/forwarding/ForwardLib.v2/ForwardLib.v2.csproj "s/\(seed 003, \"Type Forwarding\", walkthrough 2\)/($D#type-forwarding)/"
# What is left, if anything (new citations from branches merged since):
grep -rn -i -E "seeds? ?0{0,2}[0-4]\b|seed [0-9]{3}|the seeds?\b" src tests docs README.md bench samples 2>/dev/null \
    | grep -v -E "seed (=|\*|>>|\))|unsigned seed|rng|srand" || true
