/* heap_format.c: names for the heap snapshot format (heap_format.h). */
#include "heap_format.h"

const char *dnp_heap_root_kind_name(unsigned kind) {
    switch (kind) {
    case DNP_ROOT_STACK: return "stack";
    case DNP_ROOT_FINALIZER: return "finalizer";
    case DNP_ROOT_HANDLE: return "handle";
    case DNP_ROOT_NONGC: return "non-GC heap";
    default: return "other";
    }
}
