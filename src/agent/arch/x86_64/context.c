/* context.c (arch/x86_64): the registers of an interrupted thread (arch.h). */
#include "arch/arch.h"

#include <errno.h>
#include <ucontext.h>

void arch_context_regs(const void *ucontext, arch_regs *r) {
    const greg_t *g = ((const ucontext_t *)ucontext)->uc_mcontext.gregs;
    r->pc = (uint64_t)g[REG_RIP];
    r->sp = (uint64_t)g[REG_RSP];
    r->fp = (uint64_t)g[REG_RBP];
    r->lr = 0;
    r->ret = (uint64_t)g[REG_RAX];
    r->client = (uint64_t)g[REG_R14];
}

uint64_t arch_leaf_return(const arch_regs *r, uint64_t top) {
    (void)r;
    return top; /* a call pushes it */
}

/* The kernel rewinds RIP onto the `syscall` instruction (0f 05) of a call it
 * will restart, or leaves it after one that returns -EINTR. Code at RIP is
 * mapped; RIP-2 is when on the same page. */
int arch_at_syscall(const arch_regs *r) {
    const uint8_t *p = (const uint8_t *)(uintptr_t)r->pc;
    if (p[0] == 0x0f && p[1] == 0x05)
        return 1;
    if ((r->pc & 0xfff) >= 2 && p[-2] == 0x0f && p[-1] == 0x05 && (int64_t)r->ret == -EINTR)
        return 1;
    return 0;
}
