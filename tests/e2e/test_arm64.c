/* test_arm64.c: the arm64 port under emulation (tests/e2e/arm64.cmake,
 * docs/arm64.md). The e2e.arm64.* tests are the ordinary ones run with the
 * arm64 agent and program under qemu-aarch64; these two say that the tools
 * are there, and that the traces read here were written by an arm64 agent in
 * an arm64 program and read by this machine's dnprof (and by the arm64 one
 * under qemu, to the same text), and which of its
 * documented paths the agent took (clock, sampling) under the emulator. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

/* qemu-aarch64 and the cross compiler, as CMake found them (arm64.cmake). */
TEST(e2e_arm64_tools) {
    const char *names[] = {"DNPROF_QEMU_AARCH64", "DNPROF_AARCH64_CC"};
    const char *what[] = {"qemu-aarch64 (Debian: qemu-user)", "aarch64-linux-gnu-gcc (Debian: gcc-aarch64-linux-gnu)"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v == NULL || *v == '\0' || strstr(v, "NOTFOUND") != NULL || access(v, X_OK) != 0)
            E2E_SKIP("%s is not installed: the arm64 end-to-end tests are left out (tools/install-deps "
                     "installs it; then configure the build again)", what[i]);
    }
    return 0;
}

/* The ELF machine of a file (e_machine), or -1. */
static int elf_machine(const char *path) {
    unsigned char h[EI_NIDENT + 4];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, h, sizeof h);
    close(fd);
    if (n < (ssize_t)sizeof h || memcmp(h, ELFMAG, SELFMAG) != 0 || h[EI_DATA] != ELFDATA2LSB)
        return -1;
    return h[18] | h[19] << 8;
}

/* The first note of t that starts with prefix, or NULL. */
static const char *note_starting(const dnp_trace *t, const char *prefix) {
    for (size_t i = 0; i < t->nnotes; i++)
        if (t->notes[i].text != NULL && strncmp(t->notes[i].text, prefix, strlen(prefix)) == 0)
            return t->notes[i].text;
    return NULL;
}

TEST(e2e_arm64_machines) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_arm64_machines"), 0);
    const char *bin = e2e_env("DNPROF_BIN"), *agent = e2e_env("DNPROF_AGENT"), *app = e2e_env("DNPROF_SCENARIOS");
    ASSERT(bin);
    ASSERT(agent);
    ASSERT(app);
    /* an arm64 agent and program, this machine's dnprof */
    ASSERT_EQ(elf_machine(agent), EM_AARCH64);
    ASSERT_EQ(elf_machine(app), EM_AARCH64);
    ASSERT_EQ(elf_machine(bin), elf_machine("/proc/self/exe"));

    /* which documented path it took (docs/arm64.md): under qemu-user the
     * host's clocksource is not arch_sys_counter, and perf_event_open is not
     * emulated */
    const char *modes[] = {"--calls=timed", "--sample"}, *notes[] = {"calls: clock ", "cpu sampling by "};
    /* sampling: one POSIX timer on the process's CPU time at 100 Hz (the
     * default's choice), POSIX CPU timers where perf events are wanted */
    const char *emulated_path[] = {"CLOCK_MONOTONIC", "POSIX "}, *runner = strrchr(e2e_dotnet(), '/');
    int emulated = strncmp(runner ? runner + 1 : e2e_dotnet(), "qemu-", 5) == 0;
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {bin, "run", "--quiet", modes[i], "-o", r.trace, "--", e2e_dotnet(), app, "hello", NULL};
        ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
        ASSERT_STATUS(&r, 0);
        dnp_trace *t = e2e_load(r.trace);
        ASSERT_NE(t, NULL);
        ASSERT_GE(e2e_count(t, DNP_EV_ModuleLoadFinished), 1);
        const char *note = note_starting(t, notes[i]);
        fprintf(stderr, "e2e: the arm64 agent, %s: %s\n", modes[i], note ? note : "no note");
        ASSERT_NE(note, NULL);
        if (emulated) /* the fallbacks docs/arm64.md names */
            ASSERT_CONTAINS(note, emulated_path[i]);
        if (i == 1) { /* and how the sampler reads its own memory: qemu-user has no process_vm_readv */
            const char *reads = note_starting(t, "sampler memory reads: ");
            fprintf(stderr, "e2e: the arm64 agent, --sample: %s\n", reads ? reads : "no note");
            ASSERT_NE(reads, NULL);
            if (emulated)
                ASSERT_CONTAINS(reads, "/proc/self/mem");
        }
        dnp_trace_free(t);
    }

    /* this machine's front end reads the arm64 agent's trace as any other */
    const char *report[] = {"report", "--json", r.trace, NULL};
    struct jv *v = e2e_dnprof_json(&r, report);
    ASSERT_NE(v, NULL);
    json_free(v);

    /* and the arm64 front end, under qemu, reads it to the same text */
    const char *arm64_bin = e2e_env("DNPROF_ARM64_BIN");
    ASSERT_NE(arm64_bin, NULL);
    ASSERT_EQ(elf_machine(arm64_bin), EM_AARCH64);
    char *texts[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {i ? e2e_dotnet() : bin, i ? arm64_bin : "print", i ? "print" : r.trace,
                              i ? r.trace : NULL, NULL};
        ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
        ASSERT_STATUS(&r, 0);
        texts[i] = e2e_read_file(r.out, NULL);
        ASSERT_NE(texts[i], NULL);
    }
    int same = strcmp(texts[0], texts[1]) == 0, long_enough = strlen(texts[0]) > 1000;
    if (!same)
        fprintf(stderr, "e2e: dnprof print differs between the x86-64 and the arm64 front end\n");
    free(texts[0]);
    free(texts[1]);
    ASSERT(same);
    ASSERT(long_enough);
    return 0;
}

static int file_has(const char *path, const char *text) {
    char *s = e2e_read_file(path, NULL);
    int has = s != NULL && strstr(s, text) != NULL;
    if (s != NULL && !has)
        fprintf(stderr, "e2e: '%s' lacks \"%s\"\n", path, text);
    free(s);
    return has;
}

/* doctor with the arm64 agent: right for the arm64 program under qemu (it says
 * so, runs it, and the agent loads), a FAIL naming the way without one. */
TEST(e2e_arm64_doctor) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_arm64_doctor"), 0);
    const char *app = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(app, NULL);
    const char *with[] = {"doctor", "--", e2e_dotnet(), app, "hello", NULL};
    ASSERT_EQ(e2e_dnprof(&r, with), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT(file_has(r.out, "so the program runs under emulation"));
    ASSERT(file_has(r.out, "ok    the agent loaded in"));
    const char *without[] = {"doctor", NULL};
    ASSERT_EQ(e2e_dnprof(&r, without), 0);
    ASSERT_NE(r.status, 0);
    ASSERT(file_has(r.out, "FAIL  the agent is built for arm64"));
    ASSERT(file_has(r.out, "qemu-aarch64 ./App"));
    return 0;
}
