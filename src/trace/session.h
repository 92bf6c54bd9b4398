/* session.h: the contract between the dnprof front end and the agent it loads:
 * the profiler's CLSID, the environment variables, and the session directory in
 * which every agent of a `dnprof run` says where its trace is (seed 004: IPC
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
#define DNP_ENV_FLUSH_MS "DNPROF_FLUSH_MS" /* background flush period, default 200 */
/* Method enter/leave (dnprof run --calls): */
#define DNP_ENV_CALLS "DNPROF_CALLS"       /* "1": counts and times; "args": with arguments */
#define DNP_ENV_INCLUDE "DNPROF_INCLUDE"   /* comma-separated globs of functions to hook */
#define DNP_ENV_EXCLUDE "DNPROF_EXCLUDE"   /* comma-separated globs of functions not to hook */
#define DNP_ENV_ALL_CODE "DNPROF_ALL_CODE" /* "1": framework code too (no inlining, no R2R) */
/* Exception stories (dnprof run --exceptions): */
#define DNP_ENV_EXC_STACKS "DNPROF_EXCEPTION_STACKS" /* "1": a stack snapshot at each throw */

/* Sampling (dnprof run --sample): */
#define DNP_ENV_SAMPLE "DNPROF_SAMPLE"           /* "cpu", "wall" or "suspend" */
#define DNP_ENV_SAMPLE_RATE "DNPROF_SAMPLE_RATE" /* samples per second per thread, default 100 */

/* In the session directory each agent creates "agent.<pid>", a text file of
 * lines "key value": "pid", "trace" (path), "cmdline", then "started" once
 * recording began, or "error <one line>" if the agent stepped aside, and
 * "complete <events>" when the trace was closed at Shutdown. */
#define DNP_SESSION_FILE_PREFIX "agent."

#endif
