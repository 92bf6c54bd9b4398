/* test_arch_aarch64.c: arm64's machine code (src/agent/arch/aarch64): the
 * call-site check, where a leaf's return address is (in lr until the frame
 * record is stored, and again once it is loaded back), the counter. Built
 * everywhere, run where the agent is arm64's (the cross build's unit tests
 * under qemu-aarch64: .ci/run); elsewhere each says so and is skipped. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "arch/arch.h"
#include "test.h"

#if defined(__aarch64__)
#define ARCH_IS_AARCH64 1
#else
#define ARCH_IS_AARCH64 0
#endif

#define AARCH64_ONLY()                                                      \
    do {                                                                    \
        if (!ARCH_IS_AARCH64) {                                             \
            printf("the arm64 decoder is not built for this machine\n");   \
            return DNP_TEST_SKIPPED;                                        \
        }                                                                   \
    } while (0)

/* Instructions, as the assembler encodes them. */
enum {
    STP_FP_LR_PRE = 0xa9bf7bfdu, /* stp x29, x30, [sp, #-16]! */
    MOV_FP_SP = 0x910003fdu,     /* mov x29, sp */
    ADD_FP_SP_16 = 0x910043fdu,  /* add x29, sp, #16 */
    LDP_FP_LR_POST = 0xa8c17bfdu, /* ldp x29, x30, [sp], #16 */
    LDP_FP_LR_OFF = 0xa9417bfdu, /* ldp x29, x30, [sp, #16] */
    RET = 0xd65f03c0u,
    RETAA = 0xd65f0bffu,
    BL = 0x94000000u,
    BLR_X16 = 0xd63f0200u,
    BLRAAZ_X3 = 0xd63f087fu,
    B_8 = 0x14000002u,
    CBZ = 0xb4000000u,
    NOP = 0xd503201fu,
    PACIASP = 0xd503233fu,
    SUB_SP_32 = 0xd10083ffu,     /* sub sp, sp, #32 */
    ADD_SP_32 = 0x910083ffu,     /* add sp, sp, #32 */
    STP_X19_X20 = 0xa90153f3u,   /* stp x19, x20, [sp, #16] */
    MOV_FP_X0 = 0xaa0003fdu,     /* mov x29, x0 */
    LDR_LR = 0xf94007feu,        /* ldr x30, [sp, #8] */
    MUL = 0x9b007c00u,           /* mul x0, x0, x0 */
};

static int follows(uint32_t insn) {
    uint8_t b[8];
    uint32_t nop = NOP;
    memcpy(b, &nop, 4);
    memcpy(b + 4, &insn, 4);
    return arch_follows_call(b);
}

TEST(arch_aarch64_follows_call) {
    AARCH64_ONLY();
    ASSERT(follows(BL));
    ASSERT(follows(BLR_X16));
    ASSERT(follows(BLRAAZ_X3));
    ASSERT(!follows(B_8));
    ASSERT(!follows(RET));
    ASSERT(!follows(NOP));
    ASSERT(!follows(CBZ));
    return 0;
}

static int slot(const uint32_t *w, size_t n) {
    return arch_return_slot((const uint8_t *)w, n * 4);
}
#define SLOT(...) slot((const uint32_t[]){__VA_ARGS__}, sizeof((const uint32_t[]){__VA_ARGS__}) / 4)

TEST(arch_aarch64_return_slot) {
    AARCH64_ONLY();
    /* the prologue: until the record is stored and made current, lr */
    ASSERT_EQ(SLOT(STP_FP_LR_PRE, MOV_FP_SP, SUB_SP_32), ARCH_RETURN_IN_LR);
    ASSERT_EQ(SLOT(MOV_FP_SP, SUB_SP_32), ARCH_RETURN_IN_LR);
    ASSERT_EQ(SLOT(PACIASP, STP_FP_LR_PRE, MOV_FP_SP), ARCH_RETURN_IN_LR);
    ASSERT_EQ(SLOT(SUB_SP_32, STP_X19_X20, ADD_FP_SP_16), ARCH_RETURN_IN_LR);
    /* the epilogue: the record is the function's until it is loaded back */
    ASSERT_EQ(SLOT(LDP_FP_LR_POST, RET), -1);
    ASSERT_EQ(SLOT(LDP_FP_LR_OFF, ADD_SP_32, RET), -1);
    ASSERT_EQ(SLOT(ADD_SP_32, RET), ARCH_RETURN_IN_LR);
    ASSERT_EQ(SLOT(RET), ARCH_RETURN_IN_LR);
    ASSERT_EQ(SLOT(RETAA), ARCH_RETURN_IN_LR);
    /* a leaf that keeps no frame */
    ASSERT_EQ(SLOT(MUL, MUL, RET), ARCH_RETURN_IN_LR);
    /* a call, a branch, a write of fp or lr first, code cut short: the chain stands */
    ASSERT_EQ(SLOT(MUL, BL, RET), -1);
    ASSERT_EQ(SLOT(CBZ, RET), -1);
    ASSERT_EQ(SLOT(B_8, RET), -1);
    ASSERT_EQ(SLOT(MOV_FP_X0, RET), -1);
    ASSERT_EQ(SLOT(LDR_LR, RET), -1);
    ASSERT_EQ(SLOT(MUL, MUL), -1);
    ASSERT_EQ(arch_return_slot((const uint8_t[]){0xc0, 0x03}, 2), -1);
    return 0;
}

TEST(arch_aarch64_counter) {
    AARCH64_ONLY();
    uint64_t freq = 0;
#if defined(__aarch64__)
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(freq));
#endif
    ASSERT_GT(freq, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t c0 = arch_counter(), o0 = arch_counter_ordered();
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec) < 20000000ll);
    uint64_t c1 = arch_counter(), o1 = arch_counter_ordered();
    ASSERT_GE(o0, c0);
    ASSERT_GT(c1, c0);
    ASSERT_GT(o1, o0);
    /* 20 ms at cntfrq: the counter runs at its stated rate (within a factor of 2) */
    double ticks = (double)(c1 - c0), want = (double)freq * 0.02;
    ASSERT_GT(ticks, want / 2);
    ASSERT_LT(ticks, want * 4);
    return 0;
}
