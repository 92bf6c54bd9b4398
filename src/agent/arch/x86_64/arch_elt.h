/* arch_elt.h (arch/x86_64): what the enter fast path (calls.c, on elt.S) needs
 * of the machine. Its C part touches general registers only and saves every
 * register it uses (no_caller_saved_registers), so that the stub saves nothing
 * of the method's arguments; the thread pointer is %fs:0 (unique among live
 * threads: one load). */
#ifndef DNP_ARCH_ELT_H
#define DNP_ARCH_ELT_H

#include <stdint.h>

/* Code that may run inside the fast stubs: general registers only. */
#define ARCH_GPR_ONLY __attribute__((target("general-regs-only")))

/* A C fast path the stubs call: saves what it uses, general registers only. */
#define ARCH_FAST_FN \
    __attribute__((no_caller_saved_registers, target("general-regs-only"), used, visibility("hidden")))

__attribute__((always_inline)) ARCH_GPR_ONLY static inline uintptr_t arch_thread_pointer(void) {
    uintptr_t tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}

/* arch_counter_ordered for ARCH_GPR_ONLY code (the intrinsics are not). */
__attribute__((always_inline)) ARCH_GPR_ONLY static inline uint64_t arch_counter_ordered_gpr(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t)hi << 32 | lo;
}

#endif
