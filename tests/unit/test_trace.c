/* test_trace.c: the trace format: varints, records, CRC, the event table, and
 * the writer and reader together, including torn, damaged and random files. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "trace_reader.h"
#include "trace_writer.h"

/* ---- helpers ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static char tmp_dir[256];

static void tmp_cleanup(void) {
    DIR *d = opendir(tmp_dir);
    if (!d)
        return;
    struct dirent *de;
    char path[512];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", tmp_dir, de->d_name);
            unlink(path);
        }
    }
    closedir(d);
    rmdir(tmp_dir);
}

/* A path in this run's temporary directory, made (and removed at exit) once. */
static const char *tmp_path(const char *name) {
    static char path[512];
    if (!tmp_dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp_dir, sizeof tmp_dir, "%s/dnprof-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmp_dir)) {
            tmp_dir[0] = 0;
            return NULL;
        }
        atexit(tmp_cleanup);
    }
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static int write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = len ? fwrite(data, 1, len, f) : 0;
    return fclose(f) == 0 && n == len ? 0 : -1;
}

static uint8_t *read_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Builds one chunk's payload the way the agent does: dnp_rec_encode per record,
 * times as deltas from the previous timed record (the first from the base). */
typedef struct chunk {
    uint8_t buf[1 << 16];
    size_t len;
    uint64_t base, last;
    unsigned nevents;
} chunk;

static void chunk_start(chunk *c, uint64_t base) {
    c->len = 0;
    c->base = c->last = base;
    c->nevents = 0;
}

static void chunk_rec(chunk *c, uint8_t tag, const uint64_t *v, unsigned n, const void *tail, size_t tail_len) {
    c->len += dnp_rec_encode(c->buf + c->len, tag, v, n, tail, tail_len);
}

static void chunk_event(chunk *c, dnp_event_kind kind, uint64_t time, const uint64_t *vals) {
    uint64_t v[2 + DNP_MAX_VALUES] = {kind, time - c->last};
    unsigned nv = dnp_events[kind].nvalues;
    for (unsigned i = 0; i < nv; i++)
        v[2 + i] = vals[i];
    chunk_rec(c, DNP_REC_EVENT, v, 2 + nv, NULL, 0);
    c->last = time;
    c->nevents++;
}

static void chunk_string(chunk *c, uint64_t id, const char *s) {
    uint64_t v[2] = {id, strlen(s)};
    chunk_rec(c, DNP_REC_STRING, v, 2, s, strlen(s));
}

static void chunk_note(chunk *c, uint64_t level, uint64_t time, uint64_t text) {
    uint64_t v[3] = {level, time - c->last, text};
    chunk_rec(c, DNP_REC_NOTE, v, 3, NULL, 0);
    c->last = time;
}

static int chunk_flush(chunk *c, dnp_writer *w, uint32_t thread) {
    return dnp_writer_append(w, thread, c->base, c->buf, c->len);
}

/* The events the round-trip trace holds, in the order they were written. */
typedef struct expect {
    uint64_t time; /* absolute */
    uint32_t thread;
    dnp_event_kind kind;
    uint64_t v[DNP_MAX_VALUES];
} expect;

#define ORIGIN 500u

static expect expected[] = {
    /* chunk 1: thread 1 */
    {1000, 1, DNP_EV_Initialize, {11, 0x8B, 0}},
    {1500, 1, DNP_EV_ModuleLoadFinished, {0x7f0010000000ull, 3, 0}},
    {2000, 1, DNP_EV_JITCompilationStarted, {0x7f0020000000ull, 4, 1}},
    {2100, 1, DNP_EV_ThreadAssignedToOSThread, {0xAAAA, 4242}},
    /* chunk 2: thread 2 */
    {1300, 2, DNP_EV_ThreadAssignedToOSThread, {0xBBBB, 4243}},
    {1400, 2, DNP_EV_ThreadNameChanged, {0xBBBB, 5}},
    {1500, 2, DNP_EV_GarbageCollectionStarted, {0x3, 1}},
    {1600, 2, DNP_EV_GarbageCollectionFinished, {0}},
    /* chunk 3: thread 3 */
    {400, 3, DNP_EV_ThreadCreated, {0xCCCC}}, /* before the origin: time 0 */
    {1500, 3, DNP_EV_ExceptionCatcherEnter, {0x7f0030000000ull, 4, 0x7e0000001000ull, 0x7f0040000000ull, 0}},
    {UINT64_C(1) << 40, 3, DNP_EV_ExceptionCatcherLeave, {0}},
    /* chunk 4: thread 1 again */
    {2600, 1, DNP_EV_JITCompilationFinished, {0x7f0020000000ull, 4, 0x80131351u, 1}},
    {2700, 1, DNP_EV_ReJITError, {0x7f0010000000ull, 3, 0x06000001, 0x7f0020000000ull, 4, 0x8007007Au}},
    {2700, 1, DNP_EV_COMClassicVTableCreated, {0x7f0050000000ull, 0, 0xdeadbeef, UINT64_MAX}},
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

static const char *strings[] = {
    NULL, "dotnet app.dll --flag", "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.0",
    "System.Private.CoreLib", "Program.Main", "worker", "a note \xE2\x9C\x93", "",
};
#define NSTRINGS (sizeof strings / sizeof strings[0])

/* Writes the round-trip trace. Fills chunk_end[i] (file offset after chunk i)
 * and chunk_events[i]; returns the number of chunks, or -1. */
static int write_roundtrip(const char *path, size_t *chunk_end, unsigned *chunk_events) {
    static chunk c;
    char err[256];
    dnp_writer *w = dnp_writer_open(path, 0, 4242, err, sizeof err);
    if (!w)
        return -1;
    int nchunks = 0;
#define FLUSH(thread)                                                         \
    do {                                                                      \
        if (chunk_flush(&c, w, thread) < 0)                                   \
            return -1;                                                        \
        chunk_events[nchunks] = c.nevents;                                    \
        chunk_end[nchunks++] = dnp_writer_bytes(w);                           \
    } while (0)

    /* the meta stream: strings (id 7 before 6: order does not matter), threads, process */
    chunk_start(&c, 900);
    for (uint64_t id = NSTRINGS - 1; id >= 1; id--)
        chunk_string(&c, id, strings[id]);
    chunk_string(&c, 1000000, "sparse");
    uint64_t th[3][2] = {{1, 4242}, {2, 4243}, {3, 4244}};
    for (int i = 0; i < 3; i++)
        chunk_rec(&c, DNP_REC_THREAD, th[i], 2, NULL, 0);
    uint64_t proc[7] = {4242, 1, 1700000000000000000ull, ORIGIN, 1, 2, 0};
    chunk_rec(&c, DNP_REC_PROCESS, proc, 7, NULL, 0);
    FLUSH(0);

    size_t e = 0;
    chunk_start(&c, 1000);
    for (; e < 4; e++)
        chunk_event(&c, expected[e].kind, expected[e].time, expected[e].v);
    chunk_note(&c, 1, 2200, 6);
    FLUSH(1);

    chunk_start(&c, 1200);
    for (; e < 8; e++)
        chunk_event(&c, expected[e].kind, expected[e].time, expected[e].v);
    FLUSH(2);

    chunk_start(&c, 400);
    for (; e < 11; e++)
        chunk_event(&c, expected[e].kind, expected[e].time, expected[e].v);
    FLUSH(3);

    chunk_start(&c, 2500);
    for (; e < NEXPECTED; e++)
        chunk_event(&c, expected[e].kind, expected[e].time, expected[e].v);
    FLUSH(1);

    chunk_start(&c, 3000);
    uint64_t lost = 7;
    chunk_rec(&c, DNP_REC_LOST, &lost, 1, NULL, 0);
    lost = 3;
    chunk_rec(&c, DNP_REC_LOST, &lost, 1, NULL, 0);
    uint64_t total = NEXPECTED;
    chunk_rec(&c, DNP_REC_END, &total, 1, NULL, 0);
    FLUSH(0);
#undef FLUSH
    int rc = dnp_writer_error(w);
    dnp_writer_free(w);
    return rc ? -1 : nchunks;
}

/* The expected events in time order (stable), times relative to ORIGIN. */
static void expected_sorted(expect *out) {
    memcpy(out, expected, sizeof expected);
    for (size_t i = 1; i < NEXPECTED; i++) {
        expect x = out[i];
        size_t j = i;
        while (j > 0 && out[j - 1].time > x.time) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    for (size_t i = 0; i < NEXPECTED; i++)
        out[i].time = out[i].time > ORIGIN ? out[i].time - ORIGIN : 0;
}

/* ---- varints, records, CRC, tables ---- */

TEST(trace_varint_roundtrip) {
    uint64_t vals[] = {0, 1, 127, 128, 255, 16383, 16384, 1ull << 32, (1ull << 63) - 1, 1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0] + 2000; i++) {
        uint64_t v = i < sizeof vals / sizeof vals[0] ? vals[i] : rng() >> (rng() & 63);
        uint8_t buf[DNP_VARINT_MAX + 4];
        uint8_t *end = dnp_varint_put(buf, v);
        size_t len = (size_t)(end - buf);
        size_t want = 1;
        for (uint64_t x = v; x >= 0x80; x >>= 7)
            want++;
        ASSERT_EQ(len, want);
        ASSERT_LE(len, DNP_VARINT_MAX);
        const uint8_t *p = buf;
        uint64_t got = ~v;
        ASSERT_EQ(dnp_varint_get(&p, end, &got), 0);
        ASSERT_EQ(got, v);
        ASSERT_EQ(p, end);
        /* every shorter view is cut short */
        for (size_t cut = 0; cut < len; cut++) {
            p = buf;
            ASSERT_EQ(dnp_varint_get(&p, buf + cut, &got), -1);
            ASSERT_EQ(p, buf);
        }
    }
    return 0;
}

TEST(trace_varint_malformed) {
    const uint8_t *p;
    uint64_t v = 0;
    uint8_t cont[12];
    memset(cont, 0x80, sizeof cont);
    p = cont;
    ASSERT_EQ(dnp_varint_get(&p, cont, &v), -1); /* empty */
    ASSERT_EQ(dnp_varint_get(&p, cont + 1, &v), -1); /* continuation, then nothing */
    ASSERT_EQ(dnp_varint_get(&p, cont + sizeof cont, &v), -1); /* longer than 10 bytes */
    ASSERT_EQ(p, cont);
    uint8_t over[11];
    memset(over, 0xFF, 10);
    over[10] = 0x01; /* 11 bytes: too long even though it ends */
    p = over;
    ASSERT_EQ(dnp_varint_get(&p, over + 11, &v), -1);
    uint8_t max[10];
    memset(max, 0xFF, 9);
    max[9] = 0x01;
    p = max;
    ASSERT_EQ(dnp_varint_get(&p, max + 10, &v), 0);
    ASSERT_EQ(v, UINT64_MAX);
    return 0;
}

TEST(trace_rec_encode) {
    uint8_t out[DNP_REC_MAX + 64];
    uint64_t vals[2 + DNP_MAX_VALUES];
    for (unsigned i = 0; i < 2 + DNP_MAX_VALUES; i++)
        vals[i] = UINT64_MAX; /* the worst case fits DNP_REC_MAX */
    size_t n = dnp_rec_encode(out, DNP_REC_EVENT, vals, 2 + DNP_MAX_VALUES, NULL, 0);
    ASSERT_GT(n, 0);
    ASSERT_LE(n, DNP_REC_MAX);
    ASSERT_EQ(dnp_rec_encode(out, DNP_REC_EVENT, vals, 3 + DNP_MAX_VALUES, NULL, 0), 0);

    for (int round = 0; round < 500; round++) {
        unsigned nv = (unsigned)(rng() % (3 + DNP_MAX_VALUES));
        for (unsigned i = 0; i < nv; i++)
            vals[i] = rng() >> (rng() & 63);
        char tail[64];
        size_t tail_len = rng() % sizeof tail;
        for (size_t i = 0; i < tail_len; i++)
            tail[i] = (char)rng();
        uint8_t tag = (uint8_t)rng();
        n = dnp_rec_encode(out, tag, vals, nv, tail, tail_len);
        const uint8_t *p = out, *end = out + n;
        ASSERT_EQ(*p++, tag);
        uint64_t size;
        ASSERT_EQ(dnp_varint_get(&p, end, &size), 0);
        ASSERT_EQ(size, (uint64_t)(end - p));
        for (unsigned i = 0; i < nv; i++) {
            uint64_t v;
            ASSERT_EQ(dnp_varint_get(&p, end, &v), 0);
            ASSERT_EQ(v, vals[i]);
        }
        ASSERT_EQ((uint64_t)(end - p), tail_len);
        ASSERT_EQ(memcmp(p, tail, tail_len), 0);
    }
    /* a big tail: the size takes several bytes */
    static uint8_t big_out[DNP_REC_MAX + 100000];
    static char big[100000];
    memset(big, 'x', sizeof big);
    uint64_t sv[2] = {42, sizeof big};
    n = dnp_rec_encode(big_out, DNP_REC_STRING, sv, 2, big, sizeof big);
    const uint8_t *p = big_out + 1;
    uint64_t size;
    ASSERT_EQ(dnp_varint_get(&p, big_out + n, &size), 0);
    ASSERT_EQ(size, (uint64_t)(big_out + n - p));
    return 0;
}

static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

TEST(trace_crc32) {
    ASSERT_EQ(dnp_crc32("123456789", 9), 0xCBF43926u);
    ASSERT_EQ(dnp_crc32("", 0), 0);
    ASSERT_EQ(dnp_crc32(NULL, 0), 0);
    static uint8_t buf[4096];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng();
    for (int round = 0; round < 300; round++) {
        size_t off = rng() % 64, len = rng() % (sizeof buf - 64);
        ASSERT_EQ(dnp_crc32(buf + off, len), crc_bitwise(buf + off, len));
    }
    return 0;
}

TEST(trace_event_table) {
    /* Events are numbered by position and only ever appended: these stay put. */
    ASSERT_EQ(DNP_EV_ClassLoadFinished, 16);
    ASSERT_EQ(DNP_EV_EventPipeProviderCreated, 93);
    ASSERT_EQ(DNP_EV_CallsConfig, 94);
    ASSERT_EQ(DNP_EV_MethodReturn, 101);
    ASSERT_GE(DNP_EV_COUNT, 102);
    ASSERT_STREQ(dnp_events[0].name, "Initialize");
    ASSERT_STREQ(dnp_events[DNP_EV_EventPipeProviderCreated].name, "EventPipeProviderCreated");
    for (int k = 0; k < DNP_EV_COUNT; k++) {
        const dnp_event_info *e = &dnp_events[k];
        ASSERT(e->name);
        ASSERT(*e->name);
        ASSERT_LE(e->nfields, DNP_MAX_FIELDS);
        unsigned nv = 0;
        for (unsigned f = 0; f < e->nfields; f++) {
            ASSERT_LT(e->field_types[f], DNP_FT_COUNT);
            ASSERT(e->field_names[f]);
            ASSERT(*e->field_names[f]);
            nv += dnp_field_nvalues[e->field_types[f]];
        }
        ASSERT_EQ(e->nvalues, nv);
        ASSERT_LE(e->nvalues, DNP_MAX_VALUES);
        ASSERT_LT(e->family, DNP_FAM_COUNT);
        for (int j = 0; j < k; j++)
            ASSERT_STRNE(dnp_events[j].name, e->name);
    }
    const dnp_event_info *r = &dnp_events[DNP_EV_ReJITError];
    ASSERT_EQ(r->nfields, 4);
    ASSERT_EQ(r->nvalues, 6);
    ASSERT_EQ(r->field_types[0], DNP_FT_MODULE);
    ASSERT_EQ(r->field_types[3], DNP_FT_HR);
    ASSERT_STREQ(r->field_names[2], "functionId");
    ASSERT_EQ(dnp_events[DNP_EV_Shutdown].nfields, 0);
    ASSERT_EQ(dnp_events[DNP_EV_Shutdown].nvalues, 0);
    ASSERT_EQ(dnp_events[DNP_EV_GarbageCollectionStarted].nest, DNP_NEST_START);
    ASSERT_EQ(dnp_events[DNP_EV_ManagedToUnmanagedTransition].nest, DNP_NEST_TRANSITION);
    ASSERT_EQ(dnp_events[DNP_EV_ObjectAllocated].family, DNP_FAM_ALLOC);
    ASSERT_STREQ(dnp_field_type_names[DNP_FT_GC_REASON], "GC_REASON");
    ASSERT_EQ(dnp_field_nvalues[DNP_FT_FUNCTION], 2);
    ASSERT_STREQ(dnp_family_words[DNP_FAM_EXCEPTIONS], "exceptions");
    /* fields by name: where the table's types put them, an entity's name after its ID */
    ASSERT_EQ(DNP_V(ReJITError, moduleId), 0);
    ASSERT_EQ(DNP_VNAME(ReJITError, moduleId), 1);
    ASSERT_EQ(DNP_V(ReJITError, methodToken), 2);
    ASSERT_EQ(DNP_V(ReJITError, functionId), 3);
    ASSERT_EQ(DNP_VNAME(ReJITError, functionId), 4);
    ASSERT_EQ(DNP_V(ReJITError, hrStatus), 5);
    ASSERT_EQ(DNP_V(CallNode, calls), 5);
    ASSERT_EQ(DNP_V(CallNode, tailcalls), 8);
    ASSERT_EQ(DNP_V(ExceptionCatcherEnter, objectId), 2);
    ASSERT_EQ(DNP_V(SampleConfig, periodNs), 2);
    return 0;
}

TEST(trace_enum_names) {
    ASSERT_STREQ(dnp_gc_reason_name(1), "COR_PRF_GC_INDUCED");
    ASSERT_STREQ(dnp_gc_reason_name(0), "COR_PRF_GC_OTHER");
    ASSERT_EQ(dnp_gc_reason_name(2), NULL);
    ASSERT_STREQ(dnp_suspend_reason_name(1), "COR_PRF_SUSPEND_FOR_GC");
    ASSERT_STREQ(dnp_suspend_reason_name(9), "COR_PRF_SUSPEND_FOR_PROFILER");
    ASSERT_EQ(dnp_suspend_reason_name(5), NULL);
    ASSERT_EQ(dnp_suspend_reason_name(1ull << 32 | 1), NULL);
    ASSERT_STREQ(dnp_jit_cache_name(1), "COR_PRF_CACHED_FUNCTION_NOT_FOUND");
    ASSERT_STREQ(dnp_transition_reason_name(1), "COR_PRF_TRANSITION_RETURN");
    ASSERT_EQ(dnp_transition_reason_name(2), NULL);
    ASSERT_STREQ(dnp_hresult_name(0), "S_OK");
    ASSERT_STREQ(dnp_hresult_name(1), "S_FALSE");
    ASSERT_STREQ(dnp_hresult_name(0x80004005u), "E_FAIL");
    ASSERT_STREQ(dnp_hresult_name(0x80004001u), "E_NOTIMPL");
    ASSERT_STREQ(dnp_hresult_name(0x80004002u), "E_NOINTERFACE");
    ASSERT_STREQ(dnp_hresult_name(0x80070057u), "E_INVALIDARG");
    ASSERT_STREQ(dnp_hresult_name(0x8007000Eu), "E_OUTOFMEMORY");
    ASSERT_STREQ(dnp_hresult_name(0x8007007Au), "HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER)");
    ASSERT_STREQ(dnp_hresult_name(0x80131351u), "CORPROF_E_DATAINCOMPLETE");
    ASSERT_STREQ(dnp_hresult_name(0x80131363u), "CORPROF_E_UNSUPPORTED_CALL_SEQUENCE");
    ASSERT_STREQ(dnp_hresult_name(0x80131374u), "CORPROF_E_INCONSISTENT_WITH_FLAGS");
    ASSERT_STREQ(dnp_hresult_name(0x8013136Fu), "CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER");
    ASSERT_STREQ(dnp_hresult_name(0x80131355u), "CORPROF_E_NOT_MANAGED_THREAD");
    ASSERT_STREQ(dnp_hresult_name(0x8013137Eu), "CORPROF_E_FUNCTION_IS_COLLECTIBLE");
    ASSERT_STREQ(dnp_hresult_name(0x80131522u), "COR_E_TYPELOAD");
    ASSERT_EQ(dnp_hresult_name(0x80131352u), NULL);
    ASSERT_EQ(dnp_hresult_name(0xFFFFFFFFu), NULL);
    return 0;
}

/* ---- writer and reader ---- */

TEST(trace_roundtrip) {
    const char *path = tmp_path("roundtrip.dnptrace");
    ASSERT(path);
    size_t ends[16];
    unsigned counts[16];
    int nchunks = write_roundtrip(path, ends, counts);
    ASSERT_EQ(nchunks, 6);

    dnp_trace *t;
    char err[256] = "";
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_STREQ(t->status_text, "");
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    ASSERT_EQ(t->major, DNP_TRACE_MAJOR);
    ASSERT_EQ(t->minor, DNP_TRACE_MINOR);
    ASSERT_EQ(t->pid, 4242);
    ASSERT_EQ(t->ppid, 1);
    ASSERT_EQ(t->start_realtime_ns, 1700000000000000000ull);
    ASSERT_STREQ(t->cmdline, strings[1]);
    ASSERT_STREQ(t->runtime, strings[2]);
    ASSERT_EQ(t->attached, 0);
    ASSERT_EQ(t->lost, 10);
    ASSERT_EQ(t->end_events, NEXPECTED);
    ASSERT_EQ(t->file_bytes, ends[nchunks - 1]);
    ASSERT_EQ(t->bytes_read, ends[nchunks - 1]);

    for (size_t id = 1; id < NSTRINGS; id++)
        ASSERT_STREQ(dnp_trace_string(t, id), strings[id]);
    ASSERT_STREQ(dnp_trace_string(t, 1000000), "sparse");
    ASSERT_EQ(dnp_trace_string(t, 0), NULL);
    ASSERT_EQ(dnp_trace_string(t, 8), NULL);

    static expect want[NEXPECTED];
    expected_sorted(want);
    ASSERT_EQ(t->nevents, NEXPECTED);
    for (size_t i = 0; i < NEXPECTED; i++) {
        const dnp_trace_event *e = &t->events[i];
        ASSERT_EQ(e->time_ns, want[i].time);
        ASSERT_EQ(e->thread, want[i].thread);
        ASSERT_EQ(e->kind, want[i].kind);
        ASSERT_EQ(e->nvalues, dnp_events[e->kind].nvalues);
        for (unsigned k = 0; k < DNP_MAX_VALUES; k++)
            ASSERT_EQ(e->v[k], k < e->nvalues ? want[i].v[k] : 0);
        if (i)
            ASSERT_GE(e->time_ns, t->events[i - 1].time_ns);
    }
    /* ties at 1500 keep the order of the file: thread 1's chunk, then 2, then 3 */
    ASSERT_EQ(t->events[4].kind, DNP_EV_ModuleLoadFinished);
    ASSERT_EQ(t->events[5].kind, DNP_EV_GarbageCollectionStarted);
    ASSERT_EQ(t->events[6].kind, DNP_EV_ExceptionCatcherEnter);

    ASSERT_EQ(t->nthreads, 3);
    for (uint32_t o = 1; o <= 3; o++) {
        const dnp_trace_thread *th = dnp_trace_thread_get(t, o);
        ASSERT(th);
        ASSERT_EQ(th->ordinal, o);
        ASSERT_EQ(th->os_tid, 4241 + o);
    }
    ASSERT_EQ(dnp_trace_thread_get(t, 0), NULL);
    ASSERT_EQ(dnp_trace_thread_get(t, 4), NULL);
    ASSERT_EQ(t->threads[0].managed_id, 0xAAAA);
    ASSERT_EQ(t->threads[0].name, NULL);
    ASSERT_EQ(t->threads[1].managed_id, 0xBBBB);
    ASSERT_STREQ(t->threads[1].name, "worker");
    ASSERT_EQ(t->threads[2].managed_id, 0);

    ASSERT_EQ(t->nnotes, 1);
    ASSERT_EQ(t->notes[0].time_ns, 2200 - ORIGIN);
    ASSERT_EQ(t->notes[0].thread, 1);
    ASSERT_EQ(t->notes[0].level, 1);
    ASSERT_STREQ(t->notes[0].text, strings[6]);
    dnp_trace_free(t);
    dnp_trace_free(NULL);
    return 0;
}

TEST(trace_truncated_at_every_offset) {
    const char *path = tmp_path("full.dnptrace");
    size_t ends[16];
    unsigned counts[16];
    int nchunks = write_roundtrip(path, ends, counts);
    ASSERT_GT(nchunks, 0);
    size_t size;
    uint8_t *full = read_bytes(path, &size);
    ASSERT(full);
    ASSERT_EQ(size, ends[nchunks - 1]);
    const char *cut = tmp_path("cut.dnptrace");
    for (size_t len = DNP_TRACE_HEADER_SIZE; len <= size; len++) {
        ASSERT_EQ(write_bytes(cut, full, len), 0);
        size_t whole = 0, boundary = len == DNP_TRACE_HEADER_SIZE, last_end = DNP_TRACE_HEADER_SIZE;
        for (int c = 0; c < nchunks && ends[c] <= len; c++) {
            whole += counts[c];
            boundary = ends[c] == len;
            last_end = ends[c];
        }
        dnp_trace *t;
        char err[256];
        if (dnp_trace_load(cut, &t, err, sizeof err) != 0) {
            fprintf(stderr, "len %zu: %s\n", len, err);
            ASSERT(0);
        }
        ASSERT_EQ(t->nevents, whole);
        ASSERT_EQ(t->bytes_read, last_end);
        ASSERT_EQ(t->file_bytes, len);
        if (len == size) {
            ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
        } else if (boundary) {
            ASSERT_EQ(t->status, DNP_TRACE_OPEN);
            ASSERT_CONTAINS(t->status_text, "did not shut down cleanly");
        } else {
            ASSERT_EQ(t->status, DNP_TRACE_TRUNCATED);
            char want[64];
            snprintf(want, sizeof want, "ends inside a chunk after %zu events", whole);
            ASSERT_CONTAINS(t->status_text, want);
        }
        for (size_t i = 1; i < t->nevents; i++)
            ASSERT_GE(t->events[i].time_ns, t->events[i - 1].time_ns);
        dnp_trace_free(t);
    }
    free(full);
    return 0;
}

TEST(trace_corrupt_chunk) {
    const char *path = tmp_path("flip.dnptrace");
    size_t ends[16];
    unsigned counts[16];
    int nchunks = write_roundtrip(path, ends, counts);
    ASSERT_GT(nchunks, 3);
    size_t size;
    uint8_t *buf = read_bytes(path, &size);
    ASSERT(buf);
    /* one bit of chunk 2's payload (thread 2) */
    size_t chunk2 = ends[1], flip = chunk2 + DNP_CHUNK_HEADER_SIZE + 3;
    buf[flip] ^= 0x10;
    ASSERT_EQ(write_bytes(path, buf, size), 0);
    dnp_trace *t;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_CORRUPT);
    ASSERT_EQ(t->nevents, counts[0] + counts[1]);
    ASSERT_EQ(t->bytes_read, chunk2);
    char want[64];
    snprintf(want, sizeof want, "byte offset %zu", chunk2);
    ASSERT_CONTAINS(t->status_text, want);
    ASSERT_CONTAINS(t->status_text, "checksum");
    dnp_trace_free(t);

    /* a damaged chunk magic */
    buf[flip] ^= 0x10;
    buf[chunk2] = 'X';
    ASSERT_EQ(write_bytes(path, buf, size), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_CORRUPT);
    ASSERT_CONTAINS(t->status_text, want);
    ASSERT_EQ(t->nevents, counts[0] + counts[1]);
    dnp_trace_free(t);
    free(buf);
    return 0;
}

/* A file of one header and the given chunks (payloads with correct CRCs). */
static int write_chunks(const char *path, const uint8_t *const *payloads, const size_t *lens, const uint32_t *threads,
                        int n, uint16_t major) {
    static uint8_t buf[1 << 16];
    size_t len = DNP_TRACE_HEADER_SIZE;
    memset(buf, 0, len);
    memcpy(buf, DNP_TRACE_MAGIC, 8);
    buf[8] = (uint8_t)major;
    buf[9] = (uint8_t)(major >> 8);
    buf[10] = 7;
    dnp_put_u32le(buf + 12, DNP_TRACE_HEADER_SIZE);
    dnp_put_u64le(buf + 16, 99);
    for (int i = 0; i < n; i++) {
        dnp_put_u32le(buf + len, DNP_CHUNK_MAGIC);
        dnp_put_u32le(buf + len + 4, (uint32_t)lens[i]);
        dnp_put_u32le(buf + len + 8, dnp_crc32(payloads[i], lens[i]));
        dnp_put_u32le(buf + len + 12, threads[i]);
        dnp_put_u64le(buf + len + 16, 1000);
        memcpy(buf + len + DNP_CHUNK_HEADER_SIZE, payloads[i], lens[i]);
        len += DNP_CHUNK_HEADER_SIZE + lens[i];
    }
    return write_bytes(path, buf, len);
}

TEST(trace_bad_files) {
    dnp_trace *t = (dnp_trace *)1;
    char err[512];
    const char *path = tmp_path("bad.dnptrace");

    ASSERT_EQ(write_bytes(path, "", 0), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), -1);
    ASSERT_EQ(t, NULL);
    char want[600];
    snprintf(want, sizeof want, "'%s' is empty: no trace was written (did the agent load? try dnprof doctor)", path);
    ASSERT_STREQ(err, want);

    ASSERT_EQ(write_bytes(path, "hello, world, this is not a trace at all", 40), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), -1);
    snprintf(want, sizeof want, "'%s' is not a dnprof trace", path);
    ASSERT_STREQ(err, want);

    ASSERT_EQ(write_bytes(path, "DNP", 3), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), -1);
    ASSERT_STREQ(err, want);

    ASSERT_EQ(write_bytes(path, "DNPTRACE\x01\x00", 10), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "ends inside its header");

    ASSERT_EQ(write_chunks(path, NULL, NULL, NULL, 0, 2), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "'%s' is trace format 2.7, newer than this dnprof reads (1.x); update dnprof", path);
    ASSERT_STREQ(err, want);

    ASSERT_EQ(write_chunks(path, NULL, NULL, NULL, 0, 0), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "trace format 0.7");

    /* a header alone: a trace with nothing yet */
    ASSERT_EQ(write_chunks(path, NULL, NULL, NULL, 0, 1), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_OPEN);
    ASSERT_EQ(t->nevents, 0);
    ASSERT_EQ(t->minor, 7);
    ASSERT_EQ(t->pid, 99);
    dnp_trace_free(t);

    const char *missing = tmp_path("no-such-file.dnptrace");
    ASSERT_EQ(dnp_trace_load(missing, &t, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "cannot open");
    ASSERT_CONTAINS(err, missing);
    ASSERT_CONTAINS(err, "No such file");

    ASSERT_EQ(dnp_trace_load("/", &t, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "'/'");
    return 0;
}

TEST(trace_unknown_records) {
    static chunk c;
    chunk_start(&c, 1000);
    uint8_t future[5] = {1, 2, 3, 4, 5};
    uint64_t v[4] = {1, 2, 3, 4};
    chunk_rec(&c, 99, v, 4, future, sizeof future); /* a tag of a later minor version */
    chunk_event(&c, DNP_EV_Shutdown, 1010, NULL);
    uint64_t unknown_kind[3] = {DNP_EV_COUNT + 5, 10, 77};
    chunk_rec(&c, DNP_REC_EVENT, unknown_kind, 3, NULL, 0); /* time 1020 */
    uint64_t too_few[3] = {DNP_EV_ReJITError, 10, 1}; /* 6 values wanted; time 1030 */
    chunk_rec(&c, DNP_REC_EVENT, too_few, 3, NULL, 0);
    uint64_t extra[6] = {DNP_EV_RootReferences, 10, 5, 6, 7, 8}; /* extra values are ignored */
    chunk_rec(&c, DNP_REC_EVENT, extra, 6, NULL, 0);
    uint64_t bad_string[2] = {0, 3};
    chunk_rec(&c, DNP_REC_STRING, bad_string, 2, "abc", 3); /* id 0 */
    uint64_t long_string[2] = {9, 30};
    chunk_rec(&c, DNP_REC_STRING, long_string, 2, "abc", 3); /* longer than its record */
    uint64_t huge_id[2] = {1ull << 40, 1};
    chunk_rec(&c, DNP_REC_STRING, huge_id, 2, "x", 1);
    uint64_t bad_thread[2] = {0, 5};
    chunk_rec(&c, DNP_REC_THREAD, bad_thread, 2, NULL, 0);
    chunk_rec(&c, DNP_REC_EVENT, NULL, 0, NULL, 0); /* an empty event record */
    const uint8_t *payloads[1] = {c.buf};
    size_t lens[1] = {c.len};
    uint32_t threads[1] = {5};
    const char *path = tmp_path("unknown.dnptrace");
    ASSERT_EQ(write_chunks(path, payloads, lens, threads, 1, 1), 0);

    dnp_trace *t;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_OPEN);
    ASSERT_EQ(t->nevents, 2);
    ASSERT_EQ(t->events[0].kind, DNP_EV_Shutdown);
    ASSERT_EQ(t->events[0].time_ns, 10); /* origin: the earliest base */
    ASSERT_EQ(t->events[1].kind, DNP_EV_RootReferences);
    ASSERT_EQ(t->events[1].time_ns, 40); /* the skipped events' deltas still count */
    ASSERT_EQ(t->events[1].v[0], 5);
    ASSERT_EQ(t->events[1].v[1], 0);
    ASSERT_EQ(t->events[1].thread, 5);
    ASSERT_EQ(t->nthreads, 5);
    ASSERT_EQ(dnp_trace_string(t, 9), NULL);
    ASSERT_EQ(t->nnotes, 3);
    ASSERT_CONTAINS(t->notes[0].text, "1 event of kinds this dnprof does not know");
    ASSERT_CONTAINS(t->notes[1].text, "1 event had fewer values");
    ASSERT_CONTAINS(t->notes[2].text, "5 malformed records");
    ASSERT_EQ(t->notes[0].level, 1);
    dnp_trace_free(t);

    /* a record whose size runs past its chunk: damaged, even with a good CRC */
    chunk_start(&c, 1000);
    chunk_event(&c, DNP_EV_Shutdown, 1010, NULL);
    size_t at = c.len;
    chunk_event(&c, DNP_EV_Shutdown, 1020, NULL);
    c.buf[at + 1] = 0x7F;
    lens[0] = c.len;
    ASSERT_EQ(write_chunks(path, payloads, lens, threads, 1, 1), 0);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_CORRUPT);
    char want[64];
    snprintf(want, sizeof want, "byte offset %zu", DNP_TRACE_HEADER_SIZE + DNP_CHUNK_HEADER_SIZE + at);
    ASSERT_CONTAINS(t->status_text, want);
    dnp_trace_free(t);
    return 0;
}

/* Deltas that would wrap around saturate: a chunk's times never go back. */
TEST(trace_time_saturates) {
    static chunk c1, c2;
    chunk_start(&c1, 1000);
    uint64_t e1[2] = {DNP_EV_Shutdown, UINT64_MAX - 2000};
    chunk_rec(&c1, DNP_REC_EVENT, e1, 2, NULL, 0);
    uint64_t e2[2] = {DNP_EV_Shutdown, 5000}; /* would wrap */
    chunk_rec(&c1, DNP_REC_EVENT, e2, 2, NULL, 0);
    chunk_start(&c2, 500);
    uint64_t e3[2] = {DNP_EV_ProfilerAttachComplete, 5};
    chunk_rec(&c2, DNP_REC_EVENT, e3, 2, NULL, 0);
    const uint8_t *payloads[2] = {c1.buf, c2.buf};
    size_t lens[2] = {c1.len, c2.len};
    uint32_t threads[2] = {1, 2};
    const char *path = tmp_path("wrap.dnptrace");
    ASSERT_EQ(write_chunks(path, payloads, lens, threads, 2, 1), 0);
    dnp_trace *t;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->nevents, 3);
    /* write_chunks gives every chunk the base 1000: the origin */
    ASSERT_EQ(t->events[0].kind, DNP_EV_ProfilerAttachComplete);
    ASSERT_EQ(t->events[0].time_ns, 5);
    ASSERT_EQ(t->events[1].time_ns, UINT64_MAX - 2000);
    ASSERT_EQ(t->events[2].time_ns, UINT64_MAX - 1000);
    dnp_trace_free(t);
    return 0;
}

TEST(trace_thread_names) {
    static chunk c;
    char err[256];
    const char *path = tmp_path("names.dnptrace");
    dnp_writer *w = dnp_writer_open(path, 0, 1, err, sizeof err);
    ASSERT(w);
    chunk_start(&c, 100);
    chunk_string(&c, 1, "early");
    chunk_string(&c, 2, "late");
    chunk_string(&c, 3, "renamed");
    uint64_t th[4][2] = {{1, 100}, {2, 200}, {3, 300}, {4, 300}}; /* tid 300 reused by thread 4 */
    for (int i = 0; i < 4; i++)
        chunk_rec(&c, DNP_REC_THREAD, th[i], 2, NULL, 0);
    ASSERT_EQ(chunk_flush(&c, w, 0), 0);

    chunk_start(&c, 100);
    uint64_t name_first[2] = {0x20, 1}; /* named before it runs (new Thread { Name = ... }) */
    chunk_event(&c, DNP_EV_ThreadNameChanged, 110, name_first);
    uint64_t assign1[2] = {0x10, 100};
    chunk_event(&c, DNP_EV_ThreadAssignedToOSThread, 120, assign1);
    uint64_t assign2[2] = {0x20, 200}; /* raised on thread 1, about thread 2 */
    chunk_event(&c, DNP_EV_ThreadAssignedToOSThread, 130, assign2);
    uint64_t name1[2] = {0x10, 2};
    chunk_event(&c, DNP_EV_ThreadNameChanged, 140, name1);
    uint64_t rename1[2] = {0x10, 3};
    chunk_event(&c, DNP_EV_ThreadNameChanged, 150, rename1);
    uint64_t assign4[2] = {0x40, 300}; /* the latest thread with tid 300 */
    chunk_event(&c, DNP_EV_ThreadAssignedToOSThread, 160, assign4);
    uint64_t nobody[2] = {0x50, 999};
    chunk_event(&c, DNP_EV_ThreadAssignedToOSThread, 170, nobody);
    ASSERT_EQ(chunk_flush(&c, w, 1), 0);
    dnp_writer_free(w);

    dnp_trace *t;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->nthreads, 4);
    ASSERT_EQ(t->threads[0].managed_id, 0x10);
    ASSERT_STREQ(t->threads[0].name, "renamed");
    ASSERT_EQ(t->threads[1].managed_id, 0x20);
    ASSERT_STREQ(t->threads[1].name, "early");
    ASSERT_EQ(t->threads[2].managed_id, 0);
    ASSERT_EQ(t->threads[3].managed_id, 0x40);
    ASSERT_EQ(t->threads[3].name, NULL);
    dnp_trace_free(t);
    return 0;
}

TEST(trace_writer_errors) {
    char err[512];
    dnp_writer *w = dnp_writer_open("/nonexistent-dir/x.dnptrace", 0, 1, err, sizeof err);
    ASSERT_EQ(w, NULL);
    ASSERT_CONTAINS(err, "'/nonexistent-dir/x.dnptrace'");
    ASSERT_CONTAINS(err, "No such file");

    const char *path = tmp_path("excl.dnptrace");
    w = dnp_writer_open(path, 1, 1, err, sizeof err);
    ASSERT(w);
    ASSERT_EQ(dnp_writer_error(w), 0);
    ASSERT_EQ(dnp_writer_bytes(w), DNP_TRACE_HEADER_SIZE);
    uint8_t p[4] = {DNP_REC_END, 1, 0};
    ASSERT_EQ(dnp_writer_append(w, 0, 5, p, 3), 0);
    ASSERT_EQ(dnp_writer_append(w, 0, 5, p, DNP_CHUNK_MAX_PAYLOAD + 1), -EMSGSIZE);
    ASSERT_EQ(dnp_writer_error(w), 0); /* the caller's mistake does not stick */
    ASSERT_EQ(dnp_writer_append(w, 0, 5, NULL, 0), 0);
    ASSERT_EQ(dnp_writer_bytes(w), DNP_TRACE_HEADER_SIZE + 2 * DNP_CHUNK_HEADER_SIZE + 3);
    dnp_writer_free(w);
    dnp_writer_free(NULL);
    w = dnp_writer_open(path, 1, 1, err, sizeof err);
    ASSERT_EQ(w, NULL);
    ASSERT_CONTAINS(err, "already exists");
    ASSERT_CONTAINS(err, path);
    w = dnp_writer_open(path, 0, 1, err, sizeof err); /* replaces it */
    ASSERT(w);
    dnp_writer_free(w);
    dnp_trace *t;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_OPEN);
    ASSERT_EQ(t->file_bytes, DNP_TRACE_HEADER_SIZE);
    dnp_trace_free(t);

    /* a full disk, made with a file size limit: the first failure sticks */
    struct rlimit old, lim;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    w = dnp_writer_open(path, 0, 1, err, sizeof err);
    ASSERT(w);
    lim = old;
    lim.rlim_cur = 1000;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static uint8_t big[300];
    int rc = 0, n = 0;
    while (rc == 0 && n < 100) {
        rc = dnp_writer_append(w, 1, 0, big, sizeof big);
        n++;
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, oldsig);
    ASSERT_EQ(rc, -EFBIG);
    ASSERT_EQ(dnp_writer_error(w), EFBIG);
    ASSERT_EQ(dnp_writer_append(w, 1, 0, big, 1), -EFBIG);
    dnp_writer_free(w);
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    /* the torn chunk is cut off: the trace ends with its last whole chunk */
    ASSERT_EQ(t->status, DNP_TRACE_OPEN);
    ASSERT_EQ(t->file_bytes % (DNP_CHUNK_HEADER_SIZE + sizeof big), DNP_TRACE_HEADER_SIZE);
    dnp_trace_free(t);
    return 0;
}

/* A trace never goes through a symbolic link: the link is replaced; and it is
 * created 0600 whatever the umask allows. */
TEST(trace_writer_symlink_and_mode) {
    char dir[] = "/tmp/dnprof-unit-XXXXXX";
    ASSERT_NE(mkdtemp(dir), NULL);
    char victim[PATH_MAX], link[PATH_MAX], err[512];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/link.trace", dir);
    FILE *f = fopen(victim, "w");
    ASSERT_NE(f, NULL);
    fputs("precious", f);
    fclose(f);
    ASSERT_EQ(symlink(victim, link), 0);
    dnp_writer *w = dnp_writer_open(link, 1, 1, err, sizeof err); /* exclusive: the link is there */
    ASSERT_EQ(w, NULL);
    mode_t old = umask(0);
    w = dnp_writer_open(link, 0, 1, err, sizeof err);
    umask(old);
    ASSERT_NE(w, NULL);
    dnp_writer_free(w);
    struct stat st;
    ASSERT_EQ(lstat(link, &st), 0);
    ASSERT(S_ISREG(st.st_mode));
    ASSERT_EQ(st.st_mode & 07777, (mode_t)0600);
    ASSERT_EQ(stat(victim, &st), 0);
    ASSERT_EQ(st.st_size, (off_t)8);
    old = umask(077);
    w = dnp_writer_open(link, 0, 1, err, sizeof err); /* a narrower umask is respected */
    umask(old);
    ASSERT_NE(w, NULL);
    dnp_writer_free(w);
    ASSERT_EQ(lstat(link, &st), 0);
    ASSERT_EQ(st.st_mode & 07777, (mode_t)0600);
    old = umask(0277);
    w = dnp_writer_open(link, 0, 1, err, sizeof err);
    umask(old);
    ASSERT_NE(w, NULL);
    dnp_writer_free(w);
    ASSERT_EQ(lstat(link, &st), 0);
    ASSERT_EQ(st.st_mode & 07777, (mode_t)0400);
    /* nothing is left beside it: the directory empties with these two */
    unlink(link);
    unlink(victim);
    ASSERT_EQ(rmdir(dir), 0);
    return 0;
}

/* Many threads append at once; every chunk arrives whole. */
#define MT_THREADS 8
#define MT_CHUNKS 200
#define MT_EVENTS 50

static dnp_writer *mt_writer;

static void *mt_main(void *arg) {
    uint32_t ord = (uint32_t)(uintptr_t)arg;
    chunk *c = malloc(sizeof *c);
    if (!c)
        return (void *)1;
    uint64_t time = 1000;
    for (int k = 0; k < MT_CHUNKS; k++) {
        chunk_start(c, time);
        for (int i = 0; i < MT_EVENTS; i++) {
            uint64_t v[2] = {ord, (uint64_t)(k * MT_EVENTS + i)};
            time += 1 + (uint64_t)(i % 3);
            chunk_event(c, DNP_EV_ObjectsAllocatedByClass, time, v);
        }
        if (chunk_flush(c, mt_writer, ord) < 0) {
            free(c);
            return (void *)1;
        }
    }
    free(c);
    return NULL;
}

TEST(trace_writer_threads) {
    char err[256];
    const char *path = tmp_path("threads.dnptrace");
    mt_writer = dnp_writer_open(path, 0, 1, err, sizeof err);
    ASSERT(mt_writer);
    pthread_t th[MT_THREADS];
    for (uintptr_t i = 0; i < MT_THREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, mt_main, (void *)(i + 1)), 0);
    int failed = 0;
    for (int i = 0; i < MT_THREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        failed |= r != NULL;
    }
    ASSERT(!failed);
    dnp_writer_free(mt_writer);

    dnp_trace *t;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_OPEN);
    ASSERT_EQ(t->nevents, MT_THREADS * MT_CHUNKS * MT_EVENTS);
    uint64_t next[MT_THREADS + 1] = {0};
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        ASSERT_GE(e->thread, 1);
        ASSERT_LE(e->thread, MT_THREADS);
        ASSERT_EQ(e->v[0], e->thread);
        ASSERT_EQ(e->v[1], next[e->thread]++); /* each thread's events in order */
        if (i)
            ASSERT_GE(e->time_ns, t->events[i - 1].time_ns);
    }
    dnp_trace_free(t);
    return 0;
}

/* Random and damaged files never crash the reader, and what it returns holds. */
static int check_loaded(const dnp_trace *t) {
    ASSERT_LE(t->status, DNP_TRACE_CORRUPT);
    ASSERT_LE(t->bytes_read, t->file_bytes);
    ASSERT_EQ((t->status == DNP_TRACE_COMPLETE), (t->status_text[0] == 0));
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        ASSERT_LT(e->kind, DNP_EV_COUNT);
        ASSERT_EQ(e->nvalues, dnp_events[e->kind].nvalues);
        ASSERT(i == 0 || e->time_ns >= t->events[i - 1].time_ns);
        if (e->thread)
            ASSERT_NE(dnp_trace_thread_get(t, e->thread), NULL);
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        ASSERT_EQ(t->threads[i].ordinal, i + 1);
        if (t->threads[i].name)
            ASSERT_LT(strlen(t->threads[i].name), t->file_bytes);
    }
    for (size_t i = 0; i < t->nnotes; i++)
        ASSERT(t->notes[i].text && t->notes[i].level <= 2);
    if (t->cmdline)
        ASSERT_LT(strlen(t->cmdline), t->file_bytes);
    return 0;
}

TEST(trace_fuzz) {
    size_t ends[16];
    unsigned counts[16];
    const char *valid_path = tmp_path("fuzz-valid.dnptrace");
    int nchunks = write_roundtrip(valid_path, ends, counts);
    ASSERT_GT(nchunks, 0);
    size_t valid_len;
    uint8_t *valid = read_bytes(valid_path, &valid_len);
    ASSERT(valid);
    const char *path = tmp_path("fuzz.dnptrace");
    static uint8_t buf[4096];
    for (int round = 0; round < 4000; round++) {
        size_t len;
        int mode = round % 4;
        if (mode == 0 || mode == 1) {
            /* random bytes, half of them after a valid header */
            len = rng() % sizeof buf;
            for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)rng();
            if (mode == 1 && len >= DNP_TRACE_HEADER_SIZE)
                memcpy(buf, valid, DNP_TRACE_HEADER_SIZE);
        } else {
            /* the valid trace with a few bytes changed; mode 3 mends the CRCs so that
             * the damage reaches the record parser */
            len = valid_len;
            memcpy(buf, valid, len);
            int flips = 1 + (int)(rng() % 8);
            for (int f = 0; f < flips; f++) {
                size_t at = DNP_TRACE_HEADER_SIZE + rng() % (len - DNP_TRACE_HEADER_SIZE);
                buf[at] = rng() % 3 ? (uint8_t)rng() : (uint8_t)(buf[at] ^ (1u << (rng() % 8)));
            }
            if (rng() % 4 == 0)
                len -= rng() % (len - DNP_TRACE_HEADER_SIZE);
            if (mode == 3) {
                size_t off = DNP_TRACE_HEADER_SIZE;
                for (int c = 0; c < nchunks && ends[c] <= len; c++) {
                    memcpy(buf + off, valid + off, 16); /* keep magic, size; set the CRC */
                    size_t plen = dnp_get_u32le(buf + off + 4);
                    dnp_put_u32le(buf + off + 8, dnp_crc32(buf + off + DNP_CHUNK_HEADER_SIZE, plen));
                    off = ends[c];
                }
            }
        }
        ASSERT_EQ(write_bytes(path, buf, len), 0);
        dnp_trace *t = NULL;
        char err[256];
        if (dnp_trace_load(path, &t, err, sizeof err) == 0) {
            if (check_loaded(t) != 0) {
                fprintf(stderr, "round %d mode %d\n", round, mode);
                dnp_trace_free(t);
                free(valid);
                return 1;
            }
            dnp_trace_free(t);
        } else {
            ASSERT_EQ(t, NULL);
            ASSERT(err[0]);
        }
    }
    free(valid);
    return 0;
}

/* Many events, interleaved across threads, come back sorted and whole. */
TEST(trace_many_events) {
    char err[256];
    const char *path = tmp_path("many.dnptrace");
    dnp_writer *w = dnp_writer_open(path, 0, 1, err, sizeof err);
    ASSERT(w);
    static chunk c;
    enum { THREADS = 4, CHUNKS = 100, PER = 500 };
    for (int k = 0; k < CHUNKS; k++) {
        for (uint32_t th = 1; th <= THREADS; th++) {
            uint64_t time = (uint64_t)k * 100000 + th; /* chunks of different threads overlap */
            chunk_start(&c, time);
            for (int i = 0; i < PER; i++) {
                uint64_t v[3] = {(uint64_t)k * PER + (uint64_t)i, 0x1000 + th, 7};
                time += 150;
                chunk_event(&c, DNP_EV_ObjectAllocated, time, v);
            }
            ASSERT_EQ(chunk_flush(&c, w, th), 0);
        }
    }
    dnp_writer_free(w);
    dnp_trace *t;
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->nevents, THREADS * CHUNKS * PER);
    uint64_t next[THREADS + 1] = {0};
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        ASSERT(i == 0 || e->time_ns >= t->events[i - 1].time_ns);
        ASSERT_EQ(e->v[0], next[e->thread]++);
        ASSERT_EQ(e->v[1], 0x1000 + e->thread);
    }
    dnp_trace_free(t);
    return 0;
}
