/* arch.h: what differs between machines, behind one interface (the kernel's
 * arch/ directories): the cycle counter, the registers of a signal context, the
 * frame record, the instructions the sampler reads, the runtime's ELT data and
 * the ELT stubs. The rest of the agent never tests which machine it is on.
 *
 * Each machine is a directory src/agent/arch/<machine>/, which CMakeLists.txt
 * picks from CMAKE_SYSTEM_PROCESSOR (an unknown one fails at configure) and
 * puts on the include path. It holds:
 *   arch_clock.h  ARCH_COUNTER_NAME, arch_counter(), arch_counter_ordered()
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
 * Beside the directories, what the machines share: arch_frame.h
 * (ARCH_FRAME_NEXT, ARCH_FRAME_RET: a frame record's layout, the same on both
 * so far) and asm_func.h (the .S files' function macros).
 *
 * Two are written: x86_64 and aarch64 (docs/arm64.md). A new architecture is
 * a new directory with these files, and a line in CMakeLists.txt. What arm64
 * needed of the interface: a link register (arch_regs.lr, arch_leaf_return,
 * ARCH_RETURN_IN_LR), since a call does not push the return address; fast
 * stubs may simply be the full ones (arch_elt.h) where the compiler cannot
 * build C that saves every register it uses.
 * Native unwinding (unwind.c) takes each machine's DWARF register numbers and
 * its rules at a function's entry from arch_unwind.h.
 * Each machine's decoder has its own unit tests (tests/unit/test_sampler.c
 * for x86-64, test_arch_aarch64.c for arm64), built for that machine only. */
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

/* For arch_counter_usable: whether the kernel keeps its own time with the
 * clocksource of this name (its current_clocksource). The agent's clock.c. */
int arch_kernel_clocksource_is(const char *name);

/* ---- a signal's context (context.c) ---- */

typedef struct arch_regs {
    uint64_t pc, sp, fp;
    uint64_t lr;  /* the link register, 0 on a machine without one */
    uint64_t ret; /* the system-call result register */
    uint64_t client; /* the register JITted code passes the enter hook's client ID in (x86-64 r14) */
} arch_regs;

/* The interrupted registers of a signal handler's ucontext_t. Async-signal-safe. */
void arch_context_regs(const void *ucontext, arch_regs *r);

/* The return address of a leaf that keeps no frame, as the handler sees it:
 * on x86-64 the word at the stack pointer (top), on arm64 the link register.
 * Async-signal-safe. */
uint64_t arch_leaf_return(const arch_regs *r, uint64_t top);

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
 * call) comes first: the frame-pointer chain is then taken as it is; or
 * ARCH_RETURN_IN_LR when the return address has not left the link register
 * (before the frame record is stored, after it is loaded back): the one
 * arch_leaf_return gave. */
#define ARCH_RETURN_IN_LR (-2)
int arch_return_slot(const uint8_t *code, size_t len);

/* Whether code[0..len) (at an interrupted pc, r its registers) lies at the
 * edge of a hooked method, where the agent's shadow stack is a step behind or
 * ahead of the machine (calls_sampled.c): ARCH_EDGE_ENTER, the method's
 * prologue before its enter hook (*value: the client ID it passes); or
 * ARCH_EDGE_LEAVE, its epilogue after its leave hook (*value: its caller SP,
 * where the stack pointer will be once it returns); 0 when neither, or not
 * known on this machine. Pure decoding: async-signal-safe. */
enum { ARCH_EDGE_NONE, ARCH_EDGE_ENTER, ARCH_EDGE_LEAVE };
int arch_hook_edge(const uint8_t *code, size_t len, const arch_regs *r, uint64_t *value);

/* ---- the runtime's ELT data (elt.c) ---- */

/* The caller SP of the method whose slow-path hook got elt (a COR_PRF_ELT_INFO):
 * from the runtime's platform-specific data, checked to lie on this stack above
 * it; 0 when it does not. */
uintptr_t arch_elt_caller_sp(uintptr_t elt);

#endif
