/* e2e.h: helpers of the end-to-end tests, which run the Scenarios program under
 * dnprof and hold the trace up against what the program knows it did.
 *
 * The tests find what they need through the environment (tests/e2e/CMakeLists.txt):
 *   DNPROF_BIN        the dnprof front end
 *   DNPROF_AGENT      libdnprof.so
 *   DNPROF_SCENARIOS  Scenarios.dll (PluginA.dll and PluginB.dll beside it)
 *   DNPROF_SAMPLE_HELLO samples/hello, built: hello.dll
 *   DNPROF_E2E_SCRATCH a directory the tests may fill; each test empties its own
 *   DNPROF_DOTNET     the dotnet host (optional, "dotnet" from PATH otherwise)
 *   DNPROF_E2E_SLOWDOWN how many times slower than natively the program runs
 *                     (optional, 1): the children's timeout grows with it
 *   DNPROF_E2E_WORK_SCALE how many times longer a CPU-bound workload runs
 *                     (optional, 1; e2e_work_seconds): under emulation the
 *                     runtime's start-up and JIT take much of a short budget
 *
 * The same tests run an arm64 build under qemu-user (tests/e2e/arm64.cmake):
 * DNPROF_DOTNET is then qemu-aarch64, DNPROF_SCENARIOS the self-contained
 * linux-arm64 Scenarios program and DNPROF_AGENT the arm64 agent, so that every
 * `dotnet Scenarios.dll NAME` of a test becomes `qemu-aarch64 Scenarios NAME`.
 *
 * Helpers that fail print one line on stderr saying why, and return -1 or NULL,
 * so that a test only needs ASSERT_EQ(helper(...), 0). The comparisons of
 * test.h print both sides; ASSERT_STATUS below adds what the command said. */
#ifndef DNP_E2E_H
#define DNP_E2E_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "test.h"
#include "trace_reader.h"

/* Every child gets this long, then its process group is killed (CTest's own
 * timeout is 120 s per test): 90 s, times DNPROF_E2E_SLOWDOWN. */
#define E2E_TIMEOUT_MS e2e_timeout_ms()
int e2e_timeout_ms(void);

/* A trace with fewer events than this was not really recorded. */
#define E2E_MIN_EVENTS 20

typedef struct e2e_run {
    const char *test;
    char dir[2048];       /* <scratch>/<test>, empty at the start */
    char trace[PATH_MAX]; /* <dir>/<test>.trace */
    char out[PATH_MAX];   /* stdout of the last command */
    char err[PATH_MAX];   /* stderr of the last command */
    int status;           /* exit code of the last command; 128 + signal if killed */
} e2e_run;

/* An environment variable the tests cannot do without; NULL (and a line) if unset. */
const char *e2e_env(const char *name);

/* Empties (or creates) the scratch directory of test and fills in the paths. */
int e2e_setup(e2e_run *r, const char *test);

/* Starts argv[0] (found on PATH) in dir, in a process group of its own, with
 * stdout to out_path (or, when out_fd is given, to a pipe whose read end is
 * returned there) and stderr to err_path. env holds "NAME=VALUE" to set and
 * "NAME" to unset, NULL-terminated; it may be NULL. Returns the pid or -1. */
pid_t e2e_spawn(char *const argv[], const char *const env[], const char *dir,
                const char *out_path, int *out_fd, const char *err_path);

/* Waits up to timeout_ms for pid, then kills its process group (also when it
 * exited: nothing it started outlives it).
 * Sets *status to the exit code or 128 + signal. Returns 0, or -1 on timeout. */
int e2e_wait(pid_t pid, int timeout_ms, int *status);

/* A scenario run to its end with dnprof attached: `dotnet SCENARIOS.dll ARGS...
 * wait GO` started (its stdout in out, r->dir/scenario.out), and once it says
 * "ready", `dnprof attach FLAG -q -o r->trace PID` (its output in r->out); when
 * the trace holds its first chunk, GO is made, and both are waited for. 0 when
 * the scenario said ready, the agent came in and the scenario exited 0; else
 * -1, with the scenario's and the attach's stderr shown. */
int e2e_attach_scenario(e2e_run *r, const char *const args[], const char *flag, char *out, size_t cap);

/* Kills pid's process group and pid, reaps pid and forgets its runtime files. */
void e2e_kill(pid_t pid);

/* Removes the files a .NET process pid leaves in the temporary directory when
 * it is killed (its diagnostics socket, its debugger pipes): a killed program
 * cannot, and the CI machine's /tmp would fill with them. */
void e2e_forget_runtime_files(pid_t pid);

/* Starts argv as a container runtime would, in PID and mount namespaces of
 * its own (unshare --pid --mount --fork --mount-proc), with a private TMPDIR
 * (a tmpfs at /var/tmp/dnprof-e2e-container, seen there only), a private /tmp unless the build
 * tree is under /tmp, and the file hide (the agent) hidden under /dev/null. Returns unshare's pid
 * (for e2e_wait) and sets *host_pid to the program's pid as the host sees it;
 * -1 when it did not start. */
pid_t e2e_spawn_contained(char *const argv[], const char *const env[], const char *dir, const char *out_path,
                          const char *err_path, const char *hide, pid_t *host_pid);

/* Whether e2e_spawn_contained can work here (root, or namespaces allowed). */
int e2e_can_contain(void);

/* The same in a user namespace of its own too, made by uid (as rootless
 * containers are: its root is uid outside), with a private /tmp always (the
 * build tree's directories under /tmp bound back in), its HOME the private
 * TMPDIR. */
pid_t e2e_spawn_contained_as(char *const argv[], const char *const env[], const char *dir, const char *out_path,
                             const char *err_path, const char *hide, uid_t uid, pid_t *host_pid);
/* Whether uid may make those namespaces here. */
int e2e_can_contain_as(uid_t uid);

/* e2e_spawn + e2e_wait with r's out and err files. */
int e2e_exec(e2e_run *r, char *const argv[], const char *const env[]);

/* `dnprof run --quiet -o r->trace [--events events] -- dotnet dll [arg]`.
 * Returns 0 when it ran (whatever its exit status, in r->status). */
int e2e_run_dll(e2e_run *r, const char *dll, const char *arg, const char *events);

/* e2e_run_dll of Scenarios.dll with the scenario's name. */
int e2e_run_scenario(e2e_run *r, const char *scenario, const char *events);

/* `dnprof ARGS...` (args NULL-terminated), output in r->out and r->err. */
int e2e_dnprof(e2e_run *r, const char *const args[]);

/* `dnprof ARGS...` that must exit 0 and print one JSON value: parsed (json_free
 * it), or NULL with what dnprof said. */
struct jv *e2e_dnprof_json(e2e_run *r, const char *const args[]);

/* A workload's CPU seconds, times DNPROF_E2E_WORK_SCALE, as text in buf. */
const char *e2e_work_seconds(const char *seconds, char *buf, size_t cap);

/* The dotnet host to run Scenarios.dll with. */
const char *e2e_dotnet(void);

/* Writes text into path, replacing it: 0, or -1 with a line. */
int e2e_write_text(const char *path, const char *text);

/* The whole file, NUL-terminated (free it); NULL with a line if it cannot be read. */
char *e2e_read_file(const char *path, size_t *len);
/* The number after key (such as "osrwait ms=") in what the last command
 * printed on stdout, or -1 when it is not there. */
double e2e_said_number(const e2e_run *r, const char *key);

/* The run's trace as folded stacks (dnprof convert --format folded, written
 * beside it as TRACE.folded): the text (free it), or NULL having said why. */
char *e2e_folded_of(e2e_run *r);

/* Whether a folded export's stack (stack[0..len), root first, ';' between
 * frames, without its weight) holds the frame, or the run of frames
 * "A;B", whole. */
int e2e_folded_has_frame(const char *stack, size_t len, const char *frame);

/* In a folded export (a stack per line, root first, ';' between frames, its
 * weight last), the weights of the lines whose stack holds the frame, summed;
 * -1 when a line has no weight. */
double e2e_folded_weight(const char *text, const char *frame);

/* Prints the file's first lines on stderr, headed by what, to show what a
 * command said when a test fails. */
void e2e_show_file(const char *what, const char *path);

/* Loads a trace and checks that the agent did record it: the file exists and
 * loads, and it holds an Initialize (or InitializeForAttach) event and at
 * least E2E_MIN_EVENTS events.
 * NULL, with the reason on stderr, otherwise. */
dnp_trace *e2e_load(const char *path);

/* The same for a mode whose trace is aggregated (an --alloc trace holds one
 * AllocSite per type and stack, not an event per allocation, so its length
 * depends on how many threads the runtime started): it holds an Initialize
 * event and at least min events of kind. */
dnp_trace *e2e_load_of(const char *path, unsigned kind, size_t min);

/* The text of the first of the trace's notes that holds text, NULL when none does. */
const char *e2e_note(const dnp_trace *t, const char *text);

/* The index in ev->v of field number field of kind (entity fields take two). */
int e2e_value_index(unsigned kind, unsigned field);

/* The raw value of a field (an entity's ID). */
uint64_t e2e_field(const dnp_trace_event *ev, unsigned field);

/* The name of an entity field or the text of a STR field; NULL if none. */
const char *e2e_field_name(const dnp_trace *t, const dnp_trace_event *ev, unsigned field);

/* The index of the first event of kind at or after from whose field 0 is named
 * name (NULL: any), or -1. */
long e2e_find(const dnp_trace *t, unsigned kind, const char *name, size_t from);

size_t e2e_count(const dnp_trace *t, unsigned kind);

/* Like e2e_find from 0, but when the name is missing prints it along with up to
 * a dozen names of that kind containing hint (or any names if none do). */
long e2e_expect(const dnp_trace *t, unsigned kind, const char *name, const char *hint);

/* Follows the nesting of dnp_events[kind].nest on every thread. Returns 0 when
 * no thread goes below zero and every thread ends at zero; -1 otherwise, with
 * the first offending thread and event in why. */
int e2e_check_nesting(const dnp_trace *t, char *why, size_t whylen);

/* A kind's number from its name, or -1. */
int e2e_kind(const char *name);

/* The path of the executable name: name itself when it holds a '/', else the
 * first on PATH or, when extra is not NULL, in the directory extra; NULL if none. */
const char *e2e_which(const char *name, const char *extra, char *buf, size_t cap);

/* The test cannot run here (a peer tool is missing): one line "SKIPPED: ...",
 * saying what to install, and the test counts as skipped, not failed
 * (DNP_TEST_SKIPPED, CTest's SKIP_RETURN_CODE). With DNPROF_E2E_NO_SKIP set
 * (.ci/run, which installs every tool) it fails instead. */
#define E2E_SKIP(...)                                                       \
    do {                                                                    \
        int dnp_fail_ = getenv("DNPROF_E2E_NO_SKIP") != NULL;               \
        fprintf(stderr, "%s", dnp_fail_ ? "FAILED (DNPROF_E2E_NO_SKIP): " : "SKIPPED: "); \
        fprintf(stderr, __VA_ARGS__);                                       \
        fputc('\n', stderr);                                                \
        return dnp_fail_ ? 1 : DNP_TEST_SKIPPED;                            \
    } while (0)

/* The last command of run r (an e2e_run *) exited with want; else the test
 * fails, printing both codes and the start of the command's stderr and stdout. */
#define ASSERT_STATUS(r, want)                                              \
    do {                                                                    \
        const e2e_run *dnp_r_ = (r);                                        \
        int dnp_want_ = (want);                                             \
        if (dnp_r_->status != dnp_want_) {                                  \
            fprintf(stderr, "%s:%d: exit status of the last command of %s: %d, expected %d\n", \
                    __FILE__, __LINE__, dnp_r_->test, dnp_r_->status, dnp_want_); \
            e2e_show_file("stderr", dnp_r_->err);                           \
            e2e_show_file("stdout", dnp_r_->out);                           \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#endif
