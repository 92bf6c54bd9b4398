/* control.c: the attached agent's control socket and the thread that serves it
 * (control.h). The thread is the agent's own, so ICorProfilerInfo calls made on
 * it count as synchronous (docs/design-notes.md#synchronous-calls: CORPROF_E_UNSUPPORTED_CALL_SEQUENCE), and
 * RequestProfilerDetach is made from it as the runtime asks. */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "eventpipe.h"
#include "attach_blob.h"
#include "control_line.h"
#include "heap.h"
#include "profiler.h"
#include "rejit.h"
#include "recorder.h"

#define MAX_CLIENTS 8
/* The runtime checks that every thread left the agent after this long (at
 * least 300 ms, ProfilingAPIDetach::SleepWhileProfilerEvacuates). */
#define DETACH_EXPECTED_MS 300

typedef struct client {
    int fd;
    dnp_ctl_buf in; /* what it sent, up to its next line end */
} client;

static struct {
    int running;
    pthread_t thread;
    int listen_fd;
    int wake[2];
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char final[256];
    client clients[MAX_CLIENTS];
    int detach_requested;
    int inert; /* the runtime refused the detach after a ReJIT: the thread ends, the library stays */
    uid_t outsider; /* how the host's users show here (outsider_uid), or -1 */
    char dir[256];  /* the control directory, removed at the end if it is empty and in a container */
    int own_dir;
} C = {.listen_fd = -1, .wake = {-1, -1}, .outsider = (uid_t)-1};

/* In a user namespace of its own (a container that maps its users), a peer
 * whose user the namespace does not map, as the host's root is not, shows as
 * the kernel's overflow uid: that one is let in too, since only the process's
 * own user and root can reach the socket in its private directory. -1 in the
 * initial namespace, where every user is itself. */
static uid_t outsider_uid(void) {
    unsigned long in = 1, out = 1, count = 0, overflow = 65534;
    FILE *f = fopen("/proc/self/uid_map", "re");
    int initial = !f || (fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3 && !in && !out && count == 4294967295ul);
    if (f)
        fclose(f);
    if (initial)
        return (uid_t)-1;
    if ((f = fopen("/proc/sys/kernel/overflowuid", "re")) != NULL) {
        if (fscanf(f, "%lu", &overflow) != 1)
            overflow = 65534;
        fclose(f);
    }
    return (uid_t)overflow;
}

static void say_to(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_to(int fd, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
}

static void client_close(client *c) {
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->in.len = 0;
}

/* After a ReJIT the runtime refuses every detach (it cannot tell that the
 * methods were reverted): the methods are back to their original code, the
 * trace is completed, the clients are told "detached <events> inert", and the
 * control thread ends; the library stays loaded, doing nothing. */
static void stay_inert(int fd, HRESULT hr) {
    if (AGENT_HAS_INFO(SetEventMask2))
        INFO_CALL(SetEventMask2, COR_PRF_ENABLE_REJIT, 0);
    else
        INFO_CALL(SetEventMask, COR_PRF_ENABLE_REJIT);
    const char *name = dnp_hresult_name((uint32_t)hr);
    rec_note(1, "RequestProfilerDetach: %s 0x%08x", name ? name : "refused", (unsigned)hr); /* dnprof says the rest */
    uint64_t events = recorder_events();
    attach_stay_inert();
    C.detach_requested = 1;
    C.inert = 1;
    snprintf(C.final, sizeof C.final, DNP_CONTROL_DETACHED " %llu inert", (unsigned long long)events);
    say_to(fd, "ok detaching");
    char b = 1;
    ssize_t w = write(C.wake[1], &b, 1);
    (void)w;
}

static void do_detach(int fd) {
    if (!g_agent.attached) {
        say_to(fd, "error the agent was loaded at start-up (dnprof run): it records until the "
                   "program exits");
        return;
    }
    if (C.detach_requested) {
        say_to(fd, "ok detaching");
        return;
    }
    if (!g_agent.info || !AGENT_HAS_INFO(RequestProfilerDetach)) {
        say_to(fd, "error this runtime cannot detach a profiler");
        return;
    }
    /* Everything recorded so far goes to the file now: a detach that the
     * runtime takes long to complete loses nothing. The sampler calls the
     * runtime: it stops first. */
    agent_stop_background(0); /* the last window, then the sampler (Shutdown may be doing it too) */
    ep_stop();
    rejit_finish(1); /* --trace: the methods reverted, what they counted written */
    recorder_flush_all();
    HRESULT hr = INFO_CALL(RequestProfilerDetach, DETACH_EXPECTED_MS);
    if (FAILED(hr) && rejit_enabled()) {
        stay_inert(fd, hr);
        return;
    }
    if (FAILED(hr)) {
        const char *name = dnp_hresult_name((uint32_t)hr);
        say_to(fd, "error the runtime refused to detach the agent: %s 0x%08x", name ? name : "error",
               (unsigned)hr);
        agent_say("the runtime refused to detach: %s 0x%08x; recording goes on",
                  name ? name : "error", (unsigned)hr);
        return;
    }
    C.detach_requested = 1;
    say_to(fd, "ok detaching");
}

static int do_line(void *ctx, dnp_ctl_cmd cmd, const char *arg, const char *line) {
    client *c = ctx;
    (void)line;
    if (cmd == DNP_CTL_DETACH)
        do_detach(c->fd);
    else if (cmd == DNP_CTL_STATUS)
        say_to(c->fd, "ok %s %llu %s", C.detach_requested ? "detaching" : "recording",
               (unsigned long long)recorder_events(), g_agent.config.output);
    else if (cmd == DNP_CTL_SNAPSHOT) {
        char reply[1024];
        if (C.detach_requested)
            snprintf(reply, sizeof reply, "error the agent is detaching; try again once it is gone");
        else
            heap_snapshot(arg, reply, sizeof reply);
        say_to(c->fd, "%s", reply);
    } else
        say_to(c->fd, "error unknown command (%s, %s or %s PATH)", DNP_CONTROL_DETACH,
               DNP_CONTROL_STATUS, DNP_CONTROL_SNAPSHOT);
    return c->fd < 0;
}

static void client_read(client *c) {
    ssize_t n = recv(c->fd, dnp_ctl_tail(&c->in), dnp_ctl_room(&c->in), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        client_close(c);
        return;
    }
    if (dnp_ctl_feed(&c->in, (size_t)n, do_line, c) < 0) { /* a line longer than any command */
        say_to(c->fd, "error line too long");
        client_close(c);
    }
}

static void client_accept(void) {
    int fd = accept4(C.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        (cred.uid != geteuid() && cred.uid != 0 && cred.uid != C.outsider)) {
        close(fd);
        return;
    }
    for (int i = 0; i < MAX_CLIENTS; i++) {
        if (C.clients[i].fd < 0) {
            C.clients[i].fd = fd;
            C.clients[i].in.len = 0;
            return;
        }
    }
    say_to(fd, "error too many clients");
    close(fd);
}

static void cleanup(void);

static void *control_main(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p[2 + MAX_CLIENTS];
        int idx[MAX_CLIENTS];
        int n = 0;
        p[n++] = (struct pollfd){C.wake[0], POLLIN, 0};
        p[n++] = (struct pollfd){C.listen_fd, POLLIN, 0};
        int nc = 0;
        for (int i = 0; i < MAX_CLIENTS; i++) {
            if (C.clients[i].fd >= 0) {
                idx[nc++] = i;
                p[n++] = (struct pollfd){C.clients[i].fd, POLLIN, 0};
            }
        }
        int r = poll(p, (nfds_t)n, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[0].revents)
            break;
        if (p[1].revents & POLLIN)
            client_accept();
        for (int k = 0; k < nc; k++)
            if (p[2 + k].revents)
                client_read(&C.clients[idx[k]]);
    }
    for (int i = 0; i < MAX_CLIENTS; i++) {
        if (C.clients[i].fd >= 0 && C.final[0])
            say_to(C.clients[i].fd, "%s", C.final);
        client_close(&C.clients[i]);
    }
    if (C.inert) { /* nobody joins this thread: it cleans up after itself */
        cleanup();
        C.running = 0;
        pthread_detach(pthread_self());
    }
    return NULL;
}

/* The directory must be ours and closed to everyone else. */
int control_dir_check(const char *dir) {
    struct stat st;
    if (lstat(dir, &st) != 0) {
        agent_say("control directory '%s': %s; the agent does not attach", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        agent_say("control directory '%s' is not a private directory of this user (mode 0700); "
                  "the agent does not attach",
                  dir);
        return -1;
    }
    return 0;
}

static void cleanup(void) {
    if (C.listen_fd >= 0)
        close(C.listen_fd);
    C.listen_fd = -1;
    for (int i = 0; i < 2; i++) {
        if (C.wake[i] >= 0)
            close(C.wake[i]);
        C.wake[i] = -1;
    }
    if (C.path[0])
        unlink(C.path);
    C.path[0] = 0;
    if (C.own_dir) /* attached from the host: nothing left in the container (not there if another agent uses it) */
        rmdir(C.dir);
    C.own_dir = 0;
}

static int start_at(const char *dir, const char *fmt) {
    if (C.running)
        return 0;
    C.detach_requested = 0;
    C.final[0] = 0;
    for (int i = 0; i < MAX_CLIENTS; i++)
        C.clients[i].fd = -1;
    if (control_dir_check(dir) < 0)
        return -1;
    C.outsider = outsider_uid();
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    int len = snprintf(addr.sun_path, sizeof addr.sun_path, fmt, dir, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof addr.sun_path) {
        agent_say("control directory '%s' is too long for a socket path; the agent does not attach",
                  dir);
        return -1;
    }
    unlink(addr.sun_path); /* an earlier agent's in this process, or a dead one's of this pid */
    C.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (C.listen_fd < 0 || bind(C.listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        agent_say("cannot create the control socket '%s': %s; the agent does not attach",
                  addr.sun_path, strerror(errno));
        cleanup();
        return -1;
    }
    memcpy(C.path, addr.sun_path, sizeof C.path);
    if (chmod(C.path, 0600) != 0 || listen(C.listen_fd, MAX_CLIENTS) != 0 ||
        pipe2(C.wake, O_CLOEXEC) != 0) {
        agent_say("cannot set up the control socket '%s': %s; the agent does not attach", C.path,
                  strerror(errno));
        cleanup();
        return -1;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&C.thread, NULL, control_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        agent_say("cannot start the control thread: %s; the agent does not attach", strerror(rc));
        cleanup();
        return -1;
    }
    pthread_setname_np(C.thread, "dnprof-control");
    C.running = 1;
    return 0;
}

int control_start(const char *dir) {
    int rc = start_at(dir, DNP_CONTROL_SOCKET_FMT);
    if (rc == 0 && g_agent.config.host_pid && snprintf(C.dir, sizeof C.dir, "%s", dir) < (int)sizeof C.dir)
        C.own_dir = 1;
    return rc;
}

int control_start_run(void) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/dnprof-%u", (unsigned)geteuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077))
        return -1; /* quietly: snapshots of this process are then refused by dnprof */
    return start_at(dir, DNP_CONTROL_RUN_SOCKET_FMT);
}

void control_stop(const char *final) {
    if (!C.running)
        return;
    snprintf(C.final, sizeof C.final, "%s", final ? final : "");
    char b = 1;
    ssize_t w = write(C.wake[1], &b, 1);
    (void)w;
    pthread_join(C.thread, NULL);
    C.running = 0;
    cleanup();
}
