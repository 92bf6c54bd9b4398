/* test_names_agree.c: every report names a method alike. One run of an async
 * method that works, allocates and throws (NamesScenario.cs) under --sample
 * --alloc --exceptions; the sample report, the allocation report and the
 * exception report and stories must all call its state machine's MoveNext
 * "Scenarios.NamesOrderService::GetAsync (async)" (prettyname.h), and none of
 * their texts may show the compiler's name for it. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "json_check.h"
#include "test.h"

#define NAME "Scenarios.NamesOrderService::GetAsync (async)"

/* `dnprof ARGS` as text (free it), or NULL. */
static char *text_of(e2e_run *r, const char *const args[]) {
    if (e2e_dnprof(r, args) != 0 || r->status != 0) {
        e2e_show_file("dnprof said", r->err);
        return NULL;
    }
    return e2e_read_file(r->out, NULL);
}

/* Item i of a JSON array of strings, or NULL. */
static const char *str_at(const jv *arr, size_t i) {
    const jv *v = arr ? json_at(arr, i) : NULL;
    return v && v->type == JV_STR ? v->str : NULL;
}

/* The entry of arr whose key names GetAsync's MoveNext, or NULL. */
static const jv *find_movenext(const jv *arr, const char *key) {
    for (size_t i = 0; arr && json_at(arr, i); i++) {
        const char *s = json_str(json_at(arr, i), key);
        if (s && strstr(s, "+<GetAsync>d__") && strstr(s, "::MoveNext") && !strchr(strstr(s, "d__"), '>'))
            return json_at(arr, i);
    }
    return NULL;
}

TEST(e2e_names_agree) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_names_agree"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *run[] = {"run", "-q", "--sample", "--alloc", "--exceptions", "-o", r.trace, "--",
                         e2e_dotnet(), dll, "names", "600", NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_STATUS(&r, 0);

    /* The sample report: the function, its name and the compiler's. */
    const char *sargs[] = {"report", "--json", "--top", "1000", r.trace, NULL};
    jv *sample = e2e_dnprof_json(&r, sargs);
    ASSERT_NE(sample, NULL);
    const jv *fn = find_movenext(json_get(sample, "functions"), "raw");
    ASSERT_NE(fn, NULL);
    ASSERT_STREQ(json_str(fn, "name"), NAME);
    char raw[512];
    snprintf(raw, sizeof raw, "%s", json_str(fn, "raw"));
    json_free(sample);

    /* The allocation report: the byte[] path's innermost frame. */
    const char *aargs[] = {"report", "--alloc", "--json", r.trace, NULL};
    jv *alloc = e2e_dnprof_json(&r, aargs);
    ASSERT_NE(alloc, NULL);
    const jv *path = json_at(json_get(alloc, "paths"), 0);
    ASSERT_NE(path, NULL);
    ASSERT_STREQ(json_str(path, "type"), "System.Byte[]");
    ASSERT_STREQ(str_at(json_get(path, "stack"), 0), NAME);
    ASSERT_STREQ(str_at(json_get(path, "raw"), 0), raw);
    json_free(alloc);

    /* The exception report: throw site, catch site, the story's stack. */
    const char *eargs[] = {"report", "--exceptions", "--json", r.trace, NULL};
    jv *exc = e2e_dnprof_json(&r, eargs);
    ASSERT_NE(exc, NULL);
    ASSERT_STREQ(json_str(json_at(json_get(exc, "by_throw_site"), 0), "name"), NAME);
    ASSERT_STREQ(json_str(json_at(json_get(exc, "by_catch_site"), 0), "name"), NAME);
    const jv *story = json_at(json_get(exc, "exceptions"), 0);
    ASSERT_NE(story, NULL);
    ASSERT_STREQ(json_str(story, "message"), "thrown in GetAsync");
    ASSERT_STREQ(str_at(json_get(story, "stack"), 0), NAME);
    ASSERT_STREQ(json_str(story, "throw_site"), NAME);
    ASSERT_STREQ(json_str(story, "catcher"), NAME);
    json_free(exc);

    /* What a user reads: the name, and never the compiler's. */
    const char *texts[][5] = {{"report", r.trace}, {"report", "--alloc", r.trace},
                              {"report", "--exceptions", r.trace}, {"print", "--exceptions", r.trace}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char *t = text_of(&r, texts[i]);
        ASSERT_NE(t, NULL);
        if (!strstr(t, NAME) || strstr(t, raw))
            fprintf(stderr, "dnprof %s %s:\n%.1500s\n", texts[i][0], texts[i][1], t);
        ASSERT_CONTAINS(t, NAME);
        ASSERT_EQ(strstr(t, raw), NULL);
        free(t);
    }
    return 0;
}

/* An iterator's step and an async method's, both MoveNext of a <Name>d__N
 * class: "(iterator)" and "(async)", with the calls hooked (exact counts). */
TEST(e2e_names_iterator) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_names_iterator"), 0);
    const char *dll = e2e_env("DNPROF_SCENARIOS");
    ASSERT(dll);
    const char *run[] = {"run", "-q", "--calls=counts", "--include", "Scenarios.NamesOrderService*", "-o", r.trace,
                         "--", e2e_dotnet(), dll, "names", "50", NULL};
    ASSERT_EQ(e2e_dnprof(&r, run), 0);
    ASSERT_STATUS(&r, 0);
    const char *args[] = {"report", "--json", "--top", "1000", r.trace, NULL};
    jv *j = e2e_dnprof_json(&r, args);
    ASSERT_NE(j, NULL);
    const jv *fns = json_get(j, "functions");
    double iterator_calls = -1, async_calls = -1;
    for (size_t i = 0; fns && json_at(fns, i); i++) {
        const char *name = json_str(json_at(fns, i), "name"), *raw = json_str(json_at(fns, i), "raw");
        if (!name || !raw)
            continue;
        if (strstr(raw, "+<Items>d__") && strstr(raw, "MoveNext")) {
            ASSERT_STREQ(name, "Scenarios.NamesOrderService::Items (iterator)");
            iterator_calls = json_num(json_at(fns, i), "calls");
        } else if (strstr(raw, "+<GetAsync>d__") && strstr(raw, "::MoveNext")) {
            ASSERT_STREQ(name, NAME);
            async_calls = json_num(json_at(fns, i), "calls");
        }
    }
    json_free(j);
    ASSERT_EQ(iterator_calls, 4);
    ASSERT_GE(async_calls, 1);
    return 0;
}
