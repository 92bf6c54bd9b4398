/* clock.c (arch/x86_64): whether the TSC can time events (arch.h). */
#include "arch/arch.h"

#include <cpuid.h>

/* The kernel keeps time with the TSC only when it found it synchronized across
 * CPUs and stable: trust it no more than the kernel does. */
int arch_counter_usable(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d & (1u << 8)) && arch_kernel_clocksource_is("tsc"); /* invariant TSC */
}
