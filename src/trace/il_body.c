/* il_body.c: IL method bodies: header, exception clauses, disassembly
 * (il_body.h). Every read is checked against the buffer before it is made. */
#include "il_body.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnp_text.h"

const char *const dnp_il_operand_words[DNP_ILO_COUNT] = {
#define X(id, word, size) word,
    DNP_IL_OPERANDS(X)
#undef X
};

static const uint8_t operand_size[DNP_ILO_COUNT] = {
#define X(id, word, size) size,
    DNP_IL_OPERANDS(X)
#undef X
};

/* In il_opcodes.def's order, which is by bytes: a binary search finds one. */
static const dnp_il_opcode opcodes[] = {
#define DNP_IL_OP(name, bytes, operand) {name, bytes, DNP_ILO_##operand},
#include "il_opcodes.def"
#undef DNP_IL_OP
};
#define NOPCODES (sizeof opcodes / sizeof opcodes[0])

const dnp_il_opcode *dnp_il_opcodes(size_t *n) {
    *n = NOPCODES;
    return opcodes;
}

const dnp_il_opcode *dnp_il_opcode_of(unsigned bytes) {
    size_t lo = 0, hi = NOPCODES;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (opcodes[mid].bytes < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < NOPCODES && opcodes[lo].bytes == bytes ? &opcodes[lo] : NULL;
}

static uint16_t get_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- header and sections ---- */

static int parse_header(const uint8_t *b, size_t n, dnp_il_header *h, char *err, size_t errlen) {
    if (n == 0)
        return dnp_fail(err, errlen, "empty body: no header");
    if ((b[0] & 3) == 2) { /* CorILMethod_TinyFormat */
        h->header_size = 1;
        h->flags = 2;
        h->max_stack = 8;
        h->code_size = b[0] >> 2;
    } else if ((b[0] & 3) == 3) { /* CorILMethod_FatFormat */
        if (n < 12)
            return dnp_fail(err, errlen, "fat header cut short: %zu of its 12 bytes", n);
        uint16_t w = get_u16(b);
        h->fat = 1;
        h->flags = w & 0x0FFFu;
        h->header_size = (uint32_t)(w >> 12) * 4;
        h->max_stack = get_u16(b + 2);
        h->code_size = get_u32(b + 4);
        h->local_sig = get_u32(b + 8);
        h->init_locals = (h->flags & 0x10) != 0;
        h->more_sects = (h->flags & 0x8) != 0;
        if (h->header_size < 12)
            return dnp_fail(err, errlen, "fat header of %u dwords: at least 3", h->header_size / 4);
        if (h->header_size > n)
            return dnp_fail(err, errlen, "fat header of %u bytes in a body of %zu", h->header_size, n);
    } else {
        return dnp_fail(err, errlen, "not an IL method header: first byte 0x%02x (tiny 0x2 or fat 0x3 in its low bits)",
                    b[0]);
    }
    uint64_t end = (uint64_t)h->header_size + h->code_size;
    h->body_size = end > UINT32_MAX ? UINT32_MAX : (uint32_t)end;
    if (end > n)
        return dnp_fail(err, errlen, "code of %" PRIu32 " bytes runs past the body (%zu bytes after the %" PRIu32
                    "-byte header)", h->code_size, n - h->header_size, h->header_size);
    return 0;
}

/* The clauses of one EH section, whose data (after its 4-byte header) is
 * d[0, len): counted, the first cap kept. */
static void section_clauses(const uint8_t *d, size_t len, int fat, dnp_il_header *h, dnp_il_clause *clauses,
                            size_t cap) {
    size_t each = fat ? 24 : 12;
    for (size_t at = 0; at + each <= len; at += each) {
        const uint8_t *c = d + at;
        dnp_il_clause cl;
        if (fat)
            cl = (dnp_il_clause){get_u32(c), get_u32(c + 4), get_u32(c + 8), get_u32(c + 12), get_u32(c + 16),
                                 get_u32(c + 20), 1};
        else
            cl = (dnp_il_clause){get_u16(c), get_u16(c + 2), c[4], get_u16(c + 5), c[7], get_u32(c + 8), 0};
        if (h->nclauses < cap)
            clauses[h->nclauses] = cl;
        h->nclauses++;
    }
}

static int parse_sections(const uint8_t *b, size_t n, dnp_il_header *h, dnp_il_clause *clauses, size_t cap,
                          char *err, size_t errlen) {
    uint64_t pos = (uint64_t)h->header_size + h->code_size;
    for (int more = h->more_sects; more;) {
        pos = (pos + 3) & ~(uint64_t)3;
        if (pos + 4 > n)
            return dnp_fail(err, errlen, "data section %" PRIu32 " at byte %" PRIu64 " runs past the body (%zu bytes)",
                        h->sections + 1, pos, n);
        const uint8_t *s = b + pos;
        uint8_t kind = s[0];
        int fat = (kind & 0x40) != 0; /* CorILMethod_Sect_FatFormat */
        uint32_t size = fat ? (uint32_t)s[1] | (uint32_t)s[2] << 8 | (uint32_t)s[3] << 16 : s[1];
        if (size < 4)
            return dnp_fail(err, errlen, "data section %" PRIu32 " at byte %" PRIu64 " claims %" PRIu32
                        " bytes, less than its own header", h->sections + 1, pos, size);
        if (pos + size > n)
            return dnp_fail(err, errlen, "data section %" PRIu32 " at byte %" PRIu64 " of %" PRIu32
                        " bytes runs past the body (%zu bytes)", h->sections + 1, pos, size, n);
        if (kind & 0x1) /* CorILMethod_Sect_EHTable */
            section_clauses(s + 4, size - 4, fat, h, clauses, cap);
        h->sections++;
        pos += size;
        h->body_size = (uint32_t)pos;
        more = (kind & 0x80) != 0; /* CorILMethod_Sect_MoreSects */
    }
    return 0;
}

int dnp_il_parse(const uint8_t *b, size_t n, dnp_il_header *h, dnp_il_clause *clauses, size_t cap, char *err,
                 size_t errlen) {
    memset(h, 0, sizeof *h);
    if (err && errlen)
        err[0] = 0;
    if (!b)
        n = 0;
    if (!clauses)
        cap = 0;
    if (parse_header(b, n, h, err, errlen) < 0)
        return -1;
    return parse_sections(b, n, h, clauses, cap, err, errlen);
}

const char *dnp_il_clause_word(uint32_t kind) {
    switch (kind) {
    case DNP_IL_CATCH: return "catch";
    case DNP_IL_FILTER: return "filter";
    case DNP_IL_FINALLY: return "finally";
    case DNP_IL_FAULT: return "fault";
    default: return NULL;
    }
}

/* ---- instructions ---- */

static void read_operand(const uint8_t *p, dnp_il_insn *in) {
    uint32_t next = in->offset + in->size;
    switch ((dnp_il_operand)in->op->operand) {
    case DNP_ILO_I1: in->i = (int8_t)p[0]; break;
    case DNP_ILO_U1:
    case DNP_ILO_ARG1:
    case DNP_ILO_VAR1: in->i = p[0]; break;
    case DNP_ILO_ARG2:
    case DNP_ILO_VAR2: in->i = get_u16(p); break;
    case DNP_ILO_I4: in->i = (int32_t)get_u32(p); break;
    case DNP_ILO_I8: in->i = (int64_t)((uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32); break;
    case DNP_ILO_R4: {
        uint32_t u = get_u32(p);
        float f;
        memcpy(&f, &u, sizeof f);
        in->r = f;
        break;
    }
    case DNP_ILO_R8: {
        uint64_t u = (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
        memcpy(&in->r, &u, sizeof in->r);
        break;
    }
    case DNP_ILO_BR1: in->i = (int64_t)next + (int8_t)p[0]; break;
    case DNP_ILO_BR4: in->i = (int64_t)next + (int32_t)get_u32(p); break;
    case DNP_ILO_SWITCH: in->i = get_u32(p); break;
    case DNP_ILO_NONE: break;
    default: in->token = get_u32(p); break; /* the tokens */
    }
}

int dnp_il_decode(const uint8_t *code, uint32_t size, uint32_t off, dnp_il_insn *in, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    if (!code || off >= size)
        return 0;
    in->offset = off;
    uint32_t p = off + 1;
    unsigned bytes = code[off];
    if (bytes == 0xFE) {
        if (p >= size)
            return dnp_fail(err, errlen, "IL_%04" PRIx32 ": the code ends inside a two-byte opcode (0xFE)", off);
        bytes = 0xFE00u | code[p++];
    }
    in->op = dnp_il_opcode_of(bytes);
    if (!in->op && bytes > 0xFF)
        return dnp_fail(err, errlen, "IL_%04" PRIx32 ": 0xFE 0x%02X is no instruction", off, bytes & 0xFFu);
    if (!in->op)
        return dnp_fail(err, errlen, "IL_%04" PRIx32 ": 0x%02X is no instruction", off, bytes);
    uint32_t osize = operand_size[in->op->operand];
    if (size - p < osize)
        return dnp_fail(err, errlen, "IL_%04" PRIx32 ": %s: its operand is cut short (%" PRIu32 " of %" PRIu32 " bytes)",
                    off, in->op->name, size - p, osize);
    in->size = p + osize - off;
    read_operand(code + p, in);
    p += osize;
    if (in->op->operand == DNP_ILO_SWITCH) {
        uint64_t count = (uint64_t)in->i;
        if (count > (size - p) / 4)
            return dnp_fail(err, errlen, "IL_%04" PRIx32 ": switch: its %" PRIu64 " targets run past the code (%" PRIu32
                        " bytes left)", off, count, size - p);
        in->table = code + p;
        in->size += (uint32_t)count * 4;
    }
    return 1;
}

int64_t dnp_il_switch_target(const dnp_il_insn *in, uint32_t k) {
    if (!in->op || in->op->operand != DNP_ILO_SWITCH || k >= (uint64_t)in->i)
        return -1;
    return (int64_t)in->offset + in->size + (int32_t)get_u32(in->table + 4 * (size_t)k);
}

int dnp_il_has_token(const dnp_il_insn *in) {
    return in->op && in->op->operand >= DNP_ILO_METHOD;
}

/* ---- text ---- */

typedef struct tbuf {
    char *s;
    size_t cap, len;
} tbuf;

static void tb_printf(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(tbuf *b, const char *fmt, ...) {
    if (b->len + 1 >= b->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len = (size_t)n < b->cap - b->len ? b->len + (size_t)n : b->cap - 1;
}

static void tb_target(tbuf *b, int64_t t) {
    if (t >= 0 && t <= (int64_t)UINT32_MAX)
        tb_printf(b, "IL_%04" PRIx64, (uint64_t)t);
    else
        tb_printf(b, "IL_?(%" PRId64 ")", t);
}

size_t dnp_il_insn_text(const dnp_il_insn *in, dnp_il_namer namer, void *ctx, char *out, size_t cap) {
    tbuf b = {out, cap, 0};
    if (!cap)
        return 0;
    out[0] = 0;
    if (!in->op)
        return 0;
    tb_printf(&b, "IL_%04" PRIx32 ": %s", in->offset, in->op->name);
    if (in->op->operand == DNP_ILO_NONE)
        return b.len;
    tb_printf(&b, "%*s", (int)(in->op->name[0] && strlen(in->op->name) < 11 ? 11 - strlen(in->op->name) : 1), "");
    char name[1024];
    const char *s;
    switch ((dnp_il_operand)in->op->operand) {
    case DNP_ILO_R4: tb_printf(&b, "%.9g", in->r); break;
    case DNP_ILO_R8: tb_printf(&b, "%.17g", in->r); break;
    case DNP_ILO_BR1:
    case DNP_ILO_BR4: tb_target(&b, in->i); break;
    case DNP_ILO_SWITCH:
        tb_printf(&b, "(");
        for (uint32_t k = 0; k < (uint64_t)in->i && b.len + 1 < b.cap; k++) {
            tb_printf(&b, "%s", k ? ", " : "");
            tb_target(&b, dnp_il_switch_target(in, k));
        }
        tb_printf(&b, ")");
        break;
    case DNP_ILO_VAR1:
    case DNP_ILO_VAR2: tb_printf(&b, "V_%" PRId64, in->i); break;
    case DNP_ILO_ARG1:
    case DNP_ILO_ARG2: tb_printf(&b, "A_%" PRId64, in->i); break;
    case DNP_ILO_I1:
    case DNP_ILO_U1:
    case DNP_ILO_I4:
    case DNP_ILO_I8: tb_printf(&b, "%" PRId64, in->i); break;
    default:
        s = namer ? namer(ctx, in->token, name, sizeof name) : NULL;
        if (s && *s)
            tb_printf(&b, "%s", s);
        else
            tb_printf(&b, "0x%08" PRIx32, in->token);
        break;
    }
    return b.len;
}

const char *dnp_il_token_name(const char *tokens, uint32_t token, char *out, size_t cap) {
    char key[16];
    snprintf(key, sizeof key, "%08" PRIx32 "\t", token);
    for (const char *p = tokens; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len >= 9 && memcmp(p, key, 9) == 0) {
            if (!cap)
                return NULL;
            size_t n = len - 9 < cap - 1 ? len - 9 : cap - 1;
            memcpy(out, p + 9, n);
            out[n] = 0;
            return out;
        }
        p += len + (eol != NULL);
    }
    return NULL;
}

/* ---- hex ---- */

size_t dnp_hex_encode(const uint8_t *b, size_t n, char *out, size_t cap) {
    static const char digits[] = "0123456789abcdef";
    size_t i = 0;
    if (!cap)
        return 0;
    for (; i < n && 2 * i + 2 < cap; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * i] = 0;
    return 2 * i;
}

long dnp_hex_decode(const char *text, uint8_t *out, size_t cap) {
    size_t n = 0;
    if (!text)
        return -1;
    for (const char *p = text; *p; p += 2) {
        int hi = dnp_hex_digit(p[0]), lo = hi < 0 ? -1 : dnp_hex_digit(p[1]);
        if (hi < 0 || lo < 0)
            return -1;
        if (n < cap)
            out[n] = (uint8_t)(hi << 4 | lo);
        n++;
    }
    return (long)(n < cap ? n : cap);
}

/* ---- a prologue before a body (the agent's async probe) ---- */

static void put_u16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v) {
    put_u16(p, v & 0xffff);
    put_u16(p + 2, v >> 16);
}

#define PREPEND_CLAUSES 1024

static size_t prepend(const uint8_t *b, size_t n, const uint8_t *pre, uint32_t npre, uint32_t min_stack,
                      uint8_t *out, size_t cap, dnp_il_clause *cl, dnp_il_header *hp, char *err, size_t errlen);

size_t dnp_il_prepend(const uint8_t *b, size_t n, const uint8_t *pre, uint32_t npre, uint32_t min_stack,
                      uint8_t *out, size_t cap, char *err, size_t errlen) {
    dnp_il_header h;
    dnp_il_clause *cl = malloc(PREPEND_CLAUSES * sizeof *cl);
    size_t r = cl ? prepend(b, n, pre, npre, min_stack, out, cap, cl, &h, err, errlen) : 0;
    if (!cl)
        snprintf(err, errlen, "out of memory");
    free(cl);
    return r;
}

static size_t prepend(const uint8_t *b, size_t n, const uint8_t *pre, uint32_t npre, uint32_t min_stack,
                      uint8_t *out, size_t cap, dnp_il_clause *cl, dnp_il_header *hp, char *err, size_t errlen) {
    dnp_il_header h;
    (void)hp;
    if (dnp_il_parse(b, n, &h, cl, PREPEND_CLAUSES, err, errlen) != 0)
        return 0;
    if (h.nclauses > PREPEND_CLAUSES) {
        snprintf(err, errlen, "%zu exception clauses: more than %d", h.nclauses, PREPEND_CLAUSES);
        return 0;
    }
    uint64_t code = (uint64_t)npre + h.code_size;
    uint64_t size = 12 + code;
    uint64_t sect = 0;
    if (h.nclauses) {
        size = (size + 3) & ~(uint64_t)3;
        sect = size;
        size += 4 + 24 * (uint64_t)h.nclauses;
    }
    if (code > UINT32_MAX / 2 || size > cap) {
        snprintf(err, errlen, "the new body takes %llu bytes, %zu given", (unsigned long long)size, cap);
        return 0;
    }
    memset(out, 0, (size_t)size);
    /* flags: fat, InitLocals kept, MoreSects when there are clauses; 3 dwords */
    uint32_t flags = 0x3u | (h.init_locals ? 0x10u : 0) | (h.nclauses ? 0x8u : 0);
    put_u16(out, flags | 3u << 12);
    put_u16(out + 2, h.max_stack > min_stack ? h.max_stack : min_stack);
    put_u32(out + 4, (uint32_t)code);
    put_u32(out + 8, h.local_sig);
    memcpy(out + 12, pre, npre);
    memcpy(out + 12 + npre, b + h.header_size, h.code_size);
    if (h.nclauses) {
        uint8_t *s = out + sect;
        put_u32(s, 0x41u | (uint32_t)(4 + 24 * h.nclauses) << 8); /* EHTable | FatFormat, its size */
        for (size_t i = 0; i < h.nclauses; i++) {
            uint8_t *c = s + 4 + 24 * i;
            put_u32(c, cl[i].kind);
            put_u32(c + 4, cl[i].try_offset + npre);
            put_u32(c + 8, cl[i].try_length);
            put_u32(c + 12, cl[i].handler_offset + npre);
            put_u32(c + 16, cl[i].handler_length);
            put_u32(c + 20, cl[i].kind == DNP_IL_FILTER ? cl[i].extra + npre : cl[i].extra);
        }
    }
    return (size_t)size;
}
