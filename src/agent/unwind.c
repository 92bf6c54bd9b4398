/* unwind.c: the signal handler's steps through native code (unwind.h). It
 * only reads the tables unwind_cfi.c published and the interrupted stack,
 * inside the thread's bounds (or through process_vm_readv before they are
 * known). It never allocates, locks or calls the runtime. */
#include "unwind.h"

#include <stdatomic.h>

#include "arch_unwind.h"
#include "dnp_search.h"
#include "memread.h"

_Atomic(const unw_index *) unwind_index_ptr;
atomic_uint unwind_readers;

const unw_index *unwind_enter(void) {
    atomic_fetch_add(&unwind_readers, 1);
    const unw_index *ix = atomic_load(&unwind_index_ptr);
    if (!ix)
        atomic_fetch_sub(&unwind_readers, 1);
    return ix;
}

void unwind_leave(void) {
    atomic_fetch_sub(&unwind_readers, 1);
}

const unw_lib *unwind_find(const unw_index *ix, uint64_t pc) {
    if (!ix || !ix->n)
        return NULL;
    size_t lo = DNP_FIRST_AFTER(i, ix->n, ix->lib[i]->lo, pc);
    if (!lo)
        return NULL;
    const unw_lib *l = ix->lib[lo - 1];
    if (pc >= l->hi)
        return NULL;
    if (!__atomic_load_n(&l->nrows, __ATOMIC_ACQUIRE)) { /* not parsed yet: the sampler thread will */
        if (!__atomic_load_n(&l->tried, __ATOMIC_RELAXED) && !__atomic_load_n(&l->wanted, __ATOMIC_RELAXED))
            __atomic_store_n((uint8_t *)&l->wanted, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return pc >= l->fde_lo && pc < l->fde_hi ? l : NULL;
}

const unw_row *unwind_row(const unw_lib *l, uint64_t pc) {
    if (!l || pc < l->bias || pc - l->bias > UINT32_MAX)
        return NULL;
    uint32_t a = (uint32_t)(pc - l->bias), lo = 0, hi = l->nrows;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (l->rows[mid].pc <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &l->rows[lo - 1] : NULL;
}

int unwind_read(uint64_t a, uint64_t lo, uint64_t limit, int safe, uint64_t *out) {
    if (a < lo || a > limit - 8 || (a & 7))
        return -1;
    if (!safe) {
        *out = *(const uint64_t *)(uintptr_t)a;
        return 0;
    }
    if (safe == MEMREAD_VIEW)
        return memread_view_read(a, out, 8);
    return memread(a, out, 8) == 8 ? 0 : -1;
}

/* A return into the kernel's signal trampoline (arch_unwind.h): the frame
 * below is a signal handler's, and the interrupted thread's registers are in
 * the ucontext at the trampoline's SP. */
static int signal_step(unw_frame *f, uint64_t lo, uint64_t limit, int safe) {
    uint64_t pc, sp, fp;
    if (unwind_read(f->sp + ARCH_SIGFRAME_PC, lo, limit, safe, &pc) != 0 ||
        unwind_read(f->sp + ARCH_SIGFRAME_SP, lo, limit, safe, &sp) != 0 ||
        unwind_read(f->sp + ARCH_SIGFRAME_FP, lo, limit, safe, &fp) != 0)
        return UNW_BAD_STACK;
    if (pc < 4096 || sp <= f->sp || sp > limit - 8 || (sp & 7))
        return UNW_BAD_STACK; /* an alternate signal stack's frame, or not a signal frame */
    uint64_t lr = 0;
#ifdef ARCH_SIGFRAME_LR
    if (unwind_read(f->sp + ARCH_SIGFRAME_LR, lo, limit, safe, &lr) != 0)
        lr = 0;
#endif
    f->pc = pc;
    f->sp = sp;
    f->fp = fp;
    f->lr = lr;
    f->interrupted = 1;
    return UNW_OK;
}

/* The trampoline handlers return into where no library holds it (arm64: the
 * vDSO's, qemu-user's page), learned from the sampler's own handler. */
static _Atomic uint64_t g_sigtramp;

void unwind_learn_sigtramp(uint64_t ra) {
    if (ARCH_SIGFRAME && ra >= 4096 && !atomic_load_explicit(&g_sigtramp, memory_order_relaxed) &&
        arch_sigreturn_at(ra))
        atomic_store_explicit(&g_sigtramp, ra, memory_order_relaxed);
}

int unwind_step(const unw_index *ix, unw_frame *f, int leaf, uint64_t lo, uint64_t limit, int safe) {
    /* a return address is looked up by the call before it */
    uint64_t look = leaf ? f->pc : f->pc - 1;
    const unw_lib *l = unwind_find(ix, look);
    if (!l)
        return ARCH_SIGFRAME && !leaf && f->pc == atomic_load_explicit(&g_sigtramp, memory_order_relaxed)
                   ? signal_step(f, lo, limit, safe)
                   : UNW_NOT_NATIVE;
    if (ARCH_SIGFRAME && !leaf && f->pc + 16 <= l->hi && arch_sigreturn_at(f->pc))
        return signal_step(f, lo, limit, safe);
    const unw_row *w = unwind_row(l, look);
    if (!w || w->cfa_reg == UNW_CFA_NONE)
        return UNW_NO_ROW;
    unsigned ra_rule = w->rules & 15, fp_rule = w->rules >> 4;
    if (ra_rule == UNW_R_UNDEF)
        return UNW_END;
    uint64_t base = w->cfa_reg == UNW_CFA_SP ? f->sp : f->fp;
    if (w->cfa_reg == UNW_CFA_FP && (base < lo || base >= limit))
        return UNW_BAD_STACK;
    uint64_t cfa = base + (uint64_t)(int64_t)w->cfa_off, ra, fp = f->fp;
    if (ra_rule == UNW_R_SAME && leaf && ARCH_DW_LR == ARCH_DW_RA && f->lr >= 4096 && cfa >= f->sp && cfa <= limit &&
        fp_rule == UNW_R_SAME) {
        /* arm64: an interrupted leaf that keeps its return address in lr (a
         * system call's wrapper, memcpy; any function before its prologue's
         * store): lr is the interrupted one, so its caller is known */
        f->pc = f->lr;
        f->sp = cfa;
        f->lr = 0;
        return UNW_OK;
    }
    f->lr = 0;
    if (ra_rule != UNW_R_AT)
        return UNW_NO_ROW;
    if (cfa <= f->sp || cfa > limit)
        return UNW_BAD_STACK;
    if (unwind_read(cfa + (uint64_t)(8 * (int64_t)w->ra_w), lo, limit, safe, &ra) != 0)
        return UNW_BAD_STACK;
    uint64_t fp_at = cfa + (uint64_t)(8 * (int64_t)w->fp_w);
    if (fp_rule == UNW_R_AT && fp_at < f->sp) {
        /* an epilogue after its pop: compilers do not say the register is
         * restored, but the slot is below SP, so the register is the caller's */
    } else if (fp_rule == UNW_R_AT) {
        if (unwind_read(fp_at, lo, limit, safe, &fp) != 0)
            return UNW_BAD_STACK;
    } else if (fp_rule != UNW_R_SAME) {
        fp = 0; /* not known: a later step that needs it stops */
    }
    if (ra < 4096)
        return UNW_END;
    f->pc = ra;
    f->sp = cfa;
    f->fp = fp;
    return UNW_OK;
}

int unwind_native(const unw_index *ix, uint64_t *ip, uint32_t *n, uint32_t max, unw_frame *f, int leaf,
                  uint64_t lo, uint64_t limit, int safe) {
    for (;;) {
        if (*n >= max)
            return unwind_find(ix, leaf ? f->pc : f->pc - 1) ? UNW_DEPTH : UNW_NOT_NATIVE;
        int rc = unwind_step(ix, f, leaf, lo, limit, safe);
        if (rc != UNW_OK)
            return rc;
        if (f->interrupted) {
            /* the trampoline, ip[*n - 1], gives way to the pc the signal interrupted: the handler's
             * caller, as the thread's code sees it */
            if (!f->signal_at)
                f->signal_at = *n - 1;
            ip[*n - 1] = f->pc;
            f->interrupted = 0;
            leaf = 1; /* an interrupted pc is looked up as itself */
            continue;
        }
        ip[(*n)++] = f->pc;
        leaf = 0;
    }
}
