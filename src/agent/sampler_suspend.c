/* sampler_suspend.c: suspend mode (sampler.h): every period, SuspendRuntime,
 * DoStackSnapshot of every managed thread, ResumeRuntime (the runtime's own
 * way, for comparison); the frames are named once the runtime runs again. */
#include "sampler_internal.h"

#include "callbacks.h"

/* ICorProfilerThreadEnum (corprof.idl). */
typedef struct thread_enum_vtbl {
    DNP_ENUM_SLOTS(ICorProfilerThreadEnum, ThreadID)
} thread_enum_vtbl;
struct ICorProfilerThreadEnum {
    const thread_enum_vtbl *lpVtbl;
};

#define SUSPEND_THREADS 256

typedef struct snap {
    uint32_t n;
    uint64_t func[MAX_DEPTH], ip[MAX_DEPTH];
} snap;

static snap g_snaps[SUSPEND_THREADS];
static uint32_t g_snap_tid[SUSPEND_THREADS];

static HRESULT snap_frame(FunctionID func, UINT_PTR ip, COR_PRF_FRAME_INFO fi, ULONG32 size, BYTE *ctx,
                          void *data) {
    (void)fi;
    (void)size;
    (void)ctx;
    snap *s = data;
    if (s->n < MAX_DEPTH) {
        s->func[s->n] = func;
        s->ip[s->n++] = ip;
    }
    return S_OK;
}

void sampler_suspend_sample(void) {
    if (!g_agent.info || FAILED(g_agent.info->lpVtbl->SuspendRuntime(g_agent.info)))
        return;
    ICorProfilerThreadEnum *en = NULL;
    uint32_t count = 0;
    if (SUCCEEDED(INFO_CALL(EnumThreads, &en)) && en) {
        ThreadID ids[64];
        ULONG got = 0;
        while (count < SUSPEND_THREADS && SUCCEEDED(en->lpVtbl->Next(en, 64, ids, &got)) && got > 0 &&
               got <= 64) {
            for (ULONG i = 0; i < got && count < SUSPEND_THREADS; i++) {
                DWORD tid = 0;
                if (FAILED(INFO_CALL(GetThreadInfo, ids[i], &tid)) || !tid)
                    continue;
                snap *s = &g_snaps[count];
                s->n = 0;
                if (SUCCEEDED(INFO_CALL(DoStackSnapshot, ids[i], snap_frame, 0, s, NULL, 0)) && s->n)
                    g_snap_tid[count++] = tid;
            }
        }
        en->lpVtbl->Release(en);
    }
    g_agent.info->lpVtbl->ResumeRuntime(g_agent.info);
    /* names only now: the threads that hold the runtime's locks run again */
    for (uint32_t k = 0; k < count; k++) {
        snap *s = &g_snaps[k];
        uint32_t names[MAX_DEPTH];
        for (uint32_t j = 0; j < s->n; j++) {
            if (s->func[j]) {
                names[j] = names_get(NAMES_FUNCTION, s->func[j], 1);
            } else {
                const ipent *e = sampler_resolve(s->ip[j]);
                s->func[j] = e->func;
                names[j] = e->name;
            }
        }
        sampler_aggregate(g_snap_tid[k], s->func, names, s->n, 1);
    }
}
