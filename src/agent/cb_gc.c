/* cb_gc.c: GC and the heap. Arrays the runtime passes are summarised as their
 * count and total (the heap graph is a later feature). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "heap.h"

/* ---- GC and the heap ---- */

static uint64_t sum_ulong(const ULONG *a, ULONG n) {
    uint64_t s = 0;
    for (ULONG i = 0; a && i < n; i++)
        s += a[i];
    return s;
}

static uint64_t sum_size(const SIZE_T *a, ULONG n) {
    uint64_t s = 0;
    for (ULONG i = 0; a && i < n; i++)
        s += a[i];
    return s;
}

HRESULT cb_MovedReferences(ICorProfilerCallback *self, ULONG n, ObjectID *old_start,
                               ObjectID *new_start, ULONG *len) {
    ACTIVE();
    (void)old_start;
    (void)new_start;
    REC(MovedReferences, n, sum_ulong(len, n));
    return S_OK;
}

HRESULT cb_MovedReferences2(ICorProfilerCallback *self, ULONG n, ObjectID *old_start,
                                ObjectID *new_start, SIZE_T *len) {
    ACTIVE();
    (void)old_start;
    (void)new_start;
    REC(MovedReferences2, n, sum_size(len, n));
    return S_OK;
}

HRESULT cb_SurvivingReferences(ICorProfilerCallback *self, ULONG n, ObjectID *start, ULONG *len) {
    ACTIVE();
    (void)start;
    REC(SurvivingReferences, n, sum_ulong(len, n));
    return S_OK;
}

HRESULT cb_SurvivingReferences2(ICorProfilerCallback *self, ULONG n, ObjectID *start,
                                    SIZE_T *len) {
    ACTIVE();
    (void)start;
    REC(SurvivingReferences2, n, sum_size(len, n));
    return S_OK;
}

HRESULT cb_ObjectAllocated(ICorProfilerCallback *self, ObjectID object, ClassID cls) {
    ACTIVE();
    REC(ObjectAllocated, object, CLASS(cls, 1));
    return S_OK;
}

HRESULT cb_ObjectsAllocatedByClass(ICorProfilerCallback *self, ULONG n, ClassID *classes,
                                       ULONG *counts) {
    ACTIVE();
    (void)classes;
    REC(ObjectsAllocatedByClass, n, sum_ulong(counts, n));
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
    ACTIVE();
    uint64_t gens = 0;
    for (int i = 0; collected && i < n && i < 64; i++)
        if (collected[i])
            gens |= 1ull << i;
    REC(GarbageCollectionStarted, gens, (uint64_t)(uint32_t)reason);
    return S_OK;
}

HRESULT cb_GarbageCollectionFinished(ICorProfilerCallback *self) {
    heap_gc_finished();
    ACTIVE();
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

HRESULT cb_HandleCreated(ICorProfilerCallback *self, GCHandleID handle, ObjectID object) {
    ACTIVE();
    REC(HandleCreated, handle, object);
    return S_OK;
}

HRESULT cb_HandleDestroyed(ICorProfilerCallback *self, GCHandleID handle) {
    ACTIVE();
    REC(HandleDestroyed, handle);
    return S_OK;
}

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

