/* bg_thread.h: stopping one of the agent's background threads (the trace
 * writer in recorder.c, the windows' thread in windows.c), each of which waits
 * on a condition variable until its stop flag is set. */
#ifndef DNP_BG_THREAD_H
#define DNP_BG_THREAD_H

#include <pthread.h>

/* Sets *stop under mu, wakes the thread waiting on cv, and joins it. */
static inline void bg_thread_stop(pthread_t thread, pthread_mutex_t *mu, pthread_cond_t *cv, int *stop) {
    pthread_mutex_lock(mu);
    *stop = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
    pthread_join(thread, NULL);
}

#endif
