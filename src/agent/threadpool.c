/* threadpool.c: the thread pool's adjustments (threadpool.h).
 *
 * Payload (dotnet/runtime src/coreclr/vm/ClrEtwAll.man; .NET 8, 9 and 10 fire it
 * from the managed thread pool through the same provider):
 *   ThreadPoolWorkerThreadAdjustmentAdjustment (55): double AverageThroughput,
 *     u32 NewWorkerThreadCount, u32 Reason (0 warm-up, 1 initializing, 2 random
 *     move, 3 climbing move, 4 change point, 5 stabilizing, 6 starvation, 7
 *     thread timed out), u16 ClrInstanceID
 * Rare (hill climbing moves at most a few times a second): each is recorded.
 *
 * The pool's counters: the managed EventSource "System.Runtime"
 * (RuntimeEventSource) polls its EventCounters every EventCounterIntervalSec
 * once a session enables it with that argument, and writes each as one
 * self-describing event named "EventCounters" whose payload is one object,
 * its properties in their declaration order (CounterPayload.cs,
 * IncrementingCounterPayload.cs), strings NUL-terminated UTF-16:
 *   a PollingCounter: string Name, string DisplayName, double Mean, ...
 *   an IncrementingPollingCounter: string Name, string DisplayName,
 *     string DisplayRateTimeScale, double Increment, ...
 * Three of them are the pool's, polled in this order: threadpool-thread-count
 * (ThreadPool.ThreadCount), threadpool-queue-length (PendingWorkItemCount),
 * threadpool-completed-items-count (CompletedWorkItemCount, its increase).
 * When the third comes, one ThreadPoolCounters holds all three: one event a
 * second. The other counters (some twenty a second) are read as far as their
 * name. */
#include "threadpool.h"

#include <stdatomic.h>
#include <string.h>

#include "agent.h"
#include "callbacks.h"
#include "eventpipe.h"
#include "gc_stats.h"
#include "pool_state.h"
#include "recorder.h"

#define EV_ADJUSTMENT 55u

static void on_event(const ep_event *e);
static void on_started(void);

static ep_consumer g_consumer = {"thread-pool adjustments", EP_KEYWORD_THREADING, COR_PRF_EVENTPIPE_INFORMATIONAL,
                                 on_event, on_started, NULL, NULL, NULL, NULL};

static void on_counter(const ep_event *e);

static ep_consumer g_counters = {.what = "thread-pool counters",
                                 .level = COR_PRF_EVENTPIPE_INFORMATIONAL,
                                 .event = on_counter,
                                 .provider = u"System.Runtime",
                                 .args = u"EventCounterIntervalSec=1"};

void threadpool_configure(const agent_config *cfg, uint32_t *mask_high) {
    if (!cfg->threadpool)
        return;
    ep_want(&g_consumer, mask_high);
    pool_state_reset();
    if (cfg->threadpool == 1) /* 2: read from the pool's objects instead (pool_state.c) */
        ep_want(&g_counters, mask_high);
}

static void on_started(void) {
    REC(ThreadPoolConfig, (uint64_t)ep_runtime_major());
}

static void on_event(const ep_event *e) {
    if (e->id != EV_ADJUSTMENT)
        return;
    ep_reader r = ep_read(e);
    uint64_t bits = ep_get(&r, 8);
    uint32_t count = (uint32_t)ep_get(&r, 4), reason = (uint32_t)ep_get(&r, 4);
    if (r.bad)
        return;
    double throughput;
    memcpy(&throughput, &bits, sizeof throughput);
    uint64_t milli = throughput > 0 && throughput < 1e12 ? (uint64_t)(throughput * 1000.0) : 0;
    REC(ThreadPoolAdjustment, count, reason, milli);
}

/* Whether the n UTF-16 units at s are the ASCII string want. */
static int wide_is(const BYTE *s, size_t n, const char *want) {
    size_t k = 0;
    for (; k < n && want[k]; k++)
        if (s[2 * k] != (BYTE)want[k] || s[2 * k + 1])
            return 0;
    return k == n && !want[k];
}

/* Whether the metadata names a field want (UTF-16, NUL-terminated): the
 * payload's layout is the one read here. No metadata: trusted. */
static int meta_has(const ep_event *e, const char *want) {
    if (!e->meta || !e->meta_len)
        return 1;
    BYTE w[64];
    size_t n = strlen(want) + 1;
    for (size_t k = 0; k < n && k < 32; k++)
        w[2 * k] = (BYTE)want[k], w[2 * k + 1] = 0;
    return n <= 32 && memmem(e->meta, e->meta_len, w, 2 * n) != NULL;
}

static double get_double(ep_reader *r) {
    uint64_t bits = ep_get(r, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d > 0 && d < 1e15 ? d : 0;
}

static struct {
    atomic_uint seen; /* 1 threads, 2 queue, 4 completed: since the last event */
    _Atomic uint64_t threads, queue, completed;
} C;

static void on_counter(const ep_event *e) {
    ep_reader r = ep_read(e);
    size_t n = 0;
    const BYTE *name = ep_get_wstr(&r, &n);
    unsigned bit = wide_is(name, n, "threadpool-thread-count")            ? 1
                   : wide_is(name, n, "threadpool-queue-length")          ? 2
                   : wide_is(name, n, "threadpool-completed-items-count") ? 4
                                                                          : 0;
    if (!bit)
        return;
    ep_get_wstr(&r, &n); /* DisplayName */
    if (bit == 4)
        ep_get_wstr(&r, &n); /* DisplayRateTimeScale */
    if (!meta_has(e, bit == 4 ? "Increment" : "Mean"))
        return;
    uint64_t v = (uint64_t)(get_double(&r) + 0.5);
    if (r.bad)
        return;
    atomic_store(bit == 1 ? &C.threads : bit == 2 ? &C.queue : &C.completed, v);
    if ((atomic_fetch_or(&C.seen, bit) | bit) != 7 || bit != 4)
        return;
    atomic_store(&C.seen, 0);
    REC(ThreadPoolCounters, atomic_load(&C.threads), atomic_load(&C.queue), atomic_load(&C.completed));
}
