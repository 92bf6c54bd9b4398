/* heap.c: heap snapshots (heap.h). The GC thread encodes records into the
 * current buffer; a full buffer goes to the writer thread (a native thread the
 * runtime never suspends), which frames it as a chunk and writes it, while the
 * GC thread fills the next one. With every buffer in flight the GC thread waits
 * for one: a slow disk lengthens the pause, never the memory. */
#include "heap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bg_thread.h"
#include "heap_format.h"
#include "heap_statics.h"
#include "names.h"
#include "recorder.h"
#include "trace_format.h"
#include "trace_writer.h"

#define NBUF 16 /* x DNP_HEAP_CHUNK_MAX: 16 MiB of buffers at most */
#define ROOTS_PER_RECORD 1024
#define MAX_SLOTS 64 /* fields of a class looked at for names */

typedef struct fslot {
    uint32_t off;
    mdFieldDef token;
    ClassID owner;
} fslot;

/* What the walk needs of a class, by class index, found when it is first seen
 * (class_slots) or at its first object: nothing but this is looked up per
 * object. */
typedef struct cinfo {
    uint32_t fstart; /* its first field in H.slots */
    uint32_t size;   /* its objects' size when they have no components (not an
                        array or a string), 0 while not known or variable */
    uint8_t fcount;  /* its fields that may hold a reference */
    uint8_t lastn;   /* references of the last P record written for it (0xff: none) */
    uint8_t last[MAX_SLOTS]; /* the slots of that record */
} cinfo;
#define COR_PRF_GC_INDUCED 1

atomic_int heap_capturing;

static atomic_int busy; /* one snapshot at a time */

/* The benchmark's floor (bench/bench_heap.c): when a file named as the
 * snapshot with ".walk-only" added exists, the snapshot lets the runtime walk
 * the heap and call every callback, which only count: the pause no profiler
 * built on the API can beat. The snapshot holds no objects and says so (not
 * complete). */
static int walk_only;

static struct {
    /* the writer */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *bufs[NBUF];
    size_t lens[NBUF];
    int nbufs;
    int free_list[NBUF], nfree;
    int queue[NBUF], qhead, qlen;
    int stop;
    int fd;
    int write_errno;
    uint64_t file_bytes;
    pthread_t writer;
    /* the buffer being filled (GC thread, then the snapshot's own thread) */
    int cur;
    uint8_t *p, *end;
    /* the walk */
    atomic_int armed;
    int done, saw_walk, partial;
    uint64_t t_start, t_walk, t_end;
    uint64_t objects, refs, roots, deps, bytes;
    uint64_t prev_obj, prev_root, prev_key;
    /* classes: ClassID -> index (open addressing), index -> ClassID */
    UINT_PTR *keys;
    uint32_t *vals;
    size_t cap, count;
    UINT_PTR *classes;
    size_t classes_cap;
    /* each class's walk data; its fields that may hold a reference (8-aligned), by offset */
    cinfo *ci;
    ClassID last_cls; /* the class of the last object, and its index */
    uint32_t last_ci;
    fslot *slots;
    size_t nslots, slots_cap;
    /* methods of stack roots */
    UINT_PTR *funcs;
    size_t nfuncs, funcs_cap;
} H = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .fd = -1};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the writer ---- */

static void write_chunk(const uint8_t *data, size_t len) {
    if (H.write_errno || !len)
        return;
    uint32_t hdr[3] = {DNP_HEAP_CHUNK_MAGIC, (uint32_t)len, dnp_crc32(data, len)};
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)data, len}};
    size_t want = sizeof hdr + len, done = 0;
    while (done < want) {
        ssize_t w = writev(H.fd, iov, 2);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            H.write_errno = w < 0 ? errno : EIO;
            return;
        }
        done += (size_t)w;
        for (int i = 0; i < 2; i++) { /* advance past what was written */
            size_t k = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + k;
            iov[i].iov_len -= k;
            w -= (ssize_t)k;
        }
    }
    H.file_bytes += want;
}

static void *writer_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&H.mu);
    for (;;) {
        while (!H.qlen && !H.stop)
            pthread_cond_wait(&H.cv, &H.mu);
        if (!H.qlen)
            break;
        int b = H.queue[H.qhead];
        H.qhead = (H.qhead + 1) % NBUF;
        H.qlen--;
        pthread_mutex_unlock(&H.mu);
        write_chunk(H.bufs[b], H.lens[b]);
        pthread_mutex_lock(&H.mu);
        H.free_list[H.nfree++] = b;
        pthread_cond_broadcast(&H.cv);
    }
    pthread_mutex_unlock(&H.mu);
    return NULL;
}

/* Hands the current buffer to the writer and takes a free one (waiting for
 * one when all are in flight). */
static void rotate(void) {
    pthread_mutex_lock(&H.mu);
    if (H.cur >= 0) {
        H.lens[H.cur] = (size_t)(H.p - H.bufs[H.cur]);
        H.queue[(H.qhead + H.qlen) % NBUF] = H.cur;
        H.qlen++;
        pthread_cond_broadcast(&H.cv);
    }
    if (!H.nfree && H.nbufs < NBUF) {
        uint8_t *b = malloc(DNP_HEAP_CHUNK_MAX);
        if (b) {
            H.bufs[H.nbufs] = b;
            H.free_list[H.nfree++] = H.nbufs++;
        }
    }
    while (!H.nfree)
        pthread_cond_wait(&H.cv, &H.mu);
    H.cur = H.free_list[--H.nfree];
    pthread_mutex_unlock(&H.mu);
    H.p = H.bufs[H.cur];
    H.end = H.p + DNP_HEAP_CHUNK_MAX;
}

/* Room for one record of at most need bytes. */
static inline uint8_t *reserve(size_t need) {
    if ((size_t)(H.end - H.p) < need)
        rotate();
    return H.p;
}

static int writer_start(const char *path) {
    H.fd = dnp_file_create(path, 0); /* 0600, never through a link (as traces) */
    if (H.fd < 0)
        return -errno;
    H.write_errno = 0;
    H.file_bytes = 0;
    H.stop = 0;
    H.qhead = H.qlen = 0;
    H.nfree = 0;
    for (int i = 0; i < H.nbufs; i++)
        H.free_list[H.nfree++] = i;
    H.cur = -1;
    /* Two buffers now: the walk must not fail for want of the first one. */
    for (int i = H.nbufs; i < 2; i++) {
        uint8_t *b = malloc(DNP_HEAP_CHUNK_MAX);
        if (!b)
            break;
        H.bufs[H.nbufs] = b;
        H.free_list[H.nfree++] = H.nbufs++;
    }
    if (H.nbufs < 2) {
        close(H.fd);
        H.fd = -1;
        return -ENOMEM;
    }
    uint8_t hdr[DNP_HEAP_HEADER_SIZE];
    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, DNP_HEAP_MAGIC, 8);
    uint32_t v = DNP_HEAP_VERSION, hs = DNP_HEAP_HEADER_SIZE;
    uint64_t pid = (uint64_t)getpid();
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    uint64_t t = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec;
    memcpy(hdr + 8, &v, 4);
    memcpy(hdr + 12, &hs, 4);
    uint64_t host_pid = g_agent.config.host_pid; /* attached from the host into a container, else 0 */
    memcpy(hdr + 16, &pid, 8);
    memcpy(hdr + 24, &t, 8);
    memcpy(hdr + 32, &host_pid, 8);
    if (write(H.fd, hdr, sizeof hdr) != (ssize_t)sizeof hdr) {
        int e = errno ? errno : EIO;
        close(H.fd);
        H.fd = -1;
        return -e;
    }
    H.file_bytes = sizeof hdr;
    int rc = bg_thread_spawn(&H.writer, writer_main, NULL);
    if (rc != 0) {
        close(H.fd);
        H.fd = -1;
        return -rc;
    }
    pthread_setname_np(H.writer, "dnprof-heapw");
    rotate();
    return 0;
}

/* Writes the last buffer, stops the writer, closes the file; -errno of the
 * first write that failed, or 0. */
static int writer_stop(void) {
    rotate();
    pthread_mutex_lock(&H.mu);
    H.stop = 1;
    pthread_cond_broadcast(&H.cv);
    pthread_mutex_unlock(&H.mu);
    pthread_join(H.writer, NULL);
    /* Keep two buffers for the next snapshot, give the rest back. */
    for (int i = 2; i < H.nbufs; i++)
        free(H.bufs[i]);
    if (H.nbufs > 2)
        H.nbufs = 2;
    int e = H.write_errno;
    if (close(H.fd) != 0 && !e)
        e = errno;
    H.fd = -1;
    return -e;
}

/* ---- classes and methods ---- */

static int classes_reset(void) {
    H.count = 0;
    H.last_cls = 0;
    H.last_ci = 0;
    if (!H.keys) {
        H.cap = 1u << 14;
        H.keys = calloc(H.cap, sizeof *H.keys);
        H.vals = calloc(H.cap, sizeof *H.vals);
        if (!H.keys || !H.vals)
            return -1;
    } else {
        memset(H.keys, 0, H.cap * sizeof *H.keys);
    }
    if (!H.classes_cap) { /* index 0 ("no class") exists before any class */
        H.classes = malloc(4096 * sizeof *H.classes);
        H.ci = malloc(4096 * sizeof *H.ci);
        if (!H.classes || !H.ci) {
            free(H.classes);
            free(H.ci);
            H.classes = NULL;
            H.ci = NULL;
            return -1;
        }
        H.classes_cap = 4096;
    }
    memset(&H.ci[0], 0, sizeof H.ci[0]);
    H.nfuncs = 0;
    H.nslots = 0;
    return 0;
}

static inline size_t hash_ptr(UINT_PTR k, size_t mask) {
    uint64_t x = (uint64_t)k * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 29) & mask;
}

static int classes_grow(void) {
    size_t ncap = H.cap * 2;
    UINT_PTR *nk = calloc(ncap, sizeof *nk);
    uint32_t *nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < H.cap; i++) {
        if (!H.keys[i])
            continue;
        size_t j = hash_ptr(H.keys[i], ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = H.keys[i];
        nv[j] = H.vals[i];
    }
    free(H.keys);
    free(H.vals);
    H.keys = nk;
    H.vals = nv;
    H.cap = ncap;
    return 0;
}

/* The fields of cls and its parents that may hold references, by offset, for
 * naming the references (GetClassLayout: offsets from the object's start).
 * A class with a field at offset 0 is a value type (its offsets leave out the
 * method table): none. Arrays have no layout: none. */
static void class_slots(uint32_t idx, ClassID cls) {
    cinfo *ci = &H.ci[idx];
    ci->fstart = (uint32_t)H.nslots;
    ci->fcount = 0;
    ci->size = 0;
    ci->lastn = 0xff; /* nothing written yet */
    memset(ci->last, 0, sizeof ci->last);
    fslot tmp[MAX_SLOTS];
    unsigned k = 0;
    COR_FIELD_OFFSET fo[MAX_SLOTS];
    ClassID c = cls;
    for (int depth = 0; c && depth < 32 && k < MAX_SLOTS; depth++) {
        ULONG cnt = 0, size = 0;
        if (FAILED(INFO_CALL(GetClassLayout, c, fo, MAX_SLOTS, &cnt, &size)) || cnt > MAX_SLOTS)
            return;
        for (ULONG i = 0; i < cnt; i++) {
            if (fo[i].ulOffset == 0)
                return;
            if (fo[i].ulOffset % 8 == 0 && k < MAX_SLOTS)
                tmp[k++] = (fslot){fo[i].ulOffset, fo[i].ridOfField, c};
        }
        c = heap_class_parent(c);
    }
    for (unsigned i = 1; i < k; i++) /* insertion sort by offset */
        for (unsigned j = i; j > 0 && tmp[j].off < tmp[j - 1].off; j--) {
            fslot t = tmp[j];
            tmp[j] = tmp[j - 1];
            tmp[j - 1] = t;
        }
    if (!k)
        return;
    if (H.nslots + k > H.slots_cap) {
        size_t nc = H.slots_cap ? H.slots_cap * 2 : 4096;
        while (nc < H.nslots + k)
            nc *= 2;
        fslot *n = realloc(H.slots, nc * sizeof *n);
        if (!n)
            return;
        H.slots = n;
        H.slots_cap = nc;
    }
    memcpy(H.slots + H.nslots, tmp, k * sizeof *tmp);
    H.nslots += k;
    ci->fcount = (uint8_t)k;
}

/* The class's index, defining it in the file the first time (0 is "no class"). */
static uint32_t class_index(ClassID cls) {
    if (!cls)
        return 0;
    size_t mask = H.cap - 1, i = hash_ptr(cls, mask);
    while (H.keys[i]) {
        if (H.keys[i] == cls)
            return H.vals[i];
        i = (i + 1) & mask;
    }
    if ((H.count + 1) * 2 > H.cap || H.count + 1 >= H.classes_cap) {
        if ((H.count + 1) * 2 > H.cap && classes_grow() < 0)
            return 0;
        if (H.count + 1 >= H.classes_cap) {
            size_t nc = H.classes_cap ? H.classes_cap * 2 : 4096;
            UINT_PTR *n = realloc(H.classes, nc * sizeof *n);
            if (n)
                H.classes = n;
            cinfo *c = realloc(H.ci, nc * sizeof *c);
            if (c) {
                H.ci = c;
                memset(&c[0], 0, sizeof *c); /* index 0, "no class": no fields, no size */
            }
            if (!n || !c)
                return 0;
            H.classes_cap = nc;
        }
        return class_index(cls);
    }
    uint32_t idx = (uint32_t)++H.count;
    H.keys[i] = cls;
    H.vals[i] = idx;
    H.classes[idx] = cls;
    class_slots(idx, cls);
    H.p = dnp_heap_put_CLASS(reserve(32), &(struct dnp_heap_CLASS){.index = idx, .class_id = cls});
    return idx;
}

static void func_note(UINT_PTR id) {
    if (!id)
        return;
    for (size_t i = 0; i < H.nfuncs; i++) /* stack roots name few methods */
        if (H.funcs[i] == id)
            return;
    if (H.nfuncs == H.funcs_cap) {
        size_t nc = H.funcs_cap ? H.funcs_cap * 2 : 256;
        if (nc > 65536)
            return;
        UINT_PTR *n = realloc(H.funcs, nc * sizeof *n);
        if (!n)
            return;
        H.funcs = n;
        H.funcs_cap = nc;
    }
    H.funcs[H.nfuncs++] = id;
}

/* ---- the GC's callbacks, while capturing ---- */

void heap_gc_started(int n, const BOOL *collected, int reason) {
    if (!atomic_load(&H.armed) || H.done || atomic_load(&heap_capturing))
        return;
    /* Ours is the full, induced GC (ForceGC). */
    if (reason != COR_PRF_GC_INDUCED || n < 3 || !collected || !collected[2])
        return;
    H.t_start = now_ns();
    atomic_store(&heap_capturing, 1);
}

void heap_gc_finished(void) {
    if (!atomic_load(&heap_capturing))
        return;
    H.t_end = now_ns();
    H.done = 1;
    atomic_store(&heap_capturing, 0);
}

static void walk_begins(void) {
    if (!H.saw_walk) {
        H.saw_walk = 1;
        H.t_walk = now_ns();
    }
}

typedef struct roots_args {
    const ObjectID *refs;
    const COR_PRF_GC_ROOT_KIND *kinds;
    const COR_PRF_GC_ROOT_FLAGS *flags;
    const UINT_PTR *ids;
} roots_args;

typedef struct deps_args {
    const ObjectID *keys, *values;
    const GCHandleID *ids;
} deps_args;

/* A ROOTS record of the roots [i, i + m). */
static uint8_t *put_roots(uint8_t *p, ULONG i, ULONG m, const void *arg) {
    const roots_args *a = arg;
    p = dnp_heap_put_ROOTS(p, &(struct dnp_heap_ROOTS){.n = m});
    for (ULONG k = i; k < i + m; k++) {
        unsigned kind = a->kinds ? (unsigned)a->kinds[k] & 7 : 0;
        uint64_t fl = a->flags ? (uint64_t)(uint32_t)a->flags[k] : 0;
        UINT_PTR id = a->ids ? a->ids[k] : 0;
        p = dnp_heap_put_ROOTS_item(p, &(struct dnp_heap_ROOTS_item){
            .kind_flags = kind | fl << 3, .addr = (int64_t)(a->refs[k] - H.prev_root), .id = id});
        H.prev_root = a->refs[k];
        if (kind == DNP_ROOT_STACK)
            func_note(id);
    }
    return p;
}

/* A DEPS record of the dependent handles [i, i + m). */
static uint8_t *put_deps(uint8_t *p, ULONG i, ULONG m, const void *arg) {
    const deps_args *a = arg;
    p = dnp_heap_put_DEPS(p, &(struct dnp_heap_DEPS){.n = m});
    for (ULONG k = i; k < i + m; k++) {
        p = dnp_heap_put_DEPS_item(p, &(struct dnp_heap_DEPS_item){
            .key = (int64_t)(a->keys[k] - H.prev_key), .value = (int64_t)(a->values[k] - a->keys[k]),
            .handle = a->ids ? a->ids[k] : 0});
        H.prev_key = a->keys[k];
    }
    return p;
}

/* n items counted in *count and, unless walking only, written by put in
 * records of at most ROOTS_PER_RECORD (at most 30 bytes an item). */
static void in_records(ULONG n, uint64_t *count,
                       uint8_t *(*put)(uint8_t *p, ULONG i, ULONG m, const void *arg), const void *arg) {
    walk_begins();
    *count += n;
    for (ULONG i = 0; !walk_only && i < n; i += ROOTS_PER_RECORD) {
        ULONG m = n - i < ROOTS_PER_RECORD ? n - i : ROOTS_PER_RECORD;
        H.p = put(reserve(16 + (size_t)m * 30), i, m, arg);
    }
}

void heap_roots(ULONG n, const ObjectID *refs, const COR_PRF_GC_ROOT_KIND *kinds,
                const COR_PRF_GC_ROOT_FLAGS *flags, const UINT_PTR *ids) {
    in_records(n, &H.roots, put_roots, &(roots_args){refs, kinds, flags, ids});
}

void heap_deps(ULONG n, const ObjectID *keys, const ObjectID *values, const GCHandleID *ids) {
    in_records(n, &H.deps, put_deps, &(deps_args){keys, values, ids});
}

/* The class's index when it is not the last object's (which it becomes). */
static __attribute__((noinline)) uint32_t class_miss(ClassID cls) {
    uint32_t ci = class_index(cls);
    if (ci) {
        H.last_cls = cls;
        H.last_ci = ci;
    }
    return ci;
}

/* An object's size from its method table, as the runtime computes it
 * (MethodTable: u32 flags, whose low half is the component size when the top
 * bit is set, then u32 base size; arrays and strings keep their length right
 * after the method table pointer). Faster than a call into the runtime per
 * object, and checked against GetObjectSize2 on the first objects of every
 * snapshot: any difference and the runtime is asked for every object. A class
 * without components keeps its size (cinfo.size): its objects are not read. */
static int size_ok = -1;  /* -1 checking, 1 layout trusted, 0 ask the runtime */
static uint64_t size_checked;

static inline SIZE_T mt_size(ObjectID obj, uint32_t *fixed) {
    const uint32_t *mt = *(const uint32_t *const *)obj;
    SIZE_T size = mt[1];
    if (mt[0] & 0x80000000u)
        size += (SIZE_T)(mt[0] & 0xffff) * *(const uint32_t *)(obj + 8);
    else if (fixed)
        *fixed = mt[1];
    return size;
}

static __attribute__((noinline)) SIZE_T object_size_slow(ObjectID obj) {
    SIZE_T size = 0;
    if (FAILED(INFO_CALL(GetObjectSize2, obj, &size)))
        size = 0;
    if (size_ok == -1) {
        if (mt_size(obj, NULL) != size)
            size_ok = 0;
        else if (++size_checked >= 20000)
            size_ok = 1;
    }
    return size;
}

/* The references of an OBJECT or MORE record: each from the one before, the
 * first from the object. */
static inline uint8_t *put_refs(uint8_t *p, ObjectID obj, const ObjectID *refs, ULONG n) {
    ObjectID prev = obj;
    for (ULONG k = 0; k < n; k++) {
        p = dnp_heap_put_OBJECT_item(p, &(struct dnp_heap_OBJECT_item){.ref = (int64_t)(refs[k] - prev)});
        prev = refs[k];
    }
    return p;
}

static __attribute__((noinline)) void object_more(ObjectID obj, ULONG n, const ObjectID *refs) {
    for (ULONG i = DNP_HEAP_REFS_PER_RECORD; i < n;) {
        ULONG m = n - i < DNP_HEAP_REFS_PER_RECORD ? n - i : DNP_HEAP_REFS_PER_RECORD;
        uint8_t *p = dnp_heap_put_MORE(reserve(16 + (size_t)m * 10), &(struct dnp_heap_MORE){.n = m});
        H.p = put_refs(p, obj, refs + i, m);
        i += m;
    }
}

/* Which field each reference is in: the references come in field order, null
 * ones left out, so each is the next field that holds its value. Written only
 * when it differs from the class's last P record. */
static uint8_t slot_tmp[MAX_SLOTS]; /* the GC thread's: the walk is on one thread */

static __attribute__((noinline)) void slots_write(cinfo *c, ULONG n) {
    const uint8_t *m = slot_tmp;
    uint8_t *p = dnp_heap_put_SLOTS(reserve(16 + (size_t)n * 2), &(struct dnp_heap_SLOTS){.n = n});
    for (ULONG k = 0; k < n; k++) /* a slot is at most MAX_SLOTS: one byte */
        p = dnp_heap_put_SLOTS_item(p, &(struct dnp_heap_SLOTS_item){.slot = m[k]});
    H.p = p;
    c->lastn = (uint8_t)n;
    memcpy(c->last, m, n);
}

static inline void object_slots(ObjectID obj, cinfo *c, ULONG n, const ObjectID *refs) {
    if (n > MAX_SLOTS)
        return; /* the caller's bound, said here too: slot_tmp and c->last hold MAX_SLOTS */
    const fslot *fs = H.slots + c->fstart;
    unsigned nf = c->fcount, f = 0;
    uint8_t *m = slot_tmp;
    int same = c->lastn == n;
    for (unsigned k = 0; k < (unsigned)n && k < MAX_SLOTS; k++) {
        unsigned g = f;
        while (g < nf && *(const ObjectID *)(obj + fs[g].off) != refs[k])
            g++;
        m[k] = g < nf ? (uint8_t)(g + 1) : 0;
        if (g < nf)
            f = g + 1;
        same &= c->last[k] == m[k];
    }
    if (!same)
        slots_write(c, n);
}

void heap_object(ObjectID obj, ClassID cls, ULONG n, const ObjectID *refs) {
    walk_begins();
    if (walk_only) {
        H.objects++;
        H.refs += n;
        return;
    }
    uint32_t ci = cls == H.last_cls && cls ? H.last_ci : class_miss(cls);
    cinfo *c = &H.ci[ci];
    SIZE_T size;
    if (size_ok != 1)
        size = object_size_slow(obj);
    else if (c->size)
        size = c->size;
    else
        size = mt_size(obj, ci ? &c->size : NULL);
    ULONG here = n < DNP_HEAP_REFS_PER_RECORD ? n : DNP_HEAP_REFS_PER_RECORD;
    uint8_t *p = dnp_heap_put_OBJECT(reserve(64 + (size_t)here * 10),
                                     &(struct dnp_heap_OBJECT){.addr = (int64_t)(obj - H.prev_obj),
                                                               .cls = ci, .size = size, .nrefs = n,
                                                               .n = here});
    H.prev_obj = obj;
    H.p = put_refs(p, obj, refs, here);
    if (n > here)
        object_more(obj, n, refs);
    if (n && n <= MAX_SLOTS && c->fcount)
        object_slots(obj, c, n, refs);
    H.objects++;
    H.refs += n;
    H.bytes += size;
}

/* ---- the snapshot ---- */

static size_t text_len(const char *s) {
    size_t len = strlen(s);
    return len > 4000 ? 4000 : len;
}

typedef struct gc_job {
    HRESULT hr;
} gc_job;

/* The thread that forces the GC and does nothing else (docs/design-notes.md#heap-graph: the runtime
 * may make it a managed thread, after which it is no longer the profiler's). */
static void *gc_main(void *arg) {
    gc_job *job = arg;
    job->hr = g_agent.info->lpVtbl->ForceGC(g_agent.info);
    return NULL;
}

/* Forces the GC from a thread of its own and waits for it: 0, or the
 * pthread_create error. */
static int force_gc(gc_job *job) {
    atomic_store(&H.armed, 1);
    pthread_t t;
    int prc = bg_thread_spawn(&t, gc_main, job);
    if (prc == 0) {
        pthread_setname_np(t, "dnprof-gc");
        pthread_join(t, NULL);
    }
    atomic_store(&H.armed, 0);
    if (atomic_exchange(&heap_capturing, 0)) /* no GarbageCollectionFinished: cut short */
        H.partial = 1;
    return prc;
}

static void static_put(const char *name, size_t len, ObjectID value, void *ctx) {
    (void)ctx;
    if (len > 4000)
        len = 4000;
    uint8_t *p = dnp_heap_put_STATIC(reserve(32 + len),
                                     &(struct dnp_heap_STATIC){.name = name, .name_len = len, .n = 1});
    H.p = dnp_heap_put_STATIC_item(p, &(struct dnp_heap_STATIC_item){.addr = (int64_t)value});
}

/* Names, now that the GC is over, from this thread (not the GC's): classes,
 * stack roots' methods, fields; and the statics. */
static void write_names(void) {
    char name[1024];
    for (size_t i = 1; i <= H.count; i++) {
        names_class_text(H.classes[i], name, sizeof name);
        size_t len = text_len(name);
        H.p = dnp_heap_put_NAME(reserve(32 + len),
                                &(struct dnp_heap_NAME){.cls = i, .name = name, .name_len = len});
    }
    for (size_t i = 0; i < H.nfuncs; i++) {
        names_function_text(H.funcs[i], name, sizeof name);
        size_t len = text_len(name);
        H.p = dnp_heap_put_FUNC(reserve(32 + len), &(struct dnp_heap_FUNC){
            .function_id = H.funcs[i], .name = name, .name_len = len});
    }
    for (size_t i = 1; i <= H.count; i++) {
        unsigned nf = H.ci[i].fcount;
        if (!nf)
            continue;
        const fslot *fs = H.slots + H.ci[i].fstart;
        uint8_t *p = dnp_heap_put_LAYOUT(reserve(16 + (size_t)nf * 280),
                                         &(struct dnp_heap_LAYOUT){.cls = i, .n = nf});
        for (unsigned k = 0; k < nf; k++) {
            size_t len = names_field_text(fs[k].owner, fs[k].token, name, 256);
            p = dnp_heap_put_LAYOUT_item(p, &(struct dnp_heap_LAYOUT_item){
                .offset = fs[k].off, .name = name, .name_len = len});
        }
        H.p = p;
    }
    if (!walk_only && H.done)
        heap_statics_each(H.classes + 1, H.count, static_put, NULL);
}

/* The non-GC heap (frozen string literals and types): its objects are walked
 * but held by no root, and live as long as the process. */
static void write_nongc(void) {
    if (!AGENT_HAS_INFO(GetNonGCHeapBounds))
        return;
    COR_PRF_NONGC_HEAP_RANGE ranges[256];
    ULONG nr = 0;
    if (FAILED(INFO_CALL(GetNonGCHeapBounds, 256, &nr, ranges)) || !nr)
        return;
    if (nr > 256)
        nr = 256;
    uint8_t *p = dnp_heap_put_NONGC(reserve(16 + (size_t)nr * 20), &(struct dnp_heap_NONGC){.n = nr});
    for (ULONG i = 0; i < nr; i++)
        p = dnp_heap_put_NONGC_item(p, &(struct dnp_heap_NONGC_item){
            .start = ranges[i].rangeStart, .length = ranges[i].rangeLength});
    H.p = p;
}

/* The END record's status, and why it is not complete in why. */
static unsigned end_status(int prc, HRESULT hr, char *why, size_t cap) {
    if (prc != 0) {
        snprintf(why, cap, "cannot start the GC thread: %s", strerror(prc));
        return DNP_HEAP_NO_GC;
    }
    if (FAILED(hr)) {
        const char *hn = dnp_hresult_name((uint32_t)hr);
        snprintf(why, cap, "the runtime refused ForceGC: %s 0x%08x", hn ? hn : "error", (unsigned)hr);
        return DNP_HEAP_NO_GC;
    }
    if (!H.done || !H.saw_walk) {
        snprintf(why, cap, "the forced GC did not walk the heap");
        return DNP_HEAP_NO_GC;
    }
    if (H.partial) {
        snprintf(why, cap, "the heap walk was cut short");
        return DNP_HEAP_PARTIAL;
    }
    if (walk_only) {
        snprintf(why, cap, "walk only (a .walk-only file): the heap was walked, nothing recorded");
        return DNP_HEAP_PARTIAL;
    }
    return DNP_HEAP_COMPLETE;
}

/* The END record, the file closed, and the reply. 0, or -1. */
static int finish(const char *path, unsigned status, const char *why, char *reply, size_t cap) {
    uint64_t gc_ns = H.saw_walk && H.t_walk > H.t_start ? H.t_walk - H.t_start : 0;
    uint64_t pause_ns = H.t_end > H.t_start ? H.t_end - H.t_start : 0;
    uint64_t walk_ns = H.t_end > H.t_walk ? H.t_end - H.t_walk : 0;
    H.p = dnp_heap_put_END(reserve(128 + strlen(why)), &(struct dnp_heap_END){
        .status = status, .objects = H.objects, .refs = H.refs, .roots = H.roots, .deps = H.deps,
        .bytes = H.bytes, .gc_ns = gc_ns, .pause_ns = pause_ns, .walk_ns = walk_ns,
        .message = why, .message_len = strlen(why)});
    int e = writer_stop();
    if (e < 0) {
        snprintf(reply, cap, "error writing the snapshot '%s': %s", path, strerror(-e));
        return -1;
    }
    if (status != DNP_HEAP_COMPLETE && !(walk_only && H.done && H.saw_walk && !H.partial)) {
        snprintf(reply, cap, "error %s", why);
        return -1;
    }
    snprintf(reply, cap, "ok snapshot %llu %llu %llu %llu", (unsigned long long)H.objects,
             (unsigned long long)H.bytes, (unsigned long long)pause_ns,
             (unsigned long long)H.file_bytes);
    return 0;
}

/* The walk's state for a new snapshot into path. */
static void walk_reset(const char *path) {
    H.done = H.saw_walk = H.partial = 0;
    size_ok = -1;
    size_checked = 0;
    char wo[4200];
    walk_only = snprintf(wo, sizeof wo, "%s.walk-only", path) < (int)sizeof wo &&
                access(wo, F_OK) == 0;
    H.objects = H.refs = H.roots = H.deps = H.bytes = 0;
    H.prev_obj = H.prev_root = H.prev_key = 0;
    H.t_start = H.t_walk = H.t_end = 0;
}

static int snapshot(const char *path, char *reply, size_t cap) {
    if (classes_reset() < 0) {
        snprintf(reply, cap, "error out of memory");
        return -1;
    }
    int e = writer_start(path);
    if (e < 0) {
        snprintf(reply, cap, "error cannot write the snapshot '%s': %s", path, strerror(-e));
        return -1;
    }
    walk_reset(path);
    gc_job job = {E_FAIL};
    int prc = force_gc(&job);
    write_names();
    write_nongc();
    char why[256] = "";
    unsigned status = end_status(prc, job.hr, why, sizeof why);
    return finish(path, status, why, reply, cap);
}

int heap_snapshot(const char *path, char *reply, size_t cap) {
    if (!g_agent.info) {
        snprintf(reply, cap, "error the agent is not started");
        return -1;
    }
    if (!(g_agent.events.mask & 0x80u /* COR_PRF_MONITOR_GC */)) {
        snprintf(reply, cap,
                 "error the agent records without the gc events (COR_PRF_MONITOR_GC), which the "
                 "runtime's heap walk needs: record with gc in --events");
        return -1;
    }
    if (atomic_exchange(&busy, 1)) {
        snprintf(reply, cap, "error a snapshot is already being taken");
        return -1;
    }
    int rc = snapshot(path, reply, cap);
    atomic_store(&busy, 0);
    return rc;
}

void heap_at_shutdown(void) {
    const char *path = g_agent.config.heap_at_exit;
    if (!path[0])
        return;
    char reply[512];
    if (heap_snapshot(path, reply, sizeof reply) < 0)
        agent_say("heap snapshot at exit: %s", reply + (strncmp(reply, "error ", 6) ? 0 : 6));
}
