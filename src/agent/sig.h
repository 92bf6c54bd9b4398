/* sig.h: ECMA-335 signature blobs (II.23.2): method signatures and the types in
 * them, parsed without the runtime, so that it can be tested on hand-made blobs.
 * Used by --args (calls_args.c) to know what each argument register holds. */
#ifndef DNP_SIG_H
#define DNP_SIG_H

#include <stddef.h>
#include <stdint.h>

/* Element types (CorElementType) that signatures use. */
enum {
    SIG_END = 0x00, SIG_VOID = 0x01, SIG_BOOLEAN = 0x02, SIG_CHAR = 0x03, SIG_I1 = 0x04,
    SIG_U1 = 0x05, SIG_I2 = 0x06, SIG_U2 = 0x07, SIG_I4 = 0x08, SIG_U4 = 0x09, SIG_I8 = 0x0a,
    SIG_U8 = 0x0b, SIG_R4 = 0x0c, SIG_R8 = 0x0d, SIG_STRING = 0x0e, SIG_PTR = 0x0f,
    SIG_BYREF = 0x10, SIG_VALUETYPE = 0x11, SIG_CLASS = 0x12, SIG_VAR = 0x13, SIG_ARRAY = 0x14,
    SIG_GENERICINST = 0x15, SIG_TYPEDBYREF = 0x16, SIG_I = 0x18, SIG_U = 0x19, SIG_FNPTR = 0x1b,
    SIG_OBJECT = 0x1c, SIG_SZARRAY = 0x1d, SIG_MVAR = 0x1e, SIG_CMOD_REQD = 0x1f,
    SIG_CMOD_OPT = 0x20, SIG_SENTINEL = 0x41, SIG_PINNED = 0x45,
};

/* Calling convention bits of a method signature's first byte. */
#define SIG_CC_GENERIC 0x10
#define SIG_CC_HASTHIS 0x20
#define SIG_CC_EXPLICITTHIS 0x40

/* One type of a signature. elem is the element type after custom modifiers and
 * BYREF (byref says whether there was one); token the TypeDef/TypeRef/TypeSpec
 * of CLASS and VALUETYPE (for GENERICINST: of the generic type, and elem is
 * CLASS or VALUETYPE with generic set); number the index of VAR and MVAR;
 * inner the element type of SZARRAY, ARRAY and PTR. [start, end) are its bytes. */
typedef struct sig_type {
    uint8_t elem;
    uint8_t byref;
    uint8_t generic;
    uint8_t inner;
    uint32_t token;
    uint32_t number;
    const uint8_t *start, *end;
} sig_type;

#define SIG_MAX_PARAMS 64

typedef struct sig_method {
    uint8_t callconv;
    int hasthis;
    uint32_t generic_params;
    uint32_t nparams; /* all of them; types of the first SIG_MAX_PARAMS only */
    sig_type ret;
    sig_type params[SIG_MAX_PARAMS];
} sig_method;

/* A compressed unsigned integer (II.23.2). 0, or -1 if the blob ends or is bad. */
int sig_uint(const uint8_t **p, const uint8_t *end, uint32_t *out);

/* A TypeDefOrRefOrSpecEncoded as a token (0x02.. TypeDef, 0x01.. TypeRef,
 * 0x1b.. TypeSpec). 0 or -1. */
int sig_token(const uint8_t **p, const uint8_t *end, uint32_t *out);

/* Parses one type at *p and moves past it. 0 or -1. */
int sig_parse_type(const uint8_t **p, const uint8_t *end, sig_type *out);

/* Parses a MethodDefSig or MethodRefSig (before any SENTINEL). 0 or -1. */
int sig_parse_method(const uint8_t *blob, size_t len, sig_method *out);

/* The C# name of a primitive element type ("int", "string"), or NULL. */
const char *sig_primitive_name(uint8_t elem);

#endif
