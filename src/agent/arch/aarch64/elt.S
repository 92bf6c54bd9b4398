/* elt.S (arch/aarch64): the enter/leave/tailcall hooks (ELT3) for arm64.
 * JITted code calls them directly (bl), with a contract of its own
 * (dotnet/runtime src/coreclr/jit/targetarm64.h, REG_PROFILER_*_ARG_* and
 * AllRegsMask_PROFILER_ENTER_TRASH; the runtime's own ProfileEnterNaked in
 * vm/arm64/asmhelpers.S keeps the same):
 *
 *   Enter, Leave, Tailcall: x10 = FunctionIDOrClientID, x11 = the method's
 *   caller SP; live: x0-x7 (arguments, return values), x8 (the return buffer),
 *   q0-q7 (floating-point and vector arguments and return values, 128 bits),
 *   and fp. Everything else the AAPCS64 lets a callee trash may be trashed
 *   (x9-x17, v16-v31, the upper halves of v8-v15).
 *
 * Each stub saves exactly what is live in a frame record of its own, calls
 * calls_hook_enter/leave/tailcall(client ID, caller SP) (ordinary AAPCS64: it
 * keeps x19-x28, fp and d8-d15), restores and returns.
 *
 * The fast paths of x86-64 (assembly on calls_layout.h, and C that saves every
 * register it uses) are not written for arm64: GCC has no
 * no_caller_saved_registers here, so the fast names are the full stubs. The
 * call trees and counts are the same; each hook costs a full C call. */

#include "arch/asm_func.h"

    .text

/* A frame record (fp, lr) at the bottom of a frame of bytes, fp pointing at it;
 * DNP_FRAME_END takes the frame down and returns. */
.macro DNP_FRAME_BEGIN bytes
    stp x29, x30, [sp, #-\bytes]!
    .cfi_def_cfa_offset \bytes
    .cfi_offset x29, -\bytes
    .cfi_offset x30, -\bytes + 8
    mov x29, sp
.endm

.macro DNP_FRAME_END bytes
    ldp x29, x30, [sp], #\bytes
    .cfi_restore x29
    .cfi_restore x30
    .cfi_def_cfa_offset 0
    ret
.endm

/* The frame: fp, lr at 0; x0-x8 at 16; q0-q7 at 96; 224 bytes in all. */
.macro DNP_ELT_STUB name, target
    DNP_FUNC \name
    DNP_FRAME_BEGIN 224
    stp x0, x1, [sp, #16]
    stp x2, x3, [sp, #32]
    stp x4, x5, [sp, #48]
    stp x6, x7, [sp, #64]
    str x8, [sp, #80]
    stp q0, q1, [sp, #96]
    stp q2, q3, [sp, #128]
    stp q4, q5, [sp, #160]
    stp q6, q7, [sp, #192]
    mov x0, x10
    mov x1, x11
    bl \target
    ldp q0, q1, [sp, #96]
    ldp q2, q3, [sp, #128]
    ldp q4, q5, [sp, #160]
    ldp q6, q7, [sp, #192]
    ldp x0, x1, [sp, #16]
    ldp x2, x3, [sp, #32]
    ldp x4, x5, [sp, #48]
    ldp x6, x7, [sp, #64]
    ldr x8, [sp, #80]
    DNP_FRAME_END 224
    DNP_ENDFUNC \name
.endm

    DNP_ELT_STUB dnp_elt_enter, calls_hook_enter
    DNP_ELT_STUB dnp_elt_leave, calls_hook_leave
    DNP_ELT_STUB dnp_elt_tailcall, calls_hook_tailcall

/* The fast names (calls_internal.h): the full stubs (see above). */
.macro DNP_ELT_ALIAS name, full
    DNP_GLOBAL \name
    .set \name, \full
.endm

    DNP_ELT_ALIAS dnp_elt_enter_timed, dnp_elt_enter
    DNP_ELT_ALIAS dnp_elt_leave_timed, dnp_elt_leave
    DNP_ELT_ALIAS dnp_elt_enter_counts, dnp_elt_enter
    DNP_ELT_ALIAS dnp_elt_leave_counts, dnp_elt_leave
    DNP_ELT_ALIAS dnp_elt_enter_timed_c, dnp_elt_enter
    DNP_ELT_ALIAS dnp_elt_enter_counts_c, dnp_elt_enter

/* void dnp_elt_nop(void): a hook that returns. */
    DNP_FUNC dnp_elt_nop
    ret
    DNP_ENDFUNC dnp_elt_nop

/* void dnp_elt_calibrate(uintptr_t client, uint64_t pairs, void (*enter)(void),
 * void (*leave)(void), uint64_t body, uint64_t caller): calls enter and leave
 * pairs times as JITted code does (client ID and caller SP in x10/x11), for a
 * method whose body is a chain of body dependent multiplies, from a caller
 * that does caller of them between two calls: one chain through all the calls,
 * from argument (x0) to return value (x0) and on (calls.c). */
    DNP_FUNC dnp_elt_calibrate
    DNP_FRAME_BEGIN 64
    stp x19, x20, [sp, #16]
    stp x21, x22, [sp, #32]
    stp x23, x24, [sp, #48]
    .cfi_offset x19, -48
    .cfi_offset x20, -40
    .cfi_offset x21, -32
    .cfi_offset x22, -24
    .cfi_offset x23, -16
    .cfi_offset x24, -8
    mov x19, x0
    mov x20, x1
    mov x21, x2
    mov x22, x3
    mov x23, x4
    mov x24, x5
    cbz x20, 2f
1:
    mov x10, x19
    mov x11, x29
    blr x21
    mov x9, x23
    cbz x9, 4f
3:
    mul x0, x0, x0
    subs x9, x9, #1
    b.ne 3b
4:
    mov x10, x19
    mov x11, x29
    blr x22
    mov x9, x24
    cbz x9, 6f
5:
    mul x0, x0, x0                           /* the caller's own work */
    subs x9, x9, #1
    b.ne 5b
6:
    subs x20, x20, #1
    b.ne 1b
2:
    ldp x19, x20, [sp, #16]
    ldp x21, x22, [sp, #32]
    ldp x23, x24, [sp, #48]
    DNP_FRAME_END 64
    DNP_ENDFUNC dnp_elt_calibrate

    .section .note.GNU-stack, "", %progbits
