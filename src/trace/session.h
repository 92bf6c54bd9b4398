/* session.h: the contract between the dnprof front end and the agent it loads:
 * the profiler's CLSID, the environment variables, and the session directory in
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

/* Read by the agent. */
#define DNP_ENV_EVENTS "DNPROF_EVENTS"   /* families or a hex mask, families.h */
#define DNP_ENV_OUTPUT "DNPROF_OUTPUT"   /* trace path; %p becomes the pid */
#define DNP_ENV_ROOT_PID "DNPROF_ROOT_PID" /* the process DNPROF_OUTPUT is for */
#define DNP_ENV_SESSION "DNPROF_SESSION" /* a directory: agents register there */
#define DNP_ENV_FLUSH_MS "DNPROF_FLUSH_MS" /* background flush period, default 50 */
#define DNP_ENV_STDERR "DNPROF_STDERR"     /* "1": messages on stderr even with a session */
/* Method enter/leave (dnprof run --calls): */
#define DNP_ENV_CALLS "DNPROF_CALLS"       /* "1": counts and times; "args": with arguments */
#define DNP_ENV_INCLUDE "DNPROF_INCLUDE"   /* comma-separated globs of functions to hook */
#define DNP_ENV_EXCLUDE "DNPROF_EXCLUDE"   /* comma-separated globs of functions not to hook */
#define DNP_ENV_ALL_CODE "DNPROF_ALL_CODE" /* "1": framework code too (no inlining, no R2R) */
/* Exception stories (dnprof run --exceptions): */
#define DNP_ENV_EXC_STACKS "DNPROF_EXCEPTION_STACKS" /* "1": a stack snapshot at each throw */
/* Sampled allocations (dnprof run --alloc): */
#define DNP_ENV_HEAP_AT "DNPROF_HEAP_AT"         /* "exit": a heap snapshot at Shutdown (docs/heap.md) */
#define DNP_ENV_HEAP_OUTPUT "DNPROF_HEAP_OUTPUT" /* its path; %p: the pid */
#define DNP_ENV_ALLOC "DNPROF_ALLOC" /* "1": sampled allocations by type and stack */
#define DNP_ENV_ALLOC_SOURCE "DNPROF_ALLOC_SOURCE" /* "tick": AllocationTick even on .NET 10 */
#define DNP_ENV_ALLOC_EACH "DNPROF_ALLOC_EACH" /* "1": an AllocSample per sample, not AllocSites */

/* Sampling (dnprof run --sample): */
#define DNP_ENV_SAMPLE "DNPROF_SAMPLE"           /* "cpu", "wall" or "suspend" */
#define DNP_ENV_SAMPLE_RATE "DNPROF_SAMPLE_RATE" /* samples per second per thread, default 100 */

/* In the session directory each agent creates "agent.<pid>", a text file of
 * lines "key value": "pid", "trace" (path), "cmdline", then "started" once
 * recording began, or "error <one line>" if the agent stepped aside or stopped
 * recording, and "complete <events>" when the trace was closed at Shutdown.
 * "say <one line>" is a message for the person (src/agent/say.h): with a session
 * the agent writes its messages there, not on the program's stderr, and the
 * front end prints them. */
#define DNP_SESSION_FILE_PREFIX "agent."

#endif
