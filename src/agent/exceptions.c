/* exceptions.c: per-thread exception state, and the details of each exception
 * (exceptions.h).
 *
 * The message and HResult are fields of System.Exception (_message, _HResult):
 * their offsets are found once, from the first exception thrown, by walking its
 * class up to System.Exception (GetClassIDInfo2), listing that class's fields
 * (GetClassLayout) and naming them from the metadata (GetFieldProps); a string
 * is read through GetStringLayout2. The object is valid for the length of the
 * callback: the runtime does not collect while it calls us with an ObjectID.
 *
 * The stack is a snapshot of the current thread (DoStackSnapshot, which needs
 * COR_PRF_ENABLE_STACK_SNAPSHOT), written as one interned string of function
 * names, one a line, the throwing frame first. The same stack is the same
 * string: a per-thread cache keyed by the frames' name numbers spares building
 * its text again. */
#include "exceptions.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "callbacks.h"
#include "exc_machine.h"
#include "names.h"
#include "recorder.h"
#include "session.h"
#include "async.h"
#include "stack.h"
#include "thread_mem.h"
#include "utf16.h"
#include "eventpipe.h"
#include "sampler.h"

#define STACK_TEXT_MAX 6144
#define MESSAGE_MAX_CHARS 1024
#define NOTES_PER_THREAD 16
#define LAYOUT_TRIES 8
#define CHECKPOINT_WAIT_MS 250 /* an exception no managed code catches: the samples written first */

/* ExceptionDetails flags (exc_machine.h). */
#define DETAIL_HAD_STACK_TRACE EXC_DETAIL_KEPT_TRACE
#define DETAIL_STACK_TRUNCATED EXC_DETAIL_TRUNCATED
#define DETAIL_SAME_AS_CATCH EXC_DETAIL_SAME_AS_CATCH

static int g_stacks; /* DNP_ENV_EXC_STACKS=1 and the mask bit was added */

static struct {
    pthread_mutex_t mu;
    atomic_int state; /* 0 not yet, 1 ready, -1 unavailable */
    int tries;
    ULONG off_message, off_hresult, off_stack_trace; /* 0: field not found */
    ULONG str_length, str_buffer;
} L = {.mu = PTHREAD_MUTEX_INITIALIZER};

void exceptions_configure(const agent_config *cfg, uint32_t *mask, uint32_t *mask_high) {
    (void)mask_high;
    /* From the configuration only: after an attach, the environment is the
     * target's, not what dnprof attach asked for. */
    g_stacks = cfg->exc_stacks && (g_agent.events.families >> DNP_FAM_EXCEPTIONS & 1);
    if (g_stacks)
        *mask |= COR_PRF_ENABLE_STACK_SNAPSHOT;
}

/* .NET 9 and 10's exception handling calls a profiler's filter and catch
 * callbacks in preemptive mode while it holds the thrown object in an
 * unreported local: a collection then can move it under the funclet
 * (dotnet/runtime#132462, fixed for .NET 11). Nothing a profiler does closes
 * that window; the trace says so (docs/exceptions.md). */
void exceptions_note_runtime(void) {
    int major = (g_agent.events.families >> DNP_FAM_EXCEPTIONS & 1) ? ep_runtime_major() : 0;
    if (major == 9 || major == 10)
        rec_note(0, "exceptions: .NET %d's exception handling has a GC hole that exception monitoring can expose "
                 "(dotnet/runtime#132462, fixed for .NET 11): docs/exceptions.md", major);
}

/* ---- the layout of System.Exception ---- */

static int wide_is(const WCHAR *w, ULONG len, const char *s) {
    size_t n = strlen(s);
    if (len == 0 || len - 1 != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] != (WCHAR)(unsigned char)s[i])
            return 0;
    return 1;
}

static IMetaDataImport *module_metadata(ModuleID module) {
    IUnknown *unk = NULL;
    if (INFO_CALL(GetModuleMetaData, module, 0 /* ofRead */, &IID_IMetaDataImport, &unk) != S_OK)
        return NULL;
    return (IMetaDataImport *)unk;
}

/* Reads the offsets from System.Exception's class; 0 or -1. */
static int layout_read(ClassID cls, IMetaDataImport *imp) {
    COR_FIELD_OFFSET fields[64];
    ULONG n = 0, size = 0;
    if (FAILED(INFO_CALL(GetClassLayout, cls, fields, 64, &n, &size)))
        return -1;
    for (ULONG i = 0; i < n && i < 64; i++) {
        char name[64];
        if (!names_field_name(imp, fields[i].ridOfField, name, sizeof name))
            continue;
        if (!strcmp(name, "_message"))
            L.off_message = fields[i].ulOffset;
        else if (!strcmp(name, "_HResult"))
            L.off_hresult = fields[i].ulOffset;
        else if (!strcmp(name, "_stackTrace"))
            L.off_stack_trace = fields[i].ulOffset;
    }
    if (!L.off_message || !L.off_hresult)
        return -1;
    if (FAILED(INFO_CALL(GetStringLayout2, &L.str_length, &L.str_buffer)))
        return -1;
    return 0;
}

/* Walks cls up to System.Exception and reads the layout; 0 or -1. */
static int layout_find(ClassID cls) {
    for (int depth = 0; cls && depth < 32; depth++) {
        ModuleID module = 0;
        mdTypeDef td = 0;
        ClassID parent = 0;
        ULONG32 nargs = 0;
        if (FAILED(INFO_CALL(GetClassIDInfo2, cls, &module, &td, &parent, 0, &nargs, NULL)))
            return -1;
        IMetaDataImport *imp = module_metadata(module);
        if (!imp)
            return -1;
        WCHAR name[128];
        ULONG len = 0;
        DWORD flags = 0;
        mdToken extends = 0;
        int found = SUCCEEDED(imp->lpVtbl->GetTypeDefProps(imp, td, name, 128, &len, &flags, &extends)) &&
                    wide_is(name, len, "System.Exception");
        int rc = found ? layout_read(cls, imp) : 1;
        imp->lpVtbl->Release(imp);
        if (rc <= 0)
            return rc;
        cls = parent;
    }
    return -1;
}

static int layout_ready(ObjectID object) {
    int s = atomic_load_explicit(&L.state, memory_order_acquire);
    if (s)
        return s > 0;
    if (!AGENT_HAS_INFO(GetStringLayout2))
        return 0;
    pthread_mutex_lock(&L.mu);
    if (atomic_load(&L.state) == 0) {
        ClassID cls = 0;
        INFO_CALL(GetClassFromObject, object, &cls);
        if (cls && layout_find(cls) == 0) {
            atomic_store_explicit(&L.state, 1, memory_order_release);
        } else if (++L.tries >= LAYOUT_TRIES) {
            atomic_store(&L.state, -1);
            rec_note(1, "exception messages are not recorded: System.Exception's fields were not found");
        }
    }
    s = atomic_load(&L.state);
    pthread_mutex_unlock(&L.mu);
    return s > 0;
}

static uint32_t read_message(const uint8_t *obj) {
    const uint8_t *s = *(const uint8_t *const *)(obj + L.off_message);
    if (!s)
        return 0;
    int32_t len = *(const int32_t *)(s + L.str_length);
    if (len < 0)
        return 0;
    char text[MESSAGE_MAX_CHARS * 3 + 8];
    size_t n = dnp_utf16_to_utf8((const WCHAR *)(s + L.str_buffer),
                                   (size_t)(len > MESSAGE_MAX_CHARS ? MESSAGE_MAX_CHARS : len), text,
                                   sizeof text - 4);
    if (len > MESSAGE_MAX_CHARS) {
        memcpy(text + n, "\xe2\x80\xa6", 3); /* ... */
        n += 3;
    }
    return rec_string(text, n);
}

/* ---- the stack ---- */

typedef stack_snapshot snapshot;

/* A thread's exceptions (thread_mem.h: allocated at its first exception). */
typedef struct exc_tls {
    exc_machine machine;
    /* A weak handle on the object of each level whose catch runs: a garbage
     * collection may move the object before the catch throws it again
     * (`throw;`), and the handle gives its new ObjectID (ICorProfilerInfo13,
     * .NET 7+). */
    ObjectHandleID handle[EXC_MAX_NEST];
    unsigned notes;
    struct {
        uint64_t key;
        uint32_t sid;
    } stacks[64];
    /* Where each level's handler runs: its frame, counted from the root of the
     * stack of its throw (0: unknown). A new throw whose stack does not hold
     * that frame at that place is not inside the handler: the handler was left. */
    struct {
        int root_dist;
        int left; /* frames its unwind has left */
        snapshot stack;
    } where[EXC_MAX_NEST];
} exc_tls;
static __thread thread_mem_slot t_mem;

/* This thread's; NULL when it cannot be had (no state kept: every event is
 * recorded as it comes, none is told apart as a rethrow). */
static exc_tls *here(void) {
    return thread_mem(&t_mem, sizeof(exc_tls), 0);
}

static void take_snapshot(snapshot *s) {
    stack_take(s);
}

static uint32_t stack_string(exc_tls *t, const snapshot *sp, unsigned *flags) {
    const snapshot s = *sp;
    if (s.n == 0)
        return 0;
    uint32_t sids[STACK_MAX_FRAMES];
    uint64_t key = 0xcbf29ce484222325ull ^ (uint64_t)s.n;
    for (unsigned i = 0; i < s.n; i++) {
        sids[i] = names_get(NAMES_FUNCTION, s.f[i], 1);
        key = (key ^ sids[i]) * 0x100000001b3ull;
    }
    key |= 1;
    unsigned slot = (unsigned)(key >> 32) & 63;
    if (t && t->stacks[slot].key == key)
        return t->stacks[slot].sid;

    char text[STACK_TEXT_MAX];
    size_t len = names_frames_text(s.f, s.n, s.more, 2, text, sizeof text);
    if (s.more)
        *flags |= DETAIL_STACK_TRUNCATED;
    uint32_t sid = rec_string(text, len);
    if (t) {
        t->stacks[slot].key = key;
        t->stacks[slot].sid = sid;
    }
    return sid;
}

static void handle_drop(exc_tls *t, int i);

/* Ends the levels on top whose catch or finally the stack of this throw shows
 * is no longer running. */
static void settle(exc_tls *t, const snapshot *s) {
    while (t->machine.depth > 0 && s->n > 0 && !s->more) {
        int top = t->machine.depth - 1;
        const exc_level *l = &t->machine.lv[top];
        int rd = t->where[top].root_dist;
        if ((l->phase != EXC_CATCH && l->phase != EXC_FINALLY) || rd <= 0)
            return;
        int idx = (int)s->n - rd;
        if (idx >= 0 && s->f[idx] == l->handler)
            return;
        exc_step st;
        exc_machine_abandon_top(&t->machine, &st);
        handle_drop(t, t->machine.depth);
    }
}

/* The handler of the top level starts in function fn: find its frame. */
static void handler_at(exc_tls *t, FunctionID fn) {
    int top = t->machine.depth - 1;
    if (top < 0 || !g_stacks)
        return;
    const snapshot *s = &t->where[top].stack;
    t->where[top].root_dist = 0;
    if (s->more)
        return;
    for (int i = t->where[top].left; i < (int)s->n; i++)
        if (s->f[i] == fn) {
            t->where[top].root_dist = (int)s->n - i;
            return;
        }
}

/* The handle of level i, if any, is let go. */
static void handle_drop(exc_tls *t, int i) {
    if (t->handle[i]) {
        INFO_CALL(DestroyHandle, t->handle[i]);
        t->handle[i] = NULL;
    }
}

/* The catch of the top level starts: a weak handle follows its object. */
static void handle_catch(exc_tls *t, ObjectID object) {
    int top = t->machine.depth - 1;
    if (top < 0 || !object || !AGENT_HAS_INFO(CreateHandle))
        return;
    handle_drop(t, top);
    if (FAILED(INFO_CALL(CreateHandle, object, COR_PRF_HANDLE_TYPE_WEAK, &t->handle[top])))
        t->handle[top] = NULL;
}

/* A throw of the object whose catch runs on top, moved since its catch began:
 * the machine is told the object's new ID, so that `throw;` is a rethrow. */
static int moved_catch_object(exc_tls *t, ObjectID object) {
    int top = t->machine.depth - 1;
    if (top < 0 || !object || t->machine.lv[top].phase != EXC_CATCH || t->machine.lv[top].object == object ||
        !t->handle[top])
        return 0;
    ObjectID now = 0;
    if (FAILED(INFO_CALL(GetObjectIDFromHandle, t->handle[top], &now)) || now != object)
        return 0;
    t->machine.lv[top].object = object;
    return 1;
}

void exceptions_thrown(ObjectID object) {
    exc_tls *t = here();
    snapshot s;
    s.n = s.more = 0;
    if (g_stacks) {
        take_snapshot(&s);
        if (t)
            settle(t, &s);
    }
    int same_as_catch = t && moved_catch_object(t, object);
    exceptions_step(DNP_EV_ExceptionThrown, 0, object);
    int top = t ? t->machine.depth - 1 : -1;
    if (top >= 0) {
        t->where[top].stack = s;
        t->where[top].left = 0;
        t->where[top].root_dist = 0;
    }

    uint32_t message = 0, stack = 0;
    uint64_t hresult = 0;
    unsigned flags = 0;
    if (object && layout_ready(object)) {
        const uint8_t *obj = (const uint8_t *)object;
        message = read_message(obj);
        hresult = (uint32_t) * (const int32_t *)(obj + L.off_hresult);
        if (L.off_stack_trace && *(const void *const *)(obj + L.off_stack_trace))
            flags |= DETAIL_HAD_STACK_TRACE;
    }
    if (g_stacks) { /* the story's stack is the logical one: a resumed method's awaiting callers (async.h) */
        snapshot lg = s;
        unsigned n = async_logical_stack(lg.f, lg.n, STACK_MAX_FRAMES);
        if (n != lg.n) {
            lg.n = n;
            lg.more = 0;
        }
        stack = stack_string(t, &lg, &flags);
    }
    if (same_as_catch)
        flags |= DETAIL_SAME_AS_CATCH;
    REC(ExceptionDetails, object, message, hresult, stack, (uint64_t)(t ? t->machine.depth : 0), flags);
}

/* ---- the state machine ---- */

int exceptions_step(uint16_t kind, FunctionID fn, ObjectID object) {
    exc_tls *t = here();
    if (!t)
        return 1;
    exc_step st;
    int before = t->machine.depth;
    uint8_t phase = before ? t->machine.lv[before - 1].phase : 0;
    exc_machine_step(&t->machine, kind, fn, object, &st);
    if ((st.flags & EXC_UNEXPECTED) && t->notes < NOTES_PER_THREAD) {
        t->notes++;
        rec_note(1, "exception sequence: %s while the thread is in %s (%d exception%s in flight)%s",
                 dnp_events[kind].name, exc_phase_name(phase), before, before == 1 ? "" : "s",
                 t->notes == NOTES_PER_THREAD ? "; no more such notes on this thread" : "");
    }
    /* No managed catcher: the process may be about to die of an unhandled
     * exception, with no Shutdown and no flush to come. Write everything now,
     * and after every step of the unwind that follows. */
    int d = t->machine.depth;
    for (int i = d; i < before && i < EXC_MAX_NEST; i++)
        handle_drop(t, i);
    if (kind == DNP_EV_ExceptionCatcherEnter)
        handle_catch(t, object);
    if (d > 0 && g_stacks) {
        if (st.flags & EXC_FRAME_LEFT)
            t->where[d - 1].left++;
        if (kind == DNP_EV_ExceptionCatcherEnter || kind == DNP_EV_ExceptionUnwindFinallyEnter)
            handler_at(t, fn);
    }
    if (st.flags & EXC_NO_CATCHER)
        sampler_checkpoint(CHECKPOINT_WAIT_MS); /* the samples too: else written at intervals */
    if ((st.flags & EXC_NO_CATCHER) || (d > 0 && t->machine.lv[d - 1].no_catcher))
        recorder_flush_all();
    return !(st.flags & EXC_STRAY_LEAVE);
}
