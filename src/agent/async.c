/* async.c: logical async stacks (async.h, docs/async.md).
 *
 * After an await, an async method resumes on a pool thread through its state
 * machine box: AsyncTaskMethodBuilder<T>.AsyncStateMachineBox<TSM>.MoveNext(Thread)
 * (Task and ValueTask methods) or PoolingAsyncValueTaskMethodBuilder<T>.
 * StateMachineBox<TSM>.MoveNext() (pooled ValueTask methods). As either is
 * first compiled, its IL gets a call to async_probe first (rewrite), with the
 * address of its `this`, without a GC transition: in cooperative mode the
 * runtime cannot move or free objects under the probe. Nothing else changes:
 * no enter/leave hooks (which would make the runtime refuse all precompiled
 * code), no other method touched. The probe follows the awaiters from the box:
 *
 *   a box             a logical frame (its TStateMachine's MoveNext); next:
 *                     Task.m_continuationObject, or for a pooled box its
 *                     _valueTaskSource._continuationState
 *   a Task            (Task.WhenAll's promise, Task.Run's unwrapper): no frame;
 *                     next: its m_continuationObject
 *   AwaitTaskContinuation (a captured context or scheduler): next: m_action
 *   a delegate        (the box's MoveNextAction): next: _target
 *   AsyncMethodBuilderCore.ContinuationWrapper: next: _continuation
 *
 * and ends at no continuation or at anything else (a synchronous wait, a list
 * of several awaiters, a custom awaiter's state): "[async caller unknown]",
 * never a guess, except above the program's async Main, which the runtime's
 * own entry point waits for. Field offsets are the runtime's answers
 * (GetClassLayout) for the version that runs, never constants.
 *
 * A chain is kept as a node of a trie of callers (outermost at the root), so a
 * resume costs a few lookups and the sampler gets one number. The thread's
 * resumes (a continuation may run inline inside another) are a small stack in
 * the thread's own state, found as calls.c finds its state (a table keyed by
 * the thread pointer). There is no exit probe: a resume ends when a later one
 * starts at or above its place on the stack, and the signal handler takes the
 * innermost one at or above the stack pointer; the sampler thread keeps it only
 * if the walk finds a resume's frame there (sampler_aggregate.c). */
#include "async.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "arch/arch.h"
#include "callbacks.h"
#include "il_body.h"
#include "names.h"
#include "recorder.h"
#include "sampler.h"
#include "utf16.h"

#define RESUMES 64           /* resumes in progress on one thread */
#define CALLERS 128          /* callers followed per resume */
#define STEPS (4 * CALLERS)  /* objects followed per resume (wrappers have no frame) */
#define CHAIN_NODES (1u << 18)
#define CHAIN_HASH (1u << 19)
#define TYPES (1u << 13)
#define TYPE_HASH (1u << 14)
#define TLS_SLOTS (1u << 12)

enum { K_NONE, K_BOX, K_POOLBOX, K_TASK, K_ACTION_OWNER, K_DELEGATE, K_WRAPPER, K_OTHER };

/* What an object of one class (its MethodTable, the ClassID) is to a chain. */
typedef struct atype {
    uintptr_t mt;
    uint8_t kind;
    uint8_t main; /* a box of an async Main */
    uint8_t retry; /* not known yet (its state machine's MoveNext not noted): not kept */
    uint32_t off; /* where the next object's address is, from the object's start */
    uint64_t fid; /* a box: its state machine's MoveNext */
    uint32_t name;
} atype;

typedef struct chain_node {
    uint32_t parent; /* 0: the outermost */
    uint32_t name;
    uint64_t fid;    /* 0: "[async caller unknown]" */
} chain_node;

typedef struct resume {
    uintptr_t csp, fp;
    uint64_t resumed;
    uint32_t chain, name;
} resume;

typedef struct athread {
    _Atomic uint32_t depth;
    resume r[RESUMES];
} athread;

typedef struct tls_slot {
    _Atomic uintptr_t tp;
    athread *t;
} tls_slot;

static struct {
    int on;
    pthread_mutex_t mu; /* inserts into the tables; the CoreLib set-up */
    /* CoreLib: its module and the tokens of what a chain is made of */
    ModuleID corelib;
    IMetaDataImport *imp;
    int corelib_ready; /* 1 ready, -1 not usable */
    mdTypeDef box_td, pbox_td, pbox_base_td, task_td, atc_td, delegate_td, wrapper_td, mrvtsc_td;
    mdMethodDef box_move, pbox_move;
    mdSignature probe_sig; /* the probe's call site signature, in CoreLib */
    int rewritten[2];      /* box_move's, pbox_move's body replaced */
    /* the execution context's methods between a box's MoveNext and its state
     * machine's (tokens, then their FunctionIDs as the runtime prepares them) */
    mdMethodDef plumb_tok[4];
    _Atomic uint64_t plumb_fid[4];
    uint32_t task_cont_off, delegate_target_off, atc_action_off, wrapper_cont_off, vts_state_off;
    /* the classes seen, by MethodTable */
    atype types[TYPES];
    _Atomic uint32_t ntypes;
    _Atomic uint32_t type_hash[TYPE_HASH]; /* index + 1 */
    /* the chains */
    chain_node *chain;
    _Atomic uint32_t nchain;
    _Atomic uint32_t *chain_hash; /* node number, 0 empty */
    uint32_t unknown_name;
    tls_slot tls[TLS_SLOTS];
    pthread_key_t key;
    /* counts, for the note at the end */
    _Atomic uint64_t resumes, unknown_ends, full, no_state;
} A = {.mu = PTHREAD_MUTEX_INITIALIZER};

int async_on(void) {
    return A.on;
}

/* ---- the thread's state ---- */

#define SLOT_OF(tp) ((uint32_t)(((uint64_t)(tp) * 0x9E3779B97F4A7C15ull) >> 52) & (TLS_SLOTS - 1))

/* Async-signal-safe: the table only. */
static athread *thread_here(void) {
    uintptr_t tp = arch_thread_pointer();
    const tls_slot *s = &A.tls[SLOT_OF(tp)];
    if (tp && atomic_load_explicit(&s->tp, memory_order_acquire) == tp)
        return s->t;
    return NULL;
}

static void thread_gone(void *p) {
    uintptr_t tp = arch_thread_pointer();
    tls_slot *s = &A.tls[SLOT_OF(tp)];
    if (tp && atomic_load(&s->tp) == tp && s->t == p) {
        s->t = NULL;
        atomic_store(&s->tp, 0);
    }
    free(p);
}

/* The thread's state, made at its first resume; NULL when its slot is another
 * live thread's (its samples stay physical). */
static athread *thread_get(void) {
    athread *t = thread_here();
    if (t)
        return t;
    uintptr_t tp = arch_thread_pointer();
    if (!tp)
        return NULL;
    tls_slot *s = &A.tls[SLOT_OF(tp)];
    if (atomic_load(&s->tp) != 0)
        return NULL;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    uintptr_t zero = 0;
    s->t = NULL;
    if (!atomic_compare_exchange_strong(&s->tp, &zero, tp)) {
        free(t);
        return NULL;
    }
    s->t = t;
    pthread_setspecific(A.key, t);
    return t;
}

/* ---- CoreLib's types ---- */

static HRESULT find_type(const char *name, mdToken enclosing, mdTypeDef *td) {
    char16_t w[256];
    size_t n = dnp_utf8_to_utf16(name, strlen(name), w, 255);
    w[n] = 0;
    return A.imp->lpVtbl->FindTypeDefByName(A.imp, (LPCWSTR)w, enclosing, td);
}

/* The MoveNext of td with nparams parameters, 0 if none. */
static mdMethodDef find_move_next(mdTypeDef td, unsigned nparams) {
    char16_t w[16];
    size_t n = dnp_utf8_to_utf16("MoveNext", 8, w, 15);
    w[n] = 0;
    HCORENUM e = NULL;
    mdMethodDef ms[8];
    ULONG got = 0;
    mdMethodDef found = 0;
    if (A.imp->lpVtbl->EnumMethodsWithName(A.imp, &e, td, (LPCWSTR)w, ms, 8, &got) == S_OK) {
        for (ULONG i = 0; i < got && !found; i++) {
            PCCOR_SIGNATURE sig = NULL;
            ULONG nsig = 0;
            if (A.imp->lpVtbl->GetMethodProps(A.imp, ms[i], NULL, NULL, 0, NULL, NULL, &sig, &nsig, NULL, NULL) ==
                    S_OK &&
                sig && nsig >= 2 && sig[1] == nparams)
                found = ms[i];
        }
    }
    if (e)
        A.imp->lpVtbl->CloseEnum(A.imp, e);
    return found;
}

static uint32_t field_off(ClassID cls, const char *name);

/* Whether module is CoreLib: then the tokens, once. Under A.mu. */
static int corelib_setup(ModuleID module) {
    if (A.corelib_ready)
        return A.corelib == module && A.corelib_ready > 0;
    char16_t w[1024];
    ULONG len = 0;
    if (INFO_CALL(GetModuleInfo, module, NULL, 1024, &len, (WCHAR *)w, NULL) != S_OK || len == 0)
        return 0;
    char path[1024];
    dnp_utf16_name(w, 1024, len, path, sizeof path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "System.Private.CoreLib.dll") != 0)
        return 0;
    A.corelib = module;
    A.corelib_ready = -1;
    IUnknown *unk = NULL;
    if (INFO_CALL(GetModuleMetaData, module, 0 /* ofRead */, &IID_IMetaDataImport, &unk) != S_OK || !unk)
        return 0;
    A.imp = (IMetaDataImport *)unk;
    mdTypeDef atmb = 0, pool = 0, core = 0, vts = 0;
    int ok = find_type("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1", 0, &atmb) == S_OK &&
             find_type("AsyncStateMachineBox`1", atmb, &A.box_td) == S_OK &&
             find_type("System.Threading.Tasks.Task", 0, &A.task_td) == S_OK &&
             find_type("System.Delegate", 0, &A.delegate_td) == S_OK;
    if (!ok) {
        agent_say("async stacks: this runtime's CoreLib has no AsyncStateMachineBox; sampled stacks stay physical");
        return 0;
    }
    /* the rest is optional: a chain ends where it meets what is missing */
    if (find_type("System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder`1", 0, &pool) == S_OK) {
        find_type("StateMachineBox`1", pool, &A.pbox_td);
        find_type("StateMachineBox", pool, &A.pbox_base_td);
    }
    find_type("System.Threading.Tasks.AwaitTaskContinuation", 0, &A.atc_td);
    if (find_type("System.Runtime.CompilerServices.AsyncMethodBuilderCore", 0, &core) == S_OK)
        find_type("ContinuationWrapper", core, &A.wrapper_td);
    if (find_type("System.Threading.Tasks.Sources.ManualResetValueTaskSourceCore`1", 0, &vts) == S_OK)
        A.mrvtsc_td = vts;
    /* a pooled box's awaiter: _valueTaskSource._continuationState, the second
     * within the struct whatever TResult is (its references come first): read
     * for ManualResetValueTaskSourceCore<int> (not from a hook: it loads the type) */
    mdTypeDef i32 = 0;
    ClassID i32c = 0, vtsc = 0;
    if (A.mrvtsc_td && find_type("System.Int32", 0, &i32) == S_OK &&
        INFO_CALL(GetClassFromToken, module, i32, &i32c) == S_OK &&
        INFO_CALL(GetClassFromTokenAndTypeArgs, module, A.mrvtsc_td, 1, &i32c, &vtsc) == S_OK)
        A.vts_state_off = field_off(vtsc, "_continuationState");
    mdTypeDef ec = 0;
    if (find_type("System.Threading.ExecutionContext", 0, &ec) == S_OK) {
        static const char *const plumbing[] = {"RunInternal", "RunFromThreadPoolDispatchLoop"};
        unsigned k = 0;
        for (unsigned i = 0; i < 2; i++) {
            char16_t w[64];
            size_t n = dnp_utf8_to_utf16(plumbing[i], strlen(plumbing[i]), w, 63);
            w[n] = 0;
            HCORENUM e = NULL;
            mdMethodDef ms[2];
            ULONG got = 0;
            if (A.imp->lpVtbl->EnumMethodsWithName(A.imp, &e, ec, (LPCWSTR)w, ms, 2, &got) == S_OK)
                for (ULONG j = 0; j < got && k < 4; j++)
                    A.plumb_tok[k++] = ms[j];
            if (e)
                A.imp->lpVtbl->CloseEnum(A.imp, e);
        }
    }
    /* the probe's signature: unmanaged[SuppressGCTransition] void(native int),
     * the convention in a modopt on the return type (ECMA-335 II.23.2.3,
     * IMAGE_CEE_CS_CALLCONV_UNMANAGED) */
    mdTypeDef sgc = 0;
    IUnknown *eu = NULL;
    if (find_type("System.Runtime.CompilerServices.CallConvSuppressGCTransition", 0, &sgc) == S_OK &&
        INFO_CALL(GetModuleMetaData, module, 1 /* ofRead | ofWrite */, &IID_IMetaDataEmit, &eu) == S_OK && eu) {
        IMetaDataEmit *emit = (IMetaDataEmit *)eu;
        uint8_t sig[16];
        size_t k = 0;
        uint32_t coded = (sgc & 0x00ffffffu) << 2; /* TypeDefOrRef, a TypeDef */
        sig[k++] = 0x09; /* unmanaged */
        sig[k++] = 0x01; /* one parameter */
        sig[k++] = 0x20; /* CMOD_OPT */
        if (coded < 0x80) {
            sig[k++] = (uint8_t)coded;
        } else if (coded < 0x4000) {
            sig[k++] = (uint8_t)(0x80 | coded >> 8);
            sig[k++] = (uint8_t)coded;
        } else {
            sig[k++] = (uint8_t)(0xc0 | coded >> 24);
            sig[k++] = (uint8_t)(coded >> 16);
            sig[k++] = (uint8_t)(coded >> 8);
            sig[k++] = (uint8_t)coded;
        }
        sig[k++] = 0x01; /* void */
        sig[k++] = 0x18; /* native int */
        if (emit->lpVtbl->GetTokenFromSig(emit, sig, (ULONG)k, &A.probe_sig) != S_OK)
            A.probe_sig = 0;
        emit->lpVtbl->Release(emit);
    }
    if (!A.probe_sig)
        agent_say("async stacks: CoreLib takes no new call signature here; sampled stacks stay physical");
    A.box_move = find_move_next(A.box_td, 1); /* MoveNext(Thread): the others call it */
    A.pbox_move = A.pbox_td ? find_move_next(A.pbox_td, 0) : 0;
    A.corelib_ready = A.box_move && A.probe_sig ? 1 : -1;
    if (!A.box_move)
        agent_say("async stacks: no AsyncStateMachineBox.MoveNext(Thread) in this runtime; sampled stacks stay physical");
    return A.corelib_ready > 0;
}

/* ---- state machines: their MoveNext, found when it is compiled ----
 *
 * The hooks may not ask for a module's metadata (the runtime refuses it inside
 * enter/leave: CORPROF_E_UNSUPPORTED_CALL_SEQUENCE), so every compiled method
 * (the mapper) and every precompiled one (the ReadyToRun search) that is the
 * MoveNext of a compiler-made state machine (a class named <Method>d__N) is
 * noted here, by module and class token, before any box of it can resume. */

#define MACHINES (1u << 14)

typedef struct machine {
    _Atomic uint64_t key; /* module ^ token, 0 empty */
    ModuleID module;
    mdTypeDef td;
    uint64_t fid;
    uint32_t name;
    uint8_t main;
} machine;

static machine g_machines[MACHINES];
static _Atomic uint32_t g_nmachines;

static uint32_t machine_home(ModuleID module, mdTypeDef td) {
    return (uint32_t)(((uint64_t)module ^ (uint64_t)td * 0x9E3779B97F4A7C15ull) * 0xC2B2AE3D27D4EB4Full >> 40) &
           (MACHINES - 1);
}

static const machine *machine_get(ModuleID module, mdTypeDef td) {
    uint32_t h = machine_home(module, td);
    for (uint32_t p = 0; p < MACHINES; p++) {
        machine *m = &g_machines[(h + p) & (MACHINES - 1)];
        if (!atomic_load_explicit(&m->key, memory_order_acquire))
            return NULL;
        if (m->module == module && m->td == td)
            return m;
    }
    return NULL;
}

/* A module's metadata, with a reference for the caller; the last few modules'
 * kept (every compiled or precompiled method is looked at, mostly from the
 * same modules). */
#define IMPORTS 16
static struct {
    ModuleID module;
    IMetaDataImport *imp;
} g_imports[IMPORTS];
static unsigned g_imports_next;

static IMetaDataImport *module_import(ModuleID module) {
    pthread_mutex_lock(&A.mu);
    for (unsigned i = 0; i < IMPORTS; i++) {
        if (g_imports[i].module == module && g_imports[i].imp) {
            IMetaDataImport *imp = g_imports[i].imp;
            imp->lpVtbl->AddRef(imp);
            pthread_mutex_unlock(&A.mu);
            return imp;
        }
    }
    pthread_mutex_unlock(&A.mu);
    IUnknown *unk = NULL;
    if (INFO_CALL(GetModuleMetaData, module, 0, &IID_IMetaDataImport, &unk) != S_OK || !unk)
        return NULL;
    IMetaDataImport *imp = (IMetaDataImport *)unk;
    pthread_mutex_lock(&A.mu);
    unsigned i = g_imports_next++ % IMPORTS;
    IMetaDataImport *old = g_imports[i].imp;
    imp->lpVtbl->AddRef(imp);
    g_imports[i].module = module;
    g_imports[i].imp = imp;
    pthread_mutex_unlock(&A.mu);
    if (old)
        old->lpVtbl->Release(old);
    return imp;
}

/* Notes fid if it is a state machine's MoveNext. Not in a hook. */
static void machine_note(FunctionID fid, ModuleID module, mdToken tok) {
    if (!fid || !module || !tok)
        return;
    IMetaDataImport *imp = module_import(module);
    if (!imp)
        return;
    char16_t w[64];
    ULONG len = 0;
    mdTypeDef td = 0;
    char text[256];
    if (imp->lpVtbl->GetMethodProps(imp, tok, &td, (WCHAR *)w, 64, &len, NULL, NULL, NULL, NULL, NULL) == S_OK &&
        len == 9 && dnp_utf16_name(w, 64, len, text, sizeof text) && strcmp(text, "MoveNext") == 0 && td &&
        !machine_get(module, td)) {
        char16_t tn[256];
        len = 0;
        if (imp->lpVtbl->GetTypeDefProps(imp, td, (WCHAR *)tn, 256, &len, NULL, NULL) == S_OK && len) {
            dnp_utf16_name(tn, 256, len, text, sizeof text);
            const char *name = strrchr(text, '+'); /* nested: the simple name */
            name = name ? name + 1 : text;
            if (name[0] == '<' && strstr(name, ">d__")) {
                uint32_t fname = names_get(NAMES_FUNCTION, fid, 1);
                pthread_mutex_lock(&A.mu);
                uint32_t h = machine_home(module, td);
                for (uint32_t p = 0; p < MACHINES && atomic_load(&g_nmachines) * 2 < MACHINES; p++) {
                    machine *m = &g_machines[(h + p) & (MACHINES - 1)];
                    if (atomic_load_explicit(&m->key, memory_order_relaxed)) {
                        if (m->module == module && m->td == td)
                            break;
                        continue;
                    }
                    m->module = module;
                    m->td = td;
                    m->fid = fid;
                    m->name = fname;
                    m->main = strncmp(name, "<Main>d__", 9) == 0;
                    atomic_store_explicit(&m->key, ((uint64_t)module ^ td) | 1, memory_order_release);
                    atomic_fetch_add(&g_nmachines, 1);
                    break;
                }
                pthread_mutex_unlock(&A.mu);
            }
        }
    }
    imp->lpVtbl->Release(imp);
}

/* A box's state machine: its MoveNext, its name, whether it is an async Main's
 * (in a hook: the class's token only). 0 when not noted yet. */
static uint64_t state_machine(ClassID tsm, uint32_t *name, uint8_t *is_main) {
    ModuleID module = 0;
    mdTypeDef td = 0;
    if (!tsm || INFO_CALL(GetClassIDInfo, tsm, &module, &td) != S_OK || !td)
        return 0;
    const machine *m = machine_get(module, td);
    if (!m)
        return 0;
    *name = m->name;
    *is_main = m->main;
    return m->fid;
}

/* ---- the resumes: their IL gets the probe ---- */

/* The FunctionIDs of the box MoveNexts compiled with the probe (every
 * instantiation), for the sampler to tell a resume's frame (async_is_resume_frame). */
#define RESUME_FIDS (1u << 12)
static _Atomic uint64_t g_resume_fids[RESUME_FIDS];

static void resume_fid_note(FunctionID fid) {
    uint32_t h = (uint32_t)((fid >> 3) * 0x9E3779B97F4A7C15ull >> 52) & (RESUME_FIDS - 1);
    for (uint32_t p = 0; p < RESUME_FIDS / 2; p++) {
        _Atomic uint64_t *slot = &g_resume_fids[(h + p) & (RESUME_FIDS - 1)];
        uint64_t seen = 0;
        if (atomic_compare_exchange_strong(slot, &seen, fid) || seen == fid)
            return;
    }
}

int async_is_resume_frame(uint64_t fid) {
    if (!fid)
        return 0;
    uint32_t h = (uint32_t)((fid >> 3) * 0x9E3779B97F4A7C15ull >> 52) & (RESUME_FIDS - 1);
    for (uint32_t p = 0; p < RESUME_FIDS / 2; p++) {
        uint64_t v = atomic_load_explicit(&g_resume_fids[(h + p) & (RESUME_FIDS - 1)], memory_order_relaxed);
        if (v == fid)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}

/* Whether fid is CoreLib's (then *tok), CoreLib set up on the way. */
static int corelib_fn(FunctionID fid, ModuleID *module, mdToken *tok) {
    ClassID cls = 0;
    if (INFO_CALL(GetFunctionInfo, fid, &cls, module, tok) != S_OK)
        return 0;
    pthread_mutex_lock(&A.mu);
    int corelib = A.corelib_ready ? *module == A.corelib && A.corelib_ready > 0 : corelib_setup(*module);
    pthread_mutex_unlock(&A.mu);
    return corelib;
}

int async_is_hooked(FunctionID fid) {
    if (!A.on || !fid)
        return 0;
    ModuleID module = 0;
    mdToken tok = 0;
    int corelib = corelib_fn(fid, &module, &tok);
    if (corelib && tok && (tok == A.box_move || tok == A.pbox_move))
        return 1; /* compiled, with the probe, and kept whole */
    for (unsigned k = 0; corelib && tok && k < 4; k++)
        if (A.plumb_tok[k] == tok)
            atomic_store(&A.plumb_fid[k], fid);
    machine_note(fid, module, tok);
    return 0;
}

/* The new body of a box's MoveNext: the probe's call, then the method as it
 * was. The probe gets the address of the method's `this` (its home in the
 * method's frame: the box, and where the resume's frame is):
 *
 *   ldarga.s 0; conv.u; ldc.i8 async_probe; conv.i;
 *   calli unmanaged[SuppressGCTransition] void(native int)
 *
 * without a GC transition, so that the probe runs in cooperative mode: no
 * collection can move the objects it reads. */
static void rewrite(mdMethodDef tok) {
    LPCBYTE body = NULL;
    ULONG size = 0;
    if (INFO_CALL(GetILFunctionBody, A.corelib, tok, &body, &size) != S_OK || !body || !size)
        return;
    uint8_t pre[18] = {0x0f, 0x00, 0xe0, 0x21};
    uint64_t fn = (uint64_t)(uintptr_t)async_probe;
    for (int i = 0; i < 8; i++)
        pre[4 + i] = (uint8_t)(fn >> (8 * i));
    pre[12] = 0xd3;
    pre[13] = 0x29;
    for (int i = 0; i < 4; i++)
        pre[14 + i] = (uint8_t)(A.probe_sig >> (8 * i));
    size_t cap = (size_t)size + sizeof pre + 64 + 24 * 64;
    uint8_t *out = malloc(cap); /* the runtime keeps it: never freed */
    char err[256];
    size_t n = out ? dnp_il_prepend(body, size, pre, sizeof pre, 2, out, cap, err, sizeof err) : 0;
    HRESULT hr = n ? INFO_CALL(SetILFunctionBody, A.corelib, tok, out) : E_FAIL;
    if (FAILED(hr)) {
        free(out);
        agent_say("async stacks: the resume method 0x%08x could not be instrumented (%s); its resumes stay physical",
                  (unsigned)tok, n ? "the runtime refused its new body" : err);
        return;
    }
}

void async_jit_started(FunctionID fid) {
    if (!A.on)
        return;
    ModuleID module = 0;
    mdToken tok = 0;
    if (!corelib_fn(fid, &module, &tok)) {
        machine_note(fid, module, tok);
        return;
    }
    int which = tok == A.box_move ? 0 : tok == A.pbox_move ? 1 : -1;
    if (which < 0 || !tok)
        return;
    resume_fid_note(fid);
    pthread_mutex_lock(&A.mu);
    int first = !A.rewritten[which];
    A.rewritten[which] = 1;
    pthread_mutex_unlock(&A.mu);
    if (first && A.probe_sig)
        rewrite(tok);
}

int async_is_plumbing(uint64_t fid) {
    for (unsigned k = 0; fid && k < 4; k++)
        if (atomic_load_explicit(&A.plumb_fid[k], memory_order_relaxed) == fid)
            return 1;
    return 0;
}

/* ---- classes: what an object is to a chain ---- */

/* The offset of field name in class cls (its own fields), 0 if none. */
static uint32_t field_off(ClassID cls, const char *name) {
    COR_FIELD_OFFSET f[32];
    ULONG n = 0, size = 0;
    if (!cls || FAILED(INFO_CALL(GetClassLayout, cls, f, 32, &n, &size)))
        return 0;
    for (ULONG i = 0; i < n && i < 32; i++) {
        char got[64];
        if (names_field_name(A.imp, f[i].ridOfField, got, sizeof got) && strcmp(got, name) == 0)
            return f[i].ulOffset;
    }
    return 0;
}

/* What the class mt is (the runtime's calls: outside any lock). */
static void classify(uintptr_t mt, atype *out) {
    memset(out, 0, sizeof *out);
    out->mt = mt;
    out->kind = K_OTHER;
    ClassID k = mt, args[4];
    for (int depth = 0; k && depth < 16; depth++) {
        ModuleID module = 0;
        mdTypeDef td = 0;
        ClassID parent = 0;
        ULONG32 nargs = 0;
        if (INFO_CALL(GetClassIDInfo2, k, &module, &td, &parent, 4, &nargs, args) != S_OK)
            return;
        if (module == A.corelib) {
            if (td == A.box_td && nargs >= 2) {
                out->fid = state_machine(args[nargs - 1], &out->name, &out->main);
                for (ClassID p = parent; p && !A.task_cont_off;) { /* Task<T>, then Task */
                    ModuleID m2;
                    mdTypeDef t2;
                    ClassID pp = 0;
                    ULONG32 na = 0;
                    if (INFO_CALL(GetClassIDInfo2, p, &m2, &t2, &pp, 0, &na, NULL) != S_OK)
                        break;
                    if (m2 == A.corelib && t2 == A.task_td)
                        A.task_cont_off = field_off(p, "m_continuationObject");
                    p = pp;
                }
                out->off = A.task_cont_off;
                out->kind = out->fid && out->off ? K_BOX : K_OTHER;
                out->retry = !out->fid;
                return;
            }
            if (A.pbox_td && td == A.pbox_td && nargs >= 2) {
                out->fid = state_machine(args[nargs - 1], &out->name, &out->main);
                uint32_t at = field_off(parent, "_valueTaskSource"); /* StateMachineBox<TResult> */
                out->off = at && A.vts_state_off ? at + A.vts_state_off : 0;
                out->kind = out->fid && out->off ? K_POOLBOX : K_OTHER;
                out->retry = !out->fid;
                return;
            }
            if (td == A.task_td) {
                if (!A.task_cont_off)
                    A.task_cont_off = field_off(k, "m_continuationObject");
                out->off = A.task_cont_off;
                out->kind = out->off ? K_TASK : K_OTHER;
                return;
            }
            if (A.atc_td && td == A.atc_td) {
                if (!A.atc_action_off)
                    A.atc_action_off = field_off(k, "m_action");
                out->off = A.atc_action_off;
                out->kind = out->off ? K_ACTION_OWNER : K_OTHER;
                return;
            }
            if (td == A.delegate_td) {
                if (!A.delegate_target_off)
                    A.delegate_target_off = field_off(k, "_target");
                out->off = A.delegate_target_off;
                out->kind = out->off ? K_DELEGATE : K_OTHER;
                return;
            }
            if (A.wrapper_td && td == A.wrapper_td) {
                if (!A.wrapper_cont_off)
                    A.wrapper_cont_off = field_off(k, "_continuation");
                out->off = A.wrapper_cont_off;
                out->kind = out->off ? K_WRAPPER : K_OTHER;
                return;
            }
        }
        k = parent;
    }
}

static uint32_t type_home(uintptr_t mt) {
    return (uint32_t)(((uint64_t)mt * 0x9E3779B97F4A7C15ull) >> 40) & (TYPE_HASH - 1);
}

/* The class of mt, from the table or classified once; NULL when the table is full. */
static const atype *type_of(uintptr_t mt, atype *scratch) {
    uint32_t h = type_home(mt);
    for (uint32_t p = 0; p < TYPE_HASH; p++) {
        uint32_t i = atomic_load_explicit(&A.type_hash[(h + p) & (TYPE_HASH - 1)], memory_order_acquire);
        if (!i)
            break;
        if (A.types[i - 1].mt == mt)
            return &A.types[i - 1];
    }
    atype t;
    classify(mt, &t);
    if (t.retry) { /* not kept: the caller's one look */
        *scratch = t;
        return scratch;
    }
    const atype *found = NULL;
    pthread_mutex_lock(&A.mu);
    uint32_t p = 0, slot = 0;
    for (; p < TYPE_HASH; p++) {
        slot = (h + p) & (TYPE_HASH - 1);
        uint32_t i = atomic_load_explicit(&A.type_hash[slot], memory_order_relaxed);
        if (!i)
            break;
        if (A.types[i - 1].mt == mt) {
            found = &A.types[i - 1];
            break;
        }
    }
    uint32_t n = atomic_load_explicit(&A.ntypes, memory_order_relaxed);
    if (!found && p < TYPE_HASH && n < TYPES && n * 2 < TYPE_HASH) {
        A.types[n] = t;
        atomic_store_explicit(&A.ntypes, n + 1, memory_order_relaxed);
        atomic_store_explicit(&A.type_hash[slot], n + 1, memory_order_release);
        found = &A.types[n];
    }
    pthread_mutex_unlock(&A.mu);
    return found;
}

/* ---- chains ---- */

static uint32_t chain_home(uint32_t parent, uint64_t fid) {
    uint64_t x = fid * 0x9E3779B97F4A7C15ull ^ (uint64_t)parent * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(x >> 40) & (CHAIN_HASH - 1);
}

/* The node for fid under parent; 0 when the table is full. */
static uint32_t chain_child(uint32_t parent, uint64_t fid, uint32_t name) {
    uint32_t h = chain_home(parent, fid);
    for (uint32_t p = 0; p < CHAIN_HASH; p++) {
        uint32_t i = atomic_load_explicit(&A.chain_hash[(h + p) & (CHAIN_HASH - 1)], memory_order_acquire);
        if (!i)
            break;
        if (A.chain[i].parent == parent && A.chain[i].fid == fid)
            return i;
    }
    uint32_t found = 0;
    pthread_mutex_lock(&A.mu);
    uint32_t p = 0, slot = 0;
    for (; p < CHAIN_HASH; p++) {
        slot = (h + p) & (CHAIN_HASH - 1);
        uint32_t i = atomic_load_explicit(&A.chain_hash[slot], memory_order_relaxed);
        if (!i)
            break;
        if (A.chain[i].parent == parent && A.chain[i].fid == fid) {
            found = i;
            break;
        }
    }
    uint32_t n = atomic_load_explicit(&A.nchain, memory_order_relaxed);
    if (!found && p < CHAIN_HASH && n < CHAIN_NODES) {
        A.chain[n] = (chain_node){parent, name, fid};
        atomic_store_explicit(&A.nchain, n + 1, memory_order_relaxed);
        atomic_store_explicit(&A.chain_hash[slot], n, memory_order_release);
        found = n;
    }
    pthread_mutex_unlock(&A.mu);
    return found;
}

static uintptr_t field_ptr(uintptr_t obj, uint32_t off) {
    return *(const uintptr_t *)(obj + off);
}

/* The callers that awaited the box, as a chain node (0: none). */
static uint32_t chain_of(uintptr_t box, const atype *bt) {
    uint64_t fids[CALLERS];
    uint32_t names[CALLERS];
    unsigned n = 0, steps = 0;
    int unknown = 1, main = bt->main;
    uintptr_t o = field_ptr(box, bt->off);
    while (o) {
        if (++steps > STEPS)
            break; /* a cycle, or a chain too long: its outer end is not known */
        atype tmp;
        const atype *t = type_of(*(const uintptr_t *)o, &tmp);
        if (!t || t->kind == K_OTHER)
            break;
        if (t->kind == K_BOX || t->kind == K_POOLBOX) {
            if (n == CALLERS)
                break;
            fids[n] = t->fid;
            names[n] = t->name;
            main = t->main;
            n++;
        }
        o = field_ptr(o, t->off);
    }
    /* The outermost method known: nobody awaits it, or something the chain
     * cannot follow does (a synchronous wait, several awaiters, a custom
     * awaiter's state). Said, except above an async Main, which the runtime's
     * entry point waits for. */
    if (steps <= STEPS && n < CALLERS)
        unknown = !main;
    uint32_t node = 0;
    if (unknown) {
        atomic_fetch_add_explicit(&A.unknown_ends, 1, memory_order_relaxed);
        node = chain_child(0, 0, A.unknown_name);
    }
    for (unsigned k = n; k-- > 0;)
        node = chain_child(node, fids[k], names[k]);
    return node;
}

/* ---- the probe ---- */

/* Called first by every resume (rewrite), in cooperative mode, with the
 * address of the box's MoveNext's `this`. Resumes whose frames are gone (at or
 * below this one's place on the stack: the thread left them) end here. */
void async_probe(uintptr_t this_home) {
    athread *t = thread_get();
    if (!t) {
        atomic_fetch_add_explicit(&A.no_state, 1, memory_order_relaxed);
        return;
    }
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    while (d && t->r[d - 1].csp <= this_home)
        d--;
    atomic_store_explicit(&t->depth, d, memory_order_relaxed);
    if (d == RESUMES) {
        atomic_fetch_add_explicit(&A.full, 1, memory_order_relaxed);
        return;
    }
    uintptr_t self = *(const uintptr_t *)this_home;
    resume r = {this_home, this_home, 0, 0, 0};
    atype tmp;
    const atype *bt = self ? type_of(*(const uintptr_t *)self, &tmp) : NULL;
    if (bt && (bt->kind == K_BOX || bt->kind == K_POOLBOX)) {
        r.resumed = bt->fid;
        r.name = bt->name;
        r.chain = chain_of(self, bt);
    }
    t->r[d] = r;
    atomic_signal_fence(memory_order_release); /* the entry is whole before the handler can see it */
    atomic_store_explicit(&t->depth, d + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&A.resumes, 1, memory_order_relaxed);
}

int async_sample_state(uint64_t sp, uint64_t *fp, uint32_t *chain, uint64_t *resumed, uint32_t *name) {
    if (!A.on)
        return 0;
    athread *t = thread_here();
    if (!t)
        return 0;
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    atomic_signal_fence(memory_order_acquire);
    if (d > RESUMES)
        return 0;
    while (d && t->r[d - 1].fp < sp) /* below the stack pointer: a resume that has returned */
        d--;
    if (!d || !t->r[d - 1].resumed)
        return 0;
    *fp = t->r[d - 1].fp;
    *chain = t->r[d - 1].chain;
    *resumed = t->r[d - 1].resumed;
    *name = t->r[d - 1].name;
    return 1;
}

unsigned async_logical_stack(uint64_t *f, unsigned n, unsigned cap) {
    if (!A.on || !n)
        return n;
    athread *t = thread_here();
    if (!t)
        return n;
    uintptr_t sp = (uintptr_t)&t; /* this thread's stack, below every frame of f */
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    while (d && t->r[d - 1].fp < sp)
        d--;
    if (!d || !t->r[d - 1].resumed)
        return n;
    const resume *r = &t->r[d - 1];
    /* the resumed method's frame, with the resume's own just below it */
    for (unsigned i = 0; i < n; i++) {
        if (f[i] != r->resumed)
            continue;
        int live = 0;
        for (unsigned j = i + 1; j < n && j <= i + 3 && !live; j++)
            live = async_is_resume_frame(f[j]);
        if (!live)
            return n;
        unsigned m = i + 1, limit = atomic_load_explicit(&A.nchain, memory_order_acquire);
        for (uint32_t c = r->chain; c && c < limit && m < cap; c = A.chain[c].parent)
            if (A.chain[c].fid)
                f[m++] = A.chain[c].fid;
        return m > i + 1 ? m : n; /* no caller known (nobody awaited yet): the thread's own stack */
    }
    return n;
}

uint32_t async_chain_frames(uint32_t chain, uint64_t *funcs, uint32_t *names, uint32_t cap) {
    uint32_t n = 0, limit = atomic_load_explicit(&A.nchain, memory_order_acquire);
    for (uint32_t c = chain; c && c < limit && n < cap; c = A.chain[c].parent) {
        funcs[n] = A.chain[c].fid | ASYNC_FRAME_CALLER;
        names[n] = A.chain[c].name;
        n++;
    }
    return n;
}

/* ---- start and end ---- */

void async_configure(const agent_config *cfg, uint32_t *mask) {
    A.on = 0;
    int sampled = cfg->sample && cfg->sample != SAMPLER_SUSPEND;
    if (!cfg->async || (!sampled && !cfg->exc_stacks))
        return;
    if (g_agent.attached) {
        rec_note(1, "async stacks: not by attach yet (the resumes are instrumented as they are first "
                    "compiled); sampled stacks are physical");
        return;
    }
    A.chain = calloc(CHAIN_NODES, sizeof *A.chain);
    A.chain_hash = calloc(CHAIN_HASH, sizeof *A.chain_hash);
    if (!A.chain || !A.chain_hash || pthread_key_create(&A.key, thread_gone) != 0) {
        free(A.chain);
        free((void *)A.chain_hash);
        A.chain = NULL;
        A.chain_hash = NULL;
        agent_say("async stacks: out of memory; sampled stacks stay physical");
        return;
    }
    atomic_store(&A.nchain, 1); /* 0: no chain */
    A.on = 1;
    /* compilations (the resumes' IL, the state machines), inlining and
     * precompiled code (the resumes are compiled, whole) */
    *mask |= COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_CACHE_SEARCHES;
}

void async_install(void) {
    if (!A.on)
        return;
    const char unknown[] = "[async caller unknown]";
    A.unknown_name = rec_string(unknown, sizeof unknown - 1);
    rec_note(0, "async stacks: on (the resumes of async methods call dnprof first; docs/async.md)");
}

void async_shutdown(void) {
    if (!A.on)
        return;
    rec_note(0, "async stacks: %llu resumes, %llu chains ending in an unknown caller, %u chain nodes, %u classes%s",
             (unsigned long long)atomic_load(&A.resumes), (unsigned long long)atomic_load(&A.unknown_ends),
             (unsigned)atomic_load(&A.nchain) - 1, (unsigned)atomic_load(&A.ntypes),
             atomic_load(&A.full) || atomic_load(&A.no_state) ? " (some resumes not followed: nesting or thread slots)"
                                                                : "");
}
