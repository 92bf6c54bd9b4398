/* async_internal.h: what async.c (the probe, the chains, the samples) and
 * async_setup.c (CoreLib, the state machines, the resumes' new IL) share. Not
 * for the rest of the agent: async.h is its interface. */
#ifndef DNP_ASYNC_INTERNAL_H
#define DNP_ASYNC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "async.h"
#include "cli_metadata.h"

#define RESUMES 64           /* resumes in progress on one thread */
#define CALLERS 128          /* callers followed per resume */
#define STEPS (4 * CALLERS)  /* objects followed per resume (wrappers have no frame) */
#define CHAIN_NODES (1u << 18)
#define CHAIN_HASH (1u << 19)
#define TYPES (1u << 13)
#define TYPE_HASH (1u << 14)
#define TLS_SLOTS (1u << 12)
#define PLUMB_TOKENS 8

enum { K_NONE, K_BOX, K_POOLBOX, K_TASK, K_ACTION_OWNER, K_DELEGATE, K_WRAPPER, K_OTHER };

/* What an object of one class (its MethodTable, the ClassID) is to a chain. */
typedef struct atype {
    uintptr_t mt;
    uint8_t kind;
    uint8_t main; /* a box of an async Main */
    uint8_t retry; /* not known yet (its state machine's MoveNext not noted): not kept */
    uint32_t off; /* where the next object's address is, from the object's start */
    uint64_t fid; /* a box: its state machine's MoveNext */
    uint32_t name;
} atype;

typedef struct chain_node {
    uint32_t parent; /* 0: the outermost */
    uint32_t name;
    uint64_t fid;    /* 0: "[async caller unknown]" */
} chain_node;

typedef struct resume {
    uintptr_t home; /* the address of its box's `this` in the MoveNext's frame: where on the stack it is */
    uint64_t resumed;
    uint32_t chain, name;
    uint32_t entered; /* the enter hook of the resumed method saw it (async_calls_callers) */
    uint32_t pending; /* nobody had awaited the box when it resumed: its chain may be found later (async_resolve) */
} resume;

typedef struct athread {
    _Atomic uint32_t depth;
    resume r[RESUMES];
} athread;

typedef struct tls_slot {
    _Atomic uintptr_t tp;
    athread *t;
} tls_slot;

typedef struct async_state {
    int on;
    pthread_mutex_t mu; /* inserts into the tables; the CoreLib set-up */
    /* CoreLib: its module and the tokens of what a chain is made of */
    ModuleID corelib;
    dnp_md md; /* CoreLib's metadata, read in place (cli_metadata.h) */
    int corelib_ready; /* 1 ready, -1 not usable */
    mdTypeDef box_td, pbox_td, pbox_base_td, task_td, atc_td, delegate_td, wrapper_td, mrvtsc_td;
    mdMethodDef box_move, pbox_move;
    mdSignature probe_sig; /* the probe's call site signature, in CoreLib: made at the first resume compiled */
    int rewritten[2];      /* box_move's, pbox_move's body replaced */
    /* the execution context's methods between a box's MoveNext and its state
     * machine's (tokens, then their FunctionIDs as the runtime prepares them) */
    mdMethodDef plumb_tok[PLUMB_TOKENS]; /* their FunctionIDs (every instantiation's): async_is_plumbing */
    uint32_t task_cont_off, delegate_target_off, atc_action_off, wrapper_cont_off, vts_state_off;
    /* the classes seen, by MethodTable */
    atype types[TYPES];
    _Atomic uint32_t ntypes;
    _Atomic uint32_t type_hash[TYPE_HASH]; /* index + 1 */
    /* the chains */
    chain_node *chain;
    _Atomic uint32_t nchain;
    _Atomic uint32_t *chain_hash; /* node number, 0 empty */
    uint32_t unknown_name;
    tls_slot tls[TLS_SLOTS];
    pthread_key_t key;
    /* counts, for the note at the end */
    _Atomic uint64_t resumes, unknown_ends, full, no_state;
    /* the runtime's suspensions, odd while one runs (objects move only then):
     * what a read of the heap outside the probe checks (async_resolve) */
    _Atomic uint64_t suspend_seq;
    _Atomic uint64_t resolved; /* samples of a pending resume whose callers were found later */
} async_state;

extern async_state async_g;
#define A async_g

/* CoreLib's type named name (Namespace.Name), or nested in enclosing by its
 * simple name; 0 if none (async_corelib.c). */
mdTypeDef async_corelib_type(const char *name, mdTypeDef enclosing);
/* The tokens of what a chain is made of into A, from the cache file of this
 * CoreLib build or its metadata (A.md): 0, or -1 (said why). *i32: System.Int32's
 * TypeDef. Under A.mu. */
int async_corelib_facts(mdTypeDef *i32);
/* Whether CoreLib's method tok is known not to be named MoveNext, without its
 * metadata: 1; 0 when it is or when the list is not known. */
int async_corelib_not_move(mdMethodDef tok);

/* The offset of field name in class cls (its own fields), 0 if none (async.c). */
uint32_t async_field_off(ClassID cls, const char *name);
/* A box's state machine: its MoveNext, its name, whether it is an async Main's;
 * 0 when not noted yet (async_setup.c; in the probe: the class's token only). */
uint64_t async_state_machine(ClassID tsm, uint32_t *name, uint8_t *is_main);

#endif
