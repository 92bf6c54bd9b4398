/* windows.c: continuous profiling's windows (windows.h, docs/production.md).
 *
 * The current window is two buffers of encoded records, its events and the
 * STRING records of the strings they name (numbered for the window alone),
 * guarded by one mutex that modules take for the time of one event. The window
 * thread sleeps to each window's end, calls the flush functions, takes the
 * buffers, writes them as window-PID-NNNNNN.trace (written under a .tmp name and
 * renamed: a reader never sees half a window) and keeps the directory bounded. */
#include "windows.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bg_thread.h"
#include "recorder.h"
#include "say.h"
#include "trace_writer.h"
#include "u64map.h"

unsigned char window_taps[DNP_EV_COUNT];

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static struct {
    pthread_mutex_t mu; /* the current window: */
    atomic_int on;
    wbuf ev, str;
    dnp_u64map ids; /* the main trace's string number -> the window's */
    uint32_t next_id;
    uint64_t nevents, lost;

    window_flush_fn hooks[WINDOW_MAX_HOOKS];
    atomic_int nhooks;

    pthread_t thread;
    int running;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv; /* on CLOCK_MONOTONIC */
    int stop;

    uint64_t every_ns;
    unsigned keep;
    char dir[4096];
    char cmdline[4096], runtime[256];
    int attached;
    unsigned host_pid; /* the PROCESS record's (agent_config.host_pid) */
    uint64_t index;                  /* of the current window, from 1 */
    uint64_t start_mono, start_real; /* its start */
    uint64_t dropped, written, failed;
    uint64_t *waiting; /* indexes written that may still be there, oldest first */
    size_t nwaiting, capwaiting;
    int said_write;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .stop_mu = PTHREAD_MUTEX_INITIALIZER};

void window_register_flush(window_flush_fn fn) {
    int n = atomic_load(&W.nhooks);
    for (int i = 0; i < n; i++)
        if (W.hooks[i] == fn)
            return;
    if (n < WINDOW_MAX_HOOKS) {
        W.hooks[n] = fn;
        atomic_store(&W.nhooks, n + 1);
    }
}

void window_register_event(dnp_event_kind kind) {
    if ((unsigned)kind < DNP_EV_COUNT)
        __atomic_store_n(&window_taps[kind], 1, __ATOMIC_RELAXED);
}

/* ---- the current window ---- */

static int wbuf_room(wbuf *b, size_t more) {
    if (b->n + more <= b->cap)
        return 0;
    if (b->n + more > WINDOW_MAX_BYTES)
        return -1;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

typedef struct str_copy {
    uint32_t id;
    int ok;
} str_copy;

/* rec_string_text's callback: the string's STRING record in the window. */
static void put_string(void *ctx, const char *s, size_t len) {
    str_copy *c = ctx;
    if (wbuf_room(&W.str, DNP_REC_MAX + len) < 0)
        return;
    uint64_t v[2] = {c->id, len};
    W.str.n += dnp_rec_encode(W.str.p + W.str.n, DNP_REC_STRING, v, 2, s, len);
    c->ok = 1;
}

/* The window's number for the main trace's string id; W.mu held. 0 when it
 * cannot be had (no room, unknown). */
static uint64_t window_string(uint64_t id) {
    uint64_t local;
    if (!id)
        return 0;
    if (dnp_u64map_get(&W.ids, id, &local))
        return local;
    str_copy c = {W.next_id + 1, 0};
    if (rec_string_text((uint32_t)id, put_string, &c) < 0 || !c.ok)
        return 0;
    if (dnp_u64map_put(&W.ids, id, c.id, NULL) < 0)
        return 0; /* defined, never used again: harmless */
    W.next_id = c.id;
    return c.id;
}

void window_event(dnp_event_kind kind, const uint64_t *vals, unsigned n) {
    if (!atomic_load_explicit(&W.on, memory_order_relaxed) || (unsigned)kind >= DNP_EV_COUNT)
        return;
    const dnp_event_info *info = &dnp_events[kind];
    uint64_t v[2 + DNP_MAX_VALUES];
    if (n > DNP_MAX_VALUES)
        n = DNP_MAX_VALUES;
    v[0] = (uint64_t)kind;
    v[1] = 0; /* a window's events carry no time of their own: the window is their time */
    memcpy(v + 2, vals, n * sizeof *vals);
    pthread_mutex_lock(&W.mu);
    if (!atomic_load(&W.on)) {
        pthread_mutex_unlock(&W.mu);
        return;
    }
    unsigned at = 0;
    for (unsigned f = 0; f < info->nfields && at < n; f++) {
        unsigned nv = dnp_field_nvalues[info->field_types[f]];
        if (info->field_types[f] == DNP_FT_STR)
            v[2 + at] = window_string(v[2 + at]);
        else if (nv == 2 && at + 1 < n)
            v[2 + at + 1] = window_string(v[2 + at + 1]); /* an entity: its ID, its name */
        at += nv;
    }
    if (wbuf_room(&W.ev, DNP_REC_MAX) < 0) {
        W.lost++;
    } else {
        W.ev.n += dnp_rec_encode(W.ev.p + W.ev.n, DNP_REC_EVENT, v, n + 2, NULL, 0);
        W.nevents++;
    }
    pthread_mutex_unlock(&W.mu);
}

/* ---- writing a window ---- */

typedef struct window_data {
    wbuf ev, str;
    uint32_t next_id;
    uint64_t nevents, lost;
} window_data;

/* Takes the current window's buffers; a new window starts empty. */
static void take(window_data *d) {
    pthread_mutex_lock(&W.mu);
    d->ev = W.ev;
    d->str = W.str;
    d->next_id = W.next_id;
    d->nevents = W.nevents;
    d->lost = W.lost;
    memset(&W.ev, 0, sizeof W.ev);
    memset(&W.str, 0, sizeof W.str);
    dnp_u64map_clear(&W.ids);
    W.next_id = 0;
    W.nevents = W.lost = 0;
    pthread_mutex_unlock(&W.mu);
}

static void window_path(char *out, size_t cap, uint64_t index, const char *suffix) {
    snprintf(out, cap, "%s/window-%ld-%06llu.trace%s", W.dir, (long)getpid(), (unsigned long long)index, suffix);
}

/* The meta chunk: the window's strings, the process (started when the window
 * did), the window thread. */
static int meta_chunk(wbuf *m, const window_data *d) {
    size_t lc = strlen(W.cmdline), lr = strlen(W.runtime);
    if (wbuf_room(m, d->str.n + 4 * DNP_REC_MAX + lc + lr) < 0)
        return -1;
    if (d->str.n)
        memcpy(m->p, d->str.p, d->str.n);
    m->n = d->str.n;
    uint64_t sc[2] = {d->next_id + 1, lc}, sr[2] = {d->next_id + 2, lr};
    m->n += dnp_rec_encode(m->p + m->n, DNP_REC_STRING, sc, 2, W.cmdline, lc);
    m->n += dnp_rec_encode(m->p + m->n, DNP_REC_STRING, sr, 2, W.runtime, lr);
    uint64_t pv[8] = {(uint64_t)getpid(), (uint64_t)getppid(), W.start_real, W.start_mono,
                      d->next_id + 1, d->next_id + 2, (uint64_t)W.attached, W.host_pid};
    m->n += dnp_rec_encode(m->p + m->n, DNP_REC_PROCESS, pv, 8, NULL, 0);
    uint64_t tv[2] = {1, (uint64_t)syscall(SYS_gettid)};
    m->n += dnp_rec_encode(m->p + m->n, DNP_REC_THREAD, tv, 2, NULL, 0);
    return 0;
}

/* Writes the window that ended at end_mono; 0 or a negative errno. */
static int write_window(const window_data *d, uint64_t end_mono) {
    char tmp[4200], final[4200], err[512];
    window_path(tmp, sizeof tmp, W.index, ".tmp");
    window_path(final, sizeof final, W.index, "");
    wbuf m = {0};
    int rc = meta_chunk(&m, d);
    uint8_t head[DNP_REC_MAX], end[DNP_REC_MAX];
    uint64_t wv[7] = {DNP_EV_Window, 0, W.index, W.start_real, end_mono - W.start_mono, W.dropped, d->lost};
    size_t nhead = dnp_rec_encode(head, DNP_REC_EVENT, wv, 7, NULL, 0);
    uint64_t total[1] = {d->nevents + 1};
    size_t nend = dnp_rec_encode(end, DNP_REC_END, total, 1, NULL, 0);
    wbuf ev = {0};
    if (rc < 0 || wbuf_room(&ev, nhead + d->ev.n) < 0)
        rc = -ENOMEM;
    if (rc == 0) {
        memcpy(ev.p, head, nhead);
        if (d->ev.n)
            memcpy(ev.p + nhead, d->ev.p, d->ev.n);
        ev.n = nhead + d->ev.n;
    }
    dnp_writer *w = rc == 0 ? dnp_writer_open(tmp, 0, (uint64_t)getpid(), err, sizeof err) : NULL;
    if (rc == 0 && !w)
        rc = -EIO;
    if (rc == 0)
        rc = dnp_writer_append(w, 0, W.start_mono, m.p, m.n);
    if (rc == 0)
        rc = dnp_writer_append(w, 1, W.start_mono, ev.p, ev.n);
    if (rc == 0)
        rc = dnp_writer_append(w, 0, end_mono, end, nend);
    dnp_writer_free(w);
    free(m.p);
    free(ev.p);
    if (rc == 0 && rename(tmp, final) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* The windows a reader has not taken, at most W.keep: the oldest go. */
static void keep_bounded(void) {
    char path[4200];
    size_t k = 0;
    for (size_t i = 0; i < W.nwaiting; i++) {
        window_path(path, sizeof path, W.waiting[i], "");
        if (access(path, F_OK) == 0)
            W.waiting[k++] = W.waiting[i]; /* still there: not taken yet */
    }
    W.nwaiting = k;
    size_t over = W.nwaiting > W.keep ? W.nwaiting - W.keep : 0;
    for (size_t i = 0; i < over; i++) {
        window_path(path, sizeof path, W.waiting[i], "");
        if (unlink(path) == 0)
            W.dropped++; /* else the reader took it meanwhile */
    }
    memmove(W.waiting, W.waiting + over, (W.nwaiting - over) * sizeof *W.waiting);
    W.nwaiting -= over;
}

static void remember(uint64_t index) {
    if (W.nwaiting == W.capwaiting) {
        size_t cap = W.capwaiting ? W.capwaiting * 2 : 64;
        uint64_t *p = realloc(W.waiting, cap * sizeof *p);
        if (!p)
            return; /* not bounded by us then; the reader still deletes it */
        W.waiting = p;
        W.capwaiting = cap;
    }
    W.waiting[W.nwaiting++] = index;
}

/* Ends the current window at now and starts the next. Window thread only. */
static void cut(void) {
    int n = atomic_load(&W.nhooks);
    for (int i = 0; i < n; i++)
        W.hooks[i]();
    uint64_t end_mono = recorder_now();
    window_data d;
    take(&d);
    int rc = write_window(&d, end_mono);
    free(d.ev.p);
    free(d.str.p);
    if (rc == 0) {
        W.written++;
        remember(W.index);
        keep_bounded();
    } else {
        W.failed++;
        if (!W.said_write++) {
            agent_say("cannot write window %llu in '%.300s': %s; the windows after it are tried all the same",
                      (unsigned long long)W.index, W.dir, strerror(-rc));
            rec_note(1, "window %llu not written: %s", (unsigned long long)W.index, strerror(-rc));
        }
    }
    W.start_real += end_mono - W.start_mono;
    W.start_mono = end_mono;
    W.index++;
}

static void *window_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t next = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + W.every_ns;
    pthread_mutex_lock(&W.stop_mu);
    while (!W.stop) {
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        int rc = pthread_cond_timedwait(&W.stop_cv, &W.stop_mu, &ts);
        if (W.stop || rc != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&W.stop_mu);
        cut();
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
        next += W.every_ns;
        if (next <= t)
            next = t + W.every_ns; /* behind (a stopped process): no burst of windows */
        pthread_mutex_lock(&W.stop_mu);
    }
    pthread_mutex_unlock(&W.stop_mu);
    cut(); /* the last window: what it holds so far */
    return NULL;
}

/* ---- start and stop ---- */

/* dir with %p expanded (default: the session directory, else
 * dnprof-%p.windows in the working directory), created 0700 if it is not. */
static int make_dir(const agent_config *cfg) {
    const char *tmpl = cfg->window_dir[0] ? cfg->window_dir : cfg->session[0] ? cfg->session : "dnprof-%p.windows";
    size_t n = 0;
    for (const char *p = tmpl; *p && n + 24 < sizeof W.dir; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            n += (size_t)snprintf(W.dir + n, sizeof W.dir - n, "%ld", (long)getpid());
            p++;
        } else {
            W.dir[n++] = *p;
        }
    }
    W.dir[n] = 0;
    if (mkdir(W.dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (stat(W.dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return -ENOTDIR;
    return 0;
}

int windows_start(const agent_config *cfg, const char *cmdline, const char *runtime, int attached) {
    if (!cfg->every_ms || W.running)
        return 0;
    int rc = make_dir(cfg);
    if (rc < 0) {
        agent_say("cannot use the window directory '%.300s': %s; recording without windows", W.dir, strerror(-rc));
        rec_note(1, "no windows: the directory '%.300s': %s", W.dir, strerror(-rc));
        return -1;
    }
    W.every_ns = (uint64_t)cfg->every_ms * 1000000u;
    W.keep = cfg->window_keep ? cfg->window_keep : 16;
    snprintf(W.cmdline, sizeof W.cmdline, "%s", cmdline ? cmdline : "");
    snprintf(W.runtime, sizeof W.runtime, "%s", runtime ? runtime : "");
    W.attached = attached;
    W.host_pid = cfg->host_pid;
    W.index = 1;
    W.dropped = W.written = W.failed = 0;
    W.nwaiting = 0;
    W.stop = 0;
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    W.start_mono = recorder_now();
    W.start_real = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&W.stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&W.on, 1);
    if (pthread_create(&W.thread, NULL, window_main, NULL) != 0) {
        atomic_store(&W.on, 0);
        agent_say("cannot start the window thread; recording without windows");
        rec_note(1, "no windows: the window thread could not start");
        return -1;
    }
    W.running = 1;
    pthread_setname_np(W.thread, "dnprof-windows");
    rec_note(0, "windows of %u ms in %.300s, at most %u waiting", cfg->every_ms, W.dir, W.keep);
    return 0;
}

void windows_stop(void) {
    if (!W.running)
        return;
    bg_thread_stop(W.thread, &W.stop_mu, &W.stop_cv, &W.stop);
    W.running = 0;
    atomic_store(&W.on, 0);
    rec_note(0, "windows: %llu written, %llu dropped (no reader took them), %llu not written",
             (unsigned long long)W.written, (unsigned long long)W.dropped, (unsigned long long)W.failed);
    pthread_mutex_lock(&W.mu);
    free(W.ev.p);
    free(W.str.p);
    memset(&W.ev, 0, sizeof W.ev);
    memset(&W.str, 0, sizeof W.str);
    dnp_u64map_release(&W.ids);
    pthread_mutex_unlock(&W.mu);
    free(W.waiting);
    W.waiting = NULL;
    W.nwaiting = W.capwaiting = 0;
    pthread_cond_destroy(&W.stop_cv);
}
