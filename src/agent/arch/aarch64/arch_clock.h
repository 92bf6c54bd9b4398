/* arch_clock.h (arch/aarch64): the cycle counter is the generic timer's
 * virtual count, cntvct_el0, which runs at cntfrq_el0 whatever the core's
 * clock does (constant-rate by the architecture). A read is not ordered with
 * the instructions before it: the ordered read puts an isb first, so that
 * everything before it has completed, as lfence does before rdtsc. */
#ifndef DNP_ARCH_CLOCK_H
#define DNP_ARCH_CLOCK_H

#include <stdint.h>

#define ARCH_COUNTER_NAME "cntvct_el0"

static inline uint64_t arch_counter(void) {
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

static inline uint64_t arch_counter_ordered(void) {
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
}

#endif
