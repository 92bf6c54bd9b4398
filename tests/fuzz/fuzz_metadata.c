/* fuzz_metadata.c: the .NET metadata reader (src/trace/cli_metadata.c), which
 * the agent runs on the images of the modules the runtime loaded, to find
 * async state machines without the runtime's IMetaDataImport. The input is a
 * whole PE file, read as the file lays it out (the seeds, tests/fuzz/corpus/
 * metadata, are a small real assembly and a cut of it), and the same bytes as
 * a metadata root. In a heap buffer of its exact size, so that ASan stops any
 * read past it. A refusal is one line; an accepted image answers every query
 * on every row (names NUL-terminated inside the input, owners and enclosing
 * types real rows or none, signatures inside the input). Dictionary:
 * tests/fuzz/metadata.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_metadata.h"

static void inside(const void *p, const uint8_t *data, size_t size, const char *what) {
    const uint8_t *b = p;
    if (*(const char *)p && (b < data || b >= data + size)) {
        fprintf(stderr, "fuzz_metadata: %s outside the input\n", what);
        abort();
    }
}

static void queries(const dnp_md *md, const uint8_t *data, size_t size) {
    uint32_t ntypes = md->rows[DNP_MD_TYPEDEF], nmethods = md->rows[DNP_MD_METHODDEF];
    for (uint32_t r = 1; r <= ntypes && r <= 512; r++) {
        uint32_t td = (uint32_t)DNP_MD_TYPEDEF << 24 | r, ms[4];
        const char *name = dnp_md_type_name(md, td), *ns = dnp_md_type_namespace(md, td);
        inside(name, data, size, "a type's name");
        inside(ns, data, size, "a type's namespace");
        uint32_t enc = dnp_md_type_enclosing(md, td);
        if (enc && (enc >> 24 != DNP_MD_TYPEDEF || (enc & 0xffffff) == 0 || (enc & 0xffffff) > ntypes))
            abort();
        if (ntypes <= 2048 && name[0] && dnp_md_find_type(md, ns, name, enc) == 0)
            abort(); /* a type is found by its own name (the first of that name, maybe another) */
        unsigned got = dnp_md_methods_named(md, td, "MoveNext", ms, 4);
        for (unsigned i = 0; i < got; i++) { /* its owner: td, unless the method lists are out of order */
            uint32_t owner = dnp_md_method_owner(md, ms[i]);
            if (strcmp(dnp_md_method_name(md, ms[i]), "MoveNext") || (owner & 0xffffff) > ntypes)
                abort();
        }
    }
    for (uint32_t r = 1; r <= nmethods && r <= 512; r++) {
        uint32_t m = (uint32_t)DNP_MD_METHODDEF << 24 | r, len = 0;
        const char *mname = dnp_md_method_name(md, m);
        inside(mname, data, size, "a method's name");
        if (!dnp_md_method_is(md, m, mname) || dnp_md_method_is(md, m, "MoveNext") != !strcmp(mname, "MoveNext"))
            abort(); /* the unmeasured compare agrees with the measured name */
        const uint8_t *sig = dnp_md_method_sig(md, m, &len);
        if (sig && (sig < data || sig + len > data + size))
            abort();
        uint32_t owner = dnp_md_method_owner(md, m);
        if (owner && (owner & 0xffffff) > ntypes)
            abort();
    }
    for (uint32_t r = 1; r <= md->rows[DNP_MD_FIELD] && r <= 512; r++) {
        uint32_t f = (uint32_t)DNP_MD_FIELD << 24 | r, off = 0;
        inside(dnp_md_field_name(md, f), data, size, "a field's name");
        (void)dnp_md_field_offset(md, f, &off);
    }
    for (uint32_t r = 1; r <= ntypes && r <= 64; r++) { /* a field found is one of the type's */
        uint32_t f = dnp_md_field_named(md, (uint32_t)DNP_MD_TYPEDEF << 24 | r, "_head");
        if (f && (f >> 24 != DNP_MD_FIELD || strcmp(dnp_md_field_name(md, f), "_head")))
            abort();
    }
    /* tokens that are not rows: nothing */
    if (dnp_md_method_name(md, 0x06ffffffu)[0] || dnp_md_type_name(md, 0x02000000u)[0] ||
        dnp_md_method_owner(md, 0x02000001u))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 22))
        return 0;
    dnp_md md;
    char err[256];
    if (dnp_md_open(&md, data, size, 1, err, sizeof err) == 0)
        queries(&md, data, size);
    else if (!err[0] || strchr(err, '\n'))
        abort();
    if (dnp_md_open_root(&md, data, size, err, sizeof err) == 0)
        queries(&md, data, size);
    else if (!err[0] || strchr(err, '\n'))
        abort();
    return 0;
}
