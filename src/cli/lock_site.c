/* lock_site.c: where a thread waited for a lock: the first frame of its
 * stack outside the runtime's own lock and wait code (lock_site.h), as
 * `dnprof report --locks` (report_locks.c) and `dnprof top --locks`
 * (top_model.c) name it. */
#include <string.h>

#include "lock_site.h"

/* The runtime's own lock and wait code, above the frame that waited. */
static int internal_frame(const char *f, size_t n) {
    static const char *const prefixes[] = {
        "System.Threading.Monitor::", "System.Threading.Lock::", "System.Diagnostics.Tracing.NativeRuntimeEventSource::",
        "System.Threading.WaitHandle::", "System.Threading.WaitSubsystem", "System.Threading.LowLevel",
        "System.Threading.EventWaitHandle::", "System.Threading.ManualResetEventSlim::", "System.Threading.SemaphoreSlim::",
        "System.Threading.Lock+"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t k = strlen(prefixes[i]);
        if (n >= k && !strncmp(f, prefixes[i], k))
            return 1;
    }
    return 0;
}

const char *lock_site(const char *stack, size_t *len) {
    const char *last = NULL;
    *len = 0;
    for (const char *f = stack; f && *f;) {
        const char *end = strchr(f, '\n');
        size_t n = end ? (size_t)(end - f) : strlen(f);
        last = f, *len = n;
        if (!internal_frame(f, n))
            return f;
        f = end ? end + 1 : NULL;
    }
    return last;
}
