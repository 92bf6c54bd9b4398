/* lock_site.h: the waiting site of a lock wait's stack (lock_site.c). */
#ifndef DNP_LOCK_SITE_H
#define DNP_LOCK_SITE_H

#include <stddef.h>

/* The first frame of stack (one function a line, innermost first) outside the
 * framework's lock, wait and task-wait code (the last frame when all are in
 * it): a pointer into stack, its length in *len; NULL (and 0) for an empty or
 * NULL stack. */
const char *lock_site(const char *stack, size_t *len);

/* The call into that code which the site made: the outermost of its frames
 * (SemaphoreSlim::Wait, Thread::Join, ReaderWriterLockSlim::EnterWriteLock),
 * what a wait "was on"; NULL (and 0) when the stack's first frame is already
 * outside it. */
const char *lock_api(const char *stack, size_t *len);

/* 1 when the wait of stack is one of the runtime's or the framework's own
 * service threads waiting for work: the timer thread, the thread pool's gate,
 * wait and idle worker threads, the sockets' event loop, the EventCounters
 * poll, a FileSystemWatcher, Kestrel's heartbeat, the console logger's queue
 * (its loop reached from the innermost frame with no frame of the program's
 * own code, and no work item the pool runs, on the way), and the main thread
 * waiting for the program to end (a host's Run, the compiler's entry point of
 * an async Main, or its GetAwaiter().GetResult() where a tail call took that
 * away): time no request of the program spent. */
int lock_runtime_thread(const char *stack);

/* System.Threading.Lock's slow path, which the probe of --locks times
 * (docs/waits.md), and the try without a wait, whose calls of it are left out. */
#define LOCK_SLOW_PATH "System.Threading.Lock::TryEnterSlow"
#define LOCK_TRY_ENTER "System.Threading.Lock::TryEnter"

/* The frame of the thread that polls EventCounters, one of them: the runtime
 * starts it when a session asks for counters (--threadpool's). */
#define LOCK_COUNTERS_POLL "System.Diagnostics.Tracing.CounterGroup::"

/* What a LockSite or LockWait of kind (DNP_LOCK_*) on stack is to the
 * reports, which all read them alike:
 *   LOCK_DROP   a try that failed at once (lock_try_at_once): no wait at all;
 *   LOCK_HOUSE  not the program's own, counted apart: a wait of one of the
 *               runtime's service threads (lock_runtime_thread); a contention
 *               with no managed frame at all (the runtime's own, on a thread
 *               that is starting, say: seen on a loaded machine, held by the
 *               thread that started it); any wait or contention of the thread
 *               that polls EventCounters, which runs because a session asked
 *               for counters (--threadpool's own: its contention on the
 *               timers' lock is dnprof's doing);
 *   LOCK_OWN    the program's. */
enum { LOCK_OWN, LOCK_DROP, LOCK_HOUSE };
int lock_classify(const char *stack, unsigned kind);

/* How the reports name them, where they count them apart. */
#define LOCK_RUNTIME_THREADS_TEXT                                                                                      \
    "the runtime's and the framework's own threads (waiting for work: timer, thread pool, sockets, counters; or with " \
    "no managed frame yet) "                                                                                          \
    "and the main thread waiting for the program to end (an async Main, a host's Run)"

#endif
