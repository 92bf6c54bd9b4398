/* alloc_sampling.c: sampled allocations through the runtime's own sampling
 * (alloc_sampling.h, docs/alloc.md).
 *
 * Payloads (dotnet/runtime src/coreclr/vm/ClrEtwAll.man, little-endian, packed):
 *   AllocationSampled (303, .NET 10): u32 AllocationKind, u16 ClrInstanceID,
 *     ptr TypeID, UTF-16 TypeName (NUL-terminated), [u32 HeapIndex in the
 *     design draft, not in the shipped runtime: told apart by what is left],
 *     ptr Address, u64 ObjectSize, u64 SampledByteOffset
 *   AllocationTick (10, V2..V4): u32 AllocationAmount, u32 AllocationKind,
 *     u16 ClrInstanceID, u64 AllocationAmount64, ptr TypeID, UTF-16 TypeName,
 *     u32 HeapIndex, [V3: ptr Address], [V4: u64 ObjectSize]
 *
 * The event comes on the allocating thread, inside the allocation. Per event the
 * agent reads the payload, finds the type's name number in a per-thread cache by
 * TypeID (the agent's own name for the ClassID, not the payload's TypeName: one
 * type, one name in every event), and the stack's string number in a per-thread
 * cache by a hash of the frames; only a miss resolves names (the metadata) and
 * interns a string. No
 * malloc, no lock on a hit. The runtime's in-process (synchronous) session gives
 * no frames on .NET 10 (numStackFrames is 0), so the stack is then a
 * DoStackSnapshot of the allocating thread, made inside the callback. */
#include "alloc_sampling.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agg.h"
#include "callbacks.h"
#include "eventpipe.h"
#include "names.h"
#include "recorder.h"
#include "stack.h"
#include "thread_mem.h"
#include "utf16.h"
#include "windows.h"

#define EVENT_ALLOCATION_TICK 10u
#define EVENT_ALLOCATION_SAMPLED 303u
#define COR_PRF_ENABLE_STACK_SNAPSHOT 0x10000000u
#define MEAN_BYTES 102400u /* the runtime's mean sampling distance (and AllocationTick's step) */

#define SOURCE_SAMPLED 1u
#define SOURCE_TICK 2u

#define TYPE_SLOTS 256

static unsigned g_source; /* SOURCE_* */

/* Aggregation: samples add up per (type, stack, kind) in striped tables (agg.h),
 * written out as AllocSite events by the thread that finds its table a second
 * old or FLUSH_SAMPLES samples full, and all of them at Shutdown, at a detach
 * and at exit. */
#define FLUSH_SAMPLES 4096

typedef struct site {
    uint32_t used, type, stack, kind;
    uint64_t samples, weight, size, objects_milli;
} site;

AGG_DEFINE(g_agg, site, FLUSH_SAMPLES);

static int g_each; /* DNP_ENV_ALLOC_EACH=1: one AllocSample per sample */
static int g_forced_tick; /* DNP_ENV_ALLOC_SOURCE=tick */
static atomic_uint g_gen; /* a new session (a new trace after an attach): the type cache is stale */

/* This thread's names of the types it allocates (thread_mem.h). */
typedef struct alloc_tls {
    struct {
        uint64_t type_id;
        unsigned epoch; /* names_epoch(NAMES_CLASS) when named */
        uint32_t sid;
    } types[TYPE_SLOTS];
} alloc_tls;
static __thread thread_mem_slot t_mem;

static void on_event(const ep_event *e);
static void on_started(void);

static unsigned stale(void) {
    return agg_flush_stale(&g_agg);
}

static ep_consumer g_consumer = {"sampled allocations", 0, 0, on_event, on_started, alloc_flush_all, NULL, NULL,
                                 stale};

void alloc_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    if (!cfg->alloc)
        return;
    g_forced_tick = cfg->alloc_tick;
    g_each = cfg->alloc_each;
    g_source = ep_runtime_major() >= 10 && !g_forced_tick ? SOURCE_SAMPLED : SOURCE_TICK;
    g_consumer.keywords = g_source == SOURCE_SAMPLED ? EP_KEYWORD_ALLOCATION_SAMPLING : EP_KEYWORD_GC;
    g_consumer.level = g_source == SOURCE_SAMPLED ? COR_PRF_EVENTPIPE_INFORMATIONAL : COR_PRF_EVENTPIPE_VERBOSE;
    if (ep_want(&g_consumer, mask_high) == 0)
        *mask |= COR_PRF_ENABLE_STACK_SNAPSHOT; /* the stacks, when the events carry none */
}

static void on_started(void) {
    atomic_fetch_add(&g_gen, 1); /* string numbers are the trace's: cached ones belong to an old one */
    REC(AllocSampling, g_source, MEAN_BYTES);
    window_register_flush(alloc_flush_all); /* windows.h: each window's sums, whole */
    window_register_event(DNP_EV_AllocSite);
}

int alloc_enabled(void) {
    return ep_running(&g_consumer);
}

/* A site's key is a site holding one sample. */
static int site_same(const void *slot, const void *key) {
    const site *a = slot, *k = key;
    return a->type == k->type && a->stack == k->stack && a->kind == k->kind;
}

static void site_add(void *slot, const void *key) {
    site *a = slot;
    const site *k = key;
    a->used = 1;
    a->type = k->type;
    a->stack = k->stack;
    a->kind = k->kind;
    a->samples++;
    a->weight += k->weight;
    a->size += k->size;
    a->objects_milli += k->size ? k->weight * 1000 / k->size : 1000;
}

static void site_write(const void *slot) {
    const site *a = slot;
    REC(AllocSite, a->type, a->stack, a->kind, a->samples, a->weight, a->size, a->objects_milli);
}

void alloc_flush_all(void) {
    agg_flush_all(&g_agg);
}

static void aggregate(uint32_t type, uint32_t stack, uint64_t kind, uint64_t size, uint64_t weight) {
    site k = {1, type, stack, (uint32_t)kind, 1, weight, size, 0};
    uint64_t h = ((uint64_t)type * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)stack * 0xc2b2ae3d27d4eb4full) ^ kind;
    agg_add(&g_agg, h, &k);
}

/* A name from names.c that did not resolve (names.c's fallbacks are "<class 0x...>"
 * and the like, whole or as a generic argument). */
/* The type's name number: the agent's own name for the ClassID (names.c, as
 * ClassLoad, ObjectAllocated and heap snapshots name it), which the callback may
 * resolve (it runs on the allocating thread: the type is loaded); the payload's
 * name only when the ClassID cannot be named. Cached per thread by TypeID with
 * names.c's class epoch, which every unload moves: a TypeID reused after an
 * unload for another type is named again. */
static uint32_t type_sid(alloc_tls *t, uint64_t type_id, const BYTE *name, size_t units) {
    unsigned slot = (unsigned)((type_id >> 4) ^ (type_id >> 12)) & (TYPE_SLOTS - 1);
    unsigned epoch = names_epoch(NAMES_CLASS);
    if (t && type_id && t->types[slot].type_id == type_id && t->types[slot].epoch == epoch && t->types[slot].sid)
        return t->types[slot].sid;
    char text[1536];
    uint32_t sid = 0;
    if (type_id) {
        sid = names_get(NAMES_CLASS, (UINT_PTR)type_id, 0); /* names.c's caches: resolved names only */
        if (!sid) {
            size_t len = names_class_text((ClassID)type_id, text, sizeof text);
            if (!names_class_unresolved(text, len))
                sid = rec_string(text, len);
        }
    }
    if (!sid) {
        WCHAR w[512];
        if (units > 511)
            units = 511;
        memcpy(w, name, units * 2);
        size_t len = dnp_utf16_to_utf8(w, units, text, sizeof text);
        sid = rec_string(text, len);
    }
    if (t && type_id && sid) {
        t->types[slot].type_id = type_id;
        t->types[slot].epoch = epoch;
        t->types[slot].sid = sid;
    }
    return sid;
}

static void on_event(const ep_event *e) {
    ep_reader r = ep_read(e);
    DWORD event_id = e->id, event_version = e->version;
    uint64_t kind, type_id, size = 0, weight;
    const BYTE *name;
    size_t units;
    if (g_source == SOURCE_SAMPLED && event_id == EVENT_ALLOCATION_SAMPLED) {
        kind = ep_get(&r, 4);
        ep_get(&r, 2);
        type_id = ep_get_ptr(&r);
        name = ep_get_wstr(&r, &units);
        if (ep_left(&r) >= 4 + sizeof(void *) + 16)
            ep_get(&r, 4); /* HeapIndex (the design draft's layout) */
        ep_get_ptr(&r);
        size = ep_get(&r, 8);
        uint64_t offset = ep_get(&r, 8);
        if (r.bad)
            return;
        /* the runtime's upscaling: s*q/p + sum(size - offset), p = 1/mean */
        weight = (MEAN_BYTES - 1) + (size > offset ? size - offset : 0);
    } else if (g_source == SOURCE_TICK && event_id == EVENT_ALLOCATION_TICK && event_version >= 2) {
        ep_get(&r, 4);
        kind = ep_get(&r, 4);
        ep_get(&r, 2);
        weight = ep_get(&r, 8);
        type_id = ep_get_ptr(&r);
        name = ep_get_wstr(&r, &units);
        ep_get(&r, 4);
        if (event_version >= 4) {
            ep_get_ptr(&r);
            size = ep_get(&r, 8);
        }
        if (r.bad)
            return;
    } else {
        return;
    }
    /* NULL: named without the cache */
    alloc_tls *t = thread_mem(&t_mem, sizeof *t, atomic_load_explicit(&g_gen, memory_order_relaxed));
    uint32_t type = type_sid(t, type_id, name, units);
    uint32_t stack = stack_sid_here(e->nframes, e->frames);
    if (g_each)
        REC(AllocSample, type, size, weight, kind, stack);
    else
        aggregate(type, stack, kind, size, weight);
}
