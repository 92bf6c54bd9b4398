/* rejit.c: traced methods (rejit.h, docs/calls.md#tracing-chosen-methods-rejit).
 *
 * Finding them: every method of a loaded module (the modules there at the
 * attach, then each one as it loads) whose Namespace.Class::Method matches one
 * of the patterns (the matcher of --include), that has IL (an RVA), gets an id
 * (its slot in a fixed table) and is asked for in one RequestReJITWithInliners
 * (COR_PRF_REJIT_BLOCK_INLINING: the runtime re-JITs the callers that had
 * inlined it too and inlines it no more; RequestReJIT before ICorProfilerInfo10).
 *
 * Rewriting them: at GetReJITParameters, the original body (GetILFunctionBody)
 * goes through il_rewrite.c with the two calli signatures made when the module
 * was searched and the extended locals' signature made then and there
 * (IMetaDataEmit::GetTokenFromSig, the one metadata change a ReJIT may make at
 * that point), and the result to ICorProfilerFunctionControl::SetILFunctionBody.
 *
 * Counting: the probes below are plain C, called through `calli unmanaged
 * cdecl` with their address as a constant. enter returns the clock, with the
 * slot of its caller's call site in the low bits (the caller found through the
 * traced method's frame record); exit (in the finally, so also when an
 * exception leaves the method) adds the call, its time, the maximum and a
 * log-linear bucket to the method's slot and to the caller's, with atomic
 * operations: no lock, no allocation, no event per call. A module that
 * unloads keeps its methods' sums; its ModuleID is not used again. */
#include "rejit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bg_thread.h"
#include "callbacks.h"
#include "calls.h"
#include "clock.h"
#include "eventpipe.h"
#include "il_body.h"
#include "il_rewrite.h"
#include "locks.h"
#include "u64map.h"
#include "utf16.h"

#define RJ_MAX 4096    /* traced methods */
#define RJ_BUCKETS DNP_LAT_BUCKETS
#define RJ_NAME 1024
#define RJ_CALLERS 16  /* call sites kept a method; the rest add up in one more slot */
#define RJ_SLOT_BITS 5 /* the slot rides in the start's low bits (RJ_CALLERS + 1 < 32) */

/* --locks from start-up on .NET 9+: System.Threading.Lock reports a contended
 * acquisition (ContentionStart) only once it has given up spinning, so the
 * acquisitions won by spinning, and the spinning of all, are no contention to
 * the runtime. Its slow path, traced, times every one (docs/waits.md): looked
 * for in CoreLib and asked for as the first managed thread starts, on a
 * thread of the agent's (no module loads watched). Not by attach: a profiler
 * that re-JITs cannot detach. */
#define RJ_LOCK_TYPE "System.Threading.Lock"
#define RJ_LOCK_PROBE RJ_LOCK_TYPE "::TryEnterSlow"

enum { ST_ASKED = 1, ST_INSTRUMENTED = 2, ST_FAILED = 3, ST_REVERTED = 4, ST_UNLOADED = 5 };

typedef struct rj_method {
    ModuleID module;
    mdMethodDef token;
    mdSignature enter_sig, exit_sig;
    uint32_t name;  /* the trace's string */
    char *text;     /* the same, for messages */
    int state;
    int for_locks;  /* found by --locks' probe alone, not by a --trace pattern */
    int gone;       /* its module unloaded: its ModuleID may not be used any more */
    HRESULT hr;
    atomic_int said; /* a failure said once */
    _Atomic uint64_t calls, total_ns, max_ns;
    _Atomic uint64_t *hist; /* RJ_BUCKETS */
    struct rj_caller {
        _Atomic uint64_t ip; /* a return address into the caller, 0: free */
        _Atomic uint64_t calls, total_ns;
    } *callers;              /* RJ_CALLERS + 1: the last for the others and the unknown */
} rj_method;

static struct {
    int on;
    int user;      /* --trace patterns given */
    int for_locks; /* --locks' probe (RJ_LOCK_PROBE) wanted */
    atomic_uint lock_id;  /* its method's id + 1, once found */
    atomic_int lock_asked, lock_live; /* asked for; its probe has run */
    dnp_il_probe lock_args; /* its entry's arguments' IL (lock_args; enter_args_len 0: none), under mu */
    char patterns[1024];
    char types[1024]; /* each pattern's part before "::" ("*" without one): types worth a look */
    atomic_int counting, finished;
    pthread_mutex_t mu;  /* the table's growth, the map, the searches */
    dnp_u64map ids;      /* (module, token) -> id + 1 */
    atomic_uint n;
    rj_method m[RJ_MAX];
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- the probes ---- */

/* This thread's stack, for the caller's frame record (0, 0: not known yet;
 * 1, 0: not to be had). */
static __thread uintptr_t t_stack_lo, t_stack_hi;

static int stack_known(void) {
    if (t_stack_hi)
        return t_stack_hi > 1;
    pthread_attr_t a;
    void *base = NULL;
    size_t size = 0;
    t_stack_hi = 1;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return 0;
    if (pthread_attr_getstack(&a, &base, &size) == 0 && base && size) {
        t_stack_lo = (uintptr_t)base;
        t_stack_hi = (uintptr_t)base + size;
    }
    pthread_attr_destroy(&a);
    return t_stack_hi > 1;
}

/* The return address into the traced method's caller, from the traced
 * method's frame record (its frame pointer, saved by this function's own
 * prologue: the JIT gives every method with exception clauses a frame
 * pointer, and the rewrite adds a clause); 0 when the record does not lie on
 * this thread's stack, above this frame. Reads nothing outside the stack. */
__attribute__((noinline)) static uintptr_t caller_ip(void) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (!stack_known() || fp < t_stack_lo || fp + 2 * sizeof(uintptr_t) > t_stack_hi)
        return 0;
    uintptr_t up = *(const uintptr_t *)fp; /* this frame's caller: probe_enter */
    if (up <= fp || up % sizeof(uintptr_t) || up + 2 * sizeof(uintptr_t) > t_stack_hi)
        return 0;
    uintptr_t managed = *(const uintptr_t *)up; /* the traced method's frame */
    if (managed <= up || managed % sizeof(uintptr_t) || managed + 2 * sizeof(uintptr_t) > t_stack_hi)
        return 0;
    return *(const uintptr_t *)(managed + sizeof(uintptr_t));
}

/* The caller slot of ip in m: its own, a free one taken, or the last. */
static unsigned caller_slot(rj_method *m, uintptr_t ip) {
    if (!ip || !m->callers)
        return RJ_CALLERS;
    for (unsigned i = 0; i < RJ_CALLERS; i++) {
        uint64_t cur = atomic_load_explicit(&m->callers[i].ip, memory_order_relaxed);
        if (cur == ip)
            return i;
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong_explicit(&m->callers[i].ip, &zero, ip, memory_order_relaxed,
                                                        memory_order_relaxed) ||
                zero == ip)
                return i;
        }
    }
    return RJ_CALLERS;
}

/* The start: the clock shifted left, the caller's slot in the low bits.
 * Inlined into each probe, so that caller_ip's frame walk starts at the
 * probe's own frame. */
static inline __attribute__((always_inline)) int64_t enter_at(int32_t id, uint64_t owner, int acquisition) {
    uint64_t t = clock_ticks();
    unsigned slot = RJ_CALLERS;
    if ((uint32_t)id < atomic_load_explicit(&R.n, memory_order_acquire) &&
        atomic_load_explicit(&R.counting, memory_order_relaxed)) {
        slot = caller_slot(&R.m[id], caller_ip());
        if ((uint32_t)id + 1 == atomic_load_explicit(&R.lock_id, memory_order_relaxed)) {
            if (!atomic_load_explicit(&R.lock_live, memory_order_relaxed))
                atomic_store_explicit(&R.lock_live, 1, memory_order_relaxed); /* from now on it times Lock */
            if (acquisition)
                locks_probe_enter(owner);
        }
    }
    return (int64_t)(t << RJ_SLOT_BITS | slot);
}

__attribute__((noinline)) static int64_t probe_enter(int32_t id) {
    return enter_at(id, 0, 1);
}

/* Lock's slow path, with what the rewritten IL read as the call starts: the
 * lock's _owningThreadId (the OS thread id of the holder, 0 when free), the
 * call's timeout, and the caller's id (its OS thread id, 0 before its first
 * Lock). Not a contended acquisition, so not one for --locks: a try that
 * fails at once (timeout 0: TryEnter()), a recursive one (the caller holds
 * it), a thread's first Lock that finds it free (the slow path's first step). */
__attribute__((noinline)) static int64_t probe_enter_lock(int32_t id, int32_t owner, int32_t timeout, int32_t self) {
    int acquisition = timeout != 0 && !(owner && owner == self) && !(self == 0 && owner == 0);
    return enter_at(id, (uint32_t)owner, acquisition);
}

static void probe_exit(int32_t id, int64_t start) {
    uint64_t end = clock_ticks();
    if ((uint32_t)id >= atomic_load_explicit(&R.n, memory_order_acquire) ||
        !atomic_load_explicit(&R.counting, memory_order_relaxed))
        return;
    rj_method *m = &R.m[id];
    unsigned slot = (unsigned)((uint64_t)start & ((1u << RJ_SLOT_BITS) - 1));
    uint64_t mask = ~(uint64_t)((1u << RJ_SLOT_BITS) - 1);
    uint64_t ns = clock_ticks_to_ns(((end << RJ_SLOT_BITS) - ((uint64_t)start & mask)) >> RJ_SLOT_BITS);
    if (m->callers && slot <= RJ_CALLERS) {
        atomic_fetch_add_explicit(&m->callers[slot].calls, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->callers[slot].total_ns, ns, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->total_ns, ns, memory_order_relaxed);
    uint64_t max = atomic_load_explicit(&m->max_ns, memory_order_relaxed);
    while (ns > max && !atomic_compare_exchange_weak_explicit(&m->max_ns, &max, ns, memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
    if (m->hist)
        atomic_fetch_add_explicit(&m->hist[dnp_lat_bucket(ns)], 1, memory_order_relaxed);
    if ((uint32_t)id + 1 == atomic_load_explicit(&R.lock_id, memory_order_relaxed))
        locks_probe_exit(ns); /* its stack and owner (locks.c) */
}

/* ---- start ---- */

void rejit_configure(const agent_config *cfg, uint32_t *mask) {
    snprintf(R.patterns, sizeof R.patterns, "%s", cfg->trace);
    R.user = R.patterns[0] != 0;
    /* from start-up only: a profiler that re-JITs cannot detach; with --every too, each probed call a LockSite */
    R.for_locks = cfg->locks && !g_agent.attached && ep_runtime_major() >= 9;
    R.on = R.user || R.for_locks;
    if (!R.on)
        return;
    size_t n = 0;
    for (const char *p = R.patterns; *p && n + 2 < sizeof R.types;) {
        size_t len = strcspn(p, ","), cut = len;
        for (size_t i = 0; i + 1 < len; i++)
            if (p[i] == ':' && p[i + 1] == ':') {
                cut = i;
                break;
            }
        n += (size_t)snprintf(R.types + n, sizeof R.types - n, "%s%.*s", n ? "," : "",
                              cut == len ? 1 : (int)cut, cut == len ? "*" : p);
        p += len + (p[len] == ',');
    }
    if (R.for_locks && n + sizeof RJ_LOCK_TYPE + 1 < sizeof R.types)
        snprintf(R.types + n, sizeof R.types - n, "%s" RJ_LOCK_TYPE, n ? "," : "");
    /* --locks alone finds CoreLib among the modules when it needs it */
    *mask |= COR_PRF_ENABLE_REJIT | (R.user ? COR_PRF_MONITOR_MODULE_LOADS : 0);
    clock_calibrate(5, 1); /* the probes' ticks become ns from the first call */
    atomic_store(&R.counting, 1);
}

int rejit_enabled(void) {
    return R.on;
}

static void record_method(uint32_t id) {
    rj_method *m = &R.m[id];
    REC(TracedMethod, id, MODULE(m->module, !m->gone), m->token, m->name,
        (uint64_t)m->state | (m->for_locks ? DNP_TRACED_FOR_LOCKS : 0), HR(m->hr));
}

/* A method that stays as it was: said once (on stderr of dnprof, in the trace). */
static void fail(uint32_t id, HRESULT hr, const char *why) {
    rj_method *m = &R.m[id];
    m->state = ST_FAILED;
    m->hr = hr;
    if (atomic_exchange(&m->said, 1))
        return;
    const char *hn = dnp_hresult_name((uint32_t)hr);
    if (m->for_locks) {
        agent_say("--locks: the waits " RJ_LOCK_TYPE " wins by spinning are not timed: %s (%s 0x%08x); the "
                  "runtime's waits are recorded", why, hn ? hn : "HRESULT", (unsigned)hr);
        rec_note(1, "--locks: " RJ_LOCK_PROBE " not traced: %s (0x%08x)", why, (unsigned)hr);
        record_method(id);
        return;
    }
    agent_say("--trace: %s is not traced: %s (%s 0x%08x); it runs unchanged", m->text ? m->text : "?", why,
              hn ? hn : "HRESULT", (unsigned)hr);
    rec_note(1, "--trace: %s is not traced: %s (0x%08x)", m->text ? m->text : "?", why, (unsigned)hr);
    record_method(id);
}

/* ---- searching a module ---- */

typedef struct found {
    ModuleID modules[RJ_MAX];
    mdMethodDef tokens[RJ_MAX];
    uint32_t n;
} found;

/* The calli signatures of the probes in the module's metadata. */
/* The StandAloneSig tokens of n signatures in module's metadata, opened to
 * write once for all of them: 0; -1 when it cannot be written, -2 when a
 * signature is refused. */
static int sig_tokens(ModuleID module, unsigned n, const uint8_t *const sigs[], const size_t lens[], mdSignature *out) {
    IUnknown *unk = NULL;
    if (FAILED(INFO_CALL(GetModuleMetaData, module, 0x1 /* ofWrite */, &IID_IMetaDataEmit, &unk)) || !unk)
        return -1;
    IMetaDataEmit *emit = (IMetaDataEmit *)unk;
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++)
        if (FAILED(emit->lpVtbl->GetTokenFromSig(emit, sigs[i], (ULONG)lens[i], &out[i])))
            rc = -2;
    emit->lpVtbl->Release(emit);
    return rc;
}

static int module_sigs(ModuleID module, mdSignature *enter, mdSignature *exit) {
    const uint8_t *const sigs[2] = {dnp_il_enter_sig, dnp_il_exit_sig};
    const size_t lens[2] = {sizeof dnp_il_enter_sig, sizeof dnp_il_exit_sig};
    mdSignature t[2];
    if (sig_tokens(module, 2, sigs, lens, t) != 0)
        return -1;
    *enter = t[0], *exit = t[1];
    return 0;
}

/* Gives (module, token) an id; its slot, or NULL when known already or full. */
static rj_method *add_method(ModuleID module, mdMethodDef token, const char *name) {
    uint64_t v;
    if (dnp_u64map_get2(&R.ids, module, token, &v))
        return NULL;
    uint32_t id = atomic_load(&R.n);
    if (id >= RJ_MAX) {
        static atomic_int said;
        if (!atomic_exchange(&said, 1))
            agent_say("--trace: more than %d methods match; the rest are not traced", RJ_MAX);
        return NULL;
    }
    if (dnp_u64map_put2(&R.ids, module, token, id + 1, NULL) != 0)
        return NULL;
    rj_method *m = &R.m[id];
    memset(m, 0, sizeof *m);
    m->module = module;
    m->token = token;
    m->name = rec_string(name, strlen(name));
    m->text = strdup(name);
    m->state = ST_ASKED;
    m->hist = calloc(RJ_BUCKETS, sizeof *m->hist);
    m->callers = calloc(RJ_CALLERS + 1, sizeof *m->callers);
    atomic_store_explicit(&R.n, id + 1, memory_order_release);
    return m;
}

/* The methods of type td that match, into f (under R.mu). */
static void search_type(ModuleID module, IMetaDataImport *imp, mdTypeDef td, found *f, mdSignature sigs[2],
                        int *sigs_state) {
    char name[RJ_NAME];
    size_t tl = names_typedef_text(imp, td, name, sizeof name - 256);
    if (!calls_filter_wants(name, 0, R.types, "", 0))
        return; /* no pattern names a method of this type */
    HCORENUM he = NULL;
    mdMethodDef mds[64];
    ULONG k = 0;
    while (SUCCEEDED(imp->lpVtbl->EnumMethods(imp, &he, td, mds, 64, &k)) && k > 0 && k <= 64) {
        for (ULONG i = 0; i < k && f->n < RJ_MAX; i++) {
            WCHAR w[256];
            ULONG len = 0, nsig = 0, rva = 0;
            DWORD attr = 0, impl = 0;
            PCCOR_SIGNATURE sig = NULL;
            mdTypeDef owner = 0;
            if (FAILED(imp->lpVtbl->GetMethodProps(imp, mds[i], &owner, w, 256, &len, &attr, &sig, &nsig, &rva,
                                                   &impl)) || rva == 0)
                continue; /* abstract, extern, runtime-implemented: no IL */
            snprintf(name + tl, sizeof name - tl, "::");
            dnp_utf16_name(w, 256, len, name + tl + 2, sizeof name - tl - 2);
            int user = R.user && calls_filter_wants(name, 0, R.patterns, "", 0);
            if (!user && !(R.for_locks && !strcmp(name, RJ_LOCK_PROBE)))
                continue;
            if (*sigs_state == 0 && user) /* Lock's probe: when it is asked for (rejit_lock_start) */
                *sigs_state = module_sigs(module, &sigs[0], &sigs[1]) == 0 ? 1 : -1;
            rj_method *m = add_method(module, mds[i], name);
            if (!m)
                continue;
            m->enter_sig = sigs[0];
            m->exit_sig = sigs[1];
            if (R.for_locks && !strcmp(name, RJ_LOCK_PROBE)) /* --trace named it too: the same probe */
                atomic_store(&R.lock_id, (uint32_t)(m - R.m) + 1);
            if (!user) {
                m->for_locks = 1;
                m->state = 0; /* not asked for yet */
                continue;
            }
            if (*sigs_state == -2) {
                fail((uint32_t)(m - R.m), E_FAIL, "its module is collectible or dynamic, which the runtime "
                                                  "cannot re-JIT");
                continue;
            }
            if (*sigs_state < 0) {
                fail((uint32_t)(m - R.m), E_FAIL, "the module's metadata cannot take new signatures");
                continue;
            }
            f->modules[f->n] = module;
            f->tokens[f->n++] = mds[i];
        }
    }
    if (he)
        imp->lpVtbl->CloseEnum(imp, he);
}

static void request(found *f) {
    if (!f->n)
        return;
    HRESULT hr = AGENT_HAS_INFO(RequestReJITWithInliners)
                     ? INFO_CALL(RequestReJITWithInliners, COR_PRF_REJIT_BLOCK_INLINING, f->n, f->modules, f->tokens)
                     : INFO_CALL(RequestReJIT, f->n, f->modules, f->tokens);
    for (uint32_t i = 0; i < f->n; i++) { /* asked for: in the trace once the request is made */
        uint64_t v = 0;
        pthread_mutex_lock(&R.mu);
        int known = dnp_u64map_get2(&R.ids, f->modules[i], f->tokens[i], &v);
        pthread_mutex_unlock(&R.mu);
        if (known && FAILED(hr))
            fail((uint32_t)v - 1, hr, "the runtime refused the ReJIT request");
        else if (known)
            record_method((uint32_t)v - 1);
    }
    f->n = 0;
}

/* When every pattern names its type in full (no glob, not nested), the types
 * themselves (FindTypeDefByName: no walk over every type of every module).
 * 1 when it did, 0 when the types must be walked. */
static int search_named_types(ModuleID module, IMetaDataImport *imp, found *f, mdSignature sigs[2],
                              int *sigs_state) {
    if (strpbrk(R.types, "*?+[]"))
        return 0;
    for (const char *p = R.types; *p;) {
        size_t len = strcspn(p, ",");
        WCHAR w[512];
        size_t wn = dnp_utf8_to_utf16(p, len, (char16_t *)w, 511);
        w[wn < 511 ? wn : 511] = 0;
        mdTypeDef td = 0;
        if (len && SUCCEEDED(imp->lpVtbl->FindTypeDefByName(imp, w, 0, &td)) && td) {
            pthread_mutex_lock(&R.mu);
            search_type(module, imp, td, f, sigs, sigs_state);
            pthread_mutex_unlock(&R.mu);
        }
        p += len + (p[len] == ',');
    }
    return 1;
}

/* Every type of the module, each searched whose name a pattern's type part matches. */
static void search_all_types(ModuleID module, IMetaDataImport *imp, found *f, mdSignature sigs[2],
                             int *sigs_state) {
    HCORENUM he = NULL;
    mdTypeDef tds[64];
    ULONG n = 0;
    while (SUCCEEDED(imp->lpVtbl->EnumTypeDefs(imp, &he, tds, 64, &n)) && n > 0 && n <= 64) {
        for (ULONG i = 0; i < n; i++) {
            pthread_mutex_lock(&R.mu);
            search_type(module, imp, tds[i], f, sigs, sigs_state);
            pthread_mutex_unlock(&R.mu);
            if (f->n >= 200)
                request(f);
        }
    }
    if (he)
        imp->lpVtbl->CloseEnum(imp, he);
}

static void search_module(ModuleID module) {
    IMetaDataImport *imp = names_module_import(module);
    if (!imp)
        return; /* a resource module, a dynamic one: no methods with metadata */
    found *f = calloc(1, sizeof *f);
    mdSignature sigs[2] = {0, 0};
    int sigs_state = 0;
    LPCBYTE base = NULL;
    ULONG len = 0;
    AssemblyID assembly = 0;
    DWORD flags = 0;
    if (AGENT_HAS_INFO(GetModuleInfo2) &&
        SUCCEEDED(INFO_CALL(GetModuleInfo2, module, &base, 0, &len, NULL, &assembly, &flags)) &&
        (flags & (COR_PRF_MODULE_DYNAMIC | COR_PRF_MODULE_COLLECTIBLE)))
        sigs_state = -2; /* its matches are said and left alone: the runtime re-JITs none of its methods */
    if (f && !search_named_types(module, imp, f, sigs, &sigs_state))
        search_all_types(module, imp, f, sigs, &sigs_state);
    if (f)
        request(f);
    free(f);
    imp->lpVtbl->Release(imp);
}

/* Whether the module is the runtime's core library, where Lock's probe is. */
static int is_corelib(ModuleID module) {
    WCHAR w[512];
    ULONG len = 0;
    LPCBYTE base = NULL;
    AssemblyID assembly = 0;
    if (FAILED(INFO_CALL(GetModuleInfo, module, &base, 512, &len, w, &assembly)) || len == 0 || len > 512)
        return 0;
    char path[1024];
    dnp_utf16_name(w, 512, len, path, sizeof path);
    static const char tail[] = "System.Private.CoreLib.dll";
    size_t n = strlen(path);
    return n >= sizeof tail - 1 && strcmp(path + n - (sizeof tail - 1), tail) == 0;
}

void rejit_module_loaded(ModuleID module) {
    if (R.user && atomic_load(&R.counting))
        search_module(module);
}

void rejit_module_unloading(ModuleID module) {
    if (!R.on)
        return;
    pthread_mutex_lock(&R.mu);
    uint32_t n = atomic_load(&R.n);
    for (uint32_t i = 0; i < n; i++)
        if (R.m[i].module == module && !R.m[i].gone) {
            names_get(NAMES_MODULE, module, 1); /* its name, while it can still be had */
            R.m[i].gone = 1;
            if (R.m[i].state != ST_FAILED)
                R.m[i].state = ST_UNLOADED;
        }
    pthread_mutex_unlock(&R.mu);
}

/* fn on every module loaded now. */
static void each_module(void (*fn)(ModuleID)) {
    ICorProfilerModuleEnum *en = NULL;
    if (FAILED(INFO_CALL(EnumModules, &en)) || !en)
        return;
    ModuleID ids[64];
    ULONG got = 0;
    /* the enumerator's vtable: IUnknown's three, Skip, Reset, Clone, GetCount, Next */
    typedef struct {
        DNP_ENUM_SLOTS(ICorProfilerModuleEnum, ModuleID)
    } module_enum_vtbl;
    const module_enum_vtbl *vt = *(const module_enum_vtbl *const *)en;
    while (SUCCEEDED(vt->Next(en, 64, ids, &got)) && got > 0 && got <= 64)
        for (ULONG i = 0; i < got; i++)
            fn(ids[i]);
    vt->Release(en);
}

void rejit_attach_complete(void) {
    if (R.on)
        each_module(search_module);
}

static void search_corelib(ModuleID module) {
    if (is_corelib(module))
        search_module(module);
}

/* Lock's probe with its arguments (rejit_lock.c: the IL that reads them) into
 * p, and the token of the signature that takes them: 0, or -1 (the probe then
 * takes no arguments: no owner for a spin-won acquisition, and the reader
 * leaves TryEnter() out by its stack). */
static int lock_args(ModuleID module, mdMethodDef method, dnp_il_probe *p, mdSignature *sig) {
    const uint8_t *const sigs[1] = {dnp_il_enter_3i4_sig};
    const size_t lens[1] = {sizeof dnp_il_enter_3i4_sig};
    if (rejit_lock_args(module, method, p) != 0 || sig_tokens(module, 1, sigs, lens, sig) != 0)
        return -1;
    return 0;
}

/* --locks: Lock's slow path asked for, on a thread of the agent's: found in
 * CoreLib (loaded before any managed thread starts), the probe's signatures
 * written in its metadata, which opening to write takes about 17 ms (in the
 * runtime's GetReJITParameters, at the first contention, it would hold up every
 * thread contending meanwhile, and their waits would be nobody's), then the
 * ReJIT; until the first call of the new code the runtime's events stand
 * alone (LockBeforeProbe). */
static void *lock_probe_main(void *arg) {
    (void)arg;
    for (int i = 0; i < 200 && !atomic_load(&R.lock_id) && g_agent.info && !atomic_load(&R.finished); i++) {
        each_module(search_corelib); /* found at CoreLib's load already when --trace watches the loads */
        if (!atomic_load(&R.lock_id))
            usleep(10000);
    }
    if (!g_agent.info || atomic_load(&R.finished))
        return NULL;
    uint32_t id = atomic_load(&R.lock_id);
    if (!id) {
        agent_say("--locks: " RJ_LOCK_PROBE " was not found in CoreLib: the waits " RJ_LOCK_TYPE " wins by "
                  "spinning are not timed; the runtime's waits are recorded");
        rec_note(1, "--locks: " RJ_LOCK_PROBE " not found");
        return NULL;
    }
    rj_method *m = &R.m[id - 1];
    if (!m->for_locks)
        return NULL; /* asked for by --trace already */
    mdSignature enter = 0, exit = 0;
    found *f = calloc(1, sizeof *f);
    if (!f || module_sigs(m->module, &enter, &exit) != 0) {
        free(f);
        fail(id - 1, E_FAIL, "CoreLib's metadata cannot take new signatures");
        return NULL;
    }
    mdSignature with_args = 0;
    dnp_il_probe args;
    memset(&args, 0, sizeof args);
    int have_args = lock_args(m->module, m->token, &args, &with_args) == 0;
    pthread_mutex_lock(&R.mu);
    m->enter_sig = enter, m->exit_sig = exit;
    if (have_args)
        m->enter_sig = with_args, R.lock_args = args;
    m->state = ST_ASKED;
    pthread_mutex_unlock(&R.mu);
    f->modules[0] = m->module;
    f->tokens[0] = m->token;
    f->n = 1;
    request(f);
    free(f);
    return NULL;
}

void rejit_lock_start(void) {
    if (!R.for_locks || atomic_load_explicit(&R.lock_asked, memory_order_relaxed) ||
        atomic_exchange(&R.lock_asked, 1))
        return;
    pthread_t th;
    if (bg_thread_spawn(&th, lock_probe_main, NULL) == 0) {
        pthread_setname_np(th, "dnprof-rejit");
        pthread_detach(th);
    }
}

int rejit_lock_before_probe(void) {
    return R.for_locks && !atomic_load_explicit(&R.lock_live, memory_order_relaxed);
}

int rejit_lock_live(void) {
    return R.for_locks && atomic_load_explicit(&R.lock_live, memory_order_relaxed);
}

/* ---- the rewrite ---- */

static int find(ModuleID module, mdMethodDef token, uint32_t *id) {
    uint64_t v = 0;
    pthread_mutex_lock(&R.mu);
    int known = R.on && dnp_u64map_get2(&R.ids, module, token, &v);
    pthread_mutex_unlock(&R.mu);
    *id = (uint32_t)v - 1;
    return known;
}

/* The extended locals' token into p (locals_sig, start_local, result_local).
 * 0, or -1 with why. */
static int locals_token(ModuleID module, IMetaDataImport *imp, const dnp_il_header *h, mdMethodDef token,
                        dnp_il_probe *p, const char **why) {
    PCCOR_SIGNATURE msig = NULL, lsig = NULL;
    ULONG nmsig = 0, nlsig = 0, len = 0, rva = 0;
    DWORD attr = 0, impl = 0;
    mdTypeDef owner = 0;
    WCHAR w[8];
    size_t off, rlen;
    int is_void;
    char err[256];
    if (FAILED(imp->lpVtbl->GetMethodProps(imp, token, &owner, w, 8, &len, &attr, &msig, &nmsig, &rva, &impl)) ||
        dnp_sig_return_type(msig, nmsig, &off, &rlen, &is_void, err, sizeof err) < 0)
        return *why = "its signature cannot be read", -1;
    if (h->local_sig && FAILED(imp->lpVtbl->GetSigFromToken(imp, h->local_sig, &lsig, &nlsig)))
        return *why = "its locals' signature cannot be read", -1;
    uint8_t sig[4096];
    long n = dnp_il_locals_sig(lsig, h->local_sig ? nlsig : 0, msig + off, is_void ? 0 : rlen, sig, sizeof sig,
                               &p->start_local, &p->result_local);
    if (n < 0)
        return *why = "its locals cannot be extended", -1;
    const uint8_t *const sigs[1] = {sig};
    const size_t lens[1] = {(size_t)n};
    int rc = sig_tokens(module, 1, sigs, lens, &p->locals_sig);
    if (rc == -1)
        return *why = "its module's metadata cannot be written", -1;
    if (rc < 0)
        return *why = "its new locals' signature was refused", -1;
    return 0;
}

void rejit_parameters(ModuleID module, mdMethodDef token, ICorProfilerFunctionControl *control) {
    uint32_t id;
    if (!control || !find(module, token, &id))
        return; /* an inliner re-JITted with its own IL, or not ours */
    rj_method *m = &R.m[id];
    if (m->gone)
        return;
    LPCBYTE body = NULL;
    ULONG size = 0;
    HRESULT hr = INFO_CALL(GetILFunctionBody, module, token, &body, &size);
    if (FAILED(hr) || !body) {
        fail(id, FAILED(hr) ? hr : E_FAIL, "its IL body cannot be read");
        return;
    }
    dnp_il_header h;
    char err[256];
    if (dnp_il_parse(body, size, &h, NULL, 0, err, sizeof err) < 0) {
        fail(id, E_FAIL, "its IL body does not parse");
        return;
    }
    pthread_mutex_lock(&R.mu);
    mdSignature enter_sig = m->enter_sig, exit_sig = m->exit_sig;
    dnp_il_probe args = R.lock_args;
    int with_args = m->for_locks && args.enter_args_len;
    pthread_mutex_unlock(&R.mu);
    if ((!enter_sig || !exit_sig) && module_sigs(module, &enter_sig, &exit_sig) != 0) {
        fail(id, E_FAIL, "the module's metadata cannot take new signatures");
        return;
    }
    IMetaDataImport *imp = names_module_import(module);
    if (!imp) {
        fail(id, E_FAIL, "its module's metadata cannot be read");
        return;
    }
    dnp_il_probe p = {.method_id = id, .enter_fn = (uint64_t)(uintptr_t)probe_enter,
                      .exit_fn = (uint64_t)(uintptr_t)probe_exit, .enter_sig = enter_sig,
                      .exit_sig = exit_sig};
    if (with_args) { /* Lock's probe: enter_sig is then the one that takes them */
        memcpy(p.enter_args, args.enter_args, sizeof p.enter_args);
        p.enter_args_len = args.enter_args_len, p.enter_pushes = args.enter_pushes;
        p.enter_fn = (uint64_t)(uintptr_t)probe_enter_lock;
    }
    const char *why = NULL;
    int rc = locals_token(module, imp, &h, token, &p, &why);
    imp->lpVtbl->Release(imp);
    if (rc < 0) {
        fail(id, E_FAIL, why);
        return;
    }
    size_t cap = dnp_il_rewrite_bound(body, size);
    uint8_t *out = cap ? malloc(cap) : NULL;
    long n = out ? dnp_il_rewrite(body, size, &p, out, cap, err, sizeof err) : -1;
    if (n < 0) {
        free(out);
        rec_note(1, "--trace: %s: %s", m->text ? m->text : "?", out ? err : "out of memory");
        fail(id, E_FAIL, "its IL cannot be rewritten");
        return;
    }
    hr = control->lpVtbl->SetILFunctionBody(control, (ULONG)n, out);
    free(out);
    if (FAILED(hr)) {
        fail(id, hr, "the runtime refused its rewritten IL");
        return;
    }
    if (m->state == ST_ASKED) {
        m->state = ST_INSTRUMENTED;
        record_method(id);
    }
}

void rejit_error(ModuleID module, mdMethodDef token, HRESULT hr) {
    uint32_t id;
    if (find(module, token, &id))
        fail(id, hr, "the runtime could not re-JIT it");
}

/* ---- the end ---- */

/* "index:count ..." of the non-empty buckets. */
static uint32_t histogram_text(const rj_method *m) {
    char text[RJ_BUCKETS * 24];
    size_t len = 0;
    for (unsigned b = 0; m->hist && b < RJ_BUCKETS; b++) {
        uint64_t c = atomic_load_explicit(&m->hist[b], memory_order_relaxed);
        if (c)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%u:%llu", len ? " " : "", b,
                                    (unsigned long long)c);
    }
    return rec_string(text, len);
}

static void revert_all(uint32_t n) {
    ModuleID *mods = calloc(n, sizeof *mods);
    mdMethodDef *toks = calloc(n, sizeof *toks);
    HRESULT *st = calloc(n, sizeof *st);
    uint32_t k = 0;
    for (uint32_t i = 0; mods && toks && st && i < n; i++)
        if (R.m[i].state != ST_FAILED && !R.m[i].gone) {
            mods[k] = R.m[i].module;
            toks[k++] = R.m[i].token;
        }
    HRESULT hr = k ? INFO_CALL(RequestRevert, k, mods, toks, st) : S_OK;
    if (FAILED(hr)) {
        agent_say("--trace: the runtime refused to revert the traced methods (0x%08x): they keep their probes, "
                  "which count nothing from now on", (unsigned)hr);
        rec_note(2, "--trace: RequestRevert failed: 0x%08x", (unsigned)hr);
    }
    for (uint32_t i = 0, j = 0; SUCCEEDED(hr) && i < n; i++) {
        if (R.m[i].state == ST_FAILED || R.m[i].gone)
            continue;
        if (FAILED(st[j]))
            rec_note(1, "--trace: %s was not reverted: 0x%08x", R.m[i].text ? R.m[i].text : "?", (unsigned)st[j]);
        else
            R.m[i].state = ST_REVERTED;
        j++;
    }
    free(mods);
    free(toks);
    free(st);
}

/* The method's callers, by function: each call site's slot named by
 * GetFunctionFromIP, slots of one function added up; the unknown ones last. */
static void record_callers(uint32_t id) {
    rj_method *m = &R.m[id];
    FunctionID fid[RJ_CALLERS + 1];
    uint64_t calls[RJ_CALLERS + 1], total[RJ_CALLERS + 1];
    unsigned n = 0;
    for (unsigned s = 0; m->callers && s <= RJ_CALLERS; s++) {
        uint64_t c = atomic_load(&m->callers[s].calls), ip = atomic_load(&m->callers[s].ip);
        FunctionID f = 0;
        if (!c)
            continue;
        if (s == RJ_CALLERS || !ip || !g_agent.info || FAILED(INFO_CALL(GetFunctionFromIP, (LPCBYTE)ip, &f)))
            f = 0;
        unsigned k = 0;
        while (k < n && fid[k] != f)
            k++;
        if (k == n) {
            fid[n] = f;
            calls[n] = total[n] = 0;
            n++;
        }
        calls[k] += c;
        total[k] += atomic_load(&m->callers[s].total_ns);
    }
    for (unsigned k = 0; k < n; k++)
        REC(TracedCaller, id, FUNCTION(fid[k], fid[k] != 0), calls[k], total[k]);
}

void rejit_finish(int revert) {
    if (!R.on || atomic_exchange(&R.finished, 1))
        return;
    uint32_t n = atomic_load(&R.n), asked = 0;
    for (uint32_t i = 0; i < n; i++)
        asked += !R.m[i].for_locks;
    if (R.user && !asked) {
        agent_say("--trace: no method with IL matched '%s' (Namespace.Class::Method, * and ?)", R.patterns);
        rec_note(1, "--trace: no method matched '%s'", R.patterns);
    }
    if (revert && g_agent.info)
        revert_all(n);
    atomic_store(&R.counting, 0);
    for (uint32_t i = 0; i < n; i++) {
        rj_method *m = &R.m[i];
        if (m->for_locks && !m->state)
            continue; /* never asked for: no Lock blocked */
        record_method(i);
        REC(TracedCalls, i, atomic_load(&m->calls), atomic_load(&m->total_ns), atomic_load(&m->max_ns),
            histogram_text(m));
        record_callers(i);
    }
}
