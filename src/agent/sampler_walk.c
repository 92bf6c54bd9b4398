/* sampler_walk.c: the stack walk of the signal handler (sampler.h). It walks
 * the interrupted stack by frame pointers (arch_frame.h), reading only inside
 * the thread's stack mapping (or through memread before that is known), and appends the raw addresses to the slot's single-producer ring. It
 * never allocates, locks or calls the runtime. */
#include "sampler_internal.h"

#include <string.h>

#include "arch/arch.h"
#include "arch_unwind.h"
#include "async.h"
#include "calls.h"
#include "unwind.h"
#include "memread.h"

/* Copies len bytes at addr without faulting on unmapped memory: 0 or -1.
 * System calls, so async-signal-safe (errno is restored by the handler); or,
 * safe being MEMREAD_VIEW, from the sampler thread's copy of a stack. */
static int safe_read(uint64_t addr, void *out, size_t len, int safe) {
    if (safe == MEMREAD_VIEW)
        return memread_view_read(addr, out, len);
    return memread(addr, out, len) == (ssize_t)len ? 0 : -1;
}

/* n words at addr: loads inside the known stack, or safe_read. */
static int stack_read(uint64_t addr, uint64_t *out, unsigned n, int safe) {
    if (safe)
        return safe_read(addr, out, n * 8u, safe);
    for (unsigned i = 0; i < n; i++)
        out[i] = ((const uint64_t *)addr)[i];
    return 0;
}

int sampler_saved_fp(const uint64_t *words, uint32_t nw, uint64_t sp, uint64_t limit, int safe, uint64_t *fp) {
    for (uint32_t i = 1; i < nw; i++) {
        uint64_t w = words[i], f[ARCH_FRAME_WORDS];
        if (w <= sp + 8 * i || w > limit - 16 || (w & 7))
            continue;
        if (stack_read(w, f, ARCH_FRAME_WORDS, safe) == 0 && f[ARCH_FRAME_NEXT] > w &&
            f[ARCH_FRAME_NEXT] <= limit - 16 && f[ARCH_FRAME_RET] >= 4096) {
            *fp = w;
            return (int)i;
        }
    }
    return -1;
}

/* The first words at the stack pointer into r->words: their count. */
static uint32_t copy_words(srec *r, uint64_t sp, uint64_t hi, int safe) {
    uint32_t nw = 0;
    if (!safe) {
        for (; nw < SP_WORDS && sp + 8 * nw + 8 <= hi; nw++)
            r->words[nw] = ((const uint64_t *)sp)[nw];
    } else if (safe_read(sp, r->words, SP_WORDS * 8, safe) == 0) {
        nw = SP_WORDS;
    } else if (safe_read(sp, r->words, SP_WORDS_MIN * 8, safe) == 0) { /* near the stack's top */
        nw = SP_WORDS_MIN;
    }
    return nw;
}

/* An OSR method's frame saves the frame pointer of the Tier0 frame's caller
 * and holds the address of the Tier0 code's patchpoint call: the chain skips
 * the Tier0 frame, and with it the return address into the caller. That frame
 * lies between fp and next, its saved frame pointer equal to next: its return
 * address is the word after. A local may hold a copy of that pointer too (a
 * Tier0 frame's spilled RBP, followed by a zero, came first in an async
 * method's pool thread): up to OSR_CANDIDATES words after such matches are
 * taken, marked, in order, and the sampler thread keeps the first that
 * follows a call. Bounded by *budget words per sample. */
void sampler_osr_scan(srec *r, uint32_t *n, uint64_t fp, uint64_t next, int safe, unsigned *budget) {
    /* the words [fp+16, next), at most budget of them: loaded in place (or
     * in the copy of a waiting thread's stack), or with one system call
     * before the bounds are known */
    uint64_t span = (next - fp - 16) / 8, buf[SCAN_CHUNK];
    unsigned cnt = (unsigned)(span < *budget ? span : *budget);
    const uint64_t *words = (const uint64_t *)(fp + 16);
    if (safe == MEMREAD_VIEW) {
        words = memread_view_at(fp + 16, cnt * 8u);
    } else if (safe) {
        cnt = cnt < SCAN_CHUNK ? cnt : SCAN_CHUNK;
        words = safe_read(fp + 16, buf, cnt * 8u, safe) == 0 ? buf : NULL;
    }
    *budget -= cnt;
    unsigned taken = 0;
    for (unsigned i = 0; words && i < cnt && taken < OSR_CANDIDATES && *n < MAX_DEPTH && *n < 64; i++) {
        if (words[i] != next)
            continue;
        if (i + 1 >= span) /* its return address would be next's saved frame pointer */
            break;
        uint64_t ret = i + 1 < cnt ? words[i + 1] : 0;
        if (i + 1 >= cnt && stack_read(fp + 16 + 8 * (i + 1), &ret, 1, safe) != 0)
            ret = 0;
        if (ret < 4096)
            continue; /* no address: a copy of the pointer in a local, not a saved frame pointer */
        r->extra |= 1ull << *n;
        r->ip[(*n)++] = ret;
        taken++;
    }
}

/* A return address into managed code that keeps no frame there (a Tier1
 * wrapper: push rax; call; add rsp, 8; ret) leaves RBP as its caller's: the
 * chain's next frame is the caller's caller. The sampler thread learned where
 * such a function's own return address lies above its callee's CFA
 * (sampler_frameless_learn); the word there goes in as the caller, marked, for
 * the sampler thread to check that it follows a call. Up to FRAMELESS_RUN in
 * a row, each below the chain's next frame record. */
static uint32_t frameless_callers(srec *r, uint32_t n, uint64_t ret, uint64_t cfa, uint64_t next, int safe) {
    for (unsigned run = 0; run < FRAMELESS_RUN && n < MAX_DEPTH && n < 64; run++) {
        int slot = sampler_frameless_slot(ret);
        uint64_t at = cfa + 8u * (uint64_t)slot, w;
        if (slot < 0 || at + 8 > next || stack_read(at, &w, 1, safe) != 0 || w < 4096)
            break;
        r->frameless |= 1ull << n;
        r->ip[n++] = w;
        ret = w;
        cfa = at + 8;
    }
    return n;
}

/* The frame a walk through a signal frame put in place of the trampoline
 * (unwind_native) is an interrupted pc, not a return address. */
static void mark_interrupted(srec *r, const unw_frame *u) {
    if (u->signal_at && u->signal_at < 64)
        r->interrupted |= 1ull << u->signal_at;
}

/* Native frames from u (a return address, the last of r->ip) by their unwind
 * tables: 1 when the walk goes on by frame pointers from u->fp (managed code
 * again), 0 when it ended (marked when it stopped in native code). */
static int cross_native(srec *r, uint32_t *n, unw_frame *u, const unw_index *ix, uint64_t sp, uint64_t limit,
                        int safe, uint32_t *flags) {
    int how = unwind_native(ix, r->ip, n, MAX_DEPTH, u, 0, sp, limit, safe);
    mark_interrupted(r, u);
    if (how == UNW_NOT_NATIVE)
        return 1;
    if (how == UNW_NO_ROW || how == UNW_BAD_STACK)
        *flags |= REC_UNW_STOP;
    return 0;
}

/* The frame-pointer chain from fp into r->ip[n..]: the new count. A return
 * address into native code with unwind tables (ix) goes on by them. */
static uint32_t walk_chain(srec *r, uint32_t n, uint64_t fp, uint64_t sp, uint64_t limit, int safe,
                           const unw_index *ix, uint32_t *flags, uint64_t async_fp) {
    unsigned budget = SCAN_WORDS, known = OSR_KNOWN_WORDS;
    while (n < MAX_DEPTH && fp >= sp && fp <= limit - 16 && !(fp & 7)) {
        uint64_t f[ARCH_FRAME_WORDS];
        if (stack_read(fp, f, ARCH_FRAME_WORDS, safe) != 0 || f[ARCH_FRAME_RET] < 4096)
            break;
        uint64_t next = f[ARCH_FRAME_NEXT];
        if (async_fp && !r->async_k && fp >= async_fp)
            r->async_k = n; /* the resume's own frame: what it returns to is below the logical callers */
        r->ip[n++] = f[ARCH_FRAME_RET];
        if (ARCH_UNW_SP_ABOVE_FRAME >= 0 && ix && unwind_find(ix, f[ARCH_FRAME_RET] - 1)) {
            unw_frame u = {.pc = f[ARCH_FRAME_RET], .sp = fp + ARCH_UNW_SP_ABOVE_FRAME, .fp = next};
            if (!cross_native(r, &n, &u, ix, sp, limit, safe, flags) || u.fp <= fp)
                break;
            fp = u.fp;
            continue;
        }
        if (next <= fp || next > limit - 16)
            break;
        if (ARCH_UNW_SP_ABOVE_FRAME >= 0)
            n = frameless_callers(r, n, f[ARCH_FRAME_RET], fp + ARCH_UNW_SP_ABOVE_FRAME, next, safe);
        /* in place or from the copy of a waiting thread's stack, not a system
         * call per frame; above a known patchpoint call whatever the budget
         * left (a long-running loop's OSR method under a deep stack) */
        if (n < MAX_DEPTH && n < 64 && next >= fp + 32 && (!safe || safe == MEMREAD_VIEW)) {
            if (known && sampler_patchpoint_known(f[ARCH_FRAME_RET]))
                sampler_osr_scan(r, &n, fp, next, safe, &known);
            else if (budget)
                sampler_osr_scan(r, &n, fp, next, safe, &budget);
        }
        fp = next;
    }
    if (n >= MAX_DEPTH && fp >= sp && fp <= limit - 16 && !(fp & 7))
        *flags |= REC_DEEP; /* a frame still to walk: the stack is deeper than what is kept */
    return n;
}

void sampler_calls_sample(const void *ucontext, uint32_t weight) {
    arch_regs g;
    arch_context_regs(ucontext, &g);
    calls_sample(&g, (uint64_t)weight * S.period_ns);
}

/* Wall, a thread waiting in a system call: where its frames' return
 * addresses (r->ip[1..n), in order) lie in the nw words above SP, each looked
 * for at most IDLE_GAP words above the last; one not found (a leaf's return
 * address still in a register, a frame larger than IDLE_GAP) is left out. Their
 * places and their hash say later whether it still waits in the same frames
 * (sampler_signal.c, same_frames). */
static void idle_frames(srec *r, const uint64_t *w, uint64_t nw) {
    uint32_t at = 0, m = 0, misses = 0;
    for (uint32_t k = 1; k < r->n && m < IDLE_FRAMES && misses < 4; k++) { /* every frame read is there: few miss */
        uint64_t end = at + IDLE_GAP < nw ? at + IDLE_GAP : nw;
        uint32_t p = at;
        while (p < end && w[p] != r->ip[k])
            p++;
        if (p == end) {
            misses++;
            continue;
        }
        r->idle_off[m++] = (uint16_t)p;
        at = p + 1;
    }
    r->idle_nret = (uint8_t)m;
    r->idle_len = m ? 8u * at : 0;
    r->idle_hash = idle_hash(w, r->idle_off, m);
}

/* The walk from the registers g (r->ip[0] = g->pc already): r's words, top
 * and frames, the count of frames; *flags what it met. Inside [sp, limit);
 * hi, the stack's top when known (0 not), bounds the words copied in place. */
static uint32_t walk_from(srec *r, const arch_regs *g, uint64_t hi, uint64_t limit, int safe, uint64_t async_fp,
                          uint32_t *flags) {
    uint64_t sp = g->sp, fp = g->fp;
    uint32_t n = 1;
    const unw_index *ix = S.unwind ? unwind_enter() : NULL;
    if (!sp || (sp & 7) || limit < sp + 16) {
        *flags |= REC_UNWALKED;
    } else {
        uint32_t nw = copy_words(r, sp, hi, safe);
        r->nwords = nw;
        r->top = arch_leaf_return(g, nw ? r->words[0] : 0);
        if (!nw)
            *flags |= REC_UNWALKED;
        int chain = nw != 0;
        if (nw && ix && unwind_find(ix, g->pc)) {
            /* native code with unwind tables: exact from the leaf on */
            unw_frame u = {.pc = g->pc, .sp = sp, .fp = fp, .lr = g->lr};
            *flags |= REC_NATIVE_CFI;
            int how = unwind_native(ix, r->ip, &n, MAX_DEPTH, &u, 1, sp, limit, safe);
            mark_interrupted(r, &u);
            if (how == UNW_NO_ROW || how == UNW_BAD_STACK)
                *flags |= REC_UNW_STOP;
            fp = u.fp;
            chain = how == UNW_NOT_NATIVE;
            if (chain && !(fp >= u.sp && fp <= limit - 16 && !(fp & 7))) {
                *flags |= REC_UNW_STOP; /* managed code again, but no frame pointer of its own */
                chain = 0;
            }
        } else if (nw && !(fp >= sp && fp <= limit - 16 && !(fp & 7))) {
            /* Native code built without frame pointers uses that register as
             * it likes, but saves its caller's (callee-saved) on the stack: the
             * first word above SP that points further up the stack at a frame
             * whose saved frame pointer points further up still is taken as
             * the chain's start. The sampler thread keeps the chain so found
             * only if it finds the managed caller below it (REC_FP_FOUND). */
            if (sampler_saved_fp(r->words, nw, sp, limit, safe, &fp) >= 0)
                *flags |= REC_FP_FOUND;
        }
        r->fpoff = chain && fp >= sp && fp <= limit - 16 && !(fp & 7) && fp - sp < (1ull << 31) ? (uint32_t)(fp - sp) : 0;
        if (chain)
            n = walk_chain(r, n, fp, sp, limit, safe, ix, flags, async_fp);
    }
    if (ix)
        unwind_leave();
    return n;
}

/* A record's fields that no walk sets. */
static void rec_start(srec *r, uint64_t pc, uint64_t sp) {
    r->sp = sp;
    r->ip[0] = pc;
    r->top = 0;
    r->nwords = 0;
    r->extra = 0;
    r->frameless = 0;
    r->interrupted = 0;
    r->learned = atomic_load_explicit(&S.frameless_learned, memory_order_relaxed);
    r->async_k = 0;
    r->async_box = 0;
    r->async_chain = 0;
    r->async_resumed = 0;
    r->async_name = 0;
    r->fpoff = 0;
    r->idle_len = 0;
    r->idle_nret = 0;
}

void sampler_take_sample(sslot *s, const void *ucontext, uint32_t weight) {
    unsigned h = atomic_load_explicit(&s->head, memory_order_relaxed);
    unsigned t = atomic_load_explicit(&s->tail, memory_order_acquire);
    if (h - t >= RING) {
        atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
        return;
    }
    srec *r = &slot_ring(s)[h % RING];
    arch_regs g;
    arch_context_regs(ucontext, &g);
    uint64_t sp = g.sp;
    rec_start(r, g.pc, sp);
    uint64_t lo = atomic_load_explicit(&s->lo, memory_order_relaxed);
    uint64_t hi = atomic_load_explicit(&s->hi, memory_order_relaxed);
    uint32_t flags = 0;
    uint64_t async_fp = 0;
    if (!async_sample_state(sp, &async_fp, &r->async_chain, &r->async_resumed, &r->async_name) || async_fp < sp)
        async_fp = 0;
    else
        r->async_box = async_sample_pending(sp, &r->async_seq);
    int known = hi && sp >= lo && sp + 8 <= hi && !(sp & 7);
    unsigned vf;
    if (!known && !(sp & 7) && memread_mapping_now(sp, &lo, &hi, &vf) > 0 &&
        (vf & (MEMREAD_R | MEMREAD_W)) == (MEMREAD_R | MEMREAD_W) && sp >= lo && sp + 8 <= hi) {
        /* the stack's mapping asked of the kernel, one system call (Linux 6.11+), where the
         * walk would read through a system call per frame until the sampler thread's look */
        atomic_store_explicit(&s->lo, lo, memory_order_relaxed);
        atomic_store_explicit(&s->hi, hi, memory_order_relaxed);
        known = 1;
    }
    if (!known) /* the sampler thread looks for the stack's mapping */
        atomic_store_explicit(&s->probe_sp, sp, memory_order_relaxed);
    /* Before the stack's bounds are known (the thread's first samples, until
     * the sampler thread has read /proc/self/maps), the same walk reads through
     * memread, which fails instead of faulting, no further than
     * STACK_GUESS above the stack pointer. */
    uint32_t n = walk_from(r, &g, hi, known ? hi : sp + STACK_GUESS, !known, async_fp, &flags);
    r->n = n; /* idle_frames reads the frames */
    if (S.mode == SAMPLER_WALL && arch_at_syscall(&g)) {
        flags |= REC_WAITING;
        if (S.wall_idle && known) /* what says later that it still waits here (sampler_signal_all) */
            idle_frames(r, (const uint64_t *)(uintptr_t)sp, (hi - sp < IDLE_SPAN ? hi - sp : IDLE_SPAN) / 8);
    }
    r->gc = sampler_gc_now(atomic_load_explicit(&s->tid, memory_order_relaxed));
    r->jit = sampler_jit_now(atomic_load_explicit(&s->tid, memory_order_relaxed));
    if ((flags & REC_WAITING) && sampler_gc_paused(atomic_load_explicit(&s->tid, memory_order_relaxed)))
        flags |= REC_GC_PAUSE;
    r->n = n;
    r->flags = flags;
    r->weight = weight;
    atomic_store_explicit(&s->head, h + 1, memory_order_release);
}

/* Wall mode, the sampler thread: a thread that waits in a system call, walked
 * from its copied stack without a signal (sampler.h). */
int sampler_take_remote(sslot *s, uint64_t pc, uint64_t sp, uint32_t weight) {
    static uint64_t copy[REMOTE_MAX / 8]; /* the sampler thread's */
    uint64_t lo = atomic_load(&s->lo), hi = atomic_load(&s->hi);
    unsigned h = atomic_load_explicit(&s->head, memory_order_relaxed);
    if (!ARCH_REMOTE_WALK || !S.walk || !S.unwind || !hi || sp < lo || sp + 64 > hi || (sp & 7) ||
        h - atomic_load_explicit(&s->tail, memory_order_acquire) >= RING)
        return 0;
    const unw_index *ix = unwind_enter();
    int tables = ix && unwind_find(ix, pc); /* else its frame pointer, which the kernel does not say, is needed */
    if (ix)
        unwind_leave();
    uint64_t len = hi - sp < REMOTE_FIRST ? hi - sp : REMOTE_FIRST;
    for (int pass = 0; tables && pass < 2; pass++) {
        if (memread(sp, copy, len) != (ssize_t)len)
            return 0;
        memread_viewed = (memread_view){sp, sp + len, hi, copy, 0};
        srec *r = &slot_ring(s)[h % RING];
        rec_start(r, pc, sp);
        arch_regs g = {.pc = pc, .sp = sp};
        uint32_t flags = REC_WAITING;
        uint32_t n = walk_from(r, &g, 0, hi, MEMREAD_VIEW, 0, &flags);
        if (memread_viewed.overrun && len < hi - sp && len < REMOTE_MAX) {
            len = hi - sp < REMOTE_MAX ? hi - sp : REMOTE_MAX; /* a deep stack: once more, all of it */
            continue;
        }
        if (memread_viewed.overrun || (flags & (REC_UNW_STOP | REC_UNWALKED)) || n < 2)
            return 0;
        r->n = n; /* idle_frames reads the frames */
        idle_frames(r, copy, (len < IDLE_SPAN ? len : IDLE_SPAN) / 8);
        r->gc = sampler_gc_now(atomic_load_explicit(&s->tid, memory_order_relaxed));
        r->jit = sampler_jit_now(atomic_load_explicit(&s->tid, memory_order_relaxed));
        if (sampler_gc_paused(atomic_load_explicit(&s->tid, memory_order_relaxed)))
            flags |= REC_GC_PAUSE;
        r->flags = flags;
        r->weight = weight;
        return 1; /* published by sampler_remote_commit, once the thread is known not to have run */
    }
    return 0;
}

void sampler_remote_commit(sslot *s) {
    atomic_store_explicit(&s->head, atomic_load_explicit(&s->head, memory_order_relaxed) + 1, memory_order_release);
}
