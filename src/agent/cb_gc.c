/* cb_gc.c: GC and the heap. Arrays the runtime passes are summarised as their
 * count and total (the heap graph is a later feature). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "sampler.h"
#include "heap.h"

/* ---- GC and the heap ---- */

/* The total of n lengths (ULONG in the V1 callbacks, SIZE_T in their V2 twins). */
#define SUM_OF(T)                                                                \
    static uint64_t sum_##T(const T *a, ULONG n) {                               \
        uint64_t s = 0;                                                          \
        for (ULONG i = 0; a && i < n; i++)                                       \
            s += a[i];                                                           \
        return s;                                                                \
    }
SUM_OF(ULONG)
SUM_OF(SIZE_T)

/* Moved and surviving object ranges: their count and total length. */
#define MOVED(name, T)                                                           \
    HRESULT cb_##name(ICorProfilerCallback *self, ULONG n, ObjectID *old_start,  \
                      ObjectID *new_start, T *len) {                             \
        ACTIVE();                                                                \
        (void)old_start;                                                         \
        (void)new_start;                                                         \
        REC(name, n, sum_##T(len, n));                                           \
        return S_OK;                                                             \
    }
#define SURVIVING(name, T)                                                       \
    HRESULT cb_##name(ICorProfilerCallback *self, ULONG n, ObjectID *start, T *len) { \
        ACTIVE();                                                                \
        (void)start;                                                             \
        REC(name, n, sum_##T(len, n));                                           \
        return S_OK;                                                             \
    }
MOVED(MovedReferences, ULONG)
MOVED(MovedReferences2, SIZE_T)
SURVIVING(SurvivingReferences, ULONG)
SURVIVING(SurvivingReferences2, SIZE_T)

CB_REC(ObjectAllocated, (ICorProfilerCallback *self, ObjectID object, ClassID cls), object, CLASS(cls, 1))

HRESULT cb_ObjectsAllocatedByClass(ICorProfilerCallback *self, ULONG n, ClassID *classes,
                                       ULONG *counts) {
    ACTIVE();
    (void)classes;
    REC(ObjectsAllocatedByClass, n, sum_ULONG(counts, n));
    return S_OK;
}

HRESULT cb_ObjectReferences(ICorProfilerCallback *self, ObjectID object, ClassID cls, ULONG n,
                                ObjectID *refs) {
    if (atomic_load_explicit(&heap_capturing, memory_order_relaxed)) {
        heap_object(object, cls, n, refs);
        return S_OK;
    }
    ACTIVE();
    (void)refs;
    REC(ObjectReferences, object, CLASS(cls, 1), n);
    return S_OK;
}

HRESULT cb_RootReferences(ICorProfilerCallback *self, ULONG n, ObjectID *refs) {
    ACTIVE();
    (void)refs;
    REC(RootReferences, n);
    return S_OK;
}

HRESULT cb_RootReferences2(ICorProfilerCallback *self, ULONG n, ObjectID *refs,
                               COR_PRF_GC_ROOT_KIND *kinds, COR_PRF_GC_ROOT_FLAGS *flags,
                               UINT_PTR *ids) {
    if (atomic_load_explicit(&heap_capturing, memory_order_relaxed)) {
        heap_roots(n, refs, kinds, flags, ids);
        return S_OK;
    }
    ACTIVE();
    (void)refs;
    (void)kinds;
    (void)flags;
    (void)ids;
    REC(RootReferences2, n);
    return S_OK;
}

HRESULT cb_GarbageCollectionStarted(ICorProfilerCallback *self, int n, BOOL *collected,
                                        COR_PRF_GC_REASON reason) {
    heap_gc_started(n, collected, (int)reason);
    sampler_gc_started(n, collected);
    ACTIVE();
    if (!(g_agent.events.mask & COR_PRF_MONITOR_GC))
        return S_OK; /* asked for by sampling's [GC] frames only (COR_PRF_HIGH_BASIC_GC) */
    uint64_t gens = 0;
    for (int i = 0; collected && i < n && i < 64; i++)
        if (collected[i])
            gens |= 1ull << i;
    REC(GarbageCollectionStarted, gens, (uint64_t)(uint32_t)reason);
    return S_OK;
}

HRESULT cb_GarbageCollectionFinished(ICorProfilerCallback *self) {
    heap_gc_finished();
    sampler_gc_finished();
    ACTIVE();
    if (!(g_agent.events.mask & COR_PRF_MONITOR_GC))
        return S_OK;
    REC0(GarbageCollectionFinished);
    return S_OK;
}

HRESULT cb_FinalizeableObjectQueued(ICorProfilerCallback *self, DWORD flags, ObjectID object) {
    ACTIVE();
    ClassID cls = 0;
    uint32_t name = names_object_class(object, &cls);
    REC(FinalizeableObjectQueued, object, cls, name, flags);
    return S_OK;
}

CB_REC(HandleCreated, (ICorProfilerCallback *self, GCHandleID handle, ObjectID object), handle, object)

CB_REC(HandleDestroyed, (ICorProfilerCallback *self, GCHandleID handle), handle)

HRESULT cb_ConditionalWeakTableElementReferences(ICorProfilerCallback *self, ULONG n,
                                                     ObjectID *keys, ObjectID *values,
                                                     GCHandleID *ids) {
    if (atomic_load_explicit(&heap_capturing, memory_order_relaxed)) {
        heap_deps(n, keys, values, ids);
        return S_OK;
    }
    ACTIVE();
    (void)keys;
    (void)values;
    (void)ids;
    REC(ConditionalWeakTableElementReferences, n);
    return S_OK;
}

