/* heap_format.h: the heap snapshot file (.dnheap), written by the agent while
 * the GC walks the heap (src/agent/heap.c) and read by the front end
 * (src/export/heapload.c). Its records are listed once, in heap_format.def;
 * docs/heap.md describes the file in full.
 *
 *   file    header, then chunks until the end of the file
 *   header  "DNPHEAP1" u32 version u32 header_size u64 pid u64 start_real_ns  (32 bytes, LE)
 *   chunk   u32 magic "DNHC" u32 payload_size u32 crc32(payload), payload
 *   payload records, each a tag byte and varints (LEB128; Z: zigzag signed)
 *
 * Records never straddle chunks. A snapshot is complete when its last record
 * is END with status DNP_HEAP_COMPLETE; anything else (no END, a short or
 * corrupt chunk, END with another status) is an incomplete snapshot. */
#ifndef DNP_HEAP_FORMAT_H
#define DNP_HEAP_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_format.h"

#define DNP_HEAP_MAGIC "DNPHEAP1"
/* Version 4 grows the header to 40 bytes: a u64 at 32, the pid the host knows
 * the program by when it runs in a container (PID namespace) and the snapshot
 * was asked from the host, 0 otherwise; a reader takes the header's own size
 * (12: u32) from version 4 on, so a later version may grow it again. Version 3 adds the STATIC record (the objects static fields hold), which a
 * reader of version 2 would refuse as unknown. Version 2: in an OBJECT or MORE
 * record, the first reference is a zz delta from the object's address and each
 * next one from the reference before it (an array of objects allocated in
 * turn: a byte each). Version 1: each from the object's address. Readers take
 * all three. */
#define DNP_HEAP_VERSION 4
#define DNP_HEAP_VERSION_MIN 1
#define DNP_HEAP_HEADER_SIZE 40    /* version 4's; 32 before */
#define DNP_HEAP_HEADER_SIZE_V3 32
#define DNP_HEAP_HEADER_MAX 4096   /* a header a reader takes, at most */
#define DNP_HEAP_CHUNK_MAGIC 0x43484e44u /* "DNHC" */
#define DNP_HEAP_CHUNK_HEADER 12
#define DNP_HEAP_CHUNK_MAX (1u << 20) /* the agent's chunks; a reader accepts up to 64 MiB */

/* Record tags: DNP_HEAP_CLASS 'K', ... (heap_format.def). */
enum {
#define DNP_HF(KIND, name)
#define DNP_HEAP_REC(NAME, TAG, HEAD, ITEM, WHAT) DNP_HEAP_##NAME = TAG,
#include "heap_format.def"
#undef DNP_HEAP_REC
#undef DNP_HF
};

/* END status. */
enum {
    DNP_HEAP_COMPLETE = 0,
    DNP_HEAP_NO_GC = 1,       /* the forced GC did not walk the heap */
    DNP_HEAP_WRITE_FAILED = 2,
    DNP_HEAP_PARTIAL = 3,     /* the walk was cut short */
};

/* Root kinds (COR_PRF_GC_ROOT_KIND) and flags (COR_PRF_GC_ROOT_FLAGS). */
enum { DNP_ROOT_OTHER = 0, DNP_ROOT_STACK = 1, DNP_ROOT_FINALIZER = 2, DNP_ROOT_HANDLE = 3 };
/* Not runtime root kinds: a reader's names for an object of the non-GC heap,
 * and for one a static field holds (a STATIC record). */
#define DNP_ROOT_NONGC 4
#define DNP_ROOT_STATIC 5
enum { DNP_ROOT_PINNING = 1, DNP_ROOT_WEAK = 2, DNP_ROOT_INTERIOR = 4, DNP_ROOT_REFCOUNTED = 8 };

/* At most this many references in one OBJECT or MORE record. */
#define DNP_HEAP_REFS_PER_RECORD 4096
/* The largest record the agent writes but for names: tag + 5 varints + refs. */
#define DNP_HEAP_RECORD_MAX (64 + DNP_HEAP_REFS_PER_RECORD * 10)

/* ---- the records' encoders and decoders, from heap_format.def ----
 *
 * For each record NAME: a struct dnp_heap_NAME of its head fields (U: uint64_t,
 * Z: int64_t, S: const char *x and uint64_t x_len), and
 *   uint8_t *dnp_heap_put_NAME(uint8_t *p, head fields...)  tag and head
 *   int dnp_heap_get_NAME(const uint8_t **p, end, struct dnp_heap_NAME *)  the
 *       head after the tag byte: 0, or -1 when it runs past end
 * and for a record with items a struct dnp_heap_NAME_item with
 * dnp_heap_put_NAME_item and dnp_heap_get_NAME_item. S bytes are not copied:
 * a decoded S points into the buffer. Varints are the trace format's
 * (trace_format.h). */

static inline uint8_t *dnp_heap_put_zz(uint8_t *p, int64_t v) {
    return dnp_varint_put(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline int64_t dnp_heap_unzz(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *dnp_heap_put_str(uint8_t *p, const char *s, size_t len) {
    p = dnp_varint_put(p, len);
    memcpy(p, s, len);
    return p + len;
}

static inline int dnp_heap_get_zz(const uint8_t **p, const uint8_t *end, int64_t *out) {
    uint64_t v;
    if (dnp_varint_get(p, end, &v) < 0)
        return -1;
    *out = dnp_heap_unzz(v);
    return 0;
}

static inline int dnp_heap_get_str(const uint8_t **p, const uint8_t *end, const char **s,
                                   uint64_t *len) {
    if (dnp_varint_get(p, end, len) < 0 || (uint64_t)(end - *p) < *len)
        return -1;
    *s = (const char *)*p;
    *p += *len;
    return 0;
}

#define DNP_HK_FIELD_U(name) uint64_t name;
#define DNP_HK_FIELD_Z(name) int64_t name;
#define DNP_HK_FIELD_S(name) const char *name; uint64_t name##_len;
#define DNP_HK_PUT_U(name) p = dnp_varint_put(p, r->name);
#define DNP_HK_PUT_Z(name) p = dnp_heap_put_zz(p, r->name);
#define DNP_HK_PUT_S(name) p = dnp_heap_put_str(p, r->name, r->name##_len);
#define DNP_HK_GET_U(name) if (dnp_varint_get(p, end, &r->name) < 0) return -1;
#define DNP_HK_GET_Z(name) if (dnp_heap_get_zz(p, end, &r->name) < 0) return -1;
#define DNP_HK_GET_S(name) if (dnp_heap_get_str(p, end, &r->name, &r->name##_len) < 0) return -1;

/* The structs (a record without items has an item struct of no use: the
 * dummy member keeps it C). */
#define DNP_HF(KIND, name) DNP_HK_FIELD_##KIND(name)
#define DNP_HEAP_REC(NAME, TAG, HEAD, ITEM, WHAT)                                        \
    struct dnp_heap_##NAME { HEAD char unused_; };                                       \
    struct dnp_heap_##NAME##_item { ITEM char unused_; };
#include "heap_format.def"
#undef DNP_HEAP_REC
#undef DNP_HF

/* The encoders: p must have room (DNP_HEAP_RECORD_MAX, or the names' lengths). */
#define DNP_HF(KIND, name) DNP_HK_PUT_##KIND(name)
#define DNP_HEAP_REC(NAME, TAG, HEAD, ITEM, WHAT)                                        \
    static inline uint8_t *dnp_heap_put_##NAME(uint8_t *p, const struct dnp_heap_##NAME *r) { \
        *p++ = TAG;                                                                      \
        HEAD (void)r;                                                                    \
        return p;                                                                        \
    }                                                                                    \
    static inline uint8_t *dnp_heap_put_##NAME##_item(uint8_t *p,                        \
                                                      const struct dnp_heap_##NAME##_item *r) { \
        ITEM (void)r;                                                                    \
        return p;                                                                        \
    }
#include "heap_format.def"
#undef DNP_HEAP_REC
#undef DNP_HF

/* The decoders: 0, or -1 when the record runs past end. */
#define DNP_HF(KIND, name) DNP_HK_GET_##KIND(name)
#define DNP_HEAP_REC(NAME, TAG, HEAD, ITEM, WHAT)                                        \
    static inline int dnp_heap_get_##NAME(const uint8_t **p, const uint8_t *end,         \
                                          struct dnp_heap_##NAME *r) {                   \
        (void)p, (void)end, (void)r;                                                     \
        HEAD return 0;                                                                   \
    }                                                                                    \
    static inline int dnp_heap_get_##NAME##_item(const uint8_t **p, const uint8_t *end,  \
                                                 struct dnp_heap_##NAME##_item *r) {     \
        (void)p, (void)end, (void)r;                                                     \
        ITEM return 0;                                                                   \
    }
#include "heap_format.def"
#undef DNP_HEAP_REC
#undef DNP_HF

/* One row per record, for docs/heap.md's table (tests/unit keeps them equal):
 * the tag, the name, the head's and the items' fields ("U index, U class_id"). */
typedef struct dnp_heap_record_info {
    char tag;
    const char *name, *head, *item, *what;
} dnp_heap_record_info;
extern const dnp_heap_record_info dnp_heap_records[];
extern const unsigned dnp_heap_nrecords;

/* The root kind's name: "stack", "finalizer", "handle", "other". */
const char *dnp_heap_root_kind_name(unsigned kind);

#endif
