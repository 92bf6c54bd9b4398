/* test_il.c: IL bodies (dnprof run --il, docs/il.md) on the real runtime. The
 * il scenario (tests/e2e/scenarios/IlScenario.cs) calls a method with a tiny
 * header and one with a fat header (a filter, a catch, a finally), and prints
 * each body as reflection reads it from the assembly: the ILBody events of the
 * trace must hold the same code bytes, max stack, locals token, init-locals
 * flag, code size and clauses (with the catch's type by name), the runtime's
 * size must be the header's, and dnprof print must show the disassembly with
 * the called method and the string literal named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "il_body.h"
#include "json_check.h"
#include "test.h"

#define IL_PATTERN "Scenarios.IlScenario::T*,Scenarios.IlScenario::Fat"

typedef struct il_clause_truth {
    unsigned kind, try_offset, try_length, handler_offset, handler_length, filter;
    char catch_type[256];
} il_clause_truth;

typedef struct il_truth {
    unsigned maxstack, initlocals, codesize, localsig;
    char code[8192];
    il_clause_truth c[8];
    int nclauses;
} il_truth;

/* The scenario's "il body NAME ..." and "il clause NAME ..." lines. */
static int read_truth(const char *out, const char *name, il_truth *m) {
    char key[64];
    memset(m, 0, sizeof *m);
    snprintf(key, sizeof key, "il body %s ", name);
    const char *p = strstr(out, key);
    if (!p || sscanf(p + strlen(key), "maxstack=%u localsig=0x%x initlocals=%u codesize=%u code=%8191s", &m->maxstack,
                     &m->localsig, &m->initlocals, &m->codesize, m->code) != 5) {
        fprintf(stderr, "e2e: the il scenario did not describe %s:\n%s\n", name, out);
        return -1;
    }
    snprintf(key, sizeof key, "il clause %s ", name);
    for (p = strstr(out, key); p && m->nclauses < 8; p = strstr(p + 1, key)) {
        il_clause_truth *c = &m->c[m->nclauses++];
        if (sscanf(p + strlen(key), "kind=%u try=%u,%u handler=%u,%u filter=%u catch=%255s", &c->kind,
                   &c->try_offset, &c->try_length, &c->handler_offset, &c->handler_length, &c->filter,
                   c->catch_type) != 7)
            return -1;
    }
    return 0;
}

/* The one ILBody of method name held up against what reflection printed. */
static int check_body(const dnp_trace *t, const char *out, const char *name, int fat) {
    il_truth m;
    char full[128], hex[8192 + 2], cname[256], err[256];
    ASSERT_EQ(read_truth(out, name, &m), 0);
    snprintf(full, sizeof full, "Scenarios.IlScenario::%s", name);
    long i = e2e_expect(t, DNP_EV_ILBody, full, "IlScenario");
    ASSERT_GE(i, 0);
    ASSERT_EQ(e2e_find(t, DNP_EV_ILBody, full, (size_t)i + 1), -1); /* once, tier-1 or not */
    const dnp_trace_event *ev = &t->events[i];
    ASSERT_EQ(ev->v[DNP_V(ILBody, hrStatus)], 0);
    /* right after its JITCompilationStarted, on the same thread */
    long j = i - 1;
    while (j >= 0 && t->events[j].thread != ev->thread)
        j--;
    ASSERT_GE(j, 0);
    ASSERT_EQ(t->events[j].kind, DNP_EV_JITCompilationStarted);
    ASSERT_EQ(t->events[j].v[DNP_V(JITCompilationStarted, functionId)], ev->v[DNP_V(ILBody, functionId)]);

    const char *blob = dnp_trace_string(t, ev->v[DNP_V(ILBody, body)]);
    const char *tokens = dnp_trace_string(t, ev->v[DNP_V(ILBody, tokens)]);
    ASSERT_NE(blob, NULL);
    ASSERT_NE(tokens, NULL);
    uint8_t body[4096];
    long n = dnp_hex_decode(blob, body, sizeof body);
    ASSERT_GT(n, 0);
    dnp_il_header h;
    dnp_il_clause c[8];
    ASSERT_EQ(dnp_il_parse(body, (size_t)n, &h, c, 8, err, sizeof err), 0);
    ASSERT_EQ(h.fat, fat);
    ASSERT_EQ(h.max_stack, m.maxstack);
    ASSERT_EQ(h.local_sig, m.localsig);
    ASSERT_EQ(h.init_locals, (int)m.initlocals);
    ASSERT_EQ(h.code_size, m.codesize);
    ASSERT_EQ(h.body_size, ev->v[DNP_V(ILBody, reportedSize)]); /* the header's size is the runtime's */
    ASSERT_EQ(n, (long)h.body_size);
    dnp_hex_encode(body + h.header_size, h.code_size, hex, sizeof hex);
    ASSERT_STREQ(hex, m.code);
    ASSERT_EQ(h.nclauses, (size_t)m.nclauses);
    for (int k = 0; k < m.nclauses; k++) {
        ASSERT_EQ(c[k].kind, m.c[k].kind);
        ASSERT_EQ(c[k].try_offset, m.c[k].try_offset);
        ASSERT_EQ(c[k].try_length, m.c[k].try_length);
        ASSERT_EQ(c[k].handler_offset, m.c[k].handler_offset);
        ASSERT_EQ(c[k].handler_length, m.c[k].handler_length);
        if (c[k].kind == DNP_IL_FILTER)
            ASSERT_EQ(c[k].extra, m.c[k].filter);
        if (c[k].kind == DNP_IL_CATCH)
            ASSERT_STREQ(dnp_il_token_name(tokens, c[k].extra, cname, sizeof cname), m.c[k].catch_type);
    }
    return 0;
}

/* print --json: the ILBody of name, parsed back. */
static jv *json_body(const char *log, const char *name) {
    char key[128];
    snprintf(key, sizeof key, "\"functionId_name\":\"Scenarios.IlScenario::%s\"", name);
    for (const char *p = log; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char *line = strndup(p, len);
        if (line && strstr(line, "\"event\":\"ILBody\"") && strstr(line, key)) {
            char err[256];
            jv *v = json_parse(line, len, err, sizeof err);
            if (!v)
                fprintf(stderr, "e2e: print --json: %s\n%s\n", err, line);
            free(line);
            return v;
        }
        free(line);
        p = eol ? eol + 1 : NULL;
    }
    fprintf(stderr, "e2e: print --json has no ILBody of %s\n", name);
    return NULL;
}

static int check_print(e2e_run *r, const char *out) {
    il_truth m;
    char want[128];
    ASSERT_EQ(read_truth(out, "Tiny", &m), 0);
    const char *args[] = {"print", r->trace, NULL};
    ASSERT_EQ(e2e_dnprof(r, args), 0);
    ASSERT_STATUS(r, 0);
    char *log = e2e_read_file(r->out, NULL);
    ASSERT_NE(log, NULL);
    snprintf(want, sizeof want, "IL tiny maxstack=8 codesize=%u locals=none initlocals=no clauses=0", m.codesize);
    ASSERT_CONTAINS(log, want);
    ASSERT_CONTAINS(log, ": ldstr      \"hello from the tiny method\"\n");
    ASSERT_CONTAINS(log, ": call       System.Console::WriteLine\n");
    ASSERT_CONTAINS(log, ": newobj     System.InvalidOperationException::.ctor\n");
    ASSERT_CONTAINS(log, " catch System.ArgumentException handler IL_");
    ASSERT_CONTAINS(log, " filter IL_");
    ASSERT_CONTAINS(log, " finally handler IL_");
    free(log);

    const char *jargs[] = {"print", "--json", r->trace, NULL};
    ASSERT_EQ(e2e_dnprof(r, jargs), 0);
    ASSERT_STATUS(r, 0);
    log = e2e_read_file(r->out, NULL);
    ASSERT_NE(log, NULL);
    jv *tiny = json_body(log, "Tiny"), *fat = json_body(log, "Fat");
    free(log);
    ASSERT_NE(tiny, NULL);
    ASSERT_NE(fat, NULL);
    const jv *il = json_get(tiny, "il");
    ASSERT_STREQ(json_str(il, "format"), "tiny");
    ASSERT_EQ(json_num(il, "codeSize"), m.codesize);
    const jv *code = json_get(il, "instructions");
    ASSERT_STREQ(json_str(json_at(code, 0), "opcode"), "ldstr");
    ASSERT_STREQ(json_str(json_at(code, 0), "name"), "\"hello from the tiny method\"");
    ASSERT_STREQ(json_str(json_at(code, 1), "opcode"), "call");
    ASSERT_STREQ(json_str(json_at(code, 1), "name"), "System.Console::WriteLine");
    ASSERT_EQ(json_num(json_at(code, 1), "offset"), 5);
    il = json_get(fat, "il");
    ASSERT_STREQ(json_str(il, "format"), "fat");
    const jv *clauses = json_get(il, "clauses");
    ASSERT_NE(clauses, NULL);
    ASSERT_EQ(clauses->n, 3);
    ASSERT_STREQ(json_str(json_at(clauses, 0), "kind"), "filter");
    ASSERT_STREQ(json_str(json_at(clauses, 1), "classTokenName"), "System.ArgumentException");
    ASSERT_STREQ(json_str(json_at(clauses, 2), "kind"), "finally");
    ASSERT_EQ(json_get(il, "error")->type, JV_NULL);
    json_free(tiny);
    json_free(fat);
    return 0;
}

TEST(e2e_il_bodies) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_il_bodies"), 0);
    const char *bin = e2e_env("DNPROF_BIN"), *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT_NE(bin, NULL);
    ASSERT_NE(dll, NULL);
    const char *argv[] = {bin, "run", "--quiet", "--il", IL_PATTERN, "-o", r.trace, "--", e2e_dotnet(), dll, "il", NULL};
    ASSERT_EQ(e2e_exec(&r, (char *const *)argv, NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    dnp_trace *t = e2e_load_of(r.trace, DNP_EV_ILBody, 2);
    ASSERT_NE(t, NULL);
    ASSERT_EQ(e2e_count(t, DNP_EV_ILBody), 2); /* the pattern's two methods, nothing else */
    int rc = check_body(t, out, "Tiny", 0) || check_body(t, out, "Fat", 1) || check_print(&r, out);
    dnp_trace_free(t);
    free(out);
    return rc;
}

/* Bad --il input: one line, exit 2, the program not run. */
TEST(e2e_il_usage) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_il_usage"), 0);
    const char *empty[] = {"run", "--il", " , ", "--", "true", NULL};
    ASSERT_EQ(e2e_dnprof(&r, empty), 0);
    ASSERT_STATUS(&r, 2);
    char *err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    ASSERT_CONTAINS(err, "--il wants method patterns");
    free(err);
    const char *every[] = {"run", "--il", "A::B", "--every", "10s", "--", "true", NULL};
    ASSERT_EQ(e2e_dnprof(&r, every), 0);
    ASSERT_STATUS(&r, 2);
    err = e2e_read_file(r.err, NULL);
    ASSERT_NE(err, NULL);
    ASSERT_CONTAINS(err, "--il records IL bodies into the trace");
    free(err);
    return 0;
}
