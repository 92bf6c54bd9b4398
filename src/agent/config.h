/* config.h: what the agent is asked to do. At start-up it comes from the
 * environment (src/common/settings.def is the table of the variables); after an attach, from the blob the
 * trigger sent (attach.c). */
#ifndef DNP_CONFIG_H
#define DNP_CONFIG_H

#include <stddef.h>

typedef struct agent_config {
    char events[1024];   /* families or a hex mask (families.h); "" is the default */
    char output[4096];   /* the trace path, already made this process's own */
    int exclusive;       /* the trace must not exist yet */
    char output_alt[4096]; /* when output exists (another program under the SDK took it): this one, or "" */
    char session[4096];  /* session directory, "" for none */
    unsigned flush_ms;   /* background flush period, 0 for the default */
    unsigned host_pid;   /* by attach, a program in another PID namespace: its pid on the host (0: none) */
    /* method enter/leave (calls.c) */
    int calls;           /* CALLS_MODE_* (calls.h): the CALLS row's words by index */
    unsigned calls_rate; /* with CALLS_MODE_SAMPLED: samples per second per thread, 0 for the default */
    int all_code;        /* framework code too: no inlining, no ReadyToRun code */
    char include[1024];  /* comma-separated globs of functions to hook, "" for the default */
    char exclude[1024];  /* comma-separated globs of functions not to hook */
    /* IL bodies (il.c, dnprof run --il) */
    char il[1024];       /* comma-separated globs of the methods whose IL body is recorded, "" for none */
    /* traced methods (rejit.c, dnprof run/attach --trace) */
    char trace[1024];    /* comma-separated globs of the methods re-JIT-compiled with probes, "" for none */
    /* sampled allocations (alloc_sampling.c, dnprof run/attach --alloc) */
    int alloc;           /* 1: record sampled allocations with their stacks */
    int alloc_tick;      /* DNP_ENV_ALLOC_SOURCE=tick: AllocationTick even where AllocationSampled exists */
    int alloc_each;      /* DNP_ENV_ALLOC_EACH=1: one AllocSample per sample, not sums */
    /* lock contention (locks.c, dnprof run/attach --locks) */
    int locks;            /* 0 off, 1 contention, 2 contention and waits (the LOCKS row's words) */
    unsigned lock_slice_us; /* DNP_ENV_LOCKS_SLICE_US: a wait this long is also a LockWait (0: all) */
    /* exception stories (exceptions.c, issue 10 item 2): from DNP_ENV_EXC_STACKS
       at start-up, from the attach blob after an attach; never read elsewhere */
    int exc_stacks;      /* a stack snapshot at each throw */
    /* heap snapshot at exit (heap.c, dnprof run --heap-at exit) */
    char heap_at_exit[4096]; /* the snapshot's path, this process's own, or "" for none */
    /* sampling (sampler.c, docs/sampling.md) */
    int sample;           /* SAMPLER_OFF, _CPU, _WALL or _SUSPEND (sampler.h) */
    unsigned sample_rate; /* samples per second per thread, 0 for the default (100) */
    int sample_wall_threads; /* DNP_ENV_SAMPLE_WALL_THREADS: wall mode's threads signalled per tick, 0 all */
    int sample_timers;    /* DNP_ENV_SAMPLE_TIMERS: 0 perf events, 1 per-thread POSIX CPU timers, 2 one process CPU timer, 3 auto */
    /* GC pauses and thread-pool starvation (gc_stats.c, threadpool.c, dnprof run/attach --gc, --threadpool) */
    int gc;               /* 1: one GcCollection per collection */
    int threadpool;       /* 1: the thread pool's adjustments (starvation) and counters; 2 (state): its counters read from its objects (pool_state.c) */
    /* windows (windows.c, dnprof run --every, docs/production.md) */
    unsigned every_ms;        /* a window's length, 0: no windows */
    char window_dir[4096];    /* where they go, %p not yet expanded; "": the session directory */
    unsigned window_keep;     /* windows that may wait for a reader */
    int sample_unwind;    /* native frames by their unwind tables (unwind.h); DNP_ENV_SAMPLE_UNWIND=0: not */
    int async;            /* logical async stacks in samples (async.h); DNP_ENV_ASYNC=0: physical */
} agent_config;

/* Fills cfg from the environment. */
void config_from_env(agent_config *cfg);

/* The trace path for this process: DNP_ENV_OUTPUT with %p expanded, made unique
 * for a child process of the one it was meant for (DNP_ENV_ROOT_PID), or
 * dnprof-<pid>.trace in the working directory. *exclusive: must not exist yet.
 * alt: the path to take when out exists ("" none): under the SDK
 * (DNP_ENV_SDK_ASIDE), the first program writes the root's file. */
void config_output_path(char *out, size_t cap, int *exclusive, char *alt, size_t altcap);

/* 1 when DNP_ENV_SDK_ASIDE is set and this process is the .NET SDK's own
 * (the dotnet CLI, MSBuild, the compiler server: sdk_process.h): the agent
 * then records nothing, says nothing, and the program goes on. */
int config_sdk_aside(void);

/* The process's command line, arguments separated by spaces. */
void config_cmdline(char *out, size_t cap);

/* DNP_ENV_SAMPLE's text ("cpu", "wall", "suspend"; "" or "0" off) as agent_config.sample. */
int config_sample_mode(const char *text);

/* DNP_ENV_FLUSH_MS, 0 when unset; a bad value is said and the default used. */
unsigned config_flush_ms(void);

/* The perf map the runtime writes (DOTNET_PerfMapEnabled 1 or 3, in
 * DOTNET_PerfMapJitDumpPath or /tmp): its path, or "" when it writes none.
 * The runtime's settings, read from this process's environment. */
void config_perf_map(char *out, size_t cap);
/* Where parsed unwind tables are kept (DNP_ENV_UNWIND_CACHE, else the user's
 * cache directory); "" for nowhere. */
void config_unwind_cache(char *out, size_t cap);

/* DNP_ENV_SESSION: the front end's session directory, NULL or "" for none. */
const char *config_session_dir(void);

/* DNP_ENV_STDERR: the agent's messages go to stderr even with a front end. */
int config_say_stderr(void);

#endif
