/* entry.c: the only symbols libdnprof.so exports (exports.map): the COM entry
 * points the runtime calls after dlopen (RUNTIME-FACTS "Loading the agent"). */
#include "profiler.h"
#include "session.h"

#define EXPORT __attribute__((visibility("default")))

static HRESULT factory_QueryInterface(IClassFactory *self, REFIID riid, void **ppv) {
    if (!ppv)
        return E_POINTER;
    if (dnp_guid_equal(riid, &IID_IUnknown) || dnp_guid_equal(riid, &IID_IClassFactory)) {
        *ppv = self;
        return S_OK;
    }
    *ppv = NULL;
    return E_NOINTERFACE;
}

/* The factory is static: counting its references would change nothing. */
static ULONG factory_AddRef(IClassFactory *self) {
    (void)self;
    return 2;
}

static ULONG factory_Release(IClassFactory *self) {
    (void)self;
    return 1;
}

static HRESULT factory_CreateInstance(IClassFactory *self, IUnknown *outer, REFIID riid, void **ppv) {
    (void)self;
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (outer)
        return CLASS_E_NOAGGREGATION;
    return agent_create(riid, ppv);
}

static HRESULT factory_LockServer(IClassFactory *self, BOOL lock) {
    (void)self;
    (void)lock;
    return S_OK;
}

static const IClassFactoryVtbl factory_vtbl = {
    factory_QueryInterface, factory_AddRef, factory_Release, factory_CreateInstance,
    factory_LockServer,
};
static IClassFactory factory = {&factory_vtbl};

EXPORT HRESULT DllGetClassObject(REFCLSID rclsid, REFIID riid, void **ppv) {
    GUID ours;
    if (!ppv)
        return E_POINTER;
    *ppv = NULL;
    if (dnp_guid_parse(DNP_CLSID_TEXT, &ours) < 0 || !dnp_guid_equal(rclsid, &ours)) {
        char got[40];
        dnp_guid_format(rclsid, got);
        agent_say("asked for profiler %s, but this is dnprof %s; set CORECLR_PROFILER=%s", got,
                  DNP_CLSID_TEXT, DNP_CLSID_TEXT);
        return CLASS_E_CLASSNOTAVAILABLE;
    }
    return factory_QueryInterface(&factory, riid, ppv);
}

/* The agent keeps threads and state for the life of the process. */
EXPORT HRESULT DllCanUnloadNow(void) {
    return S_FALSE;
}
