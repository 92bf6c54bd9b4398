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

/* The process's command line as it was started (/proc/PID/cmdline, spaces
 * between the arguments), into out; 0, or -1 when it cannot be read. The
 * runtime's own (ipc_process_info) names the entry assembly's .dll instead of
 * a single-file app's executable. */
int ipc_proc_cmdline(pid_t pid, char *out, size_t cap);

/* When the process started, in seconds since the epoch (its start time in
 * clock ticks after boot, and the boot time); 0 if unknown. */
long long ipc_proc_start_epoch(const ipc_proc *p);

/* Monotonic milliseconds. */
long long ipc_now_ms(void);

/* ---- a process in another container (container.c, docs/containers.md) ---- */
typedef struct ipc_where {
    pid_t pid;      /* as this dnprof sees it (the host's) */
    pid_t inner;    /* as the process sees itself: its sockets and logs are named by it */
    int container;  /* another mount namespace: its files are under root */
    int denied;     /* its namespaces could not be read (another user's, no CAP_SYS_PTRACE) */
    char root[32];  /* "/proc/<pid>/root" in a container, "" otherwise */
    int userns;     /* another user namespace: it numbers its users its own way */
    uid_t uid;      /* its effective uid and gid as seen from here; -1 unknown */
    gid_t gid;
    uid_t uid_in;   /* its effective uid as it sees it: names its control directory */
} ipc_where;

/* Where pid lives. 0, or -1 when its namespaces cannot be read (w then says
 * "here", which is right for every process of one's own outside containers). */
int ipc_where_of(pid_t pid, ipc_where *w);

/* uid (from here) as the process sees it: its uid_in when uid is its user. */
uid_t ipc_uid_inside(const ipc_where *w, uid_t uid);

/* on: files made from now on (on this thread) belong to the process's user,
 * which a file system mounted in its user namespace requires; off: to
 * ourselves again. Nothing outside a user namespace, or when not root. */
void ipc_as_owner(const ipc_where *w, int on);

/* The path, from here, of the file the process sees at inside. 0, or -1 when
 * it does not fit. */
int ipc_outside(const ipc_where *w, const char *inside, char *out, size_t cap);

/* The path as the process sees it of outside (a path from ipc_outside). */
const char *ipc_inside(const ipc_where *w, const char *outside);

/* The agent's path as the process will load it: agent itself outside
 * containers; else a copy made in dir_inside (the control directory, as the
 * process sees it). 0, or -1 with err naming the cause and the fix. */
int ipc_place_agent(const ipc_where *w, const char *agent, const char *dir_inside, char *out, size_t cap,
                    char *err, size_t errlen);

/* ---- before the agent goes in (container_check.c) ---- */
/* The ELF machine (EM_*) of the 64-bit ELF file open at fd, its e_type in
 * *type; 0 when it is not one. */
unsigned ipc_elf_machine_fd(int fd, int *type);
/* The machine of pid's executable (/proc/PID/exe), 0 if unknown. */
unsigned ipc_elf_machine_of(pid_t pid);
/* --agent-path: path, as the process whose root is root ("" for ours) sees
 * it, is a 64-bit ELF shared object for machine (0: any) that exports
 * DllGetClassObject. 0, or -1 with err in one line, its fix included. */
int ipc_agent_path_check(const char *root, const char *path, unsigned machine, char *err, size_t errlen);
/* Whether a runtime of version (GetProcessInfo2's, "" when not told; info2 0
 * when the runtime knows only GetProcessInfo: .NET 5 or older) is older than
 * .NET 8, which dnprof attaches to; unknown versions pass. */
int ipc_runtime_too_old(const char *version, int info2);
/* The one-line error for a runtime that ipc_runtime_too_old refuses. */
void ipc_runtime_old_text(pid_t pid, const char *comm, const char *version, char *out, size_t cap);
/* No right to look into pid's namespaces ("ns") or container ("root"),
 * errno e: the line with its fix (root, CAP_SYS_PTRACE). */
void ipc_denied_text(pid_t pid, const char *comm, const char *what, int e, char *out, size_t cap);
/* The agent cannot go into dir_inside of pid's container (errno e, or a
 * noexec mount): the line with its fix. */
void ipc_place_text(pid_t pid, const char *dir_inside, int e, int noexec, char *out, size_t cap);
/* Whether the file system of dir (from here) is mounted noexec. */
int ipc_noexec(const char *dir);

/* Moves the file name in the directory dirfd (one in a container, held open)
 * to dest (here), copying across file systems. 0, or -1 with err. */
int ipc_fetch_at(int dirfd, const char *name, const char *dest, char *err, size_t errlen);

/* ---- the diagnostics IPC (diag.c) ---- */
/* A connected unix stream socket to path, or -1 with errno. A path longer than
 * a socket address holds (one through /proc/<pid>/root) is reached through an
 * O_PATH descriptor of it. */
int ipc_unix_connect(const char *path);
/* Sends all n bytes (no SIGPIPE); 0 or -1. */
int ipc_write_all(int fd, const void *buf, size_t n);

/* The runtime's socket for pid: $TMPDIR of the process, ours (outside
 * containers), or /tmp, through /proc/<pid>/root in a container;
 * dotnet-diagnostic-<pid inside>-<key>-socket, the key matching the process's
 * start time when several are there. 0, or -1 when there is none. */
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
    int info2;         /* the runtime answered GetProcessInfo2 (.NET 6 and later) */
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
/* The private control directory for processes of uid: /tmp/dnprof-<uid> as
 * they see it, into out as seen from here (through w's root; w NULL: here).
 * create: made (0700, given to uid when we are root) if missing. Checked to be
 * a directory of uid that no one else can enter. 0, or -1 with err. */
int ctl_dir(const ipc_where *w, uid_t uid, int create, char *out, size_t cap, char *err, size_t errlen);

/* The path from here of the agent's socket in pid (of uid): fmt, one of
 * DNP_CONTROL_SOCKET_FMT and DNP_CONTROL_RUN_SOCKET_FMT, in pid's control
 * directory and with its pid as it sees itself. 0, or -1 when there is no
 * control directory. */
int ctl_socket_path(pid_t pid, uid_t uid, const char *fmt, char *out, size_t cap);

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
 * Shutdown, or cut short), 2 when the trace is complete but the agent stays
 * loaded, inert (the runtime refuses to unload it after a ReJIT, --trace),
 * -1 with err. *events: what the agent recorded. */
int ctl_detach(pid_t pid, int fd, int timeout_ms, uint64_t *events, char *err, size_t errlen);

/* An agent in pid (of uid) that is detaching (an earlier snapshot's, a
 * detach asked for): waits up to timeout_ms for the runtime to unload it.
 * 1 when it was detaching and is gone, 0 when none was detaching, -1 when it
 * is still there. */
int ctl_wait_detaching(pid_t pid, uid_t uid, int timeout_ms);

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
 * dir, as pid sees it), unless quiet, and removes the log. */
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
/* The agent as the process sees it (--agent-path: already there, checked,
 * neither copied nor removed), for the next handshake_attach; NULL: dnprof's
 * own, copied into a container. */
void handshake_agent_path(const char *inside);

/* Where the agent in pid (of uid) is to write a file for dest: dest itself;
 * in a container, NAME.<pid inside> in the control directory there, as the
 * process sees it (handshake_bring_back brings it out). 0, or -1 after saying
 * why. */
int handshake_written_path(pid_t pid, uid_t uid, const char *dest, const char *name, char *out, size_t cap);

/* Removes written, a file the agent in pid wrote (a by-product). */
void handshake_remove(pid_t pid, const char *written);

/* A process in a container wrote written (a path as it sees it, the blob's
 * output or a snapshot's) in its own file system: moved to dest. Outside
 * containers, nothing to do. 0, or -1 after saying why. */
int handshake_bring_back(pid_t pid, const char *written, const char *dest);

/* Where this dnprof reads the windows (--every, dnprof top) the agent in pid
 * writes into blob's window directory: that directory; in a container, the
 * one handshake_attach chose there, through /proc/PID/root. 0, or -1 when the
 * path does not fit. */
int handshake_windows_dir(pid_t pid, const struct dnp_attach_blob *blob, char *out, size_t cap);

/* The control socket of the agent just attached to pid, or -1 after saying why. */
int handshake_connect(pid_t pid);

/* Says how a detach went (ctl_detach's rc: 1 when pid exited first, then
 * "dnprof: pid N exited <exited>"; 2, the agent stays loaded, inert: said even
 * when quiet), unless quiet and well. */
void handshake_detached(pid_t pid, int rc, int quiet, const char *exited);

#endif
