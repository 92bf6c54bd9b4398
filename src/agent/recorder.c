/* recorder.c: per-thread buffers, interned strings and the background writer.
 *
 * Each OS thread that raises an event gets a buffer of its own (thread-local,
 * guarded by a mutex only the flusher ever contends for). Definitions that every
 * thread shares (strings, threads, the process) go to one "meta" buffer, and the
 * meta buffer is always written before any thread buffer that may refer to it:
 * a thread's buffer is flushed under its own lock, after the meta buffer. */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bg_thread.h"
#include "clock.h"
#include "say.h"
#include "settings.h"
#include "trace_writer.h"
#include "windows.h"

#define THREAD_BUF_SIZE (64u * 1024u)
#define FLUSH_IDLE_MS 1000u /* the writer's sleep when nothing comes */

enum { ST_CLOSED, ST_OPEN, ST_FAILED };

typedef struct tstate {
    pthread_mutex_t mu;
    uint8_t *buf;
    size_t len;
    uint64_t base_ns, last_ns;
    uint64_t events;
    uint32_t ordinal;
    unsigned gen; /* the trace this thread's THREAD record went into */
    struct tstate *next;
} tstate;

static struct {
    atomic_int state;
    dnp_writer *writer;
    char *path;

    pthread_mutex_t meta_mu;
    uint8_t *meta;
    size_t meta_len, meta_cap;

    pthread_mutex_t list_mu;
    tstate *threads;
    uint64_t dead_events; /* events of threads that have exited */
    atomic_uint next_ordinal;
    atomic_ullong lost;

    pthread_t flusher;
    int flusher_running;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    int stop;
    int wake;          /* an event arrived while the writer was idle */
    atomic_int idle;   /* the writer sleeps long: the next event wakes it */
    unsigned flush_ms;
    uint64_t max_age_ns; /* a buffer older than this is flushed by its own thread */

    atomic_int said_write_error;
    uint64_t open_ns;      /* recorder_now() at the open */

    /* Attach and detach (src/agent/attach.c): the library may record several
     * traces in one life, and must leave nothing behind when it is unloaded. */
    atomic_uint gen;         /* bumped by every open: THREAD and STRING records go into each trace */
    atomic_uint epoch;       /* bumped by every release: thread states of before are gone */
    pthread_mutex_t key_mu;  /* guards key_ready */
    int key_ready;
    atomic_int in_exit;      /* threads inside thread_exit */
    int released;            /* recorder_release ran since the last open */
} R = {
    .key_mu = PTHREAD_MUTEX_INITIALIZER,
    .meta_mu = PTHREAD_MUTEX_INITIALIZER,
    .list_mu = PTHREAD_MUTEX_INITIALIZER,
    .stop_mu = PTHREAD_MUTEX_INITIALIZER,
    .stop_cv = PTHREAD_COND_INITIALIZER,
};
static void flusher_wake(void);

static __thread tstate *t_state;
static __thread unsigned t_epoch; /* t_state is valid only while this is R.epoch */
static __thread uint32_t t_ordinal;
static pthread_key_t t_key;

uint64_t recorder_now(void) {
    return clock_now_ns();
}

/* The trace cannot be written any more (a full disk): said once, with where the
 * recording stopped, to the person and to the front end. */
static void write_failed(int err) {
    int expected = ST_OPEN;
    atomic_compare_exchange_strong(&R.state, &expected, ST_FAILED);
    if (atomic_exchange(&R.said_write_error, 1))
        return;
    uint64_t bytes = dnp_writer_bytes(R.writer);
    uint64_t now = recorder_now();
    double secs = now > R.open_ns ? (double)(now - R.open_ns) / 1e9 : 0.0;
    char why[768];
    snprintf(why, sizeof why,
             "cannot write trace '%.400s': %s, after %llu bytes, %.2f s into the recording; the "
             "trace holds what came before",
             R.path, strerror(err), (unsigned long long)bytes, secs);
    agent_say("%s; recording stopped, the program goes on", why);
    say_session_line("error", why);
}

/* ---- the meta stream ---- */

static void meta_append(uint8_t tag, const uint64_t *vals, unsigned n, const void *tail,
                        size_t tail_len) {
    pthread_mutex_lock(&R.meta_mu);
    size_t need = R.meta_len + DNP_REC_MAX + tail_len;
    if (need > R.meta_cap) {
        size_t cap = R.meta_cap ? R.meta_cap : 16384;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(R.meta, cap);
        if (!p) {
            pthread_mutex_unlock(&R.meta_mu);
            atomic_fetch_add(&R.lost, 1);
            return;
        }
        R.meta = p;
        R.meta_cap = cap;
    }
    R.meta_len += dnp_rec_encode(R.meta + R.meta_len, tag, vals, n, tail, tail_len);
    pthread_mutex_unlock(&R.meta_mu);
}

static void meta_flush(void) {
    pthread_mutex_lock(&R.meta_mu);
    if (R.meta_len > 0 && atomic_load(&R.state) == ST_OPEN) {
        int rc = dnp_writer_append(R.writer, 0, recorder_now(), R.meta, R.meta_len);
        if (rc < 0)
            write_failed(-rc);
    }
    R.meta_len = 0;
    pthread_mutex_unlock(&R.meta_mu);
}

/* ---- per-thread buffers ---- */

/* Writes a thread's buffer; its lock is held. */
static void thread_flush_locked(tstate *ts) {
    if (ts->len == 0)
        return;
    if (atomic_load(&R.state) == ST_OPEN) {
        meta_flush();
        int rc = dnp_writer_append(R.writer, ts->ordinal, ts->base_ns, ts->buf, ts->len);
        if (rc < 0)
            write_failed(-rc);
    }
    ts->len = 0;
}

static void thread_exit(void *p) {
    tstate *ts = p;
    atomic_fetch_add(&R.in_exit, 1);
    pthread_mutex_lock(&R.list_mu);
    for (tstate **pp = &R.threads; *pp; pp = &(*pp)->next) {
        if (*pp == ts) {
            *pp = ts->next;
            break;
        }
    }
    R.dead_events += ts->events;
    pthread_mutex_unlock(&R.list_mu);
    pthread_mutex_lock(&ts->mu);
    thread_flush_locked(ts);
    pthread_mutex_unlock(&ts->mu);
    pthread_mutex_destroy(&ts->mu);
    free(ts->buf);
    free(ts);
    t_state = NULL;
    atomic_fetch_sub(&R.in_exit, 1);
}

static int make_key(void) {
    pthread_mutex_lock(&R.key_mu);
    if (!R.key_ready)
        R.key_ready = pthread_key_create(&t_key, thread_exit) == 0;
    int ok = R.key_ready;
    pthread_mutex_unlock(&R.key_mu);
    return ok ? 0 : -1;
}

static tstate *thread_state(void) {
    if (t_state && t_epoch == atomic_load_explicit(&R.epoch, memory_order_relaxed))
        return t_state;
    if (make_key() < 0) {
        atomic_fetch_add(&R.lost, 1);
        return NULL;
    }
    tstate *ts = calloc(1, sizeof *ts);
    uint8_t *buf = malloc(THREAD_BUF_SIZE);
    if (!ts || !buf) {
        free(ts);
        free(buf);
        atomic_fetch_add(&R.lost, 1);
        return NULL;
    }
    pthread_mutex_init(&ts->mu, NULL);
    ts->buf = buf;
    if (t_ordinal == 0)
        t_ordinal = atomic_fetch_add(&R.next_ordinal, 1) + 1;
    ts->ordinal = t_ordinal;
    pthread_mutex_lock(&R.list_mu);
    ts->next = R.threads;
    R.threads = ts;
    pthread_mutex_unlock(&R.list_mu);
    pthread_setspecific(t_key, ts);
    t_state = ts;
    t_epoch = atomic_load(&R.epoch);
    return ts;
}

/* Announces the thread in the current trace, once per trace. */
static void thread_announce(tstate *ts) {
    unsigned gen = atomic_load_explicit(&R.gen, memory_order_relaxed);
    if (ts->gen == gen)
        return;
    ts->gen = gen;
    uint64_t v[2] = {ts->ordinal, (uint64_t)syscall(SYS_gettid)};
    meta_append(DNP_REC_THREAD, v, 2, NULL, 0);
}

/* Appends one timed record (EVENT or NOTE) to this thread's buffer. */
static void thread_append(uint8_t tag, uint64_t *vals, unsigned n, const void *tail,
                          size_t tail_len) {
    if (atomic_load_explicit(&R.state, memory_order_relaxed) != ST_OPEN)
        return;
    tstate *ts = thread_state();
    if (!ts)
        return;
    thread_announce(ts);
    uint64_t now = recorder_now();
    pthread_mutex_lock(&ts->mu);
    /* Full, or older than the writer should have let it get (a writer thread
     * that the scheduler keeps waiting on a loaded machine): this thread writes
     * its buffer itself, so that a kill loses no more of a busy thread. */
    if (ts->len + DNP_REC_MAX + tail_len > THREAD_BUF_SIZE ||
        (ts->len && now - ts->base_ns > R.max_age_ns))
        thread_flush_locked(ts);
    if (ts->len + DNP_REC_MAX + tail_len > THREAD_BUF_SIZE) {
        pthread_mutex_unlock(&ts->mu);
        atomic_fetch_add(&R.lost, 1);
        return;
    }
    int was_empty = ts->len == 0;
    if (was_empty)
        ts->base_ns = ts->last_ns = now;
    if (now < ts->last_ns) /* the switch from clock_gettime to the TSC may step back a little */
        now = ts->last_ns;
    vals[1] = now - ts->last_ns; /* vals[0] is the kind or level */
    ts->last_ns = now;
    ts->len += dnp_rec_encode(ts->buf + ts->len, tag, vals, n, tail, tail_len);
    ts->events += tag == DNP_REC_EVENT;
    pthread_mutex_unlock(&ts->mu);
    if (was_empty && atomic_load(&R.idle))
        flusher_wake();
}

void rec_event(dnp_event_kind kind, const uint64_t *vals, unsigned n) {
    uint64_t v[2 + DNP_MAX_VALUES];
    if (n > DNP_MAX_VALUES)
        n = DNP_MAX_VALUES;
    v[0] = (uint64_t)kind;
    memcpy(v + 2, vals, n * sizeof *vals);
    thread_append(DNP_REC_EVENT, v, n + 2, NULL, 0);
    if (window_tapped(kind)) /* continuous profiling: this kind goes into the window too */
        window_event(kind, vals, n);
}

void rec_note(unsigned level, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    uint64_t v[3] = {level, 0, rec_string(text, strlen(text))};
    thread_append(DNP_REC_NOTE, v, 3, NULL, 0);
}

void rec_process(uint64_t start_mono_ns, uint64_t start_real_ns, const char *cmdline,
                 const char *runtime, int attached, unsigned host_pid) {
    uint64_t v[8] = {(uint64_t)getpid(),
                     (uint64_t)getppid(),
                     start_real_ns,
                     start_mono_ns,
                     rec_string(cmdline, cmdline ? strlen(cmdline) : 0),
                     rec_string(runtime, runtime ? strlen(runtime) : 0),
                     (uint64_t)attached,
                     host_pid};
    meta_append(DNP_REC_PROCESS, v, 8, NULL, 0);
}

/* ---- interned strings: a sharded hash set, string -> number ---- */

#define STR_SHARDS 64

typedef struct str_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    char *bytes;
} str_entry;

static struct {
    pthread_mutex_t mu;
    str_entry *slots;
    size_t cap, count;
} S[STR_SHARDS];
static atomic_uint next_string_id;
static pthread_once_t strings_once = PTHREAD_ONCE_INIT;

/* The strings by number, for rec_string_text (windows.c copies the ones a
 * window refers to). Their bytes are the shards' own, freed only at unload. */
static struct {
    pthread_mutex_t mu;
    char **bytes;
    uint32_t *lens;
    size_t cap;
} B = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void by_id_put(uint32_t id, char *bytes, uint32_t len) {
    pthread_mutex_lock(&B.mu);
    if (id >= B.cap) {
        size_t cap = B.cap ? B.cap : 1024;
        while (cap <= id)
            cap *= 2;
        char **b = realloc(B.bytes, cap * sizeof *b);
        if (b)
            B.bytes = b;
        uint32_t *l = b ? realloc(B.lens, cap * sizeof *l) : NULL;
        if (l)
            B.lens = l;
        if (b && l) {
            memset(B.bytes + B.cap, 0, (cap - B.cap) * sizeof *B.bytes);
            B.cap = cap;
        }
    }
    if (id < B.cap) {
        B.bytes[id] = bytes;
        B.lens[id] = len;
    }
    pthread_mutex_unlock(&B.mu);
}

int rec_string_text(uint32_t id, void (*fn)(void *ctx, const char *s, size_t len), void *ctx) {
    pthread_mutex_lock(&B.mu);
    int found = id < B.cap && B.bytes[id];
    if (found)
        fn(ctx, B.bytes[id], B.lens[id]);
    pthread_mutex_unlock(&B.mu);
    return found ? 0 : -1;
}

static void strings_init(void) {
    for (int i = 0; i < STR_SHARDS; i++)
        pthread_mutex_init(&S[i].mu, NULL);
}

static uint64_t str_hash(const char *s, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h | 1; /* 0 marks an empty slot */
}

/* A shard starts at 16 slots (384 bytes) and doubles: 64 shards of 256 slots
 * from the start took 384 KB, a page fault per 4 KB on the thread that
 * interned its first strings (the sampler's, naming a run's first samples). */
static int str_grow(int shard) {
    size_t cap = S[shard].cap ? S[shard].cap * 2 : 16;
    str_entry *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < S[shard].cap; i++) {
        str_entry *e = &S[shard].slots[i];
        if (!e->hash)
            continue;
        size_t j = (e->hash >> 6) & (cap - 1);
        while (slots[j].hash)
            j = (j + 1) & (cap - 1);
        slots[j] = *e;
    }
    free(S[shard].slots);
    S[shard].slots = slots;
    S[shard].cap = cap;
    return 0;
}

uint32_t rec_string(const char *s, size_t len) {
    if (!s)
        return 0;
    if (len > UINT32_MAX / 2)
        len = UINT32_MAX / 2;
    pthread_once(&strings_once, strings_init);
    uint64_t h = str_hash(s, len);
    int shard = (int)(h & (STR_SHARDS - 1));
    uint32_t id = 0;
    pthread_mutex_lock(&S[shard].mu);
    if ((S[shard].count + 1) * 2 > S[shard].cap && str_grow(shard) < 0)
        goto out;
    size_t mask = S[shard].cap - 1;
    size_t j = (h >> 6) & mask;
    for (;; j = (j + 1) & mask) {
        str_entry *e = &S[shard].slots[j];
        if (!e->hash)
            break;
        if (e->hash == h && e->len == len && memcmp(e->bytes, s, len) == 0) {
            id = e->id;
            goto out;
        }
    }
    char *copy = malloc(len + 1);
    if (!copy)
        goto out;
    memcpy(copy, s, len);
    copy[len] = 0;
    id = atomic_fetch_add(&next_string_id, 1) + 1;
    S[shard].slots[j] = (str_entry){h, id, (uint32_t)len, copy};
    S[shard].count++;
    by_id_put(id, copy, (uint32_t)len);
    /* Defined in the meta stream while the shard is held: no other thread can
     * use this number before its definition is buffered. */
    uint64_t v[2] = {id, len};
    meta_append(DNP_REC_STRING, v, 2, s, len);
out:
    pthread_mutex_unlock(&S[shard].mu);
    return id;
}

/* A trace after the first in this library's life (attach, detach, attach):
 * every string already interned is defined again, before any use. */
static void strings_redefine(void) {
    pthread_once(&strings_once, strings_init);
    for (int i = 0; i < STR_SHARDS; i++) {
        pthread_mutex_lock(&S[i].mu);
        for (size_t j = 0; j < S[i].cap; j++) {
            str_entry *e = &S[i].slots[j];
            if (!e->hash)
                continue;
            uint64_t v[2] = {e->id, e->len};
            meta_append(DNP_REC_STRING, v, 2, e->bytes, e->len);
        }
        pthread_mutex_unlock(&S[i].mu);
    }
}

static void strings_free(void) {
    for (int i = 0; i < STR_SHARDS; i++) {
        for (size_t j = 0; j < S[i].cap; j++)
            free(S[i].slots[j].bytes);
        free(S[i].slots);
        S[i].slots = NULL;
        S[i].cap = S[i].count = 0;
    }
    pthread_mutex_lock(&B.mu);
    free(B.bytes);
    free(B.lens);
    B.bytes = NULL;
    B.lens = NULL;
    B.cap = 0;
    pthread_mutex_unlock(&B.mu);
}

/* ---- flushing ---- */

/* Writes every buffer; returns the number of chunks written (or left to a
 * thread that is appending). wait: 0 skips a buffer whose thread holds it (it
 * is recording, and may have been preempted in the middle: the others are not
 * kept waiting behind it; it flushes itself when its buffer is old). */
static unsigned flush_all(int wait) {
    unsigned chunks = 0;
    pthread_mutex_lock(&R.meta_mu);
    chunks += R.meta_len > 0;
    pthread_mutex_unlock(&R.meta_mu);
    meta_flush();
    pthread_mutex_lock(&R.list_mu);
    for (tstate *ts = R.threads; ts; ts = ts->next) {
        if (wait)
            pthread_mutex_lock(&ts->mu);
        else if (pthread_mutex_trylock(&ts->mu) != 0) {
            chunks++;
            continue;
        }
        chunks += ts->len > 0;
        thread_flush_locked(ts);
        pthread_mutex_unlock(&ts->mu);
    }
    pthread_mutex_unlock(&R.list_mu);
    return chunks;
}

void recorder_flush_all(void) {
    flush_all(1);
}

/* Waits ms on stop_cv; returns early on a stop or a wake. stop_mu is held. */
static void flusher_wait(unsigned ms) {
    struct timespec until; /* stop_cv waits on CLOCK_REALTIME, its default */
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)ms * 1000000u;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    while (!R.stop && !R.wake) {
        if (pthread_cond_timedwait(&R.stop_cv, &R.stop_mu, &until) == ETIMEDOUT)
            break;
    }
}

static int (*_Atomic g_tick)(void);

void recorder_set_tick(int (*fn)(void)) {
    atomic_store(&g_tick, fn);
}

/* The writer flushes every flush_ms while events come. After a period with
 * nothing to write it goes idle: it sleeps long, and the first event recorded
 * after that wakes it (thread_append), so that an event waits in memory at most
 * about flush_ms whatever the program did before: that is what a kill -9 loses. */
static void *flusher_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "dnprof-writer"); /* named by itself: one prctl, where naming it from here opens /proc/self/task/TID/comm */
    unsigned idle_ms = R.flush_ms < FLUSH_IDLE_MS ? FLUSH_IDLE_MS : R.flush_ms;
    int idle = 0;
    pthread_mutex_lock(&R.stop_mu);
    while (!R.stop) {
        flusher_wait(idle ? idle_ms : R.flush_ms);
        if (R.stop)
            break;
        if (R.wake) {
            /* Events arrive after an idle time: flush_ms from now, not at once,
             * so that a burst is written as one chunk per thread. */
            R.wake = 0;
            idle = 0;
            continue;
        }
        pthread_mutex_unlock(&R.stop_mu);
        /* A rate measured over the first flush period costs no one a wait. */
        clock_calibrate(100, 0);
        int (*tick)(void) = atomic_load(&g_tick);
        /* sums that have waited a second, or whose threads went quiet, so that a death loses no
         * more; while some still wait, the writer keeps its period (an idle writer would sleep a
         * second, and a program dying within it lose them) */
        int waiting = tick && tick();
        if (flush_all(0) > 0 || waiting) {
            idle = 0;
        } else {
            /* Idle from now: a thread whose buffer was empty wakes the writer.
             * A thread that appended before it could see the flag is flushed here. */
            atomic_store(&R.idle, 1);
            if (flush_all(0) > 0)
                atomic_store(&R.idle, 0);
            idle = atomic_load(&R.idle);
        }
        pthread_mutex_lock(&R.stop_mu);
    }
    pthread_mutex_unlock(&R.stop_mu);
    return NULL;
}

/* The first event after an idle time: the writer must flush within flush_ms. */
static void flusher_wake(void) {
    if (!atomic_exchange(&R.idle, 0))
        return;
    pthread_mutex_lock(&R.stop_mu);
    R.wake = 1;
    pthread_cond_signal(&R.stop_cv);
    pthread_mutex_unlock(&R.stop_mu);
}

void recorder_wake(void) {
    if (atomic_load_explicit(&R.idle, memory_order_relaxed) && atomic_load(&R.state) == ST_OPEN &&
        R.flusher_running)
        flusher_wake();
}

uint64_t recorder_events(void) {
    pthread_mutex_lock(&R.list_mu);
    uint64_t n = R.dead_events;
    for (tstate *ts = R.threads; ts; ts = ts->next)
        n += ts->events;
    pthread_mutex_unlock(&R.list_mu);
    return n;
}

/* A child of the profiled process that did not exec shares the trace's file
 * description: it must not write into its parent's trace. */
static void after_fork_child(void) {
    atomic_store(&R.state, ST_CLOSED);
    R.flusher_running = 0;
}

static void register_atfork(void) {
    pthread_atfork(NULL, NULL, after_fork_child);
}

int recorder_open(recorder_options *opt) {
    char err[512];
    clock_init();
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    if (atomic_fetch_add(&R.gen, 1) > 0) {
        /* Not the first trace of this library's life: start from zero. */
        pthread_mutex_lock(&R.list_mu);
        R.dead_events = 0;
        for (tstate *ts = R.threads; ts; ts = ts->next)
            ts->events = 0;
        pthread_mutex_unlock(&R.list_mu);
        atomic_store(&R.lost, 0);
        atomic_store(&R.said_write_error, 0);
        R.meta_len = 0;
    }
    R.open_ns = recorder_now();
    R.writer = dnp_writer_open(opt->path, opt->exclusive, (uint64_t)getpid(), err, sizeof err);
    if (!R.writer && opt->alt && *opt->alt) { /* taken by another program: its error is not ours to say */
        opt->path = opt->alt;
        R.writer = dnp_writer_open(opt->path, 1, (uint64_t)getpid(), err, sizeof err);
    }
    free(R.path);
    R.path = strdup(opt->path);
    if (!R.writer) {
        agent_say("%s; not recording, the program goes on", err);
        say_session_line("error", err);
        return -1;
    }
    R.flush_ms = opt->flush_ms ? opt->flush_ms : dnp_setting_default(DNP_SET_FLUSH_MS);
    R.max_age_ns = (uint64_t)R.flush_ms * 1500000u; /* 1.5 periods */
    if (atomic_load(&R.gen) > 1)
        strings_redefine();
    R.released = 0;
    atomic_store(&R.state, ST_OPEN);
    pthread_once(&atfork_once, register_atfork);

    /* The writer thread takes no signal meant for the program. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    R.stop = 0;
    R.wake = 0;
    atomic_store(&R.idle, 0);
    R.flusher_running = pthread_create(&R.flusher, NULL, flusher_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!R.flusher_running)
        agent_say("cannot start the trace writer thread; events are written when buffers fill");
    return 0;
}

void recorder_close(void) {
    if (atomic_load(&R.state) == ST_CLOSED)
        return;
    if (R.flusher_running) {
        bg_thread_stop(R.flusher, &R.stop_mu, &R.stop_cv, &R.stop);
        R.flusher_running = 0;
    }
    atomic_store(&g_tick, NULL);
    recorder_flush_all();
    uint64_t total = recorder_events();
    uint64_t lost = atomic_load(&R.lost);
    if (lost) {
        uint64_t v[1] = {lost};
        meta_append(DNP_REC_LOST, v, 1, NULL, 0);
    }
    int ok = atomic_load(&R.state) == ST_OPEN;
    uint64_t v[1] = {total};
    meta_append(DNP_REC_END, v, 1, NULL, 0);
    meta_flush();
    /* Threads still running may race with the close: they see CLOSED and drop. */
    pthread_mutex_lock(&R.list_mu);
    atomic_store(&R.state, ST_CLOSED);
    pthread_mutex_unlock(&R.list_mu);
    if (ok) {
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)total);
        say_session_line("complete", n);
    }
}

void recorder_release(void) {
    if (atomic_load(&R.state) != ST_CLOSED)
        return;
    pthread_mutex_lock(&R.key_mu);
    if (R.key_ready) {
        pthread_key_delete(t_key);
        R.key_ready = 0;
    }
    pthread_mutex_unlock(&R.key_mu);
    /* A thread that entered thread_exit before the key went away finishes first. */
    for (int i = 0; i < 1000 && atomic_load(&R.in_exit) > 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&R.epoch, 1);
    pthread_mutex_lock(&R.list_mu);
    tstate *ts = R.threads;
    R.threads = NULL;
    pthread_mutex_unlock(&R.list_mu);
    while (ts) {
        tstate *next = ts->next;
        pthread_mutex_destroy(&ts->mu);
        free(ts->buf);
        free(ts);
        ts = next;
    }
    pthread_mutex_lock(&R.meta_mu);
    free(R.meta);
    R.meta = NULL;
    R.meta_len = R.meta_cap = 0;
    pthread_mutex_unlock(&R.meta_mu);
    dnp_writer_free(R.writer);
    R.writer = NULL;
    R.released = 1;
}

/* The library is being unloaded (after a detach) or the process exits: what a
 * released recorder still holds (the interned strings, kept for a next trace
 * of the same library) is freed. */
__attribute__((destructor)) static void recorder_unload(void) {
    if (R.released && atomic_load(&R.state) == ST_CLOSED) {
        strings_free();
        free(R.path);
        R.path = NULL;
    }
}
