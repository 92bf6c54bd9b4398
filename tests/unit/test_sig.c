/* test_sig.c: ECMA-335 signature blobs (src/agent/sig.c) on hand-made blobs. */
#include "sig.h"
#include "test.h"

TEST(sig_compressed_integers) {
    static const uint8_t b[] = {0x03, 0x7F, 0x80, 0x80, 0xAE, 0x57, 0xC0, 0x00, 0x40, 0x00, 0xDF, 0xFF, 0xFF, 0xFF};
    const uint8_t *p = b, *end = b + sizeof b;
    uint32_t v;
    ASSERT_EQ(sig_uint(&p, end, &v), 0);
    ASSERT_EQ(v, 0x03);
    ASSERT_EQ(sig_uint(&p, end, &v), 0);
    ASSERT_EQ(v, 0x7F);
    ASSERT_EQ(sig_uint(&p, end, &v), 0);
    ASSERT_EQ(v, 0x80);
    ASSERT_EQ(sig_uint(&p, end, &v), 0);
    ASSERT_EQ(v, 0x2E57);
    ASSERT_EQ(sig_uint(&p, end, &v), 0);
    ASSERT_EQ(v, 0x4000);
    ASSERT_EQ(sig_uint(&p, end, &v), 0);
    ASSERT_EQ(v, 0x1FFFFFFF);
    ASSERT_EQ(p, end);
    ASSERT_EQ(sig_uint(&p, end, &v), -1);
    static const uint8_t cut[] = {0xC0, 0x00};
    p = cut;
    ASSERT_EQ(sig_uint(&p, cut + sizeof cut, &v), -1);
    return 0;
}

TEST(sig_tokens) {
    /* TypeDefOrRefEncoded: (row << 2) | table, 0 TypeDef, 1 TypeRef, 2 TypeSpec */
    static const uint8_t b[] = {0x08, 0x49, 0x0E, 0x03};
    const uint8_t *p = b, *end = b + sizeof b;
    uint32_t t;
    ASSERT_EQ(sig_token(&p, end, &t), 0);
    ASSERT_EQ(t, 0x02000002);
    ASSERT_EQ(sig_token(&p, end, &t), 0);
    ASSERT_EQ(t, 0x01000012);
    ASSERT_EQ(sig_token(&p, end, &t), 0);
    ASSERT_EQ(t, 0x1b000003);
    ASSERT_EQ(sig_token(&p, end, &t), -1);
    return 0;
}

TEST(sig_static_primitives) {
    /* static int F(sbyte, byte, short, ushort, int, uint, long, ulong, float, double, bool, char, nint, nuint, string, object) */
    static const uint8_t b[] = {0x00, 16, 0x08, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
                                0x0c, 0x0d, 0x02, 0x03, 0x18, 0x19, 0x0e, 0x1c};
    sig_method m;
    ASSERT_EQ(sig_parse_method(b, sizeof b, &m), 0);
    ASSERT(!m.hasthis);
    ASSERT_EQ(m.nparams, 16);
    ASSERT_EQ(m.ret.elem, SIG_I4);
    static const uint8_t want[] = {0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x02, 0x03, 0x18, 0x19, 0x0e, 0x1c};
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(m.params[i].elem, want[i]);
    ASSERT_STREQ(sig_primitive_name(m.params[4].elem), "int");
    ASSERT_STREQ(sig_primitive_name(m.params[14].elem), "string");
    return 0;
}

TEST(sig_instance_byref_arrays_classes) {
    /* instance void M(ref int, int[], Payload (class TypeDef 5), Two (valuetype TypeRef 3), string[,], int*) */
    static const uint8_t b[] = {0x20, 6, 0x01, 0x10, 0x08, 0x1d, 0x08, 0x12, 0x14, 0x11, 0x0d,
                                0x14, 0x0e, 0x02, 0x00, 0x00, 0x0f, 0x08};
    sig_method m;
    ASSERT_EQ(sig_parse_method(b, sizeof b, &m), 0);
    ASSERT(m.hasthis);
    ASSERT_EQ(m.ret.elem, SIG_VOID);
    ASSERT(m.params[0].byref);
    ASSERT_EQ(m.params[0].elem, SIG_I4);
    ASSERT_EQ(m.params[1].elem, SIG_SZARRAY);
    ASSERT_EQ(m.params[1].inner, SIG_I4);
    ASSERT_EQ(m.params[2].elem, SIG_CLASS);
    ASSERT_EQ(m.params[2].token, 0x02000005);
    ASSERT_EQ(m.params[3].elem, SIG_VALUETYPE);
    ASSERT_EQ(m.params[3].token, 0x01000003);
    ASSERT_EQ(m.params[4].elem, SIG_ARRAY);
    ASSERT_EQ(m.params[4].inner, SIG_STRING);
    ASSERT_EQ(m.params[4].number, 2);
    ASSERT_EQ(m.params[5].elem, SIG_PTR);
    ASSERT_EQ(m.params[5].inner, SIG_I4);
    return 0;
}

TEST(sig_generics_and_modifiers) {
    /* generic<1> !!0 M<T>(!!0, List<int> (GENERICINST CLASS TypeRef 1, 1 arg), !0, modreq(IsVolatile TypeRef 2) int) */
    static const uint8_t b[] = {0x10, 1, 4, 0x1e, 0x00, 0x1e, 0x00, 0x15, 0x12, 0x05, 0x01, 0x08,
                                0x13, 0x00, 0x1f, 0x09, 0x08};
    sig_method m;
    ASSERT_EQ(sig_parse_method(b, sizeof b, &m), 0);
    ASSERT_EQ(m.generic_params, 1);
    ASSERT_EQ(m.nparams, 4);
    ASSERT_EQ(m.ret.elem, SIG_MVAR);
    ASSERT_EQ(m.ret.number, 0);
    ASSERT_EQ(m.params[0].elem, SIG_MVAR);
    ASSERT_EQ(m.params[1].elem, SIG_CLASS);
    ASSERT(m.params[1].generic);
    ASSERT_EQ(m.params[1].token, 0x01000001);
    ASSERT_EQ(m.params[1].number, 1);
    ASSERT_EQ(m.params[2].elem, SIG_VAR);
    ASSERT_EQ(m.params[2].number, 0);
    ASSERT_EQ(m.params[3].elem, SIG_I4);
    return 0;
}

TEST(sig_bad_blobs) {
    sig_method m;
    static const uint8_t cut[] = {0x00, 2, 0x08, 0x08};          /* 2 params, 1 given */
    static const uint8_t unknown[] = {0x00, 1, 0x08, 0x7f};       /* no such element type */
    static const uint8_t deep[] = {0x00, 1, 0x08, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d,
                                   0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d,
                                   0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d,
                                   0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x08};
    ASSERT_EQ(sig_parse_method(cut, sizeof cut, &m), -1);
    ASSERT_EQ(sig_parse_method(unknown, sizeof unknown, &m), -1);
    ASSERT_EQ(sig_parse_method(deep, sizeof deep, &m), -1);
    ASSERT_EQ(sig_parse_method(cut, 0, &m), -1);
    return 0;
}
