/* test_memread.c: reading the process's own memory without faulting
 * (src/agent/memread.c), one read and many in a batch. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memread.h"
#include "test.h"

TEST(memread_batch_reads_each_and_marks_holes) {
    uint64_t words[5] = {0x1111111111111111ull, 0x2222222222222222ull, 0x3333333333333333ull,
                         0x4444444444444444ull, 0x5555555555555555ull};
    /* a page that is mapped, then taken away: an address that faults */
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT(page != MAP_FAILED);
    munmap(page, 4096);
    enum { N = 150 }; /* more than one system call's worth (64), holes inside */
    uint64_t at[N];
    for (uint32_t i = 0; i < N; i++)
        at[i] = i % 7 == 3 ? (uint64_t)(uintptr_t)page + 8 : (uint64_t)(uintptr_t)&words[i % 5];
    uint8_t out[N * 8], ok[N];
    memset(out, 0, sizeof out);
    memset(ok, 2, sizeof ok);
    memread_batch(at, N, 8, out, ok);
    for (uint32_t i = 0; i < N; i++) {
        if (i % 7 == 3) {
            ASSERT_EQ(ok[i], 0);
            continue;
        }
        ASSERT_EQ(ok[i], 1);
        uint64_t v;
        memcpy(&v, out + 8 * i, 8);
        ASSERT_EQ(v, words[i % 5]);
    }
    /* and one by one, as before */
    uint64_t v = 0;
    ASSERT_EQ(memread((uint64_t)(uintptr_t)&words[2], &v, 8), 8);
    ASSERT_EQ(v, words[2]);
    ASSERT_EQ(memread((uint64_t)(uintptr_t)page, &v, 8), -1);
    return 0;
}

/* The copy of a waiting thread's stack (the sampler thread's remote walk):
 * reads and places inside the copy succeed, a read that reaches past the
 * copy but not past the stack's top fails and marks the walk as needing more
 * of it, one outside the stack fails without the mark. */
TEST(memread_view_inside_past_and_outside) {
    static uint64_t copy[16];
    for (unsigned i = 0; i < 16; i++)
        copy[i] = 100 + i;
    uint64_t lo = 0x7f0000001000ull;
    memread_viewed = (memread_view){lo, lo + sizeof copy, lo + 4096, copy, 0};
    uint64_t w = 0;
    ASSERT_EQ(memread_view_read(lo + 8, &w, 8), 0);
    ASSERT_EQ(w, 101);
    const uint64_t *at = memread_view_at(lo + 15 * 8, 8);
    ASSERT(at == &copy[15]);
    ASSERT_EQ(memread_viewed.overrun, 0);
    ASSERT(memread_view_at(lo + 15 * 8, 16) == NULL); /* past the copy, inside the stack */
    ASSERT_EQ(memread_viewed.overrun, 1);
    memread_viewed.overrun = 0;
    ASSERT_EQ(memread_view_read(lo + 4096, &w, 8), -1); /* above the stack's top */
    ASSERT(memread_view_at(lo - 8, 8) == NULL);        /* below the copy */
    ASSERT_EQ(memread_viewed.overrun, 0);
    return 0;
}
