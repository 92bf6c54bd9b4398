/* stack_cache.c: the string number of the current thread's managed stack,
 * cached per thread (stack.h).
 *
 * Built with frame pointers, as the whole agent is (CMakeLists.txt): the fast
 * way to a stack seen before walks them from here out through the callback. */
#include "stack.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "agent.h"
#include "async.h"
#include "arch/arch.h"
#include "names.h"
#include "recorder.h"
#include "thread_mem.h"

#define STACK_TEXT_MAX 8192
#define STACK_SLOTS 1024

static atomic_uint g_gen; /* a new trace: cached string numbers are stale */

/* This thread's caches (thread_mem.h): the stacks by the key of their frames,
 * and the frame-pointer walks that stand for them (below). */
typedef struct stack_walk {
    uint64_t key, exact; /* the walk's key; the snapshot's key */
    uint32_t sid;
    uint16_t hits;
    uint8_t ambiguous;
} stack_walk;
typedef struct stack_tls {
    struct {
        uint64_t key;
        uint32_t sid;
    } stacks[STACK_SLOTS];
    stack_walk walks[STACK_SLOTS];
} stack_tls;
static __thread thread_mem_slot t_mem;

void stack_cache_invalidate(void) {
    atomic_fetch_add(&g_gen, 1);
}

/* The length of the stack text's leading frames that are the runtime's managed
 * event source raising the event (Lock's contention, WaitHandle's waits on .NET
 * 9+ are raised from managed code): the program does not wait in them. The
 * innermost frame kept is the code that raised it (Lock::TryEnterSlow). */
static size_t event_source_frames(const char *text, size_t len) {
    static const char src[] = "System.Diagnostics.Tracing.NativeRuntimeEventSource::";
    size_t at = 0;
    while (len - at > sizeof src - 1 && memcmp(text + at, src, sizeof src - 1) == 0) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl)
            return 0; /* the event source alone: kept, a stack is never empty */
        at = (size_t)(nl - text) + 1;
    }
    return at;
}

/* The stack's string number: from the event's frames when the runtime gives
 * them, else from a snapshot of this thread (the runtime's in-process sessions
 * deliver no frames on .NET 10). Innermost frame first. *key_out: the key of
 * the frames found (the same frames, the same key). */
static uint32_t exact_stack_sid(stack_tls *t, ULONG nframes, const UINT_PTR *frames, uint64_t *key_out) {
    *key_out = 0;
    stack_snapshot s;
    s.n = s.more = 0;
    uint64_t key = 0xcbf29ce484222325ull;
    if (nframes && frames) {
        for (ULONG i = 0; i < nframes && i < STACK_MAX_FRAMES; i++)
            key = (key ^ (uint64_t)frames[i]) * 0x100000001b3ull;
        key ^= nframes;
    } else {
        if (stack_take(&s) != 0 || !s.n)
            return 0;
        for (unsigned i = 0; i < s.n; i++)
            key = (key ^ (uint64_t)s.f[i]) * 0x100000001b3ull;
        key ^= (uint64_t)s.n << 32 | s.more;
    }
    key ^= async_here_key() * 0xc2b2ae3d27d4eb4full; /* the same frames awaited by other callers */
    key = (key * 0x9e3779b97f4a7c15ull) | 1;
    *key_out = key;
    unsigned slot = (unsigned)(key >> 40) & (STACK_SLOTS - 1);
    if (t && t->stacks[slot].key == key)
        return t->stacks[slot].sid;
    if (nframes && frames) {
        for (ULONG i = 0; i < nframes; i++) {
            FunctionID fid = 0;
            if (FAILED(INFO_CALL(GetFunctionFromIP, (LPCBYTE)frames[i], &fid)) || !fid)
                continue; /* a stub or native frame */
            stack_push(&s, fid);
        }
    }
    unsigned logical = async_logical_stack(s.f, s.n, STACK_MAX_FRAMES); /* a resume's awaiting callers (async.h) */
    if (logical != s.n) {
        s.n = logical;
        s.more = 0;
    }
    char text[STACK_TEXT_MAX];
    size_t len = names_frames_text(s.f, s.n, s.more, 512, text, sizeof text);
    size_t skip = event_source_frames(text, len);
    uint32_t sid = s.n ? rec_string(text + skip, len - skip) : 0;
    if (t) {
        t->stacks[slot].key = key;
        t->stacks[slot].sid = sid;
    }
    return sid;
}

/* ---- the fast way to a stack seen before ----
 *
 * DoStackSnapshot costs about as much as the runtime's event. Most samples come
 * from a stack seen before, so the agent first walks its own thread's frame
 * pointers (return addresses, ~100 ns) and looks the walk up in a per-thread
 * cache of what the snapshot gave for it. That walk alone cannot be the stack:
 * the JIT gives some methods no frame record, and their callers are missing from
 * it, so two stacks can walk the same (a virtual call in a frameless method).
 * So the walk is only a key: a new key takes a snapshot, and every VERIFY_EVERY
 * hits of a key a snapshot checks it; a key seen to stand for two stacks is
 * marked and always snapshot from then on. */
#define VERIFY_EVERY 16
#define WALK_MAX 128

static __thread uintptr_t t_stack_lo, t_stack_hi; /* this thread's stack; 0: not known yet */

/* The return addresses of this thread's frames by frame pointer, from here out,
 * every read within the thread's own stack. Needs this file and the callback
 * that calls it built with frame pointers (CMakeLists.txt); libcoreclr keeps them. */
static ULONG fp_walk(UINT_PTR *ips, ULONG cap) {
    if (!t_stack_hi) {
        pthread_attr_t a;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &a) != 0)
            return 0;
        pthread_attr_getstack(&a, &addr, &size);
        pthread_attr_destroy(&a);
        t_stack_lo = (uintptr_t)addr;
        t_stack_hi = t_stack_lo + size;
    }
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    ULONG n = 0;
    while (n < cap && fp >= t_stack_lo && fp <= t_stack_hi - 16 && (fp & 7) == 0) {
        uintptr_t next = ((const uintptr_t *)fp)[ARCH_FRAME_NEXT], ret = ((const uintptr_t *)fp)[ARCH_FRAME_RET];
        if (!ret)
            break;
        ips[n++] = ret;
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

uint32_t stack_sid_here(ULONG nframes, const UINT_PTR *frames) {
    /* NULL: nothing cached */
    stack_tls *t = thread_mem(&t_mem, sizeof *t, atomic_load_explicit(&g_gen, memory_order_relaxed));
    uint64_t exact;
    if (nframes && frames)
        return exact_stack_sid(t, nframes, frames, &exact);
    UINT_PTR ips[WALK_MAX];
    ULONG n = t ? fp_walk(ips, WALK_MAX) : 0;
    if (n < 4) /* no walk to speak of: the snapshot, uncached by walk */
        return exact_stack_sid(t, 0, NULL, &exact);
    uint64_t key = 0x9ae16a3b2f90404full ^ n;
    for (ULONG i = 0; i < n; i++)
        key = (key ^ (uint64_t)ips[i]) * 0x100000001b3ull;
    key ^= async_here_key() * 0xc2b2ae3d27d4eb4full;
    key = (key * 0x9e3779b97f4a7c15ull) | 1;
    stack_walk *w = &t->walks[(unsigned)(key >> 40) & (STACK_SLOTS - 1)];
    if (w->key == key && !w->ambiguous && ++w->hits % VERIFY_EVERY != 0)
        return w->sid;
    uint32_t sid = exact_stack_sid(t, 0, NULL, &exact);
    if (w->key == key) {
        if (w->exact != exact)
            w->ambiguous = 1;
    } else {
        w->key = key;
        w->exact = exact;
        w->sid = sid;
        w->hits = 0;
        w->ambiguous = 0;
    }
    return sid;
}

