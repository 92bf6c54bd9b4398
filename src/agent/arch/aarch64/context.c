/* context.c (arch/aarch64): the registers of an interrupted thread (arch.h). */
#include "arch/arch.h"

#include <errno.h>
#include <ucontext.h>

void arch_context_regs(const void *ucontext, arch_regs *r) {
    const mcontext_t *m = &((const ucontext_t *)ucontext)->uc_mcontext;
    r->pc = m->pc;
    r->sp = m->sp;
    r->fp = m->regs[29];
    r->lr = m->regs[30];
    r->ret = m->regs[0];
    r->client = 0; /* arch_hook_edge reads no registers here */
}

uint64_t arch_leaf_return(const arch_regs *r, uint64_t top) {
    (void)top;
    return r->lr;
}

/* `svc #0`: the kernel leaves pc after it when the call returns (-EINTR in
 * x0), or rewinds pc onto it for a call it will restart. Code at pc is mapped;
 * pc-4 is when on the same page. */
#define SVC0 0xd4000001u

int arch_at_syscall(const arch_regs *r) {
    if (r->pc & 3)
        return 0;
    const uint32_t *p = (const uint32_t *)(uintptr_t)r->pc;
    if (p[0] == SVC0)
        return 1;
    return (r->pc & 0xfff) >= 4 && p[-1] == SVC0 && (int64_t)r->ret == -EINTR;
}
