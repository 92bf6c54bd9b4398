/* bg_thread.h: starting the agent's background threads, and stopping one (the trace
 * writer in recorder.c, the windows' thread in windows.c), each of which waits
 * on a condition variable until its stop flag is set. */
#ifndef DNP_BG_THREAD_H
#define DNP_BG_THREAD_H

#include <pthread.h>
#include <signal.h>

/* Sets *stop under mu, wakes the thread waiting on cv, and joins it. */
static inline void bg_thread_stop(pthread_t thread, pthread_mutex_t *mu, pthread_cond_t *cv, int *stop) {
    pthread_mutex_lock(mu);
    *stop = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
    pthread_join(thread, NULL);
}

/* pthread_create with every signal blocked in the new thread: no handler of
 * the program's runs on it, and no signal meant for the program lands there. */
static inline int bg_thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

#endif
