/* cli_metadata.h: a reader of a .NET module's metadata tables (ECMA-335
 * partition II, 22 and 24), in place, without the runtime.
 *
 * Why: the runtime's IMetaDataImport over CoreLib costs a program about 3 ms
 * of CPU when it is opened at start-up (measured on a 55 ms program:
 * BENCHMARKS.md, "The fixed cost measured again"); async stacks need only a
 * few names from it (types, methods, fields). This reader answers those from
 * the bytes of the image the runtime mapped, or of a file.
 *
 * Every read is checked against the metadata's own size: a corrupt or
 * truncated image gives one line of reason (dnp_md_open) or "not found", never
 * a read outside it (tests/fuzz/fuzz_metadata.c). Nothing is allocated. */
#ifndef DNP_CLI_METADATA_H
#define DNP_CLI_METADATA_H

#include <stddef.h>
#include <stdint.h>

#define DNP_MD_TABLES 45 /* 0x00 Module .. 0x2C GenericParamConstraint */

typedef struct dnp_md {
    const uint8_t *strings, *blob, *guids;
    uint32_t nstrings, nblob, nguids;
    const uint8_t *table[DNP_MD_TABLES];
    uint32_t rows[DNP_MD_TABLES];
    uint8_t rowsize[DNP_MD_TABLES];
    uint8_t col[DNP_MD_TABLES][10]; /* column offsets within a row (9 at most), then the row's end */
    uint8_t ncols[DNP_MD_TABLES];
} dnp_md;

/* Token tables (the token's high byte). */
enum {
    DNP_MD_TYPEDEF = 0x02,
    DNP_MD_FIELD = 0x04,
    DNP_MD_METHODDEF = 0x06,
    DNP_MD_FIELDLAYOUT = 0x10,
    DNP_MD_NESTEDCLASS = 0x29
};

/* Opens the metadata of a PE image: `image` is its first byte, `size` what may
 * be read from it (0 when unknown: then only what the headers say), `flat`
 * whether it lies as in the file (sections at their file offsets) rather than
 * mapped (sections at their RVAs). 0, or -1 with one line in err. */
int dnp_md_open(dnp_md *md, const uint8_t *image, size_t size, int flat, char *err, size_t cap);

/* Opens metadata given directly (the "BSJB" root and what follows, size bytes). */
int dnp_md_open_root(dnp_md *md, const uint8_t *root, size_t size, char *err, size_t cap);

/* The module's version id (its Module row's Mvid, II.22.30): a GUID that every
 * build of an assembly changes. 0, or -1 when the metadata has none. */
int dnp_md_mvid(const dnp_md *md, uint8_t mvid[16]);

/* The TypeDef named ns.name (ns "" for none) nested in `enclosing` (0 for a
 * top-level type); 0 when none. */
uint32_t dnp_md_find_type(const dnp_md *md, const char *ns, const char *name, uint32_t enclosing);

/* The methods of TypeDef td named name, up to cap of them in out; how many. */
unsigned dnp_md_methods_named(const dnp_md *md, uint32_t td, const char *name, uint32_t *out, unsigned cap);

/* A MethodDef's name ("" when the token is not one), its signature blob (NULL
 * when none), the TypeDef that owns it (0 when none). */
const char *dnp_md_method_name(const dnp_md *md, uint32_t method);
const uint8_t *dnp_md_method_sig(const dnp_md *md, uint32_t method, uint32_t *len);
uint32_t dnp_md_method_owner(const dnp_md *md, uint32_t method);

/* Whether method's name is name: dnp_md_method_name's string compared
 * without measuring it first (a look at every method compiled). */
int dnp_md_method_is(const dnp_md *md, uint32_t method, const char *name);

/* A TypeDef's name and namespace ("" when not one); the type it is nested in
 * (0 when none). A field's name. */
const char *dnp_md_type_name(const dnp_md *md, uint32_t td);
const char *dnp_md_type_namespace(const dnp_md *md, uint32_t td);
uint32_t dnp_md_type_enclosing(const dnp_md *md, uint32_t td);
const char *dnp_md_field_name(const dnp_md *md, uint32_t field);
/* The field of TypeDef td named name (its own fields, static or not), 0 if none. */
uint32_t dnp_md_field_named(const dnp_md *md, uint32_t td, const char *name);
/* The offset a type of explicit layout gives field ([FieldOffset], the
 * FieldLayout table) into *offset: 0, or -1 when it gives none. */
int dnp_md_field_offset(const dnp_md *md, uint32_t field, uint32_t *offset);

#endif
