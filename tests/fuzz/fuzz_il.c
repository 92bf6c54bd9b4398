/* fuzz_il.c: the IL body parser and disassembler (src/trace/il_body.c), which
 * the agent runs on what GetILFunctionBody gives and the front end on what a
 * trace holds. The input is a body from its header on: whatever it holds,
 * parsing and decoding stay inside it (a copy of exactly its size: a read
 * past the end is ASan's to see), a refusal is one line, an accepted body's
 * sizes add up, and every instruction lies inside the code. The input as text
 * feeds the token-name lookup and the hex decoder too. Seeds:
 * tests/fuzz/corpus/il (real bodies from the il scenario); dictionary:
 * tests/fuzz/il.dict.
 *
 * The same input goes through --trace's rewrite (src/trace/il_rewrite.c, which
 * the agent runs on the same bodies): a refusal is one line; an accepted
 * body fits the bound, parses again with one clause more (the probe's, last,
 * covering the code from the prologue to its handler), decodes to its end,
 * and every branch and switch target in it is an instruction's start. The
 * input as a method signature and a locals signature too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "il_body.h"
#include "il_rewrite.h"

static void check_line(const char *what, const char *err) {
    if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "fuzz_il: %s without one line of reason\n", what);
        abort();
    }
}

static const char *namer(void *ctx, uint32_t token, char *buf, size_t cap) {
    return dnp_il_token_name(ctx, token, buf, cap);
}

static void decode_all(const uint8_t *code, uint32_t size, const char *tokens) {
    dnp_il_insn in;
    char err[256], text[512];
    uint32_t off = 0;
    int rc;
    while ((rc = dnp_il_decode(code, size, off, &in, err, sizeof err)) > 0) {
        if (in.size == 0 || in.offset != off || (uint64_t)off + in.size > size) {
            fprintf(stderr, "fuzz_il: instruction at %u of size %u outside %u bytes of code\n", off, in.size, size);
            abort();
        }
        dnp_il_insn_text(&in, namer, (void *)tokens, text, sizeof text);
        off += in.size;
    }
    if (rc < 0)
        check_line("a decoding error", err);
}

static void fail(const char *what) {
    fprintf(stderr, "fuzz_il: rewrite: %s\n", what);
    abort();
}

/* Every target of the rewritten code is an instruction's start. */
static void check_targets(const uint8_t *code, uint32_t size) {
    uint8_t *start = calloc(size + 1, 1);
    dnp_il_insn in;
    if (!start)
        return;
    for (uint32_t off = 0; dnp_il_decode(code, size, off, &in, NULL, 0) > 0; off += in.size)
        start[off] = 1;
    for (uint32_t off = 0; dnp_il_decode(code, size, off, &in, NULL, 0) > 0; off += in.size) {
        if (in.op->operand == DNP_ILO_BR1 || in.op->operand == DNP_ILO_BR4)
            if (in.i < 0 || in.i >= size || !start[in.i])
                fail("a branch to no instruction");
        for (uint32_t k = 0; in.op->operand == DNP_ILO_SWITCH && k < (uint64_t)in.i; k++) {
            int64_t t = dnp_il_switch_target(&in, k);
            if (t < 0 || t >= size || !start[t])
                fail("a switch target that is no instruction");
        }
    }
    free(start);
}

static void rewrite(const uint8_t *body, size_t size) {
    dnp_il_probe p = {7, 0x1122334455667788ull, 0x99AABBCCDDEEFF00ull, 0x11000001, 0x11000002,
                      0x11000003, 300, 301, {0}, 0, 0};
    if (size & 1) { /* every other input with more arguments for enter: this's field, an argument's 4 bytes */
        static const uint8_t args[] = {0x02, 0x7B, 0x01, 0x00, 0x00, 0x04, 0x0F, 0x02, 0x4B};
        memcpy(p.enter_args, args, sizeof args);
        p.enter_args_len = sizeof args;
        p.enter_pushes = 2;
    }
    dnp_il_header h, nh;
    if (dnp_il_parse(body, size, &h, NULL, 0, NULL, 0) < 0)
        return;
    size_t cap = dnp_il_rewrite_bound(body, size);
    uint8_t *out = malloc(cap ? cap : 1);
    char err[256];
    long n = out ? dnp_il_rewrite(body, size, &p, out, cap, err, sizeof err) : 0;
    if (n < 0)
        check_line("a refused rewrite", err);
    dnp_il_clause *cl = n > 0 ? calloc(h.nclauses + 1, sizeof *cl) : NULL;
    if (n > 0 && cl) {
        if ((size_t)n > cap || dnp_il_parse(out, (size_t)n, &nh, cl, h.nclauses + 1, err, sizeof err) < 0)
            fail("the rewritten body does not parse");
        if (nh.nclauses != h.nclauses + 1 || nh.body_size != (uint32_t)n || nh.local_sig != p.locals_sig)
            fail("the rewritten body's sizes, clauses or locals");
        const dnp_il_clause *last = &cl[h.nclauses];
        if (last->kind != DNP_IL_FINALLY || last->try_offset + last->try_length != last->handler_offset ||
            last->handler_offset + last->handler_length >= nh.code_size)
            fail("the probe's clause");
        decode_all(out + nh.header_size, nh.code_size, "");
        check_targets(out + nh.header_size, nh.code_size);
    }
    free(cl);
    free(out);
}

static void signatures(const uint8_t *b, size_t size) {
    size_t off, len;
    int is_void;
    char err[256];
    uint8_t out[512];
    uint32_t start, result;
    if (dnp_sig_return_type(b, size, &off, &len, &is_void, err, sizeof err) == 0 && off + len > size)
        fail("a return type past the signature");
    size_t half = size / 2;
    long n = dnp_il_locals_sig(b, half, b + half, size - half, out, sizeof out, &start, &result);
    if (n > (long)sizeof out)
        fail("a locals signature past its buffer");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    char *text = malloc(size + 1);
    if (!copy || !text) {
        free(copy);
        free(text);
        return 0;
    }
    memcpy(copy, data, size);
    memcpy(text, data, size);
    text[size] = 0;
    dnp_il_header h;
    char err[256];
    dnp_il_parse(copy, size, &h, NULL, 0, NULL, 0);
    size_t cap = h.nclauses < 4096 ? h.nclauses : 4096;
    dnp_il_clause *clauses = calloc(cap ? cap : 1, sizeof *clauses);
    int rc = clauses ? dnp_il_parse(copy, size, &h, clauses, cap, err, sizeof err) : 0;
    if (rc == 0 && clauses && ((uint64_t)h.header_size + h.code_size > h.body_size || h.body_size > size)) {
        fprintf(stderr, "fuzz_il: an accepted body of %zu bytes claims %u (header %u, code %u)\n", size, h.body_size,
                h.header_size, h.code_size);
        abort();
    }
    if (rc < 0)
        check_line("a refused body", err);
    if (h.header_size && (uint64_t)h.header_size + h.code_size <= size)
        decode_all(copy + h.header_size, h.code_size, text);
    decode_all(copy, (uint32_t)size, text); /* the input as bare code too */
    char name[64];
    uint8_t bytes[64];
    dnp_il_token_name(text, size >= 4 ? (uint32_t)copy[0] << 24 | copy[1] : 0, name, sizeof name);
    dnp_hex_decode(text, bytes, sizeof bytes);
    rewrite(copy, size);
    signatures(copy, size);
    free(clauses);
    free(copy);
    free(text);
    return 0;
}
