/* stop_signal.c: the agent's part in a Ctrl-C (stop_signal.h).
 *
 * A .NET console program that does not cancel Ctrl-C dies by SIGINT: the
 * runtime's handlers (System.Native's, then the PAL's) put the signal's former
 * disposition back and send it again. SIGQUIT, SIGTERM (kill, docker stop)
 * and SIGHUP (the terminal or the ssh session closed) end it the same way,
 * unless a host (ASP.NET Core's) takes SIGTERM for a graceful stop, which
 * ends in Shutdown. Neither Shutdown nor an exit handler
 * runs, so what the agent held was lost: the sampler writes its trees at
 * intervals that grow with the run (a minute after an hour), the other
 * families their last 50 ms.
 *
 * The agent's handler, installed at start-up above the PAL's (System.Native,
 * which starts later, keeps it as the one to go back to), wakes a thread of
 * its own that writes everything as Shutdown would, waits for it at most
 * STOP_WAIT_MS, then hands the signal on as it found it. The program's exit
 * status is the same; a Ctrl-C the program cancels never reaches here. The
 * first signal starts the write, and any that comes before it ends waits
 * too; in a forked child, none waits. */
#include "stop_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "bg_thread.h"
#include "profiler.h"
#include "say.h"

#define STOP_WAIT_MS 2000 /* a flush that takes longer (a lock held by the signalled thread) is given up */

#define NSTOP 4
static const int stop_signals[NSTOP] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
static struct sigaction previous[NSTOP];
static int wake_fds[2] = {-1, -1}, done_fds[2] = {-1, -1};
static atomic_int fired; /* the first signal came: its byte wakes the writing thread */
static pid_t installed_pid;

static void *stopper_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "dnprof-stop"); /* named by itself: one prctl, where naming it from here opens /proc/self/task/TID/comm */
    unsigned char sig = 0;
    ssize_t n;
    while ((n = read(wake_fds[0], &sig, 1)) < 0 && errno == EINTR) {
    }
    if (n == 1)
        agent_finish_on_signal(sig);
    while (write(done_fds[1], "x", 1) < 0 && errno == EINTR) {
    }
    return NULL;
}

/* The signal goes on as it would have without the agent. */
static void hand_on(int sig, const struct sigaction *was, siginfo_t *info, void *uc) {
    if ((was->sa_flags & SA_SIGINFO) && was->sa_sigaction) {
        was->sa_sigaction(sig, info, uc);
    } else if (was->sa_handler == SIG_DFL) {
        sigaction(sig, was, NULL);
        raise(sig); /* blocked while this handler runs: taken as it returns */
    } else if (was->sa_handler != SIG_IGN) {
        was->sa_handler(sig);
    }
}

static void on_stop_signal(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    if (getpid() == installed_pid) {
        unsigned char c = (unsigned char)sig;
        int first = !atomic_exchange(&fired, 1);
        /* every signal that comes meanwhile (kill -TERM to the process group: dnprof run
         * passes it on too) waits for the same write, which the first byte ends */
        struct pollfd p = {done_fds[0], POLLIN, 0};
        if (!first || write(wake_fds[1], &c, 1) == 1)
            while (poll(&p, 1, STOP_WAIT_MS) < 0 && errno == EINTR) {
            }
    }
    int i = 0;
    while (i < NSTOP - 1 && stop_signals[i] != sig)
        i++;
    hand_on(sig, &previous[i], info, uc);
    errno = saved;
}

int stop_signal_install(void) {
    /* PID 1 (of a container's PID namespace): the kernel ignores a signal whose action is the
     * default there, so the runtime's handing on does not end the program, which lives on
     * (until SIGKILL) and is recorded on */
    if (installed_pid || getpid() == 1)
        return 0;
    if (pipe2(wake_fds, O_CLOEXEC) != 0 || pipe2(done_fds, O_CLOEXEC) != 0) {
        agent_say("cannot make the pipes that Ctrl-C's last write needs (%s): a program ended by SIGINT loses "
                  "what the agent held", strerror(errno));
        return -1;
    }
    pthread_t th;
    if (bg_thread_spawn(&th, stopper_main, NULL) != 0) {
        agent_say("cannot start the thread that Ctrl-C's last write needs: a program ended by SIGINT loses "
                  "what the agent held");
        return -1;
    }
    pthread_detach(th);
    installed_pid = getpid();
    for (int i = 0; i < NSTOP; i++) {
        struct sigaction now;
        memset(&now, 0, sizeof now);
        now.sa_sigaction = on_stop_signal;
        now.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&now.sa_mask);
        if (sigaction(stop_signals[i], &now, &previous[i]) == 0 && !(previous[i].sa_flags & SA_SIGINFO) &&
            previous[i].sa_handler == SIG_IGN)
            sigaction(stop_signals[i], &previous[i], NULL); /* ignored by the program: ignored still */
    }
    return 0;
}
