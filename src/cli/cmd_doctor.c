/* cmd_doctor.c: `dnprof doctor`: "why didn't my profiler load?"
 * (docs/design-notes.md#why-not-loaded) as a command. It retraces the chain
 * environment -> agent file -> dlopen -> DllGetClassObject, and with a program
 * runs it the way `run` does, with PAL_OUTPUTDEBUGSTRING=1 so that the runtime
 * writes its own reason for a failed load to stderr, and reads the verdict. */
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "families.h"
#include "session.h"
#include "trace_reader.h"

enum { OK, WARN, FAIL };

typedef struct doctor {
    int fails;       /* that stop `dnprof run` too */
    int shell_fails; /* of this shell's CORECLR_ variables, which `run` replaces */
    int in_shell;
    cli_agent agent;
    int have_agent;
} doctor;

static void say(doctor *d, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(doctor *d, int level, const char *fmt, ...) {
    static const char *const words[] = {"ok  ", "warn", "FAIL"};
    va_list ap;
    printf("%s  ", words[level]);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    if (level == FAIL && d->in_shell)
        d->shell_fails++;
    else if (level == FAIL)
        d->fails++;
}

/* ---- the agent file ---- */

static const char *machine_name(unsigned m) {
    switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "arm64";
    case EM_386: return "x86";
    case EM_ARM: return "arm32";
    case EM_RISCV: return "riscv";
    default: return NULL;
    }
}

/* Reads an ELF header's class, type and machine; 0, or -1 when not ELF. */
static int read_elf(const char *path, unsigned *cls, unsigned *type, unsigned *machine) {
    unsigned char h[EI_NIDENT + 4];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, h, sizeof h);
    close(fd);
    if (n < (ssize_t)sizeof h || memcmp(h, ELFMAG, SELFMAG) != 0)
        return -1;
    *cls = h[EI_CLASS];
    int le = h[EI_DATA] == ELFDATA2LSB;
    *type = le ? (unsigned)(h[16] | h[17] << 8) : (unsigned)(h[16] << 8 | h[17]);
    *machine = le ? (unsigned)(h[18] | h[19] << 8) : (unsigned)(h[18] << 8 | h[19]);
    return 0;
}

/* The word of the command that is an ELF program for machine (the program a
 * qemu-user emulator runs: `qemu-aarch64 ./App`), or NULL. */
static const char *program_for(char **prog, unsigned machine, char *buf, size_t len) {
    for (size_t i = 0; prog && prog[i]; i++) {
        unsigned cls, type, m;
        const char *path = prog[i];
        if (!strchr(path, '/') && (i > 0 || cli_find_in_path(path, buf, len) != 0))
            continue;
        if (!strchr(path, '/'))
            path = buf;
        if (read_elf(path, &cls, &type, &m) == 0 && m == machine && (type == ET_EXEC || type == ET_DYN))
            return prog[i];
    }
    return NULL;
}

/* An agent for another machine than this one: right for a program of that
 * machine run under emulation (docs/arm64.md), which the run below tries;
 * else a FAIL. It cannot be dlopen()ed here. */
static void check_foreign_agent(doctor *d, char **prog, unsigned cls, unsigned machine, unsigned my_machine) {
    const char *m = machine_name(machine), *mine = machine_name(my_machine);
    char buf[PATH_MAX];
    const char *app = cls == ELFCLASS64 ? program_for(prog, machine, buf, sizeof buf) : NULL;
    if (!app) {
        say(d, FAIL, "the agent is built for %s%s, this machine runs %s: use an agent built for this machine, "
            "or run a program built for %s under emulation ('dnprof doctor -- qemu-%s ./App'; docs/arm64.md)",
            m ? m : "another machine", cls == ELFCLASS32 ? " (32-bit)" : "", mine ? mine : "another",
            m ? m : "its machine", machine == EM_AARCH64 ? "aarch64" : "<machine>");
        return;
    }
    say(d, OK, "the agent is built for %s, as the program %s is: this machine runs %s, so the program runs "
        "under emulation (timings are the emulator's, docs/arm64.md)", m ? m : "another machine", app,
        mine ? mine : "another");
    say(d, OK, "the agent cannot be loaded here to check its exports (another machine's code): the run below "
        "shows whether the program's runtime loads it");
}

static void check_agent(doctor *d, char **prog) {
    char err[1024];
    if (cli_agent_find(&d->agent, err, sizeof err) != 0) {
        say(d, FAIL, "%s", err);
        return;
    }
    d->have_agent = 1;
    const char *path = d->agent.path;
    say(d, OK, "agent: %s (%s)", path, d->agent.how);

    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        say(d, FAIL, "the agent %s is not a regular file", path);
        return;
    }
    if (access(path, R_OK) != 0) {
        say(d, FAIL, "the agent %s is not readable: %s (chmod a+r it)", path, strerror(errno));
        return;
    }
    char size[32];
    say(d, OK, "the agent is a readable regular file (%s)", cli_fmt_bytes((uint64_t)st.st_size, size));

    unsigned cls, type, machine, my_cls, my_type, my_machine;
    if (read_elf(path, &cls, &type, &machine) != 0) {
        say(d, FAIL, "the agent %s is not an ELF file: it is not a Linux shared library (rebuild dnprof)", path);
        return;
    }
    if (read_elf("/proc/self/exe", &my_cls, &my_type, &my_machine) == 0 &&
        (cls != my_cls || machine != my_machine)) {
        check_foreign_agent(d, prog, cls, machine, my_machine);
        return;
    }
    if (type != ET_DYN) {
        say(d, FAIL, "the agent %s is an ELF file but not a shared object (rebuild dnprof)", path);
        return;
    }
    const char *m = machine_name(machine);
    say(d, OK, "the agent is an ELF shared object for %s", m ? m : "this machine");

    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        say(d, FAIL, "the agent does not load: %s (check 'ldd %s' for a missing library)", why ? why : "?",
            path);
        return;
    }
    if (!dlsym(h, "DllGetClassObject")) {
        say(d, FAIL, "the agent loads but exports no DllGetClassObject: it is not a profiler (rebuild dnprof)");
        return;
    }
    /* Left loaded on purpose: its destructors belong to a process that ran it. */
    say(d, OK, "the agent loads (dlopen RTLD_NOW) and exports DllGetClassObject");
}

/* ---- the environment ---- */

static int is_clsid(const char *s) {
    static const char shape[] = "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}";
    if (strlen(s) != sizeof shape - 1)
        return 0;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == 'X' ? !isxdigit((unsigned char)s[i]) : s[i] != shape[i])
            return 0;
    return 1;
}

/* The CORECLR_PROFILER_PATH variable the runtime reads first (profilinghelper.cpp). */
static const char *effective_path_var(void) {
#if defined(__aarch64__)
    if (getenv("CORECLR_PROFILER_PATH_ARM64"))
        return "CORECLR_PROFILER_PATH_ARM64";
#endif
#if defined(__LP64__)
    if (getenv("CORECLR_PROFILER_PATH_64"))
        return "CORECLR_PROFILER_PATH_64";
#else
    if (getenv("CORECLR_PROFILER_PATH_32"))
        return "CORECLR_PROFILER_PATH_32";
#endif
    return getenv(DNP_ENV_PROFILER_PATH) ? DNP_ENV_PROFILER_PATH : NULL;
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void check_environment(doctor *d, int have_program) {
    const char *enable = getenv(DNP_ENV_ENABLE), *clsid = getenv(DNP_ENV_PROFILER);
    const char *path_var = effective_path_var();
    const char *path = path_var ? getenv(path_var) : NULL;
    const char *note = have_program ? "; dnprof run and doctor set their own" : "";

    d->in_shell = 1;
    if (!enable && !clsid && !path_var) {
        say(d, OK, "no CORECLR_ profiler variables are set in this shell (dnprof run sets them for its "
                   "program; eval \"$(dnprof env)\" sets them here)");
    } else {
        char *end = NULL;
        unsigned long v = enable ? strtoul(enable, &end, 16) : 0;
        if (!enable)
            say(d, FAIL, "%s is not set, so the runtime loads no profiler (export %s=1)%s", DNP_ENV_ENABLE,
                DNP_ENV_ENABLE, note);
        else if (!*enable || *end || v == 0)
            say(d, FAIL, "%s=%s: the runtime reads this as 0 and loads no profiler (export %s=1)%s", DNP_ENV_ENABLE,
                enable, DNP_ENV_ENABLE, note);
        else
            say(d, OK, "%s=%s", DNP_ENV_ENABLE, enable);

        int ours = d->have_agent && path && same_file(path, d->agent.path);
        if (!clsid)
            say(d, FAIL, "%s is not set: the runtime needs the profiler's CLSID (dnprof's is %s)%s",
                DNP_ENV_PROFILER, DNP_CLSID_TEXT, note);
        else if (!is_clsid(clsid))
            say(d, FAIL, "%s=%s is not a CLSID {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX} (ProgIDs do not work on "
                         "Linux; dnprof's is %s)%s",
                DNP_ENV_PROFILER, clsid, DNP_CLSID_TEXT, note);
        else if (ours && strcasecmp(clsid, DNP_CLSID_TEXT) != 0)
            say(d, FAIL, "%s=%s, but the agent is dnprof's, which answers only to %s%s", DNP_ENV_PROFILER,
                clsid, DNP_CLSID_TEXT, note);
        else
            say(d, OK, "%s=%s%s", DNP_ENV_PROFILER, clsid,
                strcasecmp(clsid, DNP_CLSID_TEXT) == 0 ? " (dnprof's)" : "");

        if (!path_var) {
            say(d, FAIL, "no %s is set: on Linux the runtime needs the agent's path (export %s=%s)%s",
                DNP_ENV_PROFILER_PATH, DNP_ENV_PROFILER_PATH, d->have_agent ? d->agent.path : "...", note);
        } else {
            const char *plain = getenv(DNP_ENV_PROFILER_PATH);
            if (strcmp(path_var, DNP_ENV_PROFILER_PATH) != 0 && plain && strcmp(plain, path) != 0)
                say(d, WARN, "%s=%s wins over %s=%s (the runtime reads the architecture's variable first)",
                    path_var, path, DNP_ENV_PROFILER_PATH, plain);
            if (!strchr(path, '/'))
                say(d, FAIL, "%s=%s is not a path: give the agent's absolute path", path_var, path);
            else if (access(path, R_OK) != 0)
                say(d, FAIL, "%s=%s: %s", path_var, path, strerror(errno));
            else if (ours)
                say(d, OK, "%s=%s is dnprof's agent", path_var, path);
            else if (d->have_agent && strstr(path, "libdnprof"))
                say(d, WARN, "%s=%s is another build of the agent than this dnprof's (%s)", path_var, path,
                    d->agent.path);
            else
                say(d, WARN, "%s=%s is another profiler, not dnprof's agent", path_var, path);
            if (path[0] != '/' && strchr(path, '/'))
                say(d, WARN, "%s=%s is relative: it only works from the directory it is relative to", path_var,
                    path);
        }
    }

    d->in_shell = 0;

    const char *off[CLI_DISABLING_MAX];
    int noff = cli_disabling_vars(off);
    for (int i = 0; i < noff; i++)
        say(d, FAIL, "%s=%s: the runtime loads no profiler at all (unset %s)", off[i], getenv(off[i]), off[i]);
    if (noff == 0)
        say(d, OK, "profiling is not disabled (DOTNET_EnableDiagnostics, DOTNET_EnableDiagnostics_Profiler)");

    static const char *const compat[] = {"DOTNET_ProfAPI_ProfilerCompatibilitySetting",
                                         "COMPlus_ProfAPI_ProfilerCompatibilitySetting"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = getenv(compat[i]);
        if (v && strcasecmp(v, "PreventLoad") == 0) {
            say(d, FAIL, "%s=%s: the runtime refuses every startup profiler (unset it)", compat[i], v);
            break;
        }
        if (v)
            break;
    }
}

/* ---- dotnet ---- */

static void check_dotnet(doctor *d) {
    char path[PATH_MAX], real[PATH_MAX];
    if (cli_find_in_path("dotnet", path, sizeof path) != 0) {
        say(d, WARN, "dotnet is not on PATH: give 'dnprof run' the program's full path (or add the .NET "
                     "directory to PATH)");
        return;
    }
    if (realpath(path, real) && strcmp(real, path) != 0)
        say(d, OK, "dotnet: %s -> %s", path, real);
    else
        say(d, OK, "dotnet: %s", path);

    char cmd[PATH_MAX + 64];
    char *argv[] = {path, NULL};
    cli_fmt_argv(argv, cmd, sizeof cmd - 40);
    strcat(cmd, " --list-runtimes 2>/dev/null");
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    char line[1024], versions[512] = "";
    int newest = 0;
    while (fgets(line, sizeof line, f)) {
        char ver[64];
        if (sscanf(line, "Microsoft.NETCore.App %63s", ver) != 1)
            continue;
        int major = atoi(ver);
        newest = major > newest ? major : newest;
        size_t used = strlen(versions);
        snprintf(versions + used, sizeof versions - used, "%s%s", used ? ", " : "", ver);
    }
    pclose(f);
    if (!newest)
        say(d, WARN, "dotnet lists no Microsoft.NETCore.App runtime: install the .NET runtime");
    else if (newest < 8)
        say(d, WARN, ".NET runtimes %s: dnprof is made for .NET 8 and later", versions);
    else
        say(d, OK, ".NET runtimes: %s", versions);
}

/* ---- running the program ---- */

/* Prints the lines of text that contain needle (or start with it: prefix_only),
 * and the indented lines that continue them, at most max, each as "    | line";
 * max 0 only counts them. Returns how many. */
static int quote_lines(const char *text, const char *needle, int prefix_only, int max) {
    int print = max > 0;
    if (!print)
        max = INT_MAX;
    int n = 0, cont = 0;
    for (const char *p = text; p && *p && n < max;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < 400 ? len : 400), p);
        int hit = prefix_only ? strncmp(line, needle, strlen(needle)) == 0 : strcasestr(line, needle) != NULL;
        if (hit || (cont && (line[0] == ' ' || line[0] == '\t') && line[1])) {
            if (print)
                printf("    | %s\n", line);
            n++;
            cont = 1;
        } else {
            cont = 0;
        }
        p = eol ? eol + 1 : NULL;
    }
    return n;
}

/* What an HRESULT in the runtime's "Loading profiler failed" line means here,
 * and what to change. */
static const struct {
    uint32_t hr;
    const char *meaning, *change;
} hresult_hints[] = {
    {0x8007007Eu, "the runtime could not dlopen the agent",
     "check that the agent file exists and that 'ldd' on it finds every library"},
    {0x8007000Bu, "the agent is built for another architecture", "use an agent built for this machine"},
    {0x80040111u, "the library does not answer to dnprof's CLSID",
     "point " DNP_ENV_AGENT " at dnprof's own libdnprof.so, not another profiler"},
    {0x80004002u, "the runtime found no ICorProfilerCallback3 or later in the agent",
     "rebuild the agent; this one is not a working dnprof agent"},
    {0x80070057u, "CORECLR_PROFILER is not a CLSID in braces", "let dnprof set CORECLR_PROFILER"},
    {0x80004005u, "the agent's Initialize failed", "act on the agent's own 'dnprof:' lines"},
};

/* Prints what the first HRESULT the runtime named means; returns the hint's
 * index, or -1. */
static int explain_runtime(const char *captured) {
    const char *p = captured ? strstr(captured, "HRESULT: 0x") : NULL;
    if (!p)
        return -1;
    uint32_t hr = (uint32_t)strtoul(p + 9, NULL, 16);
    for (size_t i = 0; i < sizeof hresult_hints / sizeof hresult_hints[0]; i++) {
        if (hresult_hints[i].hr != hr)
            continue;
        const char *name = dnp_hresult_name(hr);
        printf("  HRESULT 0x%08X%s%s%s: %s.\n", hr, name ? " (" : "", name ? name : "", name ? ")" : "",
               hresult_hints[i].meaning);
        return (int)i;
    }
    return -1;
}

static int trace_has_initialize(const char *path, char *why, size_t len, uint64_t *nevents) {
    dnp_trace *t = NULL;
    if (dnp_trace_load(path, &t, why, len) != 0)
        return 0;
    int found = 0;
    for (size_t i = 0; i < t->nevents && !found; i++)
        found = t->events[i].kind == DNP_EV_Initialize || t->events[i].kind == DNP_EV_InitializeForAttach;
    *nevents = t->nevents;
    if (!found)
        snprintf(why, len, "the trace has %s events but no Initialize", CLI_COUNT(t->nevents));
    dnp_trace_free(t);
    return found;
}

/* Why the agent did not load in the program l ran (root: its agent's file in
 * the session, n: how many agents wrote one), quoting the runtime and the
 * agent, and what to change. */
static void say_not_loaded(const doctor *d, const cli_launch *l, const char *cmd, const cli_session_agent *root,
                           int n, const char *code, const char *why) {
    printf("FAIL  the agent did not load in '%s' (pid %ld); the program %s.\n", cmd, (long)l->pid, code);
    int said = quote_lines(l->captured, "profiler", 0, 0);
    if (root && root->error[0])
        printf("  The runtime loaded the agent, but it stepped aside: %s.\n", root->error);
    else if (root && root->started)
        printf("  The agent started, but its trace is not usable: %s.\n", why);
    else if (root)
        printf("  The runtime loaded the agent, but its Initialize did not finish.\n");
    else if (n > 0)
        printf("  The agent loaded only in other processes the program started (below): the program itself "
               "is not a .NET process, or it runs .NET in a child.\n");
    else if (said)
        printf("  The runtime tried to load the agent and failed.\n");
    else
        printf("  No .NET runtime in this process tried to load the agent.\n");

    printf("  What the runtime said about profilers:\n");
    if (!quote_lines(l->captured, "profiler", 0, 16))
        printf("    (nothing: the program did not start a .NET runtime in this process, profiling is\n"
               "    disabled for it, or its runtime predates these messages)\n");
    int hint = explain_runtime(l->captured);
    printf("  What the agent said:\n");
    if (!quote_lines(l->captured, "dnprof:", 1, 16))
        printf("    (nothing)\n");
    printf("  What to change: ");
    if (d->fails)
        printf("fix the FAIL lines above first, then run 'dnprof doctor -- %s' again.\n", cmd);
    else if (root && root->error[0])
        printf("act on the agent's reason above (for --events, see 'dnprof run --help').\n");
    else if (hint >= 0)
        printf("%s.\n", hresult_hints[hint].change);
    else if (!said && n == 0)
        printf("run a .NET program directly ('dnprof doctor -- dotnet app.dll'); a launcher script\n"
               "  must pass the environment on to it, and must not set DOTNET_EnableDiagnostics=0.\n");
    else
        printf("act on the runtime's message above; 'ldd %s' shows libraries the agent cannot find.\n",
               d->agent.path);
}

static int run_program(doctor *d, char **prog, const char *events) {
    char cmd[1024];
    cli_fmt_argv(prog, cmd, sizeof cmd);
    putchar('\n');
    if (!d->have_agent) {
        printf("FAIL  '%s' was not run: without the agent there is nothing to load. Fix the first FAIL above.\n",
               cmd);
        return 1;
    }
    fflush(stdout);
    if (cli_check_dotnet_app("doctor", prog) != 0) { /* the SDK would run instead: its diagnosis is no use */
        printf("FAIL  '%s' was not run: its .dll does not exist.\n", cmd);
        return 1;
    }
    if (cli_check_program("doctor", prog) != 0) { /* the agent could not load: said why */
        printf("FAIL  '%s' was not run: no .NET runtime in it would load the agent (why: above).\n", cmd);
        return 1;
    }
    char session[PATH_MAX], output[PATH_MAX + 32];
    if (cli_session_create(session, sizeof session) != 0)
        return 1;
    snprintf(output, sizeof output, "%s/trace-%%p.trace", session);

    printf("running %s with the agent and PAL_OUTPUTDEBUGSTRING=1 (its output follows)\n\n", cmd);
    cli_launch l;
    memset(&l, 0, sizeof l);
    l.agent = d->agent.path;
    l.events = events && *events ? events : DNP_EVENTS_DEFAULT;
    l.output = output;
    l.session = session;
    l.debug_strings = 1;
    l.capture_stderr = 1;
    setenv(DNP_ENV_STDERR, "1", 1); /* the agent's messages too, on the stderr captured here */
    if (cli_launch_run(&l, prog) != 0) {
        cli_session_remove(session);
        return 1;
    }
    fflush(stderr);
    putchar('\n');
    if (l.exec_errno) {
        printf("FAIL  cannot run '%s': %s. Give the program's path, or put it on PATH.\n", prog[0],
               strerror(l.exec_errno));
        cli_session_remove(session);
        free(l.captured);
        return 1;
    }

    cli_session_agent *agents = NULL;
    int n = cli_session_read(session, &agents);
    const cli_session_agent *root = NULL;
    for (int i = 0; i < n; i++)
        if (agents[i].pid == (long)l.pid)
            root = &agents[i];

    char why[512] = "", code[64];
    uint64_t nevents = 0;
    int loaded = root && root->started &&
                 trace_has_initialize(root->trace[0] ? root->trace : l.trace, why, sizeof why, &nevents);
    if (WIFSIGNALED(l.status))
        snprintf(code, sizeof code, "was killed by signal %d", WTERMSIG(l.status));
    else
        snprintf(code, sizeof code, "exited with code %d", cli_exit_code(l.status));

    if (loaded) {
        char count[32];
        printf("ok    the agent loaded in '%s' (pid %ld%s%s) and recorded %s events; the program %s.\n"
               "      Profiling works for this command: dnprof run -- %s\n",
               cmd, root->pid, root->runtime[0] ? ", " : "", root->runtime, cli_fmt_count(nevents, count), code,
               cmd);
    } else {
        say_not_loaded(d, &l, cmd, root, n, code, why);
    }
    for (int i = 0; i < n; i++) {
        const cli_session_agent *a = &agents[i];
        if (a == root)
            continue;
        printf("      also pid %ld (%.80s): %s\n", a->pid, a->cmdline[0] ? a->cmdline : "?",
               a->error[0] ? a->error : a->started ? "the agent loaded" : "the agent did not start");
    }
    free(agents);
    free(l.captured);
    cli_session_remove(session);
    return loaded ? 0 : 1;
}

static void doctor_help(void) {
    fputs("usage: dnprof doctor [--events LIST] [-- PROGRAM [ARGS...]]\n"
          "       dnprof doctor [--agent-path PATH] PID\n"
          "\n"
          "Checks, one line each (ok, warn, FAIL), what the runtime needs to load dnprof's\n"
          "agent: the agent file, that it loads on this machine, the CORECLR_ variables\n"
          "of this shell, settings that disable profiling, and dotnet.\n"
          "\n"
          "Given a program, also runs it as 'dnprof run' would, with the runtime's own\n"
          "diagnostics on (PAL_OUTPUTDEBUGSTRING=1), and says whether the agent loaded in\n"
          "it and, if not, why, quoting the runtime and the agent, and what to change.\n"
          "\n"
          "Given a PID, says whether dnprof attach and snapshot can work on that running\n"
          "program: its container (by the host's pid), its diagnostics socket, its\n"
          "runtime, the control directory the agent uses, an agent already in it.\n"
          "\n"
          "options:\n"
          "  -e, --events LIST   what the agent records while the program runs (as for run)\n"
          "      --agent-path PATH  with a PID: check the libdnprof.so at PATH as the program\n"
          "                      sees it (attach --agent-path), not the copy dnprof makes\n"
          "  -h, --help          print this help\n"
          "\n"
          "exit status: 0 when the agent loaded (or, without a program, when no check\n"
          "failed), 1 otherwise.\n"
          "\n"
          "examples:\n"
          "  dnprof doctor\n"
          "  dnprof doctor -- dotnet app.dll\n"
          "  dnprof doctor 4242\n",
          stdout);
}

int cmd_doctor(int argc, char **argv) {
    static const struct option longopts[] = {
        {"events", required_argument, NULL, 'e'}, {"help", no_argument, NULL, 'h'},
        {"agent-path", required_argument, NULL, 'A'}, {NULL, 0, NULL, 0}};
    const char *events = NULL, *agent_path = NULL;
    int c, bad;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:e:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': events = optarg; break;
        case 'A':
            if ((bad = cli_agent_path_option("doctor", optarg, &agent_path)) != 0)
                return bad;
            break;
        case 'h': doctor_help(); return 0;
        default: return cli_bad_option("doctor", argv, c);
        }
    }
    bad = cli_check_events("doctor", events);
    if (bad)
        return bad;
    char **prog = optind < argc ? argv + optind : NULL;
    /* dnprof doctor PID: whether one can attach to it (doctor_pid.c) */
    if (prog && optind == argc - 1 && argv[optind][0] >= '0' && argv[optind][0] <= '9' && strcmp(argv[optind - 1], "--")) {
        pid_t pid;
        if (cli_parse_pid("doctor", argv[optind], &pid) != 0)
            return CLI_EXIT_USAGE;
        return doctor_pid(pid, agent_path);
    }
    if (agent_path)
        return usage_error("doctor", "--agent-path goes with a PID: dnprof doctor --agent-path PATH PID");

    doctor d;
    memset(&d, 0, sizeof d);
    check_agent(&d, prog);
    check_environment(&d, prog != NULL);
    check_dotnet(&d);
    int rc = prog ? run_program(&d, prog, events) : d.fails + d.shell_fails ? 1 : 0;
    fflush(stdout);
    return rc;
}
