/* threadpool.c: the thread pool's adjustments (threadpool.h).
 *
 * Payload (dotnet/runtime src/coreclr/vm/ClrEtwAll.man; .NET 8, 9 and 10 fire it
 * from the managed thread pool through the same provider):
 *   ThreadPoolWorkerThreadAdjustmentAdjustment (55): double AverageThroughput,
 *     u32 NewWorkerThreadCount, u32 Reason (0 warm-up, 1 initializing, 2 random
 *     move, 3 climbing move, 4 change point, 5 stabilizing, 6 starvation, 7
 *     thread timed out), u16 ClrInstanceID
 * Rare (hill climbing moves at most a few times a second): each is recorded. */
#include "threadpool.h"

#include <string.h>

#include "agent.h"
#include "callbacks.h"
#include "eventpipe.h"
#include "gc_stats.h"
#include "recorder.h"

#define EV_ADJUSTMENT 55u

static void on_event(const ep_event *e);
static void on_started(void);

static ep_consumer g_consumer = {"thread-pool adjustments", EP_KEYWORD_THREADING, COR_PRF_EVENTPIPE_INFORMATIONAL,
                                 on_event, on_started, NULL};

void threadpool_configure(const agent_config *cfg, uint32_t *mask_high) {
    if (cfg->threadpool)
        ep_want(&g_consumer, mask_high);
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
