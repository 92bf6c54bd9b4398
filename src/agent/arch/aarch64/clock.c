/* clock.c (arch/aarch64): whether cntvct_el0 can time events (arch.h). */
#include "arch/arch.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The kernel keeps time with the generic timer (clocksource arch_sys_counter)
 * when it trusts it: trust it no more than the kernel does. Under user-mode
 * emulation (qemu-aarch64 on another machine) the kernel's clocksource is the
 * host's, and the counter is qemu's own: CLOCK_MONOTONIC is used instead. */
static int kernel_uses_counter(void) {
    static const char want[] = "arch_sys_counter";
    char buf[64] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= (ssize_t)sizeof want - 1 && strncmp(buf, want, sizeof want - 1) == 0;
}

int arch_counter_usable(void) {
    uint64_t freq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(freq));
    return freq != 0 && kernel_uses_counter();
}
