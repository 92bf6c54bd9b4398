/* il.c: IL bodies (il.h, docs/il.md). At a method's JITCompilationStarted,
 * when its name matches one of the --il globs (calls_filter_wants, the matcher
 * of --include), its body from GetILFunctionBody is recorded as an ILBody
 * event: the raw bytes, and the names of the tokens its code and clauses use,
 * resolved here through the module's metadata (IMetaDataImport) so that the
 * front end shows them without the process. The body is parsed with the
 * trace layer's il_body.c, which trusts no byte. A method's body is recorded
 * once (tier-1 and OSR recompilations have the same IL), by (module, token). */
#include "il.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks.h"
#include "calls.h"
#include "il_body.h"
#include "il_rewrite.h"
#include "namebuf.h"
#include "u64map.h"
#include "utf16.h"

#define IL_MAX_BODY (64u << 10)   /* bytes of a body recorded; past it, cut */
#define IL_MAX_TOKENS 1024        /* distinct tokens named per body */
#define IL_MAX_NAMES (64u << 10)  /* bytes of the tokens' names per body */
#define IL_MAX_CLAUSES 256
#define IL_NAME_MAX 1024
#define IL_STRING_MAX 200         /* bytes of a string literal shown */
#define SIG_DEPTH 8

static struct {
    int on;
    char patterns[1024];
    pthread_mutex_t mu;
    dnp_u64map seen; /* (module, token) -> 1 recorded, 2 not wanted */
} G = {.mu = PTHREAD_MUTEX_INITIALIZER};

void il_configure(const agent_config *cfg, uint32_t *mask) {
    snprintf(G.patterns, sizeof G.patterns, "%s", cfg->il);
    G.on = G.patterns[0] != 0;
    if (G.on)
        *mask |= COR_PRF_MONITOR_JIT_COMPILATION;
}

/* ---- text ---- */

/* ---- types ---- */

static void type_text(IMetaDataImport *imp, mdToken tk, dnp_namebuf *b, int depth);

/* One type of a signature (TypeSpecs, MethodSpecs' arguments); -1 when it
 * cannot be read (the caller shows the token instead). */
static int sig_type(IMetaDataImport *imp, const uint8_t **p, const uint8_t *end, dnp_namebuf *b, int depth) {
    uint32_t v, n;
    if (*p >= end || depth > SIG_DEPTH)
        return -1;
    unsigned et = *(*p)++;
    const char *prim = names_element_type(et);
    if (prim) {
        nb_add(b, prim, strlen(prim));
        return 0;
    }
    switch (et) {
    case ELEMENT_TYPE_CLASS:
    case ELEMENT_TYPE_VALUETYPE: {
        if (dnp_sig_uint(p, end, &v) < 0)
            return -1;
        static const uint32_t tables[] = {mdtTypeDef, mdtTypeRef, mdtTypeSpec, 0};
        type_text(imp, tables[v & 3] | v >> 2, b, depth + 1);
        return 0;
    }
    case ELEMENT_TYPE_SZARRAY:
    case ELEMENT_TYPE_PTR:
    case ELEMENT_TYPE_BYREF:
        if (sig_type(imp, p, end, b, depth + 1) < 0)
            return -1;
        nb_printf(b, "%s", et == ELEMENT_TYPE_SZARRAY ? "[]" : et == ELEMENT_TYPE_PTR ? "*" : "&");
        return 0;
    case ELEMENT_TYPE_VAR:
    case ELEMENT_TYPE_MVAR:
        if (dnp_sig_uint(p, end, &v) < 0)
            return -1;
        nb_printf(b, "%s%u", et == ELEMENT_TYPE_VAR ? "!" : "!!", v);
        return 0;
    case ELEMENT_TYPE_ARRAY: /* type rank, then sizes and bounds: the rank is enough */
        if (sig_type(imp, p, end, b, depth + 1) < 0 || dnp_sig_uint(p, end, &v) < 0)
            return -1;
        nb_add(b, "[", 1);
        for (uint32_t i = 1; i < v && i < 32; i++)
            nb_add(b, ",", 1);
        nb_add(b, "]", 1);
        return dnp_sig_skip_bounds(p, end);
    case ELEMENT_TYPE_GENERICINST:
        if (sig_type(imp, p, end, b, depth + 1) < 0 || dnp_sig_uint(p, end, &n) < 0)
            return -1;
        nb_add(b, "<", 1);
        for (uint32_t i = 0; i < n; i++) {
            if (i)
                nb_add(b, ", ", 2);
            if (sig_type(imp, p, end, b, depth + 1) < 0)
                return -1;
        }
        nb_add(b, ">", 1);
        return 0;
    default:
        return -1;
    }
}

static void typeref_text(IMetaDataImport *imp, mdTypeRef tr, dnp_namebuf *b, int depth) {
    WCHAR w[512];
    ULONG len = 0;
    mdToken scope = 0;
    if (FAILED(imp->lpVtbl->GetTypeRefProps(imp, tr, &scope, w, 512, &len))) {
        nb_printf(b, "<typeref 0x%08x>", tr);
        return;
    }
    if (DNP_TOKEN_TYPE(scope) == mdtTypeRef && depth < SIG_DEPTH) { /* nested: Outer+Inner */
        typeref_text(imp, scope, b, depth + 1);
        nb_add(b, "+", 1);
    }
    size_t at = b->len;
    nb_wide(b, w, 512, len);
    char *tick = memchr(b->s + at, '`', b->len - at);
    if (tick) { /* the arity suffix, as names.c leaves it out */
        b->len = (size_t)(tick - b->s);
        b->s[b->len] = 0;
    }
}

static void type_text(IMetaDataImport *imp, mdToken tk, dnp_namebuf *b, int depth) {
    char tmp[IL_NAME_MAX];
    if (depth > SIG_DEPTH) {
        nb_add(b, "...", 3);
        return;
    }
    switch (DNP_TOKEN_TYPE(tk)) {
    case mdtTypeDef: nb_add(b, tmp, names_typedef_text(imp, tk, tmp, sizeof tmp)); return;
    case mdtTypeRef: typeref_text(imp, tk, b, depth); return;
    case mdtTypeSpec: {
        PCCOR_SIGNATURE sig = NULL;
        ULONG n = 0;
        size_t at = b->len;
        const uint8_t *p;
        if (SUCCEEDED(imp->lpVtbl->GetTypeSpecFromToken(imp, tk, &sig, &n)) && sig &&
            (p = (const uint8_t *)sig, sig_type(imp, &p, p + n, b, depth) == 0))
            return;
        b->len = at;
        b->s[at] = 0;
        nb_printf(b, "<typespec 0x%08x>", tk);
        return;
    }
    default: nb_printf(b, "<token 0x%08x>", tk); return;
    }
}

/* ---- members ---- */

static void member_text(IMetaDataImport *imp, mdToken tk, dnp_namebuf *b, int depth) {
    WCHAR w[512];
    ULONG len = 0, nsig = 0, rva = 0, nval = 0;
    mdToken owner = 0;
    DWORD attr = 0, impl = 0, cplus = 0;
    PCCOR_SIGNATURE sig = NULL;
    UVCP_CONSTANT val = NULL;
    HRESULT hr;
    switch (DNP_TOKEN_TYPE(tk)) {
    case mdtMethodDef:
        hr = imp->lpVtbl->GetMethodProps(imp, tk, &owner, w, 512, &len, &attr, &sig, &nsig, &rva, &impl);
        break;
    case mdtFieldDef:
        hr = imp->lpVtbl->GetFieldProps(imp, tk, &owner, w, 512, &len, &attr, &sig, &nsig, &cplus, &val, &nval);
        break;
    case mdtMemberRef: hr = imp->lpVtbl->GetMemberRefProps(imp, tk, &owner, w, 512, &len, &sig, &nsig); break;
    case mdtMethodSpec: {
        hr = depth < 2 ? imp->lpVtbl->GetMethodSpecProps(imp, tk, &owner, &sig, &nsig) : E_FAIL;
        if (FAILED(hr))
            break;
        member_text(imp, owner, b, depth + 1);
        const uint8_t *p = sig, *end = p + nsig;
        uint32_t n;
        if (nsig < 1 || *p++ != 0x0A || dnp_sig_uint(&p, end, &n) < 0) /* IMAGE_CEE_CS_CALLCONV_GENERICINST */
            return;
        nb_add(b, "<", 1);
        for (uint32_t i = 0; i < n && sig_type(imp, &p, end, b, 1) == 0; i++)
            nb_add(b, i + 1 < n ? ", " : "", i + 1 < n ? 2 : 0);
        nb_add(b, ">", 1);
        return;
    }
    default: hr = E_FAIL; break;
    }
    if (FAILED(hr)) {
        nb_printf(b, "<member 0x%08x>", tk);
        return;
    }
    if (DNP_TOKEN_TYPE(owner) == mdtMethodDef) /* a vararg call site's MemberRef: the method's name */
        member_text(imp, owner, b, depth + 1);
    else if (DNP_TOKEN_TYPE(owner) == mdtModuleRef || owner == 0)
        nb_add(b, "<Module>", 8);
    else
        type_text(imp, owner, b, 0);
    if (DNP_TOKEN_TYPE(owner) != mdtMethodDef) {
        nb_add(b, "::", 2);
        nb_wide(b, w, 512, len);
    }
}

/* A user string as a C# literal, "..." with \" \\ \n \r \t \0 \uXXXX, cut at
 * IL_STRING_MAX bytes (then "..." follows the closing quote). */
static void string_text(IMetaDataImport *imp, mdString tk, dnp_namebuf *b) {
    WCHAR w[IL_STRING_MAX + 1];
    ULONG len = 0;
    if (FAILED(imp->lpVtbl->GetUserString(imp, tk, w, IL_STRING_MAX + 1, &len))) {
        nb_printf(b, "<string 0x%08x>", tk);
        return;
    }
    ULONG n = len < IL_STRING_MAX ? len : IL_STRING_MAX;
    char utf8[IL_STRING_MAX * 3 + 8];
    size_t u = dnp_utf16_to_utf8((const char16_t *)w, n, utf8, sizeof utf8);
    nb_add(b, "\"", 1);
    for (size_t i = 0; i < u; i++) {
        unsigned char c = (unsigned char)utf8[i];
        static const char esc[] = "\"\"\\\\\nn\rr\tt";
        const char *e = c ? memchr(esc, c, sizeof esc - 1) : NULL;
        if (e && (e - esc) % 2 == 0)
            nb_printf(b, "\\%c", e[1]);
        else if (c < 0x20 || c == 0x7f)
            nb_printf(b, c ? "\\u%04x" : "\\0", c);
        else
            nb_add(b, (const char *)&c, 1);
    }
    nb_add(b, "\"", 1);
    if (len > n)
        nb_add(b, "...", 3);
}

static void token_text(IMetaDataImport *imp, mdToken tk, dnp_namebuf *b) {
    switch (DNP_TOKEN_TYPE(tk)) {
    case mdtTypeDef:
    case mdtTypeRef:
    case mdtTypeSpec: type_text(imp, tk, b, 0); break;
    case mdtString: string_text(imp, tk, b); break;
    case mdtSignature: nb_printf(b, "<signature 0x%08x>", tk); break; /* calli's */
    default: member_text(imp, tk, b, 0); break;
    }
}

/* ---- the body's tokens ---- */

typedef struct names_text {
    char *s;
    size_t len, cap;
    uint32_t seen[IL_MAX_TOKENS];
    size_t nseen;
    dnp_il_clause clauses[IL_MAX_CLAUSES];
} names_text;

/* Appends "TTTTTTTT<tab>name\n" for a token not named yet. */
static void name_token(IMetaDataImport *imp, uint32_t tk, names_text *t) {
    for (size_t i = 0; i < t->nseen; i++)
        if (t->seen[i] == tk)
            return;
    if (t->nseen == IL_MAX_TOKENS || !tk)
        return;
    t->seen[t->nseen++] = tk;
    dnp_namebuf b = {.len = 0};
    b.s[0] = 0;
    token_text(imp, tk, &b);
    size_t need = t->len + 10 + b.len + 1;
    if (need > IL_MAX_NAMES)
        return;
    if (need > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap < need)
            cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s)
            return;
        t->s = s;
        t->cap = cap;
    }
    t->len += (size_t)snprintf(t->s + t->len, t->cap - t->len, "%08x\t%s\n", tk, b.s);
}

/* The names of the tokens of body b[0, n) into t: the code's, the catch
 * clauses' classes. A body that does not parse is left to the front end,
 * which says what is wrong with it; what decodes before that is named. */
static void name_tokens(IMetaDataImport *imp, const uint8_t *b, size_t n, names_text *t) {
    dnp_il_clause *clauses = t->clauses;
    dnp_il_header h;
    int rc = dnp_il_parse(b, n, &h, clauses, IL_MAX_CLAUSES, NULL, 0);
    if (h.code_size == 0 || (uint64_t)h.header_size + h.code_size > n)
        return;
    dnp_il_insn in;
    const uint8_t *code = b + h.header_size;
    for (uint32_t off = 0; dnp_il_decode(code, h.code_size, off, &in, NULL, 0) > 0; off += in.size)
        if (dnp_il_has_token(&in))
            name_token(imp, in.token, t);
    for (size_t i = 0; rc == 0 && i < h.nclauses && i < IL_MAX_CLAUSES; i++)
        if (clauses[i].kind == DNP_IL_CATCH)
            name_token(imp, clauses[i].extra, t);
}

/* ---- recording ---- */

/* Whether (module, token)'s body is to be recorded now: the first time a
 * method whose name matches is compiled. */
static int wanted(FunctionID fid, ModuleID module, mdToken token) {
    uint64_t v = 0;
    pthread_mutex_lock(&G.mu);
    int known = dnp_u64map_get2(&G.seen, module, token, &v);
    pthread_mutex_unlock(&G.mu);
    if (known)
        return 0;
    char name[2048];
    names_function_text(fid, name, sizeof name);
    int want = calls_filter_wants(name, 0, G.patterns, "", 0);
    pthread_mutex_lock(&G.mu);
    int first = !dnp_u64map_get2(&G.seen, module, token, NULL) &&
                dnp_u64map_put2(&G.seen, module, token, want ? 1 : 2, NULL) == 0;
    pthread_mutex_unlock(&G.mu);
    return want && first;
}

static void record_body(FunctionID fid, ModuleID module, mdToken token) {
    LPCBYTE body = NULL;
    ULONG size = 0;
    HRESULT hr = INFO_CALL(GetILFunctionBody, module, token, &body, &size);
    if (FAILED(hr) || !body) {
        REC(ILBody, FUNCTION(fid, 1), token, HR(FAILED(hr) ? hr : E_FAIL), size, 0, 0);
        return;
    }
    size_t n = size < IL_MAX_BODY ? size : IL_MAX_BODY;
    char *hex = malloc(2 * n + 1);
    names_text *t = calloc(1, sizeof *t);
    IMetaDataImport *imp = names_module_import(module);
    if (imp && t)
        name_tokens(imp, body, n, t);
    if (imp)
        imp->lpVtbl->Release(imp);
    uint32_t blob = hex ? rec_string(hex, dnp_hex_encode(body, n, hex, 2 * n + 1)) : 0;
    uint32_t names = t && t->len ? rec_string(t->s, t->len - 1) : 0; /* without the last newline */
    REC(ILBody, FUNCTION(fid, 1), token, HR(hr), size, blob, names);
    if (size > n)
        rec_note(1, "the IL body of method 0x%08x is %lu bytes: its first %zu recorded", token, (unsigned long)size, n);
    free(hex);
    if (t)
        free(t->s);
    free(t);
}

void il_forget_module(ModuleID module) {
    if (!G.on)
        return;
    pthread_mutex_lock(&G.mu);
    for (size_t i = 0; i < G.seen.cap;) { /* a deletion shifts a later entry into slot i */
        if (G.seen.full[i] && G.seen.ka[i] == module)
            dnp_u64map_del2(&G.seen, module, G.seen.kb[i], NULL);
        else
            i++;
    }
    pthread_mutex_unlock(&G.mu);
}

void il_jit_started(FunctionID fid) {
    ClassID cls = 0;
    ModuleID module = 0;
    mdToken token = 0;
    if (!G.on || !g_agent.info || FAILED(INFO_CALL(GetFunctionInfo, fid, &cls, &module, &token)) || !module ||
        DNP_TOKEN_TYPE(token) != mdtMethodDef || token == mdtMethodDef)
        return; /* no metadata row: an IL stub or a dynamic method (docs/il.md) */
    if (wanted(fid, module, token))
        record_body(fid, module, token);
}
