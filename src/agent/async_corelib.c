/* async_corelib.c: what async stacks read of CoreLib's metadata (async_internal.h,
 * docs/async.md): the tokens of the types and methods a chain is made of, and
 * which of CoreLib's methods are named MoveNext.
 *
 * Reading them costs a program's start more than any computation here: the
 * searches run over CoreLib's TypeDef table and a name per row, pages of the
 * runtime's mapping of CoreLib that nothing had touched, and looking at each
 * precompiled method's name (is it a MoveNext?) touches a page of its row and
 * one of its name. In this guest each such page is a fault of 5-10 us: about
 * 1 ms for the searches and 0.7 ms for a hello world's 300 methods, a third of
 * `--sample`'s fixed cost (BENCHMARKS.md, "The fixed cost, sixth round").
 *
 * They depend only on CoreLib's build, so they are kept in a small file of the
 * unwind tables' cache directory (unwind.h), named by CoreLib's MVID, and the
 * next process reads that file (one read) instead. The file is checked before
 * it is believed: its version, the MVID and the tables' row counts, and the
 * names at the tokens that go to the runtime (the box type, the MoveNexts
 * whose bodies are replaced, the types loaded for an offset). The list of MoveNext tokens then
 * answers "is this precompiled method a MoveNext" for CoreLib without its
 * metadata. Under A.mu (corelib_setup). */
#include "async_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "recorder.h"
#include "unwind.h"

#define FACTS_VERSION 1u
#define FACTS_MOVES 2048u /* CoreLib's methods named MoveNext kept (139 in .NET 10's); more: no list */

typedef struct corelib_facts {
    char magic[8]; /* "DNPASYN\n" */
    uint32_t version;
    uint8_t mvid[16];
    uint32_t typedefs, methoddefs; /* the tables' row counts: a second check */
    uint32_t box_td, pbox_td, pbox_base_td, task_td, atc_td, delegate_td, wrapper_td, mrvtsc_td, i32_td;
    uint32_t box_move, pbox_move;
    uint32_t plumb_tok[PLUMB_TOKENS];
    uint32_t nmoves; /* FACTS_MOVES + 1: too many, not kept */
    uint32_t moves[FACTS_MOVES]; /* ascending; the file holds nmoves of them */
} corelib_facts;

static corelib_facts g_facts; /* the moves' list, once known */
static int g_moves_known;

mdTypeDef async_corelib_type(const char *name, mdTypeDef enclosing) {
    const char *dot = enclosing ? NULL : strrchr(name, '.');
    char ns[128];
    size_t n = dot ? (size_t)(dot - name) : 0;
    if (n >= sizeof ns)
        return 0;
    memcpy(ns, name, n);
    ns[n] = 0;
    return dnp_md_find_type(&A.md, ns, dot ? dot + 1 : name, enclosing);
}

/* Whether method is a MoveNext with nparams parameters. */
static int is_move_next(mdMethodDef method, unsigned nparams) {
    uint32_t nsig = 0;
    const uint8_t *sig = dnp_md_method_is(&A.md, method, "MoveNext") ? dnp_md_method_sig(&A.md, method, &nsig) : NULL;
    return sig && nsig >= 2 && sig[1] == nparams;
}

/* The MoveNext of td with nparams parameters, 0 if none. */
static mdMethodDef find_move_next(mdTypeDef td, unsigned nparams) {
    uint32_t ms[8];
    unsigned got = dnp_md_methods_named(&A.md, td, "MoveNext", ms, 8);
    for (unsigned i = 0; i < got; i++)
        if (is_move_next(ms[i], nparams))
            return ms[i];
    return 0;
}

/* Everything from the metadata: the searches, then (moves: for the cache)
 * every method's name, which costs more than looking at the methods a run
 * meets, once. */
static void facts_search(corelib_facts *f, int moves) {
    mdTypeDef atmb = async_corelib_type("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1", 0);
    f->box_td = atmb ? async_corelib_type("AsyncStateMachineBox`1", atmb) : 0;
    f->task_td = async_corelib_type("System.Threading.Tasks.Task", 0);
    f->delegate_td = async_corelib_type("System.Delegate", 0);
    if (!f->box_td || !f->task_td || !f->delegate_td)
        return;
    /* the rest is optional: a chain ends where it meets what is missing */
    mdTypeDef pool = async_corelib_type("System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder`1", 0);
    if (pool) {
        f->pbox_td = async_corelib_type("StateMachineBox`1", pool);
        f->pbox_base_td = async_corelib_type("StateMachineBox", pool);
    }
    f->atc_td = async_corelib_type("System.Threading.Tasks.AwaitTaskContinuation", 0);
    mdTypeDef core = async_corelib_type("System.Runtime.CompilerServices.AsyncMethodBuilderCore", 0);
    f->wrapper_td = core ? async_corelib_type("ContinuationWrapper", core) : 0;
    f->mrvtsc_td = async_corelib_type("System.Threading.Tasks.Sources.ManualResetValueTaskSourceCore`1", 0);
    f->i32_td = f->mrvtsc_td ? async_corelib_type("System.Int32", 0) : 0;
    /* the methods between a box's MoveNext and its state machine's */
    mdTypeDef ec = async_corelib_type("System.Threading.ExecutionContext", 0);
    const struct {
        mdTypeDef td;
        const char *name;
    } plumbing[] = {{ec, "RunInternal"},
                    {ec, "RunFromThreadPoolDispatchLoop"},
                    {f->box_td, "ExecutionContextCallback"},
                    {f->pbox_td, "ExecutionContextCallback"}};
    unsigned k = 0;
    for (unsigned i = 0; i < sizeof plumbing / sizeof plumbing[0] && k < PLUMB_TOKENS; i++)
        if (plumbing[i].td)
            k += dnp_md_methods_named(&A.md, plumbing[i].td, plumbing[i].name, f->plumb_tok + k,
                                      k + 2 <= PLUMB_TOKENS ? 2 : PLUMB_TOKENS - k);
    f->box_move = find_move_next(f->box_td, 1); /* MoveNext(Thread): the others call it */
    f->pbox_move = f->pbox_td ? find_move_next(f->pbox_td, 0) : 0;
    f->nmoves = moves ? 0 : FACTS_MOVES + 1; /* not known: each method looked at as it comes */
    for (uint32_t r = 1; moves && r <= A.md.rows[DNP_MD_METHODDEF] && f->nmoves <= FACTS_MOVES; r++) {
        uint32_t tok = (uint32_t)DNP_MD_METHODDEF << 24 | r;
        if (dnp_md_method_is(&A.md, tok, "MoveNext")) {
            if (f->nmoves < FACTS_MOVES)
                f->moves[f->nmoves] = tok;
            f->nmoves++;
        }
    }
}

static void facts_name(const uint8_t mvid[16], char *out, size_t cap) {
    char hex[33];
    for (unsigned i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", mvid[i]);
    snprintf(out, cap, "corelib-%s.v%u.async", hex, FACTS_VERSION);
}

/* The file, if it is whole and still CoreLib's: 0, else -1. */
static int facts_load(const uint8_t mvid[16], corelib_facts *f) {
    char name[96];
    facts_name(mvid, name, sizeof name);
    long n = cache_file_read(name, f, sizeof *f);
    size_t head = offsetof(corelib_facts, moves);
    if (n < (long)head || memcmp(f->magic, "DNPASYN\n", 8) != 0 || f->version != FACTS_VERSION ||
        memcmp(f->mvid, mvid, 16) != 0 || f->typedefs != A.md.rows[DNP_MD_TYPEDEF] ||
        f->methoddefs != A.md.rows[DNP_MD_METHODDEF] || f->nmoves > FACTS_MOVES ||
        (size_t)n != head + (size_t)f->nmoves * sizeof f->moves[0])
        return -1;
    for (uint32_t i = 1; i < f->nmoves; i++)
        if (f->moves[i] <= f->moves[i - 1])
            return -1;
    /* the rows whose tokens go to the runtime (the bodies replaced, the class loaded for an offset)
     * and their names, each a page that may not have been read yet: a file of another CoreLib with
     * the same MVID and row counts, or one written over by hand, is not believed */
    return strcmp(dnp_md_type_name(&A.md, f->box_td), "AsyncStateMachineBox`1") == 0 &&
                   is_move_next(f->box_move, 1) && (!f->pbox_move || is_move_next(f->pbox_move, 0)) &&
                   (!f->mrvtsc_td ||
                    strcmp(dnp_md_type_name(&A.md, f->mrvtsc_td), "ManualResetValueTaskSourceCore`1") == 0) &&
                   (!f->i32_td || strcmp(dnp_md_type_name(&A.md, f->i32_td), "Int32") == 0)
               ? 0
               : -1;
}

static void facts_store(const uint8_t mvid[16], corelib_facts *f) {
    char name[96];
    facts_name(mvid, name, sizeof name);
    memcpy(f->magic, "DNPASYN\n", 8);
    f->version = FACTS_VERSION;
    memcpy(f->mvid, mvid, 16);
    f->typedefs = A.md.rows[DNP_MD_TYPEDEF];
    f->methoddefs = A.md.rows[DNP_MD_METHODDEF];
    cache_file_write(name, f, offsetof(corelib_facts, moves) + (size_t)f->nmoves * sizeof f->moves[0]);
}

int async_corelib_facts(mdTypeDef *i32) {
    corelib_facts *f = &g_facts;
    uint8_t mvid[16];
    int mvid_ok = dnp_md_mvid(&A.md, mvid) == 0;
    char name[96] = "";
    if (mvid_ok)
        facts_name(mvid, name, sizeof name);
    if (mvid_ok && facts_load(mvid, f) == 0) {
        rec_note(0, "async stacks: CoreLib's tokens read from the cache (%s)", name);
    } else {
        memset(f, 0, sizeof *f);
        facts_search(f, mvid_ok && cache_file_enabled());
        int kept = mvid_ok && f->box_move && f->nmoves <= FACTS_MOVES;
        if (kept)
            facts_store(mvid, f);
        rec_note(0, "async stacks: CoreLib's tokens found in its metadata%s%s%s", kept ? " (kept in the cache: " : "",
                 kept ? name : "", kept ? ")" : "");
    }
    if (!f->box_td || !f->task_td || !f->delegate_td) {
        agent_say("async stacks: this runtime's CoreLib has no AsyncStateMachineBox; sampled stacks stay physical");
        return -1;
    }
    if (!f->box_move) {
        agent_say("async stacks: no AsyncStateMachineBox.MoveNext(Thread) in this runtime; sampled stacks stay physical");
        return -1;
    }
    A.box_td = f->box_td;
    A.pbox_td = f->pbox_td;
    A.pbox_base_td = f->pbox_base_td;
    A.task_td = f->task_td;
    A.atc_td = f->atc_td;
    A.delegate_td = f->delegate_td;
    A.wrapper_td = f->wrapper_td;
    A.mrvtsc_td = f->mrvtsc_td;
    A.box_move = f->box_move;
    A.pbox_move = f->pbox_move;
    memcpy(A.plumb_tok, f->plumb_tok, sizeof A.plumb_tok);
    *i32 = f->i32_td;
    g_moves_known = f->nmoves <= FACTS_MOVES;
    return 0;
}

int async_corelib_not_move(mdMethodDef tok) {
    if (!g_moves_known)
        return 0;
    uint32_t lo = 0, hi = g_facts.nmoves;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g_facts.moves[mid] == tok)
            return 0;
        if (g_facts.moves[mid] < tok)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 1;
}
