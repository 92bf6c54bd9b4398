# The arm64 subset of the end-to-end tests (docs/arm64.md): the arm64 agent,
# cross-built, in the self-contained linux-arm64 Scenarios program, run under
# qemu-user by this machine's x86-64 dnprof, which reads the traces and heap
# snapshots the arm64 agent writes. Each e2e.arm64.<name> is the e2e test
# <name> with DNPROF_DOTNET=qemu-aarch64, DNPROF_SCENARIOS=the arm64 program
# and DNPROF_AGENT=the arm64 agent (tests/e2e/e2e.h), so it holds the trace up
# against the same truths as on x86-64. `ctest -L arm64` runs them.
#
# They need qemu-aarch64 and the cross compiler (tools/install-deps). Without
# them only e2e.arm64.tools is there, and it is skipped (it fails under
# DNPROF_E2E_NO_SKIP, as .ci/run sets).

# Priority order; each runs the Scenarios program once or twice under
# emulation (about 15 times slower than natively), on the tests' small inputs;
# a CPU-bound workload of a few seconds runs 3 times longer (the runtime's
# start-up and JIT under qemu take much of it: DNPROF_E2E_WORK_SCALE).
set(DNPROF_E2E_ARM64_TESTS
  e2e_arm64_machines
  e2e_calls_exact
  e2e_calls_counts
  e2e_sample_shares_1khz
  e2e_stories_all
  e2e_heap_snapshot_run
  e2e_heap_snapshot_attach
  e2e_attach_cycles
  e2e_alloc_shares
  e2e_sample_short_method_callers
  e2e_sample_wall_gc_pause
  e2e_calls_args
  e2e_trace_run_startup
  e2e_arm64_doctor)

find_program(DNPROF_QEMU_AARCH64_EXE qemu-aarch64)
find_program(DNPROF_AARCH64_CC_EXE aarch64-linux-gnu-gcc)
set(DNPROF_ARM64_DIR ${CMAKE_CURRENT_BINARY_DIR}/arm64)
set(DNPROF_ARM64_AGENT ${DNPROF_ARM64_DIR}/build/libdnprof.so)
set(DNPROF_ARM64_BIN ${DNPROF_ARM64_DIR}/build/dnprof)
set(DNPROF_ARM64_APP ${DNPROF_ARM64_DIR}/scenarios/Scenarios)

add_test(NAME e2e.arm64.tools COMMAND dnprof_e2e e2e_arm64_tools)
set_tests_properties(e2e.arm64.tools PROPERTIES LABELS arm64 SKIP_RETURN_CODE 77
  ENVIRONMENT "DNPROF_QEMU_AARCH64=${DNPROF_QEMU_AARCH64_EXE};DNPROF_AARCH64_CC=${DNPROF_AARCH64_CC_EXE}")
if(NOT DNPROF_QEMU_AARCH64_EXE OR NOT DNPROF_AARCH64_CC_EXE)
  message(STATUS "qemu-aarch64 or aarch64-linux-gnu-gcc not found: the arm64 end-to-end tests are left out "
    "(tools/install-deps installs them)")
  return()
endif()

add_test(NAME e2e.arm64.build_agent
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${DNPROF_ARM64_DIR}/build
          -DLAUNCHER=${CMAKE_C_COMPILER_LAUNCHER} -P ${CMAKE_CURRENT_SOURCE_DIR}/arm64/build_agent.cmake)
add_test(NAME e2e.arm64.publish_scenarios
  COMMAND ${DNPROF_DOTNET_EXE} publish ${CMAKE_CURRENT_SOURCE_DIR}/scenarios/Scenarios.csproj
          -c Release -r linux-arm64 --self-contained -p:InvariantGlobalization=true
          -o ${DNPROF_ARM64_DIR}/scenarios --nologo -v:minimal
          -p:DnprofScenariosObj=${DNPROF_ARM64_DIR}/scenarios-obj)
set_tests_properties(e2e.arm64.build_agent e2e.arm64.publish_scenarios PROPERTIES
  FIXTURES_SETUP e2e_arm64 LABELS arm64 TIMEOUT 900 ENVIRONMENT "${DNPROF_E2E_DOTNET_ENV}")

# The arm64 program's libraries: Debian's arm64 multiarch packages (libc6:arm64,
# libstdc++6:arm64), which qemu-aarch64 finds without QEMU_LD_PREFIX.
foreach(name ${DNPROF_E2E_ARM64_TESTS})
  add_test(NAME e2e.arm64.${name} COMMAND dnprof_e2e ${name})
  set_tests_properties(e2e.arm64.${name} PROPERTIES
    FIXTURES_REQUIRED "e2e_arm64"
    LABELS arm64
    TIMEOUT 900
    SKIP_RETURN_CODE 77
    ENVIRONMENT "DNPROF_BIN=$<TARGET_FILE:dnprof>;DNPROF_ARM64_BIN=${DNPROF_ARM64_BIN};DNPROF_AGENT=${DNPROF_ARM64_AGENT};DNPROF_SCENARIOS=${DNPROF_ARM64_APP};DNPROF_DOTNET=${DNPROF_QEMU_AARCH64_EXE};DNPROF_E2E_SLOWDOWN=10;DNPROF_E2E_WORK_SCALE=3;DNPROF_E2E_SCRATCH=${DNPROF_ARM64_DIR}/scratch;${DNPROF_E2E_DOTNET_ENV}")
endforeach()

# The arm64 GC-pause test alone, for the others' sake: its four emulated threads
# (one computing, one collecting every 15 ms, two waiting) beside
# e2e.arm64.e2e_sample_shares_1khz skewed that test's shares past its 5 points
# (64.0 / 64.1% for a truth of 58%, twice in five runs; 58-61% alone or beside
# busy loops).
set_tests_properties(e2e.arm64.e2e_sample_wall_gc_pause PROPERTIES RUN_SERIAL TRUE)
