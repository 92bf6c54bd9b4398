/* run_windows.h: dnprof run --every's follower thread (run_windows.c). */
#ifndef DNP_RUN_WINDOWS_H
#define DNP_RUN_WINDOWS_H

#include <pthread.h>
#include <stdatomic.h>

#include "windows_cli.h"

typedef struct run_windows {
    window_follow f; /* filled in by the caller: sinks and options */
    const char *dir;
    pthread_t thread;
    atomic_int stop;
    int running;
} run_windows;

/* Opens the sinks and starts following dir; 0, or -1 after saying why. */
int run_windows_start(run_windows *rw, const char *dir);
/* Stops the thread, takes the last windows, prints the summary. */
void run_windows_finish(run_windows *rw);

#endif
