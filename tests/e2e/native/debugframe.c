/* debugframe.c: native code that only .debug_frame describes, for the test of
 * native unwinding by .debug_frame (test_sample_unwind.c): built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables (no .eh_frame of its
 * own), -fomit-frame-pointer (no chain to follow) and -g (the .debug_frame).
 * The sampling scenario's "native" loop calls dnp_native_spin, which calls
 * middle, which calls inner: a sample in inner must be walked up through both
 * to the managed NativeWork. Work after each call keeps it a call, not a jump. */
#include <stdint.h>

__attribute__((noinline)) static int64_t inner(int64_t n) {
    volatile uint64_t x = (uint64_t)n;
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s += (int64_t)(x >> 33);
    }
    return s;
}

__attribute__((noinline)) static int64_t middle(int64_t n) {
    volatile int64_t pad[4] = {n, n + 1, n + 2, n + 3}; /* a frame of its own, addressed from RSP */
    int64_t r = inner(n);
    return r ^ (pad[1] >> 3);
}

__attribute__((visibility("default"), noinline)) int64_t dnp_native_spin(int64_t n) {
    int64_t r = middle(n);
    return r + (n & 7);
}
