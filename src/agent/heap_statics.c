/* heap_statics.c: the objects static fields hold (heap_statics.h). The runtime
 * keeps reference-type statics in pinned Object[] arrays a handle holds; it
 * says where each one is (ICorProfilerInfo2::GetAppDomainStaticAddress) for a
 * class it has loaded, and the class's metadata says which fields are static
 * and of reference type. The classes are those the heap walk saw (and their
 * parents) and those of the JIT-compiled methods (EnumJITedFunctions): asking
 * for a class by token (GetClassFromToken) would load it, so is not done. */
#include "heap_statics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "names.h"
#include "utf16.h"

/* ICorProfilerFunctionEnum (corprof.idl). */
typedef struct function_enum_vtbl {
    DNP_ENUM_SLOTS(ICorProfilerFunctionEnum, COR_PRF_FUNCTION)
} function_enum_vtbl;
struct ICorProfilerFunctionEnum {
    const function_enum_vtbl *lpVtbl;
};

#define MAX_DEPTH 32       /* parents looked at */
#define MAX_CLASSES (1u << 20)

enum { fdStatic = 0x10, fdLiteral = 0x40, fdHasFieldRVA = 0x100 };

typedef struct cls {
    ModuleID mod;
    mdTypeDef td;
    ClassID id;
} cls;

typedef struct cls_list {
    cls *v;
    size_t n, cap;
} cls_list;

/* Adds id with its module and token (arrays and unknown classes are left out). */
static void add(cls_list *l, ClassID id) {
    if (!id || l->n >= MAX_CLASSES)
        return;
    ModuleID mod = 0;
    mdTypeDef td = 0;
    if (FAILED(INFO_CALL(GetClassIDInfo, id, &mod, &td)) || !mod || !td)
        return;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 1024;
        cls *v = realloc(l->v, nc * sizeof *v);
        if (!v)
            return;
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = (cls){mod, td, id};
}

ClassID heap_class_parent(ClassID id) {
    ModuleID m = 0;
    mdTypeDef td = 0;
    ClassID parent = 0;
    ULONG32 na = 0;
    if (FAILED(INFO_CALL(GetClassIDInfo2, id, &m, &td, &parent, 0, &na, NULL)))
        return 0;
    return parent;
}

/* id and its parents. */
static void add_with_parents(cls_list *l, ClassID id) {
    for (int depth = 0; id && depth < MAX_DEPTH; depth++) {
        add(l, id);
        id = heap_class_parent(id);
    }
}

static void add_jitted(cls_list *l) {
    ICorProfilerFunctionEnum *en = NULL;
    if (FAILED(INFO_CALL(EnumJITedFunctions, &en)) || !en)
        return;
    COR_PRF_FUNCTION f[256];
    ULONG got = 0;
    ClassID last = 0;
    /* Next gives S_FALSE with the last, shorter batch. */
    while (SUCCEEDED(en->lpVtbl->Next(en, 256, f, &got)) && got > 0 && got <= 256) {
        for (ULONG i = 0; i < got; i++) {
            ClassID c = 0;
            ModuleID m = 0;
            mdToken tok = 0;
            if (SUCCEEDED(INFO_CALL(GetFunctionInfo, f[i].functionId, &c, &m, &tok)) && c &&
                c != last)
                add(l, last = c); /* a class's methods often come in turn */
        }
    }
    en->lpVtbl->Release(en);
}

static int cmp_cls(const void *a, const void *b) {
    const cls *x = a, *y = b;
    if (x->mod != y->mod)
        return x->mod < y->mod ? -1 : 1;
    if (x->td != y->td)
        return x->td < y->td ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Skips a compressed integer (ECMA-335 II.23.2). */
static const COR_SIGNATURE *skip_int(const COR_SIGNATURE *s, const COR_SIGNATURE *end) {
    if (s >= end)
        return end;
    return s + ((*s & 0x80) == 0 ? 1 : (*s & 0xc0) == 0x80 ? 2 : 4);
}

/* Whether a field signature's type is a reference (string, object, class,
 * array, or a generic class); value types and type variables are not. */
static int ref_type(PCCOR_SIGNATURE sig, ULONG n) {
    const COR_SIGNATURE *s = sig, *end = sig + n;
    if (s >= end || *s++ != 0x06 /* FIELD */)
        return 0;
    while (s < end && (*s == 0x1f || *s == 0x20)) /* CMOD_REQD / CMOD_OPT and their token */
        s = skip_int(s + 1, end);
    if (s >= end)
        return 0;
    switch (*s) {
    case 0x0e: /* STRING */
    case 0x12: /* CLASS */
    case 0x14: /* ARRAY */
    case 0x1c: /* OBJECT */
    case 0x1d: /* SZARRAY */
        return 1;
    case 0x15: /* GENERICINST: CLASS or VALUETYPE follows */
        return s + 1 < end && s[1] == 0x12;
    default:
        return 0;
    }
}

typedef struct scan {
    heap_static_fn fn;
    void *ctx;
    size_t found;
    char name[1024];
} scan;

/* The static reference fields of one class, and the objects they hold. */
static void class_statics(scan *sc, IMetaDataImport *imp, const cls *c, AppDomainID domain) {
    HCORENUM e = NULL;
    mdFieldDef fields[64];
    ULONG got = 0;
    size_t base = 0;
    while (SUCCEEDED(imp->lpVtbl->EnumFields(imp, &e, c->td, fields, 64, &got)) && got > 0 && got <= 64) {
        for (ULONG i = 0; i < got; i++) {
            WCHAR w[256];
            ULONG len = 0, nsig = 0, nval = 0;
            mdTypeDef owner = 0;
            DWORD attr = 0, cplus = 0;
            PCCOR_SIGNATURE sig = NULL;
            UVCP_CONSTANT val = NULL;
            COR_PRF_STATIC_TYPE kind = 0;
            void *addr = NULL;
            if (FAILED(imp->lpVtbl->GetFieldProps(imp, fields[i], &owner, w, 256, &len, &attr, &sig,
                                                  &nsig, &cplus, &val, &nval)) ||
                (attr & (fdStatic | fdLiteral | fdHasFieldRVA)) != fdStatic || !ref_type(sig, nsig))
                continue;
            if (FAILED(INFO_CALL(GetStaticFieldInfo, c->id, fields[i], &kind)) ||
                kind != COR_PRF_FIELD_APP_DOMAIN_STATIC ||
                FAILED(INFO_CALL(GetAppDomainStaticAddress, c->id, fields[i], domain, &addr)) || !addr)
                continue; /* a class whose statics are not set up yet: none */
            ObjectID value = *(const ObjectID *)addr;
            if (!value)
                continue;
            if (!base) { /* the class's name once, then each field after it */
                base = names_class_text(c->id, sc->name, sizeof sc->name - 300);
                sc->name[base++] = '.';
            }
            size_t n = dnp_utf16_name(w, 256, len, sc->name + base, sizeof sc->name - base);
            sc->fn(sc->name, base + n, value, sc->ctx);
            sc->found++;
        }
    }
    imp->lpVtbl->CloseEnum(imp, e);
}

static AppDomainID module_domain(ModuleID mod) {
    AssemblyID assembly = 0;
    AppDomainID domain = 0;
    ModuleID manifest = 0;
    LPCBYTE base = NULL;
    ULONG len = 0;
    if (FAILED(INFO_CALL(GetModuleInfo, mod, &base, 0, &len, NULL, &assembly)) || !assembly ||
        FAILED(INFO_CALL(GetAssemblyInfo, assembly, 0, &len, NULL, &domain, &manifest)))
        return 0;
    return domain;
}

size_t heap_statics_each(const UINT_PTR *classes, size_t n, heap_static_fn fn, void *ctx) {
    if (!AGENT_HAS_INFO(EnumJITedFunctions) || !AGENT_HAS_INFO(GetAppDomainStaticAddress))
        return 0;
    cls_list l = {0};
    for (size_t i = 0; i < n; i++)
        add_with_parents(&l, classes[i]);
    add_jitted(&l);
    qsort(l.v, l.n, sizeof *l.v, cmp_cls);
    scan *sc = malloc(sizeof *sc);
    if (!sc) {
        free(l.v);
        return 0;
    }
    sc->fn = fn;
    sc->ctx = ctx;
    sc->found = 0;
    IMetaDataImport *imp = NULL;
    ModuleID mod = 0;
    AppDomainID domain = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (i && l.v[i].id == l.v[i - 1].id)
            continue;
        if (l.v[i].mod != mod) { /* the list is by module: one import each */
            if (imp)
                imp->lpVtbl->Release(imp);
            imp = NULL;
            mod = l.v[i].mod;
            IUnknown *unk = NULL;
            if (INFO_CALL(GetModuleMetaData, mod, 0 /* ofRead */, &IID_IMetaDataImport, &unk) == S_OK)
                imp = (IMetaDataImport *)unk;
            domain = module_domain(mod);
        }
        if (imp && domain)
            class_statics(sc, imp, &l.v[i], domain);
    }
    if (imp)
        imp->lpVtbl->Release(imp);
    size_t found = sc->found;
    free(sc);
    free(l.v);
    return found;
}
