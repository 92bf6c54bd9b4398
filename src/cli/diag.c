/* diag.c: the runtime's diagnostics IPC spoken in C (ipc.h): finding a
 * process's socket, GetProcessInfo and AttachProfiler.
 *
 * Diagnostics IPC: one command per connection on a unix socket. A message is a
 * 20-byte header, "DOTNET_IPC_V1\0", u16 total size, u8 command set, u8 command
 * id, u16 reserved, then the payload; little-endian; strings are a u32 count of
 * UTF-16 units with the NUL, then the units. The reply's command set is 0xFF:
 * id 0x00 is OK, 0xFF an error with an i32 HRESULT. */
#include "ipc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach_blob.h"
#include "cli.h"
#include "trace_format.h"
#include "fdio.h"
#include "utf16.h"
#include "settings.h"

#define IPC_MAGIC "DOTNET_IPC_V1"
#define IPC_HEADER_SIZE 20
#define IPC_SET_PROFILER 0x03
#define IPC_SET_PROCESS 0x04
#define IPC_SET_SERVER 0xFF
#define IPC_PROFILER_ATTACH 0x01
#define IPC_PROCESS_INFO 0x00
#define IPC_PROCESS_INFO2 0x04
#define IPC_OK 0x00
#define IPC_ERROR 0xFF
#define IPC_E_UNKNOWN_COMMAND 0x80131385u

/* ---- finding the socket ---- */

/* The socket of pid in dir: the one whose key is the process's start time, else
 * the newest made since the process started (started: seconds since the epoch,
 * 0 if unknown). A socket older than the process is a dead runtime's whose pid
 * was used again: it is never chosen. *exact tells which. 0, or -1 when dir
 * holds none. */
static int find_in_dir(const char *dir, pid_t pid, unsigned long long start, long long started,
                       char *out, size_t cap, int *exact) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char prefix[64];
    int plen = snprintf(prefix, sizeof prefix, "dotnet-diagnostic-%d-", (int)pid);
    struct dirent *e;
    time_t newest = 0;
    int found = -1;
    *exact = 0;
    while ((e = readdir(d)) != NULL && !*exact) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        unsigned long long key = strtoull(e->d_name + plen, &end, 10);
        if (strcmp(end, "-socket") != 0)
            continue;
        char full[PATH_MAX];
        struct stat st;
        if (snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= (int)sizeof full ||
            stat(full, &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        *exact = start && key == start;
        if (!*exact && started > 0 && (long long)st.st_mtime + 2 < started)
            continue;
        if (found < 0 || *exact || st.st_mtime > newest) {
            snprintf(out, cap, "%s", full);
            newest = st.st_mtime;
            found = 0;
        }
    }
    closedir(d);
    return found;
}

int ipc_socket_path(pid_t pid, char *out, size_t cap) {
    ipc_proc p;
    ipc_where w;
    if (ipc_proc_read(pid, &p) < 0)
        return -1;
    ipc_where_of(pid, &w);
    char theirs[PATH_MAX] = "";
    const char *dirs[3];
    int n = 0;
    if (ipc_proc_env(pid, "TMPDIR", theirs, sizeof theirs) == 0 && theirs[0])
        dirs[n++] = theirs;
    const char *ours = getenv("TMPDIR");
    if (ours && *ours && !w.container)
        dirs[n++] = ours;
    dirs[n++] = "/tmp";
    long long started = ipc_proc_start_epoch(&p);
    int found = -1;
    for (int i = 0; i < n; i++) {
        char candidate[PATH_MAX], dir[PATH_MAX];
        int exact = 0;
        if (ipc_outside(&w, dirs[i], dir, sizeof dir) < 0 ||
            find_in_dir(dir, w.inner, p.start, started, candidate, sizeof candidate, &exact) < 0)
            continue;
        /* a key that is not this process's start time, in a process not known to map the
         * runtime: a socket of another PID namespace's process of that pid (a container's
         * pid 1 with the host's /tmp), or of a dead one's; a single-file app (the runtime
         * inside its executable) is found by its exact key */
        if (!exact && p.start && p.has_coreclr != 1)
            continue;
        if (found < 0 || exact)
            snprintf(out, cap, "%s", candidate);
        found = 0;
        if (exact)
            break;
    }
    return found;
}

int ipc_unix_connect(const char *path) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    int via = -1; /* an O_PATH descriptor, for a path too long for sun_path */
    if (strlen(path) >= sizeof addr.sun_path) {
        via = open(path, O_PATH | O_CLOEXEC);
        if (via < 0)
            return -1;
        snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d", via);
    } else {
        memcpy(addr.sun_path, path, strlen(path) + 1);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        fd = -1;
        errno = e;
    }
    if (via >= 0) {
        int e = errno;
        close(via);
        errno = e;
    }
    return fd;
}

static const char *disabling_var(pid_t pid, char *value, size_t cap) {
    static const char *names[] = {"DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics",
                                  "DOTNET_EnableDiagnostics_IPC", "COMPlus_EnableDiagnostics_IPC"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (ipc_proc_env(pid, names[i], value, cap) == 0 && strcmp(value, "0") == 0)
            return names[i];
    return NULL;
}

/* The process's program is a Native AOT one (program_check.c). */
static int native_aot(pid_t pid) {
    char exe[64];
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    return cli_is_native_aot(exe);
}

int ipc_connect(pid_t pid, char *err, size_t errlen) {
    ipc_proc p;
    if (ipc_proc_read(pid, &p) < 0) {
        snprintf(err, errlen, "no such process: %d (dnprof ps lists the .NET processes you can attach to)",
                 (int)pid);
        return -1;
    }
    if (p.uid != geteuid() && geteuid() != 0) {
        snprintf(err, errlen,
                 "pid %d (%s) belongs to another user (uid %u): a profiler can attach only to "
                 "processes of its own user; run dnprof as that user",
                 (int)pid, p.comm, (unsigned)p.uid);
        return -1;
    }
    ipc_where w;
    if ((ipc_where_of(pid, &w) < 0 || (w.container && access(w.root, X_OK) != 0)) &&
        (p.has_coreclr == 1 || (p.has_coreclr < 0 && w.inner != pid))) { /* .NET, or unreadable in a container */
        ipc_denied_text(pid, p.comm, w.denied ? "ns" : "root", w.denied ? EACCES : errno, err, errlen);
        return -1;
    }
    char path[PATH_MAX];
    if (ipc_socket_path(pid, path, sizeof path) < 0) {
        char value[64];
        const char *var = disabling_var(pid, value, sizeof value);
        if (var)
            snprintf(err, errlen,
                     "pid %d (%s) runs .NET with %s=0: its diagnostics channel, through which a "
                     "profiler attaches, is off; restart it without %s, or start it with dnprof run",
                     (int)pid, p.comm, var, var);
        else if (p.has_coreclr == 1 && w.container)
            snprintf(err, errlen,
                     "pid %d (%s, pid %d in its container) runs .NET but its /tmp (%s/tmp) holds no "
                     "diagnostics socket: it was started with DOTNET_EnableDiagnostics=0, or its TMPDIR "
                     "is not readable from here; restart it without that setting",
                     (int)pid, p.comm, (int)w.inner, w.root);
        else if (p.has_coreclr == 1)
            snprintf(err, errlen,
                     "pid %d (%s) runs .NET but has no diagnostics socket (started with "
                     "DOTNET_EnableDiagnostics=0, or a TMPDIR dnprof cannot see); restart it without "
                     "that setting, or start it with dnprof run",
                     (int)pid, p.comm);
        else if (p.has_coreclr < 0)
            snprintf(err, errlen,
                     "pid %d (%s) has no .NET diagnostics socket: it is not a .NET process, or one "
                     "started with DOTNET_EnableDiagnostics=0 (its memory maps are not readable to "
                     "tell which); dnprof ps lists the .NET processes you can attach to",
                     (int)pid, p.comm);
        else if (native_aot(pid))
            snprintf(err, errlen,
                     "pid %d (%s) is a Native AOT program: it carries no CoreCLR, so no profiler can attach "
                     "to it; profile the same program published without PublishAot (docs/agent.md#native-aot)",
                     (int)pid, p.comm);
        else
            snprintf(err, errlen,
                     "pid %d (%s) is not a .NET process (no CoreCLR runtime in it); dnprof ps lists "
                     "the .NET processes you can attach to",
                     (int)pid, p.comm);
        return -1;
    }
    int fd = ipc_unix_connect(path);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM)
            snprintf(err, errlen,
                     "pid %d (%s): permission denied on its diagnostics socket '%s': it belongs to "
                     "another user; run dnprof as that user",
                     (int)pid, p.comm, path);
        else
            snprintf(err, errlen,
                     "pid %d (%s) does not answer on its diagnostics socket '%s' (%s): the runtime is "
                     "not listening (exiting, or hung)",
                     (int)pid, p.comm, path, strerror(e));
        return -1;
    }
    return fd;
}

/* ---- messages ---- */

typedef struct msg {
    uint8_t buf[65535];
    size_t len;
    int overflow;
} msg;

static void msg_put(msg *m, const void *p, size_t n) {
    if (m->len + n > sizeof m->buf) {
        m->overflow = 1;
        return;
    }
    memcpy(m->buf + m->len, p, n);
    m->len += n;
}

static void msg_u32(msg *m, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    msg_put(m, b, 4);
}

static void msg_u16(msg *m, uint16_t v) {
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    msg_put(m, b, 2);
}

/* A UTF-8 string as the protocol's string: count with the NUL, UTF-16LE. */
static void msg_string(msg *m, const char *s) {
    static char16_t units[sizeof m->buf / 2];
    size_t n = dnp_utf8_to_utf16(s, strlen(s), units, sizeof units / sizeof units[0]);
    msg_u32(m, (uint32_t)n + 1);
    for (size_t i = 0; i <= n; i++) /* its NUL too */
        msg_u16(m, units[i]);
}

static void msg_header(msg *m, uint8_t set, uint8_t id) {
    m->len = 0;
    m->overflow = 0;
    msg_put(m, IPC_MAGIC, sizeof IPC_MAGIC); /* 14 bytes with the NUL */
    msg_u16(m, 0);                           /* size, set by msg_finish */
    uint8_t b[4] = {set, id, 0, 0};
    msg_put(m, b, 4);
}

static int msg_finish(msg *m) {
    if (m->overflow || m->len > 0xFFFF)
        return -1;
    m->buf[14] = (uint8_t)m->len;
    m->buf[15] = (uint8_t)(m->len >> 8);
    return 0;
}

int ipc_write_all(int fd, const void *buf, size_t n) {
    return dnp_send_all(fd, buf, n);
}

static int read_all(int fd, uint8_t *p, size_t n, long long deadline) {
    while (n) {
        long long left = deadline - ipc_now_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, left > 60000 ? 60000 : (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t got = recv(fd, p, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got == 0)
            errno = ECONNRESET;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* Sends m on a fresh connection to pid and reads the reply into r (payload in
 * r->buf after the header). Returns 0 with *ok set, or -1 with err. */
static int transact(pid_t pid, msg *m, msg *r, int *ok, int timeout_ms, char *err, size_t errlen) {
    if (msg_finish(m) < 0) {
        snprintf(err, errlen, "the request to pid %d is too large for the diagnostics IPC", (int)pid);
        return -1;
    }
    int fd = ipc_connect(pid, err, errlen);
    if (fd < 0)
        return -1;
    long long deadline = ipc_now_ms() + timeout_ms;
    if (ipc_write_all(fd, m->buf, m->len) < 0 || read_all(fd, r->buf, IPC_HEADER_SIZE, deadline) < 0) {
        int e = errno;
        close(fd);
        if (e == ETIMEDOUT)
            snprintf(err, errlen,
                     "pid %d did not answer within %d s; the runtime may be busy or suspended "
                     "(try again, or a longer --timeout)",
                     (int)pid, timeout_ms / 1000);
        else
            snprintf(err, errlen, "pid %d closed its diagnostics connection (%s): the process may have exited",
                     (int)pid, strerror(e));
        return -1;
    }
    size_t total = (size_t)r->buf[14] | (size_t)r->buf[15] << 8;
    if (memcmp(r->buf, IPC_MAGIC, sizeof IPC_MAGIC) != 0 || total < IPC_HEADER_SIZE) {
        close(fd);
        snprintf(err, errlen, "pid %d answered something that is not the diagnostics IPC", (int)pid);
        return -1;
    }
    if (read_all(fd, r->buf + IPC_HEADER_SIZE, total - IPC_HEADER_SIZE, deadline) < 0) {
        close(fd);
        snprintf(err, errlen, "pid %d's answer was cut short", (int)pid);
        return -1;
    }
    close(fd);
    r->len = total;
    *ok = r->buf[16] == IPC_SET_SERVER && r->buf[17] == IPC_OK;
    return 0;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads a protocol string at *off into out as UTF-8; -1 when it runs past len. */
static int get_string(const uint8_t *b, size_t len, size_t *off, char *out, size_t cap) {
    out[0] = 0;
    if (*off + 4 > len)
        return -1;
    uint32_t n = get_u32(b + *off);
    *off += 4;
    if (n > (len - *off) / 2)
        return -1;
    static char16_t units[sizeof ((msg *)0)->buf / 2];
    for (uint32_t i = 0; i < n; i++)
        units[i] = (char16_t)(b[*off + 2 * i] | b[*off + 2 * i + 1] << 8);
    dnp_utf16_to_utf8(units, dnp_utf16_len(units, n), out, cap);
    *off += (size_t)n * 2;
    return 0;
}

int ipc_process_info_get(pid_t pid, ipc_process_info *out, char *err, size_t errlen) {
    static msg m, r;
    memset(out, 0, sizeof *out);
    for (int v2 = 1; v2 >= 0; v2--) {
        msg_header(&m, IPC_SET_PROCESS, v2 ? IPC_PROCESS_INFO2 : IPC_PROCESS_INFO);
        int ok = 0;
        if (transact(pid, &m, &r, &ok, 5000, err, errlen) < 0)
            return -1;
        if (!ok) {
            uint32_t hr = r.len >= IPC_HEADER_SIZE + 4 ? get_u32(r.buf + IPC_HEADER_SIZE) : 0;
            if (v2 && hr == IPC_E_UNKNOWN_COMMAND)
                continue; /* an older runtime: GetProcessInfo */
            snprintf(err, errlen, "pid %d refused GetProcessInfo (0x%08x)", (int)pid, hr);
            return -1;
        }
        size_t off = IPC_HEADER_SIZE;
        if (r.len < off + 8 + 16) {
            snprintf(err, errlen, "pid %d's process information is cut short", (int)pid);
            return -1;
        }
        out->pid = (uint64_t)get_u32(r.buf + off) | (uint64_t)get_u32(r.buf + off + 4) << 32;
        off += 8 + 16; /* pid, runtime instance cookie */
        if (get_string(r.buf, r.len, &off, out->cmdline, sizeof out->cmdline) < 0 ||
            get_string(r.buf, r.len, &off, out->os, sizeof out->os) < 0 ||
            get_string(r.buf, r.len, &off, out->arch, sizeof out->arch) < 0) {
            snprintf(err, errlen, "pid %d's process information is malformed", (int)pid);
            return -1;
        }
        if (v2) {
            get_string(r.buf, r.len, &off, out->entry, sizeof out->entry);
            get_string(r.buf, r.len, &off, out->version, sizeof out->version);
            out->info2 = 1;
        }
        return 0;
    }
    return -1;
}

/* "{19F043F1-C707-4901-97F7-9F6179127630}" as the 16 bytes of a GUID in memory. */
static int guid_bytes(const char *text, uint8_t out[16]) {
    unsigned d1, d2, d3, d4[8];
    if (sscanf(text, "{%8x-%4x-%4x-%2x%2x-%2x%2x%2x%2x%2x%2x}", &d1, &d2, &d3, &d4[0], &d4[1],
               &d4[2], &d4[3], &d4[4], &d4[5], &d4[6], &d4[7]) != 11)
        return -1;
    out[0] = (uint8_t)d1;
    out[1] = (uint8_t)(d1 >> 8);
    out[2] = (uint8_t)(d1 >> 16);
    out[3] = (uint8_t)(d1 >> 24);
    out[4] = (uint8_t)d2;
    out[5] = (uint8_t)(d2 >> 8);
    out[6] = (uint8_t)d3;
    out[7] = (uint8_t)(d3 >> 8);
    for (int i = 0; i < 8; i++)
        out[8 + i] = (uint8_t)d4[i];
    return 0;
}

int ipc_attach_profiler(pid_t pid, uint32_t timeout_ms, const char *clsid, const char *agent_path,
                        const void *blob, size_t blob_len, uint32_t *hr, char *err, size_t errlen) {
    static msg m, r;
    uint8_t guid[16];
    if (guid_bytes(clsid, guid) < 0) {
        snprintf(err, errlen, "bad CLSID '%s'", clsid);
        return -1;
    }
    msg_header(&m, IPC_SET_PROFILER, IPC_PROFILER_ATTACH);
    msg_u32(&m, timeout_ms);
    msg_put(&m, guid, 16);
    msg_string(&m, agent_path);
    msg_u32(&m, (uint32_t)blob_len);
    msg_put(&m, blob, blob_len);
    int ok = 0;
    /* The runtime loads the agent, runs InitializeForAttach and
     * ProfilerAttachComplete before it answers. */
    if (transact(pid, &m, &r, &ok, (int)timeout_ms + 30000, err, errlen) < 0)
        return -1;
    *hr = r.len >= IPC_HEADER_SIZE + 4 ? get_u32(r.buf + IPC_HEADER_SIZE) : (ok ? 0 : 0x80004005u);
    if (ok && (int32_t)*hr < 0)
        *hr = 0;
    return 0;
}

/* What an AttachProfiler HRESULT means, and the fix: each text takes the pid
 * (twice at most) and nothing else. */
static const struct {
    uint32_t hr;
    const char *text;
} hr_texts[] = {
    {0x8013136Au, /* CORPROF_E_PROFILER_ALREADY_ACTIVE */
     "pid %d already has a profiler loaded (CORPROF_E_PROFILER_ALREADY_ACTIVE): the "
     "runtime takes one at a time; detach it first (dnprof detach %d for dnprof's), or "
     "if it was loaded at start-up it stays until the program exits"},
    {0x80131367u, /* CORPROF_E_PROFILER_DETACHING */
     "pid %d is still detaching a profiler (CORPROF_E_PROFILER_DETACHING); try again in "
     "a few seconds"},
    {0x80131379u, /* CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC */
     "the runtime of pid %d timed out waiting for a background GC to finish before "
     "loading the agent; try again, or give a longer --timeout"},
    {0x80131371u, /* CORPROF_E_RUNTIME_UNINITIALIZED */
     "the runtime of pid %d is still starting up; try again in a moment"},
    {0x8013135Bu, /* not yet available */
     "the runtime of pid %d is still starting up; try again in a moment"},
    {0x80131385u, /* unknown command */
     "the runtime of pid %d does not know AttachProfiler (.NET 5 or later is needed); "
     "start the program with dnprof run instead"},
    {0x80131384u, /* bad encoding */
     "the runtime of pid %d could not read the attach request (bad encoding)"},
    {0x80070057u, /* E_INVALIDARG: the agent refused the request */
     "the agent refused the attach request (E_INVALIDARG); the program's stderr says "
     "why: use the dnprof that came with this agent"},
};

void ipc_attach_hr_text(uint32_t hr, pid_t pid, const char *agent_path, char *out, size_t cap) {
    for (size_t i = 0; i < sizeof hr_texts / sizeof hr_texts[0]; i++)
        if (hr_texts[i].hr == hr) {
            snprintf(out, cap, hr_texts[i].text, (int)pid, (int)pid);
            return;
        }
    if (hr == 0x8007007Eu || hr == 0x80070002u || hr == 0x80070005u) {
        /* ERROR_MOD_NOT_FOUND, ERROR_FILE_NOT_FOUND, E_ACCESSDENIED */
        snprintf(out, cap,
                 "the runtime of pid %d could not load the agent '%s' (0x%08x): the process must be "
                 "able to read it; put it where that user can (" DNP_ENV_AGENT ")",
                 (int)pid, agent_path, hr);
        return;
    }
    const char *name = dnp_hresult_name(hr);
    snprintf(out, cap, "the runtime of pid %d did not attach the agent: %s 0x%08x", (int)pid,
             name ? name : "error", hr);
}
