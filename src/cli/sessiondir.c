/* sessiondir.c: the session directory of a `dnprof run`, where every agent of the
 * run writes agent.<pid> to say where its trace is (trace/session.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "session.h"
#include "dnp_vec.h"

int cli_session_create(char *dir, size_t len) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    int n = snprintf(dir, len, "%s/dnprof-session.XXXXXX", tmp);
    if (n < 0 || (size_t)n >= len)
        return error("cannot create a session directory: TMPDIR '%s' is too long", tmp);
    if (!mkdtemp(dir)) /* mode 0700 */
        return error("cannot create a session directory in '%s': %s (set TMPDIR to a writable directory)",
                     tmp, strerror(errno));
    return 0;
}

static void chomp(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
}

static void copy(char *dst, size_t len, const char *src) {
    snprintf(dst, len, "%s", src);
}

/* Parses one agent file; lines are "key value". */
static void parse_agent(FILE *f, cli_session_agent *a) {
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        chomp(line);
        char *val = strchr(line, ' ');
        if (val)
            *val++ = 0;
        else
            val = line + strlen(line);
        if (!strcmp(line, "pid"))
            a->pid = strtol(val, NULL, 10);
        else if (!strcmp(line, "trace"))
            copy(a->trace, sizeof a->trace, val);
        else if (!strcmp(line, "cmdline"))
            copy(a->cmdline, sizeof a->cmdline, val);
        else if (!strcmp(line, "started")) {
            a->started = 1;
            copy(a->runtime, sizeof a->runtime, val);
        }
        else if (!strcmp(line, "error"))
            copy(a->error, sizeof a->error, *val ? val : "(no reason given)");
        else if (!strcmp(line, "say")) {
            size_t used = strlen(a->said);
            if (used + strlen(val) + 2 <= sizeof a->said)
                snprintf(a->said + used, sizeof a->said - used, "%s\n", val);
            else if (used + 5 <= sizeof a->said && !strstr(a->said, "...\n"))
                snprintf(a->said + used, sizeof a->said - used, "...\n");
        }
        else if (!strcmp(line, "complete")) {
            a->complete = 1;
            a->complete_events = strtoull(val, NULL, 10);
        }
    }
}

static int by_pid(const void *x, const void *y) {
    const cli_session_agent *a = x, *b = y;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

int cli_session_read(const char *dir, cli_session_agent **out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return error("cannot read the session directory '%s': %s", dir, strerror(errno));
    size_t n = 0, cap = 0;
    cli_session_agent *list = NULL;
    const size_t plen = strlen(DNP_SESSION_FILE_PREFIX);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, DNP_SESSION_FILE_PREFIX, plen) != 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (DNP_VEC_RESERVE(list, cap, n + 1, 4) != 0) {
            fclose(f);
            break;
        }
        cli_session_agent *a = &list[n++];
        memset(a, 0, sizeof *a);
        a->pid = strtol(e->d_name + plen, NULL, 10); /* until the file says */
        parse_agent(f, a);
        fclose(f);
    }
    closedir(d);
    if (n > 1)
        qsort(list, n, sizeof *list, by_pid);
    *out = list;
    return (int)n;
}

void cli_session_remove(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}
