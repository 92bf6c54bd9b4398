/* clock.c: choosing and calibrating the agent's clock (clock.h). */
#include "clock.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

clock_state g_clock;

static pthread_mutex_t calibrate_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t first_ns, first_tsc;

uint64_t clock_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int arch_kernel_clocksource_is(const char *name) {
    char buf[64] = "";
    size_t len = strlen(name);
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= (ssize_t)len && strncmp(buf, name, len) == 0;
}

void clock_init(void) {
    pthread_mutex_lock(&calibrate_mu);
    if (first_ns == 0) {
        g_clock.tsc = arch_counter_usable();
        first_tsc = g_clock.tsc ? arch_counter() : 0;
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
        if (g_clock.tsc) {
            uint64_t ns, tsc;
            do {
                ns = clock_mono_ns();
                tsc = arch_counter();
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
        atomic_store_explicit(&g_clock.ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&calibrate_mu);
}
