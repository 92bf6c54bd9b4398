/* attach.c: a profiler attached to a running process (seed 003): the callbacks
 * of ICorProfilerCallback3. */
#include <string.h>

#include "callbacks.h"

HRESULT cb_InitializeForAttach(ICorProfilerCallback *self, IUnknown *pCorProfilerInfoUnk,
                               void *pvClientData, UINT cbClientData) {
    (void)self;
    (void)pvClientData;
    (void)cbClientData;
    agent_config cfg;
    config_from_env(&cfg);
    return agent_start(pCorProfilerInfoUnk, &cfg, 1);
}

HRESULT cb_ProfilerAttachComplete(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ProfilerAttachComplete);
    return S_OK;
}

HRESULT cb_ProfilerDetachSucceeded(ICorProfilerCallback *self) {
    ACTIVE();
    REC0(ProfilerDetachSucceeded);
    atomic_store(&g_agent.active, 0);
    recorder_close();
    return S_OK;
}
