/* cmd_ps.c: `dnprof ps`: the .NET processes this user can attach to, found by
 * their diagnostic sockets and /proc, each asked for its process information
 * over the diagnostics IPC. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_blob.h"
#include "cli.h"
#include "ipc.h"

static void ps_help(void) {
    fputs("usage: dnprof ps [options]\n"
          "\n"
          "Lists the running .NET processes you can attach to (dnprof attach PID): those of\n"
          "your user with a diagnostics socket, and as root those in containers too. For\n"
          "each: its pid (the host's), its name (the managed entry assembly, or the\n"
          "executable), whether a dnprof agent is in it, its pid inside its container\n"
          "(\"-\" when it is in none), and its command line. attach, snapshot and detach\n"
          "take the pid of the first column (docs/containers.md).\n"
          "\n"
          "options:\n"
          "  -h, --help   print this help\n"
          "\n"
          "A .NET process that is not listed was started with DOTNET_EnableDiagnostics=0,\n"
          "belongs to another user, or keeps its socket in a TMPDIR dnprof cannot see.\n",
          stdout);
}

/* pid into pids (n of them), once. */
static void add_pid(pid_t *pids, size_t *n, pid_t pid) {
    size_t i = 0;
    while (i < *n && pids[i] != pid)
        i++;
    if (i == *n)
        pids[(*n)++] = pid;
}

/* Adds the .NET processes that live in other containers (another mount
 * namespace: their sockets are in their own /tmp) to pids. */
static void scan_containers(pid_t *pids, size_t *n, size_t cap) {
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < cap) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end)
            continue;
        ipc_where w;
        if (ipc_where_of((pid_t)pid, &w) != 0 || !w.container || ipc_proc_maps_has((pid_t)pid, "/libcoreclr.so") != 1)
            continue;
        add_pid(pids, n, (pid_t)pid);
    }
    closedir(d);
}

static int cmp_pid(const void *a, const void *b) {
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Adds the pids of the diagnostic sockets in dir to pids (no duplicates). */
static void scan_dir(const char *dir, pid_t *pids, size_t *n, size_t cap) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < cap) {
        const char *prefix = "dotnet-diagnostic-";
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + strlen(prefix), &end, 10);
        if (pid <= 0 || *end != '-')
            continue;
        add_pid(pids, n, (pid_t)pid);
    }
    closedir(d);
}

int cmd_ps(int argc, char **argv) {
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': ps_help(); return 0;
        default: return cli_bad_option("ps", argv, c);
        }
    }
    if (optind < argc)
        return usage_error("ps", "unexpected argument '%s'", argv[optind]);

    ctl_sweep(geteuid()); /* the sockets that killed agents left behind */
    static pid_t pids[4096];
    size_t n = 0;
    const char *tmp = getenv("TMPDIR");
    if (tmp && *tmp && strcmp(tmp, "/tmp") != 0)
        scan_dir(tmp, pids, &n, sizeof pids / sizeof pids[0]);
    scan_dir("/tmp", pids, &n, sizeof pids / sizeof pids[0]);
    scan_containers(pids, &n, sizeof pids / sizeof pids[0]);
    qsort(pids, n, sizeof pids[0], cmp_pid);

    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        ipc_proc p;
        if (ipc_proc_read(pids[i], &p) < 0 || !p.alive)
            continue; /* a stale socket of a process that is gone */
        if (p.uid != geteuid() && geteuid() != 0)
            continue;
        if (pids[i] == getpid())
            continue;
        ipc_process_info info;
        char err[IPC_ERR_MAX];
        if (ipc_process_info_get(pids[i], &info, err, sizeof err) < 0)
            continue; /* not answering: not a process one can attach to now */
        if (!shown++)
            printf("%-8s %-24s %-8s %-9s %s\n", "PID", "NAME", "DNPROF", "CONTAINER", "COMMAND");
        const char *name = info.entry[0] ? info.entry : p.comm;
        const char *agent = p.has_agent != 1 ? "" : "loaded";
        char sock[PATH_MAX];
        if (p.has_agent == 1 && ctl_socket_path(pids[i], p.uid, DNP_CONTROL_SOCKET_FMT, sock, sizeof sock) == 0 &&
            ctl_socket_live(sock, pids[i]) == 1)
            agent = "attached";
        ipc_where w;
        ipc_where_of(pids[i], &w);
        char inside[24] = "-";
        if (w.container || w.inner != pids[i])
            snprintf(inside, sizeof inside, "pid %d", (int)w.inner);
        printf("%-8d %-24s %-8s %-9s ", (int)pids[i], name, agent, inside);
        char started[sizeof info.cmdline];
        cli_put_text(stdout, ipc_proc_cmdline(pids[i], started, sizeof started) == 0 ? started : info.cmdline, 0);
        putchar('\n');
    }
    if (!shown)
        fprintf(stderr, "dnprof: no .NET process of yours with a diagnostics socket is running\n");
    return 0;
}
