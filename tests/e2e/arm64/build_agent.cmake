# build_agent.cmake: the arm64 agent and front end for the arm64 end-to-end
# tests (tests/e2e/arm64.cmake), cross-built from SRC into OUT with
# cmake/aarch64-linux-gnu.cmake. cmake -DSRC=... -DOUT=... [-DLAUNCHER=ccache] -P build_agent.cmake
set(args -S ${SRC} -B ${OUT} --toolchain ${SRC}/cmake/aarch64-linux-gnu.cmake -DDNPROF_WERROR=ON)
if(LAUNCHER)
  list(APPEND args -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} ${args} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot configure the arm64 build in ${OUT} (tools/install-deps installs "
    "gcc-aarch64-linux-gnu and zlib1g-dev:arm64)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${OUT} --target dnprof_agent dnprof -j2 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot build the arm64 agent and front end in ${OUT}")
endif()
