/* cli_metadata.c: the metadata tables of a .NET module, read in place
 * (cli_metadata.h). The layout is ECMA-335's: the PE's CLI header (II.25.3.3)
 * points at the metadata root (II.24.2.1), whose streams hold the tables
 * (#~, II.24.2.6) and the heaps their columns index. A column's width depends
 * on the heaps' sizes and the tables' row counts, so every table's schema is
 * here, in table order (II.22), to find where each table starts. */
#include "cli_metadata.h"

#include <stdio.h>
#include <string.h>

static uint32_t rd16(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t rd32(const uint8_t *p) {
    return rd16(p) | rd16(p + 2) << 16;
}

/* ---- the schema ---- */

/* Column kinds: fixed widths, heap indexes, a table's row index (TI + table),
 * a coded index (CI + kind). */
enum { C2 = 1, C4, CS, CG, CB, TI = 0x40, CI = 0x80 };

enum {
    TYPE_DEF_OR_REF, HAS_CONSTANT, HAS_CUSTOM_ATTRIBUTE, HAS_FIELD_MARSHAL, HAS_DECL_SECURITY, MEMBER_REF_PARENT,
    HAS_SEMANTICS, METHOD_DEF_OR_REF, MEMBER_FORWARDED, IMPLEMENTATION, CUSTOM_ATTRIBUTE_TYPE, RESOLUTION_SCOPE,
    TYPE_OR_METHOD_DEF, CODED_KINDS
};

#define NO 0xff /* a tag that names no table */

/* II.24.2.6: the tables each coded index may point at, in tag order. */
static const struct {
    uint8_t bits, n;
    uint8_t tables[22];
} coded[CODED_KINDS] = {
    [TYPE_DEF_OR_REF] = {2, 3, {0x02, 0x01, 0x1B}},
    [HAS_CONSTANT] = {2, 3, {0x04, 0x08, 0x17}},
    [HAS_CUSTOM_ATTRIBUTE] = {5, 22, {0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0A, 0x00, 0x0E, 0x17, 0x14,
                                       0x11, 0x1A, 0x1B, 0x20, 0x23, 0x26, 0x27, 0x28, 0x2A, 0x2C, 0x2B}},
    [HAS_FIELD_MARSHAL] = {1, 2, {0x04, 0x08}},
    [HAS_DECL_SECURITY] = {2, 3, {0x02, 0x06, 0x20}},
    [MEMBER_REF_PARENT] = {3, 5, {0x02, 0x01, 0x1A, 0x06, 0x1B}},
    [HAS_SEMANTICS] = {1, 2, {0x14, 0x17}},
    [METHOD_DEF_OR_REF] = {1, 2, {0x06, 0x0A}},
    [MEMBER_FORWARDED] = {1, 2, {0x04, 0x06}},
    [IMPLEMENTATION] = {2, 3, {0x26, 0x23, 0x27}},
    [CUSTOM_ATTRIBUTE_TYPE] = {3, 5, {NO, NO, 0x06, 0x0A, NO}},
    [RESOLUTION_SCOPE] = {2, 4, {0x00, 0x1A, 0x23, 0x01}},
    [TYPE_OR_METHOD_DEF] = {1, 2, {0x02, 0x06}},
};

/* II.22: each table's columns, in order (0 ends a row). */
static const uint8_t schema[DNP_MD_TABLES][9] = {
    /* 0x00 Module */ {C2, CS, CG, CG, CG},
    /* 0x01 TypeRef */ {CI + RESOLUTION_SCOPE, CS, CS},
    /* 0x02 TypeDef */ {C4, CS, CS, CI + TYPE_DEF_OR_REF, TI + 0x04, TI + 0x06},
    /* 0x03 FieldPtr */ {TI + 0x04},
    /* 0x04 Field */ {C2, CS, CB},
    /* 0x05 MethodPtr */ {TI + 0x06},
    /* 0x06 MethodDef */ {C4, C2, C2, CS, CB, TI + 0x08},
    /* 0x07 ParamPtr */ {TI + 0x08},
    /* 0x08 Param */ {C2, C2, CS},
    /* 0x09 InterfaceImpl */ {TI + 0x02, CI + TYPE_DEF_OR_REF},
    /* 0x0A MemberRef */ {CI + MEMBER_REF_PARENT, CS, CB},
    /* 0x0B Constant (type, padding) */ {C2, CI + HAS_CONSTANT, CB},
    /* 0x0C CustomAttribute */ {CI + HAS_CUSTOM_ATTRIBUTE, CI + CUSTOM_ATTRIBUTE_TYPE, CB},
    /* 0x0D FieldMarshal */ {CI + HAS_FIELD_MARSHAL, CB},
    /* 0x0E DeclSecurity */ {C2, CI + HAS_DECL_SECURITY, CB},
    /* 0x0F ClassLayout */ {C2, C4, TI + 0x02},
    /* 0x10 FieldLayout */ {C4, TI + 0x04},
    /* 0x11 StandAloneSig */ {CB},
    /* 0x12 EventMap */ {TI + 0x02, TI + 0x14},
    /* 0x13 EventPtr */ {TI + 0x14},
    /* 0x14 Event */ {C2, CS, CI + TYPE_DEF_OR_REF},
    /* 0x15 PropertyMap */ {TI + 0x02, TI + 0x17},
    /* 0x16 PropertyPtr */ {TI + 0x17},
    /* 0x17 Property */ {C2, CS, CB},
    /* 0x18 MethodSemantics */ {C2, TI + 0x06, CI + HAS_SEMANTICS},
    /* 0x19 MethodImpl */ {TI + 0x02, CI + METHOD_DEF_OR_REF, CI + METHOD_DEF_OR_REF},
    /* 0x1A ModuleRef */ {CS},
    /* 0x1B TypeSpec */ {CB},
    /* 0x1C ImplMap */ {C2, CI + MEMBER_FORWARDED, CS, TI + 0x1A},
    /* 0x1D FieldRVA */ {C4, TI + 0x04},
    /* 0x1E EncLog */ {C4, C4},
    /* 0x1F EncMap */ {C4},
    /* 0x20 Assembly */ {C4, C2, C2, C2, C2, C4, CB, CS, CS},
    /* 0x21 AssemblyProcessor */ {C4},
    /* 0x22 AssemblyOS */ {C4, C4, C4},
    /* 0x23 AssemblyRef */ {C2, C2, C2, C2, C4, CB, CS, CS, CB},
    /* 0x24 AssemblyRefProcessor */ {C4, TI + 0x23},
    /* 0x25 AssemblyRefOS */ {C4, C4, C4, TI + 0x23},
    /* 0x26 File */ {C4, CS, CB},
    /* 0x27 ExportedType */ {C4, C4, CS, CS, CI + IMPLEMENTATION},
    /* 0x28 ManifestResource */ {C4, C4, CS, CI + IMPLEMENTATION},
    /* 0x29 NestedClass */ {TI + 0x02, TI + 0x02},
    /* 0x2A GenericParam */ {C2, C2, CI + TYPE_OR_METHOD_DEF, CS},
    /* 0x2B MethodSpec */ {CI + METHOD_DEF_OR_REF, CB},
    /* 0x2C GenericParamConstraint */ {TI + 0x2A, CI + TYPE_DEF_OR_REF},
};

static unsigned column_width(const uint32_t *rows, unsigned heaps, uint8_t kind) {
    if (kind == C2)
        return 2;
    if (kind == C4)
        return 4;
    if (kind == CS)
        return heaps & 1 ? 4 : 2;
    if (kind == CG)
        return heaps & 2 ? 4 : 2;
    if (kind == CB)
        return heaps & 4 ? 4 : 2;
    if (kind & CI) {
        unsigned k = kind & ~CI, most = 0;
        for (unsigned i = 0; i < coded[k].n; i++)
            if (coded[k].tables[i] != NO && rows[coded[k].tables[i]] > most)
                most = rows[coded[k].tables[i]];
        return most < (1u << (16 - coded[k].bits)) ? 2 : 4;
    }
    return rows[kind & ~TI] < 0x10000 ? 2 : 4;
}

/* ---- opening ---- */

static int fail(char *err, size_t cap, const char *what) {
    if (cap)
        snprintf(err, cap, "not a readable .NET module: %s", what);
    return -1;
}

/* The tables stream: row counts, then the rows of each table present. */
static int open_tables(dnp_md *md, const uint8_t *p, uint32_t size, char *err, size_t cap) {
    if (size < 24)
        return fail(err, cap, "its tables stream is truncated");
    unsigned heaps = p[6];
    uint64_t valid = (uint64_t)rd32(p + 8) | (uint64_t)rd32(p + 12) << 32;
    uint32_t at = 24;
    for (unsigned t = 0; t < 64; t++) {
        if (!(valid >> t & 1))
            continue;
        if (at + 4 > size)
            return fail(err, cap, "its tables stream is truncated");
        uint32_t n = rd32(p + at);
        at += 4;
        if (t >= DNP_MD_TABLES) {
            if (n)
                return fail(err, cap, "it has tables this reader does not know");
            continue;
        }
        md->rows[t] = n;
    }
    if (heaps & 0x40)
        at += 4; /* #- streams: extra data */
    if (at > size)
        return fail(err, cap, "its tables stream is truncated");
    if (md->rows[0x03] || md->rows[0x05] || md->rows[0x07])
        return fail(err, cap, "its tables are unoptimized (edit and continue)");
    for (unsigned t = 0; t < DNP_MD_TABLES; t++) {
        unsigned off = 0, k = 0;
        for (; k < 9 && schema[t][k]; k++) {
            md->col[t][k] = (uint8_t)off;
            off += column_width(md->rows, heaps, schema[t][k]);
        }
        md->col[t][k] = (uint8_t)off;
        md->ncols[t] = (uint8_t)k;
        md->rowsize[t] = (uint8_t)off;
        if ((uint64_t)md->rows[t] * off > size - at)
            return fail(err, cap, "a table runs past its stream");
        md->table[t] = md->rows[t] ? p + at : NULL;
        at += md->rows[t] * off;
    }
    return 0;
}

int dnp_md_open_root(dnp_md *md, const uint8_t *root, size_t size, char *err, size_t cap) {
    memset(md, 0, sizeof *md);
    if (size < 20 || rd32(root) != 0x424A5342u)
        return fail(err, cap, "no metadata signature");
    if (size > 0x7fffffffu)
        size = 0x7fffffffu;
    uint32_t vlen = rd32(root + 12);
    if (vlen > size - 20)
        return fail(err, cap, "its metadata header is truncated");
    uint32_t at = 16 + ((vlen + 3u) & ~3u);
    if (at + 4 > size)
        return fail(err, cap, "its metadata header is truncated");
    unsigned nstreams = rd16(root + at + 2);
    at += 4;
    const uint8_t *tables = NULL;
    uint32_t ntables = 0;
    for (unsigned i = 0; i < nstreams; i++) {
        if (at + 8 > size)
            return fail(err, cap, "its stream headers are truncated");
        uint32_t off = rd32(root + at), len = rd32(root + at + 4);
        const char *name = (const char *)root + at + 8;
        const char *end = memchr(name, 0, size - at - 8 < 32 ? size - at - 8 : 32);
        if (!end)
            return fail(err, cap, "a stream's name is not terminated");
        at += 8 + (((uint32_t)(end - name) + 1u + 3u) & ~3u);
        if (off > size || len > size - off)
            return fail(err, cap, "a stream runs past the metadata");
        if (!strcmp(name, "#~") || !strcmp(name, "#-")) {
            tables = root + off;
            ntables = len;
        } else if (!strcmp(name, "#Strings")) {
            md->strings = root + off;
            md->nstrings = len;
        } else if (!strcmp(name, "#Blob")) {
            md->blob = root + off;
            md->nblob = len;
        } else if (!strcmp(name, "#GUID")) {
            md->guids = root + off;
            md->nguids = len;
        }
    }
    if (!tables)
        return fail(err, cap, "it has no tables stream");
    return open_tables(md, tables, ntables, err, cap);
}

/* Where an RVA lies in the image: mapped, at the RVA; flat (as in the file),
 * at its section's file offset. -1 when no section holds it. */
static int rva_at(const uint8_t *sect, unsigned nsect, int flat, uint32_t rva, uint32_t *at) {
    if (!flat) {
        *at = rva;
        return 0;
    }
    for (unsigned i = 0; i < nsect; i++) {
        const uint8_t *s = sect + 40u * i;
        uint32_t va = rd32(s + 12), vsize = rd32(s + 8), raw = rd32(s + 16);
        if (rva >= va && rva - va < raw && rva - va < (vsize ? vsize : raw)) {
            *at = rva - va + rd32(s + 20);
            return 0;
        }
    }
    return -1;
}

/* The PE headers (PE/COFF; ECMA-335 II.25): the CLI header's directory, the
 * CLI header, its metadata directory. */
int dnp_md_open(dnp_md *md, const uint8_t *image, size_t size, int flat, char *err, size_t cap) {
    memset(md, 0, sizeof *md);
    size_t known = size ? size : 4096; /* a loaded image's headers lie in its first page */
    if (known < 0x40 || image[0] != 'M' || image[1] != 'Z')
        return fail(err, cap, "no MZ header");
    uint32_t pe = rd32(image + 0x3c);
    if (pe > known - 24 || memcmp(image + pe, "PE\0\0", 4) != 0)
        return fail(err, cap, "no PE header");
    unsigned nsect = rd16(image + pe + 6), optsize = rd16(image + pe + 20);
    uint32_t opt = pe + 24;
    if (optsize < 2 || (uint64_t)opt + optsize + 40ull * nsect > known)
        return fail(err, cap, "its PE headers are truncated");
    unsigned magic = rd16(image + opt);
    uint32_t dirs = opt + (magic == 0x20b ? 112u : 96u);
    if ((magic != 0x10b && magic != 0x20b) || dirs + 15 * 8 > opt + optsize)
        return fail(err, cap, "it has no CLI header directory");
    const uint8_t *sect = image + opt + optsize;
    if (!size) { /* an image the runtime loaded: as far as its headers say */
        known = flat ? 0 : rd32(image + opt + 56); /* SizeOfImage */
        for (unsigned i = 0; flat && i < nsect; i++)
            if ((size_t)rd32(sect + 40u * i + 20) + rd32(sect + 40u * i + 16) > known)
                known = (size_t)rd32(sect + 40u * i + 20) + rd32(sect + 40u * i + 16);
    }
    uint32_t hdr, root;
    if (rva_at(sect, nsect, flat, rd32(image + dirs + 14 * 8), &hdr) != 0 || known < 16 || hdr > known - 16)
        return fail(err, cap, "its CLI header lies outside the image");
    uint32_t mdsize = rd32(image + hdr + 12);
    if (rva_at(sect, nsect, flat, rd32(image + hdr + 8), &root) != 0 || root > known || mdsize > known - root)
        return fail(err, cap, "its metadata lies outside the image");
    return dnp_md_open_root(md, image + root, mdsize, err, cap);
}

/* ---- reading ---- */

/* Column k of row r (1-based) of table t; 0 when out of range. */
static uint32_t cell(const dnp_md *md, unsigned t, uint32_t r, unsigned k) {
    if (t >= DNP_MD_TABLES || !r || r > md->rows[t] || k >= md->ncols[t])
        return 0;
    const uint8_t *p = md->table[t] + (size_t)(r - 1) * md->rowsize[t] + md->col[t][k];
    return md->col[t][k + 1] - md->col[t][k] == 2 ? rd16(p) : rd32(p);
}

static const char *string_at(const dnp_md *md, uint32_t i) {
    if (!md->strings || i >= md->nstrings || !memchr(md->strings + i, 0, md->nstrings - i))
        return "";
    return (const char *)md->strings + i;
}

/* Whether string i is s, as string_at would give it, without measuring it
 * first: a search over a table compares a name per row and most differ at
 * their first byte. */
static int string_is(const dnp_md *md, uint32_t i, const char *s) {
    if (!*s) /* "" is also what string_at gives for a string without its end */
        return !string_at(md, i)[0];
    if (!md->strings || i >= md->nstrings)
        return 0;
    const uint8_t *p = md->strings + i, *end = md->strings + md->nstrings;
    for (const char *q = s; p < end; p++, q++) {
        if (*p != (uint8_t)*q)
            return 0;
        if (!*p)
            return 1;
    }
    return 0; /* no end before the heap's: string_at's "", not s */
}

/* Row of token tok if it is of table t, else 0. */
static uint32_t row_of(const dnp_md *md, uint32_t tok, unsigned t) {
    uint32_t r = tok & 0x00ffffffu;
    return tok >> 24 == t && r && r <= md->rows[t] ? r : 0;
}

int dnp_md_mvid(const dnp_md *md, uint8_t mvid[16]) {
    uint32_t g = cell(md, 0x00, 1, 2); /* Module's row 1: Mvid, an index from 1 into the GUID heap */
    if (!g || !md->guids || g > md->nguids / 16)
        return -1;
    memcpy(mvid, md->guids + 16u * (g - 1), 16);
    return 0;
}

const char *dnp_md_type_name(const dnp_md *md, uint32_t td) {
    uint32_t r = row_of(md, td, DNP_MD_TYPEDEF);
    return r ? string_at(md, cell(md, DNP_MD_TYPEDEF, r, 1)) : "";
}

const char *dnp_md_type_namespace(const dnp_md *md, uint32_t td) {
    uint32_t r = row_of(md, td, DNP_MD_TYPEDEF);
    return r ? string_at(md, cell(md, DNP_MD_TYPEDEF, r, 2)) : "";
}

/* The token of TypeDef row r, 0 when there is no such row (a corrupt column). */
static uint32_t typedef_token(const dnp_md *md, uint32_t r) {
    return r && r <= md->rows[DNP_MD_TYPEDEF] ? (uint32_t)DNP_MD_TYPEDEF << 24 | r : 0;
}

uint32_t dnp_md_type_enclosing(const dnp_md *md, uint32_t td) {
    uint32_t r = row_of(md, td, DNP_MD_TYPEDEF);
    if (!r)
        return 0;
    /* NestedClass is sorted by its first column (II.22): a binary search, or a
     * scan when it is not */
    uint32_t lo = 1, hi = md->rows[DNP_MD_NESTEDCLASS];
    while (lo <= hi && hi) {
        uint32_t mid = lo + (hi - lo) / 2, v = cell(md, DNP_MD_NESTEDCLASS, mid, 0);
        if (v == r)
            return typedef_token(md, cell(md, DNP_MD_NESTEDCLASS, mid, 1));
        if (v < r)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    for (uint32_t i = 1; i <= md->rows[DNP_MD_NESTEDCLASS]; i++)
        if (cell(md, DNP_MD_NESTEDCLASS, i, 0) == r)
            return typedef_token(md, cell(md, DNP_MD_NESTEDCLASS, i, 1));
    return 0;
}

uint32_t dnp_md_find_type(const dnp_md *md, const char *ns, const char *name, uint32_t enclosing) {
    for (uint32_t r = 1; r <= md->rows[DNP_MD_TYPEDEF]; r++) {
        uint32_t td = (uint32_t)DNP_MD_TYPEDEF << 24 | r;
        if (string_is(md, cell(md, DNP_MD_TYPEDEF, r, 1), name) && string_is(md, cell(md, DNP_MD_TYPEDEF, r, 2), ns) &&
            dnp_md_type_enclosing(md, td) == enclosing)
            return td;
    }
    return 0;
}

/* The methods of TypeDef row r: [first, end) of MethodDef's rows. */
static void method_range(const dnp_md *md, uint32_t r, uint32_t *first, uint32_t *end) {
    uint32_t n = md->rows[DNP_MD_METHODDEF];
    *first = cell(md, DNP_MD_TYPEDEF, r, 5);
    *end = r < md->rows[DNP_MD_TYPEDEF] ? cell(md, DNP_MD_TYPEDEF, r + 1, 5) : n + 1;
    if (*end > n + 1)
        *end = n + 1;
    if (*first > *end)
        *first = *end;
}

unsigned dnp_md_methods_named(const dnp_md *md, uint32_t td, const char *name, uint32_t *out, unsigned cap) {
    uint32_t r = row_of(md, td, DNP_MD_TYPEDEF), first, end;
    if (!r)
        return 0;
    method_range(md, r, &first, &end);
    unsigned got = 0;
    for (uint32_t m = first; m && m < end && got < cap; m++)
        if (string_is(md, cell(md, DNP_MD_METHODDEF, m, 3), name))
            out[got++] = (uint32_t)DNP_MD_METHODDEF << 24 | m;
    return got;
}

const char *dnp_md_method_name(const dnp_md *md, uint32_t method) {
    uint32_t r = row_of(md, method, DNP_MD_METHODDEF);
    return r ? string_at(md, cell(md, DNP_MD_METHODDEF, r, 3)) : "";
}

int dnp_md_method_is(const dnp_md *md, uint32_t method, const char *name) {
    uint32_t r = row_of(md, method, DNP_MD_METHODDEF);
    return r ? string_is(md, cell(md, DNP_MD_METHODDEF, r, 3), name) : !*name;
}

const uint8_t *dnp_md_method_sig(const dnp_md *md, uint32_t method, uint32_t *len) {
    uint32_t r = row_of(md, method, DNP_MD_METHODDEF), i = r ? cell(md, DNP_MD_METHODDEF, r, 4) : 0;
    *len = 0;
    if (!r || !md->blob || i >= md->nblob)
        return NULL;
    const uint8_t *p = md->blob + i;
    uint32_t left = md->nblob - i, n, hdr;
    if (!(p[0] & 0x80)) {
        n = p[0];
        hdr = 1;
    } else if ((p[0] & 0xc0) == 0x80 && left >= 2) {
        n = (p[0] & 0x3fu) << 8 | p[1];
        hdr = 2;
    } else if ((p[0] & 0xe0) == 0xc0 && left >= 4) {
        n = (p[0] & 0x1fu) << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        hdr = 4;
    } else {
        return NULL;
    }
    if (n > left - hdr)
        return NULL;
    *len = n;
    return p + hdr;
}

uint32_t dnp_md_method_owner(const dnp_md *md, uint32_t method) {
    uint32_t m = row_of(md, method, DNP_MD_METHODDEF);
    if (!m)
        return 0;
    /* the last type whose method list starts at or before m: lists ascend */
    uint32_t lo = 1, hi = md->rows[DNP_MD_TYPEDEF], best = 0;
    while (lo <= hi && hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cell(md, DNP_MD_TYPEDEF, mid, 5) <= m) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    uint32_t first, end;
    if (!best)
        return 0;
    method_range(md, best, &first, &end);
    return m >= first && m < end ? (uint32_t)DNP_MD_TYPEDEF << 24 | best : 0;
}

const char *dnp_md_field_name(const dnp_md *md, uint32_t field) {
    uint32_t r = row_of(md, field, DNP_MD_FIELD);
    return r ? string_at(md, cell(md, DNP_MD_FIELD, r, 1)) : "";
}

uint32_t dnp_md_field_named(const dnp_md *md, uint32_t td, const char *name) {
    uint32_t r = row_of(md, td, DNP_MD_TYPEDEF), n = md->rows[DNP_MD_FIELD];
    if (!r)
        return 0;
    /* TypeDef's FieldList (column 4) starts a run that the next type's ends */
    uint32_t first = cell(md, DNP_MD_TYPEDEF, r, 4);
    uint32_t end = r < md->rows[DNP_MD_TYPEDEF] ? cell(md, DNP_MD_TYPEDEF, r + 1, 4) : n + 1;
    if (end > n + 1)
        end = n + 1;
    for (uint32_t f = first; f && f < end; f++)
        if (string_is(md, cell(md, DNP_MD_FIELD, f, 1), name))
            return (uint32_t)DNP_MD_FIELD << 24 | f;
    return 0;
}

int dnp_md_field_offset(const dnp_md *md, uint32_t field, uint32_t *offset) {
    uint32_t r = row_of(md, field, DNP_MD_FIELD);
    if (!r)
        return -1;
    /* FieldLayout (0x10): Offset, Field; sorted by Field (II.22), scanned
     * whole all the same: it has a row per field of an explicit layout only */
    for (uint32_t i = 1; i <= md->rows[DNP_MD_FIELDLAYOUT]; i++)
        if (cell(md, DNP_MD_FIELDLAYOUT, i, 1) == r) {
            *offset = cell(md, DNP_MD_FIELDLAYOUT, i, 0);
            return 0;
        }
    return -1;
}
