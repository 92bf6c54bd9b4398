/* insn.c (arch/aarch64): the few instructions the sampler reads (arch.h): a
 * call before a return address, and where a function's return address is while
 * its frame record is not (or no longer) set up. Instructions are 4 bytes,
 * little-endian. */
#include "arch/arch.h"

#include <string.h>

static uint32_t word_at(const uint8_t *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* bl imm26; blr xn; blraa, blrab, blraaz, blrabz (pointer authentication). */
static int is_call(uint32_t w) {
    return (w & 0xfc000000u) == 0x94000000u || (w & 0xfffffc1fu) == 0xd63f0000u ||
           (w & 0xfefff800u) == 0xd63f0800u;
}

int arch_follows_call(const uint8_t b[8]) {
    return is_call(word_at(b + 4));
}

/* ret, retaa, retab */
static int is_ret(uint32_t w) {
    return (w & 0xfffffc1fu) == 0xd65f0000u || w == 0xd65f0bffu || w == 0xd65f0fffu;
}

/* b, bl, b.cond, cbz/cbnz, tbz/tbnz, and every branch to a register
 * (br, blr, eret, ...; ret is tested first). */
static int is_branch(uint32_t w) {
    return (w & 0x7c000000u) == 0x14000000u || (w & 0xff000010u) == 0x54000000u ||
           (w & 0x7e000000u) == 0x34000000u || (w & 0x7e000000u) == 0x36000000u ||
           (w & 0xfe000000u) == 0xd6000000u || (w & 0xffe0001fu) == 0xd4200000u; /* brk */
}

/* stp/ldp of 64-bit registers, any addressing mode: x29 and x30 as the pair. */
static int is_pair_fp_lr(uint32_t w) {
    return (w & 0xfe000000u) == 0xa8000000u && (w & 0x7c1fu) == (30u << 10 | 29u);
}

/* add x29, sp, #imm (mov x29, sp): the frame record becomes the function's. */
static int is_set_fp(uint32_t w) {
    return (w & 0xff8003ffu) == 0x910003fdu;
}

/* Any other write of x29 or x30 that we know of: ldr, ldp with either, a
 * move into them. */
static int writes_fp_lr(uint32_t w) {
    unsigned rt = w & 31u;
    int load = (w & 0xbfc00000u) == 0xb9400000u || (w & 0xffe00c00u) == 0xf8400000u ||
               (w & 0xffe00400u) == 0xf8400400u; /* ldr x, [..]: unsigned offset, unscaled, pre/post index */
    int pair_load = (w & 0xfe400000u) == 0xa8400000u && (rt >= 29u || ((w >> 10) & 31u) >= 29u);
    int mov = (w & 0xffe0ffe0u) == 0xaa0003e0u; /* mov xd, xm (orr xd, xzr, xm) */
    return pair_load || ((load || mov) && (rt == 29u || rt == 30u));
}

/* Read forward from the interrupted pc: until the frame record is stored
 * (stp x29, x30) or made current (mov x29, sp), and after it was loaded back
 * (only a ret left), the return address is in lr and the frame pointer is the
 * caller's. Before the record is loaded back (ldp x29, x30), or where code
 * branches first, the chain is taken as it is. */
int arch_return_slot(const uint8_t *code, size_t len) {
    for (size_t i = 0; i + 4 <= len; i += 4) {
        uint32_t w = word_at(code + i);
        if (is_ret(w))
            return ARCH_RETURN_IN_LR;
        if (is_pair_fp_lr(w))
            return w & (1u << 22) ? -1 : ARCH_RETURN_IN_LR; /* a load: the record is still the function's */
        if (is_set_fp(w))
            return ARCH_RETURN_IN_LR;
        if (is_branch(w) || writes_fp_lr(w))
            return -1;
    }
    return -1;
}

/* Not read on arm64 yet (docs/arm64.md): a sample at a hooked method's edge
 * goes to the frame the shadow stack has on top. */
int arch_hook_edge(const uint8_t *code, size_t len, const arch_regs *r, uint64_t *value) {
    (void)code;
    (void)len;
    (void)r;
    (void)value;
    return ARCH_EDGE_NONE;
}
