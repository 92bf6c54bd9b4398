/* ingest_util.h: what the continuous profiling tests (test_windows.c,
 * test_windows_otlp.c) share: the truth of the "sample" scenario
 * (SampleScenario.cs: three hot methods do 60/30/10% of the work) and the
 * loopback ingest server (ingest/ingest_server.py). */
#ifndef DNP_E2E_INGEST_UTIL_H
#define DNP_E2E_INGEST_UTIL_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "e2e.h"

extern const char *const HOT[3];
extern const double TRUTH[3];

/* The shares of the three hot methods in hot[] (in units of period_ns each
 * sample) against the truth, within four binomial standard deviations (at
 * least 5 points). 0, or -1 saying which is off. */
int shares_ok(const double hot[3], double period_ns);

typedef struct ingest {
    pid_t pid;
    int port;
    char dir[PATH_MAX];
} ingest;

/* Starts ingest_server.py in mode (ok, 500, slow, close), as OTLP's receiver
 * when otlp; 0 or -1. */
int ingest_start(e2e_run *r, const char *mode, int otlp, ingest *s);
void ingest_stop(ingest *s);

typedef struct request {
    unsigned long long from, until;
    char format[64], spy[32], path[64], auth[128], body[PATH_MAX], name[512];
} request;

/* The requests the server logged, at most cap. */
size_t ingest_requests(const ingest *s, request *out, size_t cap);

/* dnprof run --every 1s SINK URL OPTS... -- dotnet Scenarios.dll sample
 * shares SECONDS (SINK: --otlp when otlp, else --pyroscope), pushing to a
 * server started in mode (ingest_start; "down": none, a port nobody listens
 * on), stopped once the run is over. 0 when dnprof exited 0 and the program
 * printed what it prints without dnprof; else -1 saying why. */
int ingest_push_run(e2e_run *r, const char *mode, int otlp, ingest *s, const char *const *opts, const char *seconds,
                    const char *const *env);

/* What the run said (its stderr) contains text; when not, shows it. */
int said(const e2e_run *r, const char *text);

/* The run's summary says "BEFOREn windows sent". */
int said_sent(const e2e_run *r, const char *before, size_t n);

/* The sample scenario for SECONDS under dnprof run --sample, its agent also
 * cutting windows (DNPROF_EVERY every_ms, DNPROF_WINDOW_KEEP keep) into dir,
 * which nobody reads (as an agent loaded by dnprof env without dnprof push).
 * 0 when dnprof exited 0; else -1 saying why. */
int windows_unread(e2e_run *r, const char *dir, const char *every_ms, const char *keep, const char *seconds);

/* Starts the sample scenario (shares SECONDS) as a program to attach to: it
 * writes its pid into a file and waits for that file's name + ".go" before
 * it works. Its pid as text into pid[32], the file to create into gofile;
 * the pid_t, or -1 saying why. */
pid_t sample_waiting(e2e_run *r, const char *seconds, char *pid, char *gofile, size_t gocap);
/* Runs argv (a dnprof attach to prog, from sample_waiting) beside prog, lets
 * prog work a second later, and waits for both. 0 when both exited 0, else
 * -1 saying why. */
int attach_sample(e2e_run *r, const char *const *argv, pid_t prog, const char *gofile);

/* The window files still in dir (push deletes those it shipped); -1 when dir cannot be read. */
int windows_left(const char *dir);

#endif
