/* sampler_aggregate.c: the sampler's trees (sampler.h), on the sampler thread.
 * The rings are drained into one tree per OS thread, of bounded size; each
 * record's raw addresses become frames (the caller a frame-pointer chain skips
 * is found on the stack: prologues, epilogues, native code without frame
 * pointers). Changed nodes are written as SampleNode events, and each sampled
 * thread's OS name (/proc/self/task/TID/comm) as an ExistingThread event with
 * no managed ThreadID: native threads have no other name in the trace. */
#include "sampler_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async.h"
#include "callbacks.h"

static uint32_t node_hash(uint32_t tid, uint32_t parent, uint64_t key, uint32_t cap) {
    uint64_t x = key * 0x9E3779B97F4A7C15ull ^ ((uint64_t)tid << 32 | parent) * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(x >> 32) & (cap - 1);
}

static uint32_t node_home(uint32_t i, uint32_t cap) {
    return node_hash(S.nodes[i].tid, S.nodes[i].parent, S.nodes[i].key, cap);
}

/* The child of parent for a frame; 0 when the trees are full. */
static uint32_t node_child(uint32_t tid, uint32_t parent, uint64_t func, uint32_t name) {
    uint64_t key = func ? func : (uint64_t)name | 1ull << 63;
    uint32_t h = node_hash(tid, parent, key, S.hash_cap);
    while (S.hash[h]) {
        anode *n = &S.nodes[S.hash[h] - 1];
        if (n->key == key && n->parent == parent && n->tid == tid)
            return S.hash[h] - 1;
        h = (h + 1) & (S.hash_cap - 1);
    }
    if (S.nnodes == MAX_NODES)
        return 0;
    if (S.nnodes * 2 >= S.hash_cap) { /* node 0, the roots, is in no index */
        if (sampler_index_grow(&S.hash, &S.hash_cap, NODE_HASH, 1, S.nnodes, node_home) != 0)
            return 0;
        for (h = node_hash(tid, parent, key, S.hash_cap); S.hash[h];) /* its slot in the grown index */
            h = (h + 1) & (S.hash_cap - 1);
    }
    uint32_t i = S.nnodes++;
    anode *n = &S.nodes[i];
    n->tid = tid;
    n->parent = parent;
    n->key = key;
    n->func = func;
    n->name = name;
    S.hash[h] = i + 1;
    return i;
}

static void node_count(uint32_t i, int self, uint32_t w) {
    anode *n = &S.nodes[i];
    n->samples += w;
    n->self += self ? w : 0;
    if (!n->dirty) {
        n->dirty = 1;
        S.dirty[S.ndirty++] = i;
    }
}

/* A stack, leaf first: frame k is (funcs[k], names[k]). When the trees are
 * full, the deepest node reached holds the sample. Returns the leaf's node, 0
 * when the trees were full. */
static uint32_t tree_add(uint32_t tid, const uint64_t *funcs, const uint32_t *names, uint32_t n, uint32_t w) {
    uint32_t node = 0;
    S.samples += w;
    S.instants++;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t c = node_child(tid, node, funcs[k], names[k]);
        if (!c) {
            S.truncated++;
            if (node) {
                S.nodes[node].samples -= w;
                node_count(node, 1, w);
            }
            return 0;
        }
        node_count(c, k == 0, w);
        node = c;
    }
    return node;
}

/* ---- thread names ---- */

/* The thread's OS name, written when it changed since last written. Off the
 * signal path: a read of /proc/self/task/TID/comm. */
static void name_write(named *t) {
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", t->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* gone: the name written before stays */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == 0))
        n--;
    if (n <= 0)
        return;
    uint32_t name = rec_string(buf, (size_t)n);
    if (name && name != t->name) {
        REC(ExistingThread, 0, t->tid, name);
        t->name = name;
    }
}

/* A thread of the trees was sampled: its name is written now if new, or
 * looked at again at the next emit. */
static void name_sampled(uint32_t tid) {
    if (!S.named || !tid)
        return;
    uint32_t h = (tid * 0x9E3779B1u) & (NAMED_MAX - 1);
    while (S.named[h].tid && S.named[h].tid != tid)
        h = (h + 1) & (NAMED_MAX - 1);
    named *t = &S.named[h];
    if (!t->tid) {
        if (S.nnamed * 2 >= NAMED_MAX)
            return; /* full: the thread keeps its number only */
        S.nnamed++;
        t->tid = tid;
        name_write(t);
        return;
    }
    if (!t->sampled && S.nnamed_due < NAMED_MAX / 2) { /* at most nnamed entries, NAMED_MAX / 2 */
        t->sampled = 1;
        S.named_due[S.nnamed_due++] = (uint16_t)h;
    }
}

/* Threads sampled since the last emit: their names again (threads rename
 * themselves: the runtime's thread pool, Thread.Name). */
static void names_refresh(void) {
    for (uint32_t k = 0; S.named && k < S.nnamed_due; k++) {
        named *t = &S.named[S.named_due[k]];
        t->sampled = 0;
        name_write(t);
    }
    S.nnamed_due = 0;
}

uint32_t sampler_aggregate(uint32_t tid, const uint64_t *funcs, const uint32_t *names, uint32_t n, uint32_t w) {
    name_sampled(tid);
    return tree_add(tid, funcs, names, n, w);
}

void sampler_aggregate_again(uint32_t tid, uint32_t leaf, uint32_t w) {
    (void)tid; /* its name is not read again: a thread that has not run since has not renamed itself */
    S.samples += w;
    S.instants++;
    for (uint32_t i = leaf; i; i = S.nodes[i].parent) /* node 0 is the roots' parent */
        node_count(i, i == leaf, w);
}

/* ---- a record's frames ---- */

/* A stack being made, leaf first (MAX_DEPTH frames, and what the leaf's
 * caller adds: [waiting], a native caller, the managed caller; and the async
 * callers of a resumed method). */
#define ASYNC_ROOM 130u
#define FRAMES_CAP (MAX_DEPTH + 4 + ASYNC_ROOM)
typedef struct frames {
    uint64_t funcs[FRAMES_CAP];
    uint32_t names[FRAMES_CAP];
    uint32_t m;
} frames;

static void push(frames *st, uint64_t func, uint32_t name) {
    st->funcs[st->m] = func;
    st->names[st->m++] = name;
}

/* The lowest word below where the chain starts that returns into managed code
 * after a call, not one of the chain's: 0 if none. *via: the native caller of
 * a native leaf (libc under libcoreclr) on the way, when named otherwise. */
static uint64_t managed_below(const srec *r, uint32_t name, uint32_t *via) {
    uint32_t below = r->fpoff / 8 < r->nwords ? r->fpoff / 8 : r->nwords;
    int seen_native = 0;
    *via = 0;
    for (uint32_t i = 0; i < below; i++) {
        uint64_t w = r->words[i];
        /* most words are data: no cache entry for what no executable mapping
         * holds (the list is not read again for them) */
        if (w < 4096 || (S.nexec && !sampler_exec_find(w - 1)) || !sampler_is_return_address(w))
            continue;
        int chained = 0;
        for (uint32_t j = 1; j < r->n && !chained; j++)
            chained = r->ip[j] == w;
        const ipent *c = chained ? NULL : sampler_resolve(w - 1);
        if (c && c->managed)
            return w;
        if (c && !seen_native) {
            seen_native = 1;
            *via = c->name != name ? c->name : 0;
        }
    }
    return 0;
}

/* The leaf's own frame (func, name; native: named native code) and its
 * caller, when the frame-pointer chain skips the caller: 1 when pushed, 0 when
 * the chain is taken as it is. *n: the chain's length, cut to the leaf when it
 * came from a guess the stack did not confirm. */
static int leaf_caller(frames *st, const srec *r, uint64_t func, uint32_t name, int native, uint32_t *n) {
    int walked = !(r->flags & REC_UNWALKED);
    int chain_native = 0; /* the chain's next frame is native code's own: its managed caller is further up */
    if (native && *n >= 2 && sampler_is_return_address(r->ip[1]))
        chain_native = !sampler_resolve(r->ip[1] - 1)->managed;
    if (native && !chain_native && walked) {
        /* Native code without frame pointers (libcoreclr's allocation
         * helpers, the GC) called from a managed method leaves the frame
         * pointer as that method's: the chain gives the method's caller and
         * skips it. Its return address is below where the chain starts (the
         * native frames under it are shown as one). Not when the chain goes on
         * through native code (the frame pointer is a native frame's own): a
         * managed address below it is a stale word. */
        uint32_t via;
        uint64_t managed = managed_below(r, name, &via);
        if (managed) {
            const ipent *c = sampler_resolve(managed - 1);
            push(st, func, name);
            if (via)
                push(st, 0, via);
            push(st, c->func, c->name);
            S.fixed++;
            S.guessed++; /* a word on the stack, not an unwind table's rule */
            return 1;
        }
        if (r->flags & REC_FP_FOUND)
            *n = 1; /* a chain found by a guess the stack did not confirm */
    }
    if (walked) {
        /* In a prologue or an epilogue, or in a function that keeps no frame,
         * the frame pointer is the caller's: the chain gives the caller's
         * caller, and the caller's return address is on the stack near SP. */
        int slot = sampler_leaf_slot(r->ip[0]);
        uint64_t ra = slot >= 0 && (uint32_t)slot < r->nwords ? r->words[slot] : slot == SLOT_TOP ? r->top : 0;
        if (ra && (*n < 2 || ra != r->ip[1]) && sampler_is_return_address(ra)) {
            const ipent *c = sampler_resolve(ra - 1);
            push(st, func, name);
            push(st, c->func, c->name);
            S.fixed++;
            return 1;
        }
    }
    if (native && r->top && (*n < 2 || r->top != r->ip[1]) && sampler_is_return_address(r->top)) {
        /* a native leaf that keeps no frame (libc): its caller's return
         * address is at the stack pointer when it pushed nothing */
        const ipent *c = sampler_resolve(r->top - 1);
        if (c->name != name) { /* not the leaf's own (a stale lr after one of its calls) */
            push(st, func, name);
            push(st, c->func, c->name);
            S.guessed++;
            return 1;
        }
    }
    return 0;
}

/* The awaiting callers of a resumed async method (async.h), into the stack:
 * above (rootward of) the resumed method's own frame, found among the cut
 * frames leafward of the resume (cut of them), and marked; the frames between
 * (the box's MoveNext, the execution context's) and below stay, for the
 * physical view. Nothing when the walk did not reach the resume. */
static void async_callers(frames *st, const srec *r, uint32_t cut) {
    uint32_t p = UINT32_MAX, at;
    uint64_t want = r->async_resumed;
    /* the resume is still running only if its frame is where the walk met
     * its place: the box's MoveNext, or what its tail call left there (the
     * execution context's method, the resumed method); one frame further on
     * a machine whose frame records sit below the locals (arm64) */
    int live = 0;
    for (uint32_t i = cut; i-- > 0 && i + 2 >= cut && !live;)
        live = async_is_resume_frame(st->funcs[i]) || async_is_plumbing(st->funcs[i]) || st->funcs[i] == want;
    if (!live)
        return;
    for (uint32_t i = cut; i-- > 0 && p == UINT32_MAX;)
        if (st->funcs[i] == want)
            p = i;
    uint64_t funcs[ASYNC_ROOM];
    uint32_t names[ASYNC_ROOM];
    uint32_t room = FRAMES_CAP - st->m, n = 0;
    if (room > ASYNC_ROOM)
        room = ASYNC_ROOM;
    if (p != UINT32_MAX) {
        at = p + 1;
        st->funcs[p] |= ASYNC_FRAME_RESUMED;
    } else {
        /* The resumed method is not on the stack: the JIT inlined it into the
         * execution context's code that runs it. It goes in as a caller of
         * what it called (the physical view drops it), below the box's
         * MoveNext and the execution context's frames. */
        at = cut ? cut - 1 : 0;
        while (at > 0 && async_is_plumbing(st->funcs[at - 1]))
            at--;
        if (!at || !room)
            return;
        funcs[0] = want | ASYNC_FRAME_CALLER;
        names[0] = r->async_name;
        n = 1;
    }
    uint32_t chain = r->async_chain, later = r->async_box ? async_resolve(r->async_box, r->async_seq, want) : 0;
    n += async_chain_frames(later ? later : chain, funcs + n, names + n, room - n);
    memmove(&st->funcs[at + n], &st->funcs[at], (st->m - at) * sizeof st->funcs[0]);
    memmove(&st->names[at + n], &st->names[at], (st->m - at) * sizeof st->names[0]);
    memcpy(&st->funcs[at], funcs, n * sizeof funcs[0]);
    memcpy(&st->names[at], names, n * sizeof names[0]);
    st->m += n;
}

/* Returns the record's leaf node (0: the trees were full, or no stack). */
static uint32_t aggregate_record(uint32_t tid, const srec *r) {
    frames st;
    st.m = 0;
    uint32_t cut = 0; /* frames leafward of the innermost async resume's caller */
    if (r->flags & REC_WAITING)
        push(&st, 0, S.waiting_name);
    uint32_t n = r->n;
    int patchpoint = 0; /* the frame before was an OSR method's patchpoint call (one frame with the method) */
    uint32_t jit_top = 0; /* frames up to the outermost of the JIT's own code */
    int runtime_leaf = 0, managed_seen = 0; /* the runtime's code under the innermost managed frame */
    uint32_t managed_at = 0; /* where in st the innermost managed frame went (0: none yet) */
    if (n > 1)
        sampler_prefetch_calls(r->ip + 1, (n < MAX_DEPTH ? n : MAX_DEPTH) - 1);
    for (uint32_t k = 0; k < n && k < MAX_DEPTH; k++) {
        if (r->async_k && k == r->async_k)
            cut = st.m;
        /* a return address points after its call: resolve the call itself;
         * one that is not after a call ends the stack (the frame pointer
         * chain went through code that does not keep one) */
        int osr = k < 64 && (r->extra >> k & 1), after_patchpoint = patchpoint;
        int frameless = k < 64 && (r->frameless >> k & 1);
        int interrupted = k < 64 && (r->interrupted >> k & 1); /* a signal's: the pc itself, no call before it */
        patchpoint = 0;
        if (osr && !after_patchpoint)
            continue; /* a word the OSR scan found that follows no OSR frame: a stale frame's, not a caller */
        if (k && !interrupted && !sampler_is_return_address(r->ip[k])) {
            if (osr)
                patchpoint = after_patchpoint; /* no return address: the scan's next candidate may be */
            if (osr || frameless)
                continue; /* a word the OSR scan found, or one where a frameless caller's lies, that is no return address */
            break;
        }
        S.frameless_found += frameless;
        S.resolving_pc = k == 0;
        const ipent *e = sampler_resolve(k && !interrupted ? r->ip[k] - 1 : r->ip[k]);
        S.resolving_pc = 0;
        uint64_t func = e->func; /* copied: a later lookup may clear the cache */
        uint32_t name = e->name;
        int jit_code = e->jit_code;
        runtime_leaf |= !managed_seen && e->runtime_code;
        managed_seen |= e->managed;
        if (k && e->managed && !interrupted)
            sampler_frameless_learn(r->ip[k]); /* for the handler's next walks through it */
        /* a native leaf unwound by its tables has its callers: no guess */
        if (k == 0 && !(r->flags & REC_NATIVE_CFI) && leaf_caller(&st, r, func, name, !e->managed && e->mapped, &n))
            continue;
        uint32_t m = st.m;
        if (m && !func && !st.funcs[m - 1] && st.names[m - 1] == name)
            continue; /* "[libcoreclr.so]" once for a run of its unnamed frames */
        if (m && func && st.funcs[m - 1] == func) {
            /* an OSR method over its Tier0 frame's patchpoint call, or a
             * recursion through another call site than the frame above's (one
             * through the same site returns to the same address, learned
             * never): the handler looks above that call on every walk now,
             * with a budget of its own */
            if (k < 2 || r->ip[k] != r->ip[k - 1])
                sampler_patchpoint_learn(r->ip[k]);
            if (k + 1 < 64 && (r->extra >> (k + 1) & 1)) {
                patchpoint = 1;
                continue; /* an OSR method's patchpoint call in its Tier0 code: one frame */
            }
        }
        if (e->managed && !managed_at)
            managed_at = st.m;
        push(&st, func, name);
        jit_top = jit_code ? st.m : jit_top;
    }
    if (cut && r->async_resumed)
        async_callers(&st, r, cut);
    if ((r->flags & REC_GC_PAUSE) && managed_at > 1 && runtime_leaf) {
        /* the runtime's frames that hold the thread (its signal handler, its wait): one [GC pause]
         * under the code the collection stopped; a wait in another library's code (a socket's, a
         * file's, called from managed code) is the thread's own: the collection holds no thread
         * there */
        memmove(&st.funcs[1], &st.funcs[managed_at], (st.m - managed_at) * sizeof st.funcs[0]);
        memmove(&st.names[1], &st.names[managed_at], (st.m - managed_at) * sizeof st.names[0]);
        st.m -= managed_at - 1;
        st.names[0] = S.pause_name;
        jit_top = 0;
    }
    sampler_gc_frame(st.funcs, st.names, &st.m, FRAMES_CAP, r->gc, runtime_leaf);
    sampler_jit_frame(st.funcs, st.names, &st.m, FRAMES_CAP, r->jit, jit_top);
    sampler_unwind_counts(r->flags);
    if ((r->flags & REC_UNW_STOP) && st.m < FRAMES_CAP)
        push(&st, 0, S.stopped_name); /* the stack above is not known: said, not guessed */
    else if ((r->flags & REC_DEEP) && st.m < FRAMES_CAP) {
        S.deep++;
        push(&st, 0, S.deep_name); /* its outer frames were not walked: the root says so */
    }
    return sampler_aggregate(tid, st.funcs, st.names, st.m, r->weight ? r->weight : 1);
}

/* ---- wall mode: samples taken while a collection held the runtime ---- */

/* A thread found waiting while a collection held the runtime suspended is
 * either held by it (stopped where it ran: in the signal handler, at a poll,
 * coming back from native code) or blocked in a wait of its own that the
 * collection does not touch (a pool thread waiting for work, a socket loop).
 * Its next sample, taken after, tells them apart: a thread still waiting in
 * the same frames was in its own wait; one that moved was held. The sample
 * is held until then (one per thread), with the periods of the samples that
 * found it there meanwhile. */
static int same_wait(const srec *r, const srec *h) {
    return (r->flags & REC_WAITING) && r->sp == h->sp && r->ip[0] == h->ip[0] && r->idle_len == h->idle_len &&
           r->idle_hash == h->idle_hash;
}

/* The held sample counted: under its code as [GC pause], or as its own wait. */
static void pause_settle(sslot *s, uint32_t tid, int own) {
    if (!s->paused)
        return;
    s->paused = 0;
    srec *h = s->pause;
    if (own)
        h->flags &= ~(uint32_t)REC_GC_PAUSE;
    h->weight = s->pause_w;
    uint32_t leaf = aggregate_record(tid, h);
    if (leaf)
        s->last_leaf = leaf;
}

/* r, a sample of a thread a collection may have held: 1 when it is held (or
 * added to the one held, found in the same place) until the next says what
 * it was; 0 to count it now (no room for it). A sample that is not one
 * settles the one held. */
static int pause_hold(sslot *s, uint32_t tid, const srec *r) {
    uint32_t w = r->weight ? r->weight : 1;
    if (s->paused && (r->flags & REC_GC_PAUSE) && same_wait(r, s->pause)) {
        s->pause_w += w;
        return 1;
    }
    if (s->paused)
        pause_settle(s, tid, same_wait(r, s->pause));
    if (!(r->flags & REC_GC_PAUSE) || (!s->pause && !(s->pause = malloc(sizeof *s->pause))))
        return 0;
    memcpy(s->pause, r, sizeof *r);
    s->pause_w = w;
    s->paused = 1;
    return 1;
}

void sampler_pause_settle_all(void) {
    for (unsigned i = 0; i < S.nslots; i++) {
        int tid = atomic_load(&S.slots[i].tid);
        pause_settle(&S.slots[i], (uint32_t)(tid > 0 ? tid : -tid), 0);
    }
}

void sampler_drain(void) {
    for (unsigned i = 0; i < S.nslots; i++) {
        sslot *s = &S.slots[i];
        int tid = atomic_load(&s->tid);
        if (!tid || tid == SLOT_CLAIMING)
            continue;
        uint32_t thread = (uint32_t)(tid > 0 ? tid : -tid); /* gone: its last samples still its own */
        unsigned h = atomic_load_explicit(&s->head, memory_order_acquire);
        unsigned t = atomic_load_explicit(&s->tail, memory_order_relaxed);
        for (; t != h; t++) {
            const srec *r = &slot_ring(s)[t % RING];
            int held = pause_hold(s, thread, r);
            uint32_t leaf = held ? 0 : aggregate_record(thread, r);
            if (leaf)
                s->last_leaf = leaf;
            /* waiting in a system call, nothing else on the thread: counted again while it waits
             * there, unless a frameless caller's place was learned since it was walked (reading
             * it or an earlier record may have: its walk may have skipped that caller, so the
             * thread's next sample is walked again rather than this stack counted again) */
            int idle = leaf && (r->flags & REC_WAITING) && r->idle_len && !r->gc && !r->jit &&
                       !(r->flags & REC_GC_PAUSE) && /* walked again at each tick while it is held */
                       r->learned == atomic_load_explicit(&S.frameless_learned, memory_order_relaxed);
            s->idle_leaf = idle ? leaf : 0;
            s->idle_sp = r->sp;
            s->idle_pc = r->ip[0];
            s->idle_len = r->idle_len;
            s->idle_hash = r->idle_hash;
            s->idle_nret = r->idle_nret;
            memcpy(s->idle_off, r->idle_off, sizeof s->idle_off);
            s->idle_cpu = 0;
            atomic_store_explicit(&s->tail, t + 1, memory_order_release);
        }
        if (tid < 0)
            pause_settle(s, thread, 0); /* its thread ended: no next sample will say */
        if (S.mode == SAMPLER_WALL)
            sampler_wall_tail(s, thread); /* when its thread has ended */
        S.dropped += atomic_exchange(&s->dropped, 0);
        if (tid < 0) {
            atomic_store(&s->head, 0);
            atomic_store(&s->tail, 0);
            atomic_store(&s->tid, 0);
        }
    }
}

void sampler_emit_dirty(void) {
    names_refresh();
    for (uint32_t k = 0; k < S.ndirty; k++) {
        anode *n = &S.nodes[S.dirty[k]];
        n->dirty = 0;
        REC(SampleNode, n->tid, S.dirty[k], n->parent, n->func, n->name, n->samples,
            n->samples * S.period_ns, n->self * S.period_ns, n->self);
    }
    S.ndirty = 0;
}
