/* pool_state.c: the thread pool's size and queue, read from its own objects
 * (pool_state.h; docs/top.md, "The pool's line").
 *
 * dnprof top's header shows the pool's threads and queued work items each
 * second. The runtime's System.Runtime EventCounters say both, but enabling
 * them runs managed code in the program: about 20 counters polled and written
 * each second, and the tiered JIT compiling what they run, which cost a
 * CPU-bound program 2-3.5% of its time under top (BENCHMARKS.md, "What top
 * costs, part by part"). This reads the same two numbers from the pool's
 * objects at each window's end, on the agent's window thread, as SOS's
 * ThreadPool command does from a dump (the runtime's sources mark each name
 * read here "SOS's ThreadPool command depends on this name"):
 *
 *   threads  PortableThreadPool.ThreadPoolInstance._separated.counts: a
 *            ThreadCounts, one u64 whose bits 16-31 are NumExistingThreads
 *            (ThreadPool.ThreadCount)
 *   blocked  PortableThreadPool.ThreadPoolInstance._numBlockedThreads: the pool
 *            threads blocked on a task (Task.Wait, .Result), for which the pool
 *            raises its worker count (.NET 7+; optional: none where absent)
 *   queue    ThreadPool.s_workQueue (a ThreadPoolWorkQueue): its workItems and
 *            highPriorityWorkItems queues and each of _assignableWorkItemQueues
 *            (ConcurrentQueue<object>: a chain of segments from _head by
 *            _nextSegment, each a ring of _slotsMask + 1 slots whose
 *            _headAndTail.Head and .Tail count what was taken and put), plus
 *            every worker's local queue (WorkStealingQueueList._queues, each
 *            m_tailIndex - m_headIndex): ThreadPool.PendingWorkItemCount
 *
 * Nothing is computed from constants but the bits of ThreadCounts and the
 * layout of an array of references: the fields' offsets are the runtime's
 * (GetClassLayout, for the version that runs), or the metadata's for a type
 * of explicit layout (PaddedHeadAndTail, CacheLineSeparated). The classes
 * come without loading any: a static field's class from one of its methods
 * (GetFunctionFromToken only looks a method up), an object's from the
 * MethodTable at its start (a ClassID is one). A part the program has not
 * made yet (its class not loaded, or its statics not set) counts as empty: a
 * program that never used its pool has 0 threads and 0 items queued.
 *
 * The objects are read with memread (no fault on what is not mapped) while no
 * collection runs: the collections' sequence (sampler_gc_seq) is the same
 * before and after, or the window gets no record. A class the runtime is
 * asked about was read from a live object, so it is a real one. */
#include "pool_state.h"

#include <string.h>

#include "agent.h"
#include "callbacks.h"
#include "cli_metadata.h"
#include "memread.h"
#include "module_md.h"
#include "recorder.h"
#include "sampler.h"

#define MAX_SEGMENTS 4096    /* a queue's segments followed (each holds 32 to 1M items) */
#define MAX_LOCAL_QUEUES 4096 /* workers' local queues */
#define ARRAY_LENGTH_AT 8u   /* an array: its MethodTable, u32 length, then (64-bit) its items at 16 */
#define ARRAY_ITEMS_AT 16u

/* An object kind whose fields are read: its MethodTable once seen, and the
 * offsets of the fields wanted (from the object's start). */
typedef struct kind {
    mdTypeDef td;
    uintptr_t mt;
    uint32_t off[4];
    const char *field[4];
    unsigned optional; /* fields (bits by index) a version may lack: offset 0 */
} kind;

enum { K_WORK_QUEUE, K_CQ, K_SEGMENT, K_WSQ, K_POOL, NKINDS };

static struct {
    int state; /* 0: not yet, 1: ready, -1: given up (said once) */
    ModuleID corelib;
    AppDomainID domain;
    dnp_md md;
    uint64_t s_work_queue, s_queues, s_instance; /* the static fields' addresses */
    uint64_t seq;                                  /* the collections' sequence as this read began */
    uint32_t hat_head, hat_tail;                   /* in PaddedHeadAndTail */
    uint32_t counts;                               /* in PortableThreadPool.CacheLineSeparated */
    kind k[NKINDS];
    mdTypeDef t_pool, t_wsql, t_tp;
    mdFieldDef f_work_queue, f_queues, f_instance;
} P;

/* ---- set-up ---- */

/* m if it is CoreLib: its metadata and its domain. 0, or -1. */
static int corelib_md(ModuleID m) {
    LPCBYTE base = NULL;
    ULONG len = 0;
    AssemblyID assembly = 0;
    ModuleID manifest = 0;
    if (!module_is_corelib(m) || module_md_read(m, &P.md) != 0 ||
        INFO_CALL(GetModuleInfo, m, &base, 0, &len, NULL, &assembly) != S_OK ||
        FAILED(INFO_CALL(GetAssemblyInfo, assembly, 0, &len, NULL, &P.domain, &manifest)) || !P.domain)
        return -1;
    P.corelib = m;
    return 0;
}

/* CoreLib: its module (the first loaded) and metadata. 0, or -1. */
static int find_corelib(void) {
    ICorProfilerModuleEnum *en = NULL;
    if (!AGENT_HAS_INFO(EnumModules) || FAILED(INFO_CALL(EnumModules, &en)) || !en)
        return -1;
    typedef struct {
        DNP_ENUM_SLOTS(ICorProfilerModuleEnum, ModuleID)
    } module_enum_vtbl;
    const module_enum_vtbl *vt = *(const module_enum_vtbl *const *)en;
    ModuleID ids[16];
    ULONG got = 0;
    int found = -1;
    while (found && SUCCEEDED(vt->Next(en, 16, ids, &got)) && got > 0 && got <= 16)
        for (ULONG i = 0; i < got && found; i++)
            found = corelib_md(ids[i]);
    vt->Release(en);
    return found;
}

static mdTypeDef type(const char *ns, const char *name, mdTypeDef in) {
    return dnp_md_find_type(&P.md, in ? "" : ns, name, in);
}

/* A root of what is read: static field f of td, whose method `method` tells
 * its class. 1 with its address in *at; 0 while there is nothing there yet
 * (the class not loaded: the runtime has no method of it; or its statics not
 * set: CORPROF_E_DATAINCOMPLETE), which counts as an empty pool; -1 when the
 * runtime refuses otherwise. */
static int static_at(mdTypeDef td, const char *method, mdFieldDef f, uint64_t *at) {
    uint32_t m = 0;
    FunctionID fid = 0;
    ClassID cls = 0;
    ModuleID mod = 0;
    mdToken tok = 0;
    void *addr = NULL;
    if (*at)
        return 1;
    if (!dnp_md_methods_named(&P.md, td, method, &m, 1))
        return -1;
    /* a MethodDef the runtime has no method for (its type not loaded):
     * E_INVALIDARG from .NET 8 to 10, a null id in older runtimes */
    HRESULT hr = INFO_CALL(GetFunctionFromToken, P.corelib, m, &fid);
    if (hr == E_INVALIDARG || hr == CORPROF_E_DATAINCOMPLETE || (hr == S_OK && !fid))
        return 0;
    if (hr != S_OK || INFO_CALL(GetFunctionInfo, fid, &cls, &mod, &tok) != S_OK || !cls)
        return -1;
    hr = INFO_CALL(GetAppDomainStaticAddress, cls, f, P.domain, &addr);
    if (hr == CORPROF_E_DATAINCOMPLETE)
        return 0;
    if (hr != S_OK || !addr)
        return -1;
    *at = (uint64_t)(uintptr_t)addr;
    return 1;
}

/* The types and the offsets the metadata gives. 0, or -1: this CoreLib is not
 * one whose pool this reads. */
static int find_types(void) {
    const char *th = "System.Threading", *cc = "System.Collections.Concurrent";
    mdTypeDef wq = type(th, "ThreadPoolWorkQueue", 0), hat = type(cc, "PaddedHeadAndTail", 0);
    P.t_tp = type(th, "ThreadPool", 0);
    P.t_pool = type(th, "PortableThreadPool", 0);
    P.t_wsql = wq ? type(NULL, "WorkStealingQueueList", wq) : 0;
    mdTypeDef sep = P.t_pool ? type(NULL, "CacheLineSeparated", P.t_pool) : 0;
    kind k[NKINDS] = {
        [K_WORK_QUEUE] = {wq, 0, {0}, {"workItems", "highPriorityWorkItems", "_assignableWorkItemQueues"}, 4},
        [K_CQ] = {type(cc, "ConcurrentQueue`1", 0), 0, {0}, {"_head"}},
        [K_SEGMENT] = {type(cc, "ConcurrentQueueSegment`1", 0), 0, {0}, {"_headAndTail", "_slotsMask", "_nextSegment"}},
        [K_WSQ] = {wq ? type(NULL, "WorkStealingQueue", wq) : 0, 0, {0}, {"m_headIndex", "m_tailIndex"}},
        [K_POOL] = {P.t_pool, 0, {0}, {"_separated", "_numBlockedThreads"}, 2},
    };
    memcpy(P.k, k, sizeof k);
    for (int i = 0; i < NKINDS; i++)
        if (!P.k[i].td)
            return -1;
    P.f_work_queue = P.t_tp ? dnp_md_field_named(&P.md, P.t_tp, "s_workQueue") : 0;
    P.f_instance = dnp_md_field_named(&P.md, P.t_pool, "ThreadPoolInstance");
    P.f_queues = P.t_wsql ? dnp_md_field_named(&P.md, P.t_wsql, "s_queues") : 0; /* .NET 10 */
    if (!P.f_queues && P.t_wsql)
        P.f_queues = dnp_md_field_named(&P.md, P.t_wsql, "_queues"); /* .NET 8 and 9 */
    if (!P.f_work_queue || !P.f_instance || !P.f_queues || !sep || !hat ||
        dnp_md_field_offset(&P.md, dnp_md_field_named(&P.md, hat, "Head"), &P.hat_head) ||
        dnp_md_field_offset(&P.md, dnp_md_field_named(&P.md, hat, "Tail"), &P.hat_tail) ||
        dnp_md_field_offset(&P.md, dnp_md_field_named(&P.md, sep, "counts"), &P.counts))
        return -1;
    return 0;
}

/* 1 ready (the roots found so far), -1 never (said once). */
static int setup(void) {
    if (P.state)
        return P.state;
    if (find_corelib() || find_types()) {
        rec_note(1, "the thread pool's threads and queue not read: this runtime's CoreLib lacks a type or field "
                    "they are read from (src/agent/pool_state.c)");
        return P.state = -1;
    }
    return P.state = 1;
}

/* The roots' addresses, found once each there is something there: 0 with
 * each one still absent (an empty pool) left 0, or -1. */
static int roots(void) {
    int a = static_at(P.t_tp, "QueueUserWorkItem", P.f_work_queue, &P.s_work_queue);
    int b = static_at(P.t_wsql, "Add", P.f_queues, &P.s_queues);
    int c = static_at(P.t_pool, "SetMinThreads", P.f_instance, &P.s_instance);
    return a < 0 || b < 0 || c < 0 ? -1 : 0;
}

/* ---- reading ---- */

static int rd64(uint64_t at, uint64_t *v) {
    return at && memread(at, v, 8) == 8 ? 0 : -1;
}

static int rd32(uint64_t at, int32_t *v) {
    return at && memread(at, v, 4) == 4 ? 0 : -1;
}

/* Whether obj is a kind's object: its fields' offsets learned from the
 * runtime the first time (GetClassLayout; the MethodTable is the ClassID). */
static int is(uint64_t obj, kind *k) {
    uint64_t mt = 0;
    if (rd64(obj, &mt) || !mt)
        return 0;
    if (k->mt)
        return k->mt == mt;
    /* the runtime is asked about mt only when no collection has run since the
     * read began: then mt came from a live object */
    int running = 0;
    uint8_t probe[16];
    if (sampler_gc_seq(&running) != P.seq || running || memread(mt, probe, sizeof probe) != (ssize_t)sizeof probe)
        return 0;
    ModuleID mod = 0;
    mdTypeDef td = 0;
    ClassID parent = 0;
    ULONG32 nargs = 0;
    COR_FIELD_OFFSET f[64];
    ULONG n = 0, size = 0;
    if (INFO_CALL(GetClassIDInfo2, (ClassID)mt, &mod, &td, &parent, 0, &nargs, NULL) != S_OK ||
        mod != P.corelib || td != k->td ||
        INFO_CALL(GetClassLayout, (ClassID)mt, f, 64, &n, &size) != S_OK || n > 64)
        return 0;
    for (int i = 0; i < 4 && k->field[i]; i++) {
        mdFieldDef want = dnp_md_field_named(&P.md, td, k->field[i]);
        for (ULONG j = 0; j < n && !k->off[i]; j++)
            if (f[j].ridOfField == want)
                k->off[i] = f[j].ulOffset;
        if (!k->off[i] && !(k->optional & 1u << i))
            return 0;
    }
    k->mt = mt;
    return 1;
}

/* A ConcurrentQueue<object>'s items: -1 when it cannot be read. */
static int64_t queue_count(uint64_t q) {
    uint64_t seg = 0;
    if (!q)
        return 0;
    if (!is(q, &P.k[K_CQ]) || rd64(q + P.k[K_CQ].off[0], &seg))
        return -1;
    kind *s = &P.k[K_SEGMENT];
    int64_t sum = 0;
    for (unsigned n = 0; seg && n < MAX_SEGMENTS; n++) {
        int32_t mask = 0, head = 0, tail = 0;
        if (!is(seg, s) || rd32(seg + s->off[1], &mask) || mask < 0 ||
            rd32(seg + s->off[0] + P.hat_head, &head) || rd32(seg + s->off[0] + P.hat_tail, &tail))
            return -1;
        int64_t len = (int64_t)mask + 1, freeze = 2 * len;
        /* a segment frozen for enqueues has its tail moved on by twice its length */
        if (head != tail && (int64_t)head != (int64_t)tail - freeze) {
            int64_t h = head & mask, t = tail & mask;
            sum += h < t ? t - h : len - h + t;
        }
        if (rd64(seg + s->off[2], &seg))
            return -1;
    }
    return sum;
}

/* The workers' local queues: -1 when they cannot be read. */
static int64_t local_count(void) {
    uint64_t arr = 0, items[64];
    uint32_t len = 0;
    if (!P.s_queues)
        return 0; /* no worker has a local queue yet */
    if (rd64(P.s_queues, &arr) || !arr || memread(arr + ARRAY_LENGTH_AT, &len, 4) != 4 || len > MAX_LOCAL_QUEUES)
        return -1;
    int64_t sum = 0;
    kind *k = &P.k[K_WSQ];
    for (uint32_t i = 0; i < len; i += 64) {
        uint32_t n = len - i < 64 ? len - i : 64;
        if (memread(arr + ARRAY_ITEMS_AT + 8ull * i, items, 8ull * n) != (ssize_t)(8 * n))
            return -1;
        for (uint32_t j = 0; j < n; j++) {
            int32_t head = 0, tail = 0;
            if (!is(items[j], k) || rd32(items[j] + k->off[0], &head) || rd32(items[j] + k->off[1], &tail))
                return -1;
            sum += tail > head ? tail - head : 0;
        }
    }
    return sum;
}

/* The global queues: -1 when they cannot be read. */
static int64_t global_count(void) {
    uint64_t wq = 0, q[2], arr = 0;
    kind *k = &P.k[K_WORK_QUEUE];
    if (!P.s_work_queue)
        return 0; /* nothing queued yet */
    if (rd64(P.s_work_queue, &wq) || !is(wq, k) || rd64(wq + k->off[0], &q[0]) || rd64(wq + k->off[1], &q[1]) ||
        (k->off[2] && rd64(wq + k->off[2], &arr)))
        return -1;
    int64_t a = queue_count(q[0]), b = queue_count(q[1]);
    if (a < 0 || b < 0)
        return -1;
    uint32_t len = 0;
    if (arr && (memread(arr + ARRAY_LENGTH_AT, &len, 4) != 4 || len > 64))
        return -1;
    for (uint32_t i = 0; i < len; i++) { /* more than 32 processors: a queue per 16 */
        uint64_t one = 0;
        int64_t c = rd64(arr + ARRAY_ITEMS_AT + 8ull * i, &one) ? -1 : queue_count(one);
        if (c < 0)
            return -1;
        a += c;
    }
    return a + b;
}

static int pool_threads(uint64_t *threads, uint64_t *blocked) {
    uint64_t pool = 0, counts = 0, word = 0;
    kind *k = &P.k[K_POOL];
    *threads = 0;
    *blocked = 0;
    if (!P.s_instance)
        return 0; /* no pool yet */
    if (rd64(P.s_instance, &pool) || !is(pool, k) || rd64(pool + k->off[0] + P.counts, &counts))
        return -1;
    *threads = (counts >> 16) & 0xffff; /* ThreadCounts: NumExistingThreads, a short at bit 16 */
    /* _numBlockedThreads: a short, the first two bytes read (little-endian) */
    if (!k->off[1] || rd64(pool + k->off[1], &word))
        *blocked = POOL_BLOCKED_UNKNOWN;
    else
        *blocked = (int16_t)(word & 0xffff) > 0 ? (uint64_t)(int16_t)(word & 0xffff) : 0;
    return 0;
}

int pool_state_read(uint64_t *threads, uint64_t *queue, uint64_t *blocked) {
    if (setup() < 0 || roots() < 0)
        return -1;
    int gc_before, gc_after;
    uint64_t seq = P.seq = sampler_gc_seq(&gc_before);
    if (gc_before || seq == UINT64_MAX) /* collections not followed: nothing read is known to be whole */
        return -1;
    int64_t local = local_count(), global = local >= 0 ? global_count() : -1;
    int ok = local >= 0 && global >= 0 && pool_threads(threads, blocked) == 0;
    if (sampler_gc_seq(&gc_after) != seq || gc_after || !ok)
        return -1;
    *queue = (uint64_t)(local + global);
    return 0;
}

void pool_state_flush(void) {
    uint64_t threads = 0, queue = 0, blocked = 0;
    if (pool_state_read(&threads, &queue, &blocked) == 0) {
        REC(ThreadPoolState, threads, queue);
        if (blocked != POOL_BLOCKED_UNKNOWN)
            REC(ThreadPoolBlocked, blocked);
    }
}

void pool_state_reset(void) {
    memset(&P, 0, sizeof P);
}
