/* names.c: resolving the runtime's IDs to names, with a cache per kind of ID.
 *
 * Class names: namespace, nesting (Outer+Inner), generic arguments fully named
 * (Dictionary<System.String, System.Int32>, the `N arity suffix removed), arrays
 * (System.Int32[], System.String[,]). Functions: Namespace.Class::Method<Args>.
 * Modules: their file path. Assemblies and app domains: their names. */
#include "names.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "bg_thread.h"
#include "namebuf.h"
#include "recorder.h"
#include "thread_mem.h"
#include "u64map.h"
#include "utf16.h"

#define MAX_DEPTH 8
#define MAX_TYPE_ARGS 32
#define NAME_MAX_BYTES 2048

/* ---- a sharded map from an ID to a 64-bit value ---- */

#define MAP_SHARD_BITS 4
#define MAP_SHARDS (1 << MAP_SHARD_BITS)

typedef struct idmap {
    struct {
        pthread_mutex_t mu;
        dnp_u64map map; /* IDs are pointers, never 0 or 1 */
    } shard[MAP_SHARDS];
    atomic_uint epoch; /* bumped by every forget: a resolution that spans one is not cached */
} idmap;

static idmap maps[NAMES_KIND_COUNT];
static idmap imports; /* ModuleID -> IMetaDataImport *, holding one reference */

/* The shard of an ID: the hash's high bits (the map in the shard takes the low ones). */
static int map_shard(uint64_t key) {
    return (int)(dnp_u64map_hash(key, 0) >> (64 - MAP_SHARD_BITS));
}

static void map_init(idmap *m) {
    for (int i = 0; i < MAP_SHARDS; i++)
        pthread_mutex_init(&m->shard[i].mu, NULL);
}

static int map_get(idmap *m, uint64_t key, uint64_t *value) {
    int s = map_shard(key);
    pthread_mutex_lock(&m->shard[s].mu);
    int found = dnp_u64map_get(&m->shard[s].map, key, value);
    pthread_mutex_unlock(&m->shard[s].mu);
    return found;
}

/* Caches value unless a forget happened since epoch was read (or memory is short). */
static void map_put(idmap *m, unsigned epoch, uint64_t key, uint64_t value) {
    int s = map_shard(key);
    pthread_mutex_lock(&m->shard[s].mu);
    if (atomic_load(&m->epoch) == epoch)
        dnp_u64map_put(&m->shard[s].map, key, value, NULL);
    pthread_mutex_unlock(&m->shard[s].mu);
}

static int map_del(idmap *m, uint64_t key, uint64_t *value) {
    int s = map_shard(key);
    atomic_fetch_add(&m->epoch, 1);
    pthread_mutex_lock(&m->shard[s].mu);
    int found = dnp_u64map_del(&m->shard[s].map, key, value);
    pthread_mutex_unlock(&m->shard[s].mu);
    return found;
}

static void map_clear(idmap *m) {
    atomic_fetch_add(&m->epoch, 1);
    for (int s = 0; s < MAP_SHARDS; s++) {
        pthread_mutex_lock(&m->shard[s].mu);
        dnp_u64map_clear(&m->shard[s].map);
        pthread_mutex_unlock(&m->shard[s].mu);
    }
}

int names_init(void) {
    for (int k = 0; k < NAMES_KIND_COUNT; k++)
        map_init(&maps[k]);
    map_init(&imports);
    return 0;
}

/* ---- text ---- */

/* ---- metadata ---- */

/* GetModuleMetaData, asked on a thread of the agent's, where every call is
 * synchronous: a managed thread outside any callback (the probes' instrumented
 * code, rejit.c) is refused it (docs/design-notes.md#synchronous-calls), and a
 * stack taken there would name its frames "no metadata". Once per module: the
 * import is kept. */
#define MD_ASK_WAIT_S 2 /* a program thread waits at most this long; then the frame goes unnamed */

typedef struct md_ask {
    ModuleID module;
    IUnknown *unk;
    HRESULT hr;
    atomic_int refs; /* the asker's and the helper's: the last one frees it */
} md_ask;

static void md_ask_release(md_ask *a) {
    if (atomic_fetch_sub(&a->refs, 1) != 1)
        return;
    if (a->unk) /* the asker gave up waiting: the import is not kept */
        a->unk->lpVtbl->Release(a->unk);
    free(a);
}

static void *md_ask_main(void *arg) {
    md_ask *a = arg;
    a->hr = INFO_CALL(GetModuleMetaData, a->module, 0 /* ofRead */, &IID_IMetaDataImport, &a->unk);
    md_ask_release(a);
    return NULL;
}

static HRESULT module_metadata(ModuleID module, IUnknown **unk) {
    HRESULT hr = INFO_CALL(GetModuleMetaData, module, 0 /* ofRead */, &IID_IMetaDataImport, unk);
    if (hr != CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)
        return hr;
    md_ask *a = calloc(1, sizeof *a);
    pthread_t th;
    if (!a)
        return hr;
    a->module = module, a->hr = hr;
    atomic_init(&a->refs, 2);
    if (bg_thread_spawn(&th, md_ask_main, a) != 0) {
        free(a);
        return hr;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += MD_ASK_WAIT_S;
    if (pthread_timedjoin_np(th, NULL, &until) != 0) { /* never hang a program's thread on it */
        pthread_detach(th);
        md_ask_release(a);
        return hr;
    }
    *unk = a->unk, a->unk = NULL;
    hr = a->hr;
    md_ask_release(a);
    return hr;
}

/* A referenced IMetaDataImport for the module, or NULL. Release it after use.
 * The cache holds one reference of its own; lookups take theirs under the shard
 * lock, so that a concurrent forget cannot release the last one in between. */
static IMetaDataImport *module_import(ModuleID module) {
    int s = map_shard(module);
    IMetaDataImport *imp = NULL;
    uint64_t v;
    pthread_mutex_lock(&imports.shard[s].mu);
    if (dnp_u64map_get(&imports.shard[s].map, module, &v)) {
        imp = (IMetaDataImport *)(uintptr_t)v;
        imp->lpVtbl->AddRef(imp);
    }
    pthread_mutex_unlock(&imports.shard[s].mu);
    if (imp)
        return imp;

    unsigned epoch = atomic_load(&imports.epoch);
    IUnknown *unk = NULL;
    HRESULT hr = module_metadata(module, &unk);
    if (hr != S_OK || !unk)
        return NULL;
    imp = (IMetaDataImport *)unk;
    pthread_mutex_lock(&imports.shard[s].mu);
    if (atomic_load(&imports.epoch) == epoch && !dnp_u64map_get(&imports.shard[s].map, module, NULL) &&
        dnp_u64map_put(&imports.shard[s].map, module, (uint64_t)(uintptr_t)imp, NULL) == 0)
        imp->lpVtbl->AddRef(imp);
    pthread_mutex_unlock(&imports.shard[s].mu);
    return imp;
}

/* Appends the name of a TypeDef: Namespace.Outer+Inner, without arity suffixes. */
static void typedef_text(IMetaDataImport *imp, mdTypeDef td, dnp_namebuf *out, int depth) {
    WCHAR wname[512];
    ULONG len = 0;
    DWORD flags = 0;
    mdToken extends = 0;
    if (DNP_TOKEN_TYPE(td) != mdtTypeDef || depth > MAX_DEPTH) {
        nb_printf(out, "<token 0x%08x>", td);
        return;
    }
    HRESULT hr = imp->lpVtbl->GetTypeDefProps(imp, td, wname, 512, &len, &flags, &extends);
    if (FAILED(hr)) {
        nb_printf(out, "<typedef 0x%08x>", td);
        return;
    }
    if ((flags & tdVisibilityMask) >= tdNestedPublic) {
        mdTypeDef enclosing = 0;
        if (imp->lpVtbl->GetNestedClassProps(imp, td, &enclosing) == S_OK && enclosing != td) {
            typedef_text(imp, enclosing, out, depth + 1);
            nb_puts(out, "+");
        }
    }
    char name[1024];
    size_t n = dnp_utf16_name(wname, 512, len, name, sizeof name);
    char *tick = memchr(name, '`', n);
    if (tick)
        n = (size_t)(tick - name);
    nb_add(out, name, n);
}

const char *names_element_type(unsigned t) {
    switch (t) {
    case ELEMENT_TYPE_BOOLEAN: return "System.Boolean";
    case ELEMENT_TYPE_CHAR: return "System.Char";
    case ELEMENT_TYPE_I1: return "System.SByte";
    case ELEMENT_TYPE_U1: return "System.Byte";
    case ELEMENT_TYPE_I2: return "System.Int16";
    case ELEMENT_TYPE_U2: return "System.UInt16";
    case ELEMENT_TYPE_I4: return "System.Int32";
    case ELEMENT_TYPE_U4: return "System.UInt32";
    case ELEMENT_TYPE_I8: return "System.Int64";
    case ELEMENT_TYPE_U8: return "System.UInt64";
    case ELEMENT_TYPE_R4: return "System.Single";
    case ELEMENT_TYPE_R8: return "System.Double";
    case ELEMENT_TYPE_STRING: return "System.String";
    case ELEMENT_TYPE_I: return "System.IntPtr";
    case ELEMENT_TYPE_U: return "System.UIntPtr";
    case ELEMENT_TYPE_OBJECT: return "System.Object";
    default: return NULL;
    }
}

static void class_text(ClassID cid, dnp_namebuf *out, int depth);

static void type_args_text(const ClassID *args, ULONG32 n, dnp_namebuf *out, int depth) {
    if (n == 0)
        return;
    nb_puts(out, "<");
    for (ULONG32 i = 0; i < n && i < MAX_TYPE_ARGS; i++) {
        if (i)
            nb_puts(out, ", ");
        class_text(args[i], out, depth + 1);
    }
    nb_puts(out, ">");
}

static void class_text(ClassID cid, dnp_namebuf *out, int depth) {
    if (cid == 0) {
        nb_puts(out, "<no class>");
        return;
    }
    if (depth > MAX_DEPTH) {
        nb_puts(out, "...");
        return;
    }
    CorElementType elem = 0;
    ClassID elem_class = 0;
    ULONG rank = 0;
    if (INFO_CALL(IsArrayClass, cid, &elem, &elem_class, &rank) == S_OK) {
        const char *prim = names_element_type((unsigned)elem);
        if (elem_class)
            class_text(elem_class, out, depth + 1);
        else if (prim)
            nb_puts(out, prim);
        else
            nb_printf(out, "<element type 0x%x>", (unsigned)elem);
        nb_puts(out, "[");
        for (ULONG i = 1; i < rank && i < 32; i++)
            nb_puts(out, ",");
        nb_puts(out, "]");
        return;
    }
    ModuleID module = 0;
    mdTypeDef td = 0;
    ClassID parent = 0;
    ClassID args[MAX_TYPE_ARGS];
    ULONG32 nargs = 0;
    HRESULT hr;
    if (AGENT_HAS_INFO(GetClassIDInfo2))
        hr = INFO_CALL(GetClassIDInfo2, cid, &module, &td, &parent, MAX_TYPE_ARGS, &nargs, args);
    else
        hr = INFO_CALL(GetClassIDInfo, cid, &module, &td);
    if (FAILED(hr) || module == 0) {
        nb_printf(out, "<class 0x%llx>", (unsigned long long)cid);
        return;
    }
    IMetaDataImport *imp = module_import(module);
    if (!imp) {
        nb_printf(out, "<class 0x%llx: no metadata>", (unsigned long long)cid);
        return;
    }
    typedef_text(imp, td, out, depth);
    imp->lpVtbl->Release(imp);
    type_args_text(args, nargs > MAX_TYPE_ARGS ? MAX_TYPE_ARGS : nargs, out, depth);
}

/* Whether td is a compiler-made iterator: a class named <M>d__N (or <..>d, of
 * a local function or lambda) that implements System.Collections.IEnumerator.
 * An async method's state machine has the same kind of name (an async
 * iterator's implements IAsyncEnumerator instead); both name their step
 * MoveNext. */
static int iterator_class(IMetaDataImport *imp, mdTypeDef td) {
    WCHAR w[512];
    char name[1024];
    ULONG len = 0;
    DWORD flags = 0;
    mdToken extends = 0;
    if (FAILED(imp->lpVtbl->GetTypeDefProps(imp, td, w, 512, &len, &flags, &extends)))
        return 0;
    size_t n = dnp_utf16_name(w, 512, len, name, sizeof name);
    if (n < 4 || name[0] != '<' || (!strstr(name, ">d__") && strcmp(name + n - 2, ">d") != 0))
        return 0;
    HCORENUM e = NULL;
    mdInterfaceImpl impls[16];
    ULONG got = 0;
    int found = 0;
    if (imp->lpVtbl->EnumInterfaceImpls(imp, &e, td, impls, 16, &got) == S_OK) {
        for (ULONG i = 0; i < got && !found; i++) {
            mdTypeDef owner = 0;
            mdToken iface = 0, scope = 0;
            HRESULT hr = imp->lpVtbl->GetInterfaceImplProps(imp, impls[i], &owner, &iface);
            len = 0;
            if (SUCCEEDED(hr) && DNP_TOKEN_TYPE(iface) == mdtTypeRef)
                hr = imp->lpVtbl->GetTypeRefProps(imp, iface, &scope, w, 512, &len);
            else if (SUCCEEDED(hr) && DNP_TOKEN_TYPE(iface) == mdtTypeDef) /* CoreLib's own */
                hr = imp->lpVtbl->GetTypeDefProps(imp, iface, w, 512, &len, &flags, &extends);
            else
                continue;
            found = SUCCEEDED(hr) && dnp_utf16_name(w, 512, len, name, sizeof name) &&
                    strcmp(name, "System.Collections.IEnumerator") == 0;
        }
    }
    if (e)
        imp->lpVtbl->CloseEnum(imp, e);
    return found;
}

static void function_text(FunctionID fid, dnp_namebuf *out) {
    ClassID cls = 0;
    ModuleID module = 0;
    mdToken token = 0;
    ClassID args[MAX_TYPE_ARGS];
    ULONG32 nargs = 0;
    HRESULT hr;
    if (AGENT_HAS_INFO(GetFunctionInfo2))
        hr = INFO_CALL(GetFunctionInfo2, fid, 0, &cls, &module, &token, MAX_TYPE_ARGS, &nargs, args);
    else
        hr = INFO_CALL(GetFunctionInfo, fid, &cls, &module, &token);
    if (SUCCEEDED(hr) && token == mdtMethodDef) {
        /* No metadata row: an IL stub or a method emitted at run time. */
        nb_printf(out, "<dynamic method 0x%llx>", (unsigned long long)fid);
        return;
    }
    if (FAILED(hr) || module == 0 || DNP_TOKEN_TYPE(token) != mdtMethodDef) {
        nb_printf(out, "<function 0x%llx>", (unsigned long long)fid);
        return;
    }
    IMetaDataImport *imp = module_import(module);
    if (!imp) {
        nb_printf(out, "<function 0x%llx: no metadata>", (unsigned long long)fid);
        return;
    }
    mdTypeDef td = 0;
    WCHAR wname[512];
    ULONG len = 0;
    DWORD attr = 0, impl = 0;
    PCCOR_SIGNATURE sig = NULL;
    ULONG sig_len = 0, rva = 0;
    hr = imp->lpVtbl->GetMethodProps(imp, token, &td, wname, 512, &len, &attr, &sig, &sig_len, &rva,
                                     &impl);
    if (FAILED(hr)) {
        imp->lpVtbl->Release(imp);
        nb_printf(out, "<method 0x%08x>", token);
        return;
    }
    if (cls)
        class_text(cls, out, 0);
    else
        typedef_text(imp, td, out, 0);
    /* An iterator's MoveNext by the interface method it implements, as C#
     * names its other members (IEnumerator.get_Current, ...): "Foo (iterator)",
     * where a MoveNext alone is an async method's step, "Foo (async)". */
    static const WCHAR move_next[] = {'M', 'o', 'v', 'e', 'N', 'e', 'x', 't', 0};
    int iterator = len == 9 && memcmp(wname, move_next, sizeof move_next) == 0 && iterator_class(imp, td);
    imp->lpVtbl->Release(imp);
    nb_puts(out, iterator ? "::System.Collections.IEnumerator." : "::");
    nb_wide(out, wname, 512, len);
    type_args_text(args, nargs > MAX_TYPE_ARGS ? MAX_TYPE_ARGS : nargs, out, 0);
}

/* b's text into out[cap]; its length. */
static size_t sb_copy(const dnp_namebuf *b, char *out, size_t cap) {
    if (cap == 0)
        return 0;
    size_t n = b->len < cap - 1 ? b->len : cap - 1;
    memcpy(out, b->s, n);
    out[n] = 0;
    return n;
}

IMetaDataImport *names_module_import(ModuleID module) {
    return module && g_agent.info ? module_import(module) : NULL;
}

size_t names_typedef_text(IMetaDataImport *imp, mdTypeDef td, char *out, size_t cap) {
    dnp_namebuf b = {.len = 0};
    b.s[0] = 0;
    typedef_text(imp, td, &b, 0);
    return sb_copy(&b, out, cap);
}

size_t names_function_text(FunctionID fid, char *out, size_t cap) {
    dnp_namebuf b = {.len = 0};
    if (cap && g_agent.info)
        function_text(fid, &b);
    return sb_copy(&b, out, cap);
}

size_t names_frames_text(const FunctionID *f, unsigned n, unsigned more, size_t room, char *out, size_t cap) {
    size_t len = 0;
    if (cap == 0)
        return 0;
    out[0] = 0;
    for (unsigned i = 0; i < n && len + room < cap; i++) {
        if (i)
            out[len++] = '\n';
        len += names_function_text(f[i], out + len, cap - len);
    }
    if (more && len + 32 < cap)
        len += (size_t)snprintf(out + len, cap - len, "\n... %u more", more);
    return len;
}

int names_class_unresolved(const char *text, size_t len) {
    /* what class_text and typedef_text write when they cannot name a part */
    static const char *const marks[] = {"<no class>", "<class 0x", "<element type 0x", "<token 0x",
                                        "<typedef 0x"};
    if (!len || !text[0])
        return 1;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(text, marks[i]))
            return 1;
    return 0;
}

size_t names_class_text(ClassID cid, char *out, size_t cap) {
    dnp_namebuf b = {.len = 0};
    if (cap && g_agent.info)
        class_text(cid, &b, 0);
    return sb_copy(&b, out, cap);
}

size_t names_field_name(IMetaDataImport *imp, mdFieldDef field, char *out, size_t cap) {
    WCHAR w[256];
    ULONG len = 0;
    mdTypeDef cls = 0;
    DWORD attr = 0, cplus = 0;
    PCCOR_SIGNATURE sig = NULL;
    ULONG nsig = 0, nval = 0;
    UVCP_CONSTANT val = NULL;
    if (cap)
        out[0] = 0;
    if (FAILED(imp->lpVtbl->GetFieldProps(imp, field, &cls, w, 256, &len, &attr, &sig, &nsig, &cplus, &val,
                                          &nval)))
        return 0;
    return dnp_utf16_name(w, 256, len, out, cap);
}

size_t names_field_text(ClassID owner, mdFieldDef field, char *out, size_t cap) {
    if (!cap)
        return 0;
    out[0] = 0;
    ModuleID mod = 0;
    mdTypeDef td = 0;
    ClassID parent = 0;
    ULONG32 nargs = 0;
    if (!g_agent.info || FAILED(INFO_CALL(GetClassIDInfo2, owner, &mod, &td, &parent, 0, &nargs, NULL)))
        return 0;
    IMetaDataImport *imp = module_import(mod);
    if (!imp)
        return 0;
    size_t n = names_field_name(imp, field, out, cap);
    imp->lpVtbl->Release(imp);
    return n;
}

static void module_text(ModuleID mid, dnp_namebuf *out) {
    WCHAR wname[1024];
    ULONG len = 0;
    LPCBYTE base = NULL;
    AssemblyID assembly = 0;
    DWORD flags = 0;
    HRESULT hr;
    if (AGENT_HAS_INFO(GetModuleInfo2))
        hr = INFO_CALL(GetModuleInfo2, mid, &base, 1024, &len, wname, &assembly, &flags);
    else
        hr = INFO_CALL(GetModuleInfo, mid, &base, 1024, &len, wname, &assembly);
    if (FAILED(hr)) {
        nb_printf(out, "<module 0x%llx>", (unsigned long long)mid);
        return;
    }
    if (len > 1) {
        nb_wide(out, wname, 1024, len);
        return;
    }
    /* No file: a dynamic or in-memory module, or a single-file bundle. */
    WCHAR aname[512];
    ULONG alen = 0;
    AppDomainID ad = 0;
    ModuleID amod = 0;
    nb_puts(out, "<in-memory module of ");
    if (assembly && SUCCEEDED(INFO_CALL(GetAssemblyInfo, assembly, 512, &alen, aname, &ad, &amod)) && alen > 1)
        nb_wide(out, aname, 512, alen);
    else
        nb_puts(out, "an unknown assembly");
    nb_puts(out, ">");
}

static void assembly_text(AssemblyID aid, dnp_namebuf *out) {
    WCHAR wname[512];
    ULONG len = 0;
    AppDomainID ad = 0;
    ModuleID mod = 0;
    if (FAILED(INFO_CALL(GetAssemblyInfo, aid, 512, &len, wname, &ad, &mod)) || len == 0) {
        nb_printf(out, "<assembly 0x%llx>", (unsigned long long)aid);
        return;
    }
    nb_wide(out, wname, 512, len);
}

static void appdomain_text(AppDomainID adid, dnp_namebuf *out) {
    WCHAR wname[512];
    ULONG len = 0;
    ProcessID pid = 0;
    if (FAILED(INFO_CALL(GetAppDomainInfo, adid, 512, &len, wname, &pid)) || len == 0) {
        nb_printf(out, "<appdomain 0x%llx>", (unsigned long long)adid);
        return;
    }
    nb_wide(out, wname, 512, len);
}

/* A small per-thread cache in front of the shared maps, so that the events
 * raised most often (allocations, JIT, class loads on one thread) take no lock.
 * An entry is good while its kind's epoch has not moved: any forget moves it. */
#define TCACHE_SIZE 256
typedef struct tcache_entry {
    uint64_t id;
    uint32_t sid;
    unsigned epoch;
} tcache_entry;
typedef struct names_tls {
    tcache_entry e[NAMES_KIND_COUNT][TCACHE_SIZE];
} names_tls;
static __thread thread_mem_slot t_mem; /* thread_mem.h */

uint32_t names_get(names_kind kind, UINT_PTR id, int resolve) {
    uint64_t v;
    if (id <= 1)
        return 0;
    unsigned epoch = atomic_load_explicit(&maps[kind].epoch, memory_order_acquire);
    names_tls *t = thread_mem(&t_mem, sizeof *t, 0);
    tcache_entry none, *te = t ? &t->e[kind][(dnp_u64map_hash(id, 0) >> 16) & (TCACHE_SIZE - 1)] : &none;
    if (t && te->id == id && te->epoch == epoch && te->sid)
        return te->sid;
    if (map_get(&maps[kind], id, &v)) {
        *te = (tcache_entry){id, (uint32_t)v, epoch};
        return (uint32_t)v;
    }
    if (!resolve || !g_agent.info)
        return 0;
    dnp_namebuf b;
    b.len = 0;
    b.s[0] = 0;
    switch (kind) {
    case NAMES_APPDOMAIN: appdomain_text(id, &b); break;
    case NAMES_ASSEMBLY: assembly_text(id, &b); break;
    case NAMES_MODULE: module_text(id, &b); break;
    case NAMES_CLASS: class_text(id, &b, 0); break;
    case NAMES_FUNCTION: function_text(id, &b); break;
    default: return 0;
    }
    uint32_t sid = rec_string(b.s, b.len);
    /* A name that failed to resolve is not cached: it may resolve later. */
    if (sid && b.s[0] != '<')
        map_put(&maps[kind], epoch, id, sid);
    return sid;
}

unsigned names_epoch(names_kind kind) {
    return atomic_load_explicit(&maps[kind].epoch, memory_order_acquire);
}

void names_forget(names_kind kind, UINT_PTR id) {
    map_del(&maps[kind], id, NULL);
}

void names_forget_module(ModuleID module) {
    map_del(&maps[NAMES_MODULE], module, NULL);
    map_clear(&maps[NAMES_CLASS]);
    map_clear(&maps[NAMES_FUNCTION]);
    uint64_t v = 0;
    if (map_del(&imports, module, &v) && v) {
        IMetaDataImport *imp = (IMetaDataImport *)(uintptr_t)v;
        imp->lpVtbl->Release(imp);
    }
}

uint32_t names_object_class(ObjectID object, ClassID *class_out) {
    ClassID cid = 0;
    if (object && g_agent.info)
        INFO_CALL(GetClassFromObject, object, &cid);
    if (class_out)
        *class_out = cid;
    return cid ? names_get(NAMES_CLASS, cid, 1) : 0;
}
