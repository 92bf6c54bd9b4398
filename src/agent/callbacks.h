/* callbacks.h: what the callback files share: the prototype of every callback
 * (cb_<Name>, generated from callback.def: the vtable in profiler.c takes them
 * all, so a missing one fails the build), and the recording helpers. */
#ifndef DNP_CALLBACKS_H
#define DNP_CALLBACKS_H

#include "agent.h"
#include "names.h"
#include "recorder.h"

#define DNP_CALLBACK(ver, name, params) HRESULT cb_##name params;
#include "callback.def"
#undef DNP_CALLBACK


#define ACTIVE()                                                                 \
    do {                                                                         \
        (void)self;                                                              \
        if (!atomic_load_explicit(&g_agent.active, memory_order_relaxed))        \
            return S_OK;                                                         \
    } while (0)

/* Records an event; the value count is checked against events.def at compile time. */
#define REC(kind, ...)                                                           \
    do {                                                                         \
        const uint64_t v_[] = {__VA_ARGS__};                                     \
        _Static_assert(sizeof v_ / sizeof v_[0] == DNP_NV_##kind, #kind);        \
        rec_event(DNP_EV_##kind, v_, sizeof v_ / sizeof v_[0]);                  \
    } while (0)
#define REC0(kind)                                                               \
    do {                                                                         \
        _Static_assert(DNP_NV_##kind == 0, #kind);                               \
        rec_event(DNP_EV_##kind, NULL, 0);                                       \
    } while (0)

/* A callback that records its event and does nothing else: params is its
 * parameter list (callback.def's, self first), the rest the event's values. */
#define CB_REC(name, params, ...)                                                \
    HRESULT cb_##name params {                                                   \
        ACTIVE();                                                                \
        REC(name, __VA_ARGS__);                                                  \
        return S_OK;                                                             \
    }
/* The same for a callback that has no parameter but self and an event with no values. */
#define CB_REC0(name)                                                            \
    HRESULT cb_##name(ICorProfilerCallback *self) {                              \
        ACTIVE();                                                                \
        REC0(name);                                                              \
        return S_OK;                                                             \
    }

/* An entity field: its ID and the number of its name (resolve: 0 = cache only). */
#define ENT(kind, id, resolve) (uint64_t)(id), (uint64_t)names_get(kind, (id), (resolve))
#define APPDOMAIN(id, r) ENT(NAMES_APPDOMAIN, id, r)
#define ASSEMBLY(id, r) ENT(NAMES_ASSEMBLY, id, r)
#define MODULE(id, r) ENT(NAMES_MODULE, id, r)
#define CLASS(id, r) ENT(NAMES_CLASS, id, r)
#define FUNCTION(id, r) ENT(NAMES_FUNCTION, id, r)
#define HR(hr) (uint64_t)(uint32_t)(hr)


#endif
