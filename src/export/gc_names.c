/* gc_names.c: the words of the runtime's GC events (GCStart's Reason and
 * Type, dotnet/runtime src/coreclr/gc/gc.h's gc_reason), for the GC report and
 * the timeline's GC track (docs/waits.md). */
#include "export.h"

static const char *const reasons[] = {
    "small-object allocation", "induced", "low memory", "empty", "large-object allocation",
    "out of space (small objects)", "out of space (large objects)", "induced, background asked", "GC stress",
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

/* gcrecord.h's gc_condemn_reason_condition, by bit: why the GC went to an
 * older generation than it began with. */
static const char *const conditions[] = {
    "induced full GC", "heap expansion", "high memory load", "very high memory load", "low ephemeral space",
    "low card efficiency", "ephemeral fragmentation", "gen2 fragmentation", "gen2 fragmentation (ephemeral)",
    "gen2 fragmentation (memory load)", "gen2 fragmentation (virtual memory)", "gen1 at its limit",
    "last GC before out of memory", "gen2 too small", "induced, background asked", "before a background GC",
    "almost at the allocation limit", "unproductive GCs avoided"};
static const char *const condition_ids[] = {
    "induced_full", "expand", "high_memory_load", "very_high_memory_load", "low_ephemeral", "low_card_efficiency",
    "ephemeral_fragmentation", "gen2_fragmentation", "gen2_fragmentation_ephemeral",
    "gen2_fragmentation_memory_load", "gen2_fragmentation_vm", "max_gen1", "before_oom", "gen2_too_small",
    "induced_not_forced", "before_bgc", "almost_max_alloc", "avoid_unproductive"};
#define NCONDITIONS (sizeof conditions / sizeof conditions[0])
_Static_assert(NCONDITIONS == sizeof condition_ids / sizeof condition_ids[0], "a word and an id per condition");
const char *dnp_gc_condition(unsigned bit) { return bit < NCONDITIONS ? conditions[bit] : "another condition"; }
const char *dnp_gc_condition_id(unsigned bit) { return bit < NCONDITIONS ? condition_ids[bit] : "other"; }
int dnp_gc_reason_induced(uint64_t reason) { return reason == 1 || reason == 7 || reason == 10 || reason == 17; }
