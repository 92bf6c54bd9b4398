/* arch_unwind.h (arch/aarch64): what the unwinder (unwind_cfi.c, unwind.c)
 * needs of the machine (DWARF for the Arm 64-bit Architecture, "DWARF register
 * names"): sp is 31, the frame pointer x29 is 29, the return-address column is
 * x30 (the link register). At a function's first instruction CFA = sp + 0 and
 * the return address is still in x30 itself: a row that says so (a leaf that
 * has not saved lr) ends the walk there, marked, rather than taking a stale
 * word; the sampler finds a leaf's caller from lr itself (arch_leaf_return). */
#ifndef DNP_ARCH_UNWIND_H
#define DNP_ARCH_UNWIND_H

#define ARCH_DW_SP 31 /* sp */
#define ARCH_DW_FP 29 /* x29 */
#define ARCH_DW_RA 30 /* x30, the return-address column */
#define ARCH_DW_LR 30 /* the link register holds it at entry */

#define ARCH_UNW_INIT_CFA_OFF 0        /* CFA = SP at a function's entry */
#define ARCH_UNW_INIT_RA_KIND UNW_R_SAME /* the return address: in x30 */
#define ARCH_UNW_INIT_RA_OFF 0

/* A frame record's caller's stack pointer cannot be told from its frame
 * pointer on arm64 (the record sits at the bottom of its frame, whatever the
 * frame's size): a managed frame's return into native code is not crossed by
 * the tables; the frame-pointer chain goes on instead. */
#define ARCH_UNW_SP_ABOVE_FRAME (-1)

/* No walk of a waiting thread without a signal: the system call's leaf keeps
 * its return address in x30, which /proc/self/task/TID/syscall does not give. */
#define ARCH_REMOTE_WALK 0

/* No walk through the kernel's signal frame here (its trampoline is the
 * vDSO's, which the tables do not index): a stack interrupted by a signal ends
 * at the handler's frames (x86_64's arch_unwind.h; docs/sampling.md). */
#define ARCH_SIGFRAME 0
#define ARCH_SIGFRAME_FP 0
#define ARCH_SIGFRAME_SP 0
#define ARCH_SIGFRAME_PC 0

static inline int arch_sigreturn_at(uint64_t pc) {
    (void)pc;
    return 0;
}

#endif
