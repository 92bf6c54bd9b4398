/* fuzz_il.c: the IL body parser and disassembler (src/trace/il_body.c), which
 * the agent runs on what GetILFunctionBody gives and the front end on what a
 * trace holds. The input is a body from its header on: whatever it holds,
 * parsing and decoding stay inside it (a copy of exactly its size: a read
 * past the end is ASan's to see), a refusal is one line, an accepted body's
 * sizes add up, and every instruction lies inside the code. The input as text
 * feeds the token-name lookup and the hex decoder too. Seeds:
 * tests/fuzz/corpus/il (real bodies from the il scenario); dictionary:
 * tests/fuzz/il.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "il_body.h"

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
    free(clauses);
    free(copy);
    free(text);
    return 0;
}
