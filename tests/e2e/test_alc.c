/* test_alc.c: a collectible AssemblyLoadContext, loaded, used and unloaded twice
 * (PluginA, then PluginB). IDs are addresses the runtime may give again once
 * their owner is unloaded, so a name cache keyed by ID alone would call PluginB's
 * classes by PluginA's names. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

static int starts_with(const char *s, const char *prefix) {
    return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

typedef struct owner {
    uint64_t id;
    const char *name;
    int live;
} owner;

typedef struct owners {
    owner *v;
    size_t n, cap;
    size_t reused; /* IDs loaded again under another name after an unload */
} owners;

static owner *owners_find(owners *o, uint64_t id) {
    for (size_t i = o->n; i-- > 0;)
        if (o->v[i].id == id)
            return &o->v[i];
    return NULL;
}

static owner *owners_add(owners *o, uint64_t id) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        owner *v = realloc(o->v, cap * sizeof *v);
        if (v == NULL)
            return NULL;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n] = (owner){id, NULL, 0};
    return &o->v[o->n++];
}

/* Walks the trace keeping, for every ID of entity type ftype, the name its load
 * (load_kind) gave it until its unload (unload_kind). Every named use of a live
 * ID must give its owner's name; no use after the unload may give the old one.
 * (In the alc scenario nothing is loaded twice, so the old name never comes back
 * rightly.) Returns the number of wrong names, printing the first few. */
static int check_owners(const dnp_trace *t, unsigned ftype, unsigned load_kind, unsigned unload_kind,
                        size_t *reused) {
    owners o = {0};
    int bad = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *ev = &t->events[i];
        for (unsigned f = 0; f < dnp_events[ev->kind].nfields; f++) {
            if (dnp_events[ev->kind].field_types[f] != ftype)
                continue;
            uint64_t id = e2e_field(ev, f);
            const char *name = e2e_field_name(t, ev, f);
            if (name == NULL || id == 0)
                continue;
            owner *w = owners_find(&o, id);
            const char *wrong = NULL;
            if (w != NULL && w->live && ev->kind != load_kind && strcmp(name, w->name) != 0)
                wrong = "is not its owner's";
            else if (w != NULL && !w->live && strcmp(name, w->name) == 0)
                wrong = "belonged to it before its unload";
            if (wrong != NULL && bad++ < 5)
                fprintf(stderr, "e2e: event %zu %s names %s 0x%llx \"%s\", which %s%s%s%s\n", i,
                        dnp_events[ev->kind].name, dnp_field_type_names[ftype], (unsigned long long)id, name, wrong,
                        w->live ? " (\"" : "", w->live ? w->name : "", w->live ? "\")" : "");
            if (ev->kind == load_kind && f == 0) {
                if (w != NULL && !w->live)
                    (*reused)++;
                if (w == NULL || !w->live)
                    w = owners_add(&o, id);
                if (w != NULL) {
                    w->name = name;
                    w->live = 1;
                }
            }
        }
        if (ev->kind == unload_kind) {
            owner *w = owners_find(&o, e2e_field(ev, 0));
            if (w != NULL)
                w->live = 0;
        }
    }
    free(o.v);
    return bad;
}

TEST(e2e_collectible_alc) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_collectible_alc"), 0);
    ASSERT_EQ(e2e_run_scenario(&r, "alc", NULL), 0);
    ASSERT_STATUS(&r, 0);
    char *out = e2e_read_file(r.out, NULL);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, "PluginA.Widget.Spin(3) = 9");
    ASSERT_CONTAINS(out, "PluginB.Gadget.Turn(3) = 10");
    int a_unloaded = strstr(out, "PluginA unloaded") != NULL;
    free(out);

    dnp_trace *t = e2e_load(r.trace);
    ASSERT_NE(t, NULL);
    long a_load = e2e_expect(t, DNP_EV_AssemblyLoadFinished, "PluginA", "Plugin");
    long b_load = e2e_expect(t, DNP_EV_AssemblyLoadFinished, "PluginB", "Plugin");
    ASSERT_GE(a_load, 0);
    ASSERT_GE(b_load, 0);
    ASSERT_LT(a_load, b_load);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "PluginA.Widget", "Plugin"), 0);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "PluginB.Gadget", "Plugin"), 0);
    if (a_unloaded)
        ASSERT_GE(e2e_expect(t, DNP_EV_AssemblyUnloadStarted, "PluginA", "Plugin"), 0);
    else
        fprintf(stderr, "e2e: the program says PluginA was not unloaded; not looking for its unload\n");

    /* PluginB's load began at the AssemblyLoadStarted of its ID; nothing is
     * called PluginB.* before, and no class PluginA.* after PluginA's unload. */
    uint64_t b_assembly = e2e_field(&t->events[b_load], 0);
    long b_begin = b_load;
    for (long i = b_load - 1; i >= 0; i--)
        if (t->events[i].kind == DNP_EV_AssemblyLoadStarted && e2e_field(&t->events[i], 0) == b_assembly) {
            b_begin = i;
            break;
        }
    long a_gone = -1;
    for (size_t i = 0; i < t->nevents; i++) {
        const char *name = e2e_field_name(t, &t->events[i], 0);
        if (t->events[i].kind == DNP_EV_AssemblyUnloadFinished && name != NULL && strcmp(name, "PluginA") == 0)
            a_gone = (long)i;
    }
    int bad = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const dnp_trace_event *ev = &t->events[i];
        for (unsigned f = 0; f < dnp_events[ev->kind].nfields; f++) {
            if (dnp_events[ev->kind].field_types[f] != DNP_FT_CLASS)
                continue;
            const char *name = e2e_field_name(t, ev, f);
            const char *why = NULL;
            if ((long)i < b_begin && starts_with(name, "PluginB."))
                why = "before PluginB was loaded";
            else if (a_gone >= 0 && (long)i > a_gone && starts_with(name, "PluginA."))
                why = "after PluginA was unloaded";
            if (why != NULL && bad++ < 5)
                fprintf(stderr, "e2e: event %zu %s names class 0x%llx \"%s\" %s\n", i, dnp_events[ev->kind].name,
                        (unsigned long long)e2e_field(ev, f), name, why);
        }
    }

    /* Every name given to an ID is its owner's at the time. */
    size_t reused = 0;
    bad += check_owners(t, DNP_FT_CLASS, DNP_EV_ClassLoadFinished, DNP_EV_ClassUnloadFinished, &reused);
    bad += check_owners(t, DNP_FT_MODULE, DNP_EV_ModuleLoadFinished, DNP_EV_ModuleUnloadFinished, &reused);
    bad += check_owners(t, DNP_FT_ASSEMBLY, DNP_EV_AssemblyLoadFinished, DNP_EV_AssemblyUnloadFinished, &reused);
    printf("  %zu IDs given again after an unload\n", reused);
    dnp_trace_free(t);
    ASSERT_EQ(bad, 0);
    return 0;
}
