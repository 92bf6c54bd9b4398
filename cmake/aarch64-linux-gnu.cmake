# aarch64-linux-gnu.cmake: cross-builds dnprof for linux-arm64 with Debian's
# cross compiler (tools/install-deps installs gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross, and zlib1g-dev:arm64 for the front end):
#
#   cmake -S . -B build-arm64 --toolchain cmake/aarch64-linux-gnu.cmake
#   cmake --build build-arm64 -j2
#
# The agent (libdnprof.so) and the front end (dnprof) are arm64 programs. The
# tests run under qemu-user when it is installed (CMAKE_CROSSCOMPILING_EMULATOR);
# the end-to-end tests of an arm64 agent run from the host's build instead
# (tests/e2e/arm64.cmake, docs/arm64.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(DNPROF_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${DNPROF_CROSS_TRIPLE}-gcc)
set(CMAKE_ASM_COMPILER ${DNPROF_CROSS_TRIPLE}-gcc)

# Headers and libraries of the target only: the cross directory, and the
# multiarch ones (zlib1g-dev:arm64 puts libz in /usr/lib/aarch64-linux-gnu, its
# header in /usr/include); programs (dotnet, qemu) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${DNPROF_CROSS_TRIPLE} /)
set(CMAKE_LIBRARY_ARCHITECTURE ${DNPROF_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The arm64 programs of the build (unit tests) run under user-mode emulation.
find_program(DNPROF_QEMU_AARCH64 qemu-aarch64)
if(DNPROF_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${DNPROF_QEMU_AARCH64} -L /usr/${DNPROF_CROSS_TRIPLE})
endif()
