/* run_windows.c: dnprof run --every: a thread that follows the session
 * directory while the program runs, the windows into the sinks
 * (windows_cli.h), and a last pass when it has ended. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "run_windows.h"

static void *follow_main(void *arg) {
    run_windows *rw = arg;
    while (!atomic_load(&rw->stop)) {
        window_follow_pass(&rw->f, rw->dir);
        struct timespec t = {0, 200000000L};
        nanosleep(&t, NULL);
    }
    return NULL;
}

int run_windows_start(run_windows *rw, const char *dir) {
    rw->dir = dir;
    atomic_store(&rw->stop, 0);
    if (window_follow_open(&rw->f) != 0)
        return -1;
    if (pthread_create(&rw->thread, NULL, follow_main, rw) != 0) {
        window_follow_close(&rw->f);
        return error("cannot start the thread that follows the windows");
    }
    rw->running = 1;
    return 0;
}

void run_windows_finish(run_windows *rw) {
    if (!rw->running)
        return;
    atomic_store(&rw->stop, 1);
    pthread_join(rw->thread, NULL);
    rw->running = 0;
    rw->f.ended = 1;
    window_follow_pass(&rw->f, rw->dir); /* the last windows, written at the program's end */
    window_follow_close(&rw->f);
}
