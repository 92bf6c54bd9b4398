/* thread_mem.c: per-thread caches allocated on first use (thread_mem.h).
 *
 * Each block is on two lists: its thread's (the value of a pthread key, whose
 * destructor frees them as the thread exits) and every thread's (under a
 * mutex, for thread_mem_release at a detach). The destructor runs on the
 * exiting thread, so it may clear that thread's slots; release runs on
 * another, so it moves the epoch instead, and each slot sees its pointer stale. */
#include "thread_mem.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tm_block {
    struct tm_block *prev, *next; /* every thread's, under G.mu */
    struct tm_block *mine;        /* the next block of the same thread */
    thread_mem_slot *slot;        /* its thread's pointer to it */
    size_t size;
    alignas(16) unsigned char data[];
} tm_block;

static struct {
    pthread_mutex_t mu;
    pthread_key_t key;
    int key_ready;
    atomic_uint epoch;
    atomic_int in_exit; /* destructors under way: release waits for them */
    tm_block *all;
    unsigned long blocks, bytes;
} G = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void unlink_locked(tm_block *b) {
    if (b->prev)
        b->prev->next = b->next;
    else
        G.all = b->next;
    if (b->next)
        b->next->prev = b->prev;
    G.blocks--;
    G.bytes -= b->size;
}

/* The key's destructor, on the exiting thread: its blocks, newest first. */
static void thread_gone(void *v) {
    atomic_fetch_add(&G.in_exit, 1);
    pthread_mutex_lock(&G.mu);
    for (tm_block *b = v, *next; b; b = next) {
        next = b->mine;
        unlink_locked(b);
        b->slot->p = NULL; /* this thread's own variable */
        free(b);
    }
    pthread_mutex_unlock(&G.mu);
    atomic_fetch_sub(&G.in_exit, 1);
}

void *thread_mem(thread_mem_slot *s, size_t size, unsigned gen) {
    unsigned epoch = atomic_load_explicit(&G.epoch, memory_order_acquire);
    if (s->p && s->epoch == epoch) {
        if (s->gen != gen) { /* the slot is this thread's own: no other writes it */
            memset(s->p, 0, size);
            s->gen = gen;
        }
        return s->p;
    }
    tm_block *b = calloc(1, sizeof *b + size);
    if (!b)
        return NULL;
    b->slot = s;
    b->size = size;
    pthread_mutex_lock(&G.mu);
    if (!G.key_ready)
        G.key_ready = pthread_key_create(&G.key, thread_gone) == 0;
    if (!G.key_ready) {
        pthread_mutex_unlock(&G.mu);
        free(b);
        return NULL;
    }
    b->mine = pthread_getspecific(G.key);
    b->next = G.all;
    if (G.all)
        G.all->prev = b;
    G.all = b;
    G.blocks++;
    G.bytes += size;
    pthread_mutex_unlock(&G.mu);
    pthread_setspecific(G.key, b);
    s->p = b->data;
    s->epoch = epoch;
    s->gen = gen;
    return s->p;
}

void thread_mem_release(void) {
    pthread_mutex_lock(&G.mu);
    if (G.key_ready) {
        pthread_key_delete(G.key); /* no destructor starts from now on */
        G.key_ready = 0;
    }
    pthread_mutex_unlock(&G.mu);
    /* one that started before the delete finishes first (it takes G.mu) */
    for (int i = 0; i < 1000 && atomic_load(&G.in_exit) > 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&G.mu);
    atomic_fetch_add_explicit(&G.epoch, 1, memory_order_release);
    tm_block *b = G.all;
    G.all = NULL;
    G.blocks = G.bytes = 0;
    pthread_mutex_unlock(&G.mu);
    while (b) {
        tm_block *next = b->next;
        free(b);
        b = next;
    }
}

void thread_mem_totals(unsigned long *blocks, unsigned long *bytes) {
    pthread_mutex_lock(&G.mu);
    *blocks = G.blocks;
    *bytes = G.bytes;
    pthread_mutex_unlock(&G.mu);
}
