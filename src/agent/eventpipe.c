/* eventpipe.c: one in-process EventPipe session for every consumer (eventpipe.h). */
#include "eventpipe.h"

#include <stdatomic.h>
#include <stdio.h>

#include "agent.h"
#include "recorder.h"
#include "stack.h"

#define MAX_CONSUMERS 8

static ep_consumer *g_want[MAX_CONSUMERS];
static unsigned g_nwant;
static atomic_int g_on; /* the session runs: its events are ours */
static EVENTPIPE_SESSION g_session;

/* The runtime's major version, asked once, at the configuration: after the
 * event mask is set, an attached profiler's GetRuntimeInformation fails
 * (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE), and the consumers' started callbacks
 * record it then. */
static int g_major;

int ep_runtime_major(void) {
    if (g_major)
        return g_major;
    USHORT id = 0, major = 0, minor = 0, build = 0, qfe = 0;
    COR_PRF_RUNTIME_TYPE type = 0;
    ULONG len = 0;
    if (FAILED(INFO_CALL(GetRuntimeInformation, &id, &type, &major, &minor, &build, &qfe, 0, &len, NULL)))
        return 0;
    g_major = major;
    return major;
}

int ep_want(ep_consumer *c, uint32_t *mask_high) {
    if (!AGENT_HAS_INFO(EventPipeStartSession) || !AGENT_HAS_INFO(SetEventMask2)) {
        agent_say("%s need .NET 5 or later (ICorProfilerInfo12's EventPipe); recording the rest", c->what);
        rec_note(1, "%s not recorded: the runtime has no in-process EventPipe", c->what);
        return -1;
    }
    for (unsigned i = 0; i < g_nwant; i++)
        if (g_want[i] == c)
            return 0;
    if (g_nwant == MAX_CONSUMERS)
        return -1; /* a programming error: MAX_CONSUMERS is the number of modules */
    g_want[g_nwant++] = c;
    *mask_high |= COR_PRF_HIGH_MONITOR_EVENT_PIPE;
    return 0;
}

void ep_reset(void) {
    g_nwant = 0;
    ep_runtime_major(); /* now, while the runtime answers */
}

/* "sampled allocations, lock contention": every consumer's what. */
static void whats(char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (unsigned i = 0; i < g_nwant && n < cap; i++) {
        int k = snprintf(out + n, cap - n, "%s%s", i ? ", " : "", g_want[i]->what);
        n += k > 0 ? (size_t)k : 0;
    }
}

/* Whether two NUL-terminated UTF-16 names are the same. */
static int wsame(const WCHAR *a, const WCHAR *b) {
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* The other providers asked for, by name, in the order of their first consumer. */
static const WCHAR *g_other[EP_MAX_OTHER];
static unsigned g_nother;

/* Which provider c reads: 0 the runtime's, 1 + an index into g_other. */
static unsigned consumer_class(const ep_consumer *c) {
    if (!c->provider)
        return 0;
    for (unsigned j = 0; j < g_nother; j++)
        if (wsame(g_other[j], c->provider))
            return 1 + j;
    return EP_MAX_OTHER + 1; /* none: it never gets an event */
}

/* The session's providers: the runtime's when a consumer reads it (keywords
 * OR'ed, the highest level), then each other provider. Returns how many. */
static ULONG providers(COR_PRF_EVENTPIPE_PROVIDER_CONFIG *pc) {
    static const WCHAR runtime[] = u"Microsoft-Windows-DotNETRuntime";
    ULONG n = 0;
    g_nother = 0;
    for (unsigned i = 0; i < g_nwant; i++) {
        const ep_consumer *c = g_want[i];
        if (c->provider && consumer_class(c) > EP_MAX_OTHER && g_nother < EP_MAX_OTHER)
            g_other[g_nother++] = c->provider;
    }
    for (unsigned k = 0; k <= g_nother; k++) {
        COR_PRF_EVENTPIPE_PROVIDER_CONFIG p = {k ? g_other[k - 1] : runtime, 0, 0, NULL};
        int any = 0;
        for (unsigned i = 0; i < g_nwant; i++) {
            if (consumer_class(g_want[i]) != k)
                continue;
            any = 1;
            p.keywords |= g_want[i]->keywords;
            if (g_want[i]->level > p.loggingLevel)
                p.loggingLevel = g_want[i]->level;
            if (!p.filterData)
                p.filterData = g_want[i]->args;
        }
        if (any)
            pc[n++] = p;
    }
    return n;
}

int ep_start(void) {
    if (!g_nwant)
        return 0;
    COR_PRF_EVENTPIPE_PROVIDER_CONFIG pc[1 + EP_MAX_OTHER];
    ULONG npc = providers(pc);
    stack_cache_invalidate(); /* string numbers are the trace's: cached ones belong to an old one */
    /* on before the session starts: its first events may come before it returns */
    atomic_store(&g_on, 1);
    EVENTPIPE_SESSION session = 0;
    HRESULT hr = INFO_CALL(EventPipeStartSession, npc, pc, 0, &session);
    if (FAILED(hr)) {
        atomic_store(&g_on, 0);
        char what[256];
        whats(what, sizeof what);
        agent_say("the runtime refused the EventPipe session for %s (0x%08x); recording the rest", what,
                  (unsigned)hr);
        rec_note(1, "%s not recorded: EventPipeStartSession failed 0x%08x", what, (unsigned)hr);
        return -1;
    }
    g_session = session;
    for (unsigned i = 0; i < g_nwant; i++)
        if (g_want[i]->started)
            g_want[i]->started();
    return 0;
}

int ep_running(const ep_consumer *c) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed))
        return 0;
    for (unsigned i = 0; i < g_nwant; i++)
        if (g_want[i] == c)
            return 1;
    return 0;
}

/* p's name is want: compared up to the name's end or its 63rd unit. */
static int named(const WCHAR *name, ULONG n, const WCHAR *want) {
    size_t k = 0;
    while (k < 63 && k < n && want[k] && name[k] == want[k])
        k++;
    return !want[k] && (k >= n || name[k] == 0);
}

/* Which provider p is, as consumer_class counts (EP_MAX_OTHER + 1: none of
 * ours): by name once, then by handle from a small table (a provider it cannot
 * ask about counts as the runtime's). */
static unsigned provider_class(EVENTPIPE_PROVIDER p) {
    /* handle | class: a provider is an aligned object */
    static _Atomic(uintptr_t) seen[8];
    for (unsigned i = 0; i < 8; i++) {
        uintptr_t v = atomic_load_explicit(&seen[i], memory_order_relaxed);
        if (v && (v & ~(uintptr_t)3) == (uintptr_t)p)
            return (unsigned)(v & 3);
    }
    static const WCHAR runtime[] = u"Microsoft-Windows-DotNETRuntime";
    WCHAR name[64];
    ULONG n = 0;
    unsigned cls = 0;
    if (AGENT_HAS_INFO(EventPipeGetProviderInfo) &&
        SUCCEEDED(INFO_CALL(EventPipeGetProviderInfo, p, 64, &n, name)) && !named(name, n, runtime)) {
        cls = EP_MAX_OTHER + 1;
        for (unsigned j = 0; j < g_nother; j++)
            if (named(name, n, g_other[j]))
                cls = 1 + j;
    }
    for (unsigned i = 0; i < 8 && !((uintptr_t)p & 3); i++) {
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(&seen[i], &empty, (uintptr_t)p | (uintptr_t)cls))
            break;
    }
    return cls;
}

int ep_deliver(const ep_event *e) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed))
        return 0;
    unsigned cls = provider_class(e->provider);
    if (cls > EP_MAX_OTHER)
        return 1;
    for (unsigned i = 0; i < g_nwant; i++)
        if (consumer_class(g_want[i]) == cls)
            g_want[i]->event(e);
    return 1;
}

void ep_flush_all(void) {
    if (!atomic_load(&g_on))
        return;
    for (unsigned i = 0; i < g_nwant; i++)
        if (g_want[i]->flush)
            g_want[i]->flush();
}

int ep_flush_stale(void) {
    if (!atomic_load(&g_on))
        return 0;
    unsigned left = 0;
    for (unsigned i = 0; i < g_nwant; i++)
        if (g_want[i]->stale)
            left += g_want[i]->stale();
    return left > 0;
}

void ep_stop(void) {
    if (!atomic_exchange(&g_on, 0))
        return;
    if (g_session && g_agent.info)
        INFO_CALL(EventPipeStopSession, g_session);
    g_session = 0;
    for (unsigned i = 0; i < g_nwant; i++)
        if (g_want[i]->flush)
            g_want[i]->flush();
}
