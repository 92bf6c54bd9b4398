/* sampler.c: the sampling profiler's start, stop and thread (sampler.h,
 * docs/sampling.md). The files of the sampler, one seam each:
 *   sampler_signal.c     timers and signals: perf events, POSIX CPU timers,
 *                        the wall-clock signals, the thread scan
 *   sampler_walk.c       the signal handler's stack walk into a ring
 *   sampler_resolve.c    addresses to names, return addresses
 *   sampler_aggregate.c  rings to trees, SampleNode events, thread names
 *   sampler_suspend.c    --sample=suspend
 * Everything but the handler runs on the sampler thread (sampler_main). */
#include "sampler_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "callbacks.h"
#include "calls.h"
#include "settings.h"
#include "symbols.h"
#include "unwind.h"
#include "memread.h"

sampler_state sampler_s;

/* Which clock signals the threads in cpu mode, said once: 1. */
static int note_cpu_clock(void) {
    rec_note(0, "cpu sampling by %s", S.process_timer ? (S.process_timer_auto ? "one POSIX timer on the process's CPU time (the default at this rate; " DNP_ENV_SAMPLE_TIMERS "=0 for perf events), its signal taken by the thread that ran: tick-grained" : "one POSIX timer on the process's CPU time (" DNP_ENV_SAMPLE_TIMERS "=process), its signal taken by the thread that ran: tick-grained") : S.perf > 0 ? (S.perf_exclude_kernel ? "perf task-clock events, user time only (perf_event_paranoid)" : "perf task-clock events") : "POSIX CPU timers (perf events refused, or " DNP_ENV_SAMPLE_TIMERS "=1): tick-grained");
    return 1;
}

static void *sampler_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "dnprof-sampler"); /* in top, perf and the trace's own thread list; by
                                                           * itself: one prctl, not /proc/self/task/TID/comm */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    S.sampler_tid = gettid(); /* not agent_tid: this thread's first use of the agent's thread-local block
                               * would allocate it (0.17 ms in a VM) for nothing else */
    uint64_t now = sampler_now_ns(), next_scan = 0, next_emit = now + EMIT_MS * 1000000ull, started = now;
    /* The process timer's signal finds or claims its thread's slot itself (sampler_slot_self): its
     * first scan, which frees the slots of threads gone, waits a scan's period (a program of a tenth
     * of a second pays none: BENCHMARKS.md, "The fixed cost, sixth round") */
    if (S.process_timer)
        next_scan = now + SCAN_MS * 1000000ull;
    int timed = S.mode == SAMPLER_CPU || (S.mode == SAMPLER_WALL && S.wall_timers); /* signals not sent from here */
    /* timed: each thread's ring (RING samples) drained by a quarter full, within 1-100 ms: 80 ms at 100 Hz,
     * 8 ms at 1 kHz, 1.6 ms at 5 kHz, where the 10 ms of before let a third of the samples fall out of full
     * rings on a busy machine. Each wake-up is a timer and a futex, 50-80 us in a VM: the cap of 50 ms
     * before cost a program 20 of them a second whatever its rate (BENCHMARKS.md, "The fixed cost, sixth
     * round"); the scan's 100 ms needs no more */
    uint64_t tick = timed ? S.period_ns * RING / 4 : S.period_ns;
    if (timed)
        tick = tick < 1000000ull ? 1000000ull : tick > 100000000ull ? 100000000ull : tick;
    uint64_t next = now, next_slow = now;
    int noted = 0;
    while (!atomic_load(&S.stop)) {
        now = sampler_now_ns();
        /* a tick under 10 ms only drains the rings; the rest of the work stays every 10 ms (at 5 kHz the
         * whole of it every 1.6 ms cost 70 ms of CPU a second, 24 before) */
        int slow = now >= next_slow;
        if (slow)
            next_slow = now + 10000000ull;
        if (slow && S.mode != SAMPLER_SUSPEND)
            sampler_find_stacks(); /* first: until a thread's stack is known, each of its samples reads
                                    * through a system call per frame (about 50 each) */
        if (S.mode == SAMPLER_CPU && !noted && (S.perf || S.process_timer))
            noted = note_cpu_clock();
        int scanned = 0;
        if (S.mode != SAMPLER_SUSPEND && (now >= next_scan || atomic_exchange(&S.rescan, 0))) {
            sampler_scan_threads();
            scanned = 1;
            next_scan = now + SCAN_MS * 1000000ull;
        }
        /* perf events give way to a timer in a program that switches threads often: looked at every
         * tick in the first second, then at each scan */
        if (S.mode == SAMPLER_CPU && (scanned || (slow && now - started < 1000000000ull)) && sampler_switches_check(now))
            rec_note(0, "cpu sampling: the program switched threads %.0f times per second of CPU, and a perf event "
                        "costs at every switch of its thread; so after %.2f s, %s sampled instead: tick-grained, "
                        "each sample weighted by the periods it stands for (" DNP_ENV_SAMPLE_TIMERS "=0 keeps perf "
                        "events; docs/sampling.md)",
                     S.sw_rate, (double)(now - started) / 1e9,
                     S.process_timer ? "one POSIX timer on the process's CPU time" : "a POSIX CPU timer per thread");
        if (S.mode == SAMPLER_WALL)
            sampler_signal_all(now); /* the threads without a timer of their own */
        else if (S.mode == SAMPLER_SUSPEND)
            sampler_suspend_sample();
        int stale = slow && atomic_exchange(&S.stale, 0);
        if (stale)
            sampler_frameless_clear();
        if (stale || now - S.cache_born >= CACHE_MS * 1000000ull)
            sampler_cache_clear(now);
        if (S.mode != SAMPLER_SUSPEND) {
            if (slow && S.unwind) /* the tables of libraries loaded since (one look when none was); the
                                   * first time every library's, here rather than on the thread that
                                   * starts the runtime: its start-up does not wait for them */
                unwind_refresh(0);
            sampler_drain();
        }
        if (atomic_load(&S.window_asked))
            sampler_window_emit(); /* a window ends (sampler_window.c) */
        if (atomic_exchange(&S.checkpoint_asked, 0)) { /* sampler_checkpoint: never asked in suspend mode */
            sampler_drain();
            sampler_emit_dirty();
            atomic_fetch_add(&S.checkpoint_done, 1);
        }
        if (now >= next_emit) {
            /* A node that keeps changing is written once per period: periods
             * that grow with the run keep an hour's trace to a few hundred
             * writes of each hot path. */
            sampler_emit_dirty();
            uint64_t every = (now - started) / EMIT_FRACTION;
            next_emit = now + (every > EMIT_MS * 1000000ull ? every : EMIT_MS * 1000000ull);
        }
        next += tick;
        now = sampler_now_ns();
        if (next < now)
            next = now; /* behind: no burst to catch up */
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        pthread_mutex_lock(&S.stop_mu);
        while (!atomic_load(&S.stop) && !atomic_load(&S.checkpoint_asked) &&
               pthread_cond_timedwait(&S.stop_cv, &S.stop_mu, &ts) == 0) {
        }
        pthread_mutex_unlock(&S.stop_mu);
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        S.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    return NULL;
}

void sampler_checkpoint(unsigned wait_ms) {
    if (!S.thread_running || !S.walk || S.mode == SAMPLER_SUSPEND || agent_tid() == S.sampler_tid)
        return;
    unsigned done = atomic_load(&S.checkpoint_done);
    atomic_store(&S.checkpoint_asked, 1);
    pthread_mutex_lock(&S.stop_mu);
    pthread_cond_broadcast(&S.stop_cv); /* its wait between ticks ends early */
    pthread_mutex_unlock(&S.stop_mu);
    struct timespec ms = {0, 1000000};
    for (unsigned waited = 0; waited < wait_ms && atomic_load(&S.checkpoint_done) == done; waited++)
        nanosleep(&ms, NULL);
}

void sampler_thread_started(uint32_t os) {
    if (!S.thread_running || S.mode == SAMPLER_SUSPEND || (int)os != agent_tid() || !sampler_thread_here((int)os))
        if (!S.process_timer) /* whose signal claims the thread's slot itself: no scan asked */
            atomic_store_explicit(&S.rescan, 1, memory_order_relaxed);
}

void sampler_code_unloaded(void) {
    atomic_store_explicit(&S.stale, 1, memory_order_relaxed);
}

void sampler_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    if (!cfg->sample) {
        if (cfg->calls == CALLS_MODE_SAMPLED) /* --calls' samples in the JIT, told apart */
            sampler_runtime_configure(cfg, mask, mask_high);
        return;
    }
    /* unloads, so that no address is named after code that went away */
    *mask |= 0x4u;       /* COR_PRF_MONITOR_MODULE_LOADS */
    *mask_high |= 0x4u;  /* COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS */
    if (cfg->sample == SAMPLER_SUSPEND)
        *mask |= 0x10000000u; /* COR_PRF_ENABLE_STACK_SNAPSHOT */
    sampler_runtime_configure(cfg, mask, mask_high);
}

/* The tables of fixed size, zero at first, in one mapping whose pages the
 * kernel gives as they are first touched: a run that takes few samples
 * touches few of them. (calloc cleared the small ones page by page, a fault
 * each in this guest, and mapped and unmapped the large ones one by one:
 * BENCHMARKS.md, "The fixed cost, sixth round".) The two indexes grow, so
 * they are the allocator's. */
static void *g_tables;
static size_t g_tables_len;

static int tables_map(void) {
    size_t o = 0, o_nodes, o_dirty, o_cache, o_fds, o_named, o_due, o_frameless, o_patch, o_slots, o_rings;
#define PLACE(at, bytes) (at = o, o += ((size_t)(bytes) + 4095) & ~(size_t)4095)
    PLACE(o_slots, MAX_SLOTS * sizeof(sslot));
    PLACE(o_rings, (size_t)MAX_SLOTS * RING * sizeof(srec));
    PLACE(o_nodes, MAX_NODES * sizeof *S.nodes);
    PLACE(o_dirty, MAX_NODES * sizeof *S.dirty);
    PLACE(o_cache, IP_CACHE / 2 * sizeof *S.cache);
    PLACE(o_fds, MAX_FDS * sizeof *S.fd_slot);
    PLACE(o_named, NAMED_MAX * sizeof *S.named);
    PLACE(o_due, NAMED_MAX / 2 * sizeof *S.named_due);
    PLACE(o_frameless, FRAMELESS * sizeof *S.frameless);
    PLACE(o_patch, FRAMELESS * sizeof *S.patchpoints);
#undef PLACE
    void *p = mmap(NULL, o, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    char *b = p;
    g_tables = p;
    g_tables_len = o;
    S.slots = (sslot *)(void *)(b + o_slots);
    S.rings = (srec *)(void *)(b + o_rings);
    S.nodes = (anode *)(void *)(b + o_nodes);
    S.dirty = (uint32_t *)(void *)(b + o_dirty);
    S.cache = (ipent *)(void *)(b + o_cache);
    S.fd_slot = (sslot **)(void *)(b + o_fds);
    S.named = (named *)(void *)(b + o_named);
    S.named_due = (uint16_t *)(void *)(b + o_due);
    S.frameless = (_Atomic uint64_t *)(void *)(b + o_frameless);
    S.patchpoints = (_Atomic uint64_t *)(void *)(b + o_patch);
    return 0;
}

static void release_memory(void) {
    free(S.hash);
    free(S.cache_ix);
    S.hash = S.cache_ix = NULL;
    free(S.exec);
    S.exec = NULL;
    S.nexec = S.capexec = 0;
    for (unsigned i = 0; S.slots && i < S.nslots; i++)
        free(S.slots[i].pause);
    if (g_tables)
        munmap(g_tables, g_tables_len);
    g_tables = NULL;
    S.slots = NULL;
    S.rings = NULL;
    S.nodes = NULL;
    S.dirty = NULL;
    S.cache = NULL;
    S.fd_slot = NULL;
    S.named = NULL;
    S.named_due = NULL;
    S.frameless = NULL;
    S.patchpoints = NULL;
}

/* Which clock signals the threads (DNP_ENV_SAMPLE_TIMERS), and wall mode's turns. */
static void timers_configure(const agent_config *cfg) {
    /* DNP_ENV_SAMPLE_TIMERS=1: POSIX CPU timers even where perf events work
     * (cheaper in some VMs, tick-grained: docs/sampling.md) */
    S.perf = cfg->sample_timers == 1 || cfg->sample_timers == 2 ? -1 : 0;
    S.perf_exclude_kernel = 0;
    S.perf_auto = 0; /* set once the process timer is known not to sample (sampler_start) */
    S.sw_cpu_ns = S.sw_count = S.sw_from_ns = 0;
    S.sw_rate = 0;
    /* auto: the process timer where it is cheapest and its tick-grained
     * instants are denser than the samples (BENCHMARKS.md, issue 26) */
    S.process_timer_auto = cfg->sample_timers == 3 && S.walk && S.rate <= AUTO_PROCESS_HZ && sampler_process_timer_fits();
    S.process_timer = (cfg->sample_timers == 2 || S.process_timer_auto) && S.mode == SAMPLER_CPU;
    S.wall_threads = (unsigned)cfg->sample_wall_threads;
    S.wall_cursor = S.wall_most = 0;
    /* wall (BENCHMARKS.md): auto, the sampler thread wakes every period and signals each thread
     * itself, but a thread still waiting where its last sample found it is counted again without a
     * signal; 0 the same, every thread signalled; 1 or process, a timer per thread */
    S.wall_timers = S.mode == SAMPLER_WALL && (cfg->sample_timers == 1 || cfg->sample_timers == 2);
    S.wall_idle = S.mode == SAMPLER_WALL && !S.wall_timers && cfg->sample_timers != 0 && !S.calls;
    S.wall_again = S.wall_probes = S.wall_remote = S.wall_unwalked = 0;
    S.wall_stride = 1;
    S.wall_timed = S.wall_untimed = 0;
}

/* The frames that stand for what is not a function: a waiting thread, an
 * address not known, a walk stopped in native code, a stack cut at MAX_DEPTH. */
static void name_pseudo_frames(void) {
    S.waiting_name = rec_string("[waiting]", 9);
    S.unknown_name = rec_string("[unknown]", 9);
    S.stopped_name = rec_string("[unwinding stopped]", 19);
    S.pause_name = rec_string("[GC pause]", 10);
    char deep[48];
    int deep_len = snprintf(deep, sizeof deep, "[deeper than %u frames]", MAX_DEPTH);
    S.deep_name = rec_string(deep, (size_t)deep_len);
}

int sampler_start(const agent_config *cfg) {
    unsigned calls_rate = calls_sample_rate();
    if ((!cfg->sample && !calls_rate) || S.thread_running)
        return 0;
    /* --calls' times ride on --sample's signals, at its rate; alone, on CPU-time
     * signals of their own that walk nothing */
    S.walk = cfg->sample != SAMPLER_OFF;
    S.mode = S.walk ? cfg->sample : SAMPLER_CPU;
    S.calls = calls_rate && S.mode != SAMPLER_SUSPEND;
    if (calls_rate && !S.calls)
        rec_note(1, "calls: --sample=suspend sends no signals, so the calls have counts and no times "
                    "(--calls=timed times each call)");
    S.rate = !S.walk ? calls_rate : cfg->sample_rate ? cfg->sample_rate : dnp_setting_default(DNP_SET_SAMPLE_RATE);
    S.period_ns = 1000000000ull / S.rate;
    S.nnodes = 1; /* 0 is every tree's root */
    S.nslots = 0;
    S.ndirty = 0;
    S.samples = S.dropped = S.truncated = S.threads = S.fixed = S.instants = 0;
    S.win_instants = S.win_periods = 0;
    S.guessed = S.stopped = S.native_cfi = S.deep = 0;
    S.maps_reads = S.maps_queries = 0;
    S.unwind = S.walk && cfg->sample_unwind && cfg->sample != SAMPLER_SUSPEND;
    sampler_unwind_setup();
    atomic_store(&S.stop, 0);
    if (S.mode == SAMPLER_SUSPEND && !AGENT_HAS_INFO(SuspendRuntime)) {
        agent_say("--sample=suspend needs ICorProfilerInfo10 (.NET Core 3.0 or later); no samples");
        return -1;
    }
    S.hash = calloc(HASH_FIRST, sizeof *S.hash);
    S.hash_cap = HASH_FIRST;
    S.cache_ix = calloc(HASH_FIRST, sizeof *S.cache_ix);
    S.cache_cap = HASH_FIRST;
    S.ncache = 0;
    S.frameless_found = 0;
    atomic_store(&S.frameless_learned, 0);
    atomic_store(&S.misdirected, 0);
    S.ptimer_used = 0;
    S.nnamed = S.nnamed_due = 0;
    timers_configure(cfg);
    if (!S.hash || !S.cache_ix || tables_map() != 0) {
        release_memory();
        agent_say("no memory for the sampler's trees; no samples");
        return -1;
    }
    S.cache_born = sampler_now_ns();
    name_pseudo_frames();
    memset(S.gc_names, 0, sizeof S.gc_names);
    S.jit_name = 0;
    sampler_exec_refresh();
    if (S.mode != SAMPLER_SUSPEND && sampler_handler_install() != 0) {
        release_memory();
        return -1;
    }
    if (S.walk)
        REC(SampleConfig, (uint64_t)S.mode, S.rate, S.period_ns);
    if (S.calls)
        REC(CallsSampling, (uint64_t)S.mode, S.rate, S.period_ns);
    if (!S.cv_ready) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&S.stop_cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&S.stop_mu, NULL);
        S.cv_ready = 1;
    }
    atomic_store(&S.running, 1);
    if (S.process_timer && sampler_process_timer_start() != 0)
        S.process_timer = 0; /* said why: per-thread timers instead */
    /* auto chose perf events (above AUTO_PROCESS_HZ, or no process timer): they give way in a program
     * that switches threads often (sampler_switches_check); not under --calls, whose times want them */
    S.perf_auto = cfg->sample_timers == 3 && S.mode == SAMPLER_CPU && S.walk && !S.calls && !S.process_timer &&
                  S.perf == 0;
    if (pthread_create(&S.thread, NULL, sampler_main, NULL) != 0) {
        atomic_store(&S.running, 0);
        agent_say("cannot start the sampler thread; no samples");
        release_memory();
        return -1;
    }
    S.thread_running = 1;
    if (S.walk)
        sampler_window_join();
    return 0;
}

void sampler_stop(int exiting) {
    if (!S.thread_running)
        return;
    pthread_mutex_lock(&S.stop_mu);
    atomic_store(&S.stop, 1);
    pthread_cond_broadcast(&S.stop_cv);
    pthread_mutex_unlock(&S.stop_mu);
    pthread_join(S.thread, NULL);
    S.thread_running = 0;
    sampler_arm_lock(); /* no thread arms its own slot after this */
    atomic_store(&S.running, 0);
    sampler_process_timer_stop();
    for (unsigned i = 0; i < S.nslots; i++)
        sampler_slot_disarm(&S.slots[i]);
    sampler_arm_unlock();
    sampler_handler_remove();
    sampler_drain(); /* what is left in the rings: nothing writes them now */
    sampler_pause_settle_all();
    if (!S.walk) {
        if (!exiting)
            release_memory();
        memread_mapping_close();
        sampler_task_dir_close();
        return;
    }
    sampler_emit_dirty();
    REC(SampleStats, S.samples, S.dropped, S.truncated, S.threads);
    REC(SampleWeights, S.instants, S.samples);
    rec_note(0, "sampler thread: %.1f ms of CPU, %llu thread scans, %llu reads of /proc/self/maps, %llu mappings "
                "asked of the kernel (PROCMAP_QUERY), %llu addresses resolved, %llu callers found at the stack "
                "pointer (prologue, epilogue, frameless code), %llu callers of frameless managed code found above "
                "its callee",
             (double)S.cpu_ns / 1e6, (unsigned long long)S.scans, (unsigned long long)S.maps_reads,
             (unsigned long long)S.maps_queries, (unsigned long long)S.resolves, (unsigned long long)S.fixed,
             (unsigned long long)S.frameless_found);
    sampler_unwind_note();
    sampler_switches_note();
    if (S.process_timer && S.ptimer_used)
        rec_note(0, "process timer: %llu of its signals reached a thread asleep in a system call, which had not run "
                    "(the CPU was a thread's that blocks the signal, such as the sampler's): not counted",
                 (unsigned long long)atomic_load(&S.misdirected));
    if (S.mode == SAMPLER_WALL && S.wall_threads && S.wall_most > S.wall_threads)
        rec_note(0, "wall sampling: up to %u threads, %u signalled per tick in turn (" DNP_ENV_SAMPLE_WALL_THREADS
                    "), so each was sampled about every %.1f ticks and its samples weigh that many",
                 S.wall_most, S.wall_threads, (double)S.wall_most / S.wall_threads);
    if (S.mode == SAMPLER_WALL)
        rec_note(0, "wall sampling: %u threads signalled by a timer of their own, %u by the sampler thread%s",
                 S.wall_timed, S.wall_timers ? S.wall_untimed : (unsigned)S.threads,
                 S.wall_timers ? " (" DNP_ENV_SAMPLE_TIMERS "=1)" : "");
    if (S.wall_idle)
        rec_note(0, "wall sampling: %llu samples of threads still waiting where their last sample found them, "
                    "counted again without a signal, and %llu of threads found waiting elsewhere, walked from a "
                    "copy of their stack without a signal (%llu such walks not whole, signalled instead; %llu looks "
                    "at /proc/self/task/TID/syscall)",
                 (unsigned long long)S.wall_again, (unsigned long long)S.wall_remote,
                 (unsigned long long)S.wall_unwalked, (unsigned long long)S.wall_probes);
    rec_note(0, "sampler memory reads: %s", memread_path());
    if (exiting)
        return;
    release_memory();
    symbols_release();
    unwind_release();
    memread_mapping_close(); /* a detached agent leaves no descriptor behind */
    sampler_task_dir_close();
}
