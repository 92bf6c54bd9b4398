/* arch_unwind.h (arch/x86_64): what the unwinder (unwind_cfi.c, unwind.c) needs
 * of the machine: the DWARF numbers of the stack pointer, the frame pointer and
 * the return-address column (System V psABI, figure 3.36), and the rules that
 * hold at a function's first instruction, before its CIE says anything: the
 * call pushed the return address, so CFA = RSP + 8 and the return address is at
 * CFA - 8; RBP is the caller's. */
#ifndef DNP_ARCH_UNWIND_H
#define DNP_ARCH_UNWIND_H

#define ARCH_DW_SP 7  /* rsp */
#define ARCH_DW_FP 6  /* rbp */
#define ARCH_DW_RA 16 /* the return-address column */
#define ARCH_DW_LR -1 /* no link register: the return address is always on the stack */

#define ARCH_UNW_INIT_CFA_OFF 8 /* CFA = SP + 8 at a function's entry */
#define ARCH_UNW_INIT_RA_KIND UNW_R_AT /* the return address: on the stack, */
#define ARCH_UNW_INIT_RA_OFF -8        /* at CFA - 8 */

/* A frame record's caller's stack pointer, from its frame pointer: managed
 * code's frame record is the top of its frame (push rbp; mov rbp, rsp), so
 * the caller's SP is just above the return address. */
#define ARCH_UNW_SP_ABOVE_FRAME 16

/* Whether the sampler thread may walk a thread waiting in a system call from
 * what the kernel says of it (SP and PC, /proc/self/task/TID/syscall) and a
 * copy of its stack, without a signal: the system call's leaf keeps its
 * return address on the stack, so its tables go on from SP alone. */
#define ARCH_REMOTE_WALK 1

/* The kernel's signal frame: a handler returns into the trampoline glibc gives
 * with SA_RESTORER (__restore_rt: mov $15, %rax; syscall, rt_sigreturn), whose
 * FDE says where the interrupted registers lie only by a DWARF expression,
 * which the tables here do not follow. At the trampoline, past the return
 * address the handler popped, SP points at the ucontext: uc_flags, uc_link and
 * uc_stack (40 bytes), then the machine context, whose general registers are
 * in the kernel's struct sigcontext order (r8..r15, rdi, rsi, rbp, rbx, rdx,
 * rax, rcx, rsp, rip: glibc's REG_RBP 10, REG_RSP 15, REG_RIP 16). */
#define ARCH_SIGFRAME 1
#define ARCH_SIGFRAME_UC 0 /* the ucontext starts at the trampoline's SP */
#define ARCH_SIGFRAME_FP (40 + 8 * 10)
#define ARCH_SIGFRAME_SP (40 + 8 * 15)
#define ARCH_SIGFRAME_PC (40 + 8 * 16)

/* Whether the code at pc (readable: inside a library's text) is that trampoline. */
static inline int arch_sigreturn_at(uint64_t pc) {
    static const unsigned char code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    const unsigned char *p = (const unsigned char *)(uintptr_t)pc;
    for (unsigned i = 0; i < sizeof code; i++)
        if (p[i] != code[i])
            return 0;
    return 1;
}

#endif
