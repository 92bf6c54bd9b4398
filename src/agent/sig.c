/* sig.c: ECMA-335 signature blobs (II.23.2). */
#include "sig.h"

#include <string.h>

int sig_uint(const uint8_t **p, const uint8_t *end, uint32_t *out) {
    const uint8_t *s = *p;
    if (s >= end)
        return -1;
    if ((s[0] & 0x80) == 0) {
        *out = s[0];
        *p = s + 1;
    } else if ((s[0] & 0xC0) == 0x80) {
        if (end - s < 2)
            return -1;
        *out = ((uint32_t)(s[0] & 0x3F) << 8) | s[1];
        *p = s + 2;
    } else if ((s[0] & 0xE0) == 0xC0) {
        if (end - s < 4)
            return -1;
        *out = ((uint32_t)(s[0] & 0x1F) << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) | s[3];
        *p = s + 4;
    } else {
        return -1;
    }
    return 0;
}

int sig_token(const uint8_t **p, const uint8_t *end, uint32_t *out) {
    static const uint32_t tables[4] = {0x02000000u, 0x01000000u, 0x1b000000u, 0};
    uint32_t v;
    if (sig_uint(p, end, &v) < 0 || (v & 3) == 3)
        return -1;
    *out = tables[v & 3] | (v >> 2);
    return 0;
}

static int parse(const uint8_t **p, const uint8_t *end, sig_type *out, int depth);

/* Skips a type (the arguments of a GENERICINST, the element of an array). */
static int skip(const uint8_t **p, const uint8_t *end, int depth) {
    sig_type t;
    return parse(p, end, &t, depth + 1);
}

/* An ARRAY's element type, rank, sizes and lower bounds (after its tag). */
static int parse_array(const uint8_t **p, const uint8_t *end, sig_type *out, int depth) {
    sig_type inner;
    if (parse(p, end, &inner, depth + 1) < 0)
        return -1;
    out->inner = inner.elem;
    out->token = inner.token;
    uint32_t rank, n, v, k;
    if (sig_uint(p, end, &rank) < 0 || sig_uint(p, end, &n) < 0)
        return -1;
    out->number = rank;
    for (k = 0; k < n; k++)
        if (sig_uint(p, end, &v) < 0)
            return -1;
    if (sig_uint(p, end, &n) < 0)
        return -1;
    for (k = 0; k < n; k++)
        if (sig_uint(p, end, &v) < 0) /* signed, but the same size */
            return -1;
    return 0;
}

/* A method signature nested in a type (FNPTR): parsed to find its end. */
static int skip_method(const uint8_t **p, const uint8_t *end, int depth) {
    sig_method m;
    const uint8_t *s = *p;
    uint32_t count, v;
    if (s >= end)
        return -1;
    s++;
    if ((s[-1] & SIG_CC_GENERIC) && sig_uint(&s, end, &v) < 0)
        return -1;
    if (sig_uint(&s, end, &count) < 0 || parse(&s, end, &m.ret, depth + 1) < 0)
        return -1;
    for (uint32_t k = 0; k < count; k++)
        if (skip(&s, end, depth) < 0)
            return -1;
    *p = s;
    return 0;
}

static int parse(const uint8_t **p, const uint8_t *end, sig_type *out, int depth) {
    if (depth > 32)
        return -1;
    memset(out, 0, sizeof *out);
    out->start = *p;
    for (;;) {
        if (*p >= end)
            return -1;
        uint8_t e = *(*p)++;
        uint32_t v, n;
        switch (e) {
        case SIG_CMOD_REQD:
        case SIG_CMOD_OPT:
            if (sig_token(p, end, &v) < 0)
                return -1;
            continue;
        case SIG_PINNED:
            continue;
        case SIG_BYREF:
            out->byref = 1;
            continue;
        case SIG_VOID: case SIG_BOOLEAN: case SIG_CHAR: case SIG_I1: case SIG_U1: case SIG_I2:
        case SIG_U2: case SIG_I4: case SIG_U4: case SIG_I8: case SIG_U8: case SIG_R4: case SIG_R8:
        case SIG_STRING: case SIG_TYPEDBYREF: case SIG_I: case SIG_U: case SIG_OBJECT:
            out->elem = e;
            break;
        case SIG_VALUETYPE:
        case SIG_CLASS:
            out->elem = e;
            if (sig_token(p, end, &out->token) < 0)
                return -1;
            break;
        case SIG_VAR:
        case SIG_MVAR:
            out->elem = e;
            if (sig_uint(p, end, &out->number) < 0)
                return -1;
            break;
        case SIG_PTR:
        case SIG_SZARRAY: {
            out->elem = e;
            sig_type inner;
            if (parse(p, end, &inner, depth + 1) < 0)
                return -1;
            out->inner = inner.elem;
            out->token = inner.token;
            break;
        }
        case SIG_ARRAY:
            out->elem = e;
            if (parse_array(p, end, out, depth) < 0)
                return -1;
            break;
        case SIG_GENERICINST:
            if (*p >= end || (**p != SIG_CLASS && **p != SIG_VALUETYPE))
                return -1;
            out->elem = *(*p)++;
            out->generic = 1;
            if (sig_token(p, end, &out->token) < 0 || sig_uint(p, end, &n) < 0)
                return -1;
            out->number = n;
            for (uint32_t k = 0; k < n; k++)
                if (skip(p, end, depth) < 0)
                    return -1;
            break;
        case SIG_FNPTR:
            out->elem = e;
            if (skip_method(p, end, depth) < 0)
                return -1;
            break;
        default:
            return -1;
        }
        out->end = *p;
        return 0;
    }
}

int sig_parse_type(const uint8_t **p, const uint8_t *end, sig_type *out) {
    return parse(p, end, out, 0);
}

int sig_parse_method(const uint8_t *blob, size_t len, sig_method *out) {
    const uint8_t *p = blob, *end = blob + len;
    memset(out, 0, sizeof *out);
    if (len < 1)
        return -1;
    out->callconv = *p++;
    out->hasthis = (out->callconv & SIG_CC_HASTHIS) && !(out->callconv & SIG_CC_EXPLICITTHIS);
    if ((out->callconv & SIG_CC_GENERIC) && sig_uint(&p, end, &out->generic_params) < 0)
        return -1;
    if (sig_uint(&p, end, &out->nparams) < 0 || parse(&p, end, &out->ret, 0) < 0)
        return -1;
    for (uint32_t i = 0; i < out->nparams; i++) {
        if (p < end && *p == SIG_SENTINEL)
            p++;
        sig_type t;
        if (parse(&p, end, &t, 0) < 0)
            return -1;
        if (i < SIG_MAX_PARAMS)
            out->params[i] = t;
    }
    return 0;
}

const char *sig_primitive_name(uint8_t elem) {
    switch (elem) {
    case SIG_VOID: return "void";
    case SIG_BOOLEAN: return "bool";
    case SIG_CHAR: return "char";
    case SIG_I1: return "sbyte";
    case SIG_U1: return "byte";
    case SIG_I2: return "short";
    case SIG_U2: return "ushort";
    case SIG_I4: return "int";
    case SIG_U4: return "uint";
    case SIG_I8: return "long";
    case SIG_U8: return "ulong";
    case SIG_R4: return "float";
    case SIG_R8: return "double";
    case SIG_STRING: return "string";
    case SIG_I: return "nint";
    case SIG_U: return "nuint";
    case SIG_OBJECT: return "object";
    case SIG_TYPEDBYREF: return "TypedReference";
    default: return NULL;
    }
}
