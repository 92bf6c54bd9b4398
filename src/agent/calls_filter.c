/* calls_filter.c: which functions are hooked (calls.h): the runtime's function
 * ID mapper, the filters it applies (--include, --exclude, --all-code, the
 * program's own code by default) and the hooked functions' entries, the client
 * IDs the hooks get. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "callbacks.h"
#include "calls.h"
#include "calls_internal.h"
#include "dnp_text.h"
#include "utf16.h"

#define FN_CHUNK 1024u
#define TEXT_MAX 4096

static struct {
    int all_code;
    char include[1024], exclude[1024];
    pthread_mutex_t fn_mu; /* the function arena and map: the mapper, and threads' ends */
    calls_fn *fn_chunk;
    unsigned fn_used;
} G = {
    .fn_mu = PTHREAD_MUTEX_INITIALIZER,
};

void calls_filter_set(int all_code, const char *include, const char *exclude) {
    G.all_code = all_code;
    snprintf(G.include, sizeof G.include, "%s", include ? include : "");
    snprintf(G.exclude, sizeof G.exclude, "%s", exclude ? exclude : "");
}

void calls_filter_record(uint64_t mode) {
    REC(CallsConfig, mode, (uint64_t)G.all_code, rec_string(G.include, strlen(G.include)),
        rec_string(G.exclude, strlen(G.exclude)));
}


static int glob_match(const char *p, const char *pe, const char *s) {
    const char *star = NULL, *back = NULL;
    while (*s) {
        if (p < pe && (*p == '?' || *p == *s)) {
            p++;
            s++;
        } else if (p < pe && *p == '*') {
            star = ++p;
            back = s;
        } else if (star) {
            p = star;
            s = ++back;
        } else {
            return 0;
        }
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

/* Whether name matches one of the comma-separated globs of list. */
static int globs_match(const char *list, const char *name) {
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        if (t > p && glob_match(p, t, name))
            return 1;
        p = e;
    }
    return 0;
}

static int framework_module(ModuleID module) {
    WCHAR w[1024];
    char path[2048];
    ULONG len = 0;
    LPCBYTE base = NULL;
    AssemblyID assembly = 0;
    DWORD flags = 0;
    if (!module || !AGENT_HAS_INFO(GetModuleInfo2) ||
        FAILED(INFO_CALL(GetModuleInfo2, module, &base, 1024, &len, w, &assembly, &flags)) || len <= 1)
        return 0;
    dnp_utf16_name(w, 1024, len, path, sizeof path);
    return strstr(path, "/shared/Microsoft.") != NULL;
}

/* Whether a function is hooked (calls_filter_wants in calls.h). */
int calls_filter_wants(const char *name, int all_code, const char *include, const char *exclude,
                       int framework) {
    if (exclude && *exclude && globs_match(exclude, name))
        return 0;
    if (include && *include)
        return globs_match(include, name);
    if (all_code)
        return 1;
    if (framework)
        return 0;
    /* nor the compiler's own types (<Module>, <PrivateImplementationDetails>) */
    return !dnp_is_framework_name(name) && name[0] != '<';
}

/* A new entry (under fn_mu). */
static calls_fn *fn_new(void) {
    if (!G.fn_chunk || G.fn_used == FN_CHUNK) {
        calls_fn *c = calloc(FN_CHUNK, sizeof *c);
        if (!c)
            return NULL;
        G.fn_chunk = c; /* the old chunk stays: its entries are in use */
        G.fn_used = 0;
    }
    G.fn_chunk[G.fn_used].magic = CALLS_FN_MAGIC;
    return &G.fn_chunk[G.fn_used++];
}

/* The functions mapped so far, by FunctionID (under fn_mu): the runtime asks
 * again for each new code version of a function (tier 1, and on-stack
 * replacement, whose code returns through the same frame the tier-0 code
 * entered), and every version must get the same client ID. */
static struct {
    FunctionID *ids;
    calls_fn **fns; /* NULL: not hooked */
    size_t mask, n;
} F;

static int fn_lookup(FunctionID fid, calls_fn **out) {
    if (!F.ids)
        return 0;
    for (size_t j = (size_t)((fid >> 4) * 0x9E3779B97F4A7C15ull >> 20) & F.mask;; j = (j + 1) & F.mask) {
        if (F.ids[j] == fid) {
            *out = F.fns[j];
            return 1;
        }
        if (!F.ids[j])
            return 0;
    }
}

static void fn_remember(FunctionID fid, calls_fn *f) {
    if (!fid || (F.n + 1) * 2 > (F.ids ? F.mask + 1 : 0)) {
        size_t cap = F.ids ? (F.mask + 1) * 2 : 1024;
        FunctionID *ids = calloc(cap, sizeof *ids);
        calls_fn **fns = calloc(cap, sizeof *fns);
        if (!fid || !ids || !fns) {
            free(ids);
            free(fns);
            return;
        }
        for (size_t i = 0; F.ids && i <= F.mask; i++) {
            if (!F.ids[i])
                continue;
            size_t j = (size_t)((F.ids[i] >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (ids[j])
                j = (j + 1) & (cap - 1);
            ids[j] = F.ids[i];
            fns[j] = F.fns[i];
        }
        free(F.ids);
        free(F.fns);
        F.ids = ids;
        F.fns = fns;
        F.mask = cap - 1;
    }
    size_t j = (size_t)((fid >> 4) * 0x9E3779B97F4A7C15ull >> 20) & F.mask;
    while (F.ids[j] && F.ids[j] != fid)
        j = (j + 1) & F.mask;
    if (!F.ids[j])
        F.n++;
    F.ids[j] = fid;
    F.fns[j] = f;
}

/* Whether the filters want fid; its module and token. */
static int fn_wanted(FunctionID fid, ModuleID *module, mdToken *token) {
    ClassID cls = 0;
    *module = 0;
    *token = 0;
    INFO_CALL(GetFunctionInfo, fid, &cls, module, token);
    int framework = !G.all_code && !G.include[0] && framework_module(*module);
    if (framework)
        return 0; /* most of what the runtime asks about: no name needed */
    char name[TEXT_MAX];
    names_function_text(fid, name, sizeof name);
    return calls_filter_wants(name, G.all_code, G.include, G.exclude, framework);
}

int calls_is_hooked(uint64_t fid) {
    calls_fn *known;
    pthread_mutex_lock(&G.fn_mu);
    int seen = fn_lookup(fid, &known);
    pthread_mutex_unlock(&G.fn_mu);
    if (seen)
        return known != NULL;
    ModuleID module;
    mdToken token;
    return fid && fn_wanted(fid, &module, &token);
}

UINT_PTR calls_mapper(FunctionID fid, void *data, BOOL *hook) {
    (void)data;
    *hook = 0;
    calls_fn *known;
    pthread_mutex_lock(&G.fn_mu);
    int seen = fn_lookup(fid, &known);
    pthread_mutex_unlock(&G.fn_mu);
    if (seen) {
        *hook = known != NULL;
        return known ? (UINT_PTR)known : fid;
    }
    ModuleID module;
    mdToken token;
    if (!fn_wanted(fid, &module, &token)) {
        pthread_mutex_lock(&G.fn_mu);
        fn_remember(fid, NULL);
        pthread_mutex_unlock(&G.fn_mu);
        return fid;
    }
    int need_async = 0;
    pthread_mutex_lock(&G.fn_mu);
    calls_fn *f = fn_lookup(fid, &known) ? known : fn_new(); /* another thread may have been first */
    if (f && !f->id) {
        f->id = fid;
        f->module = module;
        f->token = token;
        f->name = names_get(NAMES_FUNCTION, fid, 1);
        fn_remember(fid, f);
        need_async = 1;
    }
    pthread_mutex_unlock(&G.fn_mu);
    if (!f)
        return fid;
    if (need_async && async_machine_move(fid, module, token))
        __atomic_store_n(&f->async_move, 1, __ATOMIC_RELEASE);
    *hook = 1;
    return (UINT_PTR)f;
}

/* ---- the awaiting callers of a resumed async method, as frames ----
 * Not hooked and never called: a node's identity in the trees, its ID marked
 * (ASYNC_FRAME_CALLER), one per caller, made as first needed, never freed. */

#define ASYNC_CALLERS 4096u
static struct {
    pthread_mutex_t mu;             /* inserts */
    calls_fn *_Atomic fn[ASYNC_CALLERS]; /* open addressing by ID; a slot is set once */
    uint32_t n;
} g_callers = {.mu = PTHREAD_MUTEX_INITIALIZER};

const calls_fn *calls_async_caller_fn(uint64_t id, uint32_t name) {
    uint32_t h = (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (ASYNC_CALLERS - 1);
    for (uint32_t p = 0; p < ASYNC_CALLERS; p++) { /* no lock: every resume asks */
        calls_fn *f = atomic_load_explicit(&g_callers.fn[(h + p) & (ASYNC_CALLERS - 1)], memory_order_acquire);
        if (!f)
            break;
        if (f->id == id)
            return f;
    }
    calls_fn *found = NULL;
    pthread_mutex_lock(&g_callers.mu);
    for (uint32_t p = 0; p < ASYNC_CALLERS; p++) {
        calls_fn *_Atomic *slot = &g_callers.fn[(h + p) & (ASYNC_CALLERS - 1)];
        calls_fn *f = atomic_load_explicit(slot, memory_order_relaxed);
        if (f && f->id == id) {
            found = f;
            break;
        }
        if (!f) {
            if (g_callers.n * 2 < ASYNC_CALLERS && (found = calloc(1, sizeof *found)) != NULL) {
                found->id = id;
                found->name = name;
                atomic_store_explicit(slot, found, memory_order_release);
                g_callers.n++;
            }
            break;
        }
    }
    pthread_mutex_unlock(&g_callers.mu);
    return found;
}

void calls_fns_forget(int (*owns)(const void *owner, const struct cnode *n), const void *owner, calls_fn *extra) {
    pthread_mutex_lock(&G.fn_mu);
    struct cnode *d = extra ? __atomic_load_n(&extra->last, __ATOMIC_RELAXED) : NULL;
    if (d && owns(owner, d))
        __atomic_store_n(&extra->last, NULL, __ATOMIC_RELAXED);
    for (size_t i = 0; F.fns && i <= F.mask; i++) {
        calls_fn *f = F.fns[i];
        struct cnode *n = f ? __atomic_load_n(&f->last, __ATOMIC_RELAXED) : NULL;
        if (n && owns(owner, n))
            __atomic_store_n(&f->last, NULL, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&G.fn_mu);
}
