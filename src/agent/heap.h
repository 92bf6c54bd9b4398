/* heap.h: heap snapshots (docs/design-notes.md#heap-graph): one full blocking GC forced from a thread
 * of the agent's own used for that alone, during which the GC's heap walk
 * (RootReferences2, ObjectReferences, ConditionalWeakTableElementReferences)
 * is streamed to a .dnheap file (heap_format.h) by a writer thread through a
 * fixed pool of buffers: the memory added to the process is bounded whatever
 * the heap's size. After the GC, from the snapshot's thread: the names, and
 * the objects static fields hold (heap_statics.c). Needs COR_PRF_MONITOR_GC in
 * the event mask. */
#ifndef DNP_HEAP_H
#define DNP_HEAP_H

#include <stdatomic.h>
#include <stddef.h>

#include "com_types.h"

/* Takes a snapshot into path (absolute) and waits for it. Call from a thread
 * of the agent's own that never ran managed code (the control thread, or
 * Shutdown). reply gets "ok snapshot <objects> <bytes> <pause_ns> <file bytes>"
 * or "error <why>". 0, or -1. */
int heap_snapshot(const char *path, char *reply, size_t cap);

/* Set while this module captures a GC's heap walk: the GC callbacks hand it
 * their arguments (and record nothing else). */
extern atomic_int heap_capturing;

void heap_gc_started(int n, const BOOL *collected, int reason);
void heap_gc_finished(void);
void heap_roots(ULONG n, const ObjectID *refs, const COR_PRF_GC_ROOT_KIND *kinds,
                const COR_PRF_GC_ROOT_FLAGS *flags, const UINT_PTR *ids);
void heap_object(ObjectID obj, ClassID cls, ULONG n, const ObjectID *refs);
void heap_deps(ULONG n, const ObjectID *keys, const ObjectID *values, const GCHandleID *ids);

/* dnprof run --heap-at exit: a snapshot at Shutdown into the path of
 * agent_config.heap_at_exit (config.c), if one was asked. */
void heap_at_shutdown(void);

#endif
