/* u64map.h: a hash map from a pair of 64-bit keys to a 64-bit value (open
 * addressing, linear probing, doubled at half full, deletion by backward shift).
 * The one map of the code base: the trace reader, the exporters and the agent's
 * name caches use it. Most users have one key: dnp_u64map_get/put/del use b = 0.
 *
 * Any key and any value are allowed. A zeroed struct is an empty map. Not thread-safe:
 * the caller locks (src/agent/names.c shards its maps, one lock each). */
#ifndef DNP_U64MAP_H
#define DNP_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dnp_u64map {
    uint64_t *ka, *kb;
    uint64_t *val;
    unsigned char *full; /* 1: the slot holds an entry */
    size_t cap;    /* a power of two, or 0 */
    size_t n;
} dnp_u64map;

/* The hash of a key: the map takes its low bits; a user sharding maps by key
 * takes the high ones. */
static inline uint64_t dnp_u64map_hash(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x7F4A7C15ull + (a << 6) + (a >> 2));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* 1 and the value in *out (out may be NULL) when (a, b) is there, else 0. */
int dnp_u64map_get2(const dnp_u64map *m, uint64_t a, uint64_t b, uint64_t *out);
/* Inserts or replaces; the value replaced in *old when old is not NULL (left
 * alone when there was none). 0, or -ENOMEM (the map is unchanged then). */
int dnp_u64map_put2(dnp_u64map *m, uint64_t a, uint64_t b, uint64_t v, uint64_t *old);
/* Removes (a, b): 1 and its value in *out (out may be NULL), or 0 if absent. */
int dnp_u64map_del2(dnp_u64map *m, uint64_t a, uint64_t b, uint64_t *out);

static inline int dnp_u64map_get(const dnp_u64map *m, uint64_t k, uint64_t *out) {
    return dnp_u64map_get2(m, k, 0, out);
}
static inline int dnp_u64map_put(dnp_u64map *m, uint64_t k, uint64_t v, uint64_t *old) {
    return dnp_u64map_put2(m, k, 0, v, old);
}
static inline int dnp_u64map_del(dnp_u64map *m, uint64_t k, uint64_t *out) {
    return dnp_u64map_del2(m, k, 0, out);
}

/* Empties the map, keeping its memory. */
void dnp_u64map_clear(dnp_u64map *m);
/* Frees the memory; the map is empty and usable again. */
void dnp_u64map_release(dnp_u64map *m);

#endif
