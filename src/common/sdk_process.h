/* sdk_process.h: which processes are the .NET SDK's own. `dnprof run --
 * dotnet run` (or test, watch) starts the SDK, which builds with MSBuild and
 * the compiler and then starts the program: the user asked about the program.
 * One rule, read by the front end (is the command such a one?) and by the
 * agent (is this process the SDK's?), so that the two never disagree. */
#ifndef DNP_SDK_PROCESS_H
#define DNP_SDK_PROCESS_H

#include <stddef.h>

/* argv (NULL-terminated, argv[0] the program) is the dotnet host running one
 * of the SDK's commands that builds and then starts the user's program:
 * `dotnet run`, `dotnet test`, `dotnet watch`. 1 or 0. */
int dnp_sdk_starts_program(char *const argv[]);

#define DNP_SDK_NOT_HOST 0 /* not the dotnet host: an apphost, the program itself */
#define DNP_SDK_COMMAND (-1) /* the host running an SDK command (run, build, --info, ...) */

/* What the dotnet host of this command line runs, exe being the process's
 * executable: DNP_SDK_NOT_HOST, DNP_SDK_COMMAND, or the index in argv of the
 * .dll it runs (`dotnet app.dll`, `dotnet exec [options] app.dll`), whose
 * place then tells (dnp_sdk_next_root), as an apphost's own does. */
int dnp_sdk_host_runs(const char *exe, int argc, char *const argv[]);

/* Where the SDK's folder may begin in path (absolute, resolved): the length
 * of the next prefix at or after from that "/sdk/" follows, the candidate root
 * of a .NET install (<root>/sdk/<version>/ holds MSBuild, the compiler, the
 * test platform's console; <root>/dotnet is its host), or 0 for none. The
 * caller checks that <root>/dotnet is there. */
size_t dnp_sdk_next_root(const char *path, size_t from);

#endif
