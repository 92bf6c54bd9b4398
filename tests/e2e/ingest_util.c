/* ingest_util.c: what the continuous profiling tests share (ingest_util.h):
 * the "sample" scenario's truth, the loopback ingest server. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "ingest_util.h"

const char *const HOT[3] = {"Scenarios.SampleScenario::HotSixty", "Scenarios.SampleScenario::HotThirty",
                                   "Scenarios.SampleScenario::HotTen"};
const double TRUTH[3] = {60, 30, 10};

int shares_ok(const double hot[3], double period_ns) {
    double sum = hot[0] + hot[1] + hot[2];
    double n = sum / period_ns;
    if (n < 100) {
        fprintf(stderr, "only %.0f samples of the hot methods in all windows\n", n);
        return -1;
    }
    double tol = fmax(5.0, 4 * 100 * 0.5 / sqrt(n));
    for (int h = 0; h < 3; h++) {
        double share = 100 * hot[h] / sum;
        fprintf(stderr, "%s: %.1f%% (truth %.0f%%, tolerance %.1f, %.0f samples)\n", HOT[h], share, TRUTH[h], tol, n);
        if (fabs(share - TRUTH[h]) > tol)
            return -1;
    }
    return 0;
}

int ingest_start(e2e_run *r, const char *mode, int otlp, ingest *s) {
    const char *script = e2e_env("DNPROF_INGEST_SERVER");
    if (!script)
        return -1;
    char port_file[PATH_MAX + 16];
    snprintf(s->dir, sizeof s->dir, "%.3900s/ingest-%s%s", r->dir, otlp ? "otlp-" : "", mode);
    snprintf(port_file, sizeof port_file, "%s.port", s->dir);
    const char *argv[] = {"python3", script, "--dir", s->dir, "--port-file", port_file, "--mode", mode,
                          "--delay", "3", "--lifetime", "100", otlp ? "--otlp" : NULL, NULL};
    char out[PATH_MAX + 16], err[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s.out", s->dir);
    snprintf(err, sizeof err, "%s.err", s->dir);
    s->pid = e2e_spawn((char *const *)argv, NULL, r->dir, out, NULL, err);
    if (s->pid < 0)
        return -1;
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &s->port) == 1;
            fclose(f);
            if (ok)
                return 0;
        }
        struct timespec t = {0, 50000000L};
        nanosleep(&t, NULL);
    }
    e2e_show_file("the ingest server said", err);
    return -1;
}

void ingest_stop(ingest *s) {
    int status;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        e2e_wait(s->pid, 5000, &status);
    }
    s->pid = 0;
}

size_t ingest_requests(const ingest *s, request *out, size_t cap) {
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/requests.log", s->dir);
    FILE *f = fopen(log, "r");
    size_t n = 0;
    char line[8192];
    while (f && n < cap && fgets(line, sizeof line, f)) {
        request *q = &out[n];
        int k;
        if (sscanf(line, "REQ %d %llu %llu %63s %31s %63s %127s %4095s %511[^\n]", &k, &q->from, &q->until, q->format,
                   q->spy, q->path, q->auth, q->body, q->name) == 9)
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

int said(const e2e_run *r, const char *text) {
    char *err = e2e_read_file(r->err, NULL);
    int yes = err && strstr(err, text);
    if (!yes)
        e2e_show_file("dnprof said", r->err);
    free(err);
    return yes;
}


int ingest_push_run(e2e_run *r, const char *mode, int otlp, ingest *s, const char *const *opts, const char *seconds,
                    const char *const *env) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    char url[64] = "http://127.0.0.1:1"; /* nobody listens there: refused */
    memset(s, 0, sizeof *s);
    if (!dll || !bin || (strcmp(mode, "down") != 0 && ingest_start(r, mode, otlp, s) != 0))
        return -1;
    if (s->port)
        snprintf(url, sizeof url, "http://127.0.0.1:%d/", s->port);
    const char *argv[64] = {bin, "run", "--every", "1s", otlp ? "--otlp" : "--pyroscope", url};
    size_t n = 6;
    for (size_t i = 0; opts && opts[i] && n < 50; i++)
        argv[n++] = opts[i];
    const char *tail[] = {"--", e2e_dotnet(), dll, "sample", "shares", seconds, NULL};
    memcpy(argv + n, tail, sizeof tail);
    int ran = e2e_exec(r, (char *const *)argv, env);
    ingest_stop(s);
    char *out = ran == 0 ? e2e_read_file(r->out, NULL) : NULL;
    int program_ran = out && strstr(out, "shares 60 30 10") != NULL; /* its own output, as without dnprof */
    free(out);
    if (ran == 0 && r->status == 0 && program_ran)
        return 0;
    fprintf(stderr, "dnprof run (backend %s) exited %d, the program's output %s\n", mode, r->status,
            program_ran ? "as without dnprof" : "not there");
    e2e_show_file("dnprof said", r->err);
    return -1;
}

int said_sent(const e2e_run *r, const char *before, size_t n) {
    char want[256];
    snprintf(want, sizeof want, "%s%zu window%s sent", before, n, n == 1 ? "" : "s");
    return said(r, want);
}

int windows_left(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += !strncmp(e->d_name, "window-", 7) && strstr(e->d_name, ".trace") != NULL;
    closedir(d);
    return n;
}

int windows_unread(e2e_run *r, const char *dir, const char *every_ms, const char *keep, const char *seconds) {
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    char every[64], k[64], wdir[PATH_MAX + 32];
    snprintf(every, sizeof every, "DNPROF_EVERY=%s", every_ms);
    snprintf(k, sizeof k, "DNPROF_WINDOW_KEEP=%s", keep);
    snprintf(wdir, sizeof wdir, "DNPROF_WINDOW_DIR=%s", dir);
    const char *env[] = {every, k, wdir, NULL};
    const char *argv[] = {bin, "run", "--quiet", "--sample", "-o", r->trace, "--", e2e_dotnet(), dll, "sample", "shares",
                          seconds, NULL};
    if (!dll || !bin || e2e_exec(r, (char *const *)argv, env) != 0 || r->status != 0) {
        fprintf(stderr, "dnprof run with windows into %s failed (exit %d)\n", dir, r->status);
        e2e_show_file("dnprof said", r->err);
        return -1;
    }
    return 0;
}

pid_t sample_waiting(e2e_run *r, const char *seconds, char *pid, char *gofile, size_t gocap) {
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    char pidfile[PATH_MAX + 16], pout[PATH_MAX + 16], perr[PATH_MAX + 16];
    snprintf(pidfile, sizeof pidfile, "%s/pid", r->dir);
    snprintf(gofile, gocap, "%s.go", pidfile);
    snprintf(pout, sizeof pout, "%s/program.out", r->dir);
    snprintf(perr, sizeof perr, "%s/program.err", r->dir);
    const char *pargv[] = {e2e_dotnet(), dll, "sample", "shares", seconds, pidfile, NULL};
    pid_t prog = dll ? e2e_spawn((char *const *)pargv, NULL, r->dir, pout, NULL, perr) : -1;
    pid[0] = 0;
    for (int i = 0; prog > 0 && i < 300 && !pid[0]; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            if (!fgets(pid, 32, f))
                pid[0] = 0;
            fclose(f);
        }
        struct timespec t = {0, 100000000L};
        if (!pid[0])
            nanosleep(&t, NULL);
    }
    pid[strcspn(pid, "\n")] = 0;
    if (prog > 0 && !pid[0]) {
        fprintf(stderr, "the sample scenario wrote no pid in 30 s\n");
        e2e_show_file("it said", perr);
        kill(prog, SIGKILL);
        return -1;
    }
    return prog;
}

int attach_sample(e2e_run *r, const char *const *argv, pid_t prog, const char *gofile) {
    pid_t att = e2e_spawn((char *const *)argv, NULL, r->dir, r->out, NULL, r->err);
    struct timespec t = {1, 0};
    nanosleep(&t, NULL);
    FILE *g = fopen(gofile, "w");
    if (g)
        fclose(g);
    int astatus = -1, pstatus = -1;
    if (att > 0)
        e2e_wait(att, 60000, &astatus);
    e2e_wait(prog, 60000, &pstatus);
    if (att > 0 && g && astatus == 0 && pstatus == 0)
        return 0;
    fprintf(stderr, "dnprof attach exited %d, the program %d\n", astatus, pstatus);
    e2e_show_file("dnprof attach said", r->err);
    return -1;
}
