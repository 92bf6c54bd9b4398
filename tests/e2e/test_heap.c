/* test_heap.c: heap snapshots against the "heap" scenario, which holds known
 * numbers of objects of its own classes (a static list, a chain of 300,000
 * nodes, an array behind one holder, ConditionalWeakTable values that only
 * dependent handles keep alive, a queue in a static class) and says how many,
 * and the holder's retained size from the object layouts. The snapshot must
 * say the same: exact counts, exact retained size, a path through a dependent
 * handle, paths that begin at the static fields that hold them; taken by attaching
 * (and detaching), from an agent loaded by dnprof run, and at exit; with
 * dotnet-gcdump's counts; a damaged snapshot refused clearly by every command. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

#define CHAIN 300000

typedef struct counts {
    long list, chain, array, cwt, holder_retained, item_size, cached;
} counts;

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Waits for "ready PID" in the program's output file and reads its counts. */
static pid_t wait_ready(const char *out_path, counts *c) {
    for (int i = 0; i < 3000; i++) {
        char *text = e2e_read_file(out_path, NULL);
        const char *ready = text ? strstr(text, "ready ") : NULL;
        const char *h = text ? strstr(text, "heap counts ") : NULL;
        if (ready && h && strchr(ready, '\n')) {
            pid_t pid = (pid_t)atol(ready + 6);
            int n = sscanf(h, "heap counts list=%ld chain=%ld array=%ld cwt=%ld bulk=%*d "
                              "holder_retained=%ld chain_retained=%*d list_item_size=%ld "
                              "cwt_value_size=%*d cached=%ld",
                           &c->list, &c->chain, &c->array, &c->cwt, &c->holder_retained,
                           &c->item_size, &c->cached);
            free(text);
            if (n != 7) {
                fprintf(stderr, "the scenario's counts line is not understood\n");
                return -1;
            }
            return pid;
        }
        free(text);
        sleep_ms(20);
    }
    fprintf(stderr, "the heap scenario never said it was ready\n");
    e2e_show_file("its output", out_path);
    return -1;
}

static const jv *type_of(const jv *report, const char *name) {
    const jv *types = json_get(report, "types");
    for (size_t i = 0; types && i < types->n; i++)
        if (json_str(json_at(types, i), "name") && !strcmp(json_str(json_at(types, i), "name"), name))
            return json_at(types, i);
    fprintf(stderr, "no type %s in the report\n", name);
    return NULL;
}

#define EXPECT_COUNT(rep, name, want)                                                            \
    do {                                                                                         \
        const jv *t_ = type_of(rep, name);                                                       \
        ASSERT_NE(t_, NULL);                                                                      \
        ASSERT_EQ((uint64_t)json_num(t_, "count"), (uint64_t)(want));                        \
    } while (0)

/* The report agrees with what the program holds. */
static int check_report(e2e_run *r, const char *snap, const counts *c) {
    const char *args[] = {"heap", "report", "--json", "--top", "0", snap, NULL};
    jv *rep = e2e_dnprof_json(r, args);
    ASSERT_NE(rep, NULL);
    EXPECT_COUNT(rep, "Scenarios.HeapListItem", c->list);
    EXPECT_COUNT(rep, "Scenarios.HeapChainNode", c->chain);
    EXPECT_COUNT(rep, "Scenarios.HeapArrayItem", c->array);
    EXPECT_COUNT(rep, "Scenarios.HeapHolder", 1);
    EXPECT_COUNT(rep, "Scenarios.HeapArrayItem[]", 1);
    EXPECT_COUNT(rep, "Scenarios.HeapCwtKey", c->cwt);
    EXPECT_COUNT(rep, "Scenarios.HeapCwtValue", c->cwt);
    const jv *holder = type_of(rep, "Scenarios.HeapHolder");
    ASSERT_EQ((uint64_t)json_num(holder, "retained"), (uint64_t)c->holder_retained);
    /* The chain: every node is retained by the head, nothing else. */
    const jv *chain = type_of(rep, "Scenarios.HeapChainNode");
    ASSERT_EQ((uint64_t)json_num(chain, "retained"), (uint64_t)json_num(chain, "bytes"));
    ASSERT_GE(json_num(chain, "bytes"), 24.0 * c->chain);
    /* The values behind dependent handles are retained by their keys. */
    const jv *key = type_of(rep, "Scenarios.HeapCwtKey");
    const jv *val = type_of(rep, "Scenarios.HeapCwtValue");
    ASSERT_EQ((uint64_t)json_num(key, "retained"),
                  (uint64_t)(json_num(key, "bytes") + json_num(val, "bytes")));
    ASSERT_GE(json_num(rep, "dependent_handles"), c->cwt);
    ASSERT_GT(json_num(json_get(rep, "roots"), "total"), 0);
    /* after a full GC every object is held by something: a root, a dependent
     * handle, or the non-GC heap (frozen literals and types) */
    ASSERT_EQ((uint64_t)json_num(json_get(rep, "unreachable"), "objects"), 0);
    ASSERT_GT(json_num(json_get(rep, "roots"), "non_gc_heap"), 0);
    json_free(rep);
    return 0;
}

/* The step k of path i of a heap paths --json answer, its type, its field. */
static const jv *step_of(const jv *p, size_t i, size_t k) {
    return json_at(json_get(json_at(json_get(p, "paths"), i), "steps"), k);
}

static int type_is(const jv *step, const char *want) {
    const char *t = json_str(step, "type");
    if (t && !strcmp(t, want))
        return 1;
    fprintf(stderr, "a step of type %s where %s was expected\n", t ? t : "(none)", want);
    return 0;
}

/* heap paths --json --max max --type type: NULL unless it parses and finds
 * want instances, every one reachable. */
static jv *paths_of(e2e_run *r, const char *snap, const char *type, const char *max, long want) {
    const char *args[] = {"heap", "paths", "--json", "--max", max, "--type", type, snap, NULL};
    jv *p = e2e_dnprof_json(r, args);
    if (p && ((uint64_t)json_num(p, "instances") != (uint64_t)want ||
              (uint64_t)json_num(p, "reachable") != (uint64_t)want)) {
        fprintf(stderr, "%s: %.0f instances, %.0f reachable, where %ld of each were expected\n", type,
                json_num(p, "instances"), json_num(p, "reachable"), want);
        json_free(p);
        return NULL;
    }
    return p;
}

/* The static class's queue: the path begins at the static field that holds it
 * (its pinned Object[] of statics is the runtime's, not the program's), then
 * the queue, its segment, the segment's slots, the item. */
static int check_static_paths(e2e_run *r, const char *snap, const counts *c) {
    jv *p = paths_of(r, snap, "Scenarios.HeapCachedItem", "1", c->cached);
    ASSERT_NE(p, NULL);
    const jv *path = json_at(json_get(p, "paths"), 0);
    ASSERT_STREQ(json_str(path, "root"), "static Scenarios.HeapCache.Items");
    const jv *steps = json_get(path, "steps");
    ASSERT(steps);
    ASSERT_EQ(steps->n, 4);
    ASSERT(type_is(json_at(steps, 0),
                   "System.Collections.Concurrent.ConcurrentQueue<Scenarios.HeapCachedItem>"));
    ASSERT(type_is(json_at(steps, 3), "Scenarios.HeapCachedItem"));
    json_free(p);
    /* the text form: [static ...] then the queue */
    const char *targs[] = {"heap", "paths", "--type", "Scenarios.HeapCachedItem", "--max", "1", snap, NULL};
    ASSERT_EQ(e2e_dnprof(r, targs), 0);
    ASSERT_STATUS(r, 0);
    char *text = e2e_read_file(r->out, NULL);
    ASSERT(text);
    const char *at = strstr(text, "[static Scenarios.HeapCache.Items]\n");
    int queue_next = at && strstr(at, "System.Collections.Concurrent.ConcurrentQueue") != NULL;
    if (!queue_next)
        fprintf(stderr, "heap paths said:\n%s", text);
    free(text);
    ASSERT(queue_next);
    /* an instance field of the static list names both: the static, then the list's array */
    p = paths_of(r, snap, "Scenarios.HeapListItem", "1", c->list);
    ASSERT_NE(p, NULL);
    ASSERT_STREQ(json_str(json_at(json_get(p, "paths"), 0), "root"), "static Scenarios.HeapScenario.s_list");
    ASSERT(type_is(step_of(p, 0, 0), "System.Collections.Generic.List<Scenarios.HeapListItem>"));
    ASSERT_STREQ(json_str(step_of(p, 0, 1), "field"), "_items");
    json_free(p);
    return 0;
}

/* Paths to the ConditionalWeakTable values go through a dependent handle from
 * their keys, which the static list s_keys holds. */
static int check_paths(e2e_run *r, const char *snap, const counts *c) {
    jv *p = paths_of(r, snap, "Scenarios.HeapCwtValue", "3", c->cwt);
    ASSERT_NE(p, NULL);
    const jv *paths = json_get(p, "paths");
    ASSERT(paths);
    ASSERT_EQ(paths->n, 3);
    for (size_t i = 0; i < paths->n; i++) {
        const jv *steps = json_get(json_at(paths, i), "steps");
        ASSERT(steps);
        ASSERT_GE(steps->n, 2);
        const jv *last = json_at(steps, steps->n - 1);
        ASSERT(!strcmp(json_str(last, "type"), "Scenarios.HeapCwtValue"));
        ASSERT(!strcmp(json_str(last, "via"), "dependent handle"));
        ASSERT(!strcmp(json_str(json_at(steps, steps->n - 2), "type"), "Scenarios.HeapCwtKey"));
        /* s_keys -> its List -> the List's array -> a key -> its value */
        ASSERT_STREQ(json_str(json_at(paths, i), "root"), "static Scenarios.HeapScenario.s_keys");
        ASSERT_EQ(steps->n, 4);
        ASSERT(type_is(json_at(steps, 0), "System.Collections.Generic.List<Scenarios.HeapCwtKey>"));
        ASSERT(type_is(json_at(steps, 1), "Scenarios.HeapCwtKey[]"));
    }
    json_free(p);
    /* the holder's array is in its field Items, each chain node in the previous one's Next */
    const char *hargs[] = {"heap", "paths", "--json", "--max", "1", "--type",
                           "Scenarios.HeapArrayItem[]", snap, NULL};
    p = e2e_dnprof_json(r, hargs);
    ASSERT_NE(p, NULL);
    const jv *steps = json_get(json_at(json_get(p, "paths"), 0), "steps");
    ASSERT(steps);
    ASSERT_GE(steps->n, 2);
    ASSERT(!strcmp(json_str(json_at(steps, steps->n - 2), "type"), "Scenarios.HeapHolder"));
    ASSERT(!strcmp(json_str(json_at(steps, steps->n - 1), "via"), "field"));
    ASSERT(json_str(json_at(steps, steps->n - 1), "field"));
    ASSERT(!strcmp(json_str(json_at(steps, steps->n - 1), "field"), "Items"));
    json_free(p);
    const char *cargs[] = {"heap", "paths", "--json", "--max", "3", "--type",
                           "Scenarios.HeapChainNode", snap, NULL};
    p = e2e_dnprof_json(r, cargs);
    ASSERT_NE(p, NULL);
    steps = json_get(json_at(json_get(p, "paths"), 2), "steps");
    ASSERT(steps);
    ASSERT_GE(steps->n, 3);
    ASSERT(json_str(json_at(steps, steps->n - 1), "field"));
    ASSERT(!strcmp(json_str(json_at(steps, steps->n - 1), "field"), "Next"));
    json_free(p);
    /* and the text form says it */
    const char *targs[] = {"heap", "paths", "--type", "Scenarios.HeapCwtValue", "--max", "1", snap, NULL};
    ASSERT_EQ(e2e_dnprof(r, targs), 0);
    ASSERT_STATUS(r, 0);
    char *text = e2e_read_file(r->out, NULL);
    ASSERT(text);
    ASSERT_CONTAINS(text, "dependent handle");
    free(text);
    return 0;
}

/* The .heapsnapshot follows the format's rules: the arrays as long as the meta
 * says, edge counts adding up, every edge to a node's first field, every name
 * a string. */
static int check_heapsnapshot(e2e_run *r, const char *snap) {
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/a.heapsnapshot", r->dir);
    const char *args[] = {"convert", "--format", "heapsnapshot", "-o", out, snap, NULL};
    ASSERT_EQ(e2e_dnprof(r, args), 0);
    ASSERT_STATUS(r, 0);
    size_t len;
    char *text = e2e_read_file(out, &len);
    ASSERT(text);
    char err[256];
    jv *d = json_parse(text, len, err, sizeof err);
    free(text);
    ASSERT_NE(d, NULL);
    const jv *meta = json_get(json_get(d, "snapshot"), "meta");
    const jv *nf = json_get(meta, "node_fields"), *ef = json_get(meta, "edge_fields");
    ASSERT(nf);
    ASSERT(ef);
    ASSERT_EQ(ef->n, 3);
    size_t ec_at = nf->n, name_at = nf->n;
    for (size_t i = 0; i < nf->n; i++) {
        if (!strcmp(json_at(nf, i)->str, "edge_count"))
            ec_at = i;
        if (!strcmp(json_at(nf, i)->str, "name"))
            name_at = i;
    }
    ASSERT_LT(ec_at, nf->n);
    ASSERT_LT(name_at, nf->n);
    double nodes = json_num(json_get(d, "snapshot"), "node_count");
    double edges = json_num(json_get(d, "snapshot"), "edge_count");
    const jv *na = json_get(d, "nodes"), *ea = json_get(d, "edges"), *sa = json_get(d, "strings");
    ASSERT(na);
    ASSERT(ea);
    ASSERT(sa);
    ASSERT_EQ(na->n, (uint64_t)nodes * nf->n);
    ASSERT_EQ(ea->n, (uint64_t)edges * 3);
    /* DevTools reads nodes and edges into Uint32Arrays */
    for (size_t i = 0; i < na->n; i++)
        ASSERT(na->items[i]->type == JV_NUM && na->items[i]->num >= 0 && na->items[i]->num < 4294967296.0);
    for (size_t i = 0; i < ea->n; i++)
        ASSERT(ea->items[i]->type == JV_NUM && ea->items[i]->num >= 0 && ea->items[i]->num < 4294967296.0);
    /* and finds the arrays in this order */
    {
        size_t tl;
        char *t = e2e_read_file(out, &tl);
        ASSERT(t);
        const char *order[] = {"\"nodes\"", "\"edges\"", "\"samples\"", "\"locations\"", "\"strings\""};
        const char *at = t;
        for (size_t i = 0; i < 5; i++) {
            const char *next = strstr(at, order[i]);
            ASSERT_NE(next, NULL);
            at = next;
        }
        free(t);
    }
    uint64_t sum = 0;
    for (size_t v = 0; v < (size_t)nodes; v++) {
        sum += (uint64_t)na->items[v * nf->n + ec_at]->num;
        ASSERT_LT(na->items[v * nf->n + name_at]->num, (double)sa->n);
    }
    ASSERT_EQ(sum, (uint64_t)edges);
    for (size_t e = 0; e < (size_t)edges; e++) {
        uint64_t to = (uint64_t)ea->items[e * 3 + 2]->num;
        ASSERT_EQ(to % nf->n, 0);
        ASSERT_LT(to, na->n);
    }
    ASSERT_GT(nodes, CHAIN);
    json_free(d);
    return 0;
}

static int touch(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int agent_loaded(pid_t pid) {
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    char *text = e2e_read_file(maps, NULL);
    int has = text && strstr(text, "/libdnprof.so") != NULL;
    free(text);
    return has;
}

/* A program started without dnprof: attach, snapshot, detach. */
TEST(e2e_heap_snapshot_attach) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_snapshot_attach"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], snap[PATH_MAX], waitarg[PATH_MAX + 8];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(snap, sizeof snap, "%s/a.dnheap", r.dir);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    const char *argv[] = {e2e_dotnet(), dll, "heap", waitarg, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t child = e2e_spawn((char *const *)argv, env, r.dir, out, NULL, errp);
    ASSERT_GT(child, 0);
    counts c;
    pid_t pid = wait_ready(out, &c);
    int ok = pid > 0;
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *args[] = {"snapshot", "-o", snap, pidtext, NULL};
    ok = ok && e2e_dnprof(&r, args) == 0 && r.status == 0;
    if (!ok)
        e2e_show_file("dnprof snapshot said", r.err);
    /* again at once, while the first agent may still be on its way out */
    char snap2[PATH_MAX];
    snprintf(snap2, sizeof snap2, "%s/again.dnheap", r.dir);
    const char *again[] = {"snapshot", "-o", snap2, pidtext, NULL};
    int ok2 = ok && e2e_dnprof(&r, again) == 0 && r.status == 0;
    if (ok && !ok2)
        e2e_show_file("the second dnprof snapshot said", r.err);
    int detached = 0; /* the runtime unloads the agent a moment after the detach */
    for (int i = 0; ok && i < 1000 && !detached; i++, sleep_ms(20))
        detached = !agent_loaded(pid);
    touch(go);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT(ok2);
    ASSERT(detached); /* it was not there before, so it is gone after */
    ASSERT_EQ(status, 0); /* the program ran on and ended as usual */
    char *said = e2e_read_file(r.err, NULL);
    ASSERT(said);
    ASSERT_CONTAINS(said, "snapshot of pid");
    free(said);
    ASSERT_EQ(c.chain, CHAIN);
    if (check_report(&r, snap, &c) || check_paths(&r, snap, &c) || check_static_paths(&r, snap, &c) ||
        check_heapsnapshot(&r, snap) || check_report(&r, snap2, &c))
        return 1;
    return 0;
}

static int strstr_file(const char *path, const char *text) {
    char *said = e2e_read_file(path, NULL);
    int ok = said && strstr(said, text);
    free(said);
    return ok;
}

/* Whether the file at path is one line that holds text. */
static int one_line_with(const char *path, const char *text) {
    char *said = e2e_read_file(path, NULL);
    char *nl = said ? strchr(said, '\n') : NULL;
    int ok = said && strstr(said, text) && nl && !nl[1];
    free(said);
    return ok;
}

/* Where the e2e containers' TMPDIR is (e2e_spawn_contained): a tmpfs seen
 * only inside each; an agent "baked into the image" goes there. */
#define IMAGE_AGENT "/var/tmp/dnprof-e2e-container/image/libdnprof.so"

/* From the host into a container (its own pids, its own /tmp, the agent's
 * file hidden): snapshot by the host's pid has the program's exact counts;
 * attach, then detach from another dnprof, by the host's pid, brings the
 * trace out; the program runs on and ends as usual. With image, the agent is
 * a copy at IMAGE_AGENT inside the container only, named with --agent-path:
 * nothing is copied in, and the copy is still there after the detach. */
#define CONTAINER_UID 1000 /* the user who makes the container in its own user namespace */

/* mode 0: the agent copied in; 1: baked into the image (--agent-path); 2: copied
 * into a container of a user namespace of its own, whose root is CONTAINER_UID
 * outside and whose file systems take only files of the users it maps; 3: a
 * container whose /tmp is read-only and whose TMPDIR is not. */
static int container_snapshot_detach(e2e_run *rp, int mode) {
    e2e_run r = *rp;
    int image = mode == 1;
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN"), *agent = e2e_env("DNPROF_AGENT");
    ASSERT(dll);
    ASSERT(bin);
    ASSERT(agent);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], snap[PATH_MAX], waitarg[PATH_MAX + 8], staged[PATH_MAX];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(snap, sizeof snap, "%s/c.dnheap", r.dir);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    snprintf(staged, sizeof staged, "%s/staged-libdnprof.so", r.dir);
    if (image) { /* put in place inside, then gone from the host's view */
        size_t len;
        char *bytes = e2e_read_file(agent, &len);
        FILE *f = bytes ? fopen(staged, "wb") : NULL;
        ASSERT(f);
        ASSERT_EQ(fwrite(bytes, 1, len, f), len);
        fclose(f);
        free(bytes);
    }
    const char *plain[] = {e2e_dotnet(), dll, "heap", waitarg, NULL};
    const char *rotmp[] = {"sh", "-c", "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && exec \"$@\"", "sh",
                           e2e_dotnet(), dll, "heap", waitarg, NULL};
    const char *baked[] = {"sh", "-c",
                           "mkdir -p \"${1%/*}\" && cp \"$0\" \"$1\" && rm \"$0\" && shift && exec \"$@\"",
                           staged, IMAGE_AGENT, e2e_dotnet(), dll, "heap", waitarg, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t host = 0;
    pid_t child = mode == 2 ? e2e_spawn_contained_as((char *const *)plain, env, r.dir, out, errp, agent,
                                                     CONTAINER_UID, &host)
                            : e2e_spawn_contained((char *const *)(image ? baked : mode == 3 ? rotmp : plain), env,
                                                  r.dir, out, errp, agent, &host);
    ASSERT_GT(child, 0);
    counts c;
    pid_t inside = wait_ready(out, &c);
    int ok = inside > 0 && inside != host; /* it knows itself by another pid */
    char pidtext[32], in_image[PATH_MAX], copied[PATH_MAX];
    snprintf(pidtext, sizeof pidtext, "%d", (int)host);
    snprintf(in_image, sizeof in_image, "/proc/%d/root" IMAGE_AGENT, (int)host);
    snprintf(copied, sizeof copied, "/proc/%d/root/tmp/dnprof-%u/libdnprof.so", (int)host, (unsigned)geteuid());
    if (image) { /* only the program sees it; a path that is not there is one line */
        ok = ok && access(IMAGE_AGENT, F_OK) != 0 && access(in_image, F_OK) == 0;
        const char *bad[] = {"attach", "--agent-path", "/var/tmp/dnprof-e2e-container/image/nope.so", pidtext, NULL};
        ok = ok && e2e_dnprof(&r, bad) == 0 && r.status == 1 &&
             one_line_with(r.err, "No such file or directory in the container");
        const char *doctor[] = {"doctor", "--agent-path", IMAGE_AGENT, pidtext, NULL};
        ok = ok && e2e_dnprof(&r, doctor) == 0 && r.status == 0 && strstr_file(r.out, "(--agent-path)");
        if (!ok)
            e2e_show_file("dnprof said", image ? r.err : r.out);
    }
    const char *args[] = {"snapshot", "-o", snap, pidtext, image ? "--agent-path" : NULL, IMAGE_AGENT, NULL};
    ok = ok && e2e_dnprof(&r, args) == 0 && r.status == 0;
    if (!ok)
        e2e_show_file("dnprof snapshot said", r.err);
    /* attach, and detach from elsewhere */
    /* (in a user namespace, with wall-clock samples: their walks parse unwind tables, which by attach
     * into a container are kept nowhere) */
    const char *att[] = {bin, "attach", pidtext, "-o", r.trace, image ? "--agent-path" : NULL, IMAGE_AGENT, NULL};
    if (mode == 2)
        att[5] = "--sample=wall", att[6] = NULL;
    pid_t a = ok ? e2e_spawn((char *const *)att, NULL, r.dir, r.out, NULL, r.err) : -1;
    int said = 0;
    for (int i = 0; a > 0 && i < 1500 && !said; i++, sleep_ms(20)) {
        char *text = e2e_read_file(r.err, NULL);
        said = text && strstr(text, "attached to pid");
        free(text);
    }
    const char *det[] = {"detach", pidtext, NULL};
    e2e_run d = r;
    snprintf(d.out, sizeof d.out, "%s/detach.out", r.dir);
    snprintf(d.err, sizeof d.err, "%s/detach.err", r.dir);
    ok = ok && said && e2e_dnprof(&d, det) == 0 && d.status == 0;
    int ast = -1;
    if (a > 0)
        e2e_wait(a, 60000, &ast);
    if (!ok || ast != 0) {
        e2e_show_file("dnprof attach said", r.err);
        e2e_show_file("dnprof detach said", d.err);
    }
    int detached = 0;
    for (int i = 0; ok && i < 1000 && !detached; i++, sleep_ms(20))
        detached = !agent_loaded(host);
    /* --agent-path: the program's copy stays, none was made */
    int kept = !image || (access(in_image, F_OK) == 0 && access(copied, F_OK) != 0);
    /* a rootless container's own user needs no root: it owns the namespace */
    char mine[PATH_MAX] = "", ruid[32], rgid[32];
    if (mode == 2 && ok && detached) {
        snprintf(mine, sizeof mine, "/var/tmp/dnprof-e2e-userns.%d.dnheap", (int)getpid());
        snprintf(ruid, sizeof ruid, "--reuid=%d", CONTAINER_UID);
        snprintf(rgid, sizeof rgid, "--regid=%d", CONTAINER_UID);
        const char *own[] = {"setpriv", ruid, rgid, "--clear-groups", bin, "snapshot", "-o", mine, pidtext, NULL};
        ok = e2e_exec(&r, (char *const *)own, NULL) == 0 && r.status == 0;
        fprintf(stderr, "e2e: a snapshot by uid %d, the container's own user, without root: %s\n", CONTAINER_UID,
                ok ? "taken" : "refused");
        if (!ok)
            e2e_show_file("dnprof snapshot as the container's user said", r.err);
        /* and nothing is left in the container once the agent is gone: no control directory, no
         * unwind tables kept in its HOME */
        char left[PATH_MAX], cache[PATH_MAX];
        snprintf(left, sizeof left, "/proc/%d/root/tmp/dnprof-0", (int)host);
        snprintf(cache, sizeof cache, "/proc/%d/root/var/tmp/dnprof-e2e-container/.cache", (int)host);
        int clean = 0;
        for (int i = 0; ok && i < 250 && !clean; i++, sleep_ms(20))
            clean = access(left, F_OK) != 0 && access(cache, F_OK) != 0;
        if (ok && !clean)
            fprintf(stderr, "e2e: left in the container: %s%s\n", access(left, F_OK) == 0 ? left : "",
                    access(cache, F_OK) == 0 ? cache : "");
        ok = ok && clean;
    }
    touch(go);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT_EQ(ast, 0);
    ASSERT(detached);
    ASSERT(kept);
    ASSERT_EQ(status, 0); /* the program ran on and ended as usual */
    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_InitializeForAttach, 1);
    ASSERT_NE(t, NULL); /* the trace came out of the container */
    dnp_trace_free(t);
    ASSERT_EQ(c.chain, CHAIN);
    if (check_report(&r, snap, &c))
        return 1;
    /* the report names the program as the host knows it, and as it knows itself */
    const char *text[] = {"heap", "report", "--top", "1", snap, NULL};
    char both[96];
    snprintf(both, sizeof both, "pid %d (pid %d on the host)", (int)inside, (int)host);
    ASSERT_EQ(e2e_dnprof(&r, text), 0);
    if (!strstr_file(r.out, both))
        e2e_show_file("dnprof heap report said", r.out);
    ASSERT(strstr_file(r.out, both));
    if (mine[0]) {
        int bad = check_report(&r, mine, &c);
        unlink(mine);
        ASSERT_EQ(bad, 0);
    }
    return 0;
}

TEST(e2e_container_snapshot_detach) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_container_snapshot_detach"), 0);
    if (!e2e_can_contain())
        E2E_SKIP("unshare cannot make PID and mount namespaces here (needs root or user namespaces)");
    return container_snapshot_detach(&r, 0);
}

/* The same in a container that maps its own users, as rootless Podman and
 * user-namespaced Kubernetes pods make: the program is root inside and
 * CONTAINER_UID outside, its control directory is named by its own uid, files
 * there are made as its user (root outside is no user of that namespace), and
 * the agent lets the host's root in, which shows there as the overflow uid. */
TEST(e2e_container_user_namespace) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_container_user_namespace"), 0);
    if (geteuid() != 0 || !e2e_can_contain_as(CONTAINER_UID))
        E2E_SKIP("needs root, and user namespaces that uid 1000 may make");
    return container_snapshot_detach(&r, 2);
}

/* The same in a container whose root file system, /tmp with it, is read-only
 * (Kubernetes' readOnlyRootFilesystem) and whose TMPDIR is a writable volume:
 * the control directory, and the agent's copy, go there. */
TEST(e2e_container_read_only_tmp) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_container_read_only_tmp"), 0);
    if (!e2e_can_contain())
        E2E_SKIP("unshare cannot make PID and mount namespaces here (needs root or user namespaces)");
    return container_snapshot_detach(&r, 3);
}

/* The same with the agent baked into the "image" (--agent-path). */
TEST(e2e_container_agent_path) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_container_agent_path"), 0);
    if (!e2e_can_contain())
        E2E_SKIP("unshare cannot make PID and mount namespaces here (needs root or user namespaces)");
    return container_snapshot_detach(&r, 1);
}

/* Errors that name the cause and the fix, from the host into a container
 * whose /tmp is read-only: attach and snapshot say so in one line and exit 1;
 * a dnprof without CAP_SYS_PTRACE says what it lacks; the program runs on. */
TEST(e2e_container_errors) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_container_errors"), 0);
    if (!e2e_can_contain())
        E2E_SKIP("unshare cannot make PID and mount namespaces here (needs root or user namespaces)");
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN"), *agent = e2e_env("DNPROF_AGENT");
    ASSERT(dll);
    ASSERT(bin);
    ASSERT(agent);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], waitarg[PATH_MAX + 8], pidtext[32];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    /* read-only for this mount namespace only: the container's own /tmp (made
     * a mount point first: where the build tree lives under /tmp, the
     * container shares the host's /tmp, which is no mount of its own) */
    const char *argv[] = {"sh", "-c", "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && exec \"$@\"", "sh",
                          e2e_dotnet(), dll, "heap", waitarg, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t host = 0;
    pid_t child = e2e_spawn_contained((char *const *)argv, env, r.dir, out, errp, agent, &host);
    ASSERT_GT(child, 0);
    counts c;
    int ok = wait_ready(out, &c) > 0;
    snprintf(pidtext, sizeof pidtext, "%d", (int)host);
    /* its TMPDIR read-only too, once its runtime has made its socket there
     * (a socket answers on a read-only file system): else the agent goes there */
    const char *ro[] = {"nsenter", "-t", pidtext, "-m", "mount", "-o", "remount,ro", "/var/tmp/dnprof-e2e-container",
                        NULL};
    ok = ok && e2e_exec(&r, (char *const *)ro, NULL) == 0 && r.status == 0;
    if (!ok)
        e2e_show_file("nsenter mount said", r.err);
    /* "/tmp is read-only", or "/tmp/dnprof-UID is read-only" where the
     * container keeps the host's /tmp and the directory is there already */
    const char *att[] = {"attach", "--duration", "1s", pidtext, NULL};
    ok = ok && e2e_dnprof(&r, att) == 0 && r.status == 1 && one_line_with(r.err, " is read-only") &&
         one_line_with(r.err, "--agent-path");
    if (!ok)
        e2e_show_file("dnprof attach said", r.err);
    const char *snap[] = {"snapshot", pidtext, NULL};
    ok = ok && e2e_dnprof(&r, snap) == 0 && r.status == 1 && one_line_with(r.err, " is read-only");
    if (!ok)
        e2e_show_file("dnprof snapshot said", r.err);
    const char *doctor[] = {"doctor", pidtext, NULL};
    ok = ok && e2e_dnprof(&r, doctor) == 0 && r.status == 1 && strstr_file(r.out, "FAIL  pid");
    if (!ok)
        e2e_show_file("dnprof doctor said", r.out);
    /* root without CAP_SYS_PTRACE may not look into a process that has it */
    const char *noptrace[] = {"setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace", bin, "attach",
                              pidtext, NULL};
    ok = ok && e2e_exec(&r, (char *const *)noptrace, NULL) == 0 && r.status == 1 &&
         one_line_with(r.err, "run dnprof as root, or give it CAP_SYS_PTRACE");
    if (!ok)
        e2e_show_file("dnprof attach without CAP_SYS_PTRACE said", r.err);
    touch(go);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT_EQ(status, 0); /* the program ran on and ended as usual */
    return 0;
}

/* An agent loaded by dnprof run is asked, and stays. */
TEST(e2e_heap_snapshot_run) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_snapshot_run"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *bin = e2e_env("DNPROF_BIN");
    ASSERT(dll);
    ASSERT(bin);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], snap[PATH_MAX], waitarg[PATH_MAX + 8];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(snap, sizeof snap, "%s/b.dnheap", r.dir);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    const char *argv[] = {bin, "run", "-q", "-o", r.trace, "--", e2e_dotnet(), dll, "heap", waitarg, NULL};
    pid_t child = e2e_spawn((char *const *)argv, NULL, r.dir, out, NULL, errp);
    ASSERT_GT(child, 0);
    counts c;
    pid_t pid = wait_ready(out, &c);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *args[] = {"snapshot", "-o", snap, pidtext, NULL};
    int ok = pid > 0 && agent_loaded(pid) && e2e_dnprof(&r, args) == 0 && r.status == 0;
    if (!ok)
        e2e_show_file("dnprof snapshot said", r.err);
    int stayed = ok && agent_loaded(pid);
    touch(go);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT(stayed);
    ASSERT_EQ(status, 0);
    dnp_trace *t = e2e_load(r.trace); /* the run's trace is whole too */
    ASSERT_NE(t, NULL);
    /* and holds the snapshot's GC, the program's only induced one, a gen 2 */
    size_t induced = 0, induced_gen2 = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *ev = &t->events[i];
        if (ev->kind != DNP_EV_GarbageCollectionStarted || e2e_field(ev, 1) != 1 /* induced */)
            continue;
        induced++;
        induced_gen2 += (e2e_field(ev, 0) & 4) != 0;
    }
    char why[256];
    int nests = e2e_check_nesting(t, why, sizeof why);
    if (nests < 0)
        fprintf(stderr, "%s\n", why);
    dnp_trace_free(t);
    ASSERT_EQ(induced, 1);
    ASSERT_EQ(induced_gen2, 1);
    ASSERT_EQ(nests, 0);
    return check_report(&r, snap, &c) || check_static_paths(&r, snap, &c);
}

/* dnprof run --heap-at exit. */
TEST(e2e_heap_at_exit) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_at_exit"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char snap[PATH_MAX];
    snprintf(snap, sizeof snap, "%s/exit.dnheap", r.dir);
    const char *args[] = {"run", "-o", r.trace, "--heap-at", "exit", "--heap-output", snap,
                          "--events", "classes", "--", e2e_dotnet(), dll, "heap", NULL};
    ASSERT_EQ(e2e_dnprof(&r, args), 0);
    if (r.status != 0)
        e2e_show_file("dnprof run said", r.err);
    ASSERT_STATUS(&r, 0);
    counts c;
    ASSERT_GT(wait_ready(r.out, &c), 0);
    char *said = e2e_read_file(r.err, NULL);
    ASSERT(said);
    ASSERT_CONTAINS(said, "heap snapshot");
    free(said);
    return check_report(&r, snap, &c);
}

/* Copies the first len bytes of from into to (len < 0: all, then flips one
 * byte at -len). */
static int copy_damaged(const char *from, const char *to, long len) {
    size_t n;
    char *data = e2e_read_file(from, &n);
    if (!data)
        return -1;
    size_t keep = len >= 0 ? (size_t)len : n;
    if (len < 0 && (size_t)-len < n)
        data[-len] ^= 0x5a;
    FILE *f = fopen(to, "wb");
    int rc = f && fwrite(data, 1, keep, f) == keep ? 0 : -1;
    if (f)
        fclose(f);
    free(data);
    return rc;
}

/* Every heap command refuses a damaged snapshot with one clear line. */
TEST(e2e_heap_damaged) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_damaged"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char snap[PATH_MAX], cut[PATH_MAX], bad[PATH_MAX], hs[PATH_MAX];
    snprintf(snap, sizeof snap, "%s/whole.dnheap", r.dir);
    snprintf(cut, sizeof cut, "%s/cut.dnheap", r.dir);
    snprintf(bad, sizeof bad, "%s/bad.dnheap", r.dir);
    snprintf(hs, sizeof hs, "%s/out.heapsnapshot", r.dir);
    const char *run[] = {"run", "-q", "-o", r.trace, "--heap-at", "exit", "--heap-output", snap,
                         "--", e2e_dotnet(), dll, "heap", "chain=20000", NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_STATUS(&r, 0);
    struct stat st;
    ASSERT_EQ(stat(snap, &st), 0);
    ASSERT_GT(st.st_size, 100000);
    /* the whole one reads */
    const char *whole[] = {"heap", "report", snap, NULL};
    ASSERT_EQ(e2e_dnprof(&r, whole), 0);
    ASSERT_STATUS(&r, 0);
    /* and 'dnprof heap FILE' is the same report */
    char *said = e2e_read_file(r.out, NULL), *again;
    ASSERT(said);
    ASSERT_CONTAINS(said, "Scenarios.HeapHolder");
    const char *bare[] = {"heap", snap, NULL};
    ASSERT_EQ(e2e_dnprof(&r, bare), 0);
    ASSERT_STATUS(&r, 0);
    again = e2e_read_file(r.out, NULL);
    ASSERT(again);
    ASSERT_STR_EQ(again, said);
    free(said);
    free(again);
    const char *neither[] = {"heap", "nosuchfile", NULL};
    ASSERT_EQ(e2e_dnprof(&r, neither), 0);
    ASSERT_STATUS(&r, 2);
    struct {
        const char *file, *word;
    } cases[] = {{cut, "truncated"}, {bad, "corrupt"}};
    ASSERT_EQ(copy_damaged(snap, cut, (long)st.st_size / 2), 0);
    ASSERT_EQ(copy_damaged(snap, bad, -(long)st.st_size / 3), 0);
    for (size_t k = 0; k < 2; k++) {
        const char *f = cases[k].file;
        const char *cmds[][9] = {
            {"heap", "report", f, NULL},
            {"heap", "report", "--json", f, NULL},
            {"heap", "paths", "--type", "Scenarios.HeapHolder", f, NULL},
            {"heap", "diff", snap, f, NULL},
            {"heap", "diff", f, snap, NULL},
            {"convert", "--format", "heapsnapshot", "-o", hs, f, NULL},
        };
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            ASSERT_EQ(e2e_dnprof(&r, cmds[i]), 0);
            char *err = e2e_read_file(r.err, NULL);
            int clear = err && strstr(err, f) && strstr(err, cases[k].word) && r.status == 1;
            if (!clear)
                fprintf(stderr, "%s %s on a %s snapshot said: %s\n", cmds[i][0], cmds[i][1],
                        cases[k].word, err ? err : "(nothing)");
            free(err);
            ASSERT(clear);
        }
    }
    /* not a snapshot at all */
    const char *notone[] = {"heap", "report", r.trace, NULL};
    ASSERT_EQ(e2e_dnprof(&r, notone), 0);
    ASSERT_STATUS(&r, 1);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT(err);
    ASSERT_CONTAINS(err, "not a dnprof heap snapshot");
    free(err);
    return 0;
}

/* Attach errors are clear. */
TEST(e2e_heap_snapshot_errors) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_snapshot_errors"), 0);
    const char *none[] = {"snapshot", "999999999", NULL};
    ASSERT_EQ(e2e_dnprof(&r, none), 0);
    ASSERT_NE(r.status, 0);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT(err);
    ASSERT((strstr(err, "no such process") || strstr(err, "pid")));
    free(err);
    /* a process that is not .NET */
    const char *argv[] = {"sleep", "30", NULL};
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/sleep.out", r.dir);
    pid_t p = e2e_spawn((char *const *)argv, NULL, r.dir, out, NULL, out);
    ASSERT_GT(p, 0);
    sleep_ms(100);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)p);
    const char *notnet[] = {"snapshot", pidtext, NULL};
    ASSERT_EQ(e2e_dnprof(&r, notnet), 0);
    kill(p, SIGKILL);
    int st;
    e2e_wait(p, 5000, &st);
    ASSERT_STATUS(&r, 1);
    err = e2e_read_file(r.err, NULL);
    ASSERT(err);
    ASSERT_CONTAINS(err, pidtext);
    ASSERT_CONTAINS(err, ".NET");
    free(err);
    const char *usage[] = {"snapshot", NULL};
    ASSERT_EQ(e2e_dnprof(&r, usage), 0);
    ASSERT_STATUS(&r, 2);
    return 0;
}

/* dotnet-gcdump, on PATH or where `dotnet tool install -g` puts it; NULL if absent. */
static const char *gcdump_path(char *buf, size_t cap) {
    const char *home = getenv("HOME");
    char tools[PATH_MAX];
    snprintf(tools, sizeof tools, "%s/.dotnet/tools", home != NULL ? home : "");
    return e2e_which("dotnet-gcdump", tools, buf, cap);
}

/* A number with thousands separators at *p; -1 if none. */
static long grouped(const char **p) {
    while (**p == ' ')
        (*p)++;
    long v = -1;
    while ((**p >= '0' && **p <= '9') || (**p == ',' && v >= 0)) {
        if (**p != ',')
            v = (v < 0 ? 0 : v * 10) + (**p - '0');
        (*p)++;
    }
    return v;
}

/* The count of a type in `dotnet-gcdump report` (rows: bytes, count, type,
 * [module]; a type can have a row per size class). */
static long gcdump_count(const char *report, const char *type) {
    long total = 0;
    size_t tl = strlen(type);
    for (const char *line = report; line && *line;) {
        const char *p = line;
        long size = grouped(&p), count = size >= 0 ? grouped(&p) : -1;
        while (*p == ' ')
            p++;
        if (count >= 0 && !strncmp(p, type, tl) && (p[tl] == ' ' || p[tl] == '\n' || !p[tl]))
            total += count;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return total;
}

/* dotnet-gcdump and dnprof on the same process count the program's types alike. */
TEST(e2e_heap_gcdump_agrees) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_gcdump_agrees"), 0);
    char tool[PATH_MAX];
    if (gcdump_path(tool, sizeof tool) == NULL)
        E2E_SKIP("dotnet-gcdump is not installed (tools/install-deps, or: dotnet tool install -g dotnet-gcdump)");
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], snap[PATH_MAX], gd[PATH_MAX],
        waitarg[PATH_MAX + 8];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(snap, sizeof snap, "%s/c.dnheap", r.dir);
    snprintf(gd, sizeof gd, "%s/c.gcdump", r.dir);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    const char *argv[] = {e2e_dotnet(), dll, "heap", "chain=50000", waitarg, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t child = e2e_spawn((char *const *)argv, env, r.dir, out, NULL, errp);
    ASSERT_GT(child, 0);
    counts c;
    pid_t pid = wait_ready(out, &c);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *collect[] = {tool, "collect", "-p", pidtext, "-o", gd, NULL};
    int ok = pid > 0 && e2e_exec(&r, (char *const *)collect, NULL) == 0 && r.status == 0;
    if (!ok)
        e2e_show_file("dotnet-gcdump collect said", r.out);
    const char *args[] = {"snapshot", "-o", snap, pidtext, NULL};
    int ok2 = ok && e2e_dnprof(&r, args) == 0 && r.status == 0;
    touch(go);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT(ok2);
    const char *report[] = {tool, "report", gd, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)report, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *gtext = e2e_read_file(r.out, NULL);
    ASSERT(gtext);
    const char *rargs[] = {"heap", "report", "--json", "--top", "0", snap, NULL};
    jv *rep = e2e_dnprof_json(&r, rargs);
    ASSERT_NE(rep, NULL);
    static const char *const mine[] = {"Scenarios.HeapListItem", "Scenarios.HeapChainNode",
                                       "Scenarios.HeapArrayItem", "Scenarios.HeapHolder",
                                       "Scenarios.HeapArrayItem[]", "Scenarios.HeapCwtKey",
                                       "Scenarios.HeapCwtValue", "Scenarios.HeapListItem[]"};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
        const jv *t = type_of(rep, mine[i]);
        ASSERT_NE(t, NULL);
        long g = gcdump_count(gtext, mine[i]);
        if ((long)json_num(t, "count") != g)
            fprintf(stderr, "%s: dnprof %ld, dotnet-gcdump %ld\n", mine[i],
                    (long)json_num(t, "count"), g);
        ASSERT_EQ((uint64_t)json_num(t, "count"), (uint64_t)g);
        ASSERT_GT(g, 0);
    }
    ASSERT_EQ(gcdump_count(gtext, "Scenarios.HeapChainNode"), 50000);
    json_free(rep);
    free(gtext);
    return 0;
}

/* dnprof heap diff: two runs that hold different numbers of objects. */
TEST(e2e_heap_diff) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_diff"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%s/a.dnheap", r.dir);
    snprintf(b, sizeof b, "%s/b.dnheap", r.dir);
    const char *runa[] = {"run", "-q", "-o", r.trace, "--heap-at", "exit", "--heap-output", a, "--",
                          e2e_dotnet(), dll, "heap", "list=1000", "chain=1000", NULL};
    const char *runb[] = {"run", "-q", "-o", r.trace, "--heap-at", "exit", "--heap-output", b, "--",
                          e2e_dotnet(), dll, "heap", "list=1500", "chain=3000", NULL};
    ASSERT_EQ(e2e_dnprof(&r, runa), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT_EQ(e2e_dnprof(&r, runb), 0);
    ASSERT_STATUS(&r, 0);
    const char *args[] = {"heap", "diff", "--json", "--top", "0", a, b, NULL};
    jv *d = e2e_dnprof_json(&r, args);
    ASSERT_NE(d, NULL);
    const jv *li = type_of(d, "Scenarios.HeapListItem");
    const jv *cn = type_of(d, "Scenarios.HeapChainNode");
    ASSERT(li);
    ASSERT(cn);
    ASSERT_EQ((uint64_t)json_num(li, "count_change"), 500);
    ASSERT_EQ((uint64_t)json_num(li, "bytes_change"), 500 * 24);
    ASSERT_EQ((uint64_t)json_num(li, "count"), 1500);
    ASSERT_EQ((uint64_t)json_num(cn, "count_change"), 2000);
    ASSERT_EQ((uint64_t)json_num(cn, "bytes_change"), 2000 * 32);
    ASSERT_EQ((uint64_t)json_num(cn, "retained_change"), 2000 * 32);
    /* the types that did not change are not listed */
    ASSERT_EQ(type_of(d, "Scenarios.HeapHolder"), NULL);
    json_free(d);
    /* the text form */
    const char *targs[] = {"heap", "diff", a, b, NULL};
    ASSERT_EQ(e2e_dnprof(&r, targs), 0);
    ASSERT_STATUS(&r, 0);
    char *text = e2e_read_file(r.out, NULL);
    ASSERT(text);
    ASSERT_CONTAINS(text, "Scenarios.HeapChainNode");
    ASSERT_CONTAINS(text, "+2,000");
    free(text);
    return 0;
}

/* The .heapsnapshot loads in Chromium's DevTools (its own HeapSnapshotLoader,
 * headless; tests/e2e/devtools), which counts what the program holds. */
TEST(e2e_heap_devtools_loads) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_devtools_loads"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS"), *script = e2e_env("DNPROF_DEVTOOLS_SCRIPT");
    ASSERT(dll);
    ASSERT(script);
    const char *node = getenv("DNPROF_NODE") ? getenv("DNPROF_NODE") : "node";
    const char *chromium = getenv("DNPROF_CHROMIUM") ? getenv("DNPROF_CHROMIUM") : "chromium";
    char found[PATH_MAX];
    const char *missing = e2e_which(node, NULL, found, sizeof found) == NULL       ? node
                          : e2e_which(chromium, NULL, found, sizeof found) == NULL ? chromium
                                                                                   : NULL;
    if (missing != NULL)
        E2E_SKIP("%s is not installed (tools/install-deps, or: apt-get install chromium nodejs)", missing);
    char snap[PATH_MAX], hs[PATH_MAX];
    snprintf(snap, sizeof snap, "%s/d.dnheap", r.dir);
    snprintf(hs, sizeof hs, "%s/d.heapsnapshot", r.dir);
    const char *run[] = {"run", "-o", r.trace, "--heap-at", "exit", "--heap-output", snap, "--",
                         e2e_dotnet(), dll, "heap", "list=10", "chain=100", "array=10", "cwt=5", NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_STATUS(&r, 0);
    counts c;
    ASSERT_GT(wait_ready(r.out, &c), 0);
    const char *conv[] = {"convert", "--format", "heapsnapshot", "-o", hs, snap, NULL};
    ASSERT_EQ(e2e_dnprof(&r, conv), 0);
    ASSERT_STATUS(&r, 0);
    const char *rargs[] = {"heap", "report", "--json", "--top", "0", snap, NULL};
    jv *rep = e2e_dnprof_json(&r, rargs);
    ASSERT_NE(rep, NULL);
    const char *argv[] = {node, "--experimental-websocket", script, hs, chromium, NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    if (r.status != 0) {
        e2e_show_file("the DevTools loader said", r.err);
        fprintf(stderr, "(needs node and chromium: tools/install-deps installs them)\n");
    }
    ASSERT_STATUS(&r, 0);
    size_t len;
    char *text = e2e_read_file(r.out, &len);
    char err[256];
    jv *d = text ? json_parse(text, len, err, sizeof err) : NULL;
    free(text);
    ASSERT_NE(d, NULL);
    /* every object and the roots' node; every byte */
    ASSERT_EQ((uint64_t)json_num(d, "nodeCount"), (uint64_t)json_num(rep, "objects") + 1);
    ASSERT_EQ((uint64_t)json_num(d, "totalSize"), (uint64_t)json_num(rep, "bytes"));
    const jv *types = json_get(d, "types");
    ASSERT(types);
    struct {
        const char *name;
        long count;
    } want[] = {{"Scenarios.HeapListItem", c.list},  {"Scenarios.HeapChainNode", c.chain},
                {"Scenarios.HeapArrayItem", c.array}, {"Scenarios.HeapHolder", 1},
                {"Scenarios.HeapArrayItem[]", 1},     {"Scenarios.HeapCwtKey", c.cwt},
                {"Scenarios.HeapCwtValue", c.cwt}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const jv *t = json_get(types, want[i].name);
        if (!t)
            fprintf(stderr, "DevTools has no %s\n", want[i].name);
        ASSERT_NE(t, NULL);
        ASSERT_EQ((uint64_t)json_num(t, "count"), (uint64_t)want[i].count);
    }
    json_free(d);
    json_free(rep);
    return 0;
}

/* bench_heap's floor: with "<snapshot>.walk-only" beside the snapshot, the
 * runtime walks the heap and the agent only counts (dnprof snapshot prints
 * the count and the pause); the file it leaves says it is no snapshot, and
 * the next snapshot, without the file, is a whole one again. */
TEST(e2e_heap_walk_only) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_heap_walk_only"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    char go[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], snap[PATH_MAX], flag[PATH_MAX + 16];
    char waitarg[PATH_MAX + 8];
    snprintf(go, sizeof go, "%s/go", r.dir);
    snprintf(out, sizeof out, "%s/program.out", r.dir);
    snprintf(errp, sizeof errp, "%s/program.err", r.dir);
    snprintf(snap, sizeof snap, "%s/w.dnheap", r.dir);
    snprintf(flag, sizeof flag, "%s.walk-only", snap);
    snprintf(waitarg, sizeof waitarg, "wait=%s", go);
    const char *argv[] = {e2e_dotnet(), dll, "heap", waitarg, NULL};
    const char *env[] = {"CORECLR_ENABLE_PROFILING", NULL};
    pid_t child = e2e_spawn((char *const *)argv, env, r.dir, out, NULL, errp);
    ASSERT_GT(child, 0);
    counts c;
    pid_t pid = wait_ready(out, &c);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    const char *args[] = {"snapshot", "-o", snap, pidtext, NULL};
    int ok = pid > 0 && touch(flag) == 0 && e2e_dnprof(&r, args) == 0 && r.status == 0;
    char *said = ok ? e2e_read_file(r.err, NULL) : NULL;
    if (!ok)
        e2e_show_file("dnprof snapshot (walk only) said", r.err);
    unlink(flag);
    /* the count of the walk, from "snapshot of pid N (comm): 1,234 objects" */
    const char *at = said ? strstr(said, "): ") : NULL;
    if (at)
        at += 2;
    long walked = at ? grouped(&at) : -1;
    const char *report[] = {"heap", "report", snap, NULL};
    int refused = ok && e2e_dnprof(&r, report) == 0 && r.status == 1;
    char *why = refused ? e2e_read_file(r.err, NULL) : NULL;
    int whole = ok && e2e_dnprof(&r, args) == 0 && r.status == 0;
    touch(go);
    int status = -1;
    e2e_wait(child, E2E_TIMEOUT_MS, &status);
    ASSERT(ok);
    ASSERT(said);
    ASSERT_CONTAINS(said, "snapshot of pid");
    free(said);
    /* every object of the program's was walked: the chain alone is CHAIN */
    ASSERT_GE(walked, (long)CHAIN + c.list + c.array);
    ASSERT(refused);
    ASSERT(why);
    ASSERT_CONTAINS(why, "walk only");
    free(why);
    ASSERT(whole);
    ASSERT_EQ(status, 0);
    return check_report(&r, snap, &c);
}
