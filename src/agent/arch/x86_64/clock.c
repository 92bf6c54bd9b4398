/* clock.c (arch/x86_64): whether the TSC can time events (arch.h). */
#include "arch/arch.h"

#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The kernel keeps time with the TSC only when it found it synchronized across
 * CPUs and stable: trust it no more than the kernel does. */
static int kernel_uses_tsc(void) {
    char buf[64] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && strncmp(buf, "tsc", 3) == 0;
}

int arch_counter_usable(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d & (1u << 8)) && kernel_uses_tsc(); /* invariant TSC */
}
