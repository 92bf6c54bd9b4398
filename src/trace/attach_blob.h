/* attach_blob.h: the client-data blob `dnprof attach` sends with the runtime's
 * AttachProfiler command and the agent receives in InitializeForAttach (docs/design-notes.md#attach:
 * the environment cannot reach a running process, so the configuration travels
 * here). Written by the front end, parsed by the agent: the parser trusts nothing.
 *
 *   header  "DNPA" u16 version u16 header_size u32 total_size   (12 bytes, LE)
 *   fields  u16 tag  u16 length  bytes[length]                  repeated
 *
 * total_size is the whole blob and must equal what arrived. Each tag appears at
 * most once; unknown tags are skipped by their length (a newer front end may add
 * fields); a field that runs past the end, a string with a NUL in it or too long
 * for its buffer, a number of the wrong size: the blob is refused. */
#ifndef DNP_ATTACH_BLOB_H
#define DNP_ATTACH_BLOB_H

#include <stddef.h>
#include <stdint.h>

#define DNP_BLOB_MAGIC "DNPA"
#define DNP_BLOB_VERSION 1
#define DNP_BLOB_HEADER_SIZE 12
/* The diagnostics IPC header holds the message size in 16 bits: with the agent's
 * path, the blob must fit well within that. */
#define DNP_BLOB_MAX 16384

enum {
    DNP_BLOB_EVENTS = 1,      /* text: families or a hex mask (families.h) */
    DNP_BLOB_OUTPUT = 2,      /* text: absolute trace path */
    DNP_BLOB_FLUSH_MS = 3,    /* u32: background flush period */
    DNP_BLOB_CONTROL_DIR = 4, /* text: the private directory of the control socket */
    DNP_BLOB_TRIGGER_PID = 5, /* u32: the dnprof process that asked, for the trace's notes */
    DNP_BLOB_ALLOC = 6,       /* u32: 1 for sampled allocations (--alloc) */
    DNP_BLOB_EXC_STACKS = 7,  /* u32: 1 for a stack snapshot at each throw (attach --exceptions) */
    /* sampling (dnprof attach --sample, docs/sampling.md) */
    DNP_BLOB_SAMPLE = 8,      /* u32: agent_config.sample (1 cpu, 2 wall, 3 suspend) */
    DNP_BLOB_SAMPLE_RATE = 9, /* u32: samples per second per thread */
    /* lock contention (dnprof attach --locks, docs/waits.md) */
    DNP_BLOB_LOCKS = 10,      /* u32: agent_config.locks (1 contention, 2 and waits) */
    /* a program in a container (docs/containers.md) */
    DNP_BLOB_HOST_PID = 11,   /* u32: its pid as the host (dnprof) sees it, 0 in the same PID namespace */
    /* GC pauses and thread-pool starvation (dnprof attach --gc, --threadpool; docs/waits.md) */
    DNP_BLOB_GC = 20,         /* u32: 1 for GC statistics */
    DNP_BLOB_THREADPOOL = 21, /* u32: 1 for the thread pool's adjustments */
    /* continuous profiling (dnprof attach --every, docs/production.md) */
    DNP_BLOB_EVERY = 30,       /* u32: a window's length in ms, 0 none */
    DNP_BLOB_WINDOW_DIR = 31,  /* text: where the windows go */
    DNP_BLOB_WINDOW_KEEP = 32, /* u32: windows that may wait for a reader */
    /* traced methods (dnprof attach --trace, docs/calls.md) */
    DNP_BLOB_TRACE = 40,       /* text: the methods' patterns */
};

#define DNP_BLOB_EVENTS_MAX 1024
#define DNP_BLOB_PATH_MAX 4096
#define DNP_BLOB_DIR_MAX 96 /* the socket path must fit sockaddr_un (108) */

/* The agent's control socket (src/agent/control.h): in the control directory,
 * one per process; commands and replies are lines of text. */
#define DNP_CONTROL_SOCKET_FMT "%s/agent.%ld.sock"
/* What the agent said while it attached (why it refused, what it left out):
 * written by the agent during InitializeForAttach, read and removed by dnprof. */
#define DNP_CONTROL_LOG_FMT "%s/agent.%ld.log"
#define DNP_CONTROL_DETACH "detach"
#define DNP_CONTROL_STATUS "status"
#define DNP_CONTROL_DETACHED "detached" /* "detached <events>": the trace is complete */
/* "detached <events> inert": the trace is complete, but the runtime refused to
 * unload the agent after a ReJIT (--trace): it stays loaded, recording nothing */
#define DNP_CONTROL_INERT "inert"
/* Heap snapshots (docs/heap.md): "snapshot <absolute path>" -> "ok snapshot
 * <objects> <bytes> <pause_ns> <file bytes>" or "error <why>". An agent loaded
 * at start-up (dnprof run) serves it on a socket of its own, which it creates
 * in the control directory when it records gc events. */
#define DNP_CONTROL_SNAPSHOT "snapshot"
#define DNP_CONTROL_RUN_SOCKET_FMT "%s/run.%ld.sock"

typedef struct dnp_attach_blob {
    char events[DNP_BLOB_EVENTS_MAX];
    char output[DNP_BLOB_PATH_MAX];
    char control_dir[DNP_BLOB_DIR_MAX];
    uint32_t flush_ms;    /* 0: the default */
    uint32_t trigger_pid; /* 0: unknown */
    uint32_t alloc;       /* sampled allocations: 1 on */
    uint32_t exc_stacks;  /* 1: a stack snapshot at each throw */
    /* sampling */
    uint32_t sample;      /* 0: off */
    uint32_t sample_rate; /* 0: the default */
    /* lock contention */
    uint32_t locks;       /* 0: off */
    /* GC pauses and thread-pool starvation */
    uint32_t gc;          /* 1: GC statistics */
    uint32_t threadpool;  /* 1: the thread pool's adjustments and counters; 2: its state read from its objects (dnprof top) */
    /* windows */
    uint32_t every_ms;    /* 0: no windows */
    char window_dir[DNP_BLOB_PATH_MAX];
    uint32_t window_keep; /* 0: the default */
    /* traced methods */
    char trace[1024];     /* "": none */
    uint32_t host_pid;    /* the program's pid on the host when in another PID namespace, 0 otherwise */
} dnp_attach_blob;

/* Encodes b into buf. Returns the blob's size, or -1 when a string is too long
 * for its field or the blob does not fit cap. */
long dnp_attach_blob_encode(const dnp_attach_blob *b, uint8_t *buf, size_t cap);

/* Parses len bytes of data into out (all of it rewritten). Requires an output
 * path and a control directory, both absolute. Returns 0, or -1 with one line
 * in err saying what is wrong with the blob. */
int dnp_attach_blob_parse(const void *data, size_t len, dnp_attach_blob *out, char *err,
                          size_t errlen);

#endif
