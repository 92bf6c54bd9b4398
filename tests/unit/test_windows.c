/* test_windows.c: the agent's windows (src/agent/windows.c) without a
 * runtime: events added to a window come out in a complete trace of its own,
 * with the strings they name copied under the window's own numbers, and a
 * Window event first. (tests/e2e/test_windows.c runs the real thing.) */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "recorder.h"
#include "test.h"
#include "trace_reader.h"
#include "windows.h"

static int flushed;
static void flush_hook(void) {
    flushed++;
    uint32_t type = rec_string("Scenarios.Late", 14);
    uint64_t v[DNP_NV_AllocSite] = {type, 0, 1, 2, 204800, 200, 2000};
    window_event(DNP_EV_AllocSite, v, DNP_NV_AllocSite);
}

TEST(windows_event_strings_and_file) {
    char dir[] = "/tmp/dnprof-unit-windows.XXXXXX";
    ASSERT_NE(mkdtemp(dir), NULL);
    agent_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.every_ms = 600000; /* no window ends by itself: the stop closes the one */
    snprintf(cfg.window_dir, sizeof cfg.window_dir, "%s", dir);
    cfg.window_keep = 4;
    window_register_flush(flush_hook);
    uint32_t type = rec_string("Scenarios.Blob", 14), stack = rec_string("A::B\nC::D", 9);
    uint64_t before[DNP_NV_AllocSite] = {type, stack, 1, 3, 307200, 288, 3000};
    window_event(DNP_EV_AllocSite, before, DNP_NV_AllocSite); /* no window open yet: left out */
    ASSERT_EQ(windows_start(&cfg, "dotnet app.dll", "CoreCLR test", 0), 0);
    uint64_t v[DNP_NV_AllocSite] = {type, stack, 1, 5, 512000, 480, 5000};
    window_event(DNP_EV_AllocSite, v, DNP_NV_AllocSite);
    window_event(DNP_EV_AllocSite, v, DNP_NV_AllocSite);
    windows_stop();
    ASSERT_EQ(flushed, 1);

    char path[512];
    snprintf(path, sizeof path, "%s/window-%ld-000001.trace", dir, (long)getpid());
    dnp_trace *t = NULL;
    char err[256];
    ASSERT_EQ(dnp_trace_load(path, &t, err, sizeof err), 0);
    ASSERT_EQ(t->status, DNP_TRACE_COMPLETE);
    ASSERT_STREQ(t->cmdline, "dotnet app.dll");
    ASSERT_EQ(t->nevents, 4);
    ASSERT_EQ(t->events[0].kind, DNP_EV_Window);
    ASSERT_EQ(t->events[0].v[DNP_V(Window, index)], 1);
    ASSERT_EQ(t->events[0].v[DNP_V(Window, dropped)], 0);
    ASSERT_GT(t->events[0].v[DNP_V(Window, durationNs)], 0);
    ASSERT_EQ(t->events[0].v[DNP_V(Window, startNs)], t->start_realtime_ns);
    size_t blobs = 0, late = 0;
    for (size_t i = 1; i < t->nevents; i++) {
        const dnp_trace_event *e = &t->events[i];
        ASSERT_EQ(e->kind, DNP_EV_AllocSite);
        const char *name = dnp_trace_string(t, e->v[DNP_V(AllocSite, typeName)]);
        ASSERT_NE(name, NULL);
        if (!strcmp(name, "Scenarios.Blob")) {
            blobs++;
            ASSERT_STREQ(dnp_trace_string(t, e->v[DNP_V(AllocSite, stack)]), "A::B\nC::D");
            ASSERT_EQ(e->v[DNP_V(AllocSite, samples)], 5);
            ASSERT_EQ(e->v[DNP_V(AllocSite, weightBytes)], 512000);
        } else {
            ASSERT_STREQ(name, "Scenarios.Late");
            ASSERT_EQ(e->v[DNP_V(AllocSite, stack)], 0);
            late++;
        }
    }
    ASSERT_EQ(blobs, 2);
    ASSERT_EQ(late, 1);
    dnp_trace_free(t);
    /* after the stop, nothing goes anywhere */
    window_event(DNP_EV_AllocSite, v, DNP_NV_AllocSite);
    unlink(path);
    ASSERT_EQ(rmdir(dir), 0);
    return 0;
}
