/* heap_format.h: the heap snapshot file (.dnheap), written by the agent while
 * the GC walks the heap (src/agent/heap.c) and read by the front end
 * (src/export/heapgraph.c). docs/heap.md describes it in full.
 *
 *   file    header, then chunks until the end of the file
 *   header  "DNPHEAP1" u32 version u32 header_size u64 pid u64 start_real_ns  (32 bytes, LE)
 *   chunk   u32 magic "DNHC" u32 payload_size u32 crc32(payload), payload
 *   payload records, each a tag byte and varints (LEB128; zz: zigzag signed)
 *
 * Records never straddle chunks. A snapshot is complete when its last record
 * is END with status DNP_HEAP_COMPLETE; anything else (no END, a short or
 * corrupt chunk, END with another status) is an incomplete snapshot. */
#ifndef DNP_HEAP_FORMAT_H
#define DNP_HEAP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define DNP_HEAP_MAGIC "DNPHEAP1"
/* Version 2: in an OBJECT or MORE record, the first reference is a zz delta
 * from the object's address and each next one from the reference before it
 * (an array of objects allocated in turn: a byte each). Version 1: each from
 * the object's address. Readers take both. */
#define DNP_HEAP_VERSION 2
#define DNP_HEAP_VERSION_MIN 1
#define DNP_HEAP_HEADER_SIZE 32
#define DNP_HEAP_CHUNK_MAGIC 0x43484e44u /* "DNHC" */
#define DNP_HEAP_CHUNK_HEADER 12
#define DNP_HEAP_CHUNK_MAX (1u << 20) /* the agent's chunks; a reader accepts up to 64 MiB */

/* Record tags. Addresses are zigzag deltas: an object's from the previous
 * object's, its references from the one before (the first of a record: from
 * the object's own address; version 1: all from the object's address). */
enum {
    DNP_HEAP_CLASS = 'K',  /* varint index, varint class_id: the first use of a class */
    DNP_HEAP_ROOTS = 'R',  /* varint n, n x (varint kind | flags << 3, zz addr from previous, varint root_id) */
    DNP_HEAP_DEPS = 'D',   /* varint n, n x (zz key from previous, zz value from key, varint handle) */
    DNP_HEAP_OBJECT = 'O', /* zz addr, varint class index, varint size, varint nrefs, varint n_here, n_here x zz ref
                              (from the previous ref of the record; the first from the object) */
    DNP_HEAP_MORE = 'M',   /* varint n, n x zz ref: more references of the last object */
    DNP_HEAP_NAME = 'N',   /* varint class index, varint len, bytes: a class's name (after the GC) */
    DNP_HEAP_FUNC = 'F',   /* varint function_id, varint len, bytes: a stack root's method */
    DNP_HEAP_SLOTS = 'P',  /* varint n, n x varint slot: the field each reference of the last
                              object is in (1-based in its class's LAYOUT; 0 unknown). An
                              object of a class with a layout and no SLOTS record has the
                              slots of the last object of its class that had as many
                              references */
    DNP_HEAP_LAYOUT = 'L', /* varint class index, varint n, n x (varint offset, varint len, bytes):
                              the reference-aligned fields of a class, by offset (after the GC) */
    DNP_HEAP_NONGC = 'G',  /* varint n, n x (varint start, varint length): the non-GC heap's
                              ranges (frozen objects, which live as long as the process) */
    DNP_HEAP_END = 'E',    /* varint status, varint objects, varint refs, varint roots, varint deps,
                              varint bytes, varint gc_ns, varint pause_ns, varint walk_ns,
                              varint len, bytes (a message, "" when complete) */
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
/* Not a runtime root kind: a reader's name for an object of the non-GC heap. */
#define DNP_ROOT_NONGC 4
enum { DNP_ROOT_PINNING = 1, DNP_ROOT_WEAK = 2, DNP_ROOT_INTERIOR = 4, DNP_ROOT_REFCOUNTED = 8 };

/* At most this many references in one OBJECT or MORE record. */
#define DNP_HEAP_REFS_PER_RECORD 4096
/* The largest record the agent writes but for names: tag + 5 varints + refs. */
#define DNP_HEAP_RECORD_MAX (64 + DNP_HEAP_REFS_PER_RECORD * 10)

static inline uint8_t *dnp_heap_put(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *dnp_heap_put_zz(uint8_t *p, int64_t v) {
    return dnp_heap_put(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Reads a varint at *p before end; 0, or -1 when it runs past end or is too long. */
static inline int dnp_heap_get(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline int64_t dnp_heap_unzz(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The root kind's name: "stack", "finalizer", "handle", "other". */
const char *dnp_heap_root_kind_name(unsigned kind);

#endif
