/* heap_statics.h: the objects static fields hold, for a heap snapshot's STATIC
 * records (heap.c), so that a path from a root can name the static
 * ("[static App.Cache.Items]") instead of the runtime's pinned Object[] of
 * statics that a handle holds. */
#ifndef DNP_HEAP_STATICS_H
#define DNP_HEAP_STATICS_H

#include <stddef.h>

#include "com_types.h"

/* Called with each static field's "Type.Field" name and the object it holds. */
typedef void (*heap_static_fn)(const char *name, size_t len, ObjectID value, void *ctx);

/* The app-domain statics of reference type of the classes given (the heap
 * walk's), of their parents, and of the classes whose methods were JIT-compiled
 * (static classes have no instances: their class constructor is how they are
 * found). No class is loaded for this. Thread statics are left out (each thread
 * has its own). Call after the GC, from the snapshot's thread. The number of
 * statics given to fn. */
size_t heap_statics_each(const UINT_PTR *classes, size_t n, heap_static_fn fn, void *ctx);

/* The class's parent, or 0 (none, or the runtime does not say). */
ClassID heap_class_parent(ClassID id);

#endif
