/* lock_site.h: the waiting site of a lock wait's stack (lock_site.c). */
#ifndef DNP_LOCK_SITE_H
#define DNP_LOCK_SITE_H

#include <stddef.h>

/* The first frame of stack (one function a line, innermost first) outside the
 * framework's lock, wait and task-wait code (the last frame when all are in
 * it): a pointer into stack, its length in *len; NULL (and 0) for an empty or
 * NULL stack. */
const char *lock_site(const char *stack, size_t *len);

/* 1 when the wait of stack is one of the runtime's own housekeeping threads
 * waiting for its next turn (the timer thread, the thread pool's gate and
 * wait threads, the EventCounters poll): time no request of the program spent. */
int lock_runtime_thread(const char *stack);

#endif
