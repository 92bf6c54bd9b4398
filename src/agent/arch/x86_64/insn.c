/* insn.c (arch/x86_64): the few instructions the sampler reads (arch.h): a
 * call before a return address, and how a function's prologue, epilogue or
 * frameless body moves the stack pointer until the return address is found. */
#include "arch/arch.h"

/* Length of the ModRM operand at m (ModRM, SIB, displacement); 0 when it runs
 * past end. */
static size_t modrm_len(const uint8_t *m, const uint8_t *end) {
    if (m >= end)
        return 0;
    unsigned mod = m[0] >> 6, rm = m[0] & 7;
    size_t n = 1;
    if (mod != 3 && rm == 4) {
        if (m + 1 >= end)
            return 0;
        n++;
        if (mod == 0 && (m[1] & 7) == 5)
            n += 4;
    }
    if (mod == 0 && rm == 5)
        n += 4;
    else if (mod == 1)
        n += 1;
    else if (mod == 2)
        n += 4;
    return m + n <= end ? n : 0;
}

/* Whether addr follows a call instruction: e8 rel32, or ff /2 in any of its
 * forms (by register, [reg], [rip+disp32], [reg+disp8/32], with SIB, with a
 * REX prefix). */
int arch_follows_call(const uint8_t b[8]) {
    if (b[3] == 0xe8)
        return 1;
    for (unsigned len = 2; len <= 8; len++) {
        unsigned i = 8 - len, rex = (b[i] & 0xf0) == 0x40;
        if (i + rex + 1 >= 8 || b[i + rex] != 0xff)
            continue;
        const uint8_t *m = b + i + rex + 1; /* ModRM: ends the instruction at b + 8 */
        if (((m[0] >> 3) & 7) == 2 && 1 + rex + modrm_len(m, b + 8) == len)
            return 1;
    }
    return 0;
}

enum { DECIDED_NOT = -1, GO_ON = -2, NOT_STACK = -3 };

/* The slot found at a stack-pointer offset: the answer, or -1 below the stack. */
static int slot_at(int64_t at) {
    return at >= 0 ? (int)at : DECIDED_NOT;
}

/* An instruction at o (after its REX prefix rex, left bytes) that moves RSP or
 * sets RBP: the answer when it decides, GO_ON with *delta and *next moved past
 * it, NOT_STACK when it is none of those. */
static int stack_op(const uint8_t *o, size_t left, unsigned rex, int64_t *delta, const uint8_t **next) {
    unsigned op = o[0], rexb = rex & 1 ? 8 : 0;
    if (op == 0x55 && !rexb) /* push rbp: the return address is on top */
        return slot_at(*delta);
    if (op == 0x5d && !rexb) /* pop rbp ahead: RBP is still the function's own */
        return DECIDED_NOT;
    if (op >= 0x50 && op <= 0x5f) {
        *delta += op <= 0x57 ? -8 : 8;
        *next = o + 1;
        return GO_ON;
    }
    if (op == 0xc3 || op == 0xc2)
        return slot_at(*delta);
    if (op == 0xc9) /* leave */
        return DECIDED_NOT;
    if (rex == 0x48 && left >= 3 && (op == 0x83 || op == 0x81) && (o[1] == 0xec || o[1] == 0xc4)) {
        size_t ilen = op == 0x83 ? 3 : 6;
        if (left < ilen)
            return DECIDED_NOT;
        int64_t imm = op == 0x83 ? (int8_t)o[2] : (int32_t)(o[2] | o[3] << 8 | o[4] << 16 | (uint32_t)o[5] << 24);
        *delta += o[1] == 0xec ? -imm : imm;
        *next = o + ilen;
        return GO_ON;
    }
    if (rex == 0x48 && left >= 3 && ((op == 0x89 && o[1] == 0xe5) || (op == 0x8b && o[1] == 0xec)))
        return slot_at(*delta + 8); /* mov rbp, rsp: RBP will point at the saved RBP */
    if (rex == 0x48 && ((op == 0x89 && left >= 2 && o[1] == 0xec) || (op == 0x8b && left >= 2 && o[1] == 0xe5)))
        return DECIDED_NOT; /* mov rsp, rbp */
    if (rex == 0x48 && op == 0x8d && left >= 2) {
        unsigned m = o[1];
        if ((m == 0x6c || m == 0xac) && left >= 3 && o[2] == 0x24) { /* lea rbp, [rsp+disp] */
            if (left < (m == 0x6c ? 4u : 7u))
                return DECIDED_NOT;
            int64_t d = m == 0x6c ? (int8_t)o[3] : (int32_t)(o[3] | o[4] << 8 | o[5] << 16 | (uint32_t)o[6] << 24);
            return slot_at(*delta + d + 8);
        }
        if ((m & 0xc7) == 0x45 || (m & 0xc7) == 0x85) /* lea rsp, [rbp+disp] (or any lea from rbp) */
            if (((m >> 3) & 7) == 4)
                return DECIDED_NOT;
    }
    return NOT_STACK;
}

/* The length of an instruction at o (after its REX prefix rex) that neither
 * branches nor writes RSP or RBP; 0 for any other. */
static size_t plain_len(const uint8_t *o, const uint8_t *end, unsigned rex) {
    size_t left = (size_t)(end - o);
    unsigned op = o[0], rexb = rex & 1 ? 8 : 0, rexr = rex & 4 ? 8 : 0;
    unsigned reg_dest = 0, rm_dest = 0, imm = 0;
    const uint8_t *m = o + 1;
    if (op == 0x90)
        return 1;
    if (op == 0xc5 && left >= 3 && o[1] == 0xf8 && o[2] == 0x77) /* vzeroupper */
        return 3;
    if (op == 0x0f) {
        if (left < 2)
            return 0;
        unsigned op2 = o[1];
        m = o + 2;
        if (op2 == 0x1f) { /* nop r/m */
            size_t ml = modrm_len(m, end);
            return ml ? 2 + ml : 0;
        }
        if (!(op2 == 0xaf || op2 == 0xb6 || op2 == 0xb7 || op2 == 0xbe || op2 == 0xbf || (op2 & 0xf0) == 0x40))
            return 0;
        reg_dest = 1;
    } else if (op == 0x01 || op == 0x09 || op == 0x21 || op == 0x29 || op == 0x31 || op == 0x89 || op == 0x39 ||
               op == 0x85) {
        rm_dest = 1;
    } else if (op == 0x03 || op == 0x0b || op == 0x23 || op == 0x2b || op == 0x33 || op == 0x8b || op == 0x8d ||
               op == 0x3b || op == 0x63) {
        reg_dest = 1;
    } else if (op == 0x69 || op == 0x6b) {
        reg_dest = 1;
        imm = op == 0x69 ? 4 : 1;
    } else if (op == 0x83 || op == 0xc1 || op == 0x81 || op == 0xc7) {
        rm_dest = 1;
        imm = op == 0x81 || op == 0xc7 ? 4 : 1;
    } else if (op == 0xd1 || op == 0xd3) {
        rm_dest = 1;
    } else if (op == 0xff || op == 0xf7) {
        if (left < 2)
            return 0;
        unsigned r = (o[1] >> 3) & 7; /* ff: inc, dec; f7: not, neg only */
        if (op == 0xff ? r > 1 : (r != 2 && r != 3))
            return 0;
        rm_dest = 1;
    } else if (op >= 0xb8 && op <= 0xbf) {
        unsigned r = (op & 7) | rexb;
        size_t n = 1 + (rex & 8 ? 8 : 4);
        return r == 4 || r == 5 || left < n ? 0 : n;
    } else {
        return 0; /* a branch, a call, or what is not known here */
    }
    size_t ml = modrm_len(m, end);
    if (!ml)
        return 0;
    unsigned mod = m[0] >> 6, reg = ((m[0] >> 3) & 7) | rexr, rm = (m[0] & 7) | rexb;
    if (reg_dest && (reg == 4 || reg == 5))
        return 0;
    if (rm_dest && mod == 3 && (rm == 4 || rm == 5))
        return 0;
    if (m + ml + imm > end)
        return 0;
    return (size_t)(m + ml + imm - o);
}

int arch_return_slot(const uint8_t *code, size_t len) {
    const uint8_t *p = code, *end = code + len;
    int64_t delta = 0; /* the stack pointer at p, from the interrupted one */
    for (int steps = 0; steps < 32 && p < end; steps++) {
        unsigned rex = (p[0] & 0xf0) == 0x40 ? p[0] : 0;
        const uint8_t *o = p + (rex ? 1 : 0);
        if (o >= end)
            return -1;
        int r = stack_op(o, (size_t)(end - o), rex, &delta, &p);
        if (r == GO_ON)
            continue;
        if (r != NOT_STACK)
            return r;
        size_t n = plain_len(o, end, rex);
        if (!n)
            return -1;
        p = o + n;
    }
    return -1;
}

/* ---- the edges of a hooked method (arch_hook_edge) ----
 * What the JIT emits around the ELT3 fast hooks (dotnet/runtime
 * codegenxarch.cpp, genProfilingEnterCallback/LeaveCallback), e.g.
 *   push rbp; push r15; push r14; lea rbp, [rsp+0x10]
 *   mov r14, CLIENT; lea r15, [rbp+0x10]; call [rip+HOOK]   the enter hook
 *   ...
 *   mov rdi, CLIENT; lea rsi, [rbp+0x10]; call [rip+HOOK]   the leave hook
 *   nop; pop r14; pop r15; pop rbp; ret */

/* From code at a prologue instruction: straight on through pushes, frame and
 * stack set-up and the hook's arguments to the call of the hook. The client ID
 * its mov r14 loads, or r14 when that has run; 0 when the code is not that. */
static int enter_edge(const uint8_t *p, const uint8_t *end, const arch_regs *r, uint64_t *client) {
    uint64_t imm = 0;
    int args = 0; /* mov r14 or lea r15 seen */
    for (int steps = 0; steps < 16 && p < end; steps++) {
        size_t left = (size_t)(end - p), n = 0;
        if (p[0] >= 0x50 && p[0] <= 0x57)
            n = 1; /* push */
        else if (left >= 2 && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
            n = 2;
        else if (left >= 5 && p[0] == 0x48 && p[1] == 0x8d && p[2] == 0x6c && p[3] == 0x24)
            n = 5; /* lea rbp, [rsp+disp8] */
        else if (left >= 8 && p[0] == 0x48 && p[1] == 0x8d && p[2] == 0xac && p[3] == 0x24)
            n = 8;
        else if (left >= 3 && p[0] == 0x48 && ((p[1] == 0x89 && p[2] == 0xe5) || (p[1] == 0x8b && p[2] == 0xec)))
            n = 3; /* mov rbp, rsp */
        else if (left >= 4 && p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xec)
            n = 4; /* sub rsp, imm8 */
        else if (left >= 7 && p[0] == 0x48 && p[1] == 0x81 && p[2] == 0xec)
            n = 7;
        else if (left >= 10 && p[0] == 0x49 && p[1] == 0xbe) { /* mov r14, imm64 */
            for (int i = 7; i >= 0; i--)
                imm = imm << 8 | p[2 + i];
            n = 10;
            args = 1;
        } else if (left >= 4 && p[0] == 0x4c && p[1] == 0x8d && p[2] == 0x7d) {
            n = 4; /* lea r15, [rbp+disp8] */
            args = 1;
        } else if (left >= 7 && p[0] == 0x4c && p[1] == 0x8d && p[2] == 0xbd) {
            n = 7;
            args = 1;
        } else if ((left >= 6 && p[0] == 0xff && p[1] == 0x15) || (left >= 5 && p[0] == 0xe8)) {
            /* the call: its client ID is the mov's ahead, or r14 when it ran */
            *client = imm ? imm : r->client;
            return args || steps == 0;
        } else {
            return 0;
        }
        p += n;
    }
    return 0;
}

/* From code in an epilogue after the leave hook: nops, the stack freed, pops,
 * then ret. The caller SP (where ret leaves the stack pointer), or 0. */
static uint64_t leave_edge(const uint8_t *p, const uint8_t *end, const arch_regs *r) {
    uint64_t sp = r->sp;
    for (int steps = 0; steps < 16 && p < end; steps++) {
        size_t left = (size_t)(end - p), n = 0;
        if (p[0] == 0xc3)
            return sp + 8;
        if (p[0] == 0x90) {
            n = 1;
        } else if (left >= 3 && p[0] == 0x0f && p[1] == 0x1f) {
            size_t ml = modrm_len(p + 2, end);
            n = ml ? 2 + ml : 0;
        } else if (p[0] >= 0x58 && p[0] <= 0x5f) {
            sp += 8; /* pop */
            n = 1;
        } else if (left >= 2 && p[0] == 0x41 && p[1] >= 0x58 && p[1] <= 0x5f) {
            sp += 8;
            n = 2;
        } else if (left >= 4 && p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xc4) {
            sp += (uint64_t)(int64_t)(int8_t)p[3]; /* add rsp, imm8 */
            n = 4;
        } else if (left >= 7 && p[0] == 0x48 && p[1] == 0x81 && p[2] == 0xc4) {
            sp += (uint64_t)(int64_t)(int32_t)(p[3] | p[4] << 8 | p[5] << 16 | (uint32_t)p[6] << 24);
            n = 7;
        } else if (left >= 4 && p[0] == 0x48 && p[1] == 0x8d && p[2] == 0x65) {
            sp = r->fp + (uint64_t)(int64_t)(int8_t)p[3]; /* lea rsp, [rbp+disp8] */
            n = 4;
        } else if (left >= 3 && p[0] == 0xc5 && p[1] == 0xf8 && p[2] == 0x77) {
            n = 3; /* vzeroupper */
        }
        if (!n)
            return 0;
        p += n;
    }
    return 0;
}

int arch_hook_edge(const uint8_t *code, size_t len, const arch_regs *r, uint64_t *value) {
    const uint8_t *end = code + len;
    if (enter_edge(code, end, r, value))
        return ARCH_EDGE_ENTER;
    if ((*value = leave_edge(code, end, r)) != 0)
        return ARCH_EDGE_LEAVE;
    return ARCH_EDGE_NONE;
}
