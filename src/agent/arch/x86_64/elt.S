/* elt.S (arch/x86_64): the fast-path enter/leave/tailcall hooks (ELT3) for x86-64
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
 * string functions): see calls.c. A port to another architecture writes its
 * own elt.S beside its other files (arch.h). */

#include "arch/asm_func.h"
#include "calls_layout.h"

    .intel_syntax noprefix
    .text

/* The full stubs' frame: rbp's frame record, then bytes below it for the saved
 * registers, the stack aligned to 16 bytes for the C call. */
.macro DNP_FRAME_BEGIN bytes
    push rbp
    .cfi_def_cfa_offset 16
    .cfi_offset rbp, -16
    mov rbp, rsp
    .cfi_def_cfa_register rbp
    sub rsp, \bytes
    and rsp, -16
.endm

.macro DNP_FRAME_END
    mov rsp, rbp
    pop rbp
    .cfi_def_cfa rsp, 8
    ret
.endm

/* The live registers of a full stub, around its C call: saved (save 1) or
 * restored (save 0). DNP_XMM_MOVE: xmm<n> at [rsp + 16 * n], each n listed;
 * DNP_GPR_MOVE: the listed registers 8 bytes apart from [rsp + at]. */
.macro DNP_XMM_MOVE save, regs:vararg
.irp n, \regs
.if \save
    movaps [rsp + 16 * \n], xmm\n
.else
    movaps xmm\n, [rsp + 16 * \n]
.endif
.endr
.endm

.macro DNP_GPR_MOVE save, at, regs:vararg
    .Ldnp_gpr_at = \at
.irp r, \regs
.if \save
    mov [rsp + .Ldnp_gpr_at], \r
.else
    mov \r, [rsp + .Ldnp_gpr_at]
.endif
    .Ldnp_gpr_at = .Ldnp_gpr_at + 8
.endr
.endm

/* void dnp_elt_enter(void): see above. */
    DNP_FUNC dnp_elt_enter
    DNP_FRAME_BEGIN 176
    DNP_XMM_MOVE 1, 0, 1, 2, 3, 4, 5, 6, 7
    DNP_GPR_MOVE 1, 128, rdi, rsi, rdx, rcx, r8, r9
    mov rdi, r14
    mov rsi, r15
    call calls_hook_enter
    DNP_XMM_MOVE 0, 0, 1, 2, 3, 4, 5, 6, 7
    DNP_GPR_MOVE 0, 128, rdi, rsi, rdx, rcx, r8, r9
    DNP_FRAME_END
    DNP_ENDFUNC dnp_elt_enter

/* Leave and Tailcall: the same frame, a different C function. */
.macro DNP_ELT_RETURN_STUB name, target
    DNP_FUNC \name
    DNP_FRAME_BEGIN 48
    DNP_XMM_MOVE 1, 0, 1
    DNP_GPR_MOVE 1, 32, rax, rdx
    call \target
    DNP_XMM_MOVE 0, 0, 1
    DNP_GPR_MOVE 0, 32, rax, rdx
    DNP_FRAME_END
    DNP_ENDFUNC \name
.endm

    DNP_ELT_RETURN_STUB dnp_elt_leave, calls_hook_leave
    DNP_ELT_RETURN_STUB dnp_elt_tailcall, calls_hook_tailcall

/* The C fast stubs of enter (the assembly ones below fall back to them): call
 * the C fast path (calls.c), which keeps every register but rax and returns 0
 * when it did the work, and go on to the full stub above when it returns
 * non-zero (it then changed nothing). The client ID and caller SP are passed in
 * rdi and rsi, which hold arguments: kept around the call; rax may be trashed. */
.macro DNP_ELT_FAST_ENTER name, fast, full
    DNP_FUNC \name
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
    DNP_ENDFUNC \name
.endm


    DNP_ELT_FAST_ENTER dnp_elt_enter_timed_c, calls_fast_enter_timed, dnp_elt_enter
    DNP_ELT_FAST_ENTER dnp_elt_enter_counts_c, calls_fast_enter_counts, dnp_elt_enter

/* The assembly fast paths: the common case of the C fast paths above (calls.c,
 * fast_enter and fast_leave), on the scratch registers each contract allows and
 * a push or two, with no call. The struct offsets are calls_layout.h's (checked
 * by calls.c). Anything uncommon goes, having changed nothing, to the C fast
 * stub (enter: a call path that is not the caller's last child is looked up
 * there in the hash table) or to the full stub (leave).
 *
 * DNP_ELT_SLOT reg, tmp, base: reg = the thread's tls_slot (calls_tls[], keyed
 * by the thread pointer %fs:0 like TLS_SLOT_OF), tmp = the thread pointer; base
 * is trashed. */
.macro DNP_ELT_SLOT reg, tmp, base
    mov \tmp, qword ptr fs:0
    movabs \reg, 0x9E3779B97F4A7C15
    imul \reg, \tmp
    shr \reg, 64 - CALLS_SLOTS_LOG2
    shl \reg, 4
    lea \base, [rip + calls_tls]
    add \reg, \base
.endm

/* Enter: client ID r14, caller SP r15; scratch rax r10 r11 only, the rest is
 * kept (rdi, and for the timed path rdx, pushed). timed: 1 or 0. */
.macro DNP_ELT_ASM_ENTER name, slow, timed
    DNP_FUNC \name
.if \timed
    push rdx
    .cfi_adjust_cfa_offset 8
    lfence
    rdtsc                                    /* first: the hook's work is outside */
    shl rdx, 32
    or rdx, rax                              /* rdx: the clock, until the skew is known */
.endif
    DNP_ELT_SLOT r10, rax, r11
    cmp [r10 + CALLS_SLOT_TP], rax
    jne 8f
    mov r10, [r10 + CALLS_SLOT_T]            /* the thread's state */
.if \timed
    sub rdx, [r10 + CALLS_T_SKEW]            /* now */
    mov rax, rdx
    sub rax, [r10 + CALLS_T_LAST]
    cmp rax, [rip + calls_gap_ticks]
    ja 8f                                    /* a gap: maybe a preemption, the C path */
.endif
    mov eax, [r10 + CALLS_T_DEPTH]
    cmp eax, [r10 + CALLS_T_CAP]
    je 8f
    push rdi
    .cfi_adjust_cfa_offset 8
    test eax, eax
    jz 1f
    lea r11, [rax + rax * 4]
    shl r11, 3
    add r11, [r10 + CALLS_T_STACK]           /* &stack[depth]: the new frame */
    cmp [r11 - CALLS_F_SIZE + CALLS_F_CSP], r15
    jbe 7f                                   /* a dead frame to pop: the C path */
    mov rdi, [r11 - CALLS_F_SIZE + CALLS_F_NP] /* the caller's node */
    jmp 2f
1:
    mov r11, [r10 + CALLS_T_STACK]
    mov rdi, [r10 + CALLS_T_ROOT]            /* node 0, the root */
2:
    push rdi                                 /* the caller's node, for 3 below */
    .cfi_adjust_cfa_offset 8
    mov rdi, [rdi + CALLS_N_LAST_CHILD]
    test rdi, rdi
    jz 3f
    cmp [rdi + CALLS_N_FN], r14
    jne 3f                                   /* another child than last time */
4:
    add rsp, 8
    .cfi_adjust_cfa_offset -8
    cmp dword ptr [rdi + CALLS_N_DIRTY], 0
    je 7f
    add qword ptr [rdi + CALLS_N_CALLS], 1
    mov [r11 + CALLS_F_NP], rdi
    mov [r11 + CALLS_F_CSP], r15
    inc eax
    mov [r10 + CALLS_T_DEPTH], eax
.if \timed
    mov [r11 + CALLS_F_START], rdx
    mov qword ptr [r11 + CALLS_F_CHILD], 0
    mov rax, rdx
    sub rax, [r10 + CALLS_T_LAST]
    mov [r10 + CALLS_T_LAST], rdx
    cmp rax, [r10 + CALLS_T_BUSY]
    jb 9f
    /* the caller computed since the last hook: the part of the hooks' cost
     * that its work hid is given back to its self time (calls.c, calibrate) */
    mov rax, [r10 + CALLS_T_HIDDEN]
    mov rdx, [rdi + CALLS_N_PARENT_P]
    add [rdx + CALLS_N_EXCL], rax
9:
.endif
    mov edi, [rdi + CALLS_N_SELF]
    mov [r11 + CALLS_F_NODE], edi
    pop rdi
    .cfi_adjust_cfa_offset -8
.if \timed
    pop rdx
    .cfi_adjust_cfa_offset -8
.endif
    ret
3:
    /* The function's last node (calls_fn.last, any thread's): the thread's own
     * child of the caller's node when it lies in the thread's first chunk of
     * nodes (then it is safe to read: a thread's end clears the pointers into
     * its nodes before it frees them), is the function's and its parent is that
     * node. Else the hash table, in C. */
.if \timed
    .cfi_def_cfa_offset 32
.else
    .cfi_def_cfa_offset 24
.endif
    mov rdi, [r14 + CALLS_FN_LAST]           /* read once: other threads write it */
    test rdi, rdi
    jz 5f
    push rdi
    .cfi_adjust_cfa_offset 8
    sub rdi, [r10 + CALLS_T_ROOT]
    cmp rdi, CALLS_CHUNK_BYTES
    jae 6f                                   /* not in the thread's first chunk: maybe not its own */
    mov rdi, [rsp]
    cmp [rdi + CALLS_N_FN], r14
    jne 6f
    mov rdi, [rdi + CALLS_N_PARENT_P]
    cmp rdi, [rsp + 8]
    jne 6f
    pop qword ptr [rdi + CALLS_N_LAST_CHILD] /* the caller's last child now */
    .cfi_adjust_cfa_offset -8
    mov rdi, [rdi + CALLS_N_LAST_CHILD]
    jmp 4b
6:
    .cfi_adjust_cfa_offset 8                 /* the node pushed above is still there */
    add rsp, 8
    .cfi_adjust_cfa_offset -8
5:
    add rsp, 8
    .cfi_adjust_cfa_offset -8
7:
.if \timed
    .cfi_def_cfa_offset 24
.else
    .cfi_def_cfa_offset 16
.endif
    pop rdi
    .cfi_adjust_cfa_offset -8
8:
.if \timed
    .cfi_def_cfa_offset 16
    pop rdx
.endif
    .cfi_def_cfa_offset 8
    jmp \slow
    DNP_ENDFUNC \name
.endm

/* Leave: client ID rdi, caller SP rsi; rax rdx xmm0 xmm1 are live (rax and rdx
 * kept in r10 and r11 by the timed path, whose rdtsc needs them); scratch rcx
 * r8 r9, and rdi rsi once the return is known to be the fast one. */
.macro DNP_ELT_ASM_LEAVE name, timed
    DNP_FUNC \name
.if \timed
    mov r10, rax
    mov r11, rdx
    lfence
    rdtsc                                    /* first: the hook's work is outside */
    shl rdx, 32
    or rax, rdx
.endif
    DNP_ELT_SLOT r8, rcx, r9
    cmp [r8 + CALLS_SLOT_TP], rcx
    jne 9f
    mov r8, [r8 + CALLS_SLOT_T]              /* the thread's state */
    cmp dword ptr [r8 + CALLS_T_SKIPPED], 0
    jne 9f
.if \timed
    sub rax, [r8 + CALLS_T_SKEW]             /* now */
    mov rcx, rax
    sub rcx, [r8 + CALLS_T_LAST]
    cmp rcx, [rip + calls_gap_ticks]
    ja 9f
    mov rcx, rax
    sub rcx, [r8 + CALLS_T_NEXT_EMIT]
    jns 9f                                   /* time to write the tree out */
.else
    cmp dword ptr [r8 + CALLS_T_COUNTDOWN], 0
    je 9f                                    /* time to look at the clock */
.endif
    mov ecx, [r8 + CALLS_T_DEPTH]
    test ecx, ecx
    jz 9f
    lea r9, [rcx + rcx * 4]
    shl r9, 3
    add r9, [r8 + CALLS_T_STACK]             /* &stack[depth]; the frame is below */
    cmp [r9 - CALLS_F_SIZE + CALLS_F_CSP], rsi
    jne 9f
.if \timed
    mov rdx, [r9 - CALLS_F_SIZE + CALLS_F_NP]
    cmp [rdx + CALLS_N_FN], rdi
    jne 9f
    cmp dword ptr [rdx + CALLS_N_DIRTY], 0
    je 9f
    lea esi, [rcx - 1]
    mov [r8 + CALLS_T_DEPTH], esi
    mov [r8 + CALLS_T_LAST], rax
    xor edi, edi
    sub rax, [r9 - CALLS_F_SIZE + CALLS_F_START]
    cmovb rax, rdi                           /* inclusive time */
    add [rdx + CALLS_N_INCL], rax
    mov rcx, rax
    sub rcx, [r9 - CALLS_F_SIZE + CALLS_F_CHILD]
    cmovb rcx, rdi                           /* exclusive time */
    add [rdx + CALLS_N_EXCL], rcx
    test esi, esi
    jz 1f
    add [r9 - 2 * CALLS_F_SIZE + CALLS_F_CHILD], rax
1:
    mov rax, r10
    mov rdx, r11
    ret
9:
    mov rax, r10
    mov rdx, r11
    jmp dnp_elt_leave
.else
    mov r9, [r9 - CALLS_F_SIZE + CALLS_F_NP]
    cmp [r9 + CALLS_N_FN], rdi
    jne 9f
    cmp dword ptr [r9 + CALLS_N_DIRTY], 0
    je 9f
    dec dword ptr [r8 + CALLS_T_COUNTDOWN]
    dec ecx
    mov [r8 + CALLS_T_DEPTH], ecx
    ret
9:
    jmp dnp_elt_leave
.endif
    DNP_ENDFUNC \name
.endm

    DNP_ELT_ASM_ENTER dnp_elt_enter_timed, dnp_elt_enter_timed_c, 1
    DNP_ELT_ASM_LEAVE dnp_elt_leave_timed, 1
    DNP_ELT_ASM_ENTER dnp_elt_enter_counts, dnp_elt_enter_counts_c, 0
    DNP_ELT_ASM_LEAVE dnp_elt_leave_counts, 0

/* void dnp_elt_calibrate(uintptr_t client, uint64_t pairs, void (*enter)(void),
 * void (*leave)(void), uint64_t body, uint64_t caller): calls enter and leave
 * pairs times as JITted code does (client ID and caller SP in r14/r15, then in
 * rdi/rsi), for a method whose body is a chain of body dependent multiplies,
 * from a caller that does caller of them between two calls: one chain through
 * all the calls, from argument (rdi) to return value (rax) and on, as in
 * methods that compute: the hooks' own cost (calls.c).
 * dnp_elt_nop for both gives the body's own time. */
    DNP_FUNC dnp_elt_nop
    ret
    DNP_ENDFUNC dnp_elt_nop

    DNP_FUNC dnp_elt_calibrate
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
    push r9
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
    mov rcx, [rsp + 8]
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
    mov rcx, [rsp]
    test rcx, rcx
    jz 6f
5:
    imul rdi, rdi                            /* the caller's own work */
    dec rcx
    jnz 5b
6:
    dec r13
    jnz 1b
2:
    pop r9
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
    DNP_ENDFUNC dnp_elt_calibrate

    .section .note.GNU-stack, "", @progbits
