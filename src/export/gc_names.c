/* gc_names.c: the words of the runtime's GC events (GCStart's Reason and
 * Type, dotnet/runtime src/coreclr/gc/gc.h's gc_reason), for the GC report and
 * the timeline's GC track (docs/waits.md). */
#include "export.h"

static const char *const reasons[] = {
    "small-object allocation", "induced", "low memory", "empty", "large-object allocation",
    "out of space (small objects)", "out of space (large objects)", "induced, not forced", "GC stress",
    "low memory, blocking", "induced, compacting", "low memory (host)", "provisional mode full GC",
    "low memory (host), blocking", "background GC tuning (small objects)", "background GC tuning (large objects)",
    "background GC stepping", "induced, aggressive"};
static const char *const reason_ids[] = {
    "alloc_small", "induced", "low_memory", "empty", "alloc_large", "oos_small", "oos_large",
    "induced_not_forced", "gc_stress", "low_memory_blocking", "induced_compacting", "low_memory_host",
    "pm_full_gc", "low_memory_host_blocking", "bgc_tuning_soh", "bgc_tuning_loh", "bgc_stepping",
    "induced_aggressive"};
#define NREASONS (sizeof reasons / sizeof reasons[0])

const char *dnp_gc_start_reason(uint64_t reason) { return reason < NREASONS ? reasons[reason] : "other"; }
const char *dnp_gc_start_reason_id(uint64_t reason) { return reason < NREASONS ? reason_ids[reason] : "other"; }
const char *dnp_gc_type_name(uint64_t type) {
    return type == 0 ? "blocking" : type == 1 ? "background" : type == 2 ? "foreground" : "other";
}
