/* arch_elt.h (arch/aarch64): what the enter fast path (calls.c) needs of the
 * machine. GCC has no no_caller_saved_registers on arm64, so no C code can run
 * inside a stub that saves nothing: elt.S points the fast stubs at the full
 * ones (dnp_elt_enter_timed is dnp_elt_enter), which save what the hook
 * contract keeps and call the ordinary C hooks. calls.c's C fast paths are
 * still built (general registers only), and unused. The thread pointer is
 * tpidr_el0 (unique among live threads: one read). */
#ifndef DNP_ARCH_ELT_H
#define DNP_ARCH_ELT_H

#include <stdint.h>

/* Code that may run inside the fast stubs: general registers only. */
#define ARCH_GPR_ONLY __attribute__((target("general-regs-only")))

/* A C fast path: on arm64 no stub calls it (see above). */
#define ARCH_FAST_FN __attribute__((target("general-regs-only"), used, visibility("hidden")))

__attribute__((always_inline)) ARCH_GPR_ONLY static inline uintptr_t arch_thread_pointer(void) {
    uintptr_t tp;
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

/* arch_counter_ordered for ARCH_GPR_ONLY code. */
__attribute__((always_inline)) ARCH_GPR_ONLY static inline uint64_t arch_counter_ordered_gpr(void) {
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
}

#endif
