/* pb.h: the protobuf wire format, by hand: a writer (pprof.c, the OTLP
 * profiles of src/cli/otlp_encode.c) and a bounded reader (pprof_read.c).
 *
 * Only what those messages need: varints, length-delimited fields (strings,
 * bytes, messages, packed varints), fixed64. A writer's buffer grows as it
 * goes; once an allocation fails it stays failed and writes nothing more, so
 * that a caller checks once at the end. The reader never reads past its end:
 * a field that would is corrupt input. */
#ifndef DNP_PB_H
#define DNP_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct dnp_pb {
    uint8_t *p;
    size_t n, cap;
    int failed;
} dnp_pb;

enum { DNP_PB_VARINT = 0, DNP_PB_FIXED64 = 1, DNP_PB_LEN = 2, DNP_PB_FIXED32 = 5 };

void dnp_pb_bytes(dnp_pb *b, const void *p, size_t n);
void dnp_pb_varint(dnp_pb *b, uint64_t v);
void dnp_pb_key(dnp_pb *b, unsigned field, unsigned wire);
/* A varint field; zero is the default and left out. */
void dnp_pb_uint(dnp_pb *b, unsigned field, uint64_t v);
/* A fixed64 field; zero left out. */
void dnp_pb_fixed64(dnp_pb *b, unsigned field, uint64_t v);
/* A length-delimited field (written even when empty). */
void dnp_pb_len(dnp_pb *b, unsigned field, const void *p, size_t n);
/* A string field; "" (the default) left out. */
void dnp_pb_str(dnp_pb *b, unsigned field, const char *s);
/* m as a message field of b; m is emptied for reuse (its failure carried over). */
void dnp_pb_msg(dnp_pb *b, unsigned field, dnp_pb *m);

/* ---- tables of interned items ---- */

/* Items (strings, encoded messages) kept once each, by their bytes, and
 * numbered from 0 in the order they came: a profile's string table, OTLP's
 * dictionary tables. */
typedef struct dnp_intern {
    dnp_pb data; /* the items, one after another */
    size_t *at;  /* item i is data.p[at[i] .. at[i + 1]) */
    size_t n, cap;
    uint32_t *slots; /* hash -> item + 1 */
    size_t nslots;
    int failed;  /* out of memory: set once, for good */
} dnp_intern;

/* The index of the item p[0..n), added if new; 0 once out of memory. */
uint32_t dnp_intern_add(dnp_intern *t, const void *p, size_t n);
/* Item i (valid until the next add), its length in *n. */
const void *dnp_intern_item(const dnp_intern *t, size_t i, size_t *n);
void dnp_intern_free(dnp_intern *t);

/* ---- reading ---- */

typedef struct dnp_pb_in {
    const uint8_t *p, *end;
} dnp_pb_in;

typedef struct dnp_pb_field {
    unsigned field, wire;
    uint64_t v;         /* VARINT, FIXED64, FIXED32 */
    const uint8_t *p;   /* LEN: the bytes */
    size_t n;
} dnp_pb_field;

/* The next field of in: 1, 0 at the end, -1 when the input is corrupt. */
int dnp_pb_next(dnp_pb_in *in, dnp_pb_field *f);
/* The varints of a repeated field, packed (LEN) or one (VARINT): each into
 * fn(ctx, v), which returns 0 or -1 to stop. 0, or -1 (corrupt or stopped). */
int dnp_pb_each_varint(const dnp_pb_field *f, int (*fn)(void *ctx, uint64_t v), void *ctx);

#endif
