/* cb_loader.c: app domains, assemblies, modules, classes: load and unload.
 * Names are resolved at *Finished (an ID is unusable at *Started) and forgotten
 * when the entity is gone (names.h). */
#include <stdio.h>
#include <string.h>

#include "callbacks.h"
#include "sampler.h"

/* ---- app domains, assemblies, modules, classes ---- */

HRESULT cb_AppDomainCreationStarted(ICorProfilerCallback *self, AppDomainID id) {
    ACTIVE();
    REC(AppDomainCreationStarted, APPDOMAIN(id, 0));
    return S_OK;
}

HRESULT cb_AppDomainCreationFinished(ICorProfilerCallback *self, AppDomainID id, HRESULT hr) {
    ACTIVE();
    REC(AppDomainCreationFinished, APPDOMAIN(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

HRESULT cb_AppDomainShutdownStarted(ICorProfilerCallback *self, AppDomainID id) {
    ACTIVE();
    REC(AppDomainShutdownStarted, APPDOMAIN(id, 1));
    return S_OK;
}

HRESULT cb_AppDomainShutdownFinished(ICorProfilerCallback *self, AppDomainID id, HRESULT hr) {
    ACTIVE();
    REC(AppDomainShutdownFinished, APPDOMAIN(id, 0), HR(hr));
    names_forget(NAMES_APPDOMAIN, id);
    return S_OK;
}

HRESULT cb_AssemblyLoadStarted(ICorProfilerCallback *self, AssemblyID id) {
    ACTIVE();
    REC(AssemblyLoadStarted, ASSEMBLY(id, 0));
    return S_OK;
}

HRESULT cb_AssemblyLoadFinished(ICorProfilerCallback *self, AssemblyID id, HRESULT hr) {
    ACTIVE();
    REC(AssemblyLoadFinished, ASSEMBLY(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

HRESULT cb_AssemblyUnloadStarted(ICorProfilerCallback *self, AssemblyID id) {
    ACTIVE();
    REC(AssemblyUnloadStarted, ASSEMBLY(id, 1));
    return S_OK;
}

HRESULT cb_AssemblyUnloadFinished(ICorProfilerCallback *self, AssemblyID id, HRESULT hr) {
    ACTIVE();
    REC(AssemblyUnloadFinished, ASSEMBLY(id, 0), HR(hr));
    names_forget(NAMES_ASSEMBLY, id);
    return S_OK;
}

HRESULT cb_ModuleLoadStarted(ICorProfilerCallback *self, ModuleID id) {
    ACTIVE();
    REC(ModuleLoadStarted, MODULE(id, 0));
    return S_OK;
}

HRESULT cb_ModuleLoadFinished(ICorProfilerCallback *self, ModuleID id, HRESULT hr) {
    ACTIVE();
    REC(ModuleLoadFinished, MODULE(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

HRESULT cb_ModuleUnloadStarted(ICorProfilerCallback *self, ModuleID id) {
    ACTIVE();
    REC(ModuleUnloadStarted, MODULE(id, 1));
    sampler_code_unloaded();
    return S_OK;
}

HRESULT cb_ModuleUnloadFinished(ICorProfilerCallback *self, ModuleID id, HRESULT hr) {
    ACTIVE();
    REC(ModuleUnloadFinished, MODULE(id, 0), HR(hr));
    names_forget_module(id);
    return S_OK;
}

HRESULT cb_ModuleAttachedToAssembly(ICorProfilerCallback *self, ModuleID module,
                                        AssemblyID assembly) {
    ACTIVE();
    REC(ModuleAttachedToAssembly, MODULE(module, 1), ASSEMBLY(assembly, 1));
    return S_OK;
}

HRESULT cb_ClassLoadStarted(ICorProfilerCallback *self, ClassID id) {
    ACTIVE();
    REC(ClassLoadStarted, CLASS(id, 0));
    return S_OK;
}

HRESULT cb_ClassLoadFinished(ICorProfilerCallback *self, ClassID id, HRESULT hr) {
    ACTIVE();
    REC(ClassLoadFinished, CLASS(id, SUCCEEDED(hr)), HR(hr));
    return S_OK;
}

HRESULT cb_ClassUnloadStarted(ICorProfilerCallback *self, ClassID id) {
    ACTIVE();
    REC(ClassUnloadStarted, CLASS(id, 1));
    return S_OK;
}

HRESULT cb_ClassUnloadFinished(ICorProfilerCallback *self, ClassID id, HRESULT hr) {
    ACTIVE();
    REC(ClassUnloadFinished, CLASS(id, 0), HR(hr));
    names_forget(NAMES_CLASS, id);
    return S_OK;
}

HRESULT cb_FunctionUnloadStarted(ICorProfilerCallback *self, FunctionID id) {
    ACTIVE();
    REC(FunctionUnloadStarted, FUNCTION(id, 1));
    names_forget(NAMES_FUNCTION, id);
    return S_OK;
}

