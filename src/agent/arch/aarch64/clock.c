/* clock.c (arch/aarch64): whether cntvct_el0 can time events (arch.h). */
#include "arch/arch.h"

/* The kernel keeps time with the generic timer (clocksource arch_sys_counter)
 * when it trusts it: trust it no more than the kernel does. Under user-mode
 * emulation (qemu-aarch64 on another machine) the kernel's clocksource is the
 * host's, and the counter is qemu's own: CLOCK_MONOTONIC is used instead. */
int arch_counter_usable(void) {
    uint64_t freq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(freq));
    return freq != 0 && arch_kernel_clocksource_is("arch_sys_counter");
}
