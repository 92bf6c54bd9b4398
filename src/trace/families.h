/* families.h: event families, the words people use for them, the runtime's
 * event-mask bits each one sets (COR_PRF_MONITOR_*, docs/design-notes.md#event-mask),
 * and what of them an attached profiler may have. Shared by the agent
 * (DNP_ENV_EVENTS, the attach blob) and the front end (--events). The flags
 * themselves are in one table, src/com/flags/prof_flags.def. */
#ifndef DNP_FAMILIES_H
#define DNP_FAMILIES_H

#include <stddef.h>
#include <stdint.h>

#include "prof_flags.h"
#include "trace_format.h"

/* What a person can read: every family but per-object allocations (and per-call
 * enter/leave, which is not a family of this log). */
#define DNP_EVENTS_DEFAULT "default"

typedef struct dnp_event_config {
    uint32_t families; /* bit (1 << dnp_family) per family enabled */
    uint32_t mask;     /* COR_PRF_MONITOR low word for SetEventMask */
    uint32_t mask_high;/* COR_PRF_HIGH_MONITOR word for SetEventMask2 */
    uint32_t named;    /* families named outright in the text (not through all or
                          default), and still in families */
    int from_mask;     /* the text was a hex mask */
} dnp_event_config;

/* Parses a configuration: a hex mask as DNProfiler took
 * ("0x1A7FFFF", docs/design-notes.md#event-mask), or words
 * separated by commas: family names, "all", "default", and "-name" to remove one
 * ("all,-gc"). NULL or "" means the default. Returns 0, or -1 with one line in err
 * that names the bad word and lists the valid ones. */
int dnp_events_parse(const char *text, dnp_event_config *out, char *err, size_t errlen);

/* The runtime mask bits of a set of families, and the families a mask covers. */
uint32_t dnp_families_mask(uint32_t families);
uint32_t dnp_families_from_mask(uint32_t mask);

/* "classes,modules,..." for a set of families, into buf; returns buf. */
char *dnp_families_format(uint32_t families, char *buf, size_t buflen);

/* Looks up a family word ("gc"); returns the family or -1. */
int dnp_family_lookup(const char *word, size_t len);

/* What an attached profiler may have of a configuration: the runtime accepts only
 * the COR_PRF_[HIGH_]ALLOWABLE_AFTER_ATTACH flags after an attach. */
typedef struct dnp_attach_events {
    uint32_t mask, mask_high;       /* the flags kept */
    uint32_t dropped, dropped_high; /* the flags lost */
    uint32_t whole;                 /* families of the configuration that lose every flag */
    uint32_t part;                  /* families that lose some of their flags, not all */
} dnp_attach_events;

void dnp_events_after_attach(const dnp_event_config *cfg, dnp_attach_events *out);

/* "COR_PRF_MONITOR_GC, COR_PRF_..." for the flags set in mask, a word of
 * SetEventMask2 (high: 0 the low word, 1 the high word), into buf; returns buf. */
char *dnp_prf_flags_format(uint32_t mask, int high, char *buf, size_t buflen);

#endif
