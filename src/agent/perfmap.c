/* perfmap.c: names for the runtime's stubs (perfmap.h), from the perf map the
 * runtime itself writes when DOTNET_PerfMapEnabled is 1 or 3 (`dnprof run
 * --stubs` sets it): /tmp/perf-PID.map, or in DOTNET_PerfMapJitDumpPath, a
 * line "ADDRESS SIZE NAME" (hex) per method compiled and per stub or block of
 * stubs ("stub TYPE<OWNER>"). Only the stubs are kept: methods have names from
 * the profiling API. The file grows as the program runs; it is read on from
 * where the last read ended, when an address in anonymous code is not known.
 * Sampler thread only. */
#include "perfmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dnp_search.h"
#include "dnp_vec.h"

typedef struct stub {
    uint64_t lo, hi;
    char *name;
} stub;

static struct {
    int tried;      /* the file looked for */
    FILE *f;
    long off;       /* where the next read starts: after the last whole line */
    stub *s;
    size_t n, cap, sorted;
} P;

static int by_lo(const void *x, const void *y) {
    const stub *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void open_map(void) {
    P.tried = 1;
    char path[512];
    config_perf_map(path, sizeof path);
    P.f = path[0] ? fopen(path, "re") : NULL;
}

/* "stub TYPE<OWNER>" as the frame's name: the owner is the kind of stub, the
 * type the runtime's function that reported it (ReportStubBlock for blocks). */
static char *stub_name(const char *text) {
    const char *t = text + 4; /* after "stub" */
    if (*t == '<') {            /* "stub<N> TYPE<OWNER>": one entry per stub */
        t = strchr(t, '>');
        t = t ? t + 1 : text + 4;
    }
    while (*t == ' ')
        t++;
    const char *lt = strchr(t, '<');
    char buf[160];
    if (lt && strncmp(t, "ReportStubBlock", 15) == 0)
        snprintf(buf, sizeof buf, "[stub %.*s]", (int)strcspn(lt + 1, ">"), lt + 1);
    else
        snprintf(buf, sizeof buf, "[stub %s]", t);
    return strdup(buf);
}

/* Reads the lines written since the last read; the stubs among them. */
static void read_on(void) {
    if (!P.f || fseek(P.f, P.off, SEEK_SET) != 0)
        return;
    char line[1024];
    while (fgets(line, sizeof line, P.f)) {
        size_t len = strlen(line);
        if (!len || line[len - 1] != '\n')
            break; /* a line still being written: read again next time */
        P.off += (long)len;
        line[len - 1] = 0;
        unsigned long long addr, size;
        int at = 0;
        if (sscanf(line, "%llx %llx %n", &addr, &size, &at) != 2 || !at || strncmp(line + at, "stub", 4) != 0 ||
            !size)
            continue;
        if (DNP_VEC_RESERVE(P.s, P.cap, P.n + 1, 256) < 0)
            return;
        char *name = stub_name(line + at);
        if (!name)
            return;
        P.s[P.n++] = (stub){addr, addr + size, name};
    }
    clearerr(P.f);
    if (P.sorted != P.n) {
        qsort(P.s, P.n, sizeof *P.s, by_lo);
        P.sorted = P.n;
    }
}

static const stub *find(uint64_t ip) {
    size_t k = DNP_FIRST_AFTER(i, P.n, P.s[i].lo, ip);
    return k && ip < P.s[k - 1].hi ? &P.s[k - 1] : NULL;
}

int perfmap_stub_name(uint64_t ip, char *out, size_t cap) {
    if (!P.tried)
        open_map();
    if (!P.f)
        return -1;
    const stub *s = find(ip);
    if (!s) {
        read_on();
        s = find(ip);
    }
    if (!s)
        return -1;
    snprintf(out, cap, "%s", s->name);
    return 0;
}

void perfmap_release(void) {
    if (P.f)
        fclose(P.f);
    for (size_t i = 0; i < P.n; i++)
        free(P.s[i].name);
    free(P.s);
    memset(&P, 0, sizeof P);
}
