/* noop_profiler.c: libdnprof_noop.so, a profiler that does nothing but set an
 * event mask (NOOP_MASK and NOOP_HIGH, hex; 0 by default) and answer every
 * callback with S_OK. bench/bench_fixed.sh loads it with the masks the agent
 * set, to tell what the runtime costs a program for having a profiler with
 * those callbacks from what the agent's own work costs (BENCHMARKS.md, "The
 * fixed cost, fifth round"). Built from the same interface tables as the
 * agent (src/com). Not a test: nothing is recorded. */
#include <stdint.h>
#include <stdlib.h>

#include "com.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct noop {
    const ICorProfilerCallbackVtbl *lpVtbl;
} noop;

static void *slots[DNP_CALLBACK_SLOTS];
static noop the_profiler;

/* Every callback: its arguments ignored (the caller cleans the stack). */
static long answer_ok(void) {
    return 0;
}

static HRESULT query(ICorProfilerCallback *self, REFIID riid, void **ppv) {
    (void)riid; /* every version of the callback interface */
    *ppv = self;
    return S_OK;
}

static ULONG keep(ICorProfilerCallback *self) {
    (void)self;
    return 2;
}

static HRESULT initialize(ICorProfilerCallback *self, IUnknown *unk) {
    (void)self;
    ICorProfilerInfo *info = NULL;
    if (unk->lpVtbl->QueryInterface(unk, &IID_ICorProfilerInfo[5], (void **)&info) < 0 || !info)
        return E_FAIL;
    const char *mask = getenv("NOOP_MASK"), *high = getenv("NOOP_HIGH");
    return info->lpVtbl->SetEventMask2(info, mask ? (DWORD)strtoul(mask, NULL, 16) : 0,
                                       high ? (DWORD)strtoul(high, NULL, 16) : 0);
}

static HRESULT factory_query(IClassFactory *self, REFIID riid, void **ppv) {
    (void)riid;
    *ppv = self;
    return S_OK;
}

static ULONG factory_keep(IClassFactory *self) {
    (void)self;
    return 2;
}

static HRESULT factory_create(IClassFactory *self, IUnknown *outer, REFIID riid, void **ppv) {
    (void)self;
    (void)outer;
    (void)riid;
    for (int i = 0; i < DNP_CALLBACK_SLOTS; i++)
        slots[i] = (void *)(uintptr_t)answer_ok;
    slots[0] = (void *)(uintptr_t)query;
    slots[1] = slots[2] = (void *)(uintptr_t)keep;
    slots[3] = (void *)(uintptr_t)initialize; /* Initialize: the first slot after IUnknown's */
    the_profiler.lpVtbl = (const ICorProfilerCallbackVtbl *)(void *)slots;
    *ppv = &the_profiler;
    return S_OK;
}

static HRESULT factory_lock(IClassFactory *self, BOOL lock) {
    (void)self;
    (void)lock;
    return S_OK;
}

static const IClassFactoryVtbl factory_vtbl = {factory_query, factory_keep, factory_keep, factory_create,
                                               factory_lock};
static IClassFactory factory = {&factory_vtbl};

EXPORT HRESULT DllGetClassObject(REFCLSID clsid, REFIID riid, void **ppv) {
    (void)clsid;
    (void)riid;
    *ppv = &factory;
    return S_OK;
}

EXPORT HRESULT DllCanUnloadNow(void) {
    return S_FALSE;
}
