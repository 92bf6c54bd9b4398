/* arch_frame.h (arch/x86_64): a frame record, as `push rbp; mov rbp, rsp`
 * leaves it: the caller's frame pointer at [fp], the return address at [fp+8].
 * In words from fp. */
#ifndef DNP_ARCH_FRAME_H
#define DNP_ARCH_FRAME_H

#define ARCH_FRAME_NEXT 0 /* the caller's frame pointer */
#define ARCH_FRAME_RET 1  /* the return address into the caller */
#define ARCH_FRAME_WORDS 2

#endif
