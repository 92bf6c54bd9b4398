/* trace_format.h: the dnprof trace file format, version 1 (docs/trace-format.md).
 *
 * A file is a 32-byte header followed by chunks. Each chunk is what one thread
 * (or the agent's own "meta" stream, thread 0) had buffered when it was flushed:
 *
 *   file header  "DNPTRACE" u16 major u16 minor u32 header_size u64 pid u64 flags
 *   chunk header u32 magic "DNPC"  u32 payload_size  u32 crc32(payload)
 *                u32 thread  u64 base_time_ns
 *   payload      records: u8 tag, varint body_size, body
 *
 * All integers in headers are little-endian; inside records every number is an
 * unsigned LEB128 varint. Unknown record tags are skipped by their size, so a
 * minor version may add records; a new major version is refused by old readers.
 * Strings are interned: a STRING record defines number -> UTF-8 bytes before any
 * chunk that refers to it is written (the meta stream is flushed first). */
#ifndef DNP_TRACE_FORMAT_H
#define DNP_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define DNP_TRACE_MAGIC "DNPTRACE"
#define DNP_TRACE_MAJOR 1
#define DNP_TRACE_MINOR 6
#define DNP_TRACE_HEADER_SIZE 32
#define DNP_CHUNK_MAGIC 0x43504E44u /* "DNPC" */
#define DNP_CHUNK_HEADER_SIZE 24
#define DNP_CHUNK_MAX_PAYLOAD (16u << 20)

/* Record tags. */
enum {
    DNP_REC_STRING = 1,  /* id, len, bytes */
    DNP_REC_THREAD = 2,  /* thread ordinal, os tid */
    DNP_REC_PROCESS = 3, /* pid, ppid, realtime ns, monotonic ns, STR cmdline, STR runtime description, attach */
    DNP_REC_EVENT = 4,   /* kind, time delta ns, field values */
    DNP_REC_NOTE = 5,    /* level, time delta ns, STR text: what the agent wants a reader to know */
    DNP_REC_LOST = 6,    /* count of events that could not be recorded */
    DNP_REC_END = 7      /* events recorded in all; the trace is complete */
};

/* Field types of events.def. Entity types take two values: ID, name string. */
#define DNP_FIELD_TYPES(X)                                                   \
    X(U, 1)                 /* unsigned number */                            \
    X(HEX, 1)               /* flags, shown in hex */                        \
    X(BYTES, 1)             /* a size in bytes */                            \
    X(BOOL, 1)                                                               \
    X(HR, 1)                /* HRESULT, as its 32 bits */                    \
    X(ADDR, 1)              /* an address or handle, hex */                  \
    X(TOKEN, 1)             /* a metadata token */                           \
    X(STR, 1)               /* a string number */                            \
    X(OBJECT, 1)            /* ObjectID */                                   \
    X(THREAD, 1)            /* managed ThreadID */                           \
    X(APPDOMAIN, 2)                                                          \
    X(ASSEMBLY, 2)                                                           \
    X(MODULE, 2)                                                             \
    X(CLASS, 2)                                                              \
    X(FUNCTION, 2)                                                           \
    X(GENS, 1)              /* bit n set: generation n collected */          \
    X(GC_REASON, 1)                                                          \
    X(SUSPEND_REASON, 1)                                                     \
    X(JIT_CACHE, 1)                                                          \
    X(TRANSITION_REASON, 1)                                                  \
    X(BLOB, 1)              /* bytes: a string number, the bytes in hex */

typedef enum dnp_field_type {
#define X(name, nvalues) DNP_FT_##name,
    DNP_FIELD_TYPES(X)
#undef X
        DNP_FT_COUNT
} dnp_field_type;

/* Event families: the words of --events and DNP_ENV_EVENTS (families.c). */
#define DNP_FAMILIES(X)                                                      \
    X(RUNTIME, "runtime")                                                    \
    X(APPDOMAINS, "appdomains")                                              \
    X(ASSEMBLIES, "assemblies")                                              \
    X(MODULES, "modules")                                                    \
    X(CLASSES, "classes")                                                    \
    X(FUNCTIONS, "functions")                                                \
    X(JIT, "jit")                                                            \
    X(CACHE, "cache")                                                        \
    X(THREADS, "threads")                                                    \
    X(REMOTING, "remoting")                                                  \
    X(TRANSITIONS, "transitions")                                            \
    X(SUSPENDS, "suspends")                                                  \
    X(GC, "gc")                                                              \
    X(ALLOC, "alloc")                                                        \
    X(EXCEPTIONS, "exceptions")                                              \
    X(CCW, "ccw")                                                            \
    X(CALLS, "calls") /* method enter/leave: set by --calls, not by a mask bit */

typedef enum dnp_family {
#define X(id, word) DNP_FAM_##id,
    DNP_FAMILIES(X)
#undef X
        DNP_FAM_COUNT
} dnp_family;

typedef enum dnp_nest { DNP_NEST_NONE, DNP_NEST_START, DNP_NEST_FINISH, DNP_NEST_TRANSITION } dnp_nest;

typedef enum dnp_event_kind {
#define DNP_F(type, name)
#define DNP_EVENT(name, family, nest, fields) DNP_EV_##name,
#include "events.def"
#undef DNP_EVENT
#undef DNP_F
    DNP_EV_COUNT
} dnp_event_kind;

/* Values on the wire per field type, and per event, as compile-time constants:
 * DNP_NV_ClassLoadFinished == 3 (the class ID, its name, the status). */
enum {
#define X(name, nvalues) DNP_FTV_##name = nvalues,
    DNP_FIELD_TYPES(X)
#undef X
};
enum {
#define DNP_F(type, name) +DNP_FTV_##type
#define DNP_EVENT(name, family, nest, fields) DNP_NV_##name = 0 fields,
#include "events.def"
#undef DNP_EVENT
#undef DNP_F
};

#define DNP_MAX_FIELDS 8

/* LockSite's and LockWait's kind (events.def): contention for a lock, or (with
 * --locks=waits) a wait for something else to happen. */
enum { DNP_LOCK_MONITOR, DNP_LOCK_LOCK, DNP_LOCK_WAIT_HANDLE, DNP_LOCK_MONITOR_WAIT, DNP_LOCK_NKINDS };
#define DNP_LOCK_IS_WAIT(kind) ((kind) >= DNP_LOCK_WAIT_HANDLE)
/* TracedMethod's state, this bit set: traced for --locks (System.Threading.Lock's
 * slow path), not asked for by --trace. */
#define DNP_TRACED_FOR_LOCKS 0x100u
#define DNP_MAX_VALUES 10

/* A FIELDS argument of events.def is a sequence "DNP_F(T, a) DNP_F(U, b)". With
 * DNP_F(t, n) defined as "(t, n)" it becomes "(T, a)(U, b)", which a walker
 * turns into one list (Boost.PP's sequence trick): walker_A consumes one
 * "(t, n)" and leaves walker_B to consume the next; the walker left at the end
 * is pasted with _END, which expands to nothing. */
#define DNP__SEQ(walker, seq) DNP__SEQ_(walker##_A seq)
#define DNP__SEQ_(...) DNP__SEQ_END(__VA_ARGS__)
#define DNP__SEQ_END(...) __VA_ARGS__##_END

/* ---- fields by name ----
 *
 * DNP_V(Event, field) is the index in dnp_trace_event.v of the field's value
 * (of its ID, for an entity field); DNP_VNAME(Event, field) that of an entity
 * field's name string, and does not compile for any other field. So a field
 * moved in events.def moves every reader with it, and one renamed or removed
 * breaks the build. Generated as one enum per event:
 *   DNP_V_<Event>_<field>     the field's first value
 *   DNP_VL_<Event>_<field>    its last (the same, but for entities)
 * (the sequence is turned into a comma list "(T, a), (U, b), " and walked with
 * the event's name by a counted DNP__E<n>, at most DNP_MAX_FIELDS fields). */
#define DNP_V(ev, field) ((int)DNP_V_##ev##_##field)
#define DNP_VNAME(ev, field)                                                 \
    ((int)DNP_V_##ev##_##field + 1 + 0 * (int)sizeof(char[DNP_VL_##ev##_##field - DNP_V_##ev##_##field == 1 ? 1 : -1]))

#define DNP__CL_A(t, n) (t, n), DNP__CL_B
#define DNP__CL_B(t, n) (t, n), DNP__CL_A
#define DNP__CL_A_END
#define DNP__CL_B_END
#define DNP__CAT(a, b) DNP__CAT_(a, b)
#define DNP__CAT_(a, b) a##b
#define DNP__NARG(...) DNP__NARG_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define DNP__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, N, ...) N
#define DNP__EACH(ev, list) DNP__EACH_(ev, list)
#define DNP__EACH_(ev, ...) DNP__CAT(DNP__E, DNP__NARG(__VA_ARGS__))(ev, __VA_ARGS__)
#define DNP__E1(ev, ...)
#define DNP__E2(ev, p, ...) DNP__VITEM(ev, p) DNP__E1(ev, __VA_ARGS__)
#define DNP__E3(ev, p, ...) DNP__VITEM(ev, p) DNP__E2(ev, __VA_ARGS__)
#define DNP__E4(ev, p, ...) DNP__VITEM(ev, p) DNP__E3(ev, __VA_ARGS__)
#define DNP__E5(ev, p, ...) DNP__VITEM(ev, p) DNP__E4(ev, __VA_ARGS__)
#define DNP__E6(ev, p, ...) DNP__VITEM(ev, p) DNP__E5(ev, __VA_ARGS__)
#define DNP__E7(ev, p, ...) DNP__VITEM(ev, p) DNP__E6(ev, __VA_ARGS__)
#define DNP__E8(ev, p, ...) DNP__VITEM(ev, p) DNP__E7(ev, __VA_ARGS__)
#define DNP__E9(ev, p, ...) DNP__VITEM(ev, p) DNP__E8(ev, __VA_ARGS__)
#define DNP__TN(t, n) t, n
#define DNP__VITEM(ev, p) DNP__VITEM_(ev, DNP__TN p)
#define DNP__VITEM_(ev, ...) DNP__VITEM__(ev, __VA_ARGS__)
#define DNP__VITEM__(ev, t, n) DNP_V_##ev##_##n, DNP_VL_##ev##_##n = DNP_V_##ev##_##n + DNP_FTV_##t - 1,

#define DNP_F(type, name) (type, name)
#define DNP_EVENT(name, family, nest, fields)                                \
    enum { DNP__EACH(name, DNP__SEQ(DNP__CL, fields)) DNP_VN_##name };
#include "events.def"
#undef DNP_EVENT
#undef DNP_F

typedef struct dnp_event_info {
    const char *name;
    dnp_family family;
    dnp_nest nest;
    uint8_t nfields;
    uint8_t nvalues; /* values on the wire, entity fields counting two */
    uint8_t field_types[DNP_MAX_FIELDS];
    const char *field_names[DNP_MAX_FIELDS];
} dnp_event_info;

extern const dnp_event_info dnp_events[DNP_EV_COUNT];
extern const uint8_t dnp_field_nvalues[DNP_FT_COUNT];
extern const char *const dnp_field_type_names[DNP_FT_COUNT];
extern const char *const dnp_family_words[DNP_FAM_COUNT];

/* ---- varints (LEB128, at most 10 bytes for 64 bits) ---- */
#define DNP_VARINT_MAX 10

static inline uint8_t *dnp_varint_put(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads one varint from [*p, end). Returns 0, or -1 when it is cut short or too long. */
static inline int dnp_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    unsigned shift = 0;
    const uint8_t *q = *p;
    while (q < end && shift < 64) {
        uint8_t b = *q++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

static inline void dnp_put_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void dnp_put_u64le(uint8_t *p, uint64_t v) {
    dnp_put_u32le(p, (uint32_t)v);
    dnp_put_u32le(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t dnp_get_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t dnp_get_u64le(const uint8_t *p) {
    return (uint64_t)dnp_get_u32le(p) | (uint64_t)dnp_get_u32le(p + 4) << 32;
}

uint32_t dnp_crc32(const void *data, size_t len);

/* Display names of the enumerations the runtime passes (NULL when unknown). */
const char *dnp_gc_reason_name(uint64_t v);
const char *dnp_suspend_reason_name(uint64_t v);
const char *dnp_jit_cache_name(uint64_t v);
const char *dnp_transition_reason_name(uint64_t v);
/* The symbolic name of an HRESULT dnprof knows (S_OK, E_FAIL, CORPROF_E_...), or NULL. */
const char *dnp_hresult_name(uint32_t hr);

/* The latency histogram of TracedCalls (events.def, docs/trace-format.md):
 * below 8 ns a bucket a ns, then 8 buckets per power of two. The agent files
 * each call into dnp_lat_bucket(ns); a reader takes bucket b back as the
 * range [lo, lo + width). */
#define DNP_LAT_BUCKETS 496
static inline unsigned dnp_lat_bucket(uint64_t ns) {
    if (ns < 8)
        return (unsigned)ns;
    unsigned e = 63u - (unsigned)__builtin_clzll(ns);
    return 8 * (e - 2) + (unsigned)((ns >> (e - 3)) & 7);
}
static inline void dnp_lat_range(unsigned b, uint64_t *lo, uint64_t *width) {
    if (b < 8) {
        *lo = b;
        *width = 1;
        return;
    }
    unsigned e = b / 8 + 2, sub = b % 8;
    *lo = (uint64_t)(8 + sub) << (e - 3);
    *width = (uint64_t)1 << (e - 3);
}

#endif
