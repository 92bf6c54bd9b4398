/* async.c: logical async stacks (async.h, docs/async.md).
 *
 * After an await, an async method resumes on a pool thread through its state
 * machine box: AsyncTaskMethodBuilder<T>.AsyncStateMachineBox<TSM>.MoveNext(Thread)
 * (Task and ValueTask methods) or PoolingAsyncValueTaskMethodBuilder<T>.
 * StateMachineBox<TSM>.MoveNext() (pooled ValueTask methods). As either is
 * first compiled, its IL gets a call to async_probe first (rewrite), with the
 * address of its `this`, without a GC transition: in cooperative mode the
 * runtime cannot move or free objects under the probe. Nothing else changes:
 * no enter/leave hooks (which would make the runtime refuse all precompiled
 * code), no other method touched. The probe follows the awaiters from the box:
 *
 *   a box             a logical frame (its TStateMachine's MoveNext); next:
 *                     Task.m_continuationObject, or for a pooled box its
 *                     _valueTaskSource._continuationState
 *   a Task            (Task.WhenAll's promise, Task.Run's unwrapper): no frame;
 *                     next: its m_continuationObject
 *   AwaitTaskContinuation (a captured context or scheduler): next: m_action
 *   a delegate        (the box's MoveNextAction): next: _target
 *   AsyncMethodBuilderCore.ContinuationWrapper: next: _continuation
 *
 * and ends at no continuation or at anything else (a synchronous wait, a list
 * of several awaiters, a custom awaiter's state): "[async caller unknown]",
 * never a guess, except above the program's async Main, which the runtime's
 * own entry point waits for. Field offsets are the runtime's answers
 * (GetClassLayout) for the version that runs, never constants.
 *
 * A chain is kept as a node of a trie of callers (outermost at the root), so a
 * resume costs a few lookups and the sampler gets one number. The thread's
 * resumes (a continuation may run inline inside another) are a small stack in
 * the thread's own state, found as calls.c finds its state (a table keyed by
 * the thread pointer). There is no exit probe: a resume ends when a later one
 * starts at or above its place on the stack, and the signal handler takes the
 * innermost one at or above the stack pointer; the sampler thread keeps it only
 * if the walk finds a resume's frame there (sampler_aggregate.c). */
#include "async_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent.h"
#include "arch/arch.h"
#include "callbacks.h"
#include "calls.h"
#include "il_body.h"
#include "memread.h"
#include "names.h"
#include "recorder.h"
#include "sampler.h"
#include "utf16.h"

async_state async_g = {.mu = PTHREAD_MUTEX_INITIALIZER};

int async_on(void) {
    return A.on;
}

/* ---- the thread's state ---- */

#define SLOT_OF(tp) ((uint32_t)(((uint64_t)(tp) * 0x9E3779B97F4A7C15ull) >> 52) & (TLS_SLOTS - 1))

/* The state of the thread whose thread pointer is tp, NULL none (it never
 * resumed, or its slot is another live thread's: thread_get).
 * Async-signal-safe: the table only. */
static athread *thread_of(uintptr_t tp) {
    const tls_slot *s = &A.tls[SLOT_OF(tp)];
    if (tp && atomic_load_explicit(&s->tp, memory_order_acquire) == tp)
        return s->t;
    return NULL;
}

static athread *thread_here(void) {
    return thread_of(arch_thread_pointer());
}

static void thread_gone(void *p) {
    uintptr_t tp = arch_thread_pointer();
    tls_slot *s = &A.tls[SLOT_OF(tp)];
    if (tp && atomic_load(&s->tp) == tp && s->t == p) {
        s->t = NULL;
        atomic_store(&s->tp, 0);
    }
    free(p);
}

/* The thread's state, made at its first resume; NULL when its slot is another
 * live thread's (its samples stay physical). */
static athread *thread_get(void) {
    athread *t = thread_here();
    if (t)
        return t;
    uintptr_t tp = arch_thread_pointer();
    if (!tp)
        return NULL;
    tls_slot *s = &A.tls[SLOT_OF(tp)];
    if (atomic_load(&s->tp) != 0)
        return NULL;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    uintptr_t zero = 0;
    s->t = NULL;
    if (!atomic_compare_exchange_strong(&s->tp, &zero, tp)) {
        free(t);
        return NULL;
    }
    s->t = t;
    pthread_setspecific(A.key, t);
    return t;
}

/* ---- classes: what an object is to a chain ---- */

/* The offset of field name in class cls (its own fields), 0 if none. */
uint32_t async_field_off(ClassID cls, const char *name) {
    COR_FIELD_OFFSET f[32];
    ULONG n = 0, size = 0;
    if (!cls || FAILED(INFO_CALL(GetClassLayout, cls, f, 32, &n, &size)))
        return 0;
    for (ULONG i = 0; i < n && i < 32; i++)
        if (strcmp(dnp_md_field_name(&A.md, f[i].ridOfField), name) == 0) /* CoreLib's classes only */
            return f[i].ulOffset;
    return 0;
}

/* What the class mt is (the runtime's calls: outside any lock). */
static void classify(uintptr_t mt, atype *out) {
    memset(out, 0, sizeof *out);
    out->mt = mt;
    out->kind = K_OTHER;
    ClassID k = mt, args[4];
    for (int depth = 0; k && depth < 16; depth++) {
        ModuleID module = 0;
        mdTypeDef td = 0;
        ClassID parent = 0;
        ULONG32 nargs = 0;
        if (INFO_CALL(GetClassIDInfo2, k, &module, &td, &parent, 4, &nargs, args) != S_OK)
            return;
        if (module == A.corelib) {
            if (td == A.box_td && nargs >= 2) {
                out->fid = async_state_machine(args[nargs - 1], &out->name, &out->main);
                for (ClassID p = parent; p && !A.task_cont_off;) { /* Task<T>, then Task */
                    ModuleID m2;
                    mdTypeDef t2;
                    ClassID pp = 0;
                    ULONG32 na = 0;
                    if (INFO_CALL(GetClassIDInfo2, p, &m2, &t2, &pp, 0, &na, NULL) != S_OK)
                        break;
                    if (m2 == A.corelib && t2 == A.task_td)
                        A.task_cont_off = async_field_off(p, "m_continuationObject");
                    p = pp;
                }
                out->off = A.task_cont_off;
                out->kind = out->fid && out->off ? K_BOX : K_OTHER;
                out->retry = !out->fid;
                return;
            }
            if (A.pbox_td && td == A.pbox_td && nargs >= 2) {
                out->fid = async_state_machine(args[nargs - 1], &out->name, &out->main);
                uint32_t at = async_field_off(parent, "_valueTaskSource"); /* StateMachineBox<TResult> */
                out->off = at && A.vts_state_off ? at + A.vts_state_off : 0;
                out->kind = out->fid && out->off ? K_POOLBOX : K_OTHER;
                out->retry = !out->fid;
                return;
            }
            /* the objects between boxes: one field leads on */
            const struct {
                mdTypeDef td;
                uint32_t *off;
                const char *field;
                uint8_t kind;
            } links[] = {
                {A.task_td, &A.task_cont_off, "m_continuationObject", K_TASK},
                {A.atc_td, &A.atc_action_off, "m_action", K_ACTION_OWNER},
                {A.delegate_td, &A.delegate_target_off, "_target", K_DELEGATE},
                {A.wrapper_td, &A.wrapper_cont_off, "_continuation", K_WRAPPER},
            };
            for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
                if (!links[i].td || td != links[i].td)
                    continue;
                if (!*links[i].off)
                    *links[i].off = async_field_off(k, links[i].field);
                out->off = *links[i].off;
                out->kind = out->off ? links[i].kind : K_OTHER;
                return;
            }
        }
        k = parent;
    }
}

static uint32_t type_home(uintptr_t mt) {
    return (uint32_t)(((uint64_t)mt * 0x9E3779B97F4A7C15ull) >> 40) & (TYPE_HASH - 1);
}

/* The class of mt when the table has it (no call into the runtime); NULL else. */
static const atype *type_known(uintptr_t mt) {
    uint32_t h = type_home(mt);
    for (uint32_t p = 0; p < TYPE_HASH; p++) {
        uint32_t i = atomic_load_explicit(&A.type_hash[(h + p) & (TYPE_HASH - 1)], memory_order_acquire);
        if (!i)
            return NULL;
        if (A.types[i - 1].mt == mt)
            return &A.types[i - 1];
    }
    return NULL;
}

/* The class of mt, from the table or classified once; NULL when the table is full. */
static const atype *type_of(uintptr_t mt, atype *scratch) {
    uint32_t h = type_home(mt);
    for (uint32_t p = 0; p < TYPE_HASH; p++) {
        uint32_t i = atomic_load_explicit(&A.type_hash[(h + p) & (TYPE_HASH - 1)], memory_order_acquire);
        if (!i)
            break;
        if (A.types[i - 1].mt == mt)
            return &A.types[i - 1];
    }
    atype t;
    classify(mt, &t);
    if (t.retry) { /* not kept: the caller's one look */
        *scratch = t;
        return scratch;
    }
    const atype *found = NULL;
    pthread_mutex_lock(&A.mu);
    uint32_t p = 0, slot = 0;
    for (; p < TYPE_HASH; p++) {
        slot = (h + p) & (TYPE_HASH - 1);
        uint32_t i = atomic_load_explicit(&A.type_hash[slot], memory_order_relaxed);
        if (!i)
            break;
        if (A.types[i - 1].mt == mt) {
            found = &A.types[i - 1];
            break;
        }
    }
    uint32_t n = atomic_load_explicit(&A.ntypes, memory_order_relaxed);
    if (!found && p < TYPE_HASH && n < TYPES && n * 2 < TYPE_HASH) {
        A.types[n] = t;
        atomic_store_explicit(&A.ntypes, n + 1, memory_order_relaxed);
        atomic_store_explicit(&A.type_hash[slot], n + 1, memory_order_release);
        found = &A.types[n];
    }
    pthread_mutex_unlock(&A.mu);
    return found;
}

/* ---- chains ---- */

static uint32_t chain_home(uint32_t parent, uint64_t fid) {
    uint64_t x = fid * 0x9E3779B97F4A7C15ull ^ (uint64_t)parent * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(x >> 40) & (CHAIN_HASH - 1);
}

/* The node for fid under parent; 0 when the table is full. */
static uint32_t chain_child(uint32_t parent, uint64_t fid, uint32_t name) {
    uint32_t h = chain_home(parent, fid);
    for (uint32_t p = 0; p < CHAIN_HASH; p++) {
        uint32_t i = atomic_load_explicit(&A.chain_hash[(h + p) & (CHAIN_HASH - 1)], memory_order_acquire);
        if (!i)
            break;
        if (A.chain[i].parent == parent && A.chain[i].fid == fid)
            return i;
    }
    uint32_t found = 0;
    pthread_mutex_lock(&A.mu);
    uint32_t p = 0, slot = 0;
    for (; p < CHAIN_HASH; p++) {
        slot = (h + p) & (CHAIN_HASH - 1);
        uint32_t i = atomic_load_explicit(&A.chain_hash[slot], memory_order_relaxed);
        if (!i)
            break;
        if (A.chain[i].parent == parent && A.chain[i].fid == fid) {
            found = i;
            break;
        }
    }
    uint32_t n = atomic_load_explicit(&A.nchain, memory_order_relaxed);
    if (!found && p < CHAIN_HASH && n < CHAIN_NODES) {
        A.chain[n] = (chain_node){parent, name, fid};
        atomic_store_explicit(&A.nchain, n + 1, memory_order_relaxed);
        atomic_store_explicit(&A.chain_hash[slot], n, memory_order_release);
        found = n;
    }
    pthread_mutex_unlock(&A.mu);
    return found;
}

static uintptr_t field_ptr(uintptr_t obj, uint32_t off) {
    return *(const uintptr_t *)(obj + off);
}

/* A pointer field of an object: read directly (the probe: nothing moves), or
 * through memread when seq is not NO_SEQ (async_resolve: on another thread,
 * checked against the runtime's suspensions). 0 when it cannot be read. */
#define NO_SEQ UINT64_MAX
static uintptr_t field_at(uintptr_t obj, uint32_t off, uint64_t seq) {
    if (seq == NO_SEQ)
        return field_ptr(obj, off);
    uintptr_t v = 0;
    if (memread(obj + off, &v, sizeof v) != (ssize_t)sizeof v ||
        atomic_load_explicit(&A.suspend_seq, memory_order_seq_cst) != seq)
        return 0;
    return v;
}

/* The callers that awaited the box, as a chain node (0: none); *nobody when
 * nothing awaits the outermost method found (not an async Main): its caller
 * may not have awaited it yet, and a look later may find more. seq: field_at's. */
static uint32_t chain_of(uintptr_t box, const atype *bt, int *nobody, uint64_t seq) {
    uint64_t fids[CALLERS];
    uint32_t names[CALLERS];
    unsigned n = 0, steps = 0;
    int unknown = 1, main = bt->main;
    uintptr_t o = field_at(box, bt->off, seq);
    while (o) {
        if (++steps > STEPS)
            break; /* a cycle, or a chain too long: its outer end is not known */
        uintptr_t mt = field_at(o, 0, seq);
        atype tmp;
        const atype *t = mt ? type_of(mt, &tmp) : NULL;
        if (!t || t->kind == K_OTHER)
            break;
        if (t->kind == K_BOX || t->kind == K_POOLBOX) {
            if (n == CALLERS)
                break;
            fids[n] = t->fid;
            names[n] = t->name;
            main = t->main;
            n++;
        }
        o = field_at(o, t->off, seq);
    }
    *nobody = !o && !main;
    if (seq != NO_SEQ && (!n || atomic_load_explicit(&A.suspend_seq, memory_order_seq_cst) != seq))
        return 0; /* nothing found, or objects may have moved under the reads */
    /* The outermost method known: nobody awaits it, or something the chain
     * cannot follow does (a synchronous wait, several awaiters, a custom
     * awaiter's state). Said, except above an async Main, which the runtime's
     * entry point waits for. */
    if (steps <= STEPS && n < CALLERS)
        unknown = !main;
    uint32_t node = 0;
    if (unknown) {
        if (seq == NO_SEQ)
            atomic_fetch_add_explicit(&A.unknown_ends, 1, memory_order_relaxed);
        node = chain_child(0, 0, A.unknown_name);
    }
    for (unsigned k = n; k-- > 0;)
        node = chain_child(node, fids[k], names[k]);
    return node;
}

/* ---- the probe ---- */

/* Called first by every resume (rewrite), in cooperative mode, with the
 * address of the box's MoveNext's `this`. Resumes whose frames are gone (at or
 * below this one's place on the stack: the thread left them) end here. */
void async_probe(uintptr_t this_home) {
    athread *t = thread_get();
    if (!t) {
        atomic_fetch_add_explicit(&A.no_state, 1, memory_order_relaxed);
        return;
    }
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    while (d && t->r[d - 1].home <= this_home)
        d--;
    atomic_store_explicit(&t->depth, d, memory_order_relaxed);
    if (d == RESUMES) {
        atomic_fetch_add_explicit(&A.full, 1, memory_order_relaxed);
        return;
    }
    uintptr_t self = *(const uintptr_t *)this_home;
    resume r = {this_home, 0, 0, 0, 0, 0};
    int nobody = 0;
    atype tmp;
    const atype *bt = self ? type_of(*(const uintptr_t *)self, &tmp) : NULL;
    if (bt && (bt->kind == K_BOX || bt->kind == K_POOLBOX)) {
        r.resumed = bt->fid;
        r.name = bt->name;
        r.chain = chain_of(self, bt, &nobody, NO_SEQ);
        r.pending = nobody && !bt->main;
    }
    t->r[d] = r;
    atomic_signal_fence(memory_order_release); /* the entry is whole before the handler can see it */
    atomic_store_explicit(&t->depth, d + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&A.resumes, 1, memory_order_relaxed);
}

/* The innermost resume running on this thread, at or above sp (below it: a
 * resume that has returned); NULL none. Async-signal-safe. */
static resume *resume_at(uintptr_t sp) {
    athread *t = A.on ? thread_here() : NULL;
    if (!t)
        return NULL;
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    atomic_signal_fence(memory_order_acquire);
    if (d > RESUMES)
        return NULL;
    while (d && t->r[d - 1].home < sp)
        d--;
    return d && t->r[d - 1].resumed ? &t->r[d - 1] : NULL;
}

int async_sample_state(uint64_t sp, uint64_t *fp, uint32_t *chain, uint64_t *resumed, uint32_t *name) {
    const resume *r = resume_at(sp);
    if (!r)
        return 0;
    *fp = r->home;
    *chain = r->chain;
    *resumed = r->resumed;
    *name = r->name;
    return 1;
}

int async_thread_resuming(uint64_t tp) {
    /* none: it never resumed, or its samples stay physical; or it is making its
     * state now, so it runs, and the caller's CPU-time check drops the sample */
    const athread *t = A.on ? thread_of((uintptr_t)tp) : NULL;
    uint32_t d;
    /* its state is freed when it ends: read without faulting, and "yes" when unreadable */
    return t && (memread((uint64_t)(uintptr_t)&t->depth, &d, sizeof d) != (ssize_t)sizeof d || d != 0);
}

uint64_t async_sample_pending(uint64_t sp, uint64_t *seq) {
    const resume *r = resume_at(sp);
    if (!r || !r->pending)
        return 0;
    uint64_t s = atomic_load_explicit(&A.suspend_seq, memory_order_seq_cst);
    if (s & 1)
        return 0; /* objects may be moving */
    *seq = s;
    return *(const uintptr_t *)r->home; /* the box, where the GC keeps it */
}

uint32_t async_resolve(uint64_t box, uint64_t seq, uint64_t resumed) {
    if (!A.on || !box || (seq & 1) || atomic_load_explicit(&A.suspend_seq, memory_order_seq_cst) != seq)
        return 0;
    /* a box of the class the probe met, resuming that method: whatever else
     * the word was (a frame gone), it goes no further (no runtime call on it) */
    uintptr_t mt = field_at(box, 0, seq);
    const atype *bt = mt ? type_known(mt) : NULL;
    if (!bt || (bt->kind != K_BOX && bt->kind != K_POOLBOX) || bt->fid != resumed)
        return 0;
    int nobody;
    uint32_t chain = chain_of(box, bt, &nobody, seq);
    if (chain)
        atomic_fetch_add_explicit(&A.resolved, 1, memory_order_relaxed);
    return chain;
}

void async_suspension(void) {
    if (A.on)
        atomic_fetch_add_explicit(&A.suspend_seq, 1, memory_order_seq_cst);
}

/* A resume nothing awaited when it started (pending), on its own thread: its
 * callers, if they have awaited since. */
static void late_look(resume *r) {
    uint64_t seq = atomic_load_explicit(&A.suspend_seq, memory_order_seq_cst);
    uint32_t c = seq & 1 ? 0 : async_resolve(*(const uintptr_t *)r->home, seq, r->resumed);
    if (c) {
        r->chain = c;
        atomic_signal_fence(memory_order_release);
        r->pending = 0;
    }
}

/* The innermost resume running on this thread, at or above sp; NULL none.
 * Its callers looked at again if nothing awaited it when it started. */
static resume *resume_here(uintptr_t sp) {
    resume *r = resume_at(sp);
    if (r && r->pending)
        late_look(r);
    return r;
}

uint64_t async_here_key(void) {
    uintptr_t sp = (uintptr_t)&sp;
    const resume *r = resume_here(sp);
    return r ? ((uint64_t)r->chain << 32 ^ r->resumed) | 1 : 0;
}

unsigned async_logical_stack(uint64_t *f, unsigned n, unsigned cap) {
    uintptr_t sp = (uintptr_t)&sp; /* this thread's stack, below every frame of f */
    const resume *r = n ? resume_here(sp) : NULL;
    if (!r)
        return n;
    /* the resumed method's frame, with the resume's own just below it */
    for (unsigned i = 0; i < n; i++) {
        if (f[i] != r->resumed)
            continue;
        int live = 0;
        for (unsigned j = i + 1; j < n && j <= i + 3 && !live; j++)
            live = async_is_resume_frame(f[j]);
        if (!live)
            return n;
        unsigned m = i + 1, limit = atomic_load_explicit(&A.nchain, memory_order_acquire);
        for (uint32_t c = r->chain; c && c < limit && m < cap; c = A.chain[c].parent)
            if (A.chain[c].fid)
                f[m++] = A.chain[c].fid;
        return m > i + 1 ? m : n; /* no caller known (nobody awaited yet): the thread's own stack */
    }
    return n;
}

uint32_t async_calls_callers(uint64_t fid, uintptr_t sp, uint64_t *funcs, uint32_t *names, uint32_t cap) {
    resume *r = resume_at(sp); /* every state machine's call asks: the late look only for the resume's own */
    if (!r || r->resumed != fid || r->entered)
        return 0;
    r->entered = 1;
    if (r->pending)
        late_look(r);
    return async_chain_frames(r->chain, funcs, names, cap);
}

uint32_t async_chain_frames(uint32_t chain, uint64_t *funcs, uint32_t *names, uint32_t cap) {
    uint32_t n = 0, limit = atomic_load_explicit(&A.nchain, memory_order_acquire);
    for (uint32_t c = chain; c && c < limit && n < cap; c = A.chain[c].parent) {
        funcs[n] = A.chain[c].fid | ASYNC_FRAME_CALLER;
        names[n] = A.chain[c].name;
        n++;
    }
    return n;
}

/* ---- start and end ---- */

void async_configure(const agent_config *cfg, uint32_t *mask) {
    A.on = 0;
    int sampled = cfg->sample && cfg->sample != SAMPLER_SUSPEND;
    int calls = cfg->calls != CALLS_MODE_OFF;
    if (!cfg->async || (!sampled && !calls && !cfg->exc_stacks && !cfg->alloc && !cfg->locks))
        return; /* no stacks to make logical */
    if (g_agent.attached) {
        rec_note(1, "async stacks: not by attach yet (the resumes are instrumented as they are first "
                    "compiled); sampled stacks are physical");
        return;
    }
    /* the trie and its index (6 MiB), in one mapping whose pages come as they are first touched:
     * one system call, where two callocs were two and the allocator's bookkeeping (never freed) */
    size_t nodes = (size_t)CHAIN_NODES * sizeof *A.chain, len = nodes + (size_t)CHAIN_HASH * sizeof *A.chain_hash;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED || pthread_key_create(&A.key, thread_gone) != 0) {
        if (m != MAP_FAILED)
            munmap(m, len);
        A.chain = NULL;
        A.chain_hash = NULL;
        agent_say("async stacks: out of memory; sampled stacks stay physical");
        return;
    }
    A.chain = m;
    A.chain_hash = (_Atomic uint32_t *)(void *)((char *)m + nodes);
    atomic_store(&A.nchain, 1); /* 0: no chain */
    A.on = 1;
    /* compilations (the resumes' IL, the state machines), inlining and
     * precompiled code (the resumes are compiled, whole) */
    *mask |= COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_CACHE_SEARCHES;
    /* the runtime's suspensions: when objects may move (async_resolve) */
    *mask |= COR_PRF_MONITOR_SUSPENDS;
    /* unloads: a module's metadata read in place is forgotten before its image goes */
    *mask |= COR_PRF_MONITOR_MODULE_LOADS;
}

void async_install(void) {
    if (!A.on)
        return;
    const char unknown[] = "[async caller unknown]";
    A.unknown_name = rec_string(unknown, sizeof unknown - 1);
    rec_note(0, "async stacks: on (the resumes of async methods call dnprof first; docs/async.md)");
    REC(AsyncStacks, 0, 0, 0);
}

void async_shutdown(void) {
    if (!A.on)
        return;
    REC(AsyncStacks, atomic_load(&A.resumes), atomic_load(&A.unknown_ends), (uint64_t)atomic_load(&A.nchain) - 1);
    rec_note(0, "async stacks: %llu resumes, %llu chains ending in an unknown caller, %llu samples of a first resume "
                "whose callers were found after it started, %u chain nodes, %u classes%s",
             (unsigned long long)atomic_load(&A.resumes), (unsigned long long)atomic_load(&A.unknown_ends),
             (unsigned long long)atomic_load(&A.resolved),
             (unsigned)atomic_load(&A.nchain) - 1, (unsigned)atomic_load(&A.ntypes),
             atomic_load(&A.full) || atomic_load(&A.no_state) ? " (some resumes not followed: nesting or thread slots)"
                                                                : "");
}
