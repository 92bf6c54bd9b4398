/* test_agent.c: the agent's pure parts: trace paths, UTF-16 names, per-thread memory. */
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profiler.h"
#include "clock.h"
#include "config.h"
#include "sdk_process.h"
#include "names.h"
#include "session.h"
#include "test.h"
#include "thread_mem.h"

static void env(const char *k, const char *v) {
    if (v)
        setenv(k, v, 1);
    else
        unsetenv(k);
}

TEST(agent_output_default) {
    char path[256], want[64], alt[256];
    int excl = -1;
    env(DNP_ENV_OUTPUT, NULL);
    env(DNP_ENV_ROOT_PID, NULL);
    config_output_path(path, sizeof path, &excl, alt, sizeof alt);
    snprintf(want, sizeof want, "dnprof-%d.trace", (int)getpid());
    ASSERT_STREQ(path, want);
    ASSERT_EQ(excl, 0);
    return 0;
}

TEST(agent_output_root_and_child) {
    char path[256], want[256], pid[32], alt[256];
    int excl = -1;
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    env(DNP_ENV_OUTPUT, "/tmp/x/app.trace");
    env(DNP_ENV_ROOT_PID, pid);
    config_output_path(path, sizeof path, &excl, alt, sizeof alt);
    ASSERT_STREQ(path, "/tmp/x/app.trace");
    ASSERT_EQ(excl, 0);
    /* Another process inherits the variables: a file of its own, never the root's. */
    env(DNP_ENV_ROOT_PID, "1");
    config_output_path(path, sizeof path, &excl, alt, sizeof alt);
    snprintf(want, sizeof want, "/tmp/x/app.%d.trace", (int)getpid());
    ASSERT_STREQ(path, want);
    ASSERT_EQ(excl, 1);
    env(DNP_ENV_OUTPUT, "/tmp/x/noext");
    config_output_path(path, sizeof path, &excl, alt, sizeof alt);
    snprintf(want, sizeof want, "/tmp/x/noext.%d.trace", (int)getpid());
    ASSERT_STREQ(path, want);
    ASSERT_STREQ(alt, "");
    /* Under the SDK (dotnet run), which records nothing itself: the root's file
     * first, created exclusively by the first program; else one of its own. */
    env(DNP_ENV_SDK_ASIDE, "1");
    env(DNP_ENV_OUTPUT, "/tmp/x/app.trace");
    config_output_path(path, sizeof path, &excl, alt, sizeof alt);
    ASSERT_STREQ(path, "/tmp/x/app.trace");
    ASSERT_EQ(excl, 1);
    snprintf(want, sizeof want, "/tmp/x/app.%d.trace", (int)getpid());
    ASSERT_STREQ(alt, want);
    env(DNP_ENV_SDK_ASIDE, NULL);
    env(DNP_ENV_OUTPUT, NULL);
    env(DNP_ENV_ROOT_PID, NULL);
    return 0;
}

/* Which processes are the SDK's own, by their command line (sdk_process.h). */
TEST(agent_sdk_processes) {
    char *run[] = {"/usr/bin/dotnet", "run", "--project", "app", NULL}, *test[] = {"dotnet", "test", NULL},
         *build[] = {"dotnet", "build", NULL}, *app[] = {"dotnet", "app.dll", NULL},
         *bare[] = {"/usr/share/dotnet/dotnet", NULL};
    ASSERT_EQ(dnp_sdk_starts_program(run), 1);
    ASSERT_EQ(dnp_sdk_starts_program(test), 1);
    ASSERT_EQ(dnp_sdk_starts_program(build), 0); /* the build is what was asked about */
    ASSERT_EQ(dnp_sdk_starts_program(app), 0);
    ASSERT_EQ(dnp_sdk_starts_program(bare), 0);
    const char *host = "/usr/share/dotnet/dotnet";
    char *msbuild[] = {"dotnet", "/usr/share/dotnet/sdk/10.0.100/MSBuild.dll", "-nologo"},
         *exec[] = {"dotnet", "exec", "--runtimeconfig", "t.runtimeconfig.json", "/src/bin/testhost.dll"},
         *opts[] = {"dotnet", "--roll-forward", "Major", "app.DLL"}, *info[] = {"dotnet", "--info"};
    ASSERT_EQ(dnp_sdk_host_runs(host, 4, run), DNP_SDK_COMMAND);
    ASSERT_EQ(dnp_sdk_host_runs(host, 1, bare), DNP_SDK_COMMAND);
    ASSERT_EQ(dnp_sdk_host_runs(host, 3, msbuild), 1);
    ASSERT_EQ(dnp_sdk_host_runs(host, 5, exec), 4);
    ASSERT_EQ(dnp_sdk_host_runs(host, 4, opts), 3);
    ASSERT_EQ(dnp_sdk_host_runs(host, 2, info), DNP_SDK_COMMAND);
    ASSERT_EQ(dnp_sdk_host_runs("/src/bin/app", 2, app), DNP_SDK_NOT_HOST); /* an apphost */
    const char *csc = "/usr/share/dotnet/sdk/10.0.100/Roslyn/bincore/csc", *nested = "/opt/sdk/x/dotnet/sdk/10.0.100/a.dll";
    ASSERT_EQ(dnp_sdk_next_root(csc, 0), strlen("/usr/share/dotnet"));
    ASSERT_EQ(dnp_sdk_next_root(csc, strlen("/usr/share/dotnet") + 1), 0);
    ASSERT_EQ(dnp_sdk_next_root(nested, 0), strlen("/opt")); /* each candidate in turn: the caller looks for the host */
    ASSERT_EQ(dnp_sdk_next_root(nested, strlen("/opt") + 1), strlen("/opt/sdk/x/dotnet"));
    ASSERT_EQ(dnp_sdk_next_root("/src/bin/testhost.dll", 0), 0);
    ASSERT_EQ(dnp_sdk_next_root("/usr/share/dotnet/sdkx/a.dll", 0), 0);
    return 0;
}

TEST(agent_output_pid_template) {
    char path[256], want[256], alt[256];
    int excl = -1;
    env(DNP_ENV_OUTPUT, "/tmp/t-%p-100%%.trace");
    env(DNP_ENV_ROOT_PID, "1");
    config_output_path(path, sizeof path, &excl, alt, sizeof alt);
    snprintf(want, sizeof want, "/tmp/t-%d-100%%.trace", (int)getpid());
    ASSERT_STREQ(path, want);
    ASSERT_EQ(excl, 0); /* %p already makes it the process's own */
    env(DNP_ENV_OUTPUT, NULL);
    env(DNP_ENV_ROOT_PID, NULL);
    return 0;
}

TEST(agent_flush_ms) {
    env(DNP_ENV_FLUSH_MS, "50");
    ASSERT_EQ(config_flush_ms(), 50);
    /* A bad value is the table's default (said once). */
    env(DNP_ENV_FLUSH_MS, "-3");
    ASSERT_EQ(config_flush_ms(), dnp_setting_default(DNP_SET_FLUSH_MS));
    env(DNP_ENV_FLUSH_MS, "junk");
    ASSERT_EQ(config_flush_ms(), dnp_setting_default(DNP_SET_FLUSH_MS));
    env(DNP_ENV_FLUSH_MS, "60000");
    ASSERT_EQ(config_flush_ms(), dnp_setting_default(DNP_SET_FLUSH_MS));
    env(DNP_ENV_FLUSH_MS, NULL);
    ASSERT_EQ(config_flush_ms(), 0);
    return 0;
}

/* Side by side (docs/design-notes.md#side-by-side): the first runtime that asks gets the profiler, a
 * second one in the same process is refused. */
TEST(agent_pick_first) {
    void *first = NULL, *second = NULL;
    ASSERT_EQ(agent_create(&IID_ICorProfilerCallback[3], &first), S_OK);
    ASSERT_NE(first, NULL);
    ICorProfilerCallback *cb = first;
    /* It answers for every callback interface the runtime asks for. */
    void *again = NULL;
    ASSERT_EQ(cb->lpVtbl->QueryInterface(cb, &IID_ICorProfilerCallback[11], &again), S_OK);
    ASSERT_EQ(again, first);
    ASSERT_EQ(cb->lpVtbl->QueryInterface(cb, &IID_ICorProfilerInfo[3], &again), E_NOINTERFACE);
    ASSERT_NE(agent_create(&IID_ICorProfilerCallback[3], &second), S_OK);
    return 0;
}

/* The TSC clock, once calibrated, keeps CLOCK_MONOTONIC's time and never goes back. */
TEST(agent_clock) {
    clock_init();
    uint64_t before = clock_now_ns();
    clock_calibrate(20, 1);
    ASSERT(atomic_load(&g_clock.ready));
    uint64_t last = clock_now_ns();
    ASSERT_GE(last, before);
    for (int i = 0; i < 1000000; i++) {
        uint64_t now = clock_now_ns();
        ASSERT_GE(now, last);
        last = now;
    }
    uint64_t mono = clock_mono_ns(), tsc = clock_now_ns();
    uint64_t diff = tsc > mono ? tsc - mono : mono - tsc;
    if (diff > 1000000)
        fprintf(stderr, "clock: %llu ns off CLOCK_MONOTONIC\n", (unsigned long long)diff);
    ASSERT_LT(diff, 1000000);
    /* Ticks and their conversion agree with the clock over a sleep. */
    uint64_t t0 = clock_ticks(), n0 = clock_mono_ns();
    struct timespec pause = {0, 20 * 1000000};
    nanosleep(&pause, NULL);
    uint64_t dt = clock_ticks_to_ns(clock_ticks() - t0), dn = clock_mono_ns() - n0;
    ASSERT_GT(dt, dn * 99 / 100);
    ASSERT_LT(dt, dn * 101 / 100);
    return 0;
}

/* thread_mem.h: a block per slot and thread, zeroed, the same on every call,
 * zeroed again for a new generation, freed as its thread exits, and every
 * thread's freed by a release (after which the slot allocates again). */
static __thread thread_mem_slot t_test_slot;

static void *use_slot(void *out) {
    unsigned long blocks, bytes;
    unsigned char *p = thread_mem(&t_test_slot, 1000, 0);
    int ok = p != NULL && thread_mem(&t_test_slot, 1000, 0) == p;
    for (int i = 0; ok && i < 1000; i++)
        ok = p[i] == 0;
    thread_mem_totals(&blocks, &bytes);
    *(int *)out = ok && blocks >= 1 && bytes >= 1000;
    return NULL;
}

TEST(agent_thread_mem) {
    unsigned long b0, y0, b1, y1;
    thread_mem_totals(&b0, &y0);
    pthread_t th;
    int ok = 0;
    ASSERT_EQ(pthread_create(&th, NULL, use_slot, &ok), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(ok, 1);
    thread_mem_totals(&b1, &y1);
    ASSERT_EQ(b1, b0); /* the thread's block went with it */
    ASSERT_EQ(y1, y0);
    unsigned char *p = thread_mem(&t_test_slot, 64, 0);
    ASSERT(p != NULL);
    p[0] = 7;
    ASSERT_EQ(((unsigned char *)thread_mem(&t_test_slot, 64, 0))[0], 7); /* the same generation: kept */
    ASSERT_EQ((unsigned char *)thread_mem(&t_test_slot, 64, 1), p); /* a new one: the same block, zeroed */
    ASSERT_EQ(p[0], 0);
    p[0] = 7;
    thread_mem_totals(&b1, &y1);
    ASSERT_EQ(b1, b0 + 1);
    thread_mem_release();
    thread_mem_totals(&b1, &y1);
    ASSERT_EQ(b1, 0);
    unsigned char *q = thread_mem(&t_test_slot, 64, 1); /* the slot's epoch is stale: a new block */
    ASSERT(q != NULL);
    ASSERT_EQ(q[0], 0);
    thread_mem_release();
    return 0;
}

/* The agent's thread-local block is a few pointers and counters: glibc
 * allocates and zeroes it whole on each thread's first touch (the agent is
 * dlopen'ed), so a large cache belongs in thread_mem.h, not in a __thread
 * array. This program links the agent's code: its PT_TLS is the agent's and
 * the tests'. */
static int tls_size(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    if (info->dlpi_name && info->dlpi_name[0])
        return 0; /* only the program itself */
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            *(size_t *)out = info->dlpi_phdr[i].p_memsz;
    return 1;
}

TEST(agent_thread_local_block_small) {
    size_t n = 0;
    dl_iterate_phdr(tls_size, &n);
    ASSERT(n > 0);
    ASSERT(n <= 1024);
    return 0;
}

/* A class name the agent could not resolve falls back to the runtime's; a
 * compiler-made one (an async local function's state machine) is resolved. */
TEST(agent_class_unresolved) {
    static const char *const failed[] = {"", "<class 0x7f00>", "<no class>",
                                         "System.Collections.Generic.List<<class 0x7f00: no metadata>>",
                                         "System.Collections.Generic.Dictionary<System.Int32, <class 0x10>>",
                                         "<element type 0x1d>[]", "<typedef 0x02000001>"};
    static const char *const named[] = {
        "System.Runtime.CompilerServices.AsyncTaskMethodBuilder+AsyncStateMachineBox<System.Threading.Tasks."
        "VoidTaskResult, System.Net.Sockets.SocketAsyncEventArgs+<<DnsConnectAsync>g__Core|113_0>d>",
        "<PrivateImplementationDetails>", "Ns.C+<>c__DisplayClass0_0", "System.Byte[]"};
    for (size_t i = 0; i < sizeof failed / sizeof failed[0]; i++)
        ASSERT_EQ(names_class_unresolved(failed[i], strlen(failed[i])), 1);
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        ASSERT_EQ(names_class_unresolved(named[i], strlen(named[i])), 0);
    return 0;
}
