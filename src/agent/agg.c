/* agg.c: striped aggregation tables (agg.h). */
#include "agg.h"

#include <string.h>

#include "recorder.h"

static atomic_uint g_next_table;
static __thread int t_table = -1; /* this thread's table, in every module's tables */

static void table_lock(agg_table *t) {
    while (atomic_flag_test_and_set_explicit(&t->lock, memory_order_acquire)) {
    }
}

static void table_unlock(agg_table *t) {
    atomic_flag_clear_explicit(&t->lock, memory_order_release);
}

static unsigned char *slot_at(const agg *g, unsigned table, unsigned i) {
    return (unsigned char *)g->slots + ((size_t)table * AGG_SLOTS + (i & (AGG_SLOTS - 1))) * g->slot_size;
}

static uint32_t slot_used(const unsigned char *s) {
    uint32_t used;
    memcpy(&used, s, sizeof used);
    return used;
}

/* Writes out a locked table's sums and empties it. */
static void table_flush(agg *g, unsigned table, uint64_t now) {
    agg_table *t = &g->t[table];
    for (unsigned i = 0; i < AGG_SLOTS; i++) {
        unsigned char *s = slot_at(g, table, i);
        if (!slot_used(s))
            continue;
        g->write(s);
        memset(s, 0, g->slot_size);
    }
    t->pending = 0;
    t->last_flush = now;
}

void agg_flush_all(agg *g) {
    uint64_t now = recorder_now();
    for (unsigned i = 0; i < AGG_TABLES; i++) {
        agg_table *t = &g->t[i];
        table_lock(t);
        if (t->pending)
            table_flush(g, i, now);
        table_unlock(t);
    }
}

unsigned agg_flush_stale(agg *g) {
    uint64_t now = recorder_now();
    unsigned left = 0;
    for (unsigned i = 0; i < AGG_TABLES; i++) {
        agg_table *t = &g->t[i];
        if (!__atomic_load_n(&t->pending, __ATOMIC_RELAXED)) /* a look without the lock: most are empty */
            continue;
        table_lock(t);
        if (t->pending && (now - t->last_flush >= AGG_FLUSH_NS || now - t->last_add >= AGG_QUIET_NS))
            table_flush(g, i, now);
        left += t->pending > 0;
        table_unlock(t);
    }
    return left;
}

void agg_add(agg *g, uint64_t h, const void *key) {
    if (t_table < 0)
        t_table = (int)(atomic_fetch_add(&g_next_table, 1) % AGG_TABLES);
    unsigned table = (unsigned)t_table;
    agg_table *t = &g->t[table];
    unsigned at = (unsigned)(h >> 32) & (AGG_SLOTS - 1);
    uint64_t now = recorder_now();
    table_lock(t);
    unsigned char *a = NULL;
    for (int round = 0; round < 2 && !a; round++) {
        for (unsigned p = 0; p < AGG_PROBES; p++) {
            unsigned char *c = slot_at(g, table, at + p);
            if (!slot_used(c) || g->same(c, key)) {
                a = c;
                break;
            }
        }
        if (!a)
            table_flush(g, table, now); /* no room near: out with all of it */
    }
    int first = 0;
    if (a) {
        g->add(a, key);
        first = t->pending++ == 0;
    }
    t->last_add = now;
    if (!t->last_flush)
        t->last_flush = now;
    if (t->pending >= g->flush_at || now - t->last_flush >= AGG_FLUSH_NS)
        table_flush(g, table, now);
    table_unlock(t);
    if (first)
        recorder_wake(); /* the writer's tick writes these sums once this thread goes quiet */
}
