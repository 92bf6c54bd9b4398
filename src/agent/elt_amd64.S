/* elt_amd64.S: the fast-path enter/leave/tailcall hooks (ELT3) for x86-64
 * System V. JITted code calls them directly, with a contract of its own
 * (dotnet/runtime src/coreclr/jit/targetamd64.h, RBM_PROFILER_*_TRASH):
 *
 *   Enter:    r14 = FunctionIDOrClientID, r15 = the method's caller SP;
 *             live: rdi rsi rdx rcx r8 r9 (integer arguments), xmm0-xmm7 (float
 *             arguments). rax, r10, r11, xmm8-15 may be trashed.
 *   Leave,
 *   Tailcall: rdi = FunctionIDOrClientID, rsi = the method's caller SP;
 *             live: rax rdx xmm0 xmm1 (return values, a struct may use two).
 *
 * Each stub saves exactly what is live, aligns the stack to 16 bytes for the C
 * call (the C side is ordinary SysV: it keeps rbx rbp r12-r15), calls
 * calls_hook_enter/leave/tailcall(client id, caller SP), restores and returns.
 * XMM registers are saved whole (128 bits). The C side must not touch the upper
 * halves of the YMM registers (no AVX code, no vzeroupper through glibc's
 * string functions): see calls.c. A port to another architecture is this one
 * file. */

    .intel_syntax noprefix
    .text

/* void dnp_elt_enter(void): see above. */
    .globl dnp_elt_enter
    .hidden dnp_elt_enter
    .type dnp_elt_enter, @function
    .p2align 4
dnp_elt_enter:
    .cfi_startproc
    push rbp
    .cfi_def_cfa_offset 16
    .cfi_offset rbp, -16
    mov rbp, rsp
    .cfi_def_cfa_register rbp
    sub rsp, 176
    and rsp, -16
    movaps [rsp + 0], xmm0
    movaps [rsp + 16], xmm1
    movaps [rsp + 32], xmm2
    movaps [rsp + 48], xmm3
    movaps [rsp + 64], xmm4
    movaps [rsp + 80], xmm5
    movaps [rsp + 96], xmm6
    movaps [rsp + 112], xmm7
    mov [rsp + 128], rdi
    mov [rsp + 136], rsi
    mov [rsp + 144], rdx
    mov [rsp + 152], rcx
    mov [rsp + 160], r8
    mov [rsp + 168], r9
    mov rdi, r14
    mov rsi, r15
    call calls_hook_enter
    movaps xmm0, [rsp + 0]
    movaps xmm1, [rsp + 16]
    movaps xmm2, [rsp + 32]
    movaps xmm3, [rsp + 48]
    movaps xmm4, [rsp + 64]
    movaps xmm5, [rsp + 80]
    movaps xmm6, [rsp + 96]
    movaps xmm7, [rsp + 112]
    mov rdi, [rsp + 128]
    mov rsi, [rsp + 136]
    mov rdx, [rsp + 144]
    mov rcx, [rsp + 152]
    mov r8, [rsp + 160]
    mov r9, [rsp + 168]
    mov rsp, rbp
    pop rbp
    .cfi_def_cfa rsp, 8
    ret
    .cfi_endproc
    .size dnp_elt_enter, . - dnp_elt_enter

/* Leave and Tailcall: the same frame, a different C function. */
.macro DNP_ELT_RETURN_STUB name, target
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    push rbp
    .cfi_def_cfa_offset 16
    .cfi_offset rbp, -16
    mov rbp, rsp
    .cfi_def_cfa_register rbp
    sub rsp, 48
    and rsp, -16
    movaps [rsp + 0], xmm0
    movaps [rsp + 16], xmm1
    mov [rsp + 32], rax
    mov [rsp + 40], rdx
    call \target
    movaps xmm0, [rsp + 0]
    movaps xmm1, [rsp + 16]
    mov rax, [rsp + 32]
    mov rdx, [rsp + 40]
    mov rsp, rbp
    pop rbp
    .cfi_def_cfa rsp, 8
    ret
    .cfi_endproc
    .size \name, . - \name
.endm

    DNP_ELT_RETURN_STUB dnp_elt_leave, calls_hook_leave
    DNP_ELT_RETURN_STUB dnp_elt_tailcall, calls_hook_tailcall

/* The fast stubs: call a fast path (calls.c), which keeps every register but
 * rax and returns 0 when it did the work, and go on to the full stub above when
 * it returns non-zero (it then changed nothing). Enter: the client ID and caller
 * SP are passed in rdi and rsi, which hold arguments: kept around the call; rax
 * may be trashed. Leave: rdi and rsi already hold them; rax holds a return
 * value: kept in r11, which the fast path keeps and the contract lets us trash. */
.macro DNP_ELT_FAST_ENTER name, fast, full
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    push rdi
    .cfi_adjust_cfa_offset 8
    push rsi
    .cfi_adjust_cfa_offset 8
    mov rdi, r14
    mov rsi, r15
    call \fast
    pop rsi
    .cfi_adjust_cfa_offset -8
    pop rdi
    .cfi_adjust_cfa_offset -8
    test eax, eax
    jnz \full
    ret
    .cfi_endproc
    .size \name, . - \name
.endm

.macro DNP_ELT_FAST_LEAVE name, fast, full
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    mov r11, rax
    call \fast
    test eax, eax
    mov rax, r11
    jnz \full
    ret
    .cfi_endproc
    .size \name, . - \name
.endm

    DNP_ELT_FAST_ENTER dnp_elt_enter_timed, calls_fast_enter_timed, dnp_elt_enter
    DNP_ELT_FAST_LEAVE dnp_elt_leave_timed, calls_fast_leave_timed, dnp_elt_leave
    DNP_ELT_FAST_ENTER dnp_elt_enter_counts, calls_fast_enter_counts, dnp_elt_enter
    DNP_ELT_FAST_LEAVE dnp_elt_leave_counts, calls_fast_leave_counts, dnp_elt_leave

/* void dnp_elt_calibrate(uintptr_t client, uint64_t pairs, void (*enter)(void),
 * void (*leave)(void), uint64_t body): calls enter and leave pairs times as
 * JITted code does (client ID and caller SP in r14/r15, then in rdi/rsi), for a
 * method whose body is a chain of body dependent multiplies, one chain through
 * all the calls, from argument (rdi) to return value (rax) as in a method that
 * computes: the hooks' own cost (calls.c).
 * dnp_elt_nop for both gives the body's own time. */
    .globl dnp_elt_nop
    .hidden dnp_elt_nop
    .type dnp_elt_nop, @function
    .p2align 4
dnp_elt_nop:
    .cfi_startproc
    ret
    .cfi_endproc
    .size dnp_elt_nop, . - dnp_elt_nop

    .globl dnp_elt_calibrate
    .hidden dnp_elt_calibrate
    .type dnp_elt_calibrate, @function
    .p2align 4
dnp_elt_calibrate:
    .cfi_startproc
    push rbp
    .cfi_def_cfa_offset 16
    .cfi_offset rbp, -16
    mov rbp, rsp
    .cfi_def_cfa_register rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    .cfi_offset rbx, -24
    .cfi_offset r12, -32
    .cfi_offset r13, -40
    .cfi_offset r14, -48
    .cfi_offset r15, -56
    push rcx
    push r8
    push r8
    mov r12, rdi
    mov r13, rsi
    mov rbx, rdx
    mov rdi, r12
    test r13, r13
    jz 2f
1:
    mov r14, r12
    mov r15, rbp
    call rbx
    mov rcx, [rsp]
    test rcx, rcx
    jz 4f
3:
    imul rdi, rdi
    dec rcx
    jnz 3b
4:
    mov rax, rdi
    mov rdi, r12
    mov rsi, rbp
    call [rsp + 16]
    mov rdi, rax
    dec r13
    jnz 1b
2:
    pop r8
    pop r8
    pop rcx
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    .cfi_def_cfa rsp, 8
    ret
    .cfi_endproc
    .size dnp_elt_calibrate, . - dnp_elt_calibrate

    .section .note.GNU-stack, "", @progbits
