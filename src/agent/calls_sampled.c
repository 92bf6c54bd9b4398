/* calls_sampled.c: --calls' times from samples of the agent's own shadow stack
 * (docs/calls.md#times-from-samples).
 *
 * The hooks keep exact counts and call paths without reading a clock (the
 * counts-only stubs of elt.S). A per-thread CPU-time timer (the sampler's
 * signals, sampler_signal.c) interrupts the thread every period; the handler
 * reads the thread's shadow stack, which is the agent's own memory, and adds
 * the period to the node of its top frame (exclusive time) and to that node's
 * callers (inclusive time: a node is a call path, so its callers are exactly
 * the frames below it). A sample that interrupts the agent's own code (the
 * hooks, the callbacks) is no method's time and is left out; so is one taken
 * while the JIT compiles a method on the thread (each method's first call,
 * tiering up: the runtime's work, which had read as the self time of the
 * method on top); one with no hooked frame on the thread's stack is counted as
 * outside.
 *
 * So counts are exact and times are statistical, with no per-call bias: the
 * hooks' own cost is nobody's, where a timed call has to estimate it and take it
 * out. The owner of the tree writes the nodes (calls.c); the handler only queues
 * the node it touched, and the owner marks the queued nodes and their callers
 * for writing before it writes (calls_sampled_drain).
 *
 * What the handler relies on, all on its own thread: a frame is filled before
 * the depth counts it (calls.c, elt.S), the stack array is replaced whole when
 * it grows, nodes never move, and with sampled times nothing but the handler
 * writes a node's times. */
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "calls.h"
#include "arch/arch.h"
#include "calls_internal.h"
#include "memread.h"
#include "sampler.h"

int calls_sampled_on;

/* The agent's executable segment. */
static uintptr_t g_text_lo, g_text_hi;

static int find_text(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    uintptr_t me = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && me >= lo && me < hi) {
            g_text_lo = lo;
            g_text_hi = hi;
            return 1;
        }
    }
    return 0;
}

void calls_sampled_setup(void) {
    dl_iterate_phdr(find_text, (void *)(uintptr_t)&calls_sampled_setup);
}

/* Whether p is one of t's nodes (a pointer read from a stale frame or from
 * another thread's cache is checked before it is followed). */
static int own_node(const calls_thread *t, const cnode *p) {
    for (unsigned c = 0; c < MAX_CHUNKS && t->chunks[c]; c++) {
        uintptr_t base = (uintptr_t)t->chunks[c], a = (uintptr_t)p;
        if (a >= base && a < base + NODE_CHUNK * sizeof(cnode))
            return (a - base) % sizeof(cnode) == 0;
    }
    return 0;
}

/* The node a sample at r belongs to, when the shadow stack is a step behind
 * or ahead of the machine: in a hooked method's prologue before its enter hook
 * pushed its frame (its node under top, the one its function found last), or
 * in its epilogue after its leave hook popped it (the frame above the top,
 * still in memory). Else top. Without this, the few instructions on each side
 * of every hook would be the caller's time (3 points of a caller's share at
 * 9 M calls a second). */
static cnode *edge_node(calls_thread *t, uint32_t d, cnode *top, const arch_regs *r) {
    uint8_t code[32];
    size_t len = 4096 - (r->pc & 4095); /* the interrupted page is mapped: no further */
    if (len > sizeof code)
        len = sizeof code;
    memcpy(code, (const void *)(uintptr_t)r->pc, len);
    uint64_t v;
    int edge = arch_hook_edge(code, len, r, &v);
    if (edge == ARCH_EDGE_ENTER) {
        calls_fn f; /* a client ID read from code or a register: checked, read without faulting */
        if (memread(v, &f, sizeof f) == (ssize_t)sizeof f && f.magic == CALLS_FN_MAGIC && f.last &&
            own_node(t, f.last) && f.last->parent_p == top)
            return f.last;
    } else if (edge == ARCH_EDGE_LEAVE && d < t->cap) {
        const cframe *up = &t->stack[d];
        if (up->csp == v && own_node(t, up->np) && up->np->parent_p == top)
            return up->np;
    }
    return top;
}

/* On the interrupted thread: r its registers, ns the time the sample stands for. */
void calls_sample(const arch_regs *r, uint64_t ns) {
    if (!calls_sampled_on)
        return;
    calls_thread *t = calls_thread_here();
    if (!t)
        return;
    t->samples++;
    if (r->pc >= g_text_lo && r->pc < g_text_hi) {
        t->in_hooks++;
        return;
    }
    if (sampler_jit_now((int)t->tid)) { /* the runtime compiling a method, not the method on top */
        t->in_jit++;
        return;
    }
    uint32_t d = t->depth;
    atomic_signal_fence(memory_order_acquire);
    cnode *top = d ? t->stack[d - 1].np : node_at(t, 0);
    cnode *n = edge_node(t, d, top, r);
    if (n == node_at(t, 0)) {
        t->outside++;
        return;
    }
    n->excl += ns;
    for (cnode *c = n; c; c = c->parent_p)
        c->incl += ns;
    uint32_t k = atomic_load_explicit(&t->sq_n, memory_order_relaxed);
    if (k && t->sq[k - 1] == n->self)
        return; /* queued already: a loop in one method queues it once */
    if (k >= CALLS_SQ) {
        t->sq_full = 1;
        return;
    }
    t->sq[k] = n->self;
    atomic_store_explicit(&t->sq_n, k + 1, memory_order_relaxed);
}

int calls_sampled_drain(calls_thread *t) {
    for (;;) {
        uint32_t k = atomic_load_explicit(&t->sq_n, memory_order_relaxed);
        for (uint32_t j = 0; j < k; j++) {
            uint32_t i = t->sq[j];
            for (cnode *c = node_at(t, i); c && c->self; c = c->parent_p)
                calls_node_dirty(t, c->self);
        }
        /* a sample on this thread may have queued more meanwhile: again */
        if (atomic_compare_exchange_strong(&t->sq_n, &k, 0))
            break;
    }
    if (!t->sq_full)
        return 0;
    t->sq_full = 0;
    return 1;
}
