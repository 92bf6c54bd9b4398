/* clock.h: the agent's clocks. Event timestamps and call timings come from the
 * machine's cycle counter (arch.h: the TSC on x86-64) when it runs at a constant
 * rate and the kernel itself keeps time with it, converted to nanoseconds with a
 * rate measured against CLOCK_MONOTONIC; otherwise from
 * clock_gettime(CLOCK_MONOTONIC). */
#ifndef DNP_CLOCK_H
#define DNP_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "arch/arch.h"

typedef struct clock_state {
    int tsc;             /* the cycle counter (TSC) can be used */
    atomic_int ready;    /* the rate below is known (set once) */
    uint64_t base_ns;    /* CLOCK_MONOTONIC at base_tsc */
    uint64_t base_tsc;
    uint64_t mult;       /* ns per tick, 32.32 fixed point */
    double ns_per_tick;
} clock_state;

extern clock_state g_clock;

/* Decides which clock to use and takes the first calibration sample. Idempotent. */
void clock_init(void);

/* Measures the TSC's rate against CLOCK_MONOTONIC over at least min_ms since
 * clock_init, once; later calls do nothing. wait: spin for what is missing of
 * min_ms; otherwise return at once, uncalibrated, if min_ms has not passed yet. */
void clock_calibrate(unsigned min_ms, int wait);

uint64_t clock_mono_ns(void);

/* Raw ticks for durations (TSC ticks, or nanoseconds without a TSC). */
static inline uint64_t clock_ticks(void) {
    if (__builtin_expect(g_clock.tsc, 1))
        return arch_counter();
    return clock_mono_ns();
}

/* The same, read after every instruction before it has completed: for the end
 * of an interval that latency-bound work precedes. */
static inline uint64_t clock_ticks_ordered(void) {
    if (__builtin_expect(g_clock.tsc, 1))
        return arch_counter_ordered();
    return clock_mono_ns();
}

/* Ticks to nanoseconds (after clock_calibrate). */
static inline uint64_t clock_ticks_to_ns(uint64_t ticks) {
    return g_clock.tsc ? (uint64_t)(((unsigned __int128)ticks * g_clock.mult) >> 32) : ticks;
}

/* Monotonic nanoseconds: from the TSC once calibrated, from clock_gettime before. */
static inline uint64_t clock_now_ns(void) {
    if (atomic_load_explicit(&g_clock.ready, memory_order_acquire) && g_clock.tsc)
        return g_clock.base_ns + clock_ticks_to_ns(arch_counter() - g_clock.base_tsc);
    return clock_mono_ns();
}

#endif
