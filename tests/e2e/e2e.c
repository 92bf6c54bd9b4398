/* e2e.c: running the Scenarios program under dnprof and reading what it left. */
#include "e2e.h"
#include "json_check.h"
#include "nesting.h"
#include "settings.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *e2e_env(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        fprintf(stderr, "e2e: %s is not set; run the tests through ctest (tests/e2e/CMakeLists.txt)\n", name);
        return NULL;
    }
    return v;
}

int e2e_timeout_ms(void) {
    const char *v = getenv("DNPROF_E2E_SLOWDOWN");
    int k = v != NULL ? atoi(v) : 1;
    return 90000 * (k >= 1 && k <= 100 ? k : 1);
}

const char *e2e_work_seconds(const char *seconds, char *buf, size_t cap) {
    const char *v = getenv("DNPROF_E2E_WORK_SCALE");
    double k = v != NULL ? atof(v) : 1;
    if (!(k > 1 && k <= 100))
        return seconds;
    snprintf(buf, cap, "%g", atof(seconds) * k);
    return buf;
}

const char *e2e_dotnet(void) {
    const char *v = getenv("DNPROF_DOTNET");
    return v != NULL && *v != '\0' ? v : "dotnet";
}

const char *e2e_which(const char *name, const char *extra, char *buf, size_t cap) {
    if (strchr(name, '/') != NULL)
        return access(name, X_OK) == 0 && (size_t)snprintf(buf, cap, "%s", name) < cap ? buf : NULL;
    const char *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s:%s", path != NULL ? path : "", extra != NULL ? extra : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
        struct stat st;
        if ((size_t)snprintf(buf, cap, "%s/%s", d, name) < cap && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    if (ftw->level == 0)
        return 0; /* keep the directory itself */
    if (remove(path) != 0) {
        fprintf(stderr, "e2e: cannot remove '%s': %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int e2e_setup(e2e_run *r, const char *test) {
    memset(r, 0, sizeof *r);
    r->test = test;
    r->status = -1;
    const char *scratch = e2e_env("DNPROF_E2E_SCRATCH");
    if (scratch == NULL)
        return -1;
    if (mkdir(scratch, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "e2e: cannot create '%s': %s\n", scratch, strerror(errno));
        return -1;
    }
    if ((size_t)snprintf(r->dir, sizeof r->dir, "%s/%s", scratch, test) >= sizeof r->dir) {
        fprintf(stderr, "e2e: scratch path too long: '%s'\n", scratch);
        return -1;
    }
    if (mkdir(r->dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "e2e: cannot create '%s': %s\n", r->dir, strerror(errno));
        return -1;
    }
    if (nftw(r->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return -1;
    snprintf(r->trace, sizeof r->trace, "%s/%s.trace", r->dir, test);
    snprintf(r->out, sizeof r->out, "%s/stdout.txt", r->dir);
    snprintf(r->err, sizeof r->err, "%s/stderr.txt", r->dir);
    return 0;
}

/* The harness's own DNPROF_ variables (DNPROF_BIN, DNPROF_SCENARIOS, ...) are
 * not settings: the agent would say each is unknown (settings.def). The child
 * gets the settings only, and what a test passes in env. */
static void drop_harness_variables(void) {
    extern char **environ;
    for (size_t i = 0; environ[i] != NULL;) {
        const char *eq = strchr(environ[i], '=');
        size_t n = eq != NULL ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        char name[256];
        if (strncmp(environ[i], "DNPROF_", 7) != 0 || dnp_setting_find(environ[i], n) >= 0 || n >= sizeof name) {
            i++;
            continue;
        }
        memcpy(name, environ[i], n);
        name[n] = '\0';
        unsetenv(name); /* environ[i] is now the next one */
    }
}

/* In the child: never returns. */
static void child_exec(char *const argv[], const char *const env[], const char *dir,
                       const char *out_path, int out_pipe, const char *err_path) {
    setpgid(0, 0);
    if (dir != NULL && chdir(dir) != 0)
        _exit(126);
    int fd = out_pipe >= 0 ? out_pipe : open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
        _exit(126);
    int efd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (efd < 0 || dup2(efd, STDERR_FILENO) < 0)
        _exit(126);
    int nfd = open("/dev/null", O_RDONLY);
    if (nfd >= 0)
        dup2(nfd, STDIN_FILENO);
    drop_harness_variables();
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        char name[256];
        const char *eq = strchr(env[i], '=');
        size_t n = eq != NULL ? (size_t)(eq - env[i]) : strlen(env[i]);
        if (n >= sizeof name)
            _exit(126);
        memcpy(name, env[i], n);
        name[n] = '\0';
        if (eq != NULL)
            setenv(name, eq + 1, 1);
        else
            unsetenv(name);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "e2e: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
}

pid_t e2e_spawn(char *const argv[], const char *const env[], const char *dir,
                const char *out_path, int *out_fd, const char *err_path) {
    int fds[2] = {-1, -1};
    if (out_fd != NULL && pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "e2e: pipe: %s\n", strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "e2e: fork: %s\n", strerror(errno));
        if (out_fd != NULL) {
            close(fds[0]);
            close(fds[1]);
        }
        return -1;
    }
    if (pid == 0)
        child_exec(argv, env, dir, out_path, fds[1], err_path);
    setpgid(pid, pid); /* also here, so that a kill cannot miss the group */
    if (out_fd != NULL) {
        close(fds[1]);
        *out_fd = fds[0];
    }
    return pid;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The first child of pid (/proc/PID/task/PID/children), or 0. */
static pid_t first_child(pid_t pid) {
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    long child = 0;
    if (fgets(buf, sizeof buf, f))
        child = strtol(buf, NULL, 10);
    fclose(f);
    return (pid_t)child;
}

/* The first component under /tmp of path ("ci" for /tmp/ci/build), added to
 * the space-separated list in out if it is not there. */
static void tmp_top(const char *path, char *out, size_t cap) {
    if (!path || strncmp(path, "/tmp/", 5) != 0)
        return;
    char top[128];
    size_t n = strcspn(path + 5, "/");
    if (!n || n >= sizeof top)
        return;
    snprintf(top, sizeof top, " %.*s ", (int)n, path + 5);
    char padded[1024];
    snprintf(padded, sizeof padded, " %s ", out);
    if (!strstr(padded, top) && strlen(out) + n + 2 < cap)
        snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", *out ? " " : "", (int)n, path + 5);
}

static pid_t spawn_contained(char *const argv[], const char *const env[], const char *dir, const char *out_path,
                             const char *err_path, const char *hide, uid_t uid, pid_t *host_pid) {
    *host_pid = 0;
    /* A private TMPDIR (a tmpfs the host does not see at that path), and a
     * private /tmp too unless the build tree lives under /tmp (a clone in
     * /tmp: hiding /tmp would hide the program and its files). */
    /* Short: the runtime cuts a socket's path at what sun_path holds (108). One
     * empty directory of the host serves every test: each container mounts its
     * own tmpfs there, seen only inside it. */
    static const char tmp[] = "/var/tmp/dnprof-e2e-container";
    mkdir("/var/tmp", 01777);
    mkdir(tmp, 0700);
    const char *scratch = getenv("DNPROF_E2E_SCRATCH");
    int keep_tmp = (scratch && !strncmp(scratch, "/tmp/", 5)) || (dir && !strncmp(dir, "/tmp/", 5)) ||
                   (argv[1] && !strncmp(argv[1], "/tmp/", 5));
    const char *wrap[80] = {"unshare", "--pid", "--mount", "--fork", "--mount-proc", "sh", "-c",
                            "mount -t tmpfs tmpfs \"$1\" && export TMPDIR=\"$1\" && "
                            "{ [ \"$2\" = keep ] || mount -t tmpfs tmpfs /tmp; } && "
                            "mount --bind /dev/null \"$0\" && shift 2 && exec \"$@\"",
                            hide, tmp, keep_tmp ? "keep" : "hide"};
    size_t n = 11;
    char ruid[32], rgid[32], back[1024] = "";
    if (uid) {
        /* The user's own namespace, as rootless containers make: its root is
         * uid outside. /tmp is private whatever the build tree's place: the
         * directories of it under /tmp are bound back into the new one. */
        snprintf(ruid, sizeof ruid, "--reuid=%u", (unsigned)uid);
        snprintf(rgid, sizeof rgid, "--regid=%u", (unsigned)uid);
        tmp_top(scratch, back, sizeof back);
        tmp_top(dir, back, sizeof back);
        tmp_top(hide, back, sizeof back);
        for (size_t i = 0; argv[i]; i++)
            tmp_top(argv[i], back, sizeof back);
        const char *user[] = {"setpriv", ruid, rgid, "--clear-groups", "env", "HOME=/var/tmp", "unshare", "--user",
                              "--map-root-user", "--pid", "--mount", "--fork", "--mount-proc", "sh", "-c",
                              "mount -t tmpfs tmpfs \"$1\" && export TMPDIR=\"$1\" HOME=\"$1\" && mkdir \"$1/.host\" && "
                              "mount --bind /tmp \"$1/.host\" && mount -t tmpfs tmpfs /tmp && "
                              "for d in $2; do mkdir \"/tmp/$d\" && mount --bind \"$1/.host/$d\" \"/tmp/$d\" || exit 1; "
                              "done && mount --bind /dev/null \"$0\" && shift 2 && exec \"$@\"",
                              hide, tmp, back};
        n = sizeof user / sizeof user[0];
        memcpy(wrap, user, sizeof user);
    }
    for (size_t i = 0; argv[i] && n < 79; i++)
        wrap[n++] = argv[i];
    wrap[n] = NULL;
    pid_t pid = e2e_spawn((char *const *)wrap, env, dir, out_path, NULL, err_path);
    if (pid < 0)
        return -1;
    for (int waited = 0; waited < 10000 && !*host_pid; waited += 10) {
        *host_pid = first_child(pid);
        if (!*host_pid)
            sleep_ms(10);
    }
    if (!*host_pid) {
        fprintf(stderr, "e2e: unshare started no program within 10 s\n");
        e2e_show_file("unshare said", err_path);
        int st;
        e2e_wait(pid, 1000, &st);
        return -1;
    }
    return pid;
}

pid_t e2e_spawn_contained(char *const argv[], const char *const env[], const char *dir, const char *out_path,
                          const char *err_path, const char *hide, pid_t *host_pid) {
    return spawn_contained(argv, env, dir, out_path, err_path, hide, 0, host_pid);
}

pid_t e2e_spawn_contained_as(char *const argv[], const char *const env[], const char *dir, const char *out_path,
                             const char *err_path, const char *hide, uid_t uid, pid_t *host_pid) {
    return spawn_contained(argv, env, dir, out_path, err_path, hide, uid, host_pid);
}

int e2e_can_contain_as(uid_t uid) {
    char ruid[32], rgid[32];
    snprintf(ruid, sizeof ruid, "--reuid=%u", (unsigned)uid);
    snprintf(rgid, sizeof rgid, "--regid=%u", (unsigned)uid);
    const char *argv[] = {"setpriv", ruid, rgid, "--clear-groups", "unshare", "--user", "--map-root-user", "--pid",
                          "--mount", "--fork", "--mount-proc", "sh", "-c", "mount -t tmpfs tmpfs /tmp", NULL};
    pid_t pid = e2e_spawn((char *const *)argv, NULL, NULL, "/dev/null", NULL, "/dev/null");
    int st = -1;
    return pid > 0 && e2e_wait(pid, 10000, &st) == 0 && st == 0;
}

int e2e_can_contain(void) {
    static int can = -1;
    if (can < 0) {
        const char *argv[] = {"unshare", "--pid", "--mount", "--fork", "--mount-proc", "sh", "-c",
                              "mount -t tmpfs tmpfs /tmp", NULL};
        pid_t pid = e2e_spawn((char *const *)argv, NULL, NULL, "/dev/null", NULL, "/dev/null");
        int st = -1;
        can = pid > 0 && e2e_wait(pid, 10000, &st) == 0 && st == 0;
    }
    return can;
}

int e2e_attach_scenario(e2e_run *r, const char *const args[], const char *flag, char *out, size_t cap) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    char go[PATH_MAX + 8], err[PATH_MAX + 16], aerr[PATH_MAX + 16];
    snprintf(go, sizeof go, "%s/go", r->dir);
    snprintf(out, cap, "%s/scenario.out", r->dir);
    snprintf(err, sizeof err, "%s/scenario.err", r->dir);
    snprintf(aerr, sizeof aerr, "%s/attach.err", r->dir);
    const char *argv[32] = {e2e_dotnet(), dll};
    size_t n = 2;
    for (size_t i = 0; args[i] && n + 3 < sizeof argv / sizeof argv[0]; i++)
        argv[n++] = args[i];
    argv[n++] = "wait";
    argv[n++] = go;
    argv[n] = NULL;
    const char *env[] = {"CORECLR_ENABLE_PROFILING", "DOTNET_EnableDiagnostics=1", NULL};
    pid_t pid = dll && bin ? e2e_spawn((char *const *)argv, env, r->dir, out, NULL, err) : -1;
    int ready = 0, in = 0, status = -1, astatus = -1;
    for (int i = 0; i < 600 && pid > 0 && !ready; i++) {
        char *o = access(out, R_OK) == 0 ? e2e_read_file(out, NULL) : NULL;
        ready = o && strstr(o, "ready");
        free(o);
        if (!ready)
            sleep_ms(50);
    }
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *aargv[] = {bin, "attach", flag, "-q", "-o", r->trace, pidtext, NULL};
    pid_t apid = ready ? e2e_spawn((char *const *)aargv, NULL, r->dir, r->out, NULL, aerr) : -1;
    struct stat st; /* the agent is in once the trace exists and holds its first chunk */
    for (int i = 0; i < 400 && apid > 0 && !in; i++) {
        in = stat(r->trace, &st) == 0 && st.st_size > 0;
        if (!in)
            sleep_ms(50);
    }
    sleep_ms(300);
    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    if (pid > 0)
        e2e_wait(pid, E2E_TIMEOUT_MS, &status);
    if (apid > 0)
        e2e_wait(apid, 30000, &astatus);
    if (!ready || !in || status != 0) {
        fprintf(stderr, "e2e: attach %s: scenario ready %d, agent in %d, scenario status %d\n", flag, ready, in,
                status);
        e2e_show_file("scenario stderr", err);
        e2e_show_file("attach stderr", aerr);
        return -1;
    }
    return 0;
}

void e2e_forget_runtime_files(pid_t pid) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char pipe[64], socket[64];
    size_t np = (size_t)snprintf(pipe, sizeof pipe, "clr-debug-pipe-%d-", (int)pid);
    size_t ns = (size_t)snprintf(socket, sizeof socket, "dotnet-diagnostic-%d-", (int)pid);
    DIR *d = opendir(tmp);
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        if (!strncmp(e->d_name, pipe, np) || !strncmp(e->d_name, socket, ns)) {
            char path[PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", tmp, e->d_name) < sizeof path)
                unlink(path);
        }
    if (d)
        closedir(d);
}

void e2e_kill(pid_t pid) {
    if (pid <= 0)
        return;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    e2e_forget_runtime_files(pid);
}

int e2e_wait(pid_t pid, int timeout_ms, int *status) {
    int ws = 0;
    for (int waited = 0;; waited += 5) {
        pid_t w = waitpid(pid, &ws, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "e2e: waitpid %d: %s\n", (int)pid, strerror(errno));
            return -1;
        }
        if (waited >= timeout_ms) {
            fprintf(stderr, "e2e: process %d still running after %d ms: killed\n", (int)pid, timeout_ms);
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &ws, 0);
            e2e_forget_runtime_files(pid);
            *status = 128 + SIGKILL;
            return -1;
        }
        sleep_ms(5);
    }
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : -1;
    if (WIFSIGNALED(ws)) /* killed: its runtime could not remove its files */
        e2e_forget_runtime_files(pid);
    /* Anything the command left behind in its group goes with it. */
    kill(-pid, SIGKILL);
    return 0;
}

int e2e_exec(e2e_run *r, char *const argv[], const char *const env[]) {
    r->status = -1;
    pid_t pid = e2e_spawn(argv, env, r->dir, r->out, NULL, r->err);
    if (pid < 0)
        return -1;
    return e2e_wait(pid, E2E_TIMEOUT_MS, &r->status);
}

int e2e_run_dll(e2e_run *r, const char *dll, const char *arg, const char *events) {
    const char *bin = e2e_env("DNPROF_BIN");
    if (bin == NULL)
        return -1;
    const char *argv[16];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "run";
    argv[n++] = "--quiet";
    argv[n++] = "-o";
    argv[n++] = r->trace;
    if (events != NULL) {
        argv[n++] = "--events";
        argv[n++] = events;
    }
    argv[n++] = "--";
    argv[n++] = e2e_dotnet();
    argv[n++] = dll;
    if (arg != NULL)
        argv[n++] = arg;
    argv[n] = NULL;
    int rc = e2e_exec(r, (char *const *)argv, NULL);
    if (rc != 0)
        e2e_show_file("its stderr", r->err);
    return rc;
}

int e2e_run_scenario(e2e_run *r, const char *scenario, const char *events) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    return dll != NULL ? e2e_run_dll(r, dll, scenario, events) : -1;
}

int e2e_dnprof(e2e_run *r, const char *const args[]) {
    const char *bin = e2e_env("DNPROF_BIN");
    if (bin == NULL)
        return -1;
    const char *argv[32];
    int n = 0;
    argv[n++] = bin;
    for (size_t i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return e2e_exec(r, (char *const *)argv, NULL);
}

jv *e2e_dnprof_json(e2e_run *r, const char *const args[]) {
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        e2e_show_file("dnprof said", r->err);
        return NULL;
    }
    size_t len;
    char *text = e2e_read_file(r->out, &len);
    char err[256];
    jv *v = text ? json_parse(text, len, err, sizeof err) : NULL;
    if (text && !v)
        fprintf(stderr, "e2e: dnprof printed no JSON: %s\n", err);
    free(text);
    return v;
}

char *e2e_folded_of(e2e_run *r) {
    char folded[PATH_MAX + 16];
    snprintf(folded, sizeof folded, "%s.folded", r->trace);
    const char *convert[] = {"convert", "--format", "folded", "-o", folded, r->trace, NULL};
    if (e2e_dnprof(r, convert) != 0 || r->status != 0) {
        e2e_show_file("dnprof convert said", r->err);
        return NULL;
    }
    return e2e_read_file(folded, NULL);
}

int e2e_folded_has_frame(const char *stack, size_t len, const char *frame) {
    size_t n = strlen(frame);
    for (const char *p = stack; p + n <= stack + len; p++) {
        p = memmem(p, (size_t)(stack + len - p), frame, n);
        if (!p)
            return 0;
        if ((p == stack || p[-1] == ';') && (p + n == stack + len || p[n] == ';'))
            return 1;
    }
    return 0;
}

double e2e_folded_weight(const char *text, const char *frame) {
    double sum = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *space = memrchr(line, ' ', len);
        if (!space)
            return -1;
        if (e2e_folded_has_frame(line, (size_t)(space - line), frame))
            sum += strtod(space + 1, NULL);
        line = end ? end + 1 : NULL;
    }
    return sum;
}

int e2e_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "e2e: cannot write %s: %s\n", path, strerror(errno));
    return ok ? 0 : -1;
}

char *e2e_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "e2e: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *more = realloc(buf, cap * 2);
        if (more == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "e2e: no memory for '%s'\n", path);
        return NULL;
    }
    buf[n] = '\0';
    if (len != NULL)
        *len = n;
    return buf;
}

double e2e_said_number(const e2e_run *r, const char *key) {
    char *out = e2e_read_file(r->out, NULL);
    const char *at = out ? strstr(out, key) : NULL;
    double n = at ? strtod(at + strlen(key), NULL) : -1;
    free(out);
    return n;
}

void e2e_show_file(const char *what, const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[1024];
    int n = 0;
    fprintf(stderr, "  --- %s (%s) ---\n", what, path);
    while (fgets(line, sizeof line, f) != NULL && n++ < 20)
        fprintf(stderr, "  | %s%s", line, strchr(line, '\n') != NULL ? "" : "\n");
    fclose(f);
}

static const char *status_name(dnp_trace_status s) {
    switch (s) {
    case DNP_TRACE_COMPLETE: return "complete";
    case DNP_TRACE_OPEN: return "open";
    case DNP_TRACE_TRUNCATED: return "truncated";
    case DNP_TRACE_CORRUPT: return "corrupt";
    }
    return "?";
}

static dnp_trace *load_checked(const char *path, int kind, size_t min) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "e2e: no trace at '%s' (%s): did the agent load?\n", path, strerror(errno));
        return NULL;
    }
    dnp_trace *t = NULL;
    char err[256] = "";
    if (dnp_trace_load(path, &t, err, sizeof err) != 0) {
        fprintf(stderr, "e2e: cannot load '%s' (%lld bytes): %s\n", path, (long long)st.st_size, err);
        return NULL;
    }
    size_t n = kind < 0 ? t->nevents : e2e_count(t, (unsigned)kind);
    if (e2e_count(t, DNP_EV_Initialize) + e2e_count(t, DNP_EV_InitializeForAttach) == 0 || n < min) {
        fprintf(stderr, "e2e: '%s' was not recorded: %zu events (%zu %s, %zu wanted), %zu Initialize, status %s %s\n",
                path, t->nevents, n, kind < 0 ? "in all" : dnp_events[kind].name, min,
                e2e_count(t, DNP_EV_Initialize), status_name(t->status), t->status_text);
        for (size_t i = 0; i < t->nnotes && i < 5; i++)
            fprintf(stderr, "  note: %s\n", t->notes[i].text);
        dnp_trace_free(t);
        return NULL;
    }
    return t;
}

dnp_trace *e2e_load(const char *path) { return load_checked(path, -1, E2E_MIN_EVENTS); }

dnp_trace *e2e_load_of(const char *path, unsigned kind, size_t min) { return load_checked(path, (int)kind, min); }

const char *e2e_note(const dnp_trace *t, const char *text) {
    for (size_t i = 0; t && i < t->nnotes; i++)
        if (t->notes[i].text && strstr(t->notes[i].text, text))
            return t->notes[i].text;
    return NULL;
}

int e2e_value_index(unsigned kind, unsigned field) {
    if (kind >= DNP_EV_COUNT || field >= dnp_events[kind].nfields)
        return -1;
    int idx = 0;
    for (unsigned i = 0; i < field; i++)
        idx += dnp_field_nvalues[dnp_events[kind].field_types[i]];
    return idx;
}

uint64_t e2e_field(const dnp_trace_event *ev, unsigned field) {
    int idx = e2e_value_index(ev->kind, field);
    return idx >= 0 && idx < ev->nvalues ? ev->v[idx] : 0;
}

const char *e2e_field_name(const dnp_trace *t, const dnp_trace_event *ev, unsigned field) {
    int idx = e2e_value_index(ev->kind, field);
    if (idx < 0)
        return NULL;
    unsigned type = dnp_events[ev->kind].field_types[field];
    if (type == DNP_FT_STR)
        return idx < ev->nvalues ? dnp_trace_string(t, ev->v[idx]) : NULL;
    if (dnp_field_nvalues[type] == 2)
        return idx + 1 < ev->nvalues ? dnp_trace_string(t, ev->v[idx + 1]) : NULL;
    return NULL;
}

long e2e_find(const dnp_trace *t, unsigned kind, const char *name, size_t from) {
    for (size_t i = from; i < t->nevents; i++) {
        if (t->events[i].kind != kind)
            continue;
        if (!name)
            return (long)i;
        const char *n = e2e_field_name(t, &t->events[i], 0);
        if (n != NULL && strcmp(n, name) == 0)
            return (long)i;
    }
    return -1;
}

size_t e2e_count(const dnp_trace *t, unsigned kind) {
    size_t n = 0;
    for (size_t i = 0; i < t->nevents; i++)
        n += t->events[i].kind == kind;
    return n;
}

/* Prints up to max distinct names of kind containing hint ("" for any). */
static int show_names(const dnp_trace *t, unsigned kind, const char *hint, int max) {
    const char *shown[16];
    int n = 0;
    for (size_t i = 0; i < t->nevents && n < max && n < 16; i++) {
        if (t->events[i].kind != kind)
            continue;
        const char *name = e2e_field_name(t, &t->events[i], 0);
        if (name == NULL || strstr(name, hint) == NULL)
            continue;
        int seen = 0;
        for (int j = 0; j < n && !seen; j++)
            seen = strcmp(shown[j], name) == 0;
        if (!seen) {
            shown[n++] = name;
            fprintf(stderr, "    \"%s\"\n", name);
        }
    }
    return n;
}

long e2e_expect(const dnp_trace *t, unsigned kind, const char *name, const char *hint) {
    long i = e2e_find(t, kind, name, 0);
    if (i >= 0)
        return i;
    fprintf(stderr, "e2e: no %s named \"%s\" among %zu; names containing \"%s\":\n", dnp_events[kind].name, name,
            e2e_count(t, kind), hint);
    if (show_names(t, kind, hint, 12) == 0) {
        fprintf(stderr, "    (none; some others:)\n");
        show_names(t, kind, "", 12);
    }
    return -1;
}

int e2e_check_nesting(const dnp_trace *t, char *why, size_t whylen) {
    size_t nthreads = t->nthreads + 1;
    dnp_nest_state *nest = calloc(nthreads, sizeof *nest);
    if (nest == NULL) {
        snprintf(why, whylen, "no memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < t->nevents && rc == 0; i++) {
        const dnp_trace_event *ev = &t->events[i];
        if (ev->kind >= DNP_EV_COUNT || ev->thread >= nthreads)
            continue;
        dnp_nest_state *s = &nest[ev->thread];
        uint64_t unmatched = s->unmatched, skipped = s->skipped;
        dnp_nest_apply(s, ev->kind, ev->v);
        if (s->unmatched != unmatched || s->skipped != skipped) {
            const dnp_trace_thread *th = dnp_trace_thread_get(t, ev->thread);
            const char *name = e2e_field_name(t, ev, 0);
            snprintf(why, whylen, "thread %u (tid %llu): %s%s%s at event %zu of %zu (%llu ns) %s",
                     ev->thread, th != NULL ? (unsigned long long)th->os_tid : 0ULL,
                     dnp_events[ev->kind].name, name != NULL ? " " : "", name != NULL ? name : "", i,
                     t->nevents, (unsigned long long)ev->time_ns,
                     s->unmatched != unmatched ? "closes nothing that is open"
                                               : "closes an outer event while inner ones are open");
            rc = -1;
        }
    }
    for (size_t th = 0; th < nthreads && rc == 0; th++) {
        if (nest[th].depth != 0) {
            const dnp_trace_thread *tt = dnp_trace_thread_get(t, (uint32_t)th);
            snprintf(why, whylen, "thread %zu (tid %llu%s%s) ends at depth %d, last open: %s", th,
                     tt != NULL ? (unsigned long long)tt->os_tid : 0ULL, tt != NULL && tt->name ? ", " : "",
                     tt != NULL && tt->name ? tt->name : "", nest[th].depth,
                     nest[th].depth <= DNP_NEST_MAX ? dnp_events[nest[th].open[nest[th].depth - 1]].name : "?");
            rc = -1;
        }
    }
    free(nest);
    return rc;
}

int e2e_kind(const char *name) {
    for (int k = 0; k < DNP_EV_COUNT; k++)
        if (strcmp(dnp_events[k].name, name) == 0)
            return k;
    return -1;
}
