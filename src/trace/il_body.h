/* il_body.h: a method's IL body (ECMA-335 II.25.4): its header, the exception
 * clauses of the data sections after its code, and the disassembly of its
 * code (Partition III, il_opcodes.def). Pure C over a byte buffer, shared by
 * the agent (which finds the tokens a body uses, to name them) and the front
 * end (which prints the body the trace holds; docs/il.md).
 *
 * Nothing here trusts the bytes: every read is checked against the buffer, so
 * a truncated or corrupt body is an error saying what is wrong and where,
 * never a read past the end. */
#ifndef DNP_IL_BODY_H
#define DNP_IL_BODY_H

#include <stddef.h>
#include <stdint.h>

/* What follows an opcode (il_opcodes.def says which is which): its name in
 * JSON, its size in bytes (SWITCH: the count; its table follows). */
#define DNP_IL_OPERANDS(X)                                                   \
    X(NONE, "none", 0)                                                       \
    X(I1, "int8", 1)                                                         \
    X(U1, "uint8", 1)                                                        \
    X(I4, "int32", 4)                                                        \
    X(I8, "int64", 8)                                                        \
    X(R4, "float32", 4)                                                      \
    X(R8, "float64", 8)                                                      \
    X(BR1, "target", 1)                                                      \
    X(BR4, "target", 4)                                                      \
    X(SWITCH, "switch", 4)                                                   \
    X(ARG1, "arg", 1)                                                        \
    X(ARG2, "arg", 2)                                                        \
    X(VAR1, "local", 1)                                                      \
    X(VAR2, "local", 2)                                                      \
    X(METHOD, "method", 4)                                                   \
    X(FIELD, "field", 4)                                                     \
    X(TYPE, "type", 4)                                                       \
    X(STRING, "string", 4)                                                   \
    X(SIG, "sig", 4)                                                         \
    X(TOK, "token", 4)

typedef enum dnp_il_operand {
#define X(id, word, size) DNP_ILO_##id,
    DNP_IL_OPERANDS(X)
#undef X
        DNP_ILO_COUNT
} dnp_il_operand;

extern const char *const dnp_il_operand_words[DNP_ILO_COUNT];

typedef struct dnp_il_opcode {
    const char *name; /* "ldc.i4.s" */
    uint16_t bytes;   /* 0x1F; 0xFE01 for ceq */
    uint8_t operand;  /* dnp_il_operand */
} dnp_il_opcode;

/* The instruction of a one-byte opcode (bytes < 0x100) or of 0xFE00 + the
 * second byte; NULL for a byte that is none. */
const dnp_il_opcode *dnp_il_opcode_of(unsigned bytes);
/* Every instruction, in il_opcodes.def's order (n: how many). */
const dnp_il_opcode *dnp_il_opcodes(size_t *n);

/* Exception clause kinds (the Flags of II.25.4.6). */
enum { DNP_IL_CATCH = 0, DNP_IL_FILTER = 1, DNP_IL_FINALLY = 2, DNP_IL_FAULT = 4 };

typedef struct dnp_il_clause {
    uint32_t kind; /* the clause's flags: DNP_IL_CATCH, ... */
    uint32_t try_offset, try_length, handler_offset, handler_length;
    uint32_t extra; /* catch: the class token; filter: the filter's offset */
    int fat;        /* from a fat section (24 bytes a clause), else small (12) */
} dnp_il_clause;

typedef struct dnp_il_header {
    int fat;                /* fat header (flags 0x3), else tiny (0x2) */
    uint32_t header_size;   /* 1 (tiny), or the fat header's dwords times 4 */
    uint32_t flags;         /* fat: the 12 flag bits; tiny: 0x2 */
    uint32_t max_stack;     /* tiny: 8 */
    uint32_t code_size;
    uint32_t local_sig;     /* LocalVarSigTok, 0: none (tiny) */
    int init_locals;        /* CorILMethod_InitLocals (0x10) */
    int more_sects;         /* CorILMethod_MoreSects (0x8): data sections follow the code */
    uint32_t body_size;     /* header, code and every section: the bytes the body takes */
    uint32_t sections;      /* data sections read */
    size_t nclauses;        /* exception clauses the sections hold, all of them */
} dnp_il_header;

/* Parses the body at b[0, n): its header and, with MoreSects, its sections
 * (4-aligned after the code). The first cap clauses go into clauses (may be
 * NULL with cap 0: h->nclauses still counts them all). Returns 0, or -1 with
 * one line in err (when the header itself was read, h holds it: a section
 * error still shows the header). */
int dnp_il_parse(const uint8_t *b, size_t n, dnp_il_header *h, dnp_il_clause *clauses, size_t cap, char *err,
                 size_t errlen);

/* A new body for the method whose body is b[0, n): pre (npre bytes of code)
 * runs first, then the original code, unchanged (branches are relative, so
 * they need nothing). Always a fat header (flags kept, max stack at least
 * min_stack), the exception clauses in one fat section with their offsets
 * moved by npre. Into out (cap bytes): the size, or 0 with one line in err (a
 * body that does not parse, more than 1024 clauses, or out too small). */
size_t dnp_il_prepend(const uint8_t *b, size_t n, const uint8_t *pre, uint32_t npre, uint32_t min_stack,
                      uint8_t *out, size_t cap, char *err, size_t errlen);

/* "catch", "filter", "finally", "fault", or NULL for other flags. */
const char *dnp_il_clause_word(uint32_t kind);

/* One instruction. */
typedef struct dnp_il_insn {
    uint32_t offset, size;     /* in the code; size with the operand (a switch's table too) */
    const dnp_il_opcode *op;
    int64_t i;                 /* I1, U1, I4, I8, ARG, VAR: the value; BR1, BR4: the absolute
                                  target (may lie outside the code); SWITCH: the count */
    double r;                  /* R4, R8 */
    uint32_t token;            /* METHOD ... TOK */
    const uint8_t *table;      /* SWITCH: its displacements (count int32, little-endian) */
} dnp_il_insn;

/* Decodes the instruction at code[off] of code[0, size). Returns 1, 0 at the
 * end of the code, or -1 with one line in err (an unknown opcode, an operand
 * cut short). */
int dnp_il_decode(const uint8_t *code, uint32_t size, uint32_t off, dnp_il_insn *in, char *err, size_t errlen);

/* The absolute target of entry k of a switch (k < in->i). */
int64_t dnp_il_switch_target(const dnp_il_insn *in, uint32_t k);

/* Whether the instruction's operand is a metadata token. */
int dnp_il_has_token(const dnp_il_insn *in);

/* A name for a token, or NULL (the text then shows the token in hex). */
typedef const char *(*dnp_il_namer)(void *ctx, uint32_t token, char *buf, size_t cap);

/* One instruction as text, "IL_0004: call       System.Console::WriteLine"
 * (the switch's targets in parentheses, a token's name from namer or its hex
 * value, a string's literal quoted as the namer gives it). Returns the length
 * written to out (truncated to cap). */
size_t dnp_il_insn_text(const dnp_il_insn *in, dnp_il_namer namer, void *ctx, char *out, size_t cap);

/* The tokens' names an ILBody event carries (docs/il.md): lines
 * "TTTTTTTT<tab>name", the token in 8 hex digits. The name of token into out
 * (NUL-terminated, cut to cap); NULL when the text does not have it. */
const char *dnp_il_token_name(const char *tokens, uint32_t token, char *out, size_t cap);

/* Bytes as lowercase hex (two digits a byte) and back: the BLOB field type
 * of the trace (docs/trace-format.md). dnp_hex_decode returns the bytes
 * written (at most cap), or -1 when text is not whole hex pairs. */
size_t dnp_hex_encode(const uint8_t *b, size_t n, char *out, size_t cap);
long dnp_hex_decode(const char *text, uint8_t *out, size_t cap);

#endif
