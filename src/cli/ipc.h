/* ipc.h: what `dnprof ps`, `attach`, `detach` and `snapshot` share, in four
 * files: the target process as /proc shows it (proc.c), the runtime's
 * diagnostics IPC (diag.c: dotnet/diagnostics
 * documentation/design-docs/ipc-protocol.md, RUNTIME-FACTS "Attach over the
 * diagnostics IPC"), the agent's own control socket (ctl.c,
 * src/agent/control.h), and the attach handshake built on them (handshake.c).
 *
 * Every function that fails puts one line in err naming the pid, the cause and
 * the fix, ready for error("%s", err). */
#ifndef DNP_CLI_IPC_H
#define DNP_CLI_IPC_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define IPC_ERR_MAX 768

/* ---- the process (/proc: proc.c) ---- */
typedef struct ipc_proc {
    pid_t pid;
    uid_t uid;
    int alive;
    char comm[64];            /* /proc/<pid>/comm */
    unsigned long long start; /* start time in clock ticks: the socket's disambiguation key */
    int has_coreclr;          /* libcoreclr.so is mapped (-1: maps unreadable) */
    int has_agent;            /* libdnprof.so is mapped (-1: maps unreadable) */
} ipc_proc;

/* Fills p from /proc. Returns 0 for a live process, -1 when there is none. */
int ipc_proc_read(pid_t pid, ipc_proc *p);

/* Whether a mapped file whose name ends in name ("/libdnprof.so") is in the
 * process's maps: 1, 0, or -1 when the maps cannot be read. */
int ipc_proc_maps_has(pid_t pid, const char *name);

/* The value of name in the process's environment, into out; 0 if set. */
int ipc_proc_env(pid_t pid, const char *name, char *out, size_t cap);

/* When the process started, in seconds since the epoch (its start time in
 * clock ticks after boot, and the boot time); 0 if unknown. */
long long ipc_proc_start_epoch(const ipc_proc *p);

/* Monotonic milliseconds. */
long long ipc_now_ms(void);

/* ---- the diagnostics IPC (diag.c) ---- */
/* A connected unix stream socket to path, or -1 with errno. */
int ipc_unix_connect(const char *path);
/* Sends all n bytes (no SIGPIPE); 0 or -1. */
int ipc_write_all(int fd, const void *buf, size_t n);

/* The runtime's socket for pid: $TMPDIR of the process, ours, or /tmp;
 * dotnet-diagnostic-<pid>-<key>-socket, the key matching the process's start
 * time when several are there. 0, or -1 when there is none. */
int ipc_socket_path(pid_t pid, char *out, size_t cap);

/* Connects to pid's diagnostics socket; -1 with err saying why: no such
 * process, not .NET, diagnostics disabled, another user's, not answering. */
int ipc_connect(pid_t pid, char *err, size_t errlen);

typedef struct ipc_process_info {
    uint64_t pid;
    char cmdline[4096];
    char os[64], arch[64];
    char entry[256];   /* managed entry point assembly (GetProcessInfo2), "" if unknown */
    char version[64];  /* runtime version (GetProcessInfo2), "" if unknown */
} ipc_process_info;

/* Process / GetProcessInfo2 (GetProcessInfo on older runtimes). */
int ipc_process_info_get(pid_t pid, ipc_process_info *out, char *err, size_t errlen);

/* Profiler / AttachProfiler with the blob. *hr gets the runtime's answer when
 * one came (0 returned); -1 when none came (err says why). */
int ipc_attach_profiler(pid_t pid, uint32_t timeout_ms, const char *clsid, const char *agent_path,
                        const void *blob, size_t blob_len, uint32_t *hr, char *err, size_t errlen);

/* The one-line explanation of an AttachProfiler HRESULT for pid, with the fix. */
void ipc_attach_hr_text(uint32_t hr, pid_t pid, const char *agent_path, char *out, size_t cap);

/* ---- the agent's control socket (ctl.c) ---- */
/* The private control directory for processes of uid: /tmp/dnprof-<uid>.
 * create: made (0700, given to uid when we are root) if missing. Checked to be
 * a directory of uid that no one else can enter. 0, or -1 with err. */
int ctl_dir(uid_t uid, int create, char *out, size_t cap, char *err, size_t errlen);

/* Connects to the agent attached to pid. -1 with err (no agent attached, ...). */
int ctl_connect(pid_t pid, char *err, size_t errlen);

/* Sends one command line (a command and a path at most). 0 or -1. */
int ctl_send(int fd, const char *cmd);

/* Reads one line (without its newline) within timeout_ms (<0: no limit).
 * Returns 1 with the line, 0 at end of file, -1 on timeout, error or a signal. */
int ctl_read_line(int fd, char *line, size_t cap, int timeout_ms);

/* The trace the agent in pid records into (the "status" command), into out. */
int ctl_status(int fd, char *out, size_t cap, char *err, size_t errlen);

/* Asks the agent on fd to detach, waits for "detached" (the trace complete)
 * and then for the runtime to unload the agent, timeout_ms in all. 0, 1 when
 * the process ended before the agent detached (its trace was completed at
 * Shutdown, or cut short), -1 with err. *events: what the agent recorded. */
int ctl_detach(pid_t pid, int fd, int timeout_ms, uint64_t *events, char *err, size_t errlen);

/* Waits until libdnprof.so is no longer mapped in pid (or pid is gone), up to
 * timeout_ms. 0 when unloaded, -1 on timeout. */
int ctl_wait_unloaded(pid_t pid, int timeout_ms);

/* Whether the control socket at path belongs to a live agent of pid: 1 when it
 * answers a connection; 0 when it is stale: its process is gone, it is older
 * than the process now holding its pid (a reused pid), or it refuses
 * connections (no listener) and is older than a few seconds; -1 when it
 * cannot be told (another user's, say). */
int ctl_socket_live(const char *path, pid_t pid);

/* Removes the stale control sockets (and their logs) of dead or reused pids
 * from the control directory of uid. Returns how many it removed. */
int ctl_sweep(uid_t uid);

/* Prints what the agent said while attaching (its log in the control directory
 * dir), unless quiet, and removes the log. */
void ctl_agent_log(const char *dir, pid_t pid, int quiet);

/* The same from byte *offset on (NULL: the start), advancing *offset past the
 * lines printed; the log is removed only when remove. An attached agent keeps
 * writing its messages there until it detaches (never into the program's
 * stderr): dnprof attach prints them after the attach and at the end. */
void ctl_agent_log_from(const char *dir, pid_t pid, int quiet, long *offset, int remove);

/* ---- the attach handshake (handshake.c): dnprof attach and snapshot ---- */
struct dnp_attach_blob;

/* Where an agent that is attached writes: given (NULL: def), made absolute, in
 * a directory this user can write. 0, or -1 after saying why, naming noun
 * ("trace", "snapshot"). */
int handshake_output(const char *given, const char *def, const char *noun, char *out, size_t cap);

/* The trace of an agent attached without an output of the user's (blob->output
 * empty): kept aside in the control directory (dir, pid), removed by its user. */
#define HANDSHAKE_BYPRODUCT_FMT "%s/snapshot.%ld.trace"

/* Loads the agent into pid (of uid) with blob, whose trigger pid and control
 * directory it fills in: checks that pid answers on its diagnostics socket,
 * finds the agent, makes the control directory, removes an earlier agent's log
 * and sends AttachProfiler, waiting up to timeout_s for the agent's
 * InitializeForAttach. 0 once the agent is in (its log in the control
 * directory, for ctl_agent_log), or -1 after saying why. */
int handshake_attach(pid_t pid, uid_t uid, uint32_t timeout_s, struct dnp_attach_blob *blob);

/* The control socket of the agent just attached to pid, or -1 after saying why. */
int handshake_connect(pid_t pid);

/* Says how a detach went (ctl_detach's rc: 1 when pid exited first, then
 * "dnprof: pid N exited <exited>"), unless quiet and well. */
void handshake_detached(pid_t pid, int rc, int quiet, const char *exited);

#endif
