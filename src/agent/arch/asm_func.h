/* asm_func.h (arch): the assembler macros every port's elt.S uses for a
 * function: a hidden global symbol, 16-byte aligned, inside its own CFI
 * procedure. For .S files only (after the C preprocessor).
 *
 *   DNP_FUNC name
 *       ...the body...
 *   DNP_ENDFUNC name
 *
 * DNP_GLOBAL name: the symbol alone (for a name .set to another function). */
#ifndef DNP_ARCH_ASM_FUNC_H
#define DNP_ARCH_ASM_FUNC_H

.macro DNP_GLOBAL name
    .globl \name
    .hidden \name
    .type \name, %function
.endm

.macro DNP_FUNC name
    DNP_GLOBAL \name
    .p2align 4
\name:
    .cfi_startproc
.endm

.macro DNP_ENDFUNC name
    .cfi_endproc
    .size \name, . - \name
.endm

#endif
