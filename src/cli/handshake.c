/* handshake.c: loading the agent into a running program, as `dnprof attach` and
 * `dnprof snapshot` do (ipc.h, docs/design-notes.md#attach): where the agent
 * writes, the runtime's AttachProfiler with the configuration blob, the agent's
 * log in the control directory, and its control socket. */
#include "ipc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attach_blob.h"
#include "cli.h"
#include "session.h"

int handshake_output(const char *given, const char *def, const char *noun, char *out, size_t cap) {
    const char *path = given ? given : def;
    if (cli_abs_path(path, out, cap) != 0 || strlen(out) >= DNP_BLOB_PATH_MAX)
        return error("cannot use the %s path '%s': it is too long", noun, path);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/'); /* out is absolute: it has one */
    slash[slash == dir] = 0;
    if (access(dir, W_OK | X_OK) != 0)
        return error("cannot write the %s in '%s': %s%s", noun, cli_short_path(dir), strerror(errno),
                     given ? "" : " (use -o to put it elsewhere)");
    return 0;
}

/* Sends AttachProfiler; 0 once the agent is in, or -1 after saying why (with
 * what the agent logged when it refused). */
static int request(pid_t pid, uint32_t timeout_s, const dnp_attach_blob *blob) {
    char err[IPC_ERR_MAX];
    cli_agent agent;
    if (cli_agent_find(&agent, err, sizeof err) != 0)
        return error("%s", err);
    static uint8_t wire[DNP_BLOB_MAX];
    long wire_len = dnp_attach_blob_encode(blob, wire, sizeof wire);
    if (wire_len < 0)
        return error("the attach request does not fit (--events or -o too long)");
    uint32_t hr = 0;
    if (ipc_attach_profiler(pid, timeout_s * 1000, DNP_CLSID_TEXT, agent.path, wire, (size_t)wire_len, &hr,
                            err, sizeof err) < 0)
        return error("%s", err);
    if (hr != 0) {
        ctl_agent_log(blob->control_dir, pid, 0); /* the agent's reasons */
        ipc_attach_hr_text(hr, pid, agent.path, err, sizeof err);
        return error("%s", err);
    }
    return 0;
}

int handshake_attach(pid_t pid, uid_t uid, uint32_t timeout_s, dnp_attach_blob *blob) {
    char err[IPC_ERR_MAX];
    int probe = ipc_connect(pid, err, sizeof err);
    if (probe < 0)
        return error("%s", err);
    close(probe);
    blob->trigger_pid = (uint32_t)getpid();
    if (ctl_dir(uid, 1, blob->control_dir, sizeof blob->control_dir, err, sizeof err) < 0)
        return error("%s", err);
    if (!blob->output[0]) /* a by-product, kept aside in the control directory */
        snprintf(blob->output, sizeof blob->output, HANDSHAKE_BYPRODUCT_FMT, blob->control_dir, (long)pid);
    char log[256];
    snprintf(log, sizeof log, DNP_CONTROL_LOG_FMT, blob->control_dir, (long)pid);
    unlink(log); /* an earlier agent's */
    return request(pid, timeout_s, blob);
}

int handshake_connect(pid_t pid) {
    char err[IPC_ERR_MAX];
    int fd = ctl_connect(pid, err, sizeof err);
    if (fd < 0)
        return error("the agent is in pid %d, but its control socket does not answer: %s", (int)pid, err);
    return fd;
}

void handshake_detached(pid_t pid, int rc, int quiet, const char *exited) {
    if (rc == 1)
        fprintf(stderr, "dnprof: pid %d exited %s\n", (int)pid, exited);
    else if (!quiet)
        fprintf(stderr, "dnprof: detached from pid %d; the agent is unloaded\n", (int)pid);
}
