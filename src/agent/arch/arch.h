/* arch.h: what differs between machines, behind one interface (the kernel's
 * arch/ directories): the cycle counter, the registers of a signal context, the
 * frame record, the instructions the sampler reads, the runtime's ELT data and
 * the ELT stubs. The rest of the agent never tests which machine it is on.
 *
 * Each machine is a directory src/agent/arch/<machine>/, which CMakeLists.txt
 * picks from CMAKE_SYSTEM_PROCESSOR (an unknown one fails at configure) and
 * puts on the include path. It holds:
 *   arch_clock.h  ARCH_COUNTER_NAME, arch_counter(), arch_counter_ordered()
 *   arch_frame.h  ARCH_FRAME_NEXT, ARCH_FRAME_RET: a frame record's layout
 *   arch_elt.h    ARCH_FAST_FN, ARCH_GPR_ONLY, arch_thread_pointer(),
 *                 arch_counter_ordered_gpr(): what the enter fast path needs
 *   arch_unwind.h ARCH_DW_SP, ARCH_DW_FP, ARCH_DW_RA (DWARF numbers), the rules
 *                 at a function's entry, ARCH_UNW_SP_ABOVE_FRAME: what the
 *                 native unwinder (unwind_cfi.c, unwind.c) needs
 *   clock.c       arch_counter_usable()
 *   context.c     arch_context_regs(), arch_at_syscall()
 *   insn.c        arch_follows_call(), arch_return_slot()
 *   elt.c         arch_elt_caller_sp()
 *   elt.S         the ELT3 stubs calls_internal.h lists, on calls_layout.h
 *
 * A new architecture (arm64, say) is a new directory with these files, and a
 * line in CMakeLists.txt:
 *   - the counter: cntvct_el0 (an isb before it for the ordered read); whether
 *     the kernel keeps time with it (clocksource arch_sys_counter). Its rate is
 *     measured against CLOCK_MONOTONIC by clock.c, as the TSC's is.
 *   - the context: uc_mcontext.pc, .sp, .regs[29] (fp), .regs[30] (lr); a
 *     system call is `svc #0` just before pc, its result in x0.
 *   - the frame record: saved x29 at [fp], x30 at [fp+8], as on x86-64.
 *   - arch_unwind.h: sp 31, x29 29, the return-address column 30 (x30); at
 *     entry CFA = sp + 0 and the return address is in x30 itself (unwind.c
 *     then needs arch_regs.lr for a leaf: ARCH_DW_LR and a UNW_R_SAME return
 *     address, and the frame record's caller SP is not fp + 16 on arm64).
 *   - insn.c: a return address follows `bl`/`blr` (the 4 bytes before it).
 *     arch_return_slot answers for code that keeps its return address on the
 *     stack; a leaf that has not saved lr yet has its caller in arch_regs.lr,
 *     which the sampler does not record today (the record would need a word
 *     for it, filled from lr by take_sample).
 *   - elt.c: where the runtime's PROFILE_PLATFORM_SPECIFIC_DATA keeps the
 *     caller's SP (dotnet/runtime vm/arm64/asmconstants.h).
 *   - elt.S: the JIT's profiler-hook contract for the machine (which registers
 *     carry the client ID and caller SP, which are live), the same stubs.
 *   - arch_elt.h: arch_thread_pointer() from tpidr_el0. Where the compiler
 *     has no no_caller_saved_registers, the fast stubs save the caller-saved
 *     registers around calls_fast_enter_*, or simply jump to the full stubs
 *     (dnp_elt_enter_timed = dnp_elt_enter): slower, the same trees.
 * The x86-64 decoder's unit tests (tests/unit/test_sampler.c) are x86-64's:
 * another machine brings its own. */
#ifndef DNP_ARCH_H
#define DNP_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "arch_clock.h"
#include "arch_elt.h"
#include "arch_frame.h"

/* ---- the counter (clock.c) ---- */

/* Whether the cycle counter can time events: constant-rate, and trusted by the
 * kernel for its own clock. Called once, by clock_init. */
int arch_counter_usable(void);

/* ---- a signal's context (context.c) ---- */

typedef struct arch_regs {
    uint64_t pc, sp, fp;
    uint64_t lr;  /* the link register, 0 on a machine without one */
    uint64_t ret; /* the system-call result register */
} arch_regs;

/* The interrupted registers of a signal handler's ucontext_t. Async-signal-safe. */
void arch_context_regs(const void *ucontext, arch_regs *r);

/* Whether the thread was in a system call when interrupted (the code at pc is
 * mapped). Async-signal-safe. */
int arch_at_syscall(const arch_regs *r);

/* ---- the instructions (insn.c): the sampler thread only ---- */

/* Whether the 8 bytes before a return address end with a call instruction. */
int arch_follows_call(const uint8_t b[8]);

/* Where the return address of the function interrupted at code[0] is, when its
 * frame pointer is not (or no longer) its own: code[0..len) is read forward,
 * straight-line, through a prologue, an epilogue or the body of a function
 * that keeps no frame, up to the instruction that decides. Returns the byte
 * offset from the interrupted stack pointer (>= 0), or -1 when the frame
 * pointer is the function's own or when code it does not know (a branch, a
 * call) comes first: the frame-pointer chain is then taken as it is. */
int arch_return_slot(const uint8_t *code, size_t len);

/* ---- the runtime's ELT data (elt.c) ---- */

/* The caller SP of the method whose slow-path hook got elt (a COR_PRF_ELT_INFO):
 * from the runtime's platform-specific data, checked to lie on this stack above
 * it; 0 when it does not. */
uintptr_t arch_elt_caller_sp(uintptr_t elt);

#endif
