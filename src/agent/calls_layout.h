/* calls_layout.h: the offsets of the per-thread call-tree structures (calls.c)
 * that the assembly fast paths (elt.S) read and write. Plain #defines, so
 * that the assembler can include it; calls.c checks every one of them against
 * offsetof (static assertions), so a change of a struct that forgets this file
 * does not build. */
#ifndef DNP_CALLS_LAYOUT_H
#define DNP_CALLS_LAYOUT_H

/* tls_slot: the table keyed by the thread pointer (calls_tls[]) */
#define CALLS_SLOTS_LOG2 11 /* 2048 slots */
#define CALLS_SLOT_SIZE 16
#define CALLS_SLOT_TP 0
#define CALLS_SLOT_T 8

/* calls_thread */
#define CALLS_T_STACK 0
#define CALLS_T_DEPTH 8
#define CALLS_T_CAP 12
#define CALLS_T_SKIPPED 16
#define CALLS_T_ROOT 24 /* chunks[0]: node 0, the root, first */
#define CALLS_T_NEXT_EMIT 2112
#define CALLS_T_COUNTDOWN 2128
#define CALLS_T_LAST 2192
#define CALLS_T_SKEW 2200
#define CALLS_T_BUSY 2248
#define CALLS_T_HIDDEN 2256

/* cframe */
#define CALLS_F_SIZE 40
#define CALLS_F_NODE 0
#define CALLS_F_CSP 8
#define CALLS_F_START 16
#define CALLS_F_CHILD 24
#define CALLS_F_NP 32

/* cnode */
#define CALLS_N_FN 0
#define CALLS_N_DIRTY 12
#define CALLS_N_SELF 20
#define CALLS_N_LAST_CHILD 24
#define CALLS_N_CALLS 32
#define CALLS_N_INCL 40
#define CALLS_N_EXCL 48
#define CALLS_N_PARENT_P 64
#define CALLS_CHUNK_BYTES (4096 * 72) /* a chunk of nodes: NODE_CHUNK of them */

/* calls_fn: the node a call of the function made or found last (any thread's) */
#define CALLS_FN_LAST 32

#endif
