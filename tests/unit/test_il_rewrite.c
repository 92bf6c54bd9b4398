/* test_il_rewrite.c: the IL rewrite of --trace (src/trace/il_rewrite.c) on
 * hand-made bodies: tiny and fat headers, branches widened, switch tables and
 * exception clauses moved, the probe's finally last, max stack raised, the
 * locals' signature extended, and what is refused. Each rewritten body is
 * parsed and disassembled again with il_body.c. */
#include <stdlib.h>
#include <string.h>

#include "il_body.h"
#include "il_rewrite.h"
#include "test.h"
#include "trace_format.h"

static const dnp_il_probe probe = {
    .method_id = 7,
    .enter_fn = 0x1122334455667788ull,
    .exit_fn = 0x99AABBCCDDEEFF00ull,
    .enter_sig = 0x11000005,
    .exit_sig = 0x11000006,
    .locals_sig = 0x11000009,
    .start_local = 0,
    .result_local = 1,
};

/* The body rewritten into a block of exactly its bound (ASan sees a byte too far). */
static long rewrite(const uint8_t *b, size_t n, const dnp_il_probe *p, uint8_t **out, char *err) {
    size_t cap = dnp_il_rewrite_bound(b, n);
    uint8_t *in = malloc(n);
    memcpy(in, b, n);
    *out = malloc(cap ? cap : 1);
    long rc = dnp_il_rewrite(in, n, p, *out, cap, err, 256);
    free(in);
    return rc;
}

/* rewrite(), then the new body parsed into h and its clauses into c[4]: its
 * size, or -1. */
static long rewrite_parsed(const uint8_t *b, size_t n, const dnp_il_probe *p, uint8_t **out, dnp_il_header *h,
                           dnp_il_clause c[4]) {
    char err[256];
    long size = rewrite(b, n, p, out, err);
    if (size <= 0 || dnp_il_parse(*out, (size_t)size, h, c, 4, err, sizeof err) != 0)
        return -1;
    return size;
}

/* The code of a body as text, one instruction a line. */
static int listing(const uint8_t *body, size_t n, char *out, size_t cap) {
    dnp_il_header h;
    if (dnp_il_parse(body, n, &h, NULL, 0, NULL, 0) < 0)
        return -1;
    dnp_il_insn in;
    size_t len = 0;
    int rc;
    out[0] = 0;
    for (uint32_t off = 0; (rc = dnp_il_decode(body + h.header_size, h.code_size, off, &in, NULL, 0)) > 0;
         off += in.size) {
        len += dnp_il_insn_text(&in, NULL, NULL, out + len, cap - len);
        len += (size_t)snprintf(out + len, cap - len, "\n");
    }
    return rc;
}

TEST(il_rewrite_tiny) {
    /* ldc.i4.1; ret: an int method with a tiny header */
    const uint8_t b[] = {(2 << 2) | 2, 0x17, 0x2A};
    uint8_t *out;
    char text[4096];
    dnp_il_header h;
    dnp_il_clause c[4];
    long n = rewrite_parsed(b, sizeof b, &probe, &out, &h, c);
    ASSERT_GT(n, 0);
    ASSERT_EQ(h.fat, 1);
    ASSERT_EQ(h.max_stack, 8); /* a tiny header's 8 */
    ASSERT_EQ(h.local_sig, 0x11000009);
    ASSERT_EQ(h.init_locals, 1);
    ASSERT_EQ(h.body_size, (uint32_t)n);
    ASSERT_EQ(h.nclauses, 1);
    ASSERT_EQ(c[0].kind, DNP_IL_FINALLY);
    ASSERT_EQ(c[0].fat, 1);
    ASSERT_EQ(c[0].try_offset, 22);      /* after ldc.i4, ldc.i8, conv.i, calli, stloc.s */
    ASSERT_EQ(c[0].try_length, 1 + 2 + 5); /* ldc.i4.1; stloc.s V_1; leave */
    ASSERT_EQ(c[0].handler_offset, 30);
    ASSERT_EQ(c[0].handler_length, 5 + 2 + 9 + 1 + 5 + 1);
    ASSERT_EQ(listing(out, (size_t)n, text, sizeof text), 0);
    ASSERT_STREQ(text, "IL_0000: ldc.i4     7\n"
                       "IL_0005: ldc.i8     1234605616436508552\n"
                       "IL_000e: conv.i\n"
                       "IL_000f: calli      0x11000005\n"
                       "IL_0014: stloc.s    V_0\n"
                       "IL_0016: ldc.i4.1\n"
                       "IL_0017: stloc.s    V_1\n"
                       "IL_0019: leave      IL_0035\n"
                       "IL_001e: ldc.i4     7\n"
                       "IL_0023: ldloc.s    V_0\n"
                       "IL_0025: ldc.i8     -7373874951294615808\n"
                       "IL_002e: conv.i\n"
                       "IL_002f: calli      0x11000006\n"
                       "IL_0034: endfinally\n"
                       "IL_0035: ldloc.s    V_1\n"
                       "IL_0037: ret\n");
    free(out);
    return 0;
}

TEST(il_rewrite_enter_args) {
    /* ldarg.0; ldfld; pop; ret: a void instance method; enter takes this's
     * field, the first argument and the 4 bytes at the second's address too */
    const uint8_t b[] = {(8 << 2) | 2, 0x02, 0x7B, 0x01, 0x00, 0x00, 0x04, 0x26, 0x2A};
    dnp_il_probe p = probe;
    p.result_local = DNP_IL_NO_LOCAL;
    const uint8_t args[] = {0x02, 0x7B, 0x02, 0x00, 0x00, 0x04, 0x03, 0x0F, 0x02, 0x4B};
    memcpy(p.enter_args, args, sizeof args);
    p.enter_args_len = sizeof args;
    p.enter_pushes = 3;
    uint8_t *out;
    char text[4096];
    dnp_il_header h;
    dnp_il_clause c[4];
    long n = rewrite_parsed(b, sizeof b, &p, &out, &h, c);
    ASSERT_GT(n, 0);
    ASSERT_EQ(h.nclauses, 1);
    ASSERT_EQ(c[0].try_offset, 32); /* after ldc.i4, the arguments' IL, ldc.i8, conv.i, calli, stloc.s */
    ASSERT_GE(h.max_stack, 5);       /* the id, three arguments, the address */
    ASSERT_EQ(listing(out, (size_t)n, text, sizeof text), 0);
    ASSERT_STREQ(text, "IL_0000: ldc.i4     7\n"
                       "IL_0005: ldarg.0\n"
                       "IL_0006: ldfld      0x04000002\n"
                       "IL_000b: ldarg.1\n"
                       "IL_000c: ldarga.s   A_2\n"
                       "IL_000e: ldind.u4\n"
                       "IL_000f: ldc.i8     1234605616436508552\n"
                       "IL_0018: conv.i\n"
                       "IL_0019: calli      0x11000005\n"
                       "IL_001e: stloc.s    V_0\n"
                       "IL_0020: ldarg.0\n"
                       "IL_0021: ldfld      0x04000001\n"
                       "IL_0026: pop\n"
                       "IL_0027: leave      IL_0043\n"
                       "IL_002c: ldc.i4     7\n"
                       "IL_0031: ldloc.s    V_0\n"
                       "IL_0033: ldc.i8     -7373874951294615808\n"
                       "IL_003c: conv.i\n"
                       "IL_003d: calli      0x11000006\n"
                       "IL_0042: endfinally\n"
                       "IL_0043: ret\n");
    free(out);
    return 0;
}

TEST(il_rewrite_void_branches_switch) {
    /* void, the start local at 300 (the long forms); a switch, a backward
     * short branch, two rets */
    const uint8_t b[] = {(18 << 2) | 2,
                         0x02,                                      /* IL_0000 ldarg.0 */
                         0x45, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, /* IL_0001 switch (IL_0010, IL_0011) */
                         0x2B, 0xF0,                                /* IL_000e br.s IL_0000 */
                         0x2A,                                      /* IL_0010 ret */
                         0x2A};                                     /* IL_0011 ret */
    dnp_il_probe p = probe;
    p.start_local = 300;
    p.result_local = DNP_IL_NO_LOCAL;
    uint8_t *out;
    char err[256], text[4096];
    long n = rewrite(b, sizeof b, &p, &out, err);
    ASSERT_GT(n, 0);
    ASSERT_EQ(listing(out, (size_t)n, text, sizeof text), 0);
    ASSERT_STREQ(text, "IL_0000: ldc.i4     7\n"
                       "IL_0005: ldc.i8     1234605616436508552\n"
                       "IL_000e: conv.i\n"
                       "IL_000f: calli      0x11000005\n"
                       "IL_0014: stloc      V_300\n"
                       "IL_0018: ldarg.0\n"
                       "IL_0019: switch     (IL_002b, IL_0030)\n"
                       "IL_0026: br         IL_0018\n"
                       "IL_002b: leave      IL_004e\n"
                       "IL_0030: leave      IL_004e\n"
                       "IL_0035: ldc.i4     7\n"
                       "IL_003a: ldloc      V_300\n"
                       "IL_003e: ldc.i8     -7373874951294615808\n"
                       "IL_0047: conv.i\n"
                       "IL_0048: calli      0x11000006\n"
                       "IL_004d: endfinally\n"
                       "IL_004e: ret\n");
    free(out);
    return 0;
}

TEST(il_rewrite_fat_clauses) {
    /* int M(): fat header, max stack 1, locals 0x11000002, one small clause:
     *   IL_0000 ldc.i4.0; IL_0001 stloc.0
     *   try { IL_0002 ldc.i4.1; IL_0003 stloc.0; IL_0004 leave.s IL_000a }
     *   finally { IL_0006 ldc.i4.2; IL_0007 stloc.0; IL_0008 endfinally; IL_0009 nop }
     *   IL_000a ldloc.0; IL_000b ret */
    const uint8_t b[] = {0x1B, 0x30, 1, 0, 12, 0, 0, 0, 0x02, 0, 0, 0x11, /* fat, more sects, init locals */
                         0x16, 0x0A, 0x17, 0x0A, 0xDE, 0x04, 0x18, 0x0A, 0xDC, 0x00, 0x06, 0x2A,
                         0x01, 0x10, 0, 0, /* small EH section, 1 clause */
                         0x02, 0, 0x02, 0, 0x04, 0x06, 0, 0x04, 0, 0, 0, 0};
    uint8_t *out;
    char err[256], text[4096];
    long n = rewrite(b, sizeof b, &probe, &out, err);
    ASSERT_GT(n, 0);
    dnp_il_header h;
    dnp_il_clause c[4];
    ASSERT_EQ(dnp_il_parse(out, (size_t)n, &h, c, 4, err, sizeof err), 0);
    ASSERT_EQ(h.max_stack, 3); /* raised for the handler's three */
    ASSERT_EQ(h.init_locals, 1);
    ASSERT_EQ(h.nclauses, 2);
    /* the original clause moved by the prologue's 22 bytes, widened leave.s: +3 after it */
    ASSERT_EQ(c[0].kind, DNP_IL_FINALLY);
    ASSERT_EQ(c[0].try_offset, 24);
    ASSERT_EQ(c[0].try_length, 2 + 5);
    ASSERT_EQ(c[0].handler_offset, 31);
    ASSERT_EQ(c[0].handler_length, 4);
    /* the probe's: the whole original code, last */
    ASSERT_EQ(c[1].kind, DNP_IL_FINALLY);
    ASSERT_EQ(c[1].try_offset, 22);
    ASSERT_EQ(c[1].try_offset + c[1].try_length, c[1].handler_offset);
    ASSERT_EQ(listing(out, (size_t)n, text, sizeof text), 0);
    ASSERT_CONTAINS(text, "IL_001a: leave      IL_0023\n");
    ASSERT_CONTAINS(text, "IL_0023: ldloc.0\nIL_0024: stloc.s    V_1\nIL_0026: leave      IL_0042\n");
    ASSERT_CONTAINS(text, "IL_0041: endfinally\nIL_0042: ldloc.s    V_1\nIL_0044: ret\n");
    free(out);
    return 0;
}

TEST(il_rewrite_refuses) {
    uint8_t *out;
    char err[256];
    const uint8_t jmp[] = {(6 << 2) | 2, 0x27, 1, 0, 0, 0x06, 0x2A};
    ASSERT_EQ(rewrite(jmp, sizeof jmp, &probe, &out, err), -1);
    ASSERT_CONTAINS(err, "jmp");
    free(out);
    const uint8_t mid[] = {(4 << 2) | 2, 0x2B, 0xFF, 0x00, 0x2A}; /* br.s into its own operand */
    ASSERT_EQ(rewrite(mid, sizeof mid, &probe, &out, err), -1);
    ASSERT_CONTAINS(err, "no instruction's start");
    free(out);
    const uint8_t bad[] = {(2 << 2) | 2, 0xA6, 0x2A}; /* no such opcode */
    ASSERT_EQ(rewrite(bad, sizeof bad, &probe, &out, err), -1);
    free(out);
    const uint8_t b[] = {(2 << 2) | 2, 0x17, 0x2A};
    uint8_t small[16];
    ASSERT_EQ(dnp_il_rewrite(b, sizeof b, &probe, small, sizeof small, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "bytes");
    return 0;
}

TEST(il_rewrite_tail_prefix_dropped) {
    /* tail. call 0x0A000001; ret -> the call stays, the prefix goes */
    const uint8_t b[] = {(8 << 2) | 2, 0xFE, 0x14, 0x28, 1, 0, 0, 0x0A, 0x2A};
    uint8_t *out;
    char err[256], text[4096];
    long n = rewrite(b, sizeof b, &probe, &out, err);
    ASSERT_GT(n, 0);
    ASSERT_EQ(listing(out, (size_t)n, text, sizeof text), 0);
    ASSERT_EQ(strstr(text, "tail."), NULL);
    ASSERT_CONTAINS(text, "IL_0016: call       0x0a000001\nIL_001b: stloc.s    V_1\n");
    free(out);
    return 0;
}

TEST(il_rewrite_locals_sig) {
    uint8_t out[64];
    uint32_t start, result;
    const uint8_t old[] = {0x07, 0x02, 0x08, 0x0E};
    const uint8_t str[] = {0x0E};
    ASSERT_EQ(dnp_il_locals_sig(old, sizeof old, str, 1, out, sizeof out, &start, &result), 6);
    ASSERT_EQ(memcmp(out, "\x07\x04\x08\x0E\x0A\x0E", 6), 0);
    ASSERT_EQ(start, 2);
    ASSERT_EQ(result, 3);
    ASSERT_EQ(dnp_il_locals_sig(NULL, 0, NULL, 0, out, sizeof out, &start, &result), 3);
    ASSERT_EQ(memcmp(out, "\x07\x01\x0A", 3), 0);
    ASSERT_EQ(start, 0);
    ASSERT_EQ(result, DNP_IL_NO_LOCAL);
    /* 127 locals: the count becomes two bytes */
    uint8_t many[2 + 127];
    many[0] = 0x07;
    many[1] = 127;
    memset(many + 2, 0x08, 127);
    uint8_t big[200];
    ASSERT_EQ(dnp_il_locals_sig(many, sizeof many, str, 1, big, sizeof big, &start, &result), 1 + 2 + 127 + 2);
    ASSERT_EQ(big[1], 0x80);
    ASSERT_EQ(big[2], 129);
    ASSERT_EQ(start, 127);
    const uint8_t field[] = {0x06, 0x08};
    ASSERT_EQ(dnp_il_locals_sig(field, sizeof field, NULL, 0, out, sizeof out, &start, &result), -1);
    return 0;
}

TEST(il_rewrite_return_type) {
    size_t off, len;
    int is_void;
    char err[256];
    const uint8_t inst[] = {0x20, 0x01, 0x0E, 0x08}; /* instance string M(int) */
    ASSERT_EQ(dnp_sig_return_type(inst, sizeof inst, &off, &len, &is_void, err, sizeof err), 0);
    ASSERT_EQ(off, 2);
    ASSERT_EQ(len, 1);
    ASSERT_EQ(is_void, 0);
    const uint8_t gen[] = {0x10, 0x01, 0x00, 0x1E, 0x00}; /* !!0 M<T>() */
    ASSERT_EQ(dnp_sig_return_type(gen, sizeof gen, &off, &len, &is_void, err, sizeof err), 0);
    ASSERT_EQ(off, 3);
    ASSERT_EQ(len, 2);
    const uint8_t list[] = {0x00, 0x00, 0x15, 0x12, 0x09, 0x01, 0x13, 0x00}; /* List<!0> M() */
    ASSERT_EQ(dnp_sig_return_type(list, sizeof list, &off, &len, &is_void, err, sizeof err), 0);
    ASSERT_EQ(len, 6);
    const uint8_t modreq[] = {0x00, 0x00, 0x1F, 0x42, 0x10, 0x08}; /* modreq(...) ref int M() */
    ASSERT_EQ(dnp_sig_return_type(modreq, sizeof modreq, &off, &len, &is_void, err, sizeof err), 0);
    ASSERT_EQ(off, 4);
    ASSERT_EQ(len, 2);
    const uint8_t v[] = {0x00, 0x01, 0x01, 0x08}; /* void M(int) */
    ASSERT_EQ(dnp_sig_return_type(v, sizeof v, &off, &len, &is_void, err, sizeof err), 0);
    ASSERT_EQ(is_void, 1);
    const uint8_t tr[] = {0x00, 0x00, 0x16};
    ASSERT_EQ(dnp_sig_return_type(tr, sizeof tr, &off, &len, &is_void, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "TypedReference");
    const uint8_t cut[] = {0x00, 0x00, 0x15, 0x12};
    ASSERT_EQ(dnp_sig_return_type(cut, sizeof cut, &off, &len, &is_void, err, sizeof err), -1);
    return 0;
}

/* The latency histogram of TracedCalls (trace_format.h): every ns value falls
 * in the bucket whose range holds it, buckets are in order, and the widest is
 * within 1/8 of its values. */
TEST(traced_latency_buckets) {
    uint64_t v[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 100, 1000, 123456, 999999999, 1ull << 40, UINT64_MAX};
    unsigned last = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned b = dnp_lat_bucket(v[i]);
        uint64_t lo, w;
        dnp_lat_range(b, &lo, &w);
        ASSERT_LT(b, DNP_LAT_BUCKETS);
        ASSERT_GE(b, last);
        last = b;
        ASSERT_LE(lo, v[i]);
        ASSERT_LE(v[i] - lo, w - 1);
        if (v[i] >= 8)
            ASSERT_LE(w * 8, lo);
    }
    ASSERT_EQ(dnp_lat_bucket(UINT64_MAX), DNP_LAT_BUCKETS - 1);
    return 0;
}
