/* agg.h: striped aggregation tables, as the EventPipe consumers add their
 * events up (alloc_sampling.c's AllocSite, locks.c's LockSite).
 *
 * AGG_TABLES tables of AGG_SLOTS slots; a thread uses one table (threads share
 * a table when there are more of them than tables; its spin lock is held for
 * an add, not for a walk or a lookup). A key goes into one of AGG_PROBES slots
 * from the place its hash gives; when none is free or its own, the table is
 * written out first. A table is written out by the thread that finds it a
 * second old or `flush_at` adds full, and all of them by agg_flush_all.
 * Bounded: AGG_TABLES * AGG_SLOTS slots in all. No malloc. */
#ifndef DNP_AGG_H
#define DNP_AGG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define AGG_TABLES 64
#define AGG_SLOTS 256
#define AGG_PROBES 8
#define AGG_FLUSH_NS 1000000000ull
#define AGG_QUIET_NS 100000000ull /* agg_flush_stale: a table no thread has added to for this long */

typedef struct agg_table {
    atomic_flag lock;
    unsigned pending;
    uint64_t last_flush, last_add;
} agg_table;

/* A module's tables. Its slot type starts with a uint32_t `used` (nonzero: the
 * slot holds a key); slots is AGG_TABLES * AGG_SLOTS of them, table by table. */
typedef struct agg {
    void *slots;
    size_t slot_size;
    unsigned flush_at; /* adds that fill a table */
    int (*same)(const void *slot, const void *key);  /* the slot holds key */
    void (*add)(void *slot, const void *key);        /* key (and its values) into the slot */
    void (*write)(const void *slot);                 /* records a slot's sums */
    agg_table t[AGG_TABLES];
} agg;

/* Defines a module's tables `name` of slot type T, whose functions T##_same,
 * T##_add and T##_write (agg's same, add and write) the module defines. */
#define AGG_DEFINE(name, T, flush)                                               \
    static T name##_slots[AGG_TABLES * AGG_SLOTS];                               \
    static int T##_same(const void *slot, const void *key);                      \
    static void T##_add(void *slot, const void *key);                            \
    static void T##_write(const void *slot);                                     \
    static agg name = {.slots = name##_slots, .slot_size = sizeof(T), .flush_at = (flush), \
                       .same = T##_same, .add = T##_add, .write = T##_write}

/* Adds key, whose hash is h, into this thread's table. */
void agg_add(agg *g, uint64_t h, const void *key);

/* Writes out every table's sums. */
void agg_flush_all(agg *g);

/* Writes out the tables whose sums are a second old, or that no thread has
 * added to for AGG_QUIET_NS (their threads went quiet, and no add will write
 * them): called now and then from the trace writer's thread, so that a
 * process that dies without an exit (an unhandled exception, kill -9) loses
 * at most about a second of sums, and none of a burst long past. Returns how
 * many tables still hold sums (the writer must come back for them). */
unsigned agg_flush_stale(agg *g);

#endif
