/* thread_mem.h: the agent's larger per-thread caches, allocated on a thread's
 * first use of each and freed when the thread exits.
 *
 * Why not __thread arrays: the runtime loads the agent with dlopen, so glibc
 * keeps the agent's thread-local block apart (dynamic TLS) and allocates it
 * whole, and zeroes it, on a thread's first touch of any of its variables. With
 * the caches in it, that was 88 KB on every thread that ever entered the agent
 * (a ThreadCreated callback is enough): in a 256-thread program 1,050 page
 * faults more than now (BENCHMARKS.md, "The agent's thread-local block"). Now
 * the block holds pointers, and a thread pays for a cache when it uses it.
 *
 * Not for signal handlers: the first call allocates. */
#ifndef DNP_THREAD_MEM_H
#define DNP_THREAD_MEM_H

#include <stddef.h>

/* A module's pointer to its cache on one thread: a __thread variable, zero at
 * first. Valid while its epoch is thread_mem's (thread_mem_release moves it). */
typedef struct thread_mem_slot {
    void *p;
    unsigned epoch;
    unsigned gen; /* the caller's generation the block's contents belong to */
} thread_mem_slot;

/* This thread's block of size bytes for the __thread slot s, zeroed when new
 * and when gen is not the one it was last asked with (a module's caches go
 * stale as a whole: a new trace, a new session; 0 for caches that never do);
 * NULL when it cannot be allocated (the caller goes without its cache). */
void *thread_mem(thread_mem_slot *s, size_t size, unsigned gen);

/* Frees every thread's blocks (the agent's release, when no callback runs:
 * ProfilerDetachSucceeded); slots seen after it allocate again. */
void thread_mem_release(void);

/* Blocks allocated and bytes held now, for notes and tests. */
void thread_mem_totals(unsigned long *blocks, unsigned long *bytes);

#endif
