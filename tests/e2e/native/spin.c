/* spin.c: a native loop for the sampling tests (SampleScenario "native"): the
 * samples taken in it must show "libdnprof_test_native.so!dnp_native_spin". */
#include <stdint.h>

__attribute__((visibility("default"), noinline)) int64_t dnp_native_spin(int64_t n) {
    volatile uint64_t x = (uint64_t)n;
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s += (int64_t)(x >> 33);
    }
    return s;
}
