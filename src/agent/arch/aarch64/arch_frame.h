/* arch_frame.h (arch/aarch64): a frame record, as `stp x29, x30, [sp, #-N]!;
 * mov x29, sp` leaves it (AAPCS64): the caller's frame pointer (x29) at [fp],
 * the return address (x30, the link register) at [fp+8]. In words from fp. */
#ifndef DNP_ARCH_FRAME_H
#define DNP_ARCH_FRAME_H

#define ARCH_FRAME_NEXT 0 /* the caller's frame pointer */
#define ARCH_FRAME_RET 1  /* the return address into the caller */
#define ARCH_FRAME_WORDS 2

#endif
