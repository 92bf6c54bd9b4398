/* test_container.c: the checks and errors before the agent goes into a
 * process in a container (src/cli/container_check.c, docs/containers.md):
 * --agent-path's file, the runtime's version, and the one-line errors with
 * their fix that the e2e tests cannot all provoke as root (no CAP_SYS_PTRACE
 * is, in e2e_container_no_ptrace; an old runtime is not installed here). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc.h"
#include "test.h"

static unsigned our_machine(void) {
    return ipc_elf_machine_of(getpid());
}

/* A file holding an ELF header of machine and type (64-bit), and text. */
static int write_elf(const char *path, unsigned machine, unsigned type, int cls, const char *text) {
    Elf64_Ehdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.e_ident, ELFMAG, SELFMAG);
    h.e_ident[EI_CLASS] = (unsigned char)cls;
    h.e_ident[EI_DATA] = ELFDATA2LSB;
    h.e_type = (Elf64_Half)type;
    h.e_machine = (Elf64_Half)machine;
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite(&h, sizeof h, 1, f);
    fwrite(text, strlen(text) + 1, 1, f); /* as in a string table */
    return fclose(f);
}

TEST(container_agent_path_check) {
    char err[IPC_ERR_MAX];
    unsigned m = our_machine();
    ASSERT_NE(m, 0);
    /* the agent itself: from here, and through our own /proc/self/root */
    ASSERT_EQ(ipc_agent_path_check("", DNPROF_AGENT_FILE, m, err, sizeof err), 0);
    ASSERT_EQ(ipc_agent_path_check("/proc/self/root", DNPROF_AGENT_FILE, m, err, sizeof err), 0);
    ASSERT_EQ(ipc_agent_path_check("", DNPROF_AGENT_FILE, 0, err, sizeof err), 0);
    /* not from '/' */
    ASSERT_EQ(ipc_agent_path_check("", "lib/libdnprof.so", m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "as the program sees it");
    /* not there, said with the container's root */
    ASSERT_EQ(ipc_agent_path_check("/proc/self/root", "/no/such/libdnprof.so", m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "No such file");
    ASSERT_CONTAINS(err, "/proc/self/root");
    ASSERT(!strchr(err, '\n'));
    /* a directory, a text file, a program (a PIE is ET_DYN too, but no profiler) */
    ASSERT_EQ(ipc_agent_path_check("", "/", m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "is not a file");
    char dir[] = "/tmp/dnprof-unit-XXXXXX", path[64];
    ASSERT(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/text", dir);
    FILE *f = fopen(path, "w");
    ASSERT(f);
    fputs("not an ELF file\n", f);
    fclose(f);
    ASSERT_EQ(ipc_agent_path_check("", path, m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "is not a 64-bit ELF file");
    ASSERT_EQ(ipc_agent_path_check("", "/bin/sh", m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "not a");
    /* another machine's agent, an executable, a 32-bit one */
    unsigned other = m == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
    ASSERT_EQ(write_elf(path, other, ET_DYN, ELFCLASS64, "DllGetClassObject"), 0);
    ASSERT_EQ(ipc_agent_path_check("", path, m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, m == EM_X86_64 ? "built for arm64, the program runs on x86-64" : "built for x86-64");
    ASSERT_EQ(write_elf(path, m, ET_EXEC, ELFCLASS64, "DllGetClassObject"), 0);
    ASSERT_EQ(ipc_agent_path_check("", path, m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "is not a shared object");
    ASSERT_EQ(write_elf(path, m, ET_DYN, ELFCLASS32, "DllGetClassObject"), 0);
    ASSERT_EQ(ipc_agent_path_check("", path, m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "64-bit");
    ASSERT_EQ(write_elf(path, m, ET_DYN, ELFCLASS64, "something else"), 0);
    ASSERT_EQ(ipc_agent_path_check("", path, m, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "DllGetClassObject");
    ASSERT_EQ(write_elf(path, m, ET_DYN, ELFCLASS64, "DllGetClassObject"), 0);
    ASSERT_EQ(ipc_agent_path_check("", path, m, err, sizeof err), 0);
    unlink(path);
    rmdir(dir);
    return 0;
}

/* .NET 8 and later; .NET 5 and older answer no GetProcessInfo2. */
TEST(container_runtime_too_old) {
    ASSERT_EQ(ipc_runtime_too_old("10.0.12", 1), 0);
    ASSERT_EQ(ipc_runtime_too_old("10.0.0-preview.7.25380.108+91996a0ee16e2c77a8aa31d0bbb0cda8c1cf8eb1", 1), 0);
    ASSERT_EQ(ipc_runtime_too_old("8.0.0-rtm.23531.3+5f54efd2396a93a1e9c8c1d2d7d4a1b4d1e3a4b2", 1), 0);
    ASSERT_EQ(ipc_runtime_too_old("9.0.7", 1), 0);
    ASSERT_EQ(ipc_runtime_too_old("7.0.20", 1), 1);
    ASSERT_EQ(ipc_runtime_too_old("6.0.36", 1), 1);
    ASSERT_EQ(ipc_runtime_too_old("", 0), 1); /* GetProcessInfo only: .NET 5 */
    ASSERT_EQ(ipc_runtime_too_old("", 1), 0); /* not told: the attach says */
    ASSERT_EQ(ipc_runtime_too_old("v?", 1), 0);
    char line[512];
    ipc_runtime_old_text(42, "app", "6.0.36", line, sizeof line);
    ASSERT_CONTAINS(line, "pid 42 (app) runs .NET 6.0.36, older than .NET 8");
    ASSERT_CONTAINS(line, ".NET 8 or later");
    ipc_runtime_old_text(42, "app", "", line, sizeof line);
    ASSERT_CONTAINS(line, ".NET 5 or older");
    return 0;
}

/* The lines that name the cause and the fix. */
TEST(container_error_texts) {
    char line[IPC_ERR_MAX];
    ipc_denied_text(42, "app", "ns", EACCES, line, sizeof line);
    ASSERT_CONTAINS(line, "pid 42 (app): dnprof may not look into its namespaces (/proc/42/ns: Permission denied)");
    ASSERT_CONTAINS(line, "run dnprof as root, or give it CAP_SYS_PTRACE");
    ipc_denied_text(42, "app", "root", EPERM, line, sizeof line);
    ASSERT_CONTAINS(line, "its container (/proc/42/root");
    ipc_place_text(42, "/tmp", EROFS, 0, line, sizeof line);
    ASSERT_CONTAINS(line, "pid 42's /tmp is read-only");
    ASSERT_CONTAINS(line, "--agent-path");
    ASSERT_CONTAINS(line, "mount a writable /tmp");
    ipc_place_text(42, "/tmp/dnprof-0", 0, 1, line, sizeof line);
    ASSERT_CONTAINS(line, "noexec");
    ASSERT_CONTAINS(line, "name it with --agent-path");
    ipc_place_text(42, "/tmp/dnprof-0", ENOSPC, 0, line, sizeof line);
    ASSERT_CONTAINS(line, "No space left");
    ASSERT(!strchr(line, '\n'));
    return 0;
}

/* ps shows a process's command line as it was started: a child of known
 * arguments, read back through /proc (a single-file app's, which the runtime
 * reports with a .dll that does not exist, is read the same way). */
TEST(proc_cmdline_as_started) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        execlp("sleep", "sleep", "5", (char *)NULL);
        _exit(127);
    }
    char line[256] = "";
    int got = -1;
    for (int i = 0; i < 200 && (got != 0 || strcmp(line, "sleep 5") != 0); i++) {
        usleep(5000); /* until the exec has replaced the forked copy */
        got = ipc_proc_cmdline(child, line, sizeof line);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ASSERT_EQ(got, 0);
    ASSERT_STREQ(line, "sleep 5");
    char tiny[4];
    ASSERT_EQ(ipc_proc_cmdline(child, tiny, sizeof tiny), -1); /* reaped: gone */
    return 0;
}
