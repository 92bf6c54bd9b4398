/* clock.c: choosing and calibrating the agent's clock (clock.h). */
#include "clock.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

clock_state g_clock;

static pthread_mutex_t calibrate_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t first_ns, first_tsc;

uint64_t clock_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

void clock_init(void) {
    pthread_mutex_lock(&calibrate_mu);
    if (first_ns == 0) {
#if defined(__x86_64__)
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000007u) {
            __cpuid(0x80000007u, a, b, c, d);
            g_clock.tsc = (d & (1u << 8)) && kernel_uses_tsc(); /* invariant TSC */
        }
        first_tsc = g_clock.tsc ? __rdtsc() : 0;
#endif
        first_ns = clock_mono_ns();
    }
    pthread_mutex_unlock(&calibrate_mu);
}

void clock_calibrate(unsigned min_ms, int wait) {
    if (atomic_load(&g_clock.ready))
        return;
    clock_init();
    if (!wait && clock_mono_ns() - first_ns < (uint64_t)min_ms * 1000000u)
        return;
    pthread_mutex_lock(&calibrate_mu);
    if (!atomic_load(&g_clock.ready)) {
        g_clock.ns_per_tick = 1.0;
#if defined(__x86_64__)
        if (g_clock.tsc) {
            uint64_t ns, tsc;
            do {
                ns = clock_mono_ns();
                tsc = __rdtsc();
            } while (ns - first_ns < (uint64_t)min_ms * 1000000u);
            if (tsc > first_tsc) {
                g_clock.ns_per_tick = (double)(ns - first_ns) / (double)(tsc - first_tsc);
                g_clock.mult = (uint64_t)(g_clock.ns_per_tick * 4294967296.0);
                g_clock.base_ns = ns;
                g_clock.base_tsc = tsc;
            } else {
                g_clock.tsc = 0;
            }
        }
#endif
        atomic_store_explicit(&g_clock.ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&calibrate_mu);
}
