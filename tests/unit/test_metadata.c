/* test_metadata.c: the .NET metadata reader (src/trace/cli_metadata.c) on
 * real assemblies: the runtime's own CoreLib (what async stacks read: the
 * box's MoveNext methods, their owners and signatures, nested types, field
 * names), as the file lays it out and as the runtime maps it (each section at
 * its RVA); a small assembly of the fuzz corpus; and every cut and a
 * corrupted header of it, which give one line of reason, never a read past
 * the input (each at the end of a heap block of its exact size, for ASan). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_metadata.h"
#include "test.h"

/* CoreLib of the newest runtime next to `dotnet` on PATH; NULL when none. */
static uint8_t *corelib(size_t *n) {
    const char *roots[] = {getenv("DOTNET_ROOT"), "/usr/share/dotnet", "/usr/lib/dotnet", "/opt/dotnet"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if (!roots[i])
            continue;
        char dir[1024], best[256] = "";
        snprintf(dir, sizeof dir, "%s/shared/Microsoft.NETCore.App", roots[i]);
        DIR *d = opendir(dir);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (de->d_name[0] != '.' && strcmp(de->d_name, best) > 0)
                snprintf(best, sizeof best, "%s", de->d_name);
        closedir(d);
        char path[1400];
        snprintf(path, sizeof path, "%s/%s/System.Private.CoreLib.dll", dir, best);
        uint8_t *f = (uint8_t *)test_read_file(path, n);
        if (f)
            return f;
    }
    return NULL;
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The image as the loader maps it: headers, then each section at its RVA. */
static uint8_t *mapped(const uint8_t *f, size_t n, size_t *size) {
    uint32_t pe = rd32(f + 0x3c), opt = pe + 24;
    unsigned nsect = (unsigned)(f[pe + 6] | f[pe + 7] << 8), optsize = (unsigned)(f[pe + 20] | f[pe + 21] << 8);
    *size = rd32(f + opt + 56);
    uint8_t *img = calloc(1, *size);
    if (!img)
        return NULL;
    memcpy(img, f, rd32(f + opt + 60)); /* SizeOfHeaders */
    for (unsigned i = 0; i < nsect; i++) {
        const uint8_t *s = f + opt + optsize + 40u * i;
        uint32_t va = rd32(s + 12), raw = rd32(s + 16), off = rd32(s + 20);
        if (off + raw <= n && va + raw <= *size)
            memcpy(img + va, f + off, raw);
    }
    return img;
}

static int check_corelib(const dnp_md *md) {
    uint32_t obj = dnp_md_find_type(md, "System", "Object", 0);
    ASSERT_NE(obj, 0);
    ASSERT_STREQ(dnp_md_type_name(md, obj), "Object");
    ASSERT_STREQ(dnp_md_type_namespace(md, obj), "System");
    uint32_t atmb = dnp_md_find_type(md, "System.Runtime.CompilerServices", "AsyncTaskMethodBuilder`1", 0);
    uint32_t box = dnp_md_find_type(md, "", "AsyncStateMachineBox`1", atmb);
    ASSERT_NE(atmb, 0);
    ASSERT_NE(box, 0);
    ASSERT_EQ(dnp_md_type_enclosing(md, box), atmb);
    ASSERT_EQ(dnp_md_find_type(md, "", "AsyncStateMachineBox`1", 0), 0); /* nested: not at the top */
    uint32_t ms[8];
    unsigned n = dnp_md_methods_named(md, box, "MoveNext", ms, 8);
    ASSERT_EQ(n, 2); /* MoveNext() and MoveNext(Thread) */
    unsigned params = 0;
    for (unsigned i = 0; i < n; i++) {
        uint32_t len = 0;
        const uint8_t *sig = dnp_md_method_sig(md, ms[i], &len);
        ASSERT_NE(sig, NULL);
        ASSERT_GE(len, 3);
        params |= 1u << sig[1];
        ASSERT_EQ(dnp_md_method_owner(md, ms[i]), box);
        ASSERT_STREQ(dnp_md_method_name(md, ms[i]), "MoveNext");
        ASSERT_EQ(dnp_md_method_is(md, ms[i], "MoveNext"), 1);
        ASSERT_EQ(dnp_md_method_is(md, ms[i], "MoveNex"), 0); /* a prefix is not the name */
        ASSERT_EQ(dnp_md_method_is(md, ms[i], "MoveNextX"), 0);
        ASSERT_EQ(dnp_md_method_is(md, ms[i], ""), 0);
    }
    ASSERT_EQ(params, 3u);
    /* every method has its type, and every field a name */
    uint32_t owned = 0;
    for (uint32_t r = 1; r <= md->rows[DNP_MD_METHODDEF]; r++)
        owned += dnp_md_method_owner(md, (uint32_t)DNP_MD_METHODDEF << 24 | r) != 0;
    ASSERT_EQ(owned, md->rows[DNP_MD_METHODDEF]);
    ASSERT_GT(md->rows[DNP_MD_FIELD], 1000);
    int continuation = 0;
    for (uint32_t r = 1; r <= md->rows[DNP_MD_FIELD]; r++)
        continuation += !strcmp(dnp_md_field_name(md, (uint32_t)DNP_MD_FIELD << 24 | r), "m_continuationObject");
    ASSERT_EQ(continuation, 1); /* Task's */
    /* a type's own fields by name, and an explicit layout's offsets (pool_state.c) */
    uint32_t task = dnp_md_find_type(md, "System.Threading.Tasks", "Task", 0);
    uint32_t cont = dnp_md_field_named(md, task, "m_continuationObject");
    ASSERT_NE(cont, 0);
    ASSERT_STREQ(dnp_md_field_name(md, cont), "m_continuationObject");
    ASSERT_EQ(dnp_md_field_named(md, obj, "m_continuationObject"), 0); /* not Object's */
    uint32_t off = 99;
    ASSERT_EQ(dnp_md_field_offset(md, cont, &off), -1); /* Task's layout is the runtime's to choose */
    uint32_t hat = dnp_md_find_type(md, "System.Collections.Concurrent", "PaddedHeadAndTail", 0);
    uint32_t head = 0, tail = 0;
    ASSERT_EQ(dnp_md_field_offset(md, dnp_md_field_named(md, hat, "Head"), &head), 0);
    ASSERT_EQ(dnp_md_field_offset(md, dnp_md_field_named(md, hat, "Tail"), &tail), 0);
    ASSERT_GE(head, 32u); /* a cache line (its size the build's) before each */
    ASSERT_EQ(tail, 2 * head);
    /* tokens of other tables or past the rows: nothing */
    ASSERT_STREQ(dnp_md_method_name(md, obj), "");
    ASSERT_EQ(dnp_md_method_is(md, obj, ""), 1); /* as dnp_md_method_name's "" */
    ASSERT_EQ(dnp_md_method_is(md, obj, "MoveNext"), 0);
    ASSERT_EQ(dnp_md_method_owner(md, (uint32_t)DNP_MD_METHODDEF << 24 | (md->rows[DNP_MD_METHODDEF] + 1)), 0);
    return 0;
}

TEST(metadata_corelib_file_and_mapped) {
    size_t n = 0, size = 0;
    uint8_t *f = corelib(&n);
    if (!f) {
        fprintf(stderr, "no .NET runtime's CoreLib found: skipped\n");
        return DNP_TEST_SKIPPED;
    }
    dnp_md md;
    char err[256];
    ASSERT_EQ(dnp_md_open(&md, f, n, 1, err, sizeof err), 0);
    ASSERT_EQ(check_corelib(&md), 0);
    uint8_t *img = mapped(f, n, &size);
    ASSERT_NE(img, NULL);
    ASSERT_EQ(dnp_md_open(&md, img, size, 0, err, sizeof err), 0);
    ASSERT_EQ(check_corelib(&md), 0);
    ASSERT_EQ(dnp_md_open(&md, img, 0, 0, err, sizeof err), 0); /* as the agent: the headers give the size */
    ASSERT_EQ(check_corelib(&md), 0);
    free(img);
    free(f);
    return 0;
}

/* The input at the very end of a block of its own size. */
static int open_exact(const uint8_t *b, size_t n, char *err) {
    uint8_t *p = malloc(n ? n : 1);
    if (n)
        memcpy(p, b, n);
    dnp_md md;
    int rc = dnp_md_open(&md, p, n, 1, err, 256);
    if (rc == 0) { /* read every row: inside the block */
        for (uint32_t r = 1; r <= md.rows[DNP_MD_METHODDEF]; r++)
            (void)dnp_md_method_owner(&md, (uint32_t)DNP_MD_METHODDEF << 24 | r);
        for (uint32_t r = 1; r <= md.rows[DNP_MD_TYPEDEF]; r++)
            (void)dnp_md_type_enclosing(&md, (uint32_t)DNP_MD_TYPEDEF << 24 | r);
    }
    free(p);
    return rc;
}

TEST(metadata_small_assembly_cut_and_corrupt) {
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/metadata/plugin-a", DNPROF_SOURCE_DIR);
    size_t n = 0;
    uint8_t *f = (uint8_t *)test_read_file(path, &n);
    ASSERT_NE(f, NULL);
    dnp_md md;
    ASSERT_EQ(dnp_md_open(&md, f, n, 1, err, sizeof err), 0);
    ASSERT_GT(md.rows[DNP_MD_TYPEDEF], 1); /* <Module> and the plugin's class */
    ASSERT_GT(md.rows[DNP_MD_METHODDEF], 0);
    uint32_t last = (uint32_t)DNP_MD_TYPEDEF << 24 | md.rows[DNP_MD_TYPEDEF];
    ASSERT_NE(dnp_md_type_name(&md, last)[0], 0);
    ASSERT_EQ(dnp_md_find_type(&md, dnp_md_type_namespace(&md, last), dnp_md_type_name(&md, last), 0), last);
    /* every cut: refused with one line, or read inside what is left */
    int refused = 0;
    for (size_t cut = 0; cut < n; cut += 7) {
        err[0] = 0;
        if (open_exact(f, cut, err) != 0) {
            refused++;
            ASSERT_NE(err[0], 0);
            ASSERT_EQ(strchr(err, '\n'), NULL);
        }
    }
    ASSERT_GT(refused, 0);
    /* the metadata signature broken: refused, by name */
    uint8_t *bad = malloc(n);
    memcpy(bad, f, n);
    uint8_t *sig = memmem(bad, n, "BSJB", 4);
    ASSERT_NE(sig, NULL);
    sig[0] = 'X';
    ASSERT_EQ(open_exact(bad, n, err), -1);
    ASSERT_CONTAINS(err, "metadata");
    free(bad);
    free(f);
    return 0;
}
