/* sampler_internal.h: what the sampler's files share (sampler.h is the rest of
 * the agent's interface): the per-thread slots and their rings, written by the
 * signal handler (sampler_walk.c) and read by the sampler thread; the address
 * cache (sampler_resolve.c); the trees (sampler_aggregate.c); and the one state
 * all of them keep, S. */
#ifndef DNP_SAMPLER_INTERNAL_H
#define DNP_SAMPLER_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "sampler.h"

#define SAMPLER_SIGNAL SIGPROF
#define MAX_SLOTS 4096u        /* threads sampled at once */
#define MAX_DEPTH 128u         /* frames kept per sample */
#define STACK_GUESS (8u << 20) /* how far above SP a walk may read before the stack's bounds are known */
#define SCAN_WORDS 512u        /* words a sample may read looking for frames the chain skips (OSR) */
#define SCAN_CHUNK 64u         /* of which, before the stack's bounds are known, per frame */
#define OSR_CANDIDATES 2u      /* return addresses a frame the chain skips may be (sampler_osr_scan) */
#define OSR_KNOWN_WORDS 2048u  /* of a sample, words looked at above known patchpoint calls, apart from SCAN_WORDS */
#define SP_WORDS 64u           /* words kept from the interrupted stack pointer up */
#define SP_WORDS_MIN 8u        /* of which at least, before the stack's bounds are known */
#define RING 32u               /* samples a thread may hold before the sampler drains them */
#define IDLE_SPAN (32u << 10)  /* wall: a waiting thread's stack, from SP up, where its frames are looked for */
#define IDLE_FRAMES 16u        /* wall: the return addresses that say a waiting thread has not moved */
#define IDLE_GAP 1024u         /* wall: words searched for the next frame's return address above the last */
#define REMOTE_FIRST (8u << 10)  /* wall: a waiting thread's stack copied to be walked without a signal, */
#define REMOTE_MAX (512u << 10)  /* and at most, when its frames go on above the first copy */
#define MAX_NODES (1u << 18)   /* nodes of all trees together */
#define NODE_HASH (1u << 19)
#define HASH_FIRST 1024u  /* the node and address indexes' first size: a page each, grown by doubling */
#define IP_CACHE (1u << 16)
#define NAMED_MAX 8192u        /* threads whose OS name is written (a table, never shrunk) */
#define SCAN_MS 100            /* how often new threads are looked for */
#define EMIT_MS 500            /* how often changed nodes are written, at first: then every */
#define EMIT_FRACTION 60       /* 1/60 of the time sampled so far (a minute after an hour) */
#define EXEC_MS 100            /* how old the list of executable mappings may be before a miss reads it again */
#define EXEC_PC_MS 10          /* the same, when an interrupted PC is in none of them */
#define CACHE_MS 2000          /* how long a resolved address is trusted (code unloads) */
#define MAX_FDS 65536          /* perf event fds the handler can map to a slot */
#define AUTO_PROCESS_HZ 250u   /* DNP_ENV_SAMPLE_TIMERS=auto: the process timer at this rate and below */
#define AUTO_SWITCHES 5000u    /* auto: perf events give way above this many context switches per second of CPU */
#define SWITCHES_CPU_MS 30     /* measured over at least this much of the program's CPU time */
#define SWITCHES_WALL_MS 50    /* and this much time */
#define FRAMELESS (1u << 12)   /* return addresses into code that keeps no frame there, for the handler */
#define FRAMELESS_PROBES 8
#define FRAMELESS_RUN 4        /* such frames in a row that one step of the chain may hold */

enum {
    REC_WAITING = 1,
    REC_UNWALKED = 2,
    REC_FP_FOUND = 4,
    REC_NATIVE_CFI = 8, /* the leaf is native code, unwound by its tables (unwind.h): no guess at its caller */
    REC_UNW_STOP = 16,  /* the walk stopped in native code its tables do not cover: marked */
    REC_DEEP = 32,      /* the chain went on past MAX_DEPTH frames: its outer frames not walked, marked */
    REC_GC_PAUSE = 64   /* wall: waiting while a collection held the runtime suspended (sampler_runtime.c) */
};

/* ipent.slot: the leaf's return address is srec.top (ARCH_RETURN_IN_LR). */
#define SLOT_TOP (-3)

typedef struct srec {
    uint32_t n, flags;
    uint32_t gc;     /* a collection ran on the thread: its generation + 1 (sampler_runtime.c) */
    uint64_t jit;    /* the method the thread was compiling, 0 none */
    uint32_t weight; /* periods it stands for: 1 + the timer's overruns */
    uint64_t top; /* maybe the leaf's return address (arch_leaf_return: the word at SP, or lr) */
    uint64_t sp;  /* the interrupted stack pointer */
    uint64_t idle_hash; /* wall, waiting: its frames' return addresses where they lie (idle_hash) */
    uint32_t idle_len;  /* bytes above sp that hold them; 0: not hashed */
    uint16_t idle_off[IDLE_FRAMES]; /* their places, in words above sp */
    uint8_t idle_nret;
    uint64_t extra;  /* bit k: ip[k] was found by the OSR scan, not by the chain */
    uint64_t frameless; /* bit k: ip[k] was read where a frameless caller's return address lies (S.frameless) */
    uint64_t interrupted; /* bit k: ip[k] is a pc a signal interrupted (unwind.h), not a return address */
    uint64_t learned;   /* S.frameless_learned when it was walked */
    uint32_t nwords;
    uint32_t async_k;      /* ip[async_k] returns into the caller of the innermost async resume (async.h); 0 none */
    uint32_t async_chain;  /* that resume's awaiting callers */
    uint32_t async_name;   /* the resumed method's name */
    uint64_t async_resumed; /* and the resumed method */
    uint64_t async_box, async_seq; /* a resume nothing had awaited yet: its box, for async_resolve */
    uint32_t fpoff; /* where the chain starts (the frame pointer, or one saved at SP), above SP, in bytes; 0 none */
    uint64_t words[SP_WORDS]; /* the first words at the stack pointer (nwords of them) */
    uint64_t ip[MAX_DEPTH];
} srec;

typedef struct sslot {
    atomic_int tid;             /* the thread sampled; 0 free, SLOT_CLAIMING being set up, -tid gone (drained, then
                                 * freed): sampler_threads.c */
    atomic_ullong self;         /* its pthread_self(), once its handler has checked tid: 0 until then */
    atomic_ullong lo, hi;       /* its stack mapping, 0 until known */
    atomic_ullong probe_sp;     /* a stack pointer the handler saw outside [lo, hi) */
    atomic_uint head, tail;     /* the ring: head written by the handler, tail by the sampler */
    atomic_uint dropped;
    timer_t timer;
    int has_timer;
    int perf_fd1;               /* the thread's task-clock event's fd + 1, 0 none */
    unsigned seen;              /* the scan that last found the thread */
    atomic_uint owed;           /* wall: periods given by the sampler thread, taken by the handler's next sample */
    atomic_uint busy;           /* the handler runs on the thread (sampler_take_remote then keeps off its ring) */
    uint64_t wall_due;          /* wall: the time up to which periods were given (sampler thread), 0 none yet */
    atomic_ullong wall_last;    /* wall, its own timer: the time up to which its samples have counted, 0 no timer */
    atomic_ullong ended_ns;     /* when the runtime told of its end (ThreadDestroyed, on the thread), 0 not: self
                                 * then no longer stands for it (the thread library gives a new thread the
                                 * descriptor of one gone), and wall mode counts its last moments */
    uint32_t last_leaf;         /* wall, the sampler thread only: the leaf node of its last sample drained, 0 none */
    int wall_timed;             /* wall: it was given a timer of its own (kept when the timer is deleted) */
    /* wall, the sampler thread only: its last sample found it waiting in a system call; that
     * sample's node (0 none), stack pointer and PC, to count it again without a signal while it
     * still waits there (sampler_signal_all) */
    uint32_t idle_leaf;
    uint32_t idle_len;
    uint64_t idle_sp, idle_pc, idle_hash;
    uint16_t idle_off[IDLE_FRAMES];
    uint8_t idle_nret;
    uint64_t idle_cpu; /* its CPU time when last found still waiting there, 0 not yet */
    /* wall, the sampler thread only: a sample that found it waiting while a collection held the
     * runtime (REC_GC_PAUSE), held until its next one says whether the collection held it
     * (sampler_aggregate.c); the record (allocated at the first), its periods, whether one is held */
    struct srec *pause;
    uint32_t pause_w;
    uint8_t paused;
    uint8_t idle_misses, idle_skip; /* looks in a row that found it elsewhere; visits to go without one */
} sslot; /* its ring is apart (slot_ring): the loops over the slots touch a page per 22 of them, not one each */

typedef struct anode {
    uint32_t tid, parent;
    uint64_t key; /* FunctionID, or a native name's string number | 1 << 63 */
    uint64_t func;
    uint32_t name;
    uint8_t dirty;
    uint64_t samples, self;
    uint64_t win_samples, win_self; /* what the last window's end had seen (sampler_window.c) */
} anode;

typedef struct ipent {
    uint64_t ip;      /* 0: empty */
    uint64_t func;    /* FunctionID, 0 for native */
    uint32_t name;    /* string number */
    uint8_t managed, mapped;
    uint8_t call;     /* ip + 1 follows a call instruction: 0 not known yet, 1 yes, 2 no */
    uint8_t code;     /* ip lies in an executable mapping */
    uint8_t resolved; /* func and name are known */
    uint8_t jit_code; /* native code of the JIT (libclrjit): where [JIT] goes on a thread with no managed frame */
    uint8_t runtime_code; /* the runtime's, where a collection runs (libcoreclr, a standalone GC's libclrgc) */
    int8_t slot;      /* as an interrupted PC: arch_return_slot / 8, -1 none, -2 not known yet, SLOT_TOP */
    int8_t rslot;     /* as a return address: the same, -2 not known yet (published in S.frameless) */
    uint32_t exec_gen; /* the list of executable mappings that said "not code" */
} ipent;

typedef struct xrange {
    uint64_t lo, hi;
} xrange;

/* A thread of the trees and the OS name last written for it (sampler_aggregate.c). */
typedef struct named {
    uint32_t tid;     /* 0: empty */
    uint32_t name;    /* string number of the name written, 0 none yet */
    uint8_t sampled;  /* samples since the name was last read */
} named;

typedef struct sampler_state {
    int mode;
    int walk;  /* --sample: stacks are walked and kept (off: the signals are --calls' alone) */
    int calls; /* --calls' times come from these signals (calls_sample) */
    int unwind; /* native frames by their unwind tables (unwind.h) */
    unsigned rate;
    uint64_t period_ns;
    atomic_int running; /* the handler works only while set */
    atomic_int stop;
    pthread_mutex_t stop_mu; /* the sampler sleeps on stop_cv: a stop wakes it at once */
    pthread_cond_t stop_cv;
    int cv_ready;
    atomic_int rescan; /* a thread started: scan now */
    atomic_int stale;  /* code was unloaded: forget resolved addresses */
    pthread_t thread;
    int thread_running;
    int handler_installed;
    int sampler_tid;

    sslot *slots; /* MAX_SLOTS, mmap'd: the handler validates a slot by its address */
    srec *rings;  /* MAX_SLOTS * RING, mmap'd: slot i's ring at i * RING (slot_ring) */
    sslot **fd_slot; /* MAX_FDS: a perf event's fd to its slot */
    int perf;        /* CPU mode: 1 perf task-clock events, 0 not tried yet, -1 POSIX CPU timers */
    int process_timer; /* CPU mode: one timer on the process's CPU clock (DNP_ENV_SAMPLE_TIMERS=process) */
    int process_timer_auto; /* chosen by DNP_ENV_SAMPLE_TIMERS=auto */
    timer_t ptimer;
    int ptimer_armed;
    int ptimer_used; /* the process timer sampled this run (for the closing note) */
    int perf_exclude_kernel;
    int perf_auto;  /* DNP_ENV_SAMPLE_TIMERS=auto chose perf events: they give way to the POSIX timers in a
                     * program that switches threads often (sampler_switches_check) */
    uint64_t sw_cpu_ns, sw_count; /* the program's CPU time and context switches at the last check */
    uint64_t sw_from_ns;          /* and its time */
    double sw_rate;               /* switches per second of CPU that made perf events give way, 0 not */
    atomic_uint scan;   /* scans begun (a slot claimed meanwhile counts as found by the one under way) */
    atomic_uint nslots; /* slots ever used: the loops stop there (sampler_threads.c) */
    unsigned wall_threads; /* wall: threads signalled per tick, 0 all (DNP_ENV_SAMPLE_WALL_THREADS) */
    unsigned wall_cursor;  /* wall: the slot where the next tick's turn starts */
    unsigned wall_most;    /* wall: the most threads seen at one tick */
    int wall_timers;       /* wall: a timer per thread signals it (no signal sent by the sampler thread) */
    int wall_idle;         /* wall, signalled by the sampler thread: a thread waiting in a system call is
                            * sampled without a signal (sampler_signal.c, wall_quiet) */
    uint64_t wall_again, wall_probes; /* wall: samples counted again so; the looks that asked */
    uint64_t wall_remote;             /* wall: samples of waiting threads walked from a copy, no signal */
    uint64_t wall_unwalked;           /* wall: such walks that could not be whole or kept: signalled */
    unsigned wall_stride;  /* wall: each thread's timer fires every wall_stride periods */
    unsigned wall_timed, wall_untimed; /* wall: threads given a timer; threads whose timer was refused */

    anode *nodes;
    uint32_t nnodes;
    uint32_t *hash; /* node index + 1, 0 empty; hash_cap slots, grown to NODE_HASH */
    uint32_t hash_cap;
    uint32_t *dirty;
    uint32_t ndirty;
    named *named; /* NAMED_MAX, by tid */
    uint32_t nnamed;
    uint16_t *named_due; /* NAMED_MAX / 2: the entries sampled since the last emit (names_refresh) */
    uint32_t nnamed_due;

    /* Return addresses after which the code keeps no frame (a Tier1 wrapper:
     * push rax; call; add rsp, 8; ret), so the chain skips its caller: the
     * address << 8 | the slot of its own return address above the callee's
     * CFA + 1. Written by the sampler thread, read by the handler. */
    _Atomic uint64_t *frameless;
    _Atomic uint64_t *patchpoints; /* return addresses of OSR patchpoint calls in Tier0 code, for the handler */
    uint64_t frameless_found; /* callers the table gave */
    atomic_ullong frameless_learned; /* entries published: one since a record's walk says it may lack it */
    atomic_ullong misdirected; /* process timer signals taken by a thread asleep (sampler_signal.c) */

    /* The address cache: entries filled in order (ncache of IP_CACHE / 2,
     * never moved: callers hold them), found through cache_ix (entry index +
     * 1, 0 empty; cache_cap slots, grown to IP_CACHE). Both start small and
     * grow as they fill: a table the size of the largest, hashed at random,
     * took a page fault per new address (about 5 us each in a VM). */
    ipent *cache;
    uint32_t *cache_ix;
    uint32_t ncache, cache_cap;
    uint64_t cache_born;

    xrange *exec;   /* the executable mappings, by address (/proc/self/maps) */
    size_t nexec, capexec;
    uint64_t exec_born;
    uint32_t exec_gen; /* bumped by every read */
    uint64_t exec_pc_quiet; /* no reading for an unlisted PC before then */

    uint32_t waiting_name, unknown_name, stopped_name, deep_name, pause_name;
    uint32_t jit_name;
    uint32_t gc_names[3]; /* "[GC gen0]".. made when first needed */
    int resolving_pc; /* resolve() is naming an interrupted PC */
    uint64_t samples, dropped, truncated; /* samples: periods (the samples' weights) */
    atomic_ullong threads; /* slots made: threads sampled */
    uint64_t instants; /* the samples behind them: stacks taken, or counted again (SampleWeights) */
    uint64_t win_instants, win_periods; /* the same at the last window's end (sampler_window.c) */
    uint64_t fixed; /* samples whose caller came from the stack, not the frame pointer */
    uint64_t guessed, stopped, native_cfi; /* native leaves whose caller was guessed; walks stopped; leaves unwound */
    uint64_t deep;                         /* stacks cut at MAX_DEPTH frames */
    uint64_t scans, maps_reads, maps_queries, resolves, cpu_ns; /* the sampler's own work, for a note */
    atomic_int window_asked; /* a window ends: the sampler thread adds its samples (sampler_window.c) */
    atomic_int checkpoint_asked;   /* sampler_checkpoint: write the trees now */
    atomic_uint checkpoint_done;   /* checkpoints written */
} sampler_state;

extern sampler_state sampler_s;
#define S sampler_s /* the short name, in the sampler's files only */

/* A waiting thread's frames as they lie on its stack: the hash of the return
 * addresses at their places (off[k] words above SP, in w). Its locals are left
 * out: a wait that goes round its loop again writes new ones (a tick count),
 * in the same frames. Async-signal-safe. */
static inline uint64_t idle_hash(const uint64_t *w, const uint16_t *off, unsigned n) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (unsigned k = 0; k < n; k++)
        h = (h ^ off[k] ^ w[off[k]] * 0xc2b2ae3d27d4eb4full) * 0x100000001b3ull;
    return h ^ n;
}

/* The samples a slot holds for the sampler thread: head written by the
 * handler, tail by the sampler. Async-signal-safe. */
static inline srec *slot_ring(const sslot *s) {
    return S.rings + (size_t)(s - S.slots) * RING;
}

uint64_t sampler_now_ns(void);

/* The signal side (sampler_walk.c): one sample of the interrupted thread into
 * its slot's ring. Async-signal-safe. */
void sampler_take_sample(sslot *s, const void *ucontext, uint32_t weight);
/* Wall mode, the sampler thread, a thread waiting in a system call at sp and
 * pc (the kernel's view, /proc/self/task/TID/syscall) whose handler is not
 * running: its sample walked from a copy of its stack (memread_view), with no
 * signal to wake it, into its ring but not yet published: 1, or 0 when the
 * walk cannot be whole that way (the leaf's library without tables yet, a
 * frame pointer no native frame saved, the ring full, arm64) and a signal
 * must take it. sampler_remote_commit publishes it once the caller has seen
 * that the thread did not run meanwhile; else it is dropped by not. */
int sampler_take_remote(sslot *s, uint64_t pc, uint64_t sp, uint32_t weight);
void sampler_remote_commit(sslot *s);
/* Between the chain's frame at fp and the next, next, the return address an
 * OSR method's frame keeps off the chain: candidates after words equal to
 * next, marked in r->extra, into r->ip[*n..] (sampler_walk.c). In place when
 * safe is 0. Async-signal-safe. */
void sampler_osr_scan(srec *r, uint32_t *n, uint64_t fp, uint64_t next, int safe, unsigned *budget);
/* The same signal, for --calls' times (calls_sample): the interrupted PC. */
void sampler_calls_sample(const void *ucontext, uint32_t weight);

/* Timers and signals (sampler_signal.c), the sampler thread's side. */
int sampler_handler_install(void);
void sampler_handler_remove(void);
void sampler_signal_all(uint64_t now);
/* A new slot's timer or perf event, as the mode wants (none for the process
 * timer, nor for wall mode signalled by the sampler thread); under the arm lock. */
void sampler_slot_arm(sslot *s, int tid);
void sampler_slot_disarm(sslot *s);
/* Wall mode with timers: the threads' timers spread again over the ticks as their number changes. */
void sampler_wall_restride(void);
/* Wall mode: a thread that ended (ended_ns), its samples drained: the time
 * from its last sample to its end counted to that sample's stack, once. */
void sampler_wall_tail(sslot *s, uint32_t tid);

/* The threads and their slots (sampler_threads.c). */
#define SLOT_CLAIMING INT_MIN /* a slot's tid while its claimant sets it up */
/* Held while slots are armed or disarmed: by the scan, by a thread arming its
 * own slot, by a change of clock and by the stop. */
void sampler_arm_lock(void);
void sampler_arm_unlock(void);
void sampler_scan_threads(void);
void sampler_find_stacks(void);
/* The calling thread (tid, its id) starts: its slot made and armed now, with
 * its stack's bounds from the thread library (its first samples are walked in
 * place, and /proc/self/maps is not read for it). Any thread but the
 * sampler's, outside signal handlers. */
int sampler_thread_here(int tid); /* 1: it has a slot; 0: left to the next scan */
void sampler_task_dir_close(void); /* the scan's /proc/self/task (a detach leaves no descriptor) */
/* The calling thread's slot, claimed at its first signal if it has none. Async-signal-safe. */
sslot *sampler_slot_self(void);
/* DNP_ENV_SAMPLE_TIMERS=process: one timer on the process's CPU clock, its
 * signal taken by the thread that ran (Linux 6.4+): 0, or -1 (said why). */
int sampler_process_timer_start(void);
/* Whether this kernel delivers a process timer's signal to the thread that ran (Linux 6.4+). */
int sampler_process_timer_fits(void);
void sampler_process_timer_stop(void);
/* auto (S.perf_auto): from the program's context switches per second of CPU
 * since the last call, perf events give way to the tick-grained POSIX timers
 * when they switch too often (their cost is per switch). Sampler thread. */
int sampler_switches_check(uint64_t now); /* 1: they gave way now */
/* The closing note of a run that kept perf events and switched threads very often. */
void sampler_switches_note(void);

/* Addresses (sampler_resolve.c). */
void sampler_cache_clear(uint64_t now);
void sampler_exec_refresh(void);
int sampler_exec_find(uint64_t a);
const ipent *sampler_resolve(uint64_t ip);
int sampler_is_return_address(uint64_t addr);
void sampler_prefetch_calls(const uint64_t *ips, uint32_t n);
int sampler_leaf_slot(uint64_t ip);
void sampler_frameless_learn(uint64_t ret);
int sampler_frameless_slot(uint64_t ret); /* async-signal-safe: -1 none */
void sampler_frameless_clear(void);
/* A return address of an OSR patchpoint call (the chain's frame above it an
 * OSR method's, which skips the Tier0 frame), learned by the sampler thread
 * where the handler's look found the skipped caller; the handler then looks
 * above such a frame whatever the sample's budget left (async-signal-safe). */
void sampler_patchpoint_learn(uint64_t ret);
int sampler_patchpoint_known(uint64_t ret);

/* The trees (sampler_aggregate.c). */
/* Returns the stack's leaf node, 0 when the trees were full. */
uint32_t sampler_aggregate(uint32_t tid, const uint64_t *funcs, const uint32_t *names, uint32_t n, uint32_t w);
/* The stack that ends at leaf counted again, w periods more (a thread still
 * waiting where its last sample found it). */
void sampler_aggregate_again(uint32_t tid, uint32_t leaf, uint32_t w);
void sampler_drain(void);
/* Every held sample of a collection's pause counted as it reads (the sampler's stop). */
void sampler_pause_settle_all(void);
void sampler_emit_dirty(void);

/* Windows (sampler_window.c): the flush function joins the window thread's
 * list; the sampler thread answers a window's end with sampler_window_emit. */
void sampler_window_join(void);
void sampler_window_emit(void);
/* The trace's note on native unwinding (sampler_unwind.c). */
void sampler_unwind_note(void);
/* An index of entry numbers + 1 (0 empty, linear probing; *cap slots, a
 * power of two) made twice as large, up to most, with entries [first, n)
 * each at home(i, cap): the trees' and the address cache's, grown as they
 * fill (sampler_resolve.c). 0, or -1 when at most or out of memory (it stays). */
int sampler_index_grow(uint32_t **ix, uint32_t *cap, uint32_t most, uint32_t first, uint32_t n,
                       uint32_t (*home)(uint32_t i, uint32_t cap));
/* Where parsed unwind tables are kept (unwind.h), from the settings. */
void sampler_unwind_setup(void);
void sampler_unwind_counts(uint32_t flags);

/* The runtime's work as frames (sampler_runtime.c). */
struct agent_config;
void sampler_runtime_configure(const struct agent_config *cfg, uint32_t *mask, uint32_t *mask_high);
void sampler_jit_frame(uint64_t *funcs, uint32_t *names, uint32_t *m, uint32_t cap, uint64_t fid, uint32_t jit_top);
uint32_t sampler_gc_now(int tid); /* async-signal-safe */
int sampler_gc_paused(int tid);   /* a collection holds the runtime suspended, not by tid; async-signal-safe */
/* runtime: the leaf's native frames (under the innermost managed one) include the runtime's own code */
void sampler_gc_frame(uint64_t *funcs, uint32_t *names, uint32_t *m, uint32_t cap, uint32_t gc, int runtime);

/* Suspend mode (sampler_suspend.c): one round of the runtime's stack walks. */
void sampler_suspend_sample(void);

#endif
