/* report_locks.c: lock contention (dnprof run/attach --locks, docs/waits.md):
 * the time threads waited for locks, by locked type, by waiting site, by the
 * thread that held the lock, and the top waiting stacks; the same as a call
 * tree weighted in nanoseconds waited (the lock as the leaf frame) for the
 * exports, and the long waits as slices of the Chrome timeline.
 *
 * The trace is streamed: memory is bounded by the distinct (stack, lock, owner)
 * keys and the LockWait slices (at most 1,000 a second of recording). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "ct_text.h"
#include "cli.h"
#include "export.h"
#include "idmap.h"
#include "lock_site.h"
#include "report.h"
#include "trace_reader.h"
#include "dnp_vec.h"
#include "dnp_free.h"

static const char *const kind_names[DNP_LOCK_NKINDS] = {"monitor", "lock", "waithandle", "monitor-wait"};
static const char *const kind_labels[DNP_LOCK_NKINDS] = {"Monitor", "System.Threading.Lock", "WaitHandle wait",
                                                "Monitor.Wait"};
#define CONTENTION(kind) (!DNP_LOCK_IS_WAIT(kind))
#define OWNER_UNNAMED "[no owner named]"

typedef struct lk_owner {
    uint64_t owner, count, wait_ns;
} lk_owner;

/* One waiting stack on one lock type of one kind, every owner's waits. */
typedef struct lk_path {
    uint64_t stack, type;
    uint32_t kind;
    uint64_t count, wait_ns, max_ns;
    lk_owner *owners;
    size_t nowners, cap_owners;
    const char *site; /* the first frame outside the runtime's lock code, raw; NULL: none */
} lk_path;

typedef struct lk_sum {
    uint64_t key, type; /* by lock: type (other waits: index of a path with the call); by owner: owner;
                           by site: index of a path with the site */
    uint32_t kind;
    uint64_t count, wait_ns, max_ns;
} lk_sum;

struct locks_profile {
    const char *path;
    dnp_trace_stream *s;
    const dnp_trace *t;
    int configured;                 /* a LockConfig was seen */
    int attached;                   /* recorded by dnprof attach: the program's pid (1: not known) */
    uint64_t major, mode, slice_ns;
    uint64_t start_version, slices_dropped, unmatched;
    uint64_t count[2], wait_ns[2], max_ns[2]; /* [0] contention, [1] other waits */
    uint64_t house_count, house_ns; /* waits of the runtime's service threads: counted apart */
    lk_path *paths;
    size_t npaths, cap_paths;
    dnp_idmap path_h;
    lk_sum *types, *sites, *owners;
    size_t ntypes, nsites, nowners;
    dnp_export_slice *slices;
    size_t nslices, cap_slices;
    dnp_calltree *ct;
    dnp_ct_names nm; /* frame names of the tree (own names) */
    traced_lock slow;                 /* System.Threading.Lock's slow path, timed (slow.known) */
    uint64_t slow_ev_count, slow_ev_ns; /* the LockSites' figures for a Lock */
    int probe_stacks;                   /* a LockProbeBlocked: the probe's calls are LockSites, with stacks */
    uint64_t blocked_n, blocked_ns;     /* then the runtime's waits for a Lock: LockProbeBlocked, LockBeforeProbe */
    uint64_t before_n, before_ns;       /* LockBeforeProbe: those begun before the probe ran */
    uint64_t lock_named;                /* the Lock's LockSites' waits with an owner */
};

static int add_owner(lk_path *p, uint64_t owner, uint64_t count, uint64_t wait_ns) {
    for (size_t i = 0; i < p->nowners; i++)
        if (p->owners[i].owner == owner) {
            p->owners[i].count += count;
            p->owners[i].wait_ns += wait_ns;
            return 0;
        }
    if (DNP_VEC_RESERVE(p->owners, p->cap_owners, p->nowners + 1, 64) != 0)
        return -1;
    p->owners[p->nowners++] = (lk_owner){owner, count, wait_ns};
    return 0;
}

static int add_site(locks_profile *p, const dnp_trace_event *e) {
#define F(field) e->v[DNP_V(LockSite, field)]
    uint64_t stack = F(stack), type = F(lockType), owner = F(owner);
    uint64_t kind = F(kind) < DNP_LOCK_NKINDS ? F(kind) : DNP_LOCK_WAIT_HANDLE;
    uint64_t count = F(count), wait_ns = F(waitNs), max_ns = F(maxNs);
#undef F
    int cls = lock_classify(dnp_trace_string(p->t, stack), (unsigned)kind);
    if (cls == LOCK_HOUSE)
        p->house_count += count, p->house_ns += wait_ns;
    if (cls != LOCK_OWN)
        return 0; /* the runtime's own, counted apart; a try that failed at once (lock_site.h) */
    uint32_t i;
    if (!dnp_idmap_get(&p->path_h, stack | kind << 40, type, &i)) {
        if (DNP_VEC_RESERVE(p->paths, p->cap_paths, p->npaths + 1, 64) != 0)
            return -1;
        i = (uint32_t)p->npaths++;
        memset(&p->paths[i], 0, sizeof p->paths[i]);
        p->paths[i].stack = stack;
        p->paths[i].type = type;
        p->paths[i].kind = (uint32_t)kind;
        if (dnp_idmap_put(&p->path_h, stack | kind << 40, type, i) != 0)
            return -1;
    }
    lk_path *a = &p->paths[i];
    a->count += count;
    a->wait_ns += wait_ns;
    if (max_ns > a->max_ns)
        a->max_ns = max_ns;
    int c = CONTENTION(kind) ? 0 : 1;
    p->count[c] += count;
    p->wait_ns[c] += wait_ns;
    if (max_ns > p->max_ns[c])
        p->max_ns[c] = max_ns;
    return add_owner(a, owner, count, wait_ns);
}

static int feed(void *ctx, const dnp_trace *t, const dnp_trace_event *e) {
    locks_profile *p = ctx;
    p->t = t;
    switch (e->kind) {
    case DNP_EV_LockConfig:
        p->configured = 1;
        p->major = e->v[DNP_V(LockConfig, runtimeMajor)], p->mode = e->v[DNP_V(LockConfig, mode)];
        p->slice_ns = e->v[DNP_V(LockConfig, sliceNs)];
        return 0;
    case DNP_EV_InitializeForAttach: p->attached = dnp_trace_host_pid(t) ? (int)dnp_trace_host_pid(t) : 1; return 0;
    case DNP_EV_LockStats: /* cumulative: the last counts */
        p->start_version = e->v[DNP_V(LockStats, startVersion)];
        p->slices_dropped = e->v[DNP_V(LockStats, slicesDropped)], p->unmatched = e->v[DNP_V(LockStats, unmatched)];
        return 0;
    case DNP_EV_LockSite: return add_site(p, e);
    case DNP_EV_LockProbeBlocked: /* cumulative, as LockBeforeProbe: the last counts; added up at the end */
        p->probe_stacks = 1;
        p->blocked_n = e->v[DNP_V(LockProbeBlocked, waits)], p->blocked_ns = e->v[DNP_V(LockProbeBlocked, waitNs)];
        return 0;
    case DNP_EV_LockBeforeProbe:
        p->before_n = e->v[DNP_V(LockBeforeProbe, waits)], p->before_ns = e->v[DNP_V(LockBeforeProbe, waitNs)];
        return 0;
    case DNP_EV_LockWait: {
        if (DNP_VEC_RESERVE(p->slices, p->cap_slices, p->nslices + 1, 64) != 0)
            return -1;
        uint64_t wait = e->v[DNP_V(LockWait, waitNs)], kind = e->v[DNP_V(LockWait, kind)];
        kind = kind < DNP_LOCK_NKINDS ? kind : DNP_LOCK_WAIT_HANDLE;
        const char *stack = dnp_trace_string(t, e->v[DNP_V(LockWait, stack)]);
        if (lock_classify(stack, (unsigned)kind) != LOCK_OWN)
            return 0; /* the runtime's service threads, tries that failed at once: as its LockSites */
        dnp_export_slice *s = &p->slices[p->nslices++];
        memset(s, 0, sizeof *s);
        s->thread = e->thread;
        s->start_ns = e->time_ns > wait ? e->time_ns - wait : 0;
        s->dur_ns = wait;
        s->cat = CONTENTION(kind) ? "lock contention" : "waits";
        s->a = e->v[DNP_V(LockWait, stack)] | kind << 40;
        s->b = e->v[DNP_V(LockWait, lockType)];
        s->c = e->v[DNP_V(LockWait, owner)];
        return 0;
    }
    default: return 0;
    }
}

/* ---- sites, types, owners ---- */

static const char *str(const locks_profile *p, uint64_t id, const char *none) {
    return report_string(p->t, id, none);
}

/* The first frame of a stack outside the runtime's lock code (the last frame
 * when all are), as a pointer into the trace's string; its length in *len. */
static const char *site_of(const locks_profile *p, uint64_t stack, size_t *len) {
    return lock_site(dnp_trace_string(p->t, stack), len);
}

static int by_wait(const void *x, const void *y) {
    const lk_sum *a = x, *b = y;
    if (a->wait_ns != b->wait_ns)
        return a->wait_ns < b->wait_ns ? 1 : -1;
    return a->key != b->key ? (a->key > b->key) - (a->key < b->key) : (a->type > b->type) - (a->type < b->type);
}

static int path_by_wait(const void *x, const void *y) {
    const lk_path *a = x, *b = y;
    if (a->wait_ns != b->wait_ns)
        return a->wait_ns < b->wait_ns ? 1 : -1;
    return a->stack != b->stack ? (a->stack > b->stack) - (a->stack < b->stack) : (a->type > b->type) - (a->type < b->type);
}

/* Adds one path's figures to the sum of key in arr (linear: few keys). */
static int sum_into(lk_sum **arr, size_t *n, size_t *cap, uint64_t key, uint64_t type, uint32_t kind, uint64_t count,
                    uint64_t wait, uint64_t max) {
    for (size_t i = 0; i < *n; i++) {
        lk_sum *s = &(*arr)[i];
        if (s->key == key && s->type == type && s->kind == kind) {
            s->count += count, s->wait_ns += wait;
            if (max > s->max_ns)
                s->max_ns = max;
            return 0;
        }
    }
    if (DNP_VEC_RESERVE(*arr, *cap, *n + 1, 64) != 0)
        return -1;
    (*arr)[(*n)++] = (lk_sum){key, type, kind, count, wait, max};
    return 0;
}

/* The call into the framework's wait code that a stack's site made (lock_api). */
static const char *api_of(const locks_profile *p, uint64_t stack, size_t *len) {
    return lock_api(dnp_trace_string(p->t, stack), len);
}

typedef const char *(*frame_of_fn)(const locks_profile *p, uint64_t stack, size_t *len);

/* The site (or the call) of path i: the index of the first path with the same
 * frame's text and class (contention or other waits), found by its hash. */
static int site_key(locks_profile *p, dnp_idmap *m, size_t i, uint64_t *key, frame_of_fn frame_of) {
    size_t len;
    const char *site = frame_of(p, p->paths[i].stack, &len);
    uint64_t h = dnp_text_hash(site ? site : "", len), cls = CONTENTION(p->paths[i].kind) ? 0 : 1;
    for (uint64_t probe = 0;; probe++) {
        uint32_t j;
        if (!dnp_idmap_get(m, h, cls | probe << 1, &j)) {
            *key = i;
            return dnp_idmap_put(m, h, cls | probe << 1, (uint32_t)i);
        }
        size_t n;
        const char *other = frame_of(p, p->paths[j].stack, &n);
        if (n == len && (!len || !memcmp(other, site, len))) {
            *key = j;
            return 0;
        }
    }
}

static int summarize(locks_profile *p) {
    size_t ct = 0, cs = 0, co = 0;
    if (p->npaths)
        qsort(p->paths, p->npaths, sizeof *p->paths, path_by_wait);
    dnp_idmap sites, apis;
    memset(&sites, 0, sizeof sites);
    memset(&apis, 0, sizeof apis);
    uint32_t *slot = calloc(p->npaths + 1, sizeof *slot); /* by a site's first path: its index in p->sites */
    int rc = slot ? 0 : -1;
    for (size_t i = 0; i < p->npaths && rc == 0; i++) {
        lk_path *a = &p->paths[i];
        uint64_t key = 0;
        uint32_t cls = CONTENTION(a->kind) ? 0 : 1;
        rc = site_key(p, &sites, i, &key, site_of);
        /* contention by the locked object's type; other waits by the call that
         * waited (the index of a path with it), which says what was waited on */
        uint64_t what = a->type;
        if (rc == 0 && cls)
            rc = site_key(p, &apis, i, &what, api_of);
        if (rc == 0)
            rc = sum_into(&p->types, &p->ntypes, &ct, what, 0, a->kind, a->count, a->wait_ns, a->max_ns);
        if (rc == 0 && key == i && DNP_VEC_RESERVE(p->sites, cs, p->nsites + 1, 64) == 0) {
            slot[i] = (uint32_t)p->nsites;
            p->sites[p->nsites++] = (lk_sum){key, 0, cls, 0, 0, 0};
        } else if (rc == 0 && key == i) {
            rc = -1;
        }
        if (rc == 0) {
            lk_sum *st = &p->sites[slot[key]];
            st->count += a->count, st->wait_ns += a->wait_ns;
            if (a->max_ns > st->max_ns)
                st->max_ns = a->max_ns;
        }
        /* owner 0: the runtime's event named none; a row of its own, so the
         * shares add up (only where the runtime says owners at all) */
        for (size_t k = 0; k < a->nowners && CONTENTION(a->kind) && rc == 0; k++)
            if (a->owners[k].owner || p->start_version >= 2)
                rc = sum_into(&p->owners, &p->nowners, &co, a->owners[k].owner, 0, 0, a->owners[k].count,
                              a->owners[k].wait_ns, 0);
    }
    dnp_idmap_release(&sites);
    dnp_idmap_release(&apis);
    free(slot);
    if (rc != 0)
        return -1;
    if (p->ntypes)
        qsort(p->types, p->ntypes, sizeof *p->types, by_wait);
    if (p->nsites)
        qsort(p->sites, p->nsites, sizeof *p->sites, by_wait);
    if (p->nowners)
        qsort(p->owners, p->nowners, sizeof *p->owners, by_wait);
    return 0;
}

/* System.Threading.Lock's contention as the probe in its slow path timed it
 * (the runtime reports only the acquisitions that blocked after spinning): in
 * the totals and in its row of "by lock"; sites, stacks and owners stay the
 * events' (docs/waits.md). */
static int add_lock_slow_path(locks_profile *p) {
    lk_sum *row = NULL;
    for (size_t i = 0; i < p->ntypes; i++)
        if (p->types[i].kind == DNP_LOCK_LOCK) {
            p->slow_ev_count += p->types[i].count, p->slow_ev_ns += p->types[i].wait_ns;
            row = row ? row : &p->types[i];
        }
    if (p->probe_stacks) { /* the probe's calls are the Lock's LockSites (with the waits before it ran) */
        p->slow = (traced_lock){1, p->slow_ev_count, p->slow_ev_ns, row ? row->max_ns : 0};
        for (size_t i = 0; i < p->npaths; i++)
            for (size_t k = 0; p->paths[i].kind == DNP_LOCK_LOCK && k < p->paths[i].nowners; k++)
                p->lock_named += p->paths[i].owners[k].owner ? p->paths[i].owners[k].count : 0;
        p->blocked_n += p->before_n, p->blocked_ns += p->before_ns; /* the runtime's part */
        return 0;
    }
    if (p->attached || (p->major && p->major < 9))
        return 0; /* no probe (rejit.c): no second pass over the trace */
    /* a 1.4 agent's trace: the Lock's LockSites are the runtime's waits alone, the probe's sums apart */
    if (traced_lock_read(p->path, &p->slow) != 0)
        return -1;
    p->blocked_n = p->slow_ev_count, p->blocked_ns = p->slow_ev_ns;
    uint64_t count = p->slow_ev_count, ns = p->slow_ev_ns;
    traced_lock_merge(&p->slow, &count, &ns);
    p->slow.calls = count, p->slow.ns = ns; /* what the report says: the probe's, or the events' where more */
    if (count == p->slow_ev_count && ns == p->slow_ev_ns)
        return 0;
    if (!row) { /* every contended acquisition was won by spinning */
        lk_sum *t = realloc(p->types, (p->ntypes + 1) * sizeof *t);
        if (!t)
            return -1;
        p->types = t;
        row = &t[p->ntypes++];
        *row = (lk_sum){0, 0, DNP_LOCK_LOCK, 0, 0, 0};
    }
    row->count += count - p->slow_ev_count, row->wait_ns += ns - p->slow_ev_ns;
    p->count[0] += count - p->slow_ev_count, p->wait_ns[0] += ns - p->slow_ev_ns;
    if (p->slow.max_ns > row->max_ns)
        row->max_ns = p->slow.max_ns;
    if (p->slow.max_ns > p->max_ns[0])
        p->max_ns[0] = p->slow.max_ns;
    qsort(p->types, p->ntypes, sizeof *p->types, by_wait);
    return 0;
}

int locks_open(const char *path, locks_profile **out) {
    *out = NULL;
    locks_profile *p = calloc(1, sizeof *p);
    if (!p)
        return error("out of memory"), 1;
    p->path = path;
    if (report_read_events(path, feed, p, &p->s, 1) != 0 || summarize(p) != 0) {
        if (p->s)
            error("%s: out of memory", path);
        locks_free(p);
        return 1;
    }
    p->t = dnp_trace_stream_trace(p->s);
    if (add_lock_slow_path(p) != 0) {
        locks_free(p);
        return 1;
    }
    uint64_t origin = dnp_trace_stream_origin(p->s); /* slices on the trace's clock, as the calls' timeline */
    for (size_t i = 0; i < p->nslices; i++)
        p->slices[i].start_ns = p->slices[i].start_ns > origin ? p->slices[i].start_ns - origin : 0;
    *out = p;
    return 0;
}

void locks_free(locks_profile *p) {
    if (!p)
        return;
    dnp_calltree_free(p->ct);
    dnp_ct_names_release(&p->nm);
    dnp_idmap_release(&p->path_h);
    for (size_t i = 0; i < p->npaths; i++)
        free(p->paths[i].owners);
    DNP_FREE_ALL(p->paths, p->types, p->sites, p->owners, p->slices);
    dnp_trace_stream_close(p->s);
    free(p);
}

int locks_has_data(const locks_profile *p) {
    return p && p->configured;
}

/* ---- names ---- */

/* The trace's thread whose OS thread id is tid, or NULL. */
static const dnp_trace_thread *thread_of_tid(const locks_profile *p, uint64_t tid) {
    for (size_t i = 0; tid && i < p->t->nthreads; i++)
        if (p->t->threads[i].os_tid == tid)
            return &p->t->threads[i];
    return NULL;
}

/* "thread 5 (contender 0, tid 4242)", or "tid 4242" when the trace does not
 * know it, or OWNER_UNNAMED for 0. */
static const char *owner_label(const locks_profile *p, uint64_t owner, char *buf, size_t len) {
    const dnp_trace_thread *th = thread_of_tid(p, owner);
    if (!owner)
        snprintf(buf, len, "%s", OWNER_UNNAMED);
    else if (!th)
        snprintf(buf, len, "tid %llu", (unsigned long long)owner);
    else if (th->name && *th->name)
        snprintf(buf, len, "thread %u (%s, tid %llu)", th->ordinal, th->name, (unsigned long long)owner);
    else
        snprintf(buf, len, "thread %u (tid %llu)", th->ordinal, (unsigned long long)owner);
    return buf;
}

static const char *type_label(const locks_profile *p, uint64_t type, uint32_t kind) {
    if (kind == DNP_LOCK_WAIT_HANDLE || kind == DNP_LOCK_MONITOR_WAIT || (kind == DNP_LOCK_LOCK && !type))
        return kind_labels[kind];
    return str(p, type, "[type not known]");
}

/* A row of "by lock" or "by what was waited on": the locked object's type, or
 * the call that waited with the kind of wait. */
static const char *what_label(const locks_profile *p, const lk_sum *s, char *buf, size_t len) {
    if (CONTENTION(s->kind))
        return type_label(p, s->key, s->kind);
    size_t n;
    const char *api = api_of(p, p->paths[s->key].stack, &n);
    if (!api)
        return kind_labels[s->kind];
    char name[1024];
    snprintf(buf, len, "%s (%s)", report_frame_name(api, n, name, sizeof name), kind_labels[s->kind]);
    return buf;
}

/* What the runtime could not say, one sentence each (NULL: nothing). */
static const char *version_note(const locks_profile *p) {
    if (p->count[0] && p->start_version && p->start_version < 2)
        return "the runtime's ContentionStart is version 1 (before .NET 8): it does not say which lock was "
               "waited for or which thread held it";
    return NULL;
}

/* What System.Threading.Lock's figures are made of (NULL: nothing to say). */
/* What the probe could not see: the acquisitions won by spinning before it ran
 * (appended to buf, holding the note so far, when some blocked then). */
static const char *before_probe(const locks_profile *p, char *buf, size_t len) {
    char a[32];
    size_t n = strlen(buf);
    if (p->before_n && n < len)
        snprintf(buf + n, len - n, "; %s began before the probe was in place (the program's first tens of "
                 "milliseconds), when only the acquisitions that blocked could be seen",
                 cli_fmt_count(p->before_n, a));
    return buf;
}

static const char *lock_note(const locks_profile *p, char *buf, size_t len) {
    char a[32], b[32], c[32], d[32];
    /* an agent that reads the holder as each call starts names more owners than the runtime's events */
    int at_start = p->lock_named > p->blocked_n;
    if (p->slow.known && p->probe_stacks && !p->slow.calls && !p->blocked_n)
        return "System.Threading.Lock: its slow path was timed (every contended acquisition, spinning included; "
               "recursive ones and TryEnter() are none): no acquisition was contended";
    if (p->slow.known && p->probe_stacks && !p->blocked_n) {
        snprintf(buf, len, "System.Threading.Lock: %s contended acquisition%s took %s, spinning included, each with "
                 "its site and stack (timed in Lock's slow path); none blocked after spinning, so the runtime "
                 "reported none%s", cli_fmt_count(p->slow.calls, a), CLI_PLURAL(p->slow.calls),
                 report_fmt_ns(p->slow.ns, b), at_start ? "; the owner is the thread that held the lock as each "
                 "began" : " and none names the thread that held the lock");
        return before_probe(p, buf, len);
    }
    if (p->slow.known && p->probe_stacks && p->slow.calls > p->blocked_n) {
        snprintf(buf, len, "System.Threading.Lock: %s contended acquisition%s took %s, spinning included, each with "
                 "its site and stack (timed in Lock's slow path); the runtime reported the %s that blocked after "
                 "spinning (%s)%s", cli_fmt_count(p->slow.calls, a), CLI_PLURAL(p->slow.calls),
                 report_fmt_ns(p->slow.ns, b), cli_fmt_count(p->blocked_n, c), report_fmt_ns(p->blocked_ns, d),
                 at_start ? "; the owner is the thread the runtime named as one blocked, else the one that held "
                 "the lock as the acquisition began" : ", and only those name the thread that held the lock");
        return before_probe(p, buf, len);
    }
    if (p->slow.known && !p->probe_stacks && (p->slow.calls > p->slow_ev_count || p->slow.ns > p->slow_ev_ns)) {
        snprintf(buf, len, "System.Threading.Lock: %s contended acquisition%s took %s, spinning included (timed in "
                 "Lock's slow path); the runtime reported the %s that blocked after spinning (%s), and only "
                 "those have a site, a stack and an owner below", cli_fmt_count(p->slow.calls, a),
                 CLI_PLURAL(p->slow.calls), report_fmt_ns(p->slow.ns, b), cli_fmt_count(p->slow_ev_count, c),
                 report_fmt_ns(p->slow_ev_ns, d));
        return buf;
    }
    if (!p->slow.known && p->slow_ev_count && p->attached)
        return "System.Threading.Lock: only its acquisitions that blocked after spinning are counted (the runtime "
               "reports no others); dnprof run --locks times the rest too, by attach they cannot be";
    return NULL;
}

/* A Monitor's acquisitions won by spinning: spun inside the runtime's own
 * fast path (an FCALL, on .NET 8, 9 and 10 alike), reported by no event and
 * out of any probe's reach; said where Monitor contention is shown. */
static const char *monitor_note(const locks_profile *p) {
    for (size_t i = 0; i < p->ntypes; i++)
        if (p->types[i].kind == DNP_LOCK_MONITOR)
            return "Monitor (the lock statement on an object): only its acquisitions that blocked after spinning "
                   "are counted; the runtime spins inside its own fast path and reports none that spinning won, "
                   "so their time is not here (it is CPU: dnprof run --sample shows it under the frames that "
                   "take the lock)";
    return NULL;
}

static const char *waits_note(const locks_profile *p, char *buf, size_t len) {
    if (p->mode != 2) { /* the command that recorded this trace, asked again */
        char cmd[48];
        snprintf(buf, len, "waits on WaitHandles and Monitor.Wait were not asked for (%s --locks=waits records "
                 "them, .NET 9+)", report_recording_cmd(p->attached, cmd, sizeof cmd));
        return buf;
    }
    if (p->major && p->major < 9)
        return "waits on WaitHandles and Monitor.Wait are not recorded: the runtime raises their events from .NET 9";
    return NULL;
}

/* The notes of the report, in order, into notes[4]; the buffers hold their text. */
static void all_notes(const locks_profile *p, const char *notes[4], char *hint, size_t hlen, char *lock_buf,
                      size_t llen) {
    notes[0] = version_note(p);
    notes[1] = waits_note(p, hint, hlen);
    notes[2] = lock_note(p, lock_buf, llen);
    notes[3] = monitor_note(p);
}

/* ---- JSON ---- */

static void json_sums(FILE *out, const locks_profile *p, const char *name, const lk_sum *a, size_t n, int what) {
    char buf[512];
    fprintf(out, ",\"%s\":[", name);
    for (size_t i = 0; i < n; i++) {
        const lk_sum *s = &a[i];
        fputs(i ? ",\n{" : "\n{", out);
        uint64_t whole = p->wait_ns[what == 1 ? (CONTENTION(s->kind) ? 0 : 1) : what == 2 ? (int)s->kind : 0];
        if (what == 1) { /* locks, and the calls that waited */
            fputs("\"type\":", out);
            dnp_export_json_str(out, CONTENTION(s->kind) ? type_label(p, s->key, s->kind) : kind_labels[s->kind], 0);
            size_t n;
            const char *api = CONTENTION(s->kind) ? NULL : api_of(p, p->paths[s->key].stack, &n);
            if (api) {
                fputs(",\"call\":", out);
                dnp_export_json_str(out, report_frame_name(api, n, buf, sizeof buf), 0);
            }
            fprintf(out, ",\"kind\":\"%s\",\"maxNs\":%llu,", kind_names[s->kind], (unsigned long long)s->max_ns);
        } else if (what == 2) { /* sites: kind is the class */
            size_t len;
            const char *site = site_of(p, p->paths[s->key].stack, &len);
            fputs("\"site\":", out);
            dnp_export_json_str(out, site ? report_frame_name(site, len, buf, sizeof buf) : "[no managed stack]", 0);
            fprintf(out, ",\"class\":\"%s\",\"maxNs\":%llu,", s->kind ? "wait" : "contention", (unsigned long long)s->max_ns);
        } else { /* owners */
            const dnp_trace_thread *th = thread_of_tid(p, s->key);
            fprintf(out, "\"tid\":%llu,\"thread\":", (unsigned long long)s->key);
            dnp_export_json_str(out, owner_label(p, s->key, buf, sizeof buf), 0);
            fprintf(out, ",\"known\":%s,", th ? "true" : "false");
        }
        fprintf(out, "\"waits\":%llu,\"waitNs\":%llu,\"share\":%.4f}", (unsigned long long)s->count,
                (unsigned long long)s->wait_ns, whole ? (double)s->wait_ns / (double)whole : 0.0);
    }
    fputc(']', out);
}

static void json_path(FILE *out, const locks_profile *p, const lk_path *a) {
    const char *text = dnp_trace_string(p->t, a->stack);
    fputs("{\"type\":", out);
    dnp_export_json_str(out, type_label(p, a->type, a->kind), 0);
    fprintf(out, ",\"kind\":\"%s\",\"stack\":", kind_names[a->kind]);
    report_json_frames(out, text, 0);
    uint64_t whole = p->wait_ns[CONTENTION(a->kind) ? 0 : 1];
    fprintf(out, ",\"waits\":%llu,\"waitNs\":%llu,\"maxNs\":%llu,\"share\":%.4f,\"owners\":[",
            (unsigned long long)a->count, (unsigned long long)a->wait_ns, (unsigned long long)a->max_ns,
            whole ? (double)a->wait_ns / (double)whole : 0.0);
    for (size_t k = 0, shown = 0; k < a->nowners; k++) {
        if (!a->owners[k].owner)
            continue;
        fprintf(out, "%s{\"tid\":%llu,\"waits\":%llu,\"waitNs\":%llu}", shown++ ? "," : "",
                (unsigned long long)a->owners[k].owner, (unsigned long long)a->owners[k].count,
                (unsigned long long)a->owners[k].wait_ns);
    }
    fputs("],\"raw\":", out);
    report_json_frames(out, text, 1);
    fputc('}', out);
}

static int report_json(const locks_profile *p, const report_opts *o, FILE *out) {
    char hint[160];
    fputs("{\"trace\":", out);
    dnp_export_json_str(out, p->path, 0);
    fprintf(out, ",\"runtimeMajor\":%llu,\"startVersion\":%llu,\"ownersKnown\":%s,\"waitsRecorded\":%s",
            (unsigned long long)p->major, (unsigned long long)p->start_version,
            p->start_version >= 2 ? "true" : "false", waits_note(p, hint, sizeof hint) ? "false" : "true");
    for (int c = 0; c < 2; c++)
        fprintf(out, ",\"%s\":{\"waits\":%llu,\"waitNs\":%llu,\"maxNs\":%llu}", c ? "waits" : "contention",
                (unsigned long long)p->count[c], (unsigned long long)p->wait_ns[c], (unsigned long long)p->max_ns[c]);
    fprintf(out, ",\"runtimeThreads\":{\"waits\":%llu,\"waitNs\":%llu}", (unsigned long long)p->house_count,
            (unsigned long long)p->house_ns);
    if (p->slow.known)
        fprintf(out, ",\"lockSlowPath\":{\"acquisitions\":%llu,\"ns\":%llu,\"maxNs\":%llu,\"blocked\":%llu,"
                "\"blockedNs\":%llu}", (unsigned long long)p->slow.calls, (unsigned long long)p->slow.ns,
                (unsigned long long)p->slow.max_ns, (unsigned long long)p->blocked_n,
                (unsigned long long)p->blocked_ns);
    fprintf(out, ",\"noContention\":%s,\"slices\":%zu,\"slicesDropped\":%llu,\"sliceNs\":%llu",
            p->count[0] ? "false" : "true", p->nslices, (unsigned long long)p->slices_dropped,
            (unsigned long long)p->slice_ns);
    char lock_buf[768];
    const char *notes[4];
    all_notes(p, notes, hint, sizeof hint, lock_buf, sizeof lock_buf);
    fputs(",\"notes\":[", out);
    for (int i = 0, n = 0; i < 4; i++)
        if (notes[i]) {
            fputs(n++ ? "," : "", out);
            dnp_export_json_str(out, notes[i], 0);
        }
    fputc(']', out);
    json_sums(out, p, "locks", p->types, p->ntypes, 1);
    json_sums(out, p, "sites", p->sites, p->nsites, 2);
    json_sums(out, p, "owners", p->owners, p->nowners, 0);
    fputs(",\"paths\":[", out);
    size_t n = o->top < p->npaths ? o->top : p->npaths;
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", out);
        json_path(out, p, &p->paths[i]);
    }
    fputs("]}\n", out);
    return ferror(out) ? 1 : 0;
}

/* ---- text ---- */

/* One class (0 contention, 1 other waits): by lock, by site, then the top paths. */
static void print_class(FILE *out, const locks_profile *p, int cls, unsigned top) {
    char a[32], b[32], c[32], buf[2048];
    uint64_t whole = p->wait_ns[cls];
    fprintf(out, "\n%s:\n%7s %10s %9s %10s  %s\n",
            cls ? "by what was waited on (the call that waited)" : "by lock (the type of the locked object)", "share",
            "waited", "waits", "longest", cls ? "call (kind of wait)" : "lock");
    for (size_t i = 0, n = 0; i < p->ntypes && n < top; i++) {
        const lk_sum *s = &p->types[i];
        if ((CONTENTION(s->kind) ? 0 : 1) != cls)
            continue;
        n++;
        fprintf(out, "%6.2f%% %10s %9s %10s  %s", report_pct(s->wait_ns, whole), report_fmt_ns(s->wait_ns, a), cli_fmt_count(s->count, b),
                report_fmt_ns(s->max_ns, c), what_label(p, s, buf, sizeof buf));
        if (cls || !strcmp(type_label(p, s->key, s->kind), kind_labels[s->kind]))
            fputc('\n', out);
        else
            fprintf(out, " (%s)\n", kind_labels[s->kind]);
    }
    fprintf(out, "\nby waiting site (the frame that waited):\n%7s %10s %9s %10s  %s\n", "share", "waited", "waits",
            "longest", "site");
    for (size_t i = 0, n = 0; i < p->nsites && n < top; i++) {
        const lk_sum *s = &p->sites[i];
        if ((int)s->kind != cls)
            continue;
        n++;
        size_t len;
        const char *site = site_of(p, p->paths[s->key].stack, &len);
        fprintf(out, "%6.2f%% %10s %9s %10s  %s\n", report_pct(s->wait_ns, whole), report_fmt_ns(s->wait_ns, a),
                cli_fmt_count(s->count, b), report_fmt_ns(s->max_ns, c),
                site ? report_frame_name(site, len, buf, sizeof buf) : "[no managed stack]");
    }
    if (!cls && p->nowners) {
        int unnamed = 0;
        fprintf(out, "\nby owner (the thread that held the lock):\n%7s %10s %9s  %s\n", "share", "waited", "waits", "owner");
        for (size_t i = 0; i < p->nowners && i < top; i++) {
            const lk_sum *s = &p->owners[i];
            fprintf(out, "%6.2f%% %10s %9s  %s\n", report_pct(s->wait_ns, whole), report_fmt_ns(s->wait_ns, a), cli_fmt_count(s->count, b),
                    owner_label(p, s->key, buf, sizeof buf));
            unnamed |= !s->key;
        }
        if (unnamed)
            fprintf(out, "%s: no thread held the lock as this one began to wait: it was changing hands, or kept "
                         "free for a thread that had waited long (the runtime's fairness to starved waiters)%s\n",
                    OWNER_UNNAMED, p->slow.known && p->lock_named <= p->blocked_n ?
                         "; or a Lock won by spinning, whose holder this trace's agent did not read" : "");
    }
    fprintf(out, "\ntop %s stacks (innermost frame first):\n", cls ? "waiting" : "contended");
    for (size_t i = 0, n = 0; i < p->npaths && n < (top < 10 ? top : 10); i++) {
        const lk_path *w = &p->paths[i];
        if ((CONTENTION(w->kind) ? 0 : 1) != cls)
            continue;
        n++;
        size_t owners = 0;
        for (size_t k = 0; k < w->nowners; k++)
            owners += w->owners[k].owner != 0;
        fprintf(out, "\n%6.2f%% %s in %s wait%s (longest %s)  %s", report_pct(w->wait_ns, whole), report_fmt_ns(w->wait_ns, a),
                cli_fmt_count(w->count, b), CLI_PLURAL(w->count), report_fmt_ns(w->max_ns, c), type_label(p, w->type, w->kind));
        if (owners)
            fprintf(out, ", held by %zu thread%s", owners, CLI_PLURAL(owners));
        fputc('\n', out);
        report_print_stack(out, dnp_trace_string(p->t, w->stack));
    }
}

static void print_header(FILE *out, const locks_profile *p) {
    char a[32], b[32], c[32], hint[160];
    const char *path = cli_short_path(p->path);
    if (!p->count[0])
        fprintf(out, "%s: no contention: no thread waited for a lock while it was recorded\n", path);
    else
        fprintf(out, "%s: lock contention: %s wait%s, %s waited in all (longest %s)\n", path,
                cli_fmt_count(p->count[0], a), CLI_PLURAL(p->count[0]), report_fmt_ns(p->wait_ns[0], b), report_fmt_ns(p->max_ns[0], c));
    if (p->count[1])
        fprintf(out, "other waits (WaitHandle, Monitor.Wait): %s wait%s, %s waited in all\n",
                cli_fmt_count(p->count[1], a), CLI_PLURAL(p->count[1]), report_fmt_ns(p->wait_ns[1], b));
    if (p->house_count)
        fprintf(out, "(and %s on " LOCK_RUNTIME_THREADS_TEXT ", in %s wait%s: not counted)\n",
                report_fmt_ns(p->house_ns, b), cli_fmt_count(p->house_count, a), CLI_PLURAL(p->house_count));
    char lock_buf[768];
    const char *notes[4];
    all_notes(p, notes, hint, sizeof hint, lock_buf, sizeof lock_buf);
    for (int i = 0; i < 4; i++)
        if (notes[i])
            fprintf(out, "note: %s\n", notes[i]);
    if (p->unmatched)
        fprintf(out, "note: %s wait%s had begun before recording did: not counted\n", cli_fmt_count(p->unmatched, a),
                CLI_PLURAL(p->unmatched));
}

int report_locks(locks_profile *p, const report_opts *o, FILE *out) {
    if (!locks_has_data(p)) {
        error("%s: this trace has no lock data: record it with dnprof run --locks (or dnprof attach PID --locks)",
              p->path);
        return 1;
    }
    if (o->json)
        return report_json(p, o, out);
    print_header(out, p);
    if (p->count[0])
        print_class(out, p, 0, o->top);
    if (p->count[1]) {
        fputs("\n---- other waits ----\n", out);
        print_class(out, p, 1, o->top);
    }
    return ferror(out) ? 1 : 0;
}

/* ---- the call tree: the waiting stacks weighted by the time waited ---- */

/* The frame of the time Lock's slow path took beyond the runtime's waits, in a
 * trace of a 1.4 agent (since 1.5 the probe's calls are LockSites, with stacks). */
#define LOCK_SPIN_FRAME "[won by spinning or before blocking: no stack (timed in Lock's slow path)]"

static int add_path(locks_profile *p, dnp_calltree *ct, const lk_path *w) {
    char leaf[1100];
    snprintf(leaf, sizeof leaf, "[%s %.1000s]", CONTENTION(w->kind) ? "lock" : "wait", type_label(p, w->type, w->kind));
    return dnp_ct_text_add(ct, &p->nm, str(p, w->stack, "[no managed stack]"), leaf, w->wait_ns,
                           w->count ? w->count : 1);
}

const dnp_calltree *locks_calltree(locks_profile *p) {
    if (p->ct)
        return p->ct;
    dnp_calltree *ct = dnp_ct_weighted_new(p->t, "nanoseconds");
    if (!ct)
        return NULL;
    ct->stream = p->s; /* read again for the runtime's events (chrome's GC track) */
    ct->count_type = "contentions";
    ct->weight_type = "delay";
    int rc = 0;
    for (size_t k = 0; k < p->npaths && rc == 0; k++)
        rc = add_path(p, ct, &p->paths[k]);
    /* Lock's acquisitions that no event reported (p->slow holds the merged figures): in the totals, with no stack */
    if (rc == 0 && p->slow.known && p->slow.ns > p->slow_ev_ns)
        rc = dnp_ct_text_add(ct, &p->nm, LOCK_SPIN_FRAME, "[lock System.Threading.Lock]", p->slow.ns - p->slow_ev_ns,
                             p->slow.calls > p->slow_ev_count ? p->slow.calls - p->slow_ev_count : 1);
    if (rc == 0)
        rc = dnp_ct_text_finish(ct, &p->nm);
    if (rc != 0) {
        dnp_calltree_free(ct);
        return NULL;
    }
    p->ct = ct;
    return ct;
}

/* ---- the timeline: each recorded wait a slice on its thread ---- */

static void slice_args(void *ctx, FILE *out, const dnp_export_slice *s) {
    locks_profile *p = ctx;
    uint32_t kind = (uint32_t)(s->a >> 40);
    char buf[512];
    fputs("\"lock\":", out);
    dnp_export_json_str(out, type_label(p, s->b, kind), 0);
    fprintf(out, ",\"kind\":\"%s\",\"waitedNs\":%llu", kind_names[kind < DNP_LOCK_NKINDS ? kind : 0], (unsigned long long)s->dur_ns);
    if (s->c) {
        fputs(",\"owner\":", out);
        dnp_export_json_str(out, owner_label(p, s->c, buf, sizeof buf), 0);
    }
    fputs(",\"stack\":", out);
    report_json_frames(out, dnp_trace_string(p->t, s->a & ((1ull << 40) - 1)), 0);
}

size_t locks_slices(locks_profile *p, dnp_export_opts *eo) {
    for (size_t i = 0; i < p->nslices; i++) {
        dnp_export_slice *s = &p->slices[i];
        uint32_t kind = (uint32_t)(s->a >> 40);
        s->name = CONTENTION(kind) ? type_label(p, s->b, kind) : kind_labels[kind < DNP_LOCK_NKINDS ? kind : DNP_LOCK_WAIT_HANDLE];
    }
    eo->slices = p->slices;
    eo->nslices = p->nslices;
    eo->slice_args = slice_args;
    eo->slice_ctx = p;
    return p->nslices;
}
