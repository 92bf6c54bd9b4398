/* calls_args.c: the text of a call's arguments and return value (--args, the
 * slow path). The runtime gives one memory range per argument (this first) and
 * one for the return value (GetFunctionEnter3Info / GetFunctionLeave3Info; a
 * struct the SysV ABI splits across registers is copied into one range); the
 * method's signature (metadata, sig.c) says what each holds. The format
 * (docs/calls.md):
 *
 *   this=<Scenarios.Counter>, a=-8, s="héllo", c='é', d=1.5, e=Scenarios.Color.Red|Blue,
 *   p=Scenarios.Two{A=2, B=3}, b=Scenarios.Big{32 bytes: 0b 00 ...}, r=ref 41,
 *   o=<Scenarios.Payload>, n=null
 *
 * Strings are cut at CALLS_STRING_MAX characters ("..." follows). Anything the
 * decoder cannot read shows as ? with what it is, never a crash: only memory
 * the runtime pointed at is read, and objects only through their header. */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "calls_internal.h"
#include "namebuf.h"
#include "names.h"
#include "sig.h"
#include "utf16.h"

#define CALLS_STRING_MAX 100
#define MAX_RANGES 64
#define MAX_FIELDS 16

typedef struct tbuf {
    char *s;
    size_t len, cap;
} tbuf;

static void tb_add(tbuf *b, const char *s, size_t n) {
    b->len = dnp_append(b->s, b->len, b->cap, s, n);
}

static void tb_puts(tbuf *b, const char *s) {
    tb_add(b, s, strlen(s));
}

static void tb_printf(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(tbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    b->len = dnp_vappend(b->s, b->len, b->cap, fmt, ap);
    va_end(ap);
}

/* The shortest text that reads back as the same double. */
static void tb_double(tbuf *b, double v, int is_float) {
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (is_float ? (float)strtod(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
            break;
    }
    tb_puts(b, tmp);
}

static void tb_utf16(tbuf *b, const WCHAR *w, size_t n) {
    char tmp[CALLS_STRING_MAX * 4 + 8];
    size_t len = dnp_utf16_to_utf8(w, n, tmp, sizeof tmp);
    tb_add(b, tmp, len);
}

/* ---- metadata ---- */

typedef struct mdctx {
    IMetaDataImport *imp; /* the method's module */
    const ClassID *class_args, *method_args;
    ULONG32 nclass_args, nmethod_args;
} mdctx;

static IMetaDataImport *module_import(ModuleID module) {
    IUnknown *unk = NULL;
    if (INFO_CALL(GetModuleMetaData, module, 0, &IID_IMetaDataImport, &unk) != S_OK || !unk)
        return NULL;
    return (IMetaDataImport *)unk;
}

/* The TypeDef of a TypeDef or TypeRef token, and the scope that holds it (a
 * reference to release). 0 or -1. */
static int resolve_typedef(IMetaDataImport *imp, mdToken tok, IMetaDataImport **scope, mdTypeDef *td) {
    if (DNP_TOKEN_TYPE(tok) == mdtTypeDef) {
        imp->lpVtbl->AddRef(imp);
        *scope = imp;
        *td = tok;
        return 0;
    }
    if (DNP_TOKEN_TYPE(tok) != mdtTypeRef)
        return -1;
    IUnknown *unk = NULL;
    if (imp->lpVtbl->ResolveTypeRef(imp, tok, &IID_IMetaDataImport, &unk, td) != S_OK || !unk)
        return -1;
    *scope = (IMetaDataImport *)unk;
    return 0;
}

static void typedef_name(IMetaDataImport *imp, mdTypeDef td, char *out, size_t cap, mdToken *extends) {
    WCHAR w[512];
    ULONG len = 0;
    DWORD flags = 0;
    mdToken ext = 0;
    out[0] = 0;
    if (FAILED(imp->lpVtbl->GetTypeDefProps(imp, td, w, 512, &len, &flags, &ext))) {
        snprintf(out, cap, "<typedef 0x%08x>", td);
        return;
    }
    dnp_utf16_name(w, 512, len, out, cap);
    char *tick = strchr(out, '`');
    if (tick)
        *tick = 0;
    if (extends)
        *extends = ext;
}

static int is_system_enum(IMetaDataImport *imp, mdToken ext) {
    WCHAR w[256];
    ULONG len = 0;
    char name[256];
    if (DNP_TOKEN_TYPE(ext) == mdtTypeRef) {
        mdToken scope = 0;
        if (FAILED(imp->lpVtbl->GetTypeRefProps(imp, ext, &scope, w, 256, &len)))
            return 0;
    } else if (DNP_TOKEN_TYPE(ext) == mdtTypeDef) {
        DWORD flags;
        mdToken e2;
        if (FAILED(imp->lpVtbl->GetTypeDefProps(imp, ext, w, 256, &len, &flags, &e2)))
            return 0;
    } else {
        return 0;
    }
    dnp_utf16_name(w, 256, len, name, sizeof name);
    return strcmp(name, "System.Enum") == 0;
}

typedef struct field_info {
    char name[128];
    uint8_t elem;
    DWORD flags;
    uint64_t constant; /* literal fields (enum members) */
    int has_constant;
} field_info;

/* The fields of a TypeDef (up to MAX_FIELDS); -1 if there are more. */
static int typedef_fields(IMetaDataImport *imp, mdTypeDef td, field_info *out, int *n) {
    HCORENUM e = NULL;
    mdFieldDef fields[MAX_FIELDS + 1];
    ULONG count = 0;
    *n = 0;
    HRESULT hr = imp->lpVtbl->EnumFields(imp, &e, td, fields, MAX_FIELDS + 1, &count);
    imp->lpVtbl->CloseEnum(imp, e);
    if (FAILED(hr))
        return -1;
    for (ULONG i = 0; i < count && i < MAX_FIELDS; i++) {
        WCHAR w[128];
        ULONG len = 0, sig_len = 0, value_len = 0;
        mdTypeDef cls;
        DWORD attr = 0, ctype = 0;
        PCCOR_SIGNATURE sig = NULL;
        UVCP_CONSTANT value = NULL;
        if (FAILED(imp->lpVtbl->GetFieldProps(imp, fields[i], &cls, w, 128, &len, &attr, &sig, &sig_len,
                                              &ctype, &value, &value_len)))
            continue;
        field_info *f = &out[(*n)++];
        memset(f, 0, sizeof *f);
        dnp_utf16_name(w, 128, len, f->name, sizeof f->name);
        f->flags = attr;
        const uint8_t *p = sig, *end = sig + sig_len;
        sig_type t;
        if (sig_len > 1 && *p == 0x06) {
            p++;
            if (sig_parse_type(&p, end, &t) == 0)
                f->elem = t.byref ? 0 : t.elem;
        }
        if (value && ctype >= SIG_BOOLEAN && ctype <= SIG_U8) {
            static const uint8_t sizes[] = {0, 0, 1, 2, 1, 1, 2, 2, 4, 4, 8, 8};
            uint64_t v = 0;
            memcpy(&v, value, sizes[ctype]);
            f->constant = v;
            f->has_constant = 1;
        }
    }
    return count > MAX_FIELDS ? -1 : 0;
}

/* ---- values ---- */

static size_t elem_size(uint8_t elem) {
    switch (elem) {
    case SIG_BOOLEAN: case SIG_I1: case SIG_U1: return 1;
    case SIG_CHAR: case SIG_I2: case SIG_U2: return 2;
    case SIG_I4: case SIG_U4: case SIG_R4: return 4;
    case SIG_I8: case SIG_U8: case SIG_R8: case SIG_I: case SIG_U: return 8;
    default: return 0;
    }
}

/* A primitive at p (size checked by the caller). */
static void primitive_text(tbuf *b, uint8_t elem, const uint8_t *p) {
    union {
        int8_t i1; uint8_t u1; int16_t i2; uint16_t u2; int32_t i4; uint32_t u4;
        int64_t i8; uint64_t u8; float r4; double r8;
    } v;
    memset(&v, 0, sizeof v);
    memcpy(&v, p, elem_size(elem));
    switch (elem) {
    case SIG_BOOLEAN: tb_puts(b, v.u1 ? "true" : "false"); break;
    case SIG_CHAR: {
        WCHAR c = v.u2;
        tb_puts(b, "'");
        tb_utf16(b, &c, 1);
        tb_puts(b, "'");
        break;
    }
    case SIG_I1: tb_printf(b, "%d", v.i1); break;
    case SIG_U1: tb_printf(b, "%u", v.u1); break;
    case SIG_I2: tb_printf(b, "%d", v.i2); break;
    case SIG_U2: tb_printf(b, "%u", v.u2); break;
    case SIG_I4: tb_printf(b, "%d", v.i4); break;
    case SIG_U4: tb_printf(b, "%u", v.u4); break;
    case SIG_I8: case SIG_I: tb_printf(b, "%lld", (long long)v.i8); break;
    case SIG_U8: case SIG_U: tb_printf(b, "%llu", (unsigned long long)v.u8); break;
    case SIG_R4: tb_double(b, v.r4, 1); break;
    case SIG_R8: tb_double(b, v.r8, 0); break;
    default: tb_puts(b, "?"); break;
    }
}

static void string_text(tbuf *b, ObjectID s) {
    ULONG len_off = 0, buf_off = 0;
    if (!s) {
        tb_puts(b, "null");
        return;
    }
    if (FAILED(INFO_CALL(GetStringLayout2, &len_off, &buf_off))) {
        tb_puts(b, "?string");
        return;
    }
    int32_t len;
    memcpy(&len, (const uint8_t *)s + len_off, sizeof len);
    const WCHAR *chars = (const WCHAR *)((const uint8_t *)s + buf_off);
    size_t n = len < 0 ? 0 : (size_t)len > CALLS_STRING_MAX ? CALLS_STRING_MAX : (size_t)len;
    tb_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        WCHAR c = chars[i];
        if (c == '"' || c == '\\')
            tb_printf(b, "\\%c", (char)c);
        else if (c < 0x20)
            tb_printf(b, "\\u%04x", c);
        else if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n) {
            tb_utf16(b, chars + i, 2);
            i++;
        } else
            tb_utf16(b, &c, 1);
    }
    tb_puts(b, "\"");
    if ((size_t)len > n)
        tb_puts(b, "...");
}

static void object_text(tbuf *b, ObjectID o) {
    if (!o) {
        tb_puts(b, "null");
        return;
    }
    ClassID cls = 0;
    char name[512];
    if (FAILED(INFO_CALL(GetClassFromObject, o, &cls)) || !cls) {
        tb_puts(b, "<?>");
        return;
    }
    names_class_text(cls, name, sizeof name);
    tb_printf(b, "<%s>", name);
}

static void bytes_text(tbuf *b, const uint8_t *p, size_t n) {
    tb_printf(b, "%zu bytes:", n);
    for (size_t i = 0; i < n && i < 64; i++)
        tb_printf(b, " %02x", p[i]);
    if (n > 64)
        tb_puts(b, " ...");
}

/* A value type (an enum, or a struct) named by token in imp. */
static void valuetype_text(tbuf *b, IMetaDataImport *imp, mdToken tok, const uint8_t *p, size_t n) {
    IMetaDataImport *scope = NULL;
    mdTypeDef td = 0;
    if (resolve_typedef(imp, tok, &scope, &td) < 0) {
        tb_printf(b, "<valuetype 0x%08x>{", tok);
        bytes_text(b, p, n);
        tb_puts(b, "}");
        return;
    }
    char name[512];
    mdToken ext = 0;
    typedef_name(scope, td, name, sizeof name, &ext);
    field_info fields[MAX_FIELDS];
    int nf = 0;
    int all = typedef_fields(scope, td, fields, &nf) == 0;
    if (is_system_enum(scope, ext)) {
        /* value__ gives the underlying type; literal fields the names */
        uint8_t under = SIG_I4;
        for (int i = 0; i < nf; i++)
            if (!(fields[i].flags & 0x0010) && elem_size(fields[i].elem))
                under = fields[i].elem;
        size_t sz = elem_size(under);
        uint64_t v = 0;
        if (sz > n) {
            tb_printf(b, "%s?", name);
            scope->lpVtbl->Release(scope);
            return;
        }
        memcpy(&v, p, sz);
        uint64_t mask = sz == 8 ? ~0ull : (1ull << (sz * 8)) - 1;
        v &= mask;
        for (int i = 0; i < nf; i++) {
            if (fields[i].has_constant && (fields[i].constant & mask) == v) {
                tb_printf(b, "%s.%s", name, fields[i].name);
                scope->lpVtbl->Release(scope);
                return;
            }
        }
        /* flags: the members that make it up, if they do exactly */
        uint64_t rest = v;
        char parts[512] = "";
        size_t pl = 0;
        for (int i = 0; i < nf && rest; i++) {
            uint64_t c = fields[i].constant & mask;
            if (fields[i].has_constant && c && (rest & c) == c) {
                pl += (size_t)snprintf(parts + pl, sizeof parts - pl, "%s%s", pl ? "|" : "", fields[i].name);
                if (pl >= sizeof parts)
                    pl = sizeof parts - 1;
                rest &= ~c;
            }
        }
        if (!rest && pl)
            tb_printf(b, "%s.%s", name, parts);
        else
            tb_printf(b, "(%s)%llu", name, (unsigned long long)v);
        scope->lpVtbl->Release(scope);
        return;
    }
    /* A struct of primitive fields in sequential layout shows them; anything
     * else shows its bytes. */
    size_t off = 0;
    int shown = all;
    for (int i = 0; i < nf && shown; i++) {
        if (fields[i].flags & 0x0010)
            continue; /* static */
        size_t sz = elem_size(fields[i].elem);
        if (!sz) {
            shown = 0;
            break;
        }
        off = (off + sz - 1) / sz * sz + sz;
    }
    if (shown && off > 0 && off <= n) {
        tb_printf(b, "%s{", name);
        off = 0;
        int first = 1;
        for (int i = 0; i < nf; i++) {
            if (fields[i].flags & 0x0010)
                continue;
            size_t sz = elem_size(fields[i].elem);
            off = (off + sz - 1) / sz * sz;
            tb_printf(b, "%s%s=", first ? "" : ", ", fields[i].name);
            primitive_text(b, fields[i].elem, p + off);
            off += sz;
            first = 0;
        }
        tb_puts(b, "}");
    } else {
        tb_printf(b, "%s{", name);
        bytes_text(b, p, n);
        tb_puts(b, "}");
    }
    scope->lpVtbl->Release(scope);
}

/* The element type a generic argument stands for: a primitive's, CLASS for a
 * reference type (including System.__Canon, shared code), or VALUETYPE. */
static uint8_t class_elem(ClassID cls, char *name, size_t cap) {
    names_class_text(cls, name, cap);
    static const struct { const char *name; uint8_t elem; } prims[] = {
        {"System.Boolean", SIG_BOOLEAN}, {"System.Char", SIG_CHAR}, {"System.SByte", SIG_I1},
        {"System.Byte", SIG_U1}, {"System.Int16", SIG_I2}, {"System.UInt16", SIG_U2},
        {"System.Int32", SIG_I4}, {"System.UInt32", SIG_U4}, {"System.Int64", SIG_I8},
        {"System.UInt64", SIG_U8}, {"System.Single", SIG_R4}, {"System.Double", SIG_R8},
        {"System.IntPtr", SIG_I}, {"System.UIntPtr", SIG_U}, {"System.String", SIG_STRING},
    };
    for (size_t i = 0; i < sizeof prims / sizeof *prims; i++)
        if (strcmp(name, prims[i].name) == 0)
            return prims[i].elem;
    ModuleID mod = 0;
    mdTypeDef td = 0;
    ClassID parent = 0;
    ULONG32 n = 0;
    if (SUCCEEDED(INFO_CALL(GetClassIDInfo2, cls, &mod, &td, &parent, 0, &n, NULL)) && parent) {
        char pname[256];
        names_class_text(parent, pname, sizeof pname);
        if (strcmp(pname, "System.ValueType") == 0 || strcmp(pname, "System.Enum") == 0)
            return SIG_VALUETYPE;
    }
    return SIG_CLASS;
}

static void value_text(tbuf *b, const mdctx *md, const sig_type *t, const uint8_t *p, size_t n) {
    if (t->byref) {
        /* a managed pointer: show what it points at, for what can be read */
        const uint8_t *target = NULL;
        if (n >= sizeof target)
            memcpy(&target, p, sizeof target);
        sig_type inner = *t;
        inner.byref = 0;
        size_t sz = elem_size(t->elem);
        if (!target) {
            tb_puts(b, "ref null");
        } else if (sz) {
            tb_puts(b, "ref ");
            primitive_text(b, t->elem, target);
        } else if (t->elem == SIG_STRING || t->elem == SIG_CLASS || t->elem == SIG_OBJECT ||
                   t->elem == SIG_SZARRAY) {
            tb_puts(b, "ref ");
            value_text(b, md, &inner, target, sizeof(void *));
        } else {
            tb_printf(b, "ref %p", (const void *)target);
        }
        return;
    }
    size_t sz = elem_size(t->elem);
    if (sz) {
        if (n < sz) {
            tb_puts(b, "?");
            return;
        }
        primitive_text(b, t->elem, p);
        return;
    }
    ObjectID o = 0;
    switch (t->elem) {
    case SIG_STRING:
        if (n >= sizeof o)
            memcpy(&o, p, sizeof o);
        string_text(b, o);
        return;
    case SIG_CLASS:
    case SIG_OBJECT:
    case SIG_SZARRAY:
    case SIG_ARRAY:
        if (n >= sizeof o)
            memcpy(&o, p, sizeof o);
        object_text(b, o);
        return;
    case SIG_VALUETYPE:
        if (t->generic) {
            tb_puts(b, "{");
            bytes_text(b, p, n);
            tb_puts(b, "}");
        } else {
            valuetype_text(b, md->imp, t->token, p, n);
        }
        return;
    case SIG_VAR:
    case SIG_MVAR: {
        const ClassID *args = t->elem == SIG_VAR ? md->class_args : md->method_args;
        ULONG32 nargs = t->elem == SIG_VAR ? md->nclass_args : md->nmethod_args;
        if (t->number >= nargs) {
            tb_printf(b, "{%s%u ", t->elem == SIG_VAR ? "!" : "!!", t->number);
            bytes_text(b, p, n);
            tb_puts(b, "}");
            return;
        }
        char name[512];
        sig_type real = *t;
        real.elem = class_elem(args[t->number], name, sizeof name);
        if (real.elem == SIG_VALUETYPE) {
            tb_printf(b, "%s{", name);
            bytes_text(b, p, n);
            tb_puts(b, "}");
            return;
        }
        value_text(b, md, &real, p, n);
        return;
    }
    case SIG_PTR:
        if (n >= sizeof o)
            memcpy(&o, p, sizeof o);
        tb_printf(b, "0x%llx", (unsigned long long)o);
        return;
    default:
        tb_printf(b, "?(element type 0x%x)", t->elem);
        return;
    }
}

/* The method's signature, metadata and generic arguments for a call. */
static int method_context(const calls_fn *f, COR_PRF_FRAME_INFO frame, mdctx *md, sig_method *sig,
                          ClassID *class_args, ClassID *method_args, mdToken *token) {
    memset(md, 0, sizeof *md);
    ClassID cls = 0;
    ModuleID module = 0;
    ULONG32 n = 0;
    if (FAILED(INFO_CALL(GetFunctionInfo2, f->id, frame, &cls, &module, token, 16, &n, method_args)))
        return -1;
    md->method_args = method_args;
    md->nmethod_args = n > 16 ? 16 : n;
    if (cls) {
        ModuleID m2 = 0;
        mdTypeDef td = 0;
        ClassID parent = 0;
        ULONG32 nc = 0;
        if (SUCCEEDED(INFO_CALL(GetClassIDInfo2, cls, &m2, &td, &parent, 16, &nc, class_args))) {
            md->class_args = class_args;
            md->nclass_args = nc > 16 ? 16 : nc;
        }
    }
    md->imp = module_import(module);
    if (!md->imp)
        return -1;
    mdTypeDef td = 0;
    WCHAR w[8];
    ULONG len = 0, sig_len = 0, rva = 0;
    DWORD attr = 0, impl = 0;
    PCCOR_SIGNATURE blob = NULL;
    if (FAILED(md->imp->lpVtbl->GetMethodProps(md->imp, *token, &td, w, 8, &len, &attr, &blob, &sig_len,
                                               &rva, &impl)) ||
        sig_parse_method(blob, sig_len, sig) < 0) {
        md->imp->lpVtbl->Release(md->imp);
        md->imp = NULL;
        return -1;
    }
    return 0;
}

static void param_name(IMetaDataImport *imp, mdToken method, ULONG seq, char *out, size_t cap) {
    mdParamDef pd = 0;
    WCHAR w[128];
    ULONG len = 0, s = 0, vlen = 0;
    DWORD attr = 0, ctype = 0;
    mdMethodDef md = 0;
    UVCP_CONSTANT v = NULL;
    snprintf(out, cap, "arg%lu", (unsigned long)seq);
    if (imp->lpVtbl->GetParamForMethodIndex(imp, method, seq, &pd) != S_OK ||
        FAILED(imp->lpVtbl->GetParamProps(imp, pd, &md, &s, w, 128, &len, &attr, &ctype, &v, &vlen)) ||
        len <= 1)
        return;
    dnp_utf16_name(w, 128, len, out, cap);
}

/* A call's method: its metadata, signature and generic arguments. */
typedef struct call_ctx {
    mdctx md;
    sig_method sig;
    ClassID class_args[16], method_args[16];
    mdToken token;
} call_ctx;

/* The context for the frame that the runtime's `what` gave (hr); -1 after
 * saying why into b. */
static int call_context(tbuf *b, const char *what, HRESULT hr, const calls_fn *f, COR_PRF_FRAME_INFO frame,
                        call_ctx *c) {
    if (FAILED(hr)) {
        tb_printf(b, "? (%s 0x%08x)", what, (unsigned)hr);
        return -1;
    }
    c->token = 0;
    if (method_context(f, frame, &c->md, &c->sig, c->class_args, c->method_args, &c->token) < 0) {
        tb_puts(b, "? (no signature)");
        return -1;
    }
    return 0;
}

int calls_args_text(const calls_fn *f, COR_PRF_ELT_INFO elt, char *out, size_t cap) {
    tbuf b = {out, 0, cap};
    if (cap)
        out[0] = 0;
    union {
        COR_PRF_FUNCTION_ARGUMENT_INFO info;
        uint8_t bytes[sizeof(COR_PRF_FUNCTION_ARGUMENT_INFO) + MAX_RANGES * sizeof(COR_PRF_FUNCTION_ARGUMENT_RANGE)];
    } u;
    ULONG size = sizeof u;
    COR_PRF_FRAME_INFO frame = 0;
    HRESULT hr = INFO_CALL(GetFunctionEnter3Info, f->id, elt, &frame, &size, &u.info);
    call_ctx c;
    if (call_context(&b, "GetFunctionEnter3Info", hr, f, frame, &c) < 0)
        return -1;
    ULONG r = 0;
    if (c.sig.hasthis) {
        tb_puts(&b, "this=");
        if (r < u.info.numRanges) {
            ObjectID o = 0;
            const COR_PRF_FUNCTION_ARGUMENT_RANGE *rg = &u.info.ranges[r++];
            if (rg->length >= sizeof o)
                memcpy(&o, (const void *)rg->startAddress, sizeof o);
            object_text(&b, o);
        } else {
            tb_puts(&b, "?");
        }
    }
    for (uint32_t i = 0; i < c.sig.nparams && i < SIG_MAX_PARAMS; i++) {
        char name[128];
        param_name(c.md.imp, c.token, i + 1, name, sizeof name);
        tb_printf(&b, "%s%s=", b.len ? ", " : "", name);
        if (r >= u.info.numRanges || r >= MAX_RANGES) {
            tb_puts(&b, "?");
            continue;
        }
        const COR_PRF_FUNCTION_ARGUMENT_RANGE *rg = &u.info.ranges[r++];
        value_text(&b, &c.md, &c.sig.params[i], (const uint8_t *)rg->startAddress, rg->length);
    }
    c.md.imp->lpVtbl->Release(c.md.imp);
    return 0;
}

int calls_return_text(const calls_fn *f, COR_PRF_ELT_INFO elt, char *out, size_t cap) {
    tbuf b = {out, 0, cap};
    if (cap)
        out[0] = 0;
    COR_PRF_FRAME_INFO frame = 0;
    COR_PRF_FUNCTION_ARGUMENT_RANGE rg = {0, 0};
    HRESULT hr = INFO_CALL(GetFunctionLeave3Info, f->id, elt, &frame, &rg);
    call_ctx c;
    if (call_context(&b, "GetFunctionLeave3Info", hr, f, frame, &c) < 0)
        return -1;
    if (c.sig.ret.elem == SIG_VOID && !c.sig.ret.byref)
        tb_puts(&b, "void");
    else if (!rg.startAddress)
        tb_puts(&b, "?");
    else
        value_text(&b, &c.md, &c.sig.ret, (const uint8_t *)rg.startAddress, rg.length);
    c.md.imp->lpVtbl->Release(c.md.imp);
    return 0;
}
