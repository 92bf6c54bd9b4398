/* session.h: the contract between the dnprof front end and the agent it loads:
 * the profiler's CLSID, the runtime's environment variables (dnprof's own are
 * settings.h), and the session directory in
 * which every agent of a `dnprof run` says where its trace is (docs/design-notes.md#ipc: IPC
 * through files, because the profiled process may never shut down cleanly). */
#ifndef DNP_SESSION_H
#define DNP_SESSION_H

/* dnprof's profiler CLSID (CORECLR_PROFILER). */
#define DNP_CLSID_TEXT "{19F043F1-C707-4901-97F7-9F6179127630}"

/* Read by the runtime (.NET 8-10; the DOTNET_ names arrive only in .NET 11). */
#define DNP_ENV_ENABLE "CORECLR_ENABLE_PROFILING"
#define DNP_ENV_PROFILER "CORECLR_PROFILER"
#define DNP_ENV_PROFILER_PATH "CORECLR_PROFILER_PATH"

/* dnprof's own variables: every one is a row of
 * src/common/settings.def; its name is DNP_ENV_<row>, its row DNP_SET_<row>. */
#include "settings.h"

/* In the session directory each agent creates "agent.<pid>", a text file of
 * lines "key value": "pid", "trace" (path), "cmdline", then "started" once
 * recording began, or "error <one line>" if the agent stepped aside or stopped
 * recording, and "complete <events>" when the trace was closed at Shutdown.
 * "say <one line>" is a message for the person (src/agent/say.h): with a session
 * the agent writes its messages there, not on the program's stderr, and the
 * front end prints them. */
#define DNP_SESSION_FILE_PREFIX "agent."

#endif
