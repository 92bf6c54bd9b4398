/* arch_frame.h (arch): a frame record, the same on both machines so far: the
 * caller's frame pointer at [fp], the return address at [fp+8], as x86-64's
 * `push rbp; mov rbp, rsp` and arm64's `stp x29, x30, [sp, #-N]!; mov x29, sp`
 * (AAPCS64: x30 is the link register) leave it. In words from fp. A machine
 * whose record differs would keep its own in its directory instead (arch.h). */
#ifndef DNP_ARCH_FRAME_H
#define DNP_ARCH_FRAME_H

#define ARCH_FRAME_NEXT 0 /* the caller's frame pointer */
#define ARCH_FRAME_RET 1  /* the return address into the caller */
#define ARCH_FRAME_WORDS 2

#endif
