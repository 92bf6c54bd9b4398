/* il_rewrite.c: a method body wrapped in the probes of `--trace` (il_rewrite.h).
 * Two passes over the original code: the first gives every instruction its new
 * offset (all sizes are known without the targets: short branches are always
 * widened), the second writes the code with every target moved; the clauses
 * are moved through the same map and the probe's finally added last. */
#include "il_rewrite.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_text.h"
#include "il_body.h"

/* calli signatures: unmanaged cdecl (IMAGE_CEE_CS_CALLCONV_C 0x1), the
 * parameter count, the return type, the parameters. */
const uint8_t dnp_il_enter_sig[4] = {0x01, 1, 0x0A /* int64 */, 0x08 /* int32 */};
const uint8_t dnp_il_exit_sig[5] = {0x01, 2, 0x01 /* void */, 0x08, 0x0A};
const uint8_t dnp_il_enter_3i4_sig[7] = {0x01, 4, 0x0A, 0x08, 0x08, 0x08, 0x08};

#define MAX_CLAUSES 4096
#define SIG_DEPTH 32

/* ---- signatures (ECMA-335 II.23.2) ---- */

int dnp_sig_uint(const uint8_t **p, const uint8_t *end, uint32_t *v) {
    const uint8_t *q = *p;
    if (q >= end)
        return -1;
    if (!(q[0] & 0x80)) {
        *v = q[0];
        *p = q + 1;
    } else if ((q[0] & 0xC0) == 0x80 && end - q >= 2) {
        *v = (uint32_t)(q[0] & 0x3F) << 8 | q[1];
        *p = q + 2;
    } else if ((q[0] & 0xE0) == 0xC0 && end - q >= 4) {
        *v = (uint32_t)(q[0] & 0x1F) << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        *p = q + 4;
    } else {
        return -1;
    }
    return 0;
}

static size_t put_uint(uint8_t *out, uint32_t v) {
    if (v < 0x80) {
        out[0] = (uint8_t)v;
        return 1;
    }
    if (v < 0x4000) {
        out[0] = (uint8_t)(0x80 | v >> 8);
        out[1] = (uint8_t)v;
        return 2;
    }
    out[0] = (uint8_t)(0xC0 | v >> 24);
    out[1] = (uint8_t)(v >> 16);
    out[2] = (uint8_t)(v >> 8);
    out[3] = (uint8_t)v;
    return 4;
}

int dnp_sig_skip_bounds(const uint8_t **p, const uint8_t *end) {
    uint32_t n, v;
    for (int k = 0; k < 2; k++) { /* the sizes, then the lower bounds */
        if (dnp_sig_uint(p, end, &n) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            if (dnp_sig_uint(p, end, &v) < 0)
                return -1;
    }
    return 0;
}

static int skip_type(const uint8_t **p, const uint8_t *end, int depth);

/* A method signature (FNPTR's), from its calling convention on. */
static int skip_method_sig(const uint8_t **p, const uint8_t *end, int depth) {
    uint32_t n, v;
    if (*p >= end)
        return -1;
    unsigned cc = *(*p)++;
    if ((cc & 0x10) && dnp_sig_uint(p, end, &v) < 0) /* generic: its parameter count */
        return -1;
    if (dnp_sig_uint(p, end, &n) < 0)
        return -1;
    for (uint32_t i = 0; i <= n; i++) { /* the return type, then the parameters */
        if (*p < end && **p == 0x41)    /* SENTINEL before varargs */
            (*p)++;
        if (skip_type(p, end, depth + 1) < 0)
            return -1;
    }
    return 0;
}

/* One type, custom modifiers, byref and pinned included. */
static int skip_type(const uint8_t **p, const uint8_t *end, int depth) {
    uint32_t v, n;
    if (*p >= end || depth > SIG_DEPTH)
        return -1;
    unsigned et = *(*p)++;
    switch (et) {
    case 0x01: case 0x02: case 0x03: case 0x04: case 0x05: case 0x06: case 0x07: case 0x08:
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x0E: case 0x16: case 0x18:
    case 0x19: case 0x1C:
        return 0; /* void, primitives, string, typedref, native ints, object */
    case 0x1F: case 0x20: /* CMOD_REQD, CMOD_OPT: a TypeDefOrRef, then the type */
        return dnp_sig_uint(p, end, &v) < 0 ? -1 : skip_type(p, end, depth + 1);
    case 0x10: case 0x0F: case 0x1D: case 0x45: /* BYREF, PTR, SZARRAY, PINNED */
        return skip_type(p, end, depth + 1);
    case 0x11: case 0x12: /* VALUETYPE, CLASS */
        return dnp_sig_uint(p, end, &v);
    case 0x13: case 0x1E: /* VAR, MVAR */
        return dnp_sig_uint(p, end, &v);
    case 0x1B: /* FNPTR */
        return skip_method_sig(p, end, depth + 1);
    case 0x14: /* ARRAY: type, rank, sizes, lower bounds */
        if (skip_type(p, end, depth + 1) < 0 || dnp_sig_uint(p, end, &v) < 0)
            return -1;
        return dnp_sig_skip_bounds(p, end);
    case 0x15: /* GENERICINST: the generic type, the count, the arguments */
        if (skip_type(p, end, depth + 1) < 0 || dnp_sig_uint(p, end, &n) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            if (skip_type(p, end, depth + 1) < 0)
                return -1;
        return 0;
    default:
        return -1;
    }
}

int dnp_sig_return_type(const uint8_t *sig, size_t n, size_t *off, size_t *len, int *is_void, char *err,
                        size_t errlen) {
    const uint8_t *p = sig, *end = sig + n;
    uint32_t v;
    if (!sig || n < 3)
        return dnp_fail(err, errlen, "method signature of %zu bytes", n);
    unsigned cc = *p++;
    if ((cc & 0x0F) == 0x06 || (cc & 0x0F) == 0x07) /* a field's or a local's signature */
        return dnp_fail(err, errlen, "not a method signature (0x%02x)", cc);
    if (((cc & 0x10) && dnp_sig_uint(&p, end, &v) < 0) || dnp_sig_uint(&p, end, &v) < 0)
        return dnp_fail(err, errlen, "method signature cut short");
    while (p < end && (*p == 0x1F || *p == 0x20)) { /* custom modifiers: not on the local */
        p++;
        if (dnp_sig_uint(&p, end, &v) < 0)
            return dnp_fail(err, errlen, "method signature cut short in a custom modifier");
    }
    const uint8_t *start = p;
    if (skip_type(&p, end, 0) < 0)
        return dnp_fail(err, errlen, "return type unreadable (0x%02x)", start < end ? *start : 0);
    if (*start == 0x16)
        return dnp_fail(err, errlen, "returns a TypedReference, which cannot be held in a local");
    *off = (size_t)(start - sig);
    *len = (size_t)(p - start);
    *is_void = *start == 0x01;
    return 0;
}

long dnp_il_locals_sig(const uint8_t *old, size_t old_len, const uint8_t *ret, size_t ret_len, uint8_t *out,
                       size_t cap, uint32_t *start_local, uint32_t *result_local) {
    uint32_t count = 0;
    const uint8_t *rest = NULL, *end = old + old_len;
    if (old_len) {
        const uint8_t *p = old;
        if (*p++ != 0x07 || dnp_sig_uint(&p, end, &count) < 0) /* LOCAL_SIG, count */
            return -1;
        rest = p;
    }
    uint32_t added = ret_len ? 2 : 1;
    if (count > 0xFFFE - added || (old_len && count == 0 && rest != end))
        return -1;
    size_t rest_len = rest ? (size_t)(end - rest) : 0;
    if (5 + rest_len + 1 + ret_len > cap)
        return -1;
    size_t at = 0;
    out[at++] = 0x07;
    at += put_uint(out + at, count + added);
    if (rest_len)
        memcpy(out + at, rest, rest_len);
    at += rest_len;
    out[at++] = 0x0A; /* int64: the start */
    if (ret_len)
        memcpy(out + at, ret, ret_len);
    at += ret_len;
    *start_local = count;
    *result_local = ret_len ? count + 1 : DNP_IL_NO_LOCAL;
    return (long)at;
}

/* ---- the code ---- */

typedef struct rw {
    const uint8_t *code;
    uint32_t code_size;
    const dnp_il_probe *p;
    uint32_t *map;   /* old offset -> new offset; UINT32_MAX inside an instruction */
    uint8_t *out;    /* the new code */
    size_t cap, len;
    uint32_t prologue, end_code, handler, epilogue; /* new offsets */
    char *err;
    size_t errlen;
} rw;

static void put(rw *w, const void *b, size_t n) {
    if (w->len + n <= w->cap)
        memcpy(w->out + w->len, b, n);
    w->len += n;
}

static void put_u8(rw *w, unsigned v) {
    uint8_t b = (uint8_t)v;
    put(w, &b, 1);
}

static void put_u32(rw *w, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(w, b, 4);
}

static void put_u64(rw *w, uint64_t v) {
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}

/* ldloc/stloc of local i: the short form when it fits. */
static void put_local(rw *w, int store, uint32_t i) {
    if (i < 256) {
        put_u8(w, store ? 0x13 : 0x11);
        put_u8(w, i);
    } else {
        put_u8(w, 0xFE);
        put_u8(w, store ? 0x0E : 0x0C);
        put_u8(w, i & 0xFF);
        put_u8(w, i >> 8);
    }
}

static uint32_t local_size(uint32_t i) {
    return i < 256 ? 2 : 4;
}

/* ldc.i4 id; ldc.i8 fn; conv.i: 15 bytes. */
static void put_call_head(rw *w, uint64_t fn) {
    put_u8(w, 0x20);
    put_u32(w, w->p->method_id);
    put_u8(w, 0x21);
    put_u64(w, fn);
    put_u8(w, 0xD3);
}

static void put_calli(rw *w, uint32_t sig) {
    put_u8(w, 0x29);
    put_u32(w, sig);
}

enum { OP_RET = 0x2A, OP_JMP = 0x27, OP_LEAVE = 0xDD, OP_LEAVE_S = 0xDE, OP_TAIL = 0xFE14 };

/* The size an instruction takes in the new code. */
static uint32_t new_size(const rw *w, const dnp_il_insn *in) {
    unsigned op = in->op->bytes;
    if (op == OP_RET)
        return (w->p->result_local != DNP_IL_NO_LOCAL ? local_size(w->p->result_local) : 0) + 5;
    if (op == OP_TAIL)
        return 0;
    if (in->op->operand == DNP_ILO_BR1)
        return 5;
    return in->size;
}

/* Pass 1: the map of offsets. 0, or -1 with err. */
static int plan(rw *w) {
    dnp_il_insn in;
    uint32_t at = w->prologue;
    uint32_t off = 0;
    int rc;
    for (; (rc = dnp_il_decode(w->code, w->code_size, off, &in, w->err, w->errlen)) > 0; off += in.size) {
        if (in.op->bytes == OP_JMP)
            return dnp_fail(w->err, w->errlen, "IL_%04" PRIx32 ": jmp cannot leave a try block", off);
        w->map[off] = at;
        uint64_t next = (uint64_t)at + new_size(w, &in);
        if (next > 0x7FFFFFFF)
            return dnp_fail(w->err, w->errlen, "the rewritten code is too long");
        at = (uint32_t)next;
    }
    if (rc < 0)
        return -1;
    w->map[w->code_size] = at;
    w->end_code = at;
    return 0;
}

/* The new offset of an old target; -1 with err when it is no instruction's start. */
static int64_t moved(rw *w, int64_t old, uint32_t at) {
    if (old < 0 || old > w->code_size || w->map[old] == UINT32_MAX) {
        dnp_fail(w->err, w->errlen, "IL_%04" PRIx32 ": a target (%" PRId64 ") that is no instruction's start", at, old);
        return -1;
    }
    return w->map[old];
}

static int emit_branch(rw *w, const dnp_il_insn *in) {
    unsigned op = in->op->bytes;
    if (in->i >= w->code_size)
        return dnp_fail(w->err, w->errlen, "IL_%04" PRIx32 ": a branch past the code", in->offset);
    int64_t t = moved(w, in->i, in->offset);
    if (t < 0)
        return -1;
    if (in->op->operand == DNP_ILO_BR1) /* widened: br.s..blt.un.s + 0x0D, leave.s -> leave */
        op = op == OP_LEAVE_S ? OP_LEAVE : op + 0x0D;
    if (op > 0xFF)
        return dnp_fail(w->err, w->errlen, "IL_%04" PRIx32 ": unexpected branch opcode", in->offset);
    uint32_t here = (uint32_t)w->len;
    put_u8(w, op);
    put_u32(w, (uint32_t)(int32_t)(t - (int64_t)(here + 5)));
    return 0;
}

static int emit_switch(rw *w, const dnp_il_insn *in) {
    uint32_t count = (uint32_t)in->i;
    uint64_t after = (uint64_t)w->len + 5 + 4 * (uint64_t)count;
    put_u8(w, 0x45);
    put_u32(w, count);
    for (uint32_t k = 0; k < count; k++) {
        int64_t old = dnp_il_switch_target(in, k);
        int64_t t = old >= w->code_size ? -1 : moved(w, old, in->offset);
        if (t < 0)
            return dnp_fail(w->err, w->errlen, "IL_%04" PRIx32 ": switch target %" PRIu32 " is no instruction", in->offset, k);
        put_u32(w, (uint32_t)(int32_t)(t - (int64_t)after));
    }
    return 0;
}

static int emit_insn(rw *w, const dnp_il_insn *in) {
    unsigned op = in->op->bytes;
    if (op == OP_RET) {
        if (w->p->result_local != DNP_IL_NO_LOCAL)
            put_local(w, 1, w->p->result_local);
        uint32_t here = (uint32_t)w->len;
        put_u8(w, OP_LEAVE);
        put_u32(w, w->epilogue - (here + 5));
        return 0;
    }
    if (op == OP_TAIL)
        return 0;
    if (in->op->operand == DNP_ILO_BR1 || in->op->operand == DNP_ILO_BR4)
        return emit_branch(w, in);
    if (in->op->operand == DNP_ILO_SWITCH)
        return emit_switch(w, in);
    put(w, w->code + in->offset, in->size);
    return 0;
}

/* The prologue's size: the call head, the field's load, the calli, the store. */
static uint32_t prologue_size(const dnp_il_probe *p) {
    return 15 + p->enter_args_len + 5 + local_size(p->start_local);
}

/* Pass 2: prologue, the code, the finally handler, the epilogue. */
static int emit(rw *w) {
    const dnp_il_probe *p = w->p;
    if (p->enter_args_len) { /* ldc.i4 id; the arguments' IL; ldc.i8 enter; conv.i */
        put_u8(w, 0x20);
        put_u32(w, p->method_id);
        put(w, p->enter_args, p->enter_args_len);
        put_u8(w, 0x21);
        put_u64(w, p->enter_fn);
        put_u8(w, 0xD3);
    } else {
        put_call_head(w, p->enter_fn);
    }
    put_calli(w, p->enter_sig);
    put_local(w, 1, p->start_local);
    dnp_il_insn in;
    for (uint32_t off = 0; dnp_il_decode(w->code, w->code_size, off, &in, NULL, 0) > 0; off += in.size) {
        if (w->len != w->map[off])
            return dnp_fail(w->err, w->errlen, "IL_%04" PRIx32 ": internal: offset %zu, planned %" PRIu32, off,
                            w->len, w->map[off]);
        if (emit_insn(w, &in) < 0)
            return -1;
    }
    put_u8(w, 0x20); /* the handler: ldc.i4 id; ldloc start; ldc.i8 exit; conv.i; calli; endfinally */
    put_u32(w, p->method_id);
    put_local(w, 0, p->start_local);
    put_u8(w, 0x21);
    put_u64(w, p->exit_fn);
    put_u8(w, 0xD3);
    put_calli(w, p->exit_sig);
    put_u8(w, 0xDC);
    if (p->result_local != DNP_IL_NO_LOCAL)
        put_local(w, 0, p->result_local);
    put_u8(w, OP_RET);
    return 0;
}

/* ---- the body ---- */

size_t dnp_il_rewrite_bound(const uint8_t *body, size_t n) {
    dnp_il_header h;
    if (dnp_il_parse(body, n, &h, NULL, 0, NULL, 0) < 0)
        return 0;
    /* a ret grows the most: 1 byte -> stloc (4) + leave (5); 64 for the probes
     * and the entry probe's arguments' IL, 3 for the alignment, the clauses fat,
     * one more */
    return 12 + 9 * (size_t)h.code_size + 64 + DNP_IL_ENTER_ARGS_MAX + 3 + 4 + 24 * (h.nclauses + 1);
}

static void put_clause(uint8_t *c, uint32_t kind, uint32_t t0, uint32_t t1, uint32_t h0, uint32_t h1,
                       uint32_t extra) {
    uint32_t v[6] = {kind, t0, t1 - t0, h0, h1 - h0, extra};
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++)
            c[4 * i + k] = (uint8_t)(v[i] >> (8 * k));
}

/* The fat EH section at out[0..): the original clauses moved, the probe's last. */
static int write_clauses(rw *w, const dnp_il_clause *cl, size_t ncl, uint8_t *out) {
    size_t size = 4 + 24 * (ncl + 1);
    out[0] = 0x41; /* CorILMethod_Sect_EHTable | CorILMethod_Sect_FatFormat */
    out[1] = (uint8_t)size;
    out[2] = (uint8_t)(size >> 8);
    out[3] = (uint8_t)(size >> 16);
    for (size_t i = 0; i < ncl; i++) {
        const dnp_il_clause *c = &cl[i];
        uint64_t te = (uint64_t)c->try_offset + c->try_length, he = (uint64_t)c->handler_offset + c->handler_length;
        int64_t t0 = moved(w, c->try_offset, 0), t1 = t0 < 0 ? -1 : moved(w, (int64_t)te, 0);
        int64_t h0 = t1 < 0 ? -1 : moved(w, c->handler_offset, 0), h1 = h0 < 0 ? -1 : moved(w, (int64_t)he, 0);
        int64_t extra = c->extra;
        if (h1 >= 0 && c->kind == DNP_IL_FILTER)
            extra = moved(w, c->extra, 0);
        if (h1 < 0 || extra < 0)
            return -1; /* moved() said which offset */
        if (t1 <= t0 || h1 <= h0)
            return dnp_fail(w->err, w->errlen, "exception clause %zu: an empty or inverted range", i + 1);
        put_clause(out + 4 + 24 * i, c->kind, (uint32_t)t0, (uint32_t)t1, (uint32_t)h0, (uint32_t)h1,
                   (uint32_t)extra);
    }
    put_clause(out + 4 + 24 * ncl, DNP_IL_FINALLY, w->prologue, w->end_code, w->handler, w->epilogue, 0);
    return 0;
}

static void write_header(uint8_t *o, const dnp_il_header *h, const dnp_il_probe *p, uint32_t code_size) {
    unsigned flags = 0x3 | 0x8 | (h->init_locals || !h->fat ? 0x10 : 0); /* fat, more sections, init locals */
    uint16_t first = (uint16_t)(flags | 3u << 12);
    uint32_t need = 2 + p->enter_pushes > 3 ? 2 + p->enter_pushes : 3; /* the prologue's id, arguments, address */
    uint32_t stack = h->max_stack < need ? need : h->max_stack;
    o[0] = (uint8_t)first;
    o[1] = (uint8_t)(first >> 8);
    o[2] = (uint8_t)stack;
    o[3] = (uint8_t)(stack >> 8);
    for (int k = 0; k < 4; k++) {
        o[4 + k] = (uint8_t)(code_size >> (8 * k));
        o[8 + k] = (uint8_t)(p->locals_sig >> (8 * k));
    }
}

static long rewrite(rw *w, const uint8_t *body, size_t n, uint8_t *out, size_t cap, dnp_il_clause *cl) {
    dnp_il_header h;
    if (dnp_il_parse(body, n, &h, cl, MAX_CLAUSES, w->err, w->errlen) < 0)
        return -1;
    if (h.nclauses > MAX_CLAUSES - 1)
        return dnp_fail(w->err, w->errlen, "%zu exception clauses: at most %d", h.nclauses, MAX_CLAUSES - 1);
    if (h.code_size == 0)
        return dnp_fail(w->err, w->errlen, "no code");
    if (h.max_stack > 0xFFFF)
        return dnp_fail(w->err, w->errlen, "max stack %" PRIu32, h.max_stack);
    if (w->p->enter_args_len > DNP_IL_ENTER_ARGS_MAX || w->p->enter_pushes > DNP_IL_MAX_PUSHES)
        return dnp_fail(w->err, w->errlen, "the entry probe's arguments: %" PRIu32 " bytes, %" PRIu32 " values",
                        w->p->enter_args_len, w->p->enter_pushes);
    w->code = body + h.header_size;
    w->code_size = h.code_size;
    w->prologue = prologue_size(w->p);
    if (plan(w) < 0)
        return -1;
    w->handler = w->end_code;
    w->epilogue = w->handler + 15 + local_size(w->p->start_local) + 5 + 1;
    uint32_t code_size = w->epilogue + 1 +
                         (w->p->result_local != DNP_IL_NO_LOCAL ? local_size(w->p->result_local) : 0);
    size_t sect = ((size_t)12 + code_size + 3) & ~(size_t)3;
    size_t total = sect + 4 + 24 * (h.nclauses + 1);
    if (total > cap)
        return dnp_fail(w->err, w->errlen, "the rewritten body needs %zu bytes, %zu given", total, cap);
    memset(out, 0, total);
    w->out = out + 12;
    w->cap = code_size;
    w->len = 0;
    if (emit(w) < 0)
        return -1;
    if (w->len != code_size)
        return dnp_fail(w->err, w->errlen, "internal: %zu bytes of code written, %" PRIu32 " planned", w->len,
                        code_size);
    write_header(out, &h, w->p, code_size);
    if (write_clauses(w, cl, h.nclauses, out + sect) < 0)
        return -1;
    return (long)total;
}

long dnp_il_rewrite(const uint8_t *body, size_t n, const dnp_il_probe *p, uint8_t *out, size_t cap, char *err,
                    size_t errlen) {
    if (err && errlen)
        err[0] = 0;
    if (!body || !p || !out)
        return dnp_fail(err, errlen, "nothing to rewrite");
    dnp_il_header h;
    if (dnp_il_parse(body, n, &h, NULL, 0, err, errlen) < 0)
        return -1;
    rw w = {.p = p, .err = err, .errlen = errlen};
    w.map = malloc(((size_t)h.code_size + 1) * sizeof *w.map);
    dnp_il_clause *cl = malloc(MAX_CLAUSES * sizeof *cl);
    long rc = -1;
    if (w.map && cl) {
        memset(w.map, 0xFF, ((size_t)h.code_size + 1) * sizeof *w.map);
        rc = rewrite(&w, body, n, out, cap, cl);
    } else {
        dnp_fail(err, errlen, "out of memory");
    }
    free(w.map);
    free(cl);
    return rc;
}
