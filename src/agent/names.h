/* names.h: names for the runtime's IDs, as numbers of interned strings.
 *
 * Names come from ICorProfilerInfo and the module's metadata, resolved where the
 * runtime allows it (at *Finished, docs/design-notes.md#started-finished), and cached so that an entity is
 * resolved once. IDs are pointers the runtime reuses after an unload, so every
 * unload forgets what it could have made stale: a new entity never gets an old
 * name. A failure gives a readable fallback such as "<class 0x7f00...>". */
#ifndef DNP_NAMES_H
#define DNP_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "com_types.h"
#include "com.h"

typedef enum names_kind {
    NAMES_APPDOMAIN,
    NAMES_ASSEMBLY,
    NAMES_MODULE,
    NAMES_CLASS,
    NAMES_FUNCTION,
    NAMES_KIND_COUNT
} names_kind;

int names_init(void);

/* The string number of an entity's name, resolving it if it is not cached.
 * resolve = 0: only what the cache holds (0 if nothing), for the *Started
 * callbacks where the ID cannot be used yet. */
uint32_t names_get(names_kind kind, UINT_PTR id, int resolve);

/* The text of a function's name (Namespace.Class::Method<Args>), uncached, for
 * callers that must look at it (the enter/leave filter). Returns its length. */
size_t names_function_text(FunctionID fid, char *out, size_t cap);

/* The names of n frames (innermost first), one a line, and "... N more" when
 * more were left out; a frame is begun only with room bytes left. Returns the
 * length of the text in out. */
size_t names_frames_text(const FunctionID *f, unsigned n, unsigned more, size_t room, char *out, size_t cap);

/* The same for a class (System.Int32[], Scenarios.Box<System.String>). */
size_t names_class_text(ClassID cid, char *out, size_t cap);

/* Whether a class's text (names_class_text) holds a part that could not be
 * named ("<class 0x...>", "<no class>", ...; an empty text too). A compiler's
 * own name ("Ns.C+<<Main>g__Local|0_0>d", "<PrivateImplementationDetails>")
 * is not one. */
int names_class_unresolved(const char *text, size_t len);

/* The name of a field of imp's module as UTF-8 into out; its length (0 when
 * the metadata has no such field). */
size_t names_field_name(IMetaDataImport *imp, mdFieldDef field, char *out, size_t cap);

/* The name of a field of a class (its FieldDef in the class's module), for
 * heap snapshots; 0 and "" when unknown. */
size_t names_field_text(ClassID owner, mdFieldDef field, char *out, size_t cap);

/* A referenced IMetaDataImport for a module (cached), or NULL; Release it after use. */
IMetaDataImport *names_module_import(ModuleID module);

/* A TypeDef's name, Namespace.Outer+Inner (no arity suffix), into out; its length. */
size_t names_typedef_text(IMetaDataImport *imp, mdTypeDef td, char *out, size_t cap);

/* The name of a primitive CorElementType ("System.Int32"), or NULL. */
const char *names_element_type(unsigned elem);

/* A number that moves whenever a name of the kind may have been forgotten (an
 * unload): a name cached outside this module along with the epoch read before
 * resolving it is good while the epoch has not moved. */
unsigned names_epoch(names_kind kind);

/* Forgets one entity (its unload started). */
void names_forget(names_kind kind, UINT_PTR id);

/* Forgets everything that may live in a module that is going away: the module,
 * and every class and function name (generic instantiations and arrays over a
 * collectible type live in its loader allocator, not in their module). */
void names_forget_module(ModuleID module);

/* The name of the class of an object (exceptions, allocations). */
uint32_t names_object_class(ObjectID object, ClassID *class_out);

#endif
