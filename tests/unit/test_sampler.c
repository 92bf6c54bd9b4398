/* test_sampler.c: the sampler's pure parts: the x86-64 decoder (arch/x86_64/insn.c:
 * the call-site check that decides whether a word of the stack is a return
 * address, where a leaf's return address is), the saved-frame-pointer guess,
 * and native symbol names (dynamic symbols, and .symtab for what is not
 * exported). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "arch_unwind.h"
#include "sampler.h"
#include "sampler_internal.h"
#include "symbols.h"
#include "test.h"

/* The 8 bytes before a return address: len bytes of an instruction at the end,
 * nops before. */
static int follows(const uint8_t *insn, size_t len) {
    uint8_t b[8];
    memset(b, 0x90, sizeof b);
    memcpy(b + 8 - len, insn, len);
    return arch_follows_call(b);
}

/* The x86-64 decoder's cases run where it is built; arm64's are in
 * test_arch_aarch64.c. */
#define X86_64_ONLY()                                                       \
    do {                                                                    \
        if (!ARCH_IS_X86_64) {                                              \
            printf("the x86-64 decoder is not built for this machine\n");  \
            return DNP_TEST_SKIPPED;                                        \
        }                                                                   \
    } while (0)
#if defined(__x86_64__)
#define ARCH_IS_X86_64 1
#else
#define ARCH_IS_X86_64 0
#endif

TEST(sampler_follows_call) {
    X86_64_ONLY();
    static const uint8_t e8[] = {0xe8, 1, 2, 3, 4};                 /* call rel32 */
    static const uint8_t rip[] = {0xff, 0x15, 1, 2, 3, 4};          /* call [rip+disp32] */
    static const uint8_t reg[] = {0xff, 0xd0};                      /* call rax */
    static const uint8_t r11[] = {0x41, 0xff, 0xd3};                /* call r11 */
    static const uint8_t mem[] = {0x41, 0xff, 0x13};                /* call [r11] */
    static const uint8_t d8[] = {0xff, 0x50, 0x08};                 /* call [rax+8] */
    static const uint8_t d32[] = {0xff, 0x90, 0x00, 0x01, 0, 0};    /* call [rax+0x100] */
    static const uint8_t sib[] = {0xff, 0x54, 0x24, 0x08};          /* call [rsp+8] */
    static const uint8_t sibd32[] = {0xff, 0x14, 0x25, 1, 2, 3, 4}; /* call [disp32] */
    ASSERT(follows(e8, sizeof e8));
    ASSERT(follows(rip, sizeof rip));
    ASSERT(follows(reg, sizeof reg));
    ASSERT(follows(r11, sizeof r11));
    ASSERT(follows(mem, sizeof mem));
    ASSERT(follows(d8, sizeof d8));
    ASSERT(follows(d32, sizeof d32));
    ASSERT(follows(sib, sizeof sib));
    ASSERT(follows(sibd32, sizeof sibd32));
    static const uint8_t jmp[] = {0xff, 0x25, 1, 2, 3, 4}; /* jmp [rip+disp32]: not a call */
    static const uint8_t push[] = {0xff, 0x70, 0x08};      /* push [rax+8]: ff /6 */
    static const uint8_t nops[] = {0x90};
    ASSERT(!follows(jmp, sizeof jmp));
    ASSERT(!follows(push, sizeof push));
    ASSERT(!follows(nops, sizeof nops));
    return 0;
}

#define SLOT(...) arch_return_slot((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

/* Where the return address is when RBP is not the interrupted function's own
 * (docs/sampling.md, "Frame pointers"). */
TEST(sampler_return_slot) {
    X86_64_ONLY();
    /* at the entry, push rbp not done: on top */
    ASSERT_EQ(SLOT(0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10), 0);
    /* after push rbp, at mov rbp, rsp (gcc): one word up */
    ASSERT_EQ(SLOT(0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10), 8);
    ASSERT_EQ(SLOT(0x48, 0x8b, 0xec, 0x90), 8);
    /* the JIT's prologue after push rbp: push rbx; sub rsp, 0x10; lea rbp, [rsp+0x18] */
    ASSERT_EQ(SLOT(0x53, 0x48, 0x83, 0xec, 0x10, 0x48, 0x8d, 0x6c, 0x24, 0x18), 8);
    /* ... at the sub: rbx pushed too */
    ASSERT_EQ(SLOT(0x48, 0x83, 0xec, 0x10, 0x48, 0x8d, 0x6c, 0x24, 0x18), 16);
    /* a large frame: sub rsp, 0x100; lea rbp, [rsp+0x100] (disp32) */
    ASSERT_EQ(SLOT(0x48, 0x81, 0xec, 0x00, 0x01, 0, 0, 0x48, 0x8d, 0xac, 0x24, 0x00, 0x01, 0, 0), 8);
    /* epilogue: RBP is the function's own until pop rbp; then ret finds it on top */
    ASSERT_EQ(SLOT(0x48, 0x83, 0xc4, 0x10, 0x5b, 0x5d, 0xc3), -1);
    ASSERT_EQ(SLOT(0x5d, 0xc3), -1);
    ASSERT_EQ(SLOT(0xc3, 0xcc, 0xcc), 0);
    ASSERT_EQ(SLOT(0xc9, 0xc3), -1);                         /* leave */
    ASSERT_EQ(SLOT(0x48, 0x8d, 0x65, 0xf0, 0x5b, 0x5d, 0xc3), -1); /* lea rsp, [rbp-0x10] */
    /* a frameless leaf (the JIT's Tier1 Tiny): imul; mov rcx, imm64; add; ret */
    ASSERT_EQ(SLOT(0x48, 0x0f, 0xaf, 0xc7, 0x48, 0xb9, 1, 2, 3, 4, 5, 6, 7, 8, 0x48, 0x03, 0xc1, 0xc3), 0);
    /* frameless with a register saved: add; pop rbx; ret */
    ASSERT_EQ(SLOT(0x48, 0x03, 0xc1, 0x5b, 0xc3), 8);
    /* frameless, its stack released: mov [rsp+8], rax; add rsp, 0x18; ret */
    ASSERT_EQ(SLOT(0x48, 0x89, 0x44, 0x24, 0x08, 0x48, 0x83, 0xc4, 0x18, 0xc3), 0x18);
    /* a loop, a call, a write to RSP, code cut short: not known, the chain stands */
    ASSERT_EQ(SLOT(0x48, 0xff, 0xc1, 0x48, 0x3b, 0xc8, 0x7c, 0xd3), -1);
    ASSERT_EQ(SLOT(0xe8, 1, 2, 3, 4, 0xc3), -1);
    ASSERT_EQ(SLOT(0x48, 0x8b, 0xe0, 0xc3), -1); /* mov rsp, rax */
    ASSERT_EQ(SLOT(0x48, 0x89, 0xc5, 0xc3), -1); /* mov rbp, rax */
    ASSERT_EQ(SLOT(0x48, 0xb9, 1, 2, 3), -1);
    /* a return address below the stack pointer cannot be */
    ASSERT_EQ(SLOT(0x58, 0x58, 0x48, 0x83, 0xec, 0x20, 0xc3), -1);
    return 0;
}

/* Not exported: only the executable's .symtab names it. */
__attribute__((noinline)) static int sampler_test_local_function(int x) {
    return x * 3 + 1;
}

/* The edges of a hooked method (arch_hook_edge): the JIT's prologue up to the
 * enter hook's call gives the client ID (the mov r14 ahead, or r14 once it has
 * run), its epilogue after the leave hook the caller SP its ret leaves. */
TEST(sampler_hook_edges) {
    X86_64_ONLY();
    static const uint8_t prolog[] = {
        0x55, 0x41, 0x57, 0x41, 0x56,                               /* push rbp; push r15; push r14 */
        0x48, 0x8d, 0x6c, 0x24, 0x10,                               /* lea rbp, [rsp+0x10] */
        0x49, 0xbe, 0x68, 0x01, 0xba, 0xed, 0xb1, 0x55, 0x00, 0x00, /* mov r14, 0x55b1edba0168 */
        0x4c, 0x8d, 0x7d, 0x10,                                     /* lea r15, [rbp+0x10] */
        0xff, 0x15, 0x00, 0x10, 0x00, 0x00,                         /* call [rip+0x1000] */
        0x33, 0xc0};                                                /* xor eax, eax */
    static const size_t starts[] = {0, 1, 3, 5, 10, 20, 24};
    arch_regs r = {0};
    r.client = 0x1234;
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        ASSERT_EQ(arch_hook_edge(prolog + starts[i], sizeof prolog - starts[i], &r, &v), ARCH_EDGE_ENTER);
        ASSERT_EQ(v, starts[i] <= 10 ? 0x55b1edba0168ull : 0x1234ull); /* after the mov: r14 */
    }
    /* the body after the call is not an edge */
    ASSERT_EQ(arch_hook_edge(prolog + 30, 2, &r, &v), ARCH_EDGE_NONE);
    static const uint8_t epilog[] = {0x90, 0x48, 0x83, 0xc4, 0x08, 0x5b, 0x41, 0x5e, 0x41, 0x5f, 0x5d, 0xc3};
    r.sp = 0x7000; /* nop; add rsp, 8; pop rbx; pop r14; pop r15; pop rbp; ret */
    ASSERT_EQ(arch_hook_edge(epilog, sizeof epilog, &r, &v), ARCH_EDGE_LEAVE);
    ASSERT_EQ(v, 0x7000ull + 8 + 4 * 8 + 8);
    ASSERT_EQ(arch_hook_edge(epilog + 5, sizeof epilog - 5, &r, &v), ARCH_EDGE_LEAVE);
    ASSERT_EQ(v, 0x7000ull + 4 * 8 + 8);
    ASSERT_EQ(arch_hook_edge(epilog + 11, 1, &r, &v), ARCH_EDGE_LEAVE); /* at the ret */
    ASSERT_EQ(v, 0x7008ull);
    /* a body instruction first, or code cut before it decides: none */
    static const uint8_t body[] = {0x48, 0x0f, 0xaf, 0xf9, 0xc3}; /* imul rdi, rcx; ret */
    ASSERT_EQ(arch_hook_edge(body, sizeof body, &r, &v), ARCH_EDGE_NONE);
    ASSERT_EQ(arch_hook_edge(prolog, 8, &r, &v), ARCH_EDGE_NONE);
    return 0;
}

TEST(sampler_native_symbols) {
    char buf[512];
    /* getpid: a libc export that the sanitizers do not intercept */
    pid_t (*volatile pid)(void) = getpid;
    ASSERT_EQ(symbols_name((uintptr_t)pid + 1, buf, sizeof buf), 1);
    ASSERT_EQ(strncmp(buf, "libc.so.6!", 10), 0);
    ASSERT_CONTAINS(buf, "getpid"); /* or an alias: __getpid */
    int (*volatile fn)(int) = sampler_test_local_function;
    ASSERT_EQ(fn(1), 4);
    ASSERT_EQ(symbols_name((uintptr_t)fn + 1, buf, sizeof buf), 1);
    ASSERT_CONTAINS(buf, "!sampler_test_local_function");
    int on_stack = 0;
    ASSERT_EQ(symbols_name((uintptr_t)&on_stack, buf, sizeof buf), 0);
    ASSERT_STREQ(buf, "[anonymous code]");
    symbols_release();
    return 0;
}

/* A stack of 64 words at sp: the saved RBP of a managed caller is the first
 * word pointing further up at a frame whose own saved RBP points further up
 * still, its next word not a small number. */
TEST(sampler_saved_fp) {
    static uint64_t stk[64];
    uint64_t sp = (uint64_t)(uintptr_t)stk, limit = sp + sizeof stk, fp = 0;
#define AT(i) (sp + 8u * (i))
    memset(stk, 0, sizeof stk);
    stk[0] = 0x1234;
    stk[1] = AT(0);        /* points down: not a frame */
    stk[2] = AT(10);       /* a frame whose saved RBP is 0: not one */
    stk[3] = AT(12) + 4;   /* not 8-aligned */
    stk[4] = AT(14);       /* saved RBP above, but the next word is no address */
    stk[14] = AT(30);
    stk[15] = 7;
    stk[5] = AT(20);       /* the managed caller's saved RBP */
    stk[20] = AT(40);
    stk[21] = 0x401000;
    stk[40] = AT(50);
    stk[41] = 0x401100;
    ASSERT_EQ(sampler_saved_fp(stk, 64, sp, limit, 0, &fp), 5);
    ASSERT_EQ(fp, AT(20));
    /* the same through process_vm_readv (before the stack's bounds are known) */
    fp = 0;
    ASSERT_EQ(sampler_saved_fp(stk, 64, sp, limit, 1, &fp), 5);
    ASSERT_EQ(fp, AT(20));
    /* a frame past the stack's end is not read */
    ASSERT_EQ(sampler_saved_fp(stk, 64, sp, AT(21), 0, &fp), -1);
    /* nothing that looks like a frame in the first 20 words; the frame at 20
     * (its saved RBP at 40) is the next one */
    stk[5] = 0x401000;
    ASSERT_EQ(sampler_saved_fp(stk, 20, sp, limit, 0, &fp), -1);
    ASSERT_EQ(sampler_saved_fp(stk, 64, sp, limit, 0, &fp), 20);
    ASSERT_EQ(fp, AT(40));
    /* only the nw words given are looked at */
    stk[5] = AT(20);
    ASSERT_EQ(sampler_saved_fp(stk, 5, sp, limit, 0, &fp), -1);
#undef AT
    return 0;
}

/* An OSR frame at fp whose saved RBP (next) skips the Tier0 frame: the Tier0
 * frame's saved RBP equals next and the word after it is its return address.
 * A copy of next in a local before it, followed by no address (a zero), must
 * not end the look; one followed by a word that is an address is taken too,
 * marked, for the sampler thread to keep the first that follows a call. */
TEST(sampler_osr_scan_past_copies) {
    static uint64_t stk[64];
    static srec r;
    uint64_t fp = (uint64_t)(uintptr_t)stk;
#define W(i) (fp + 8u * (i))
    memset(stk, 0, sizeof stk);
    uint64_t next = W(40);
    stk[0] = next;            /* the OSR frame's own saved RBP (the chain's) */
    stk[1] = 0x401000;        /* its return address: the patchpoint call */
    stk[6] = next;            /* a local's copy of it */
    stk[7] = 0;               /* no address after it */
    stk[10] = next;           /* the Tier0 frame's saved RBP */
    stk[11] = 0x402000;       /* its return address, into the caller */
    memset(&r, 0, sizeof r);
    uint32_t n = 2;
    unsigned budget = 512;
    sampler_osr_scan(&r, &n, fp, next, 0, &budget);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(r.ip[2], 0x402000);
    ASSERT_EQ(r.extra, 1ull << 2);
    /* a copy followed by an address: both taken, in order, at most two */
    stk[7] = 0x7f0000001234;
    stk[20] = next;
    stk[21] = 0x403000;
    memset(&r, 0, sizeof r);
    n = 2;
    budget = 512;
    sampler_osr_scan(&r, &n, fp, next, 0, &budget);
    ASSERT_EQ(n, 4);
    ASSERT_EQ(r.ip[2], 0x7f0000001234);
    ASSERT_EQ(r.ip[3], 0x402000);
    ASSERT_EQ(r.extra, (1ull << 2) | (1ull << 3));
    /* the budget bounds the words read (from fp + 16: stk[2] to stk[5]) */
    memset(&r, 0, sizeof r);
    n = 2;
    budget = 4;
    sampler_osr_scan(&r, &n, fp, next, 0, &budget);
    ASSERT_EQ(n, 2);
    ASSERT_EQ(budget, 0u);
#undef W
    return 0;
}

/* The kernel's signal frame on the machine that runs the test (a kernel, or
 * qemu-user for arm64): a handler returns into the trampoline that
 * arch_sigreturn_at knows, and the interrupted registers are where the
 * unwinder reads them, from the SP at that trampoline (arch_unwind.h). A walk
 * of a thread the GC's suspension stopped inside the runtime's signal handler
 * goes through this frame to the code the thread ran (docs/sampling.md). */
static volatile uint64_t frame_read[3], frame_want[3];
static volatile int frame_tramp, frame_start;

static void frame_handler(int sig, siginfo_t *si, void *ucv) {
    (void)sig;
    frame_tramp = arch_sigreturn_at((uint64_t)(uintptr_t)__builtin_return_address(0));
    const char *at = (const char *)ucv - ARCH_SIGFRAME_UC; /* the SP at the trampoline */
    arch_regs g;
    arch_context_regs(ucv, &g);
    frame_want[0] = g.pc, frame_want[1] = g.sp, frame_want[2] = g.fp;
    memcpy((void *)&frame_read[0], at + ARCH_SIGFRAME_PC, 8);
    memcpy((void *)&frame_read[1], at + ARCH_SIGFRAME_SP, 8);
    memcpy((void *)&frame_read[2], at + ARCH_SIGFRAME_FP, 8);
    frame_start = ARCH_SIGFRAME_UC == 0 || (const char *)si == at; /* arm64: the frame starts with the siginfo */
}

TEST(sampler_signal_frame_layout) {
    if (!ARCH_SIGFRAME) {
        printf("no walk through signal frames on this machine\n");
        return DNP_TEST_SKIPPED;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = frame_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
    raise(SIGUSR2);
    sigaction(SIGUSR2, &old, NULL);
    ASSERT(frame_tramp);
    ASSERT(frame_start);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(frame_read[i], frame_want[i]);
    ASSERT_NE(frame_want[0], 0);
    return 0;
}
