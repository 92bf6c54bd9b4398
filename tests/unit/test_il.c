/* test_il.c: the IL body parser and disassembler (src/trace/il_body.c) on
 * hand-made bodies: tiny and fat headers, small and fat EH sections, every
 * operand kind, and bodies cut short or corrupt (an error, never a read past
 * the buffer: each test copies the body to the end of a heap block, so that
 * ASan sees one byte too far). */
#include <stdlib.h>
#include <string.h>

#include "il_body.h"
#include "test.h"

/* The body at the very end of a block of its own size. */
static uint8_t *exact(const uint8_t *b, size_t n) {
    uint8_t *p = malloc(n ? n : 1);
    if (p && n)
        memcpy(p, b, n);
    return p;
}

static int parse(const uint8_t *b, size_t n, dnp_il_header *h, dnp_il_clause *c, size_t cap, char *err) {
    uint8_t *p = exact(b, n);
    int rc = dnp_il_parse(p, n, h, c, cap, err, 256);
    free(p);
    return rc;
}

/* Every instruction of code as text, one a line, into out; the decoder's
 * result (0 at a clean end, -1 at an error, its line in err). */
static const char *namer(void *ctx, uint32_t token, char *buf, size_t cap) {
    (void)ctx;
    return dnp_il_token_name("0a00000c\tSystem.Console::WriteLine\n70000001\t\"hi\"\n", token, buf, cap);
}

static int listing(const uint8_t *code, uint32_t n, char *out, size_t cap, char *err) {
    uint8_t *p = exact(code, n);
    dnp_il_insn in;
    size_t len = 0;
    int rc;
    out[0] = 0;
    for (uint32_t off = 0; (rc = dnp_il_decode(p, n, off, &in, err, 256)) > 0; off += in.size) {
        len += dnp_il_insn_text(&in, namer, NULL, out + len, cap - len);
        len += (size_t)snprintf(out + len, cap - len, "\n");
    }
    free(p);
    return rc;
}

TEST(il_tiny) {
    /* ldstr "hi"; call WriteLine; ret */
    const uint8_t b[] = {(11 << 2) | 2, 0x72, 0x01, 0, 0, 0x70, 0x28, 0x0c, 0, 0, 0x0a, 0x2a};
    dnp_il_header h;
    dnp_il_clause c[4];
    char err[256], text[1024];
    ASSERT_EQ(parse(b, sizeof b, &h, c, 4, err), 0);
    ASSERT_EQ(h.fat, 0);
    ASSERT_EQ(h.header_size, 1);
    ASSERT_EQ(h.code_size, 11);
    ASSERT_EQ(h.max_stack, 8);
    ASSERT_EQ(h.body_size, sizeof b);
    ASSERT_EQ(h.nclauses, 0);
    ASSERT_EQ(listing(b + 1, 11, text, sizeof text, err), 0);
    ASSERT_STREQ(text, "IL_0000: ldstr      \"hi\"\n"
                       "IL_0005: call       System.Console::WriteLine\n"
                       "IL_000a: ret\n");
    /* the code runs past the body */
    ASSERT_EQ(parse(b, sizeof b - 1, &h, c, 4, err), -1);
    ASSERT_CONTAINS(err, "runs past the body");
    ASSERT_EQ(parse(b, 0, &h, c, 4, err), -1);
    ASSERT_CONTAINS(err, "empty body");
    const uint8_t bad[] = {0x01, 0x2a};
    ASSERT_EQ(parse(bad, sizeof bad, &h, c, 4, err), -1);
    ASSERT_CONTAINS(err, "not an IL method header");
    return 0;
}

/* A fat header (init locals, a locals token) whose code is followed by a
 * small EH section of two clauses (catch, finally), then a fat one (filter,
 * fault). */
static size_t fat_body(uint8_t *b) {
    size_t n = 0;
    uint16_t flags = 0x3 | 0x8 | 0x10 | 3 << 12;
    b[n++] = (uint8_t)flags, b[n++] = (uint8_t)(flags >> 8);
    b[n++] = 5, b[n++] = 0;                   /* max stack 5 */
    b[n++] = 6, b[n++] = 0, b[n++] = 0, b[n++] = 0; /* code size 6 */
    b[n++] = 0x01, b[n++] = 0, b[n++] = 0, b[n++] = 0x11; /* locals 0x11000001 */
    const uint8_t code[] = {0x00, 0xDE, 0x02, 0x26, 0xDC, 0x2A};
    memcpy(b + n, code, sizeof code), n += sizeof code;
    while (n % 4)
        b[n++] = 0xEE; /* padding */
    /* small section: EHTable | MoreSects, 2 * 12 + 4 bytes */
    b[n++] = 0x01 | 0x80, b[n++] = 28, b[n++] = 0, b[n++] = 0;
    const uint8_t small[] = {0, 0, 0, 0, 3, 3, 0, 1, 0x05, 0, 0, 0x01, /* catch [0,3) -> [3,4) 0x01000005 */
                             2, 0, 0, 0, 4, 4, 0, 2, 0, 0, 0, 0};      /* finally [0,4) -> [4,6) */
    memcpy(b + n, small, sizeof small), n += sizeof small;
    /* fat section: EHTable | FatFormat, 2 * 24 + 4 bytes */
    b[n++] = 0x41, b[n++] = 52, b[n++] = 0, b[n++] = 0;
    const uint32_t fat[] = {1, 0, 3, 4, 2, 3, /* filter at 3 */ 4, 1, 2, 5, 1, 0};
    for (size_t i = 0; i < 12; i++)
        for (int k = 0; k < 4; k++)
            b[n++] = (uint8_t)(fat[i] >> 8 * k);
    return n;
}

TEST(il_fat_sections) {
    uint8_t b[256];
    size_t n = fat_body(b);
    dnp_il_header h;
    dnp_il_clause c[8];
    char err[256], text[1024];
    ASSERT_EQ(parse(b, n, &h, c, 8, err), 0);
    ASSERT_EQ(h.fat, 1);
    ASSERT_EQ(h.header_size, 12);
    ASSERT_EQ(h.max_stack, 5);
    ASSERT_EQ(h.code_size, 6);
    ASSERT_EQ(h.local_sig, 0x11000001u);
    ASSERT_EQ(h.init_locals, 1);
    ASSERT_EQ(h.more_sects, 1);
    ASSERT_EQ(h.sections, 2);
    ASSERT_EQ(h.body_size, n);
    ASSERT_EQ(h.nclauses, 4);
    ASSERT_EQ(c[0].kind, DNP_IL_CATCH);
    ASSERT_EQ(c[0].try_length, 3);
    ASSERT_EQ(c[0].handler_offset, 3);
    ASSERT_EQ(c[0].handler_length, 1);
    ASSERT_EQ(c[0].extra, 0x01000005u);
    ASSERT_EQ(c[0].fat, 0);
    ASSERT_EQ(c[1].kind, DNP_IL_FINALLY);
    ASSERT_EQ(c[1].handler_length, 2);
    ASSERT_EQ(c[2].kind, DNP_IL_FILTER);
    ASSERT_EQ(c[2].extra, 3);
    ASSERT_EQ(c[2].fat, 1);
    ASSERT_EQ(c[3].kind, DNP_IL_FAULT);
    ASSERT_STREQ(dnp_il_clause_word(c[3].kind), "fault");
    /* fewer slots than clauses: all counted, the first kept */
    ASSERT_EQ(parse(b, n, &h, c, 1, err), 0);
    ASSERT_EQ(h.nclauses, 4);
    ASSERT_EQ(listing(b + 12, 6, text, sizeof text, err), 0);
    ASSERT_STREQ(text, "IL_0000: nop\nIL_0001: leave.s    IL_0005\nIL_0003: pop\nIL_0004: endfinally\n"
                       "IL_0005: ret\n");
    /* every cut of the body past its code is a section error, header intact */
    for (size_t cut = 12 + 6; cut < n; cut++) {
        ASSERT_EQ(parse(b, cut, &h, c, 8, err), -1);
        ASSERT_EQ(h.code_size, 6);
        ASSERT_CONTAINS(err, "section");
    }
    /* every cut inside the header or the code: an error too */
    for (size_t cut = 0; cut < 12 + 6; cut++)
        ASSERT_EQ(parse(b, cut, &h, c, 8, err), -1);
    return 0;
}

TEST(il_fat_corrupt) {
    uint8_t b[256];
    size_t n = fat_body(b);
    dnp_il_header h;
    char err[256];
    uint8_t bad[256];
    memcpy(bad, b, n);
    bad[1] = (uint8_t)(bad[1] & 0x0f) | 2 << 4; /* a header of 2 dwords */
    ASSERT_EQ(parse(bad, n, &h, NULL, 0, err), -1);
    ASSERT_CONTAINS(err, "at least 3");
    memcpy(bad, b, n);
    bad[4] = 0xff, bad[5] = 0xff, bad[6] = 0xff, bad[7] = 0xff; /* code size 4 GiB */
    ASSERT_EQ(parse(bad, n, &h, NULL, 0, err), -1);
    ASSERT_CONTAINS(err, "runs past the body");
    memcpy(bad, b, n);
    bad[21] = 2; /* the small section says 2 bytes */
    ASSERT_EQ(parse(bad, n, &h, NULL, 0, err), -1);
    ASSERT_CONTAINS(err, "less than its own header");
    memcpy(bad, b, n);
    bad[49] = 0xff, bad[50] = 0xff, bad[51] = 0xff; /* the fat section says 16 MiB */
    ASSERT_EQ(parse(bad, n, &h, NULL, 0, err), -1);
    ASSERT_CONTAINS(err, "runs past the body");
    ASSERT_EQ(parse(b, 7, &h, NULL, 0, err), -1);
    ASSERT_CONTAINS(err, "fat header cut short");
    return 0;
}

TEST(il_operands) {
    const uint8_t code[] = {
        0x1F, 0xFE,                                     /* ldc.i4.s -2 */
        0x20, 0x78, 0x56, 0x34, 0x12,                   /* ldc.i4 0x12345678 */
        0x21, 1, 0, 0, 0, 0, 0, 0, 0x80,                /* ldc.i8 INT64_MIN + 1 */
        0x22, 0x00, 0x00, 0xC0, 0x3F,                   /* ldc.r4 1.5 */
        0x23, 0, 0, 0, 0, 0, 0, 0x04, 0xC0,             /* ldc.r8 -2.5 */
        0x11, 0x07, 0x0E, 0x02,                         /* ldloc.s V_7, ldarg.s A_2 */
        0xFE, 0x0C, 0x01, 0x01,                         /* ldloc V_257 */
        0xFE, 0x09, 0x03, 0x00,                         /* ldarg A_3 */
        0x45, 2, 0, 0, 0, 0xFC, 0xFF, 0xFF, 0xFF, 4, 0, 0, 0, /* switch (IL_0033, IL_003b) */
        0x2B, 0xFE,                                     /* br.s to itself: IL_0037 */
        0x38, 0, 0, 0, 0,                               /* br IL_003e */
        0xFE, 0x12, 0x04,                               /* unaligned. 4 */
        0x7E, 0x01, 0, 0, 0x04,                         /* ldsfld 0x04000001 */
        0xFE, 0x01, 0x2A,                               /* ceq, ret */
    };
    char err[256], text[2048];
    ASSERT_EQ(listing(code, sizeof code, text, sizeof text, err), 0);
    ASSERT_STREQ(text, "IL_0000: ldc.i4.s   -2\n"
                       "IL_0002: ldc.i4     305419896\n"
                       "IL_0007: ldc.i8     -9223372036854775807\n"
                       "IL_0010: ldc.r4     1.5\n"
                       "IL_0015: ldc.r8     -2.5\n"
                       "IL_001e: ldloc.s    V_7\n"
                       "IL_0020: ldarg.s    A_2\n"
                       "IL_0022: ldloc      V_257\n"
                       "IL_0026: ldarg      A_3\n"
                       "IL_002a: switch     (IL_0033, IL_003b)\n"
                       "IL_0037: br.s       IL_0037\n"
                       "IL_0039: br         IL_003e\n"
                       "IL_003e: unaligned. 4\n"
                       "IL_0041: ldsfld     0x04000001\n"
                       "IL_0046: ceq\n"
                       "IL_0048: ret\n");
    return 0;
}

TEST(il_decode_corrupt) {
    char err[256], text[1024];
    const uint8_t unknown[] = {0x00, 0x24};
    ASSERT_EQ(listing(unknown, sizeof unknown, text, sizeof text, err), -1);
    ASSERT_CONTAINS(err, "IL_0001: 0x24 is no instruction");
    const uint8_t unknown2[] = {0xFE, 0x08};
    ASSERT_EQ(listing(unknown2, sizeof unknown2, text, sizeof text, err), -1);
    ASSERT_CONTAINS(err, "0xFE 0x08 is no instruction");
    const uint8_t prefix[] = {0x00, 0xFE};
    ASSERT_EQ(listing(prefix, sizeof prefix, text, sizeof text, err), -1);
    ASSERT_CONTAINS(err, "inside a two-byte opcode");
    const uint8_t call[] = {0x28, 0x01, 0x00, 0x00};
    ASSERT_EQ(listing(call, sizeof call, text, sizeof text, err), -1);
    ASSERT_CONTAINS(err, "IL_0000: call: its operand is cut short (3 of 4 bytes)");
    const uint8_t sw[] = {0x45, 0xff, 0xff, 0xff, 0x3f, 0, 0, 0, 0};
    ASSERT_EQ(listing(sw, sizeof sw, text, sizeof text, err), -1);
    ASSERT_CONTAINS(err, "switch: its 1073741823 targets run past the code");
    /* every opcode of the table decodes with a zero operand, and names itself */
    size_t nops;
    const dnp_il_opcode *ops = dnp_il_opcodes(&nops);
    ASSERT_EQ(nops, 219);
    for (size_t i = 0; i < nops; i++) {
        uint8_t b[16] = {0};
        size_t k = 0;
        if (ops[i].bytes > 0xFF)
            b[k++] = 0xFE;
        b[k++] = (uint8_t)ops[i].bytes;
        dnp_il_insn in;
        ASSERT_EQ(dnp_il_decode(b, sizeof b, 0, &in, err, sizeof err), 1);
        ASSERT_EQ(in.op, &ops[i]);
        ASSERT_EQ(dnp_il_opcode_of(ops[i].bytes), &ops[i]);
        if (i)
            ASSERT_LT(ops[i - 1].bytes, ops[i].bytes);
    }
    return 0;
}

TEST(il_tokens_and_hex) {
    char out[64];
    const char *tokens = "06000001\tA::B\n0a000002\tSystem.Console::WriteLine\n70000003\t\"a\\tb\"";
    ASSERT_STREQ(dnp_il_token_name(tokens, 0x0a000002, out, sizeof out), "System.Console::WriteLine");
    ASSERT_STREQ(dnp_il_token_name(tokens, 0x70000003, out, sizeof out), "\"a\\tb\"");
    ASSERT_EQ(dnp_il_token_name(tokens, 0x06000002, out, sizeof out), NULL);
    ASSERT_EQ(dnp_il_token_name(NULL, 0x06000001, out, sizeof out), NULL);
    const uint8_t b[] = {0x00, 0x2a, 0xfe, 0x13};
    char hex[16];
    ASSERT_EQ(dnp_hex_encode(b, sizeof b, hex, sizeof hex), 8);
    ASSERT_STREQ(hex, "002afe13");
    uint8_t back[8];
    ASSERT_EQ(dnp_hex_decode(hex, back, sizeof back), 4);
    ASSERT_EQ(memcmp(back, b, 4), 0);
    ASSERT_EQ(dnp_hex_decode("0g", back, sizeof back), -1);
    ASSERT_EQ(dnp_hex_decode("012", back, sizeof back), -1);
    ASSERT_EQ(dnp_hex_decode("", back, sizeof back), 0);
    return 0;
}

/* ---- dnprof print on ILBody events (synthetic traces) ---- */

#ifdef DNPROF_BIN
#include <stdio.h>
#include <unistd.h>

#include "json_check.h"
#include "synth.h"
#include "trace_format.h"

static char *print_out(const char *args, const char *path) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' print %s '%s' 2>&1", DNPROF_BIN, args, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && n + 1 < cap && (got = fread(buf + n, 1, cap - 1 - n, p)) > 0)
        n += got;
    pclose(p);
    if (buf)
        buf[n] = 0;
    return buf;
}

/* An ILBody of method fn: hr, the runtime's size, the body's hex, tokens. */
static void il_event(synth *w, uint64_t t, const char *fn, uint32_t hr, uint64_t reported, const char *hex,
                     const char *tokens) {
    uint64_t v[DNP_NV_ILBody] = {0};
    v[DNP_V(ILBody, functionId)] = 0x1000 + t;
    v[DNP_VNAME(ILBody, functionId)] = synth_string(w, fn);
    v[DNP_V(ILBody, methodToken)] = 0x06000001;
    v[DNP_V(ILBody, hrStatus)] = hr;
    v[DNP_V(ILBody, reportedSize)] = reported;
    v[DNP_V(ILBody, body)] = hex ? synth_string(w, hex) : 0;
    v[DNP_V(ILBody, tokens)] = tokens ? synth_string(w, tokens) : 0;
    synth_event(w, 1, t, DNP_EV_ILBody, v);
}

TEST(il_print_notes) {
    const char *path = "/tmp/dnprof-unit-il-print.trace";
    synth *w = synth_open(path, 4242, "il-print");
    ASSERT_NE(w, NULL);
    synth_thread(w, 1, 4242);
    /* tiny, ldstr; call in 10 bytes of code; then a ret the header leaves out, in the runtime's 12 bytes */
    il_event(w, 10, "A.B::Sizes", 0, 12, "2a7201000070280c00000a2a",
             "70000001\t\"hi\"\n0a00000c\tSystem.Console::WriteLine");
    il_event(w, 20, "A.B::Corrupt", 0, 3, "0a0024", NULL);       /* nop, then no instruction */
    il_event(w, 30, "A.B::Failed", 0x80004005u, 0, NULL, NULL);  /* E_FAIL */
    il_event(w, 40, "A.B::Cut", 0, 70000, "0e00002a", NULL);     /* 4 of 70000 bytes */
    il_event(w, 50, "A.B::NotHex", 0, 2, "zz", NULL);
    ASSERT_EQ(synth_close(w, 1), 0);
    char *out = print_out("", path);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, "IL tiny maxstack=8 codesize=10 locals=none initlocals=no clauses=0 bodysize=11 "
                         "(the header gives 11 bytes, the runtime 12)\n");
    ASSERT_CONTAINS(out, "IL_0005: call       System.Console::WriteLine\n");
    ASSERT_CONTAINS(out, "IL_0000: nop\n");
    ASSERT_CONTAINS(out, "IL error: IL_0001: 0x24 is no instruction\n");
    ASSERT_CONTAINS(out, "IL: GetILFunctionBody failed: E_FAIL 0x80004005\n");
    ASSERT_CONTAINS(out, "(only 4 of the runtime's 70000 bytes recorded)\n");
    ASSERT_CONTAINS(out, "IL error: the body's bytes are not hex\n");
    free(out);
    out = print_out("--json", path);
    ASSERT_NE(out, NULL);
    int bodies = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char err[256];
        jv *v = json_parse(line, strlen(line), err, sizeof err);
        ASSERT_NE(v, NULL);
        const jv *il = json_get(v, "il");
        const char *fn = json_str(v, "functionId_name");
        if (il && fn && strcmp(fn, "A.B::Corrupt") == 0) {
            ASSERT_STREQ(json_str(il, "error"), "IL_0001: 0x24 is no instruction");
            ASSERT_STREQ(json_str(json_at(json_get(il, "instructions"), 0), "opcode"), "nop");
        }
        if (il && fn && strcmp(fn, "A.B::Sizes") == 0)
            ASSERT_STREQ(json_str(il, "sizeNote"), "the header gives 11 bytes, the runtime 12");
        bodies += il != NULL;
        json_free(v);
    }
    ASSERT_EQ(bodies, 5);
    free(out);
    unlink(path);
    return 0;
}
#endif

/* A prologue before a body (the agent's async probe, dnp_il_prepend): a fat
 * header whatever the original, the code after the prologue unchanged, every
 * clause moved by the prologue's length (a filter's offset too), max stack
 * raised, InitLocals and the locals' signature kept; a tiny body gets no
 * section. A body that does not parse, or too little room, is an error. */
TEST(il_prepend) {
    static const uint8_t pre[5] = {0x0f, 0x00, 0xe0, 0x26, 0x00}; /* ldarga.s 0; conv.u; pop; nop */
    uint8_t b[256], out[512];
    size_t n = fat_body(b);
    char err[256], text[1024];
    size_t m = dnp_il_prepend(b, n, pre, sizeof pre, 9, out, sizeof out, err, sizeof err);
    ASSERT_GT(m, 0);
    dnp_il_header h, h0;
    dnp_il_clause c[8], c0[8];
    ASSERT_EQ(parse(out, m, &h, c, 8, err), 0);
    ASSERT_EQ(parse(b, n, &h0, c0, 8, err), 0);
    ASSERT_EQ(h.fat, 1);
    ASSERT_EQ(h.body_size, m);
    ASSERT_EQ(h.code_size, h0.code_size + sizeof pre);
    ASSERT_EQ(h.max_stack, 9);
    ASSERT_EQ(h.local_sig, h0.local_sig);
    ASSERT_EQ(h.init_locals, 1);
    ASSERT_EQ(h.nclauses, h0.nclauses);
    for (size_t i = 0; i < h.nclauses; i++) {
        ASSERT_EQ(c[i].kind, c0[i].kind);
        ASSERT_EQ(c[i].try_offset, c0[i].try_offset + sizeof pre);
        ASSERT_EQ(c[i].try_length, c0[i].try_length);
        ASSERT_EQ(c[i].handler_offset, c0[i].handler_offset + sizeof pre);
        ASSERT_EQ(c[i].handler_length, c0[i].handler_length);
        ASSERT_EQ(c[i].extra, c0[i].kind == DNP_IL_FILTER ? c0[i].extra + sizeof pre : c0[i].extra);
        ASSERT_EQ(c[i].fat, 1);
    }
    ASSERT_EQ(listing(out + 12, (uint32_t)h.code_size, text, sizeof text, err), 0);
    ASSERT_STREQ(text, "IL_0000: ldarga.s   A_0\nIL_0002: conv.u\nIL_0003: pop\nIL_0004: nop\nIL_0005: nop\n"
                       "IL_0006: leave.s    IL_000a\nIL_0008: pop\nIL_0009: endfinally\nIL_000a: ret\n");
    /* a tiny body: fat, no section, its max stack 8 kept over a smaller minimum */
    static const uint8_t tiny[] = {0x02 | 2 << 2, 0x00, 0x2a}; /* nop; ret */
    m = dnp_il_prepend(tiny, sizeof tiny, pre, sizeof pre, 2, out, sizeof out, err, sizeof err);
    ASSERT_EQ(m, 12 + sizeof pre + 2);
    ASSERT_EQ(parse(out, m, &h, c, 8, err), 0);
    ASSERT_EQ(h.max_stack, 8);
    ASSERT_EQ(h.more_sects, 0);
    ASSERT_EQ(h.init_locals, 0);
    /* errors: a body cut short, no room */
    ASSERT_EQ(dnp_il_prepend(b, 10, pre, sizeof pre, 2, out, sizeof out, err, sizeof err), 0);
    ASSERT_EQ(dnp_il_prepend(b, n, pre, sizeof pre, 2, out, 20, err, sizeof err), 0);
    ASSERT_CONTAINS(err, "bytes");
    return 0;
}
