/* lock_site.c: where a thread waited: the first frame of its stack outside
 * the framework's own lock, wait and task-wait code (lock_site.h), as
 * `dnprof report --locks` (report_locks.c), `dnprof report --waits`
 * (report_waits.c) and `dnprof top --locks` (top_model.c) name it; and which
 * waits are the runtime's service threads, which those count apart. */
#include <stdio.h>
#include <string.h>

#include "dnp_text.h"

#include "lock_site.h"
#include "trace_format.h"

/* The framework's code that waits on the program's behalf, above the frame
 * that waited: locks and wait handles, the blocking collections and
 * coordination types built on them, and blocking on a task (Wait, Result,
 * GetAwaiter().GetResult(), Parallel's loops). */
static int internal_frame(const char *f, size_t n) {
    static const char *const prefixes[] = {
        "System.Threading.Monitor::", "System.Threading.Lock::", "System.Threading.Lock+",
        "System.Diagnostics.Tracing.NativeRuntimeEventSource::", "System.Threading.WaitHandle::",
        "System.Threading.WaitSubsystem", "System.Threading.LowLevel", "System.Threading.EventWaitHandle::",
        "System.Threading.ManualResetEventSlim::", "System.Threading.SemaphoreSlim::", "System.Threading.Semaphore::",
        "System.Threading.Mutex::", "System.Threading.ReaderWriterLockSlim::", "System.Threading.ReaderWriterLock::",
        "System.Threading.CountdownEvent::", "System.Threading.Barrier::", "System.Threading.SpinLock::",
        "System.Threading.SpinWait::", "System.Threading.Thread::Join", "System.Threading.Thread::Sleep",
        "System.Threading.Tasks.Task::",
        "System.Threading.Tasks.Task<", "System.Threading.Tasks.TaskReplicator", "System.Threading.Tasks.Parallel::",
        "System.Threading.Tasks.ValueTask", "System.Runtime.CompilerServices.TaskAwaiter",
        "System.Runtime.CompilerServices.ValueTaskAwaiter", "System.Runtime.CompilerServices.ConfiguredTaskAwaitable",
        "System.Runtime.CompilerServices.ConfiguredValueTaskAwaitable",
        "System.Collections.Concurrent.BlockingCollection"};
    return dnp_has_prefix(f, n, prefixes, sizeof prefixes / sizeof prefixes[0]);
}

const char *lock_site(const char *stack, size_t *len) {
    const char *last = NULL;
    *len = 0;
    for (const char *f = stack; f && *f;) {
        const char *end = strchr(f, '\n');
        size_t n = end ? (size_t)(end - f) : strlen(f);
        last = f, *len = n;
        if (!internal_frame(f, n))
            return f;
        f = end ? end + 1 : NULL;
    }
    return last;
}

const char *lock_api(const char *stack, size_t *len) {
    const char *inside = NULL;
    size_t n_inside = 0;
    *len = 0;
    for (const char *f = stack; f && *f;) {
        const char *end = strchr(f, '\n');
        size_t n = end ? (size_t)(end - f) : strlen(f);
        if (!internal_frame(f, n))
            break;
        inside = f, n_inside = n;
        f = end ? end + 1 : NULL;
    }
    *len = n_inside;
    return inside;
}

/* The frame that starts at f, n bytes long, is exactly name. */
static int frame_is(const char *f, size_t n, const char *name) {
    return n == strlen(name) && !memcmp(f, name, n);
}

/* 1 when stack is a call of System.Threading.Lock's slow path made by
 * Lock.TryEnter without a wait (the frame right under TryEnterSlow is
 * Lock::TryEnter): a try that fails at once is no contended acquisition, and
 * the probe of an agent before 1.6's in the slow path timed those calls too
 * (since, it leaves them out itself: docs/waits.md). */
static int lock_try_at_once(const char *stack) {
    int after_slow = 0;
    for (const char *f = stack; f && *f;) {
        const char *end = strchr(f, '\n');
        size_t n = end ? (size_t)(end - f) : strlen(f);
        if (after_slow)
            return frame_is(f, n, LOCK_TRY_ENTER);
        after_slow = frame_is(f, n, LOCK_SLOW_PATH);
        f = end ? end + 1 : NULL;
    }
    return 0;
}

int lock_classify(const char *stack, unsigned kind) {
    if (kind == DNP_LOCK_LOCK && lock_try_at_once(stack))
        return LOCK_DROP;
    if (DNP_LOCK_IS_WAIT(kind))
        return lock_runtime_thread(stack) ? LOCK_HOUSE : LOCK_OWN;
    return !stack || !*stack || strstr(stack, LOCK_COUNTERS_POLL "PollForValues") ? LOCK_HOUSE : LOCK_OWN;
}

int lock_runtime_thread(const char *stack) {
    static const char *const loops[] = {
        "System.Threading.TimerQueue::TimerThread", "System.Threading.PortableThreadPool+GateThread::",
        "System.Threading.PortableThreadPool+WaitThread::WaitThreadStart",
        "System.Threading.PortableThreadPool+WorkerThread::", LOCK_COUNTERS_POLL,
        "System.Diagnostics.Tracing.EventPipeEventDispatcher::", "System.Net.Sockets.SocketAsyncEngine::EventLoop",
        "System.IO.FileSystemWatcher+RunningInstance::",
        "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Infrastructure.Heartbeat::TimerLoop",
        "Microsoft.Extensions.Logging.Console.ConsoleLoggerProcessor::ProcessLogQueue",
        /* the main thread waiting for the program to end: the host's Run */
        "Microsoft.Extensions.Hosting.HostingAbstractionsHostExtensions::Run",
        "Microsoft.AspNetCore.Builder.WebApplication::Run"};
    static const char awaiter[] = "System.Runtime.CompilerServices.TaskAwaiter", result[] = "::GetResult";
    const char *last = NULL;
    size_t last_n = 0;
    static const char dispatch[] = "System.Threading.ThreadPoolWorkQueue::Dispatch";
    for (const char *f = stack; f && *f;) {
        const char *end = strchr(f, '\n');
        size_t n = end ? (size_t)(end - f) : strlen(f);
        if (n == sizeof dispatch - 1 && !memcmp(f, dispatch, n))
            return 0; /* a pool thread running a work item: its wait is the work's, framework frames or not */
        if (dnp_has_prefix(f, n, loops, sizeof loops / sizeof loops[0]))
            return 1;
        if (n >= 8 && !memcmp(f + n - 8, "::<Main>", 8))
            return 1; /* the compiler's entry point of an async Main, waiting for its task: the whole run */
        char frame[512];
        snprintf(frame, sizeof frame, "%.*s", (int)(n < sizeof frame ? n : sizeof frame - 1), f);
        if (!dnp_is_framework_name(frame))
            return 0; /* the program's own code waited, whatever thread it runs on */
        last = f, last_n = n;
        f = end ? end + 1 : NULL;
    }
    /* the same entry point gone by a tail call: its GetAwaiter().GetResult() the outermost managed
     * frame, called from the runtime's start (a thread with no frame of the program's) */
    return last && last_n > sizeof awaiter + sizeof result && !memcmp(last, awaiter, sizeof awaiter - 1) &&
           !memcmp(last + last_n - (sizeof result - 1), result, sizeof result - 1);
}
