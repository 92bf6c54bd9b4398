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

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "arch/arch.h"
#include "callbacks.h"
#include "names.h"
#include "recorder.h"
#include "session.h"
#include "stack.h"
#include "utf16.h"
#include "windows.h"

#define KEYWORD_GC 0x1ull
#define KEYWORD_ALLOCATION_SAMPLING 0x80000000000ull
#define EVENT_ALLOCATION_TICK 10u
#define EVENT_ALLOCATION_SAMPLED 303u
#define COR_PRF_ENABLE_STACK_SNAPSHOT 0x10000000u
#define MEAN_BYTES 102400u /* the runtime's mean sampling distance (and AllocationTick's step) */

#define SOURCE_SAMPLED 1u
#define SOURCE_TICK 2u

#define STACK_TEXT_MAX 8192
#define TYPE_SLOTS 256
#define STACK_SLOTS 1024

static int g_wanted;        /* --alloc asked for and the runtime can do it */
static atomic_int g_on;     /* the session runs: EventPipe events are samples */
static unsigned g_source;   /* SOURCE_* */
static EVENTPIPE_SESSION g_session;

/* Aggregation: samples add up per (type, stack, kind) in striped tables, each
 * thread using one (threads share a table when there are more of them than
 * tables; its spin lock is held for an add, not for a walk or a lookup). A
 * table is written out as AllocSite events by the thread that finds it a
 * second old or FLUSH_SAMPLES samples full, and all of them at Shutdown, at a
 * detach and at exit. Bounded: AGG_TABLES * AGG_SLOTS slots in all. */
#define AGG_TABLES 64
#define AGG_SLOTS 256
#define AGG_PROBES 8
#define FLUSH_SAMPLES 4096
#define FLUSH_NS 1000000000ull

typedef struct agg_slot {
    uint32_t type, stack, kind, used;
    uint64_t samples, weight, size, objects_milli;
} agg_slot;

typedef struct agg_table {
    atomic_flag lock;
    unsigned pending;
    uint64_t last_flush;
    agg_slot s[AGG_SLOTS];
} agg_table;

static agg_table g_agg[AGG_TABLES];
static atomic_uint g_next_table;
static int g_each; /* DNP_ENV_ALLOC_EACH=1: one AllocSample per sample */
static int g_forced_tick; /* DNP_ENV_ALLOC_SOURCE=tick */
static __thread int t_table = -1;
static atomic_uint g_gen;           /* a new session (a new trace after an attach): caches are stale */
static __thread unsigned t_gen;

static __thread struct {
    uint64_t type_id;
    unsigned epoch; /* names_epoch(NAMES_CLASS) when named */
    uint32_t sid;
} t_types[TYPE_SLOTS];

static __thread struct {
    uint64_t key;
    uint32_t sid;
} t_stacks[STACK_SLOTS];

static int runtime_major(void) {
    USHORT id = 0, major = 0, minor = 0, build = 0, qfe = 0;
    COR_PRF_RUNTIME_TYPE type = 0;
    ULONG len = 0;
    if (FAILED(INFO_CALL(GetRuntimeInformation, &id, &type, &major, &minor, &build, &qfe, 0, &len, NULL)))
        return 0;
    return major;
}

void alloc_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    g_wanted = 0;
    if (!cfg->alloc)
        return;
    if (!AGENT_HAS_INFO(EventPipeStartSession) || !AGENT_HAS_INFO(SetEventMask2)) {
        agent_say("sampled allocations need .NET 5 or later (ICorProfilerInfo12); recording the rest");
        rec_note(1, "sampled allocations not recorded: the runtime has no in-process EventPipe");
        return;
    }
    g_wanted = 1;
    g_forced_tick = cfg->alloc_tick;
    g_each = cfg->alloc_each;
    *mask |= COR_PRF_ENABLE_STACK_SNAPSHOT; /* the stacks, when the events carry none */
    *mask_high |= COR_PRF_HIGH_MONITOR_EVENT_PIPE;
}

int alloc_start(void) {
    if (!g_wanted)
        return 0;
    int major = runtime_major();
    g_source = major >= 10 && !g_forced_tick ? SOURCE_SAMPLED : SOURCE_TICK;
    static const WCHAR provider[] = u"Microsoft-Windows-DotNETRuntime";
    COR_PRF_EVENTPIPE_PROVIDER_CONFIG pc = {
        provider, g_source == SOURCE_SAMPLED ? KEYWORD_ALLOCATION_SAMPLING : KEYWORD_GC,
        g_source == SOURCE_SAMPLED ? COR_PRF_EVENTPIPE_INFORMATIONAL : COR_PRF_EVENTPIPE_VERBOSE, NULL};
    EVENTPIPE_SESSION session = 0;
    atomic_fetch_add(&g_gen, 1); /* string numbers are the trace's: cached ones belong to an old one */
    /* on before the session starts: its first events may come before it returns */
    atomic_store(&g_on, 1);
    HRESULT hr = INFO_CALL(EventPipeStartSession, 1, &pc, 0, &session);
    if (FAILED(hr)) {
        atomic_store(&g_on, 0);
        agent_say("the runtime refused the EventPipe session for sampled allocations (0x%08x); "
                  "recording the rest", (unsigned)hr);
        rec_note(1, "sampled allocations not recorded: EventPipeStartSession failed 0x%08x", (unsigned)hr);
        return -1;
    }
    g_session = session;
    REC(AllocSampling, g_source, MEAN_BYTES);
    window_register_flush(alloc_flush_all); /* windows.h: each window's sums, whole */
    window_register_event(DNP_EV_AllocSite);
    return 0;
}

int alloc_enabled(void) {
    return atomic_load_explicit(&g_on, memory_order_relaxed);
}

static void table_lock(agg_table *t) {
    while (atomic_flag_test_and_set_explicit(&t->lock, memory_order_acquire)) {
    }
}

static void table_unlock(agg_table *t) {
    atomic_flag_clear_explicit(&t->lock, memory_order_release);
}

/* Writes out a locked table's sums and empties it. */
static void table_flush(agg_table *t, uint64_t now) {
    for (unsigned i = 0; i < AGG_SLOTS; i++) {
        agg_slot *a = &t->s[i];
        if (!a->used)
            continue;
        REC(AllocSite, a->type, a->stack, a->kind, a->samples, a->weight, a->size, a->objects_milli);
        memset(a, 0, sizeof *a);
    }
    t->pending = 0;
    t->last_flush = now;
}

void alloc_flush_all(void) {
    uint64_t now = recorder_now();
    for (unsigned i = 0; i < AGG_TABLES; i++) {
        agg_table *t = &g_agg[i];
        table_lock(t);
        if (t->pending)
            table_flush(t, now);
        table_unlock(t);
    }
}

static void aggregate(uint32_t type, uint32_t stack, uint64_t kind, uint64_t size, uint64_t weight) {
    if (t_table < 0)
        t_table = (int)(atomic_fetch_add(&g_next_table, 1) % AGG_TABLES);
    agg_table *t = &g_agg[t_table];
    uint64_t h = ((uint64_t)type * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)stack * 0xc2b2ae3d27d4eb4full) ^ kind;
    unsigned at = (unsigned)(h >> 32) & (AGG_SLOTS - 1);
    uint64_t now = recorder_now();
    table_lock(t);
    agg_slot *a = NULL;
    for (int round = 0; round < 2 && !a; round++) {
        for (unsigned p = 0; p < AGG_PROBES; p++) {
            agg_slot *c = &t->s[(at + p) & (AGG_SLOTS - 1)];
            if (!c->used || (c->type == type && c->stack == stack && c->kind == kind)) {
                a = c;
                break;
            }
        }
        if (!a)
            table_flush(t, now); /* no room near: out with all of it */
    }
    if (a) {
        a->used = 1;
        a->type = type;
        a->stack = stack;
        a->kind = (uint32_t)kind;
        a->samples++;
        a->weight += weight;
        a->size += size;
        a->objects_milli += size ? weight * 1000 / size : 1000;
        t->pending++;
    }
    if (!t->last_flush)
        t->last_flush = now;
    if (t->pending >= FLUSH_SAMPLES || now - t->last_flush >= FLUSH_NS)
        table_flush(t, now);
    table_unlock(t);
}

void alloc_stop(void) {
    if (!atomic_exchange(&g_on, 0))
        return;
    if (g_session && g_agent.info)
        INFO_CALL(EventPipeStopSession, g_session);
    g_session = 0;
    alloc_flush_all();
}

/* ---- the payload ---- */

typedef struct reader {
    const BYTE *p;
    ULONG len, pos;
    int bad;
} reader;

static uint64_t get(reader *r, unsigned n) {
    if (r->bad || r->len - r->pos < n) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)r->p[r->pos + i] << (8 * i);
    r->pos += n;
    return v;
}

/* Skips the UTF-16 string at the reader; returns where it starts and its length
 * in code units. */
static const BYTE *get_wstr(reader *r, size_t *units) {
    const BYTE *s = r->p + r->pos;
    size_t n = 0;
    while (r->len - r->pos >= 2) {
        int end = r->p[r->pos] == 0 && r->p[r->pos + 1] == 0;
        r->pos += 2;
        if (end) {
            *units = n;
            return s;
        }
        n++;
    }
    r->bad = 1;
    *units = 0;
    return s;
}

/* A name from names.c that did not resolve (names.c's fallbacks are "<class 0x...>"
 * and the like, whole or as a generic argument). */
static int unresolved(const char *text, size_t len) {
    return !len || text[0] == '<' || strstr(text, "<<") || strstr(text, " <");
}

/* The type's name number: the agent's own name for the ClassID (names.c, as
 * ClassLoad, ObjectAllocated and heap snapshots name it), which the callback may
 * resolve (it runs on the allocating thread: the type is loaded); the payload's
 * name only when the ClassID cannot be named. Cached per thread by TypeID with
 * names.c's class epoch, which every unload moves: a TypeID reused after an
 * unload for another type is named again. */
static uint32_t type_sid(uint64_t type_id, const BYTE *name, size_t units) {
    unsigned slot = (unsigned)((type_id >> 4) ^ (type_id >> 12)) & (TYPE_SLOTS - 1);
    unsigned epoch = names_epoch(NAMES_CLASS);
    if (type_id && t_types[slot].type_id == type_id && t_types[slot].epoch == epoch && t_types[slot].sid)
        return t_types[slot].sid;
    char text[1536];
    uint32_t sid = 0;
    if (type_id) {
        sid = names_get(NAMES_CLASS, (UINT_PTR)type_id, 0); /* names.c's caches: resolved names only */
        if (!sid) {
            size_t len = names_class_text((ClassID)type_id, text, sizeof text);
            if (!unresolved(text, len))
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
    if (type_id && sid) {
        t_types[slot].type_id = type_id;
        t_types[slot].epoch = epoch;
        t_types[slot].sid = sid;
    }
    return sid;
}

typedef stack_snapshot snapshot;

/* The stack's string number: from the event's frames when the runtime gives
 * them, else from a snapshot of this thread (the runtime's in-process sessions
 * deliver no frames on .NET 10). Innermost frame first. *key_out: the key of
 * the frames found (the same frames, the same key). */
static uint32_t exact_stack_sid(ULONG nframes, const UINT_PTR *frames, uint64_t *key_out) {
    *key_out = 0;
    snapshot s;
    s.n = s.more = 0;
    uint64_t key = 0xcbf29ce484222325ull;
    if (nframes && frames) {
        for (ULONG i = 0; i < nframes && i < STACK_MAX_FRAMES; i++)
            key = (key ^ (uint64_t)frames[i]) * 0x100000001b3ull;
        key ^= nframes;
    } else {
        if (stack_take(&s) != 0 || !s.n)
            return 0;
        for (unsigned i = 0; i < s.n; i++)
            key = (key ^ (uint64_t)s.f[i]) * 0x100000001b3ull;
        key ^= (uint64_t)s.n << 32 | s.more;
    }
    key = (key * 0x9e3779b97f4a7c15ull) | 1;
    *key_out = key;
    unsigned slot = (unsigned)(key >> 40) & (STACK_SLOTS - 1);
    if (t_stacks[slot].key == key)
        return t_stacks[slot].sid;
    if (nframes && frames) {
        for (ULONG i = 0; i < nframes; i++) {
            FunctionID fid = 0;
            if (FAILED(INFO_CALL(GetFunctionFromIP, (LPCBYTE)frames[i], &fid)) || !fid)
                continue; /* a stub or native frame */
            stack_push(&s, fid);
        }
    }
    char text[STACK_TEXT_MAX];
    size_t len = names_frames_text(s.f, s.n, s.more, 512, text, sizeof text);
    uint32_t sid = s.n ? rec_string(text, len) : 0;
    t_stacks[slot].key = key;
    t_stacks[slot].sid = sid;
    return sid;
}

/* ---- the fast way to a stack seen before ----
 *
 * DoStackSnapshot costs about as much as the runtime's event. Most samples come
 * from a stack seen before, so the agent first walks its own thread's frame
 * pointers (return addresses, ~100 ns) and looks the walk up in a per-thread
 * cache of what the snapshot gave for it. That walk alone cannot be the stack:
 * the JIT gives some methods no frame record, and their callers are missing from
 * it, so two stacks can walk the same (a virtual call in a frameless method).
 * So the walk is only a key: a new key takes a snapshot, and every VERIFY_EVERY
 * hits of a key a snapshot checks it; a key seen to stand for two stacks is
 * marked and always snapshot from then on. */
#define VERIFY_EVERY 16
#define WALK_MAX 128

static __thread uintptr_t t_stack_lo, t_stack_hi; /* this thread's stack; 0: not known yet */

static __thread struct {
    uint64_t key, exact; /* the walk's key; the snapshot's key */
    uint32_t sid;
    uint16_t hits;
    uint8_t ambiguous;
} t_walks[STACK_SLOTS];

/* The return addresses of this thread's frames by frame pointer, from here out,
 * every read within the thread's own stack. Needs this file and the callback
 * that calls it built with frame pointers (CMakeLists.txt); libcoreclr keeps them. */
static ULONG fp_walk(UINT_PTR *ips, ULONG cap) {
    if (!t_stack_hi) {
        pthread_attr_t a;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &a) != 0)
            return 0;
        pthread_attr_getstack(&a, &addr, &size);
        pthread_attr_destroy(&a);
        t_stack_lo = (uintptr_t)addr;
        t_stack_hi = t_stack_lo + size;
    }
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    ULONG n = 0;
    while (n < cap && fp >= t_stack_lo && fp <= t_stack_hi - 16 && (fp & 7) == 0) {
        uintptr_t next = ((const uintptr_t *)fp)[ARCH_FRAME_NEXT], ret = ((const uintptr_t *)fp)[ARCH_FRAME_RET];
        if (!ret)
            break;
        ips[n++] = ret;
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

static uint32_t stack_sid(ULONG nframes, const UINT_PTR *frames) {
    uint64_t exact;
    if (nframes && frames)
        return exact_stack_sid(nframes, frames, &exact);
    UINT_PTR ips[WALK_MAX];
    ULONG n = fp_walk(ips, WALK_MAX);
    if (n < 4) /* no walk to speak of: the snapshot, uncached by walk */
        return exact_stack_sid(0, NULL, &exact);
    uint64_t key = 0x9ae16a3b2f90404full ^ n;
    for (ULONG i = 0; i < n; i++)
        key = (key ^ (uint64_t)ips[i]) * 0x100000001b3ull;
    key = (key * 0x9e3779b97f4a7c15ull) | 1;
    unsigned slot = (unsigned)(key >> 40) & (STACK_SLOTS - 1);
    if (t_walks[slot].key == key && !t_walks[slot].ambiguous && ++t_walks[slot].hits % VERIFY_EVERY != 0)
        return t_walks[slot].sid;
    uint32_t sid = exact_stack_sid(0, NULL, &exact);
    if (t_walks[slot].key == key) {
        if (t_walks[slot].exact != exact)
            t_walks[slot].ambiguous = 1;
    } else {
        t_walks[slot].key = key;
        t_walks[slot].exact = exact;
        t_walks[slot].sid = sid;
        t_walks[slot].hits = 0;
        t_walks[slot].ambiguous = 0;
    }
    return sid;
}

void alloc_event(DWORD event_id, DWORD event_version, ULONG data_len, const BYTE *data, ULONG nframes,
                 const UINT_PTR *frames) {
    reader r = {data, data_len, 0, 0};
    uint64_t kind, type_id, size = 0, weight;
    const BYTE *name;
    size_t units;
    if (g_source == SOURCE_SAMPLED && event_id == EVENT_ALLOCATION_SAMPLED) {
        kind = get(&r, 4);
        get(&r, 2);
        type_id = get(&r, sizeof(void *));
        name = get_wstr(&r, &units);
        if (!r.bad && r.len - r.pos >= 4 + sizeof(void *) + 16)
            get(&r, 4); /* HeapIndex (the design draft's layout) */
        get(&r, sizeof(void *));
        size = get(&r, 8);
        uint64_t offset = get(&r, 8);
        if (r.bad)
            return;
        /* the runtime's upscaling: s*q/p + sum(size - offset), p = 1/mean */
        weight = (MEAN_BYTES - 1) + (size > offset ? size - offset : 0);
    } else if (g_source == SOURCE_TICK && event_id == EVENT_ALLOCATION_TICK && event_version >= 2) {
        get(&r, 4);
        kind = get(&r, 4);
        get(&r, 2);
        weight = get(&r, 8);
        type_id = get(&r, sizeof(void *));
        name = get_wstr(&r, &units);
        get(&r, 4);
        if (event_version >= 4) {
            get(&r, sizeof(void *));
            size = get(&r, 8);
        }
        if (r.bad)
            return;
    } else {
        return;
    }
    unsigned gen = atomic_load_explicit(&g_gen, memory_order_relaxed);
    if (t_gen != gen) {
        memset(t_types, 0, sizeof t_types);
        memset(t_stacks, 0, sizeof t_stacks);
        memset(t_walks, 0, sizeof t_walks);
        t_gen = gen;
    }
    uint32_t type = type_sid(type_id, name, units);
    uint32_t stack = stack_sid(nframes, frames);
    if (g_each)
        REC(AllocSample, type, size, weight, kind, stack);
    else
        aggregate(type, stack, kind, size, weight);
}
