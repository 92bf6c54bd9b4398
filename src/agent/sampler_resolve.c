/* sampler_resolve.c: naming the sampled addresses, on the sampler thread
 * (sampler.h): managed code by GetFunctionFromIP, native code by symbol
 * (symbols.c), through a cache that is cleared every CACHE_MS and when code
 * unloads; whether a word is a return address (executable memory, after a
 * call instruction: arch_follows_call); where a leaf's return address is when
 * its frame pointer is not its own (arch_return_slot). */
#include "sampler_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "arch_unwind.h"
#include "callbacks.h"
#include "memread.h"
#include "dnp_vec.h"
#include "symbols.h"
#include "utf16.h"

uint64_t sampler_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Only what is in use: the entries in order, and the index as large as it
 * grew (the largest index and table, 2.5 MiB, zeroed every 2 s and at every
 * dynamic method's unload, touched every page of them). */
void sampler_cache_clear(uint64_t now) {
    memset(S.cache, 0, (size_t)S.ncache * sizeof *S.cache);
    memset(S.cache_ix, 0, (size_t)S.cache_cap * sizeof *S.cache_ix);
    S.ncache = 0;
    S.cache_born = now;
}

static uint32_t ip_home(uint64_t ip, uint32_t cap) {
    return (uint32_t)((ip * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static uint32_t cache_home(uint32_t i, uint32_t cap) {
    return ip_home(S.cache[i].ip, cap);
}

int sampler_index_grow(uint32_t **ix, uint32_t *cap, uint32_t most, uint32_t first, uint32_t n,
                       uint32_t (*home)(uint32_t i, uint32_t cap)) {
    uint32_t c = *cap * 2, *g = c <= most ? calloc(c, sizeof *g) : NULL;
    if (!g)
        return -1;
    for (uint32_t i = first; i < n; i++) {
        uint32_t h = home(i, c);
        while (g[h])
            h = (h + 1) & (c - 1);
        g[h] = i + 1;
    }
    free(*ix);
    *ix = g;
    *cap = c;
    return 0;
}

/* Whether the kernel answers PROCMAP_QUERY (memread.h): then the list is
 * learnt a mapping at a time, by the addresses asked about (exec_ask), and a
 * refresh only forgets it; else /proc/self/maps is read whole. */
static int exec_by_query(void) {
    uint64_t lo, hi;
    unsigned fl;
    return memread_mapping((uint64_t)(uintptr_t)&exec_by_query, &lo, &hi, &fl) > 0;
}

/* The executable mappings, read again when an address is in none of them and
 * the list is older than EXEC_MS (code heaps grow). */
void sampler_exec_refresh(void) {
    S.exec_born = sampler_now_ns();
    S.exec_gen++;
    if (exec_by_query()) {
        S.nexec = 0; /* learnt again as addresses are asked about: none is stale */
        return;
    }
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    S.maps_reads++;
    S.nexec = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x')
            continue;
        if (DNP_VEC_RESERVE(S.exec, S.capexec, S.nexec + 1, 256) < 0)
            break;
        S.exec[S.nexec].lo = lo; /* /proc/self/maps is sorted by address */
        S.exec[S.nexec++].hi = hi;
    }
    fclose(f);
    S.exec_born = sampler_now_ns();
}

/* a asked of the kernel alone (PROCMAP_QUERY): 1 when it is executable
 * memory, whose mapping joins the list (kept sorted); 0 when not; -1 when the
 * kernel cannot be asked. */
static int exec_ask(uint64_t a) {
    uint64_t lo, hi;
    unsigned fl;
    int r = memread_mapping(a, &lo, &hi, &fl);
    if (r < 0)
        return -1;
    S.maps_queries++;
    if (!r || !(fl & MEMREAD_X))
        return 0;
    if (DNP_VEC_RESERVE(S.exec, S.capexec, S.nexec + 1, 256) < 0)
        return 1;
    size_t at = S.nexec;
    while (at > 0 && S.exec[at - 1].lo > lo)
        at--;
    memmove(&S.exec[at + 1], &S.exec[at], (S.nexec - at) * sizeof *S.exec);
    S.exec[at].lo = lo;
    S.exec[at].hi = hi;
    S.nexec++;
    return 1;
}

int sampler_exec_find(uint64_t a) {
    size_t lo = 0, hi = S.nexec;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a < S.exec[mid].lo)
            hi = mid;
        else if (a >= S.exec[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* Whether a is in the list, or (asked of the kernel) in executable memory. */
static int exec_lookup(uint64_t a) {
    return sampler_exec_find(a) || exec_ask(a) == 1;
}

static int exec_contains(uint64_t a) {
    if (sampler_exec_find(a))
        return 1;
    int asked = exec_ask(a);
    if (asked >= 0)
        return asked;
    if (sampler_now_ns() - S.exec_born < EXEC_MS * 1000000ull)
        return 0;
    sampler_exec_refresh();
    return sampler_exec_find(a);
}

/* The cache entry of ip, made if new: whether ip is in executable memory is
 * known, nothing else yet (no call into the runtime). */
static ipent *entry(uint64_t ip) {
    uint32_t h = ip_home(ip, S.cache_cap);
    while (S.cache_ix[h]) {
        ipent *e = &S.cache[S.cache_ix[h] - 1];
        if (e->ip == ip) {
            if (!e->code && (e->exec_gen != S.exec_gen || sampler_now_ns() - S.exec_born >= EXEC_MS * 1000000ull) &&
                exec_contains(ip)) {
                e->code = 1; /* code that came after the list said no */
                e->name = 0;
            }
            if (!e->code)
                e->exec_gen = S.exec_gen;
            return e;
        }
        h = (h + 1) & (S.cache_cap - 1);
    }
    if (S.ncache * 2 >= S.cache_cap) {
        if (S.ncache * 2 >= IP_CACHE ||
            sampler_index_grow(&S.cache_ix, &S.cache_cap, IP_CACHE, 0, S.ncache, cache_home) != 0) {
            sampler_cache_clear(S.cache_born);
            return entry(ip);
        }
        for (h = ip_home(ip, S.cache_cap); S.cache_ix[h];) /* its slot in the grown index */
            h = (h + 1) & (S.cache_cap - 1);
    }
    S.cache_ix[h] = S.ncache + 1;
    ipent *e = &S.cache[S.ncache++];
    e->ip = ip;
    e->slot = -2;
    e->rslot = -2;
    e->code = (uint8_t)exec_contains(ip);
    e->exec_gen = S.exec_gen;
    if (!e->code)
        e->name = S.unknown_name;
    return e;
}

/* A dynamic method's name (an LCG method: a compiled expression tree,
 * ASP.NET Core's request delegates; an IL stub: P/Invoke marshalling), which
 * GetFunctionFromIP does not give (no metadata), as "[dynamic method NAME]"
 * or "[stub IL_STUB_...]" into out; 0 when ip is not one. GetFunctionFromIP3
 * is SYNC with a ReJIT lookup: the sampler thread is no thread of the
 * runtime's, and asks for no ReJIT id. */
static int dynamic_name(uint64_t ip, char *out, size_t cap) {
    if (!AGENT_HAS_INFO(GetFunctionFromIP3) || !AGENT_HAS_INFO(GetDynamicFunctionInfo))
        return 0;
    FunctionID fid = 0;
    if (FAILED(INFO_CALL(GetFunctionFromIP3, (LPCBYTE)(uintptr_t)ip, &fid, NULL)) || !fid)
        return 0;
    char16_t w[256];
    ULONG len = 0;
    w[0] = 0;
    if (FAILED(INFO_CALL(GetDynamicFunctionInfo, fid, NULL, NULL, NULL, 256, &len, (WCHAR *)w)))
        return 0;
    char name[512];
    if (!dnp_utf16_name(w, 256, len, name, sizeof name))
        snprintf(name, sizeof name, "?");
    snprintf(out, cap, strncmp(name, "IL_STUB", 7) ? "[dynamic method %s]" : "[stub %s]", name);
    return 1;
}

/* ip named: native modules by symbol; the runtime is asked only about
 * executable memory outside them (JIT code, stubs, the ReadyToRun images it
 * mapped itself), and only for the interrupted PC or a checked return address:
 * GetFunctionFromIP can fault on an address inside a ReadyToRun image that is
 * not code. */
const ipent *sampler_resolve(uint64_t ip) {
    ipent *e = entry(ip);
    if (!e->code && ip == e->ip && e->name == S.unknown_name && S.resolving_pc) {
        /* An interrupted PC is code, whatever the list says: code the list
         * does not hold yet (just compiled), so its callers' return addresses
         * may be in new code too. Read again, if older than EXEC_PC_MS. */
        uint64_t now = sampler_now_ns();
        if (now - S.exec_born >= EXEC_PC_MS * 1000000ull && now >= S.exec_pc_quiet) {
            sampler_exec_refresh();
            if (!exec_lookup(ip)) /* code outside every mapping: no use reading again soon */
                S.exec_pc_quiet = now + CACHE_MS * 1000000ull;
        }
        e->code = 1;
        e->name = 0;
    }
    if (e->resolved || !e->code)
        return e;
    e->resolved = 1;
    S.resolves++;
    char buf[512];
    e->mapped = (uint8_t)symbols_name((uintptr_t)ip, buf, sizeof buf);
    FunctionID fid = 0;
    if (!e->mapped && g_agent.info &&
        SUCCEEDED(INFO_CALL(GetFunctionFromIP, (LPCBYTE)(uintptr_t)ip, &fid)) && fid) {
        e->func = fid;
        e->name = names_get(NAMES_FUNCTION, fid, 1);
        e->managed = e->mapped = 1;
        return e;
    }
    if (!e->mapped && g_agent.info && dynamic_name(ip, buf, sizeof buf)) {
        e->name = rec_string(buf, strlen(buf)); /* JIT-compiled code with a frame like any method's */
        e->managed = e->mapped = 1;
        return e;
    }
    e->mapped = 1; /* executable memory: its bytes can be read */
    e->jit_code = strstr(buf, "libclrjit.so") != NULL;
    e->runtime_code = strstr(buf, "libcoreclr.so") != NULL || strstr(buf, "libclrgc") != NULL;
    e->name = rec_string(buf, strlen(buf));
    return e;
}

/* Whether addr follows a call instruction. The bytes are read through
 * memread: an address inside a module's span may still be unmapped
 * (the gaps between its segments). */
static int after_call(uint64_t addr) {
    uint8_t b[8];
    if (addr < 8 || memread(addr - 8, b, sizeof b) != (ssize_t)sizeof b)
        return 0;
    return arch_follows_call(b);
}

/* Whether each return address of ips[0..n) in executable memory follows a
 * call, read in one batch for those not known yet (the walk's frames are new
 * addresses at a program's start: each had been a system call of its own). */
void sampler_prefetch_calls(const uint64_t *ips, uint32_t n) {
    enum { MAXB = 128 };
    uint64_t at[MAXB];
    ipent *ents[MAXB];
    uint8_t bytes[MAXB * 8], ok[MAXB];
    uint32_t m = 0;
    if ((S.ncache + n) * 2 >= IP_CACHE)
        return; /* entry() may clear the cache on the way: the entries one by one, later */
    for (uint32_t k = 0; k < n && m < MAXB; k++) {
        if (ips[k] < 4096)
            continue;
        ipent *c = entry(ips[k] - 1);
        if (!c->code || c->call)
            continue; /* known, or outside the list of executable mappings (checked again one by one) */
        int dup = 0;
        for (uint32_t j = 0; j < m && !dup; j++)
            dup = ents[j] == c;
        if (dup)
            continue;
        ents[m] = c;
        at[m++] = ips[k] - 8;
    }
    if (!m)
        return;
    memread_batch(at, m, 8, bytes, ok);
    for (uint32_t j = 0; j < m; j++)
        ents[j]->call = ok[j] && arch_follows_call(bytes + 8 * j) ? 1 : 2;
}

/* The executable mappings read again for an address in none of them that
 * is likely code (a return address after a call instruction), as for an
 * interrupted PC (EXEC_PC_MS): a code heap grows in pieces, and a walk through
 * a method compiled into a piece newer than the list would end there. After a
 * read that does not hold it, none for EXEC_MS. Whether the list holds it. */
static int exec_recheck(uint64_t ip) {
    uint64_t now = sampler_now_ns();
    if (now - S.exec_born < EXEC_PC_MS * 1000000ull || now < S.exec_pc_quiet)
        return 0;
    sampler_exec_refresh();
    if (exec_lookup(ip))
        return 1;
    S.exec_pc_quiet = now + EXEC_MS * 1000000ull;
    return 0;
}

/* Whether addr can be a return address: in executable memory, after a call
 * instruction (cached in the entry of addr - 1). */
int sampler_is_return_address(uint64_t addr) {
    if (addr < 4096)
        return 0;
    ipent *c = entry(addr - 1);
    if (!c->code && !c->call) {
        c->call = after_call(addr) ? 1 : 2;
        if (c->call == 1 && exec_recheck(addr - 1)) {
            c->code = 1;
            c->name = 0;
        }
    }
    if (!c->code)
        return 0;
    if (!c->call)
        c->call = after_call(addr) ? 1 : 2;
    return c->call == 1;
}

/* Where the return address of the function at an interrupted PC is, when its
 * frame pointer is not its own there (arch_return_slot), in words from the
 * stack pointer; -1 when the frame-pointer chain holds. Cached with the PC. */
int sampler_leaf_slot(uint64_t ip) {
    ipent *e = entry(ip);
    if (e->slot != -2)
        return e->slot;
    uint8_t code[64];
    size_t want = sizeof code, page_left = 4096 - (ip & 4095);
    ssize_t got = memread(ip, code, want);
    if (got <= 0 && page_left < want) /* the next page is not mapped */
        got = memread(ip, code, page_left);
    int at = got > 0 ? arch_return_slot(code, (size_t)got) : -1;
    e->slot = at == ARCH_RETURN_IN_LR ? SLOT_TOP
              : (int8_t)(at >= 0 && at % 8 == 0 && at / 8 < (int)SP_WORDS ? at / 8 : -1);
    return e->slot;
}

/* ---- callers of code that keeps no frame (the handler's table) ---- */

static uint32_t frameless_home(uint64_t ret) {
    return (uint32_t)((ret * 0x9E3779B97F4A7C15ull) >> 40) & (FRAMELESS - 1);
}

/* Where the return address of the managed function that ret returns into
 * (the caller knows it is managed code)
 * lies, when that function keeps no frame there: a Tier1 wrapper (push rax;
 * call; add rsp, 8; ret) leaves RBP as its caller's, so the chain gives the
 * caller's caller. The same forward reading as for an interrupted PC
 * (sampler_leaf_slot: execution resumes at ret with SP at the callee's CFA),
 * once per address; a slot found is published for the handler, which reads
 * the word there on later samples (sampler_walk.c). */
void sampler_frameless_learn(uint64_t ret) {
    if (ARCH_UNW_SP_ABOVE_FRAME < 0 || !S.frameless || ret < 4096)
        return;
    ipent *e = entry(ret);
    if (e->rslot != -2)
        return;
    int slot = sampler_leaf_slot(ret);
    e = entry(ret); /* the lookup above may have cleared the cache */
    e->rslot = (int8_t)(slot >= 0 && slot < 255 ? slot : -1);
    if (e->rslot < 0)
        return;
    uint32_t h = frameless_home(ret);
    for (uint32_t p = 0; p < FRAMELESS_PROBES; p++) {
        _Atomic uint64_t *at = &S.frameless[(h + p) & (FRAMELESS - 1)];
        uint64_t v = atomic_load_explicit(at, memory_order_relaxed);
        if (v >> 8 == ret)
            return;
        if (!v) {
            atomic_store_explicit(at, ret << 8 | (uint64_t)(slot + 1), memory_order_release);
            atomic_fetch_add_explicit(&S.frameless_learned, 1, memory_order_relaxed);
            return;
        }
    }
}

int sampler_frameless_slot(uint64_t ret) {
    _Atomic uint64_t *t = S.frameless;
    if (!t)
        return -1;
    uint32_t h = frameless_home(ret);
    for (uint32_t p = 0; p < FRAMELESS_PROBES; p++) {
        uint64_t v = atomic_load_explicit(&t[(h + p) & (FRAMELESS - 1)], memory_order_acquire);
        if (!v)
            return -1;
        if (v >> 8 == ret)
            return (int)(v & 0xff) - 1;
    }
    return -1;
}

/* Code went away: its addresses may come back as other code's. */
void sampler_frameless_clear(void) {
    for (uint32_t i = 0; S.frameless && i < FRAMELESS; i++)
        atomic_store_explicit(&S.frameless[i], 0, memory_order_relaxed);
    for (uint32_t i = 0; S.patchpoints && i < FRAMELESS; i++)
        atomic_store_explicit(&S.patchpoints[i], 0, memory_order_relaxed);
}

void sampler_patchpoint_learn(uint64_t ret) {
    uint32_t h = frameless_home(ret);
    for (uint32_t p = 0; S.patchpoints && ret && p < FRAMELESS_PROBES; p++) {
        _Atomic uint64_t *at = &S.patchpoints[(h + p) & (FRAMELESS - 1)];
        uint64_t v = atomic_load_explicit(at, memory_order_relaxed);
        if (v == ret)
            return;
        if (!v) {
            atomic_store_explicit(at, ret, memory_order_release);
            return;
        }
    }
}

int sampler_patchpoint_known(uint64_t ret) {
    _Atomic uint64_t *t = S.patchpoints;
    uint32_t h = frameless_home(ret);
    for (uint32_t p = 0; t && p < FRAMELESS_PROBES; p++) {
        uint64_t v = atomic_load_explicit(&t[(h + p) & (FRAMELESS - 1)], memory_order_acquire);
        if (!v)
            return 0;
        if (v == ret)
            return 1;
    }
    return 0;
}
