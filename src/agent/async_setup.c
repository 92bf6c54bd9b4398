/* async_setup.c: async stacks' set-up (async_internal.h, docs/async.md): what
 * CoreLib's async machinery is made of (its tokens, the offsets read once, the
 * probe's call signature), the compiler's state machines as they are compiled,
 * and the new IL of the resumes: the probe's call, then their own code. */
#include "async_internal.h"

#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "il_body.h"
#include "module_md.h"
#include "names.h"

/* ---- CoreLib's types ---- */

/* The probe's call site signature, a token added to CoreLib's metadata:
 * unmanaged[SuppressGCTransition] void(native int), the convention in a modopt
 * on the return type (ECMA-335 II.23.2.3, IMAGE_CEE_CS_CALLCONV_UNMANAGED). 0
 * when the runtime refuses. */
static mdSignature probe_signature(ModuleID module) {
    mdSignature tok = 0;
    mdTypeDef sgc = 0;
    IUnknown *eu = NULL;
    if ((sgc = async_corelib_type("System.Runtime.CompilerServices.CallConvSuppressGCTransition", 0)) != 0 &&
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
        if (emit->lpVtbl->GetTokenFromSig(emit, sig, (ULONG)k, &tok) != S_OK)
            tok = 0;
        emit->lpVtbl->Release(emit);
    }
    return tok;
}

/* Whether module is CoreLib: then the tokens, once. Under A.mu. */
static int corelib_setup(ModuleID module) {
    if (A.corelib_ready)
        return A.corelib == module && A.corelib_ready > 0;
    if (!module_is_corelib(module))
        return 0;
    A.corelib = module;
    A.corelib_ready = -1;
    if (module_md_read(module, &A.md) != 0) {
        agent_say("async stacks: CoreLib's metadata could not be read in place; sampled stacks stay physical");
        return 0;
    }
    mdTypeDef i32 = 0;
    if (async_corelib_facts(&i32) != 0)
        return 0; /* said why */
    /* a pooled box's awaiter: _valueTaskSource._continuationState, the second
     * within the struct whatever TResult is (its references come first): read
     * for ManualResetValueTaskSourceCore<int> (not from a hook: it loads the type) */
    ClassID i32c = 0, vtsc = 0;
    if (i32 && A.mrvtsc_td && INFO_CALL(GetClassFromToken, module, i32, &i32c) == S_OK &&
        INFO_CALL(GetClassFromTokenAndTypeArgs, module, A.mrvtsc_td, 1, &i32c, &vtsc) == S_OK)
        A.vts_state_off = async_field_off(vtsc, "_continuationState");
    /* the probe's signature is made at the first resume compiled (async_jit_started): CoreLib's
     * metadata opened for writing costs about 18 ms, which a program that never awaits should not pay */
    A.corelib_ready = 1;
    return 1;
}

/* ---- state machines: their MoveNext, found when it is compiled ----
 *
 * The hooks may not ask for a module's metadata (the runtime refuses it inside
 * enter/leave: CORPROF_E_UNSUPPORTED_CALL_SEQUENCE), so every compiled method
 * (the mapper) and every precompiled one (the ReadyToRun search) that is the
 * MoveNext of a compiler-made state machine (a class named <Method>d__N, or
 * <<Method>g__Local|i_j>d for a local function, <<Method>b__i_j>d for a lambda) is
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

/* The last few modules' metadata (every compiled or precompiled method is
 * looked at, mostly from the same modules), copied out under the lock. */
#define MDS 16
static struct {
    ModuleID module;
    int ok;
    dnp_md md;
} g_mds[MDS];
static unsigned g_mds_next;

static int module_md(ModuleID module, dnp_md *out) {
    pthread_mutex_lock(&A.mu);
    for (unsigned i = 0; i < MDS; i++) {
        if (g_mds[i].module == module) {
            int ok = g_mds[i].ok;
            if (ok)
                *out = g_mds[i].md;
            pthread_mutex_unlock(&A.mu);
            return ok ? 0 : -1;
        }
    }
    pthread_mutex_unlock(&A.mu);
    int ok = module_md_read(module, out) == 0;
    pthread_mutex_lock(&A.mu);
    unsigned i = g_mds_next++ % MDS;
    g_mds[i].module = module;
    g_mds[i].ok = ok;
    if (ok)
        g_mds[i].md = *out;
    pthread_mutex_unlock(&A.mu);
    return ok ? 0 : -1;
}

void async_module_unloading(ModuleID module) {
    if (!A.on)
        return;
    pthread_mutex_lock(&A.mu);
    for (unsigned i = 0; i < MDS; i++)
        if (g_mds[i].module == module)
            g_mds[i].module = 0; /* its image goes away: read again if its ID comes back */
    pthread_mutex_unlock(&A.mu);
}

/* Notes fid if it is a state machine's MoveNext; whether it is. Not in a hook. */
static int machine_note(FunctionID fid, ModuleID module, mdToken tok) {
    dnp_md md;
    if (!fid || !module || !tok || (module == A.corelib && A.corelib_ready > 0 && async_corelib_not_move(tok)) ||
        module_md(module, &md) != 0 || !dnp_md_method_is(&md, tok, "MoveNext"))
        return 0;
    mdTypeDef td = dnp_md_method_owner(&md, tok);
    if (!td)
        return 0;
    if (machine_get(module, td))
        return 1;
    /* <M>d__N (a method), <<M>g__L|i_j>d (a local function), <<M>b__i_j>d (a lambda) */
    const char *name = dnp_md_type_name(&md, td);
    size_t nl = strlen(name);
    if (name[0] != '<' || (!strstr(name, ">d__") && !(nl > 2 && strcmp(name + nl - 2, ">d") == 0)))
        return 0;
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
        /* an async Main's: `async Task Main` (<Main>d__N) or top-level statements that await (<<Main>$>d__N) */
        m->main = strncmp(name, "<Main>d__", 9) == 0 || strncmp(name, "<<Main>$>d__", 12) == 0;
        atomic_store_explicit(&m->key, ((uint64_t)module ^ td) | 1, memory_order_release);
        atomic_fetch_add(&g_nmachines, 1);
        break;
    }
    pthread_mutex_unlock(&A.mu);
    return 1;
}

/* A box's state machine: its MoveNext, its name, whether it is an async Main's
 * (in a hook: the class's token only). 0 when not noted yet. */
int async_machine_move(FunctionID fid, ModuleID module, mdToken token) {
    return A.on && machine_note(fid, module, token);
}

uint64_t async_state_machine(ClassID tsm, uint32_t *name, uint8_t *is_main) {
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
static _Atomic uint64_t g_plumb_fids[RESUME_FIDS]; /* every instantiation of the plumbing's methods */

/* Sets of FunctionIDs, written as methods are compiled, read by the sampler
 * thread without a lock. */
static void fid_set_add(_Atomic uint64_t *set, FunctionID fid) {
    uint32_t h = (uint32_t)((fid >> 3) * 0x9E3779B97F4A7C15ull >> 52) & (RESUME_FIDS - 1);
    for (uint32_t p = 0; p < RESUME_FIDS / 2; p++) {
        _Atomic uint64_t *slot = &set[(h + p) & (RESUME_FIDS - 1)];
        uint64_t seen = 0;
        if (atomic_compare_exchange_strong(slot, &seen, fid) || seen == fid)
            return;
    }
}

static int fid_set_has(_Atomic uint64_t *set, uint64_t fid) {
    if (!fid)
        return 0;
    uint32_t h = (uint32_t)((fid >> 3) * 0x9E3779B97F4A7C15ull >> 52) & (RESUME_FIDS - 1);
    for (uint32_t p = 0; p < RESUME_FIDS / 2; p++) {
        uint64_t v = atomic_load_explicit(&set[(h + p) & (RESUME_FIDS - 1)], memory_order_relaxed);
        if (v == fid)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}

static void resume_fid_note(FunctionID fid) {
    fid_set_add(g_resume_fids, fid);
}

int async_is_resume_frame(uint64_t fid) {
    return fid_set_has(g_resume_fids, fid);
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
    for (unsigned k = 0; corelib && tok && k < PLUMB_TOKENS; k++)
        if (A.plumb_tok[k] == tok)
            fid_set_add(g_plumb_fids, fid);
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
    for (unsigned k = 0; tok && k < PLUMB_TOKENS; k++)
        if (A.plumb_tok[k] == tok)
            fid_set_add(g_plumb_fids, fid); /* an instantiation compiled, not precompiled */
    int which = tok == A.box_move ? 0 : tok == A.pbox_move ? 1 : -1;
    if (which < 0 || !tok)
        return;
    pthread_mutex_lock(&A.mu);
    if (!A.probe_sig && A.corelib_ready > 0) {
        A.probe_sig = probe_signature(A.corelib);
        if (!A.probe_sig) {
            A.corelib_ready = -1; /* as if CoreLib had no resumes: every stack stays physical */
            agent_say("async stacks: CoreLib takes no new call signature here; sampled stacks stay physical");
        }
    }
    int first = A.probe_sig && !A.rewritten[which];
    if (first)
        A.rewritten[which] = 1;
    pthread_mutex_unlock(&A.mu);
    if (!A.probe_sig)
        return;
    resume_fid_note(fid);
    if (first)
        rewrite(tok);
}

int async_is_plumbing(uint64_t fid) {
    return fid_set_has(g_plumb_fids, fid);
}
