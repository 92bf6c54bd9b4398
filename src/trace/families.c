/* families.c: event families, their words, the COR_PRF_MONITOR bits each one
 * needs (docs/design-notes.md#event-mask), what an attached profiler keeps of them,
 * and the flags' names (src/com/flags/prof_flags.def). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "families.h"

#define FAM(f) (1u << DNP_FAM_##f)

/* COR_PRF_MONITOR_* and COR_PRF_ENABLE_* bits, per family. */
static const uint32_t family_mask[DNP_FAM_COUNT] = {
    [DNP_FAM_RUNTIME] = 0, /* Initialize, Shutdown: always raised */
    [DNP_FAM_APPDOMAINS] = COR_PRF_MONITOR_APPDOMAIN_LOADS,
    [DNP_FAM_ASSEMBLIES] = COR_PRF_MONITOR_ASSEMBLY_LOADS,
    [DNP_FAM_MODULES] = COR_PRF_MONITOR_MODULE_LOADS,
    [DNP_FAM_CLASSES] = COR_PRF_MONITOR_CLASS_LOADS,
    [DNP_FAM_FUNCTIONS] = COR_PRF_MONITOR_FUNCTION_UNLOADS,
    [DNP_FAM_JIT] = COR_PRF_MONITOR_JIT_COMPILATION,
    [DNP_FAM_CACHE] = COR_PRF_MONITOR_CACHE_SEARCHES,
    [DNP_FAM_THREADS] = COR_PRF_MONITOR_THREADS,
    [DNP_FAM_REMOTING] = COR_PRF_MONITOR_REMOTING, /* .NET Framework only */
    [DNP_FAM_TRANSITIONS] = COR_PRF_MONITOR_CODE_TRANSITIONS,
    [DNP_FAM_SUSPENDS] = COR_PRF_MONITOR_SUSPENDS,
    [DNP_FAM_GC] = COR_PRF_MONITOR_GC,
    [DNP_FAM_ALLOC] = COR_PRF_MONITOR_OBJECT_ALLOCATED | COR_PRF_ENABLE_OBJECT_ALLOCATED,
    [DNP_FAM_EXCEPTIONS] = COR_PRF_MONITOR_EXCEPTIONS | COR_PRF_MONITOR_CLR_EXCEPTIONS,
    [DNP_FAM_CCW] = COR_PRF_MONITOR_CCW,
    [DNP_FAM_CALLS] = 0, /* the enter/leave hooks: dnprof run --calls */
};

/* "all" is every family a mask bit turns on; calls come with --calls. */
#define ALL_FAMILIES (((1u << DNP_FAM_COUNT) - 1) & ~FAM(REMOTING) & ~FAM(CALLS))
/* The default is what a person can read without changing what they look at:
 * not one event per object (alloc), and not transitions, because monitoring
 * them makes the runtime refuse the ReadyToRun code of every method with a
 * P/Invoke: a hello world JITs 779 methods instead of 13 and starts 3x slower. */
#define DEFAULT_FAMILIES (ALL_FAMILIES & ~FAM(ALLOC) & ~FAM(TRANSITIONS))

static const char remoting_refused[] =
    "remoting does not exist in .NET (Core) runtimes; it was a .NET Framework feature";

uint32_t dnp_families_mask(uint32_t families) {
    uint32_t mask = 0;
    for (int f = 0; f < DNP_FAM_COUNT; f++)
        if (families & (1u << f))
            mask |= family_mask[f];
    return mask;
}

/* A family is covered when the mask has any of its bits; runtime always is. */
uint32_t dnp_families_from_mask(uint32_t mask) {
    uint32_t families = FAM(RUNTIME);
    for (int f = 0; f < DNP_FAM_COUNT; f++)
        if (mask & family_mask[f])
            families |= 1u << f;
    return families;
}

char *dnp_families_format(uint32_t families, char *buf, size_t buflen) {
    if (!buf || !buflen)
        return buf;
    size_t len = 0;
    buf[0] = 0;
    for (int f = 0; f < DNP_FAM_COUNT; f++) {
        if (!(families & (1u << f)))
            continue;
        int n = snprintf(buf + len, buflen - len, "%s%s", len ? "," : "", dnp_family_words[f]);
        if (n < 0 || (size_t)n >= buflen - len) {
            buf[len] = 0; /* no half words */
            break;
        }
        len += (size_t)n;
    }
    if (len == 0 && !families)
        snprintf(buf, buflen, "none");
    return buf;
}

static int word_is(const char *word, size_t len, const char *name) {
    return strlen(name) == len && strncasecmp(word, name, len) == 0;
}

int dnp_family_lookup(const char *word, size_t len) {
    if (!word)
        return -1;
    for (int f = 0; f < DNP_FAM_COUNT; f++)
        if (word_is(word, len, dnp_family_words[f]))
            return f;
    return -1;
}

static void valid_words(char *buf, size_t buflen) {
    size_t len = (size_t)snprintf(buf, buflen, "all, default");
    for (int f = 0; f < DNP_FAM_COUNT && len < buflen; f++)
        if (f != DNP_FAM_REMOTING)
            len += (size_t)snprintf(buf + len, buflen - len, ", %s", dnp_family_words[f]);
}

static void set_err(char *err, size_t errlen, const char *what, const char *word, size_t len) {
    if (!err || !errlen)
        return;
    char valid[256];
    valid_words(valid, sizeof valid);
    int shown = len > 64 ? 64 : (int)len;
    snprintf(err, errlen, "%s '%.*s%s'; valid: %s, or a hex mask such as 0x1A7FFFF", what, shown, word,
             len > 64 ? "..." : "", valid);
}

static int parse_hex(const char *s, size_t len, uint32_t *out) {
    if (len < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || len - 2 > 8)
        return -1;
    uint32_t v = 0;
    for (size_t i = 2; i < len; i++) {
        int c = (unsigned char)s[i];
        if (!isxdigit(c))
            return -1;
        v = v << 4 | (uint32_t)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
    }
    *out = v;
    return 0;
}

/* A hex mask is taken as it is. */
static int events_from_mask(const char *s, size_t tlen, dnp_event_config *out, char *err, size_t errlen) {
    uint32_t mask;
    if (parse_hex(s, tlen, &mask) < 0) {
        if (err && errlen) {
            int shown = tlen > 64 ? 64 : (int)tlen;
            snprintf(err, errlen, "bad event mask '%.*s': a hex mask is 0x and 1 to 8 hex digits, such as 0x1A7FFFF",
                     shown, s);
        }
        return -1;
    }
    out->mask = mask;
    out->families = dnp_families_from_mask(mask);
    out->mask_high = 0;
    out->named = 0;
    out->from_mask = 1;
    return 0;
}

int dnp_events_parse(const char *text, dnp_event_config *out, char *err, size_t errlen) {
    if (!text)
        text = DNP_EVENTS_DEFAULT;
    const char *s = text;
    while (isspace((unsigned char)*s))
        s++;
    size_t tlen = strlen(s);
    while (tlen && isspace((unsigned char)s[tlen - 1]))
        tlen--;
    if (tlen == 0) {
        s = DNP_EVENTS_DEFAULT;
        tlen = strlen(s);
    }

    if (tlen > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return events_from_mask(s, tlen, out, err, errlen);

    uint32_t families = 0, named = 0;
    int first = 1;
    for (const char *p = s, *end = s + tlen; p <= end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *we = comma ? comma : end;
        const char *w = p;
        while (w < we && isspace((unsigned char)*w))
            w++;
        while (we > w && isspace((unsigned char)we[-1]))
            we--;
        p = (comma ? comma : end) + 1;
        size_t len = (size_t)(we - w);
        if (len == 0)
            continue; /* "a,,b" and a trailing comma */

        int remove = 0;
        if (*w == '-') {
            remove = 1;
            w++;
            len--;
            while (len && isspace((unsigned char)*w)) {
                w++;
                len--;
            }
            if (first)
                families = DEFAULT_FAMILIES; /* "-gc" alone: the default without gc */
        }
        first = 0;

        uint32_t set;
        if (word_is(w, len, "all")) {
            set = ALL_FAMILIES;
        } else if (word_is(w, len, "default")) {
            set = DEFAULT_FAMILIES;
        } else {
            int f = dnp_family_lookup(w, len);
            if (f == DNP_FAM_REMOTING) {
                if (err && errlen)
                    snprintf(err, errlen, "%s", remoting_refused);
                return -1;
            }
            if (f < 0 && len > 1 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
                if (err && errlen)
                    snprintf(err, errlen, "a hex mask such as '%.*s' must be the whole setting, not part of a list",
                             len > 64 ? 64 : (int)len, w);
                return -1;
            }
            if (f < 0) {
                set_err(err, errlen, "unknown event family", w, len);
                return -1;
            }
            set = 1u << f;
            if (!remove)
                named |= set;
        }
        if (remove)
            families &= ~set;
        else
            families |= set;
    }

    families |= FAM(RUNTIME); /* Initialize and Shutdown cost nothing and frame the trace */
    out->families = families;
    out->mask = dnp_families_mask(families);
    out->mask_high = 0;
    out->named = named & families;
    out->from_mask = 0;
    return 0;
}

void dnp_events_after_attach(const dnp_event_config *cfg, dnp_attach_events *out) {
    memset(out, 0, sizeof *out);
    out->mask = cfg->mask & COR_PRF_ALLOWABLE_AFTER_ATTACH;
    out->dropped = cfg->mask & ~(uint32_t)COR_PRF_ALLOWABLE_AFTER_ATTACH;
    out->mask_high = cfg->mask_high & COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH;
    out->dropped_high = cfg->mask_high & ~(uint32_t)COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH;
    for (int f = 0; f < DNP_FAM_COUNT; f++) {
        uint32_t m = family_mask[f];
        if (!(cfg->families & (1u << f)) || !(m & out->dropped))
            continue;
        if (m & COR_PRF_ALLOWABLE_AFTER_ATTACH)
            out->part |= 1u << f;
        else
            out->whole |= 1u << f;
    }
}

static const struct {
    const char *name;
    uint32_t bit;
    int high;
} prf_flags[] = {
#define DNP_PRF_FLAG(name, bit, word, after_attach) {"COR_PRF_" #name, bit##u, DNP_PRF_WORD_##word(0, 1)},
#include "prof_flags.def"
#undef DNP_PRF_FLAG
};

char *dnp_prf_flags_format(uint32_t mask, int high, char *buf, size_t buflen) {
    if (!buf || !buflen)
        return buf;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof prf_flags / sizeof prf_flags[0]; i++) {
        if (prf_flags[i].high != !!high || !(mask & prf_flags[i].bit))
            continue;
        int n = snprintf(buf + len, buflen - len, "%s%s", len ? ", " : "", prf_flags[i].name);
        if (n < 0 || (size_t)n >= buflen - len) {
            buf[len] = 0;
            break;
        }
        len += (size_t)n;
    }
    return buf;
}
