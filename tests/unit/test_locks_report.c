/* test_locks_report.c: `dnprof report --locks` and `convert` on synthetic
 * traces, for what no installed runtime shows: a runtime whose ContentionStart
 * is version 1 (no lock, no owner: the report says so instead of showing
 * nothing), sums of LockSites flushed in pieces, the waiting site past the
 * runtime's own lock frames, an owner the trace knows by its OS thread id and
 * one it does not, and the folded export weighted by the time waited. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lock_site.h"
#include "synth.h"
#include "test.h"
#include "trace_format.h"

/* The frame that waited is past the framework's lock, wait and task-wait code;
 * the runtime's housekeeping threads are told apart by the loop that waited,
 * not by a frame further down (a work item's wait on a pool thread is the
 * program's). */
TEST(lock_site_past_framework_waits) {
    static const struct {
        const char *stack, *site;
        int house;
    } cases[] = {
        {"System.Threading.Monitor::Wait\nSystem.Threading.ManualResetEventSlim::Wait\nSystem.Threading.Tasks.Task::"
         "SpinThenBlockingWait\nSystem.Threading.Tasks.Task::Wait\nApp.Job::Run\nApp.Program::Main",
         "App.Job::Run", 0},
        {"System.Threading.Monitor::Wait\nSystem.Threading.Tasks.Task<System.Int32>::GetResultCore\n"
         "System.Runtime.CompilerServices.TaskAwaiter<System.Int32>::GetResult\nApp.Job::Run",
         "App.Job::Run", 0},
        {"System.Threading.WaitHandle::WaitOneNoCheck\nSystem.Threading.ReaderWriterLockSlim::EnterWriteLock\n"
         "System.Collections.Concurrent.BlockingCollection+<GetConsumingEnumerable>d__68<System.Int32>::MoveNext\n"
         "App.Job::Run",
         "App.Job::Run", 0},
        {"System.Threading.Thread::Join\nSystem.Threading.Thread::Join\nApp.Program::Main", "App.Program::Main", 0},
        {"System.Threading.WaitHandle::WaitOneNoCheck\nSystem.Threading.TimerQueue::TimerThread\n"
         "System.Threading.Thread::StartCallback",
         "System.Threading.TimerQueue::TimerThread", 1},
        {"System.Threading.WaitHandle::WaitOneNoCheck\nSystem.Threading.PortableThreadPool+GateThread::GateThreadStart",
         "System.Threading.PortableThreadPool+GateThread::GateThreadStart", 1},
        {"System.Threading.WaitHandle::WaitAnyMultiple\nSystem.Threading.PortableThreadPool+WaitThread::WaitThreadStart",
         "System.Threading.PortableThreadPool+WaitThread::WaitThreadStart", 1},
        {"System.Threading.WaitHandle::WaitOneNoCheck\nApp.Job::<Run>b__0_0\n"
         "System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart",
         "App.Job::<Run>b__0_0", 0},
        {"System.Threading.Monitor::Wait\nSystem.Threading.SemaphoreSlim::Wait", "System.Threading.SemaphoreSlim::Wait", 0},
        {"Interop+Sys::WaitForSocketEvents\nSystem.Net.Sockets.SocketAsyncEngine::EventLoop\n"
         "System.Threading.Thread::StartCallback",
         "Interop+Sys::WaitForSocketEvents", 1},
        {"System.Threading.LowLevelLifoSemaphore::WaitNative\nSystem.Threading.LowLevelLifoSemaphore::WaitForSignal\n"
         "System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart",
         "System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart", 1},
        {"Interop+Sys::Read\nApp.Tail::Follow\nSystem.Net.Sockets.SocketAsyncEngine::EventLoop", "Interop+Sys::Read", 0},
        /* the main thread waiting for the program to end: an async Main's entry point, a host's Run */
        {"System.Threading.Monitor::Wait\nSystem.Runtime.CompilerServices.TaskAwaiter::"
         "HandleNonSuccessAndDebuggerNotification\nProgram::<Main>",
         "Program::<Main>", 1},
        {"System.Runtime.CompilerServices.TaskAwaiter::HandleNonSuccessAndDebuggerNotification\n"
         "Microsoft.Extensions.Hosting.HostingAbstractionsHostExtensions::Run\nProgram::<Main>$",
         "Microsoft.Extensions.Hosting.HostingAbstractionsHostExtensions::Run", 1},
        /* a pool thread running a work item waits for the work, not for work */
        {"System.Threading.Monitor::Wait\nSystem.Threading.Tasks.Task::RunContinuations\n"
         "System.Threading.ThreadPoolWorkQueue::Dispatch\n"
         "System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart",
         "System.Threading.ThreadPoolWorkQueue::Dispatch", 0},
        /* the entry point gone by a tail call: GetResult the outermost managed frame */
        {"System.Threading.Monitor::Wait\nSystem.Threading.Tasks.Task::SpinThenBlockingWait\n"
         "System.Runtime.CompilerServices.TaskAwaiter::HandleNonSuccessAndDebuggerNotification\n"
         "System.Runtime.CompilerServices.TaskAwaiter<System.Int32>::GetResult",
         "System.Runtime.CompilerServices.TaskAwaiter<System.Int32>::GetResult", 1},
        /* ... not when the program's code called it, nor a GetResult inside the framework's work */
        {"System.Threading.Monitor::Wait\nSystem.Runtime.CompilerServices.TaskAwaiter::GetResult\nApp.Job::Run",
         "App.Job::Run", 0},
        {"System.Threading.Monitor::Wait\nSystem.Runtime.CompilerServices.TaskAwaiter::GetResult\n"
         "System.Net.Http.HttpClient::Send",
         "System.Net.Http.HttpClient::Send", 0},
        /* ... but a wait in the async Main's own body is the program's */
        {"System.Threading.Tasks.Task::Wait\nProgram::<Main>$\nProgram::<Main>", "Program::<Main>$", 0},
        {"", NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = 99;
        const char *site = lock_site(cases[i].stack, &len);
        if (!cases[i].site) {
            ASSERT_EQ(site, NULL);
            ASSERT_EQ(len, 0);
        } else {
            ASSERT_NE(site, NULL);
            ASSERT_EQ(len, strlen(cases[i].site));
            ASSERT_EQ(strncmp(site, cases[i].site, len), 0);
        }
        ASSERT_EQ(lock_runtime_thread(cases[i].stack), cases[i].house);
    }
    ASSERT_EQ(lock_runtime_thread(NULL), 0);
    /* one classifier for every report: a try that failed at once, the runtime's own, the program's */
    ASSERT_EQ(lock_classify("System.Threading.Lock::TryEnterSlow\nSystem.Threading.Lock::TryEnter\nP::M",
                            DNP_LOCK_LOCK), LOCK_DROP);
    ASSERT_EQ(lock_classify("System.Threading.Lock::TryEnterSlow\nSystem.Threading.Lock::Enter\nP::M",
                            DNP_LOCK_LOCK), LOCK_OWN);
    ASSERT_EQ(lock_classify("", DNP_LOCK_MONITOR), LOCK_HOUSE); /* contention with no managed frame */
    ASSERT_EQ(lock_classify(NULL, DNP_LOCK_MONITOR), LOCK_HOUSE);
    ASSERT_EQ(lock_classify("System.Threading.Lock::TryEnterSlow\nSystem.Threading.Timer::get_ActiveCount\n"
                            "System.Diagnostics.Tracing.CounterGroup::PollForValues", DNP_LOCK_LOCK), LOCK_HOUSE);
    ASSERT_EQ(lock_classify("System.Threading.Monitor::Enter_Slowpath\nP::Worker", DNP_LOCK_MONITOR), LOCK_OWN);
    ASSERT_EQ(lock_classify("System.Threading.WaitHandle::WaitOneNoCheck\n"
                            "System.Threading.TimerQueue::TimerThread", DNP_LOCK_WAIT_HANDLE), LOCK_HOUSE);
    ASSERT_EQ(lock_classify("", DNP_LOCK_WAIT_HANDLE), LOCK_OWN); /* a wait with no frame: not said to be the runtime's */
    return 0;
}

#ifdef DNPROF_BIN
static char *run(const char *args, const char *path) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>&1", DNPROF_BIN, args, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && n + 1 < cap && (got = fread(buf + n, 1, cap - 1 - n, p)) > 0)
        n += got;
    pclose(p);
    if (buf)
        buf[n] = 0;
    return buf;
}

/* version: ContentionStart's; owner tids 4242 (thread 2 of the trace) and 9999 (unknown). */
static int write_trace(const char *path, unsigned version, int contended) {
    synth *w = synth_open(path, 4321, "locks-synth");
    if (!w)
        return -1;
    synth_thread(w, 1, 4241);
    synth_thread(w, 2, 4242);
    uint64_t stack = synth_string(w, "System.Threading.Monitor::Enter_Slowpath\nApp.Cache::Get\nApp.Program::Main");
    uint64_t type = synth_string(w, "App.Cache");
    uint64_t cfg[] = {7, 1, 1000000};
    synth_event(w, 1, 10, DNP_EV_LockConfig, cfg);
    if (contended) {
        uint64_t owner = version >= 2 ? 4242 : 0, lock = version >= 2 ? type : 0;
        uint64_t a[] = {stack, lock, owner, 0, 30, 300000000, 20000000};
        uint64_t b[] = {stack, lock, owner, 0, 10, 100000000, 40000000}; /* the same key, a later flush */
        uint64_t c[] = {stack, lock, version >= 2 ? 9999 : 0, 0, 5, 50000000, 10000000};
        synth_event(w, 1, 100, DNP_EV_LockSite, a);
        synth_event(w, 1, 200, DNP_EV_LockSite, b);
        synth_event(w, 1, 300, DNP_EV_LockSite, c);
        uint64_t slice[] = {stack, lock, owner, 0, 40000000};
        synth_event(w, 2, 50000000, DNP_EV_LockWait, slice);
    }
    uint64_t stats[] = {version, contended ? 45 : 0, contended ? 1 : 0, 0, 0};
    synth_event(w, 1, 400, DNP_EV_LockStats, stats);
    return synth_close(w, 1);
}

TEST(locks_report_v2_owner_site_sums) {
    char path[] = "/tmp/dnprof-locks-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(write_trace(path, 2, 1), 0);
    char *text = run("report --locks", path);
    ASSERT_NE(text, NULL);
    int ok = strstr(text, "lock contention: 45 waits, 450 ms waited in all (longest 40.0 ms)") &&
             strstr(text, "App.Cache (Monitor)") && strstr(text, "App.Cache::Get") &&
             strstr(text, "thread 2 (tid 4242)") && strstr(text, "tid 9999") && !strstr(text, "version 1");
    if (!ok)
        fprintf(stderr, "%s\n", text);
    free(text);
    ASSERT(ok);
    text = run("report --locks --json", path);
    ASSERT_NE(text, NULL);
    ok = strstr(text, "\"site\":\"App.Cache::Get\",\"class\":\"contention\",\"maxNs\":40000000,\"waits\":45,"
                      "\"waitNs\":450000000") != NULL &&
         strstr(text, "\"tid\":4242,\"thread\":\"thread 2 (tid 4242)\",\"known\":true,\"waits\":40") != NULL &&
         strstr(text, "\"ownersKnown\":true") != NULL;
    if (!ok)
        fprintf(stderr, "%s\n", text);
    free(text);
    ASSERT(ok);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "convert --format folded -o - ");
    text = run(cmd, path);
    ok = text && strstr(text, "App.Program::Main;App.Cache::Get;System.Threading.Monitor::Enter_Slowpath;[lock App.Cache] "
                              "450000000\n");
    if (!ok)
        fprintf(stderr, "%s\n", text ? text : "");
    free(text);
    unlink(path);
    ASSERT(ok);
    return 0;
}

TEST(locks_report_v1_says_what_is_missing) {
    char path[] = "/tmp/dnprof-locks-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(write_trace(path, 1, 1), 0);
    char *text = run("report --locks", path);
    int ok = text && strstr(text, "note: the runtime's ContentionStart is version 1 (before .NET 8)") &&
             strstr(text, "[type not known]") && !strstr(text, "by owner");
    if (!ok)
        fprintf(stderr, "%s\n", text ? text : "");
    free(text);
    ASSERT(ok);
    text = run("report --locks --json", path);
    ok = text && strstr(text, "\"ownersKnown\":false") && strstr(text, "\"owners\":[]");
    free(text);
    unlink(path);
    ASSERT(ok);
    return 0;
}

TEST(locks_report_no_contention) {
    char path[] = "/tmp/dnprof-locks-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(write_trace(path, 2, 0), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' report --locks '%s' >/dev/null 2>&1", DNPROF_BIN, path);
    int status = system(cmd);
    char *text = run("report --locks", path);
    int ok = status == 0 && text && strstr(text, ": no contention: no thread waited for a lock");
    free(text);
    text = run("convert --format pprof -o /dev/null", path);
    ok = ok && text && strstr(text, "no contention was recorded");
    free(text);
    unlink(path);
    ASSERT(ok);
    return 0;
}
/* Durations just below a unit's next: 999.7 ms and 999.6 us waited. Every
 * report writes them with report_fmt_ns: "1.00 s" and "1.00 ms", where the
 * locks and waits reports' "%.3g" once wrote "1e+03 ms". */
TEST(locks_report_durations_at_a_units_edge) {
    char path[] = "/tmp/dnprof-locks-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    synth *w = synth_open(path, 4321, "locks-synth");
    ASSERT_NE(w, NULL);
    synth_thread(w, 1, 4241);
    uint64_t slow = synth_string(w, "System.Threading.Monitor::Enter_Slowpath\nApp.Slow::Run");
    uint64_t quick = synth_string(w, "System.Threading.Monitor::Enter_Slowpath\nApp.Quick::Run");
    uint64_t type = synth_string(w, "App.Cache");
    uint64_t cfg[] = {7, 1, 1000000};
    synth_event(w, 1, 10, DNP_EV_LockConfig, cfg);
    uint64_t a[] = {slow, type, 0, 0, 1, 999700000, 999700000};
    uint64_t b[] = {quick, type, 0, 0, 1, 999600, 999600};
    synth_event(w, 1, 100, DNP_EV_LockSite, a);
    synth_event(w, 1, 200, DNP_EV_LockSite, b);
    uint64_t stats[] = {2, 2, 1, 0, 0};
    synth_event(w, 1, 400, DNP_EV_LockStats, stats);
    ASSERT_EQ(synth_close(w, 1), 0);
    char *text = run("report --locks", path);
    int ok = text && strstr(text, "1.00 s") && strstr(text, "1.00 ms") && !strstr(text, "e+");
    if (!ok)
        fprintf(stderr, "%s\n", text ? text : "");
    free(text);
    unlink(path);
    ASSERT(ok);
    return 0;
}
#endif
