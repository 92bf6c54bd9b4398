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

#endif
