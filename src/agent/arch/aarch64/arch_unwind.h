/* arch_unwind.h (arch/aarch64): what the unwinder (unwind_cfi.c, unwind.c)
 * needs of the machine (DWARF for the Arm 64-bit Architecture, "DWARF register
 * names"): sp is 31, the frame pointer x29 is 29, the return-address column is
 * x30 (the link register). At a function's first instruction CFA = sp + 0 and
 * the return address is still in x30 itself. At the walk's first frame (and
 * the first after a signal frame) x30 is the interrupted one, so a row that
 * says so (a leaf that has not saved lr: a system call's wrapper, memcpy)
 * steps to lr; anywhere else such a row ends the walk, marked, rather than
 * taking a stale word. */
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

/* The kernel's signal frame (arch/arm64/kernel/signal.c; qemu-user builds
 * the same): a handler is entered with SP at a struct rt_sigframe, and x30
 * pointing at the trampoline `mov x8, #139; svc #0` (rt_sigreturn), the
 * vDSO's, or under qemu-user a page of qemu's own. The frame: the siginfo (128
 * bytes), then the ucontext: uc_flags, uc_link, uc_stack, uc_sigmask with room
 * for 1024 signals (168 bytes), then the machine context aligned to 16:
 * fault_address, x0..x30, sp, pc. The trampoline lies in no library the
 * tables index, so the sampler's handler learns its address, the return
 * address it was itself called with (unwind_learn_sigtramp). Offsets from
 * the SP at the trampoline (the handler's CFA); ARCH_SIGFRAME_UC, where the
 * ucontext starts (unit.sampler_signal_frame_layout checks them on the
 * running kernel or emulator). */
#define ARCH_SIGFRAME 1
#define ARCH_SIGFRAME_UC 128
#define ARCH_SIGFRAME_FP (ARCH_SIGFRAME_UC + 184 + 8 * 29)
#define ARCH_SIGFRAME_SP (ARCH_SIGFRAME_UC + 184 + 8 * 31)
#define ARCH_SIGFRAME_PC (ARCH_SIGFRAME_UC + 184 + 8 * 32)
#define ARCH_SIGFRAME_LR (ARCH_SIGFRAME_UC + 184 + 8 * 30)

/* Whether the code at pc (readable: a library's text, or the trampoline a
 * handler was called from) is that trampoline. */
static inline int arch_sigreturn_at(uint64_t pc) {
    const uint32_t *p = (const uint32_t *)(uintptr_t)pc;
    return p[0] == 0xd2801168u && p[1] == 0xd4000001u;
}

#endif
