/* cb_loader.c: app domains, assemblies, modules, classes: load and unload.
 * Names are resolved at *Finished (an ID is unusable at *Started) and forgotten
 * when the entity is gone (names.h). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "il.h"
#include "rejit.h"
#include "async.h"
#include "sampler.h"

/* ---- app domains, assemblies, modules, classes ---- */

/* An entity's four callbacks: Load started and finished (named when loaded),
 * Unload started (named: still whole; then `unloading`) and finished (then
 * `unloaded`: its name forgotten). */
#define LIFECYCLE(Type, ENTITY, Load, Unload, loaded, unloading, unloaded)       \
    CB_REC(Load##Started, (ICorProfilerCallback *self, Type id), ENTITY(id, 0)) \
    HRESULT cb_##Load##Finished(ICorProfilerCallback *self, Type id, HRESULT hr) { \
        ACTIVE();                                                                \
        REC(Load##Finished, ENTITY(id, SUCCEEDED(hr)), HR(hr));                  \
        if (SUCCEEDED(hr))                                                       \
            loaded;                                                              \
        return S_OK;                                                             \
    }                                                                            \
    HRESULT cb_##Unload##Started(ICorProfilerCallback *self, Type id) {          \
        ACTIVE();                                                                \
        REC(Unload##Started, ENTITY(id, 1));                                     \
        unloading;                                                               \
        return S_OK;                                                             \
    }                                                                            \
    HRESULT cb_##Unload##Finished(ICorProfilerCallback *self, Type id, HRESULT hr) { \
        ACTIVE();                                                                \
        REC(Unload##Finished, ENTITY(id, 0), HR(hr));                            \
        unloaded;                                                                \
        return S_OK;                                                             \
    }

LIFECYCLE(AppDomainID, APPDOMAIN, AppDomainCreation, AppDomainShutdown, (void)0, (void)0,
          names_forget(NAMES_APPDOMAIN, id))
LIFECYCLE(AssemblyID, ASSEMBLY, AssemblyLoad, AssemblyUnload, (void)0, (void)0, names_forget(NAMES_ASSEMBLY, id))
LIFECYCLE(ModuleID, MODULE, ModuleLoad, ModuleUnload, rejit_module_loaded(id),
          (sampler_code_unloaded(), rejit_module_unloading(id), async_module_unloading(id)),
          (names_forget_module(id), il_forget_module(id)))

CB_REC(ModuleAttachedToAssembly, (ICorProfilerCallback *self, ModuleID module, AssemblyID assembly),
       MODULE(module, 1), ASSEMBLY(assembly, 1))

LIFECYCLE(ClassID, CLASS, ClassLoad, ClassUnload, (void)0, (void)0, names_forget(NAMES_CLASS, id))

HRESULT cb_FunctionUnloadStarted(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(FunctionUnloadStarted, FUNCTION(id, 1));
    names_forget(NAMES_FUNCTION, id);
    return S_OK;
}

