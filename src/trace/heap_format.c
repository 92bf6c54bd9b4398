/* heap_format.c: names for the heap snapshot format (heap_format.h), and its
 * record table as text (for docs/heap.md). */
#include "heap_format.h"

/* "U index, U class_id": each field's kind and name, from the .def's text. */
#define DNP_HF(KIND, name) ", " #KIND " " #name
#define DNP_HEAP_REC(NAME, TAG, HEAD, ITEM, WHAT) {TAG, #NAME, "" HEAD, "" ITEM, WHAT},
const dnp_heap_record_info dnp_heap_records[] = {
#include "heap_format.def"
};
#undef DNP_HEAP_REC
#undef DNP_HF
const unsigned dnp_heap_nrecords = sizeof dnp_heap_records / sizeof dnp_heap_records[0];

const char *dnp_heap_root_kind_name(unsigned kind) {
    switch (kind) {
    case DNP_ROOT_STACK: return "stack";
    case DNP_ROOT_FINALIZER: return "finalizer";
    case DNP_ROOT_HANDLE: return "handle";
    case DNP_ROOT_NONGC: return "non-GC heap";
    case DNP_ROOT_STATIC: return "static";
    default: return "other";
    }
}
