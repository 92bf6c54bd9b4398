/* settings.c: the table of dnprof's environment variables (settings.def) and
 * its one parser. */
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const dnp_setting dnp_settings[DNP_SET_COUNT] = {
#define DNP_SETTING(sym, type, reader, def, on_bad, min, max, words, unit, what, help)                    \
    [DNP_SET_##sym] = {DNP_ENV_##sym, DNP_SETTING_##type, DNP_SETTING_##reader, def, on_bad, min, max,   \
                       words, unit, what, help},
#include "settings.def"
#undef DNP_SETTING
};

const char *const dnp_setting_type_words[] = {"bool", "enum", "unsigned", "string", "path"};
const char *const dnp_setting_reader_words[] = {"agent", "agent (set by dnprof run)", "dnprof"};

int dnp_setting_find(const char *name, size_t len) {
    for (int i = 0; i < DNP_SET_COUNT; i++)
        if (strlen(dnp_settings[i].name) == len && memcmp(dnp_settings[i].name, name, len) == 0)
            return i;
    return -1;
}

/* The index of word in "a|b|c", or -1. */
static int word_index(const char *words, const char *word) {
    size_t n = strlen(word);
    int i = 0;
    for (const char *p = words; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, word, n) == 0)
            return i;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

static int parse_value(const dnp_setting *s, const char *text, unsigned *value) {
    switch (s->type) {
    case DNP_SETTING_BOOL:
        if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0)
            return -1;
        *value = text[0] == '1';
        return 0;
    case DNP_SETTING_ENUM: {
        int i = word_index(s->words, text);
        if (i < 0)
            return -1;
        *value = (unsigned)i;
        return 0;
    }
    case DNP_SETTING_UINT: {
        char *end;
        errno = 0;
        if (text[0] < '0' || text[0] > '9')
            return -1;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || *end || v < s->min || v > s->max)
            return -1;
        *value = (unsigned)v;
        return 0;
    }
    case DNP_SETTING_STRING:
    case DNP_SETTING_PATH: *value = 0; return 0;
    }
    return -1;
}

int dnp_setting_parse(int id, const char *text, unsigned *value) {
    const dnp_setting *s = &dnp_settings[id];
    *value = 0;
    if (!text || !*text) {
        if (*s->def)
            parse_value(s, s->def, value);
        return 0;
    }
    if (parse_value(s, text, value) == 0)
        return 0;
    *value = 0;
    if (*s->on_bad)
        parse_value(s, s->on_bad, value);
    return -1;
}

void dnp_setting_values(int id, char *out, size_t cap) {
    const dnp_setting *s = &dnp_settings[id];
    switch (s->type) {
    case DNP_SETTING_BOOL: snprintf(out, cap, "0|1"); return;
    case DNP_SETTING_ENUM: snprintf(out, cap, "%s", s->words); return;
    case DNP_SETTING_UINT: snprintf(out, cap, "%u-%u%s%s", s->min, s->max, *s->unit ? " " : "", s->unit); return;
    case DNP_SETTING_STRING: snprintf(out, cap, "text"); return;
    case DNP_SETTING_PATH: snprintf(out, cap, "path"); return;
    }
    snprintf(out, cap, "?");
}

void dnp_setting_bad_text(int id, const char *text, char *out, size_t cap) {
    const dnp_setting *s = &dnp_settings[id];
    char what[256];
    if (s->type == DNP_SETTING_UINT)
        snprintf(what, sizeof what, "%s from %u to %u%s%s", s->what, s->min, s->max, *s->unit ? " " : "", s->unit);
    else if (s->type == DNP_SETTING_ENUM) {
        char words[200];
        size_t n = 0;
        for (const char *p = s->words; *p && n + 3 < sizeof words; p++) {
            if (*p == '|') {
                words[n++] = ',';
                words[n++] = ' ';
            } else {
                words[n++] = *p;
            }
        }
        words[n] = 0;
        snprintf(what, sizeof what, "%s (%s)", s->what, words);
    } else {
        snprintf(what, sizeof what, "%s", s->what);
    }
    snprintf(out, cap, "%s='%.40s' is not %s; using %s%s%s", s->name, text ? text : "", what,
             *s->on_bad ? s->on_bad : "none", *s->unit ? " " : "", s->unit);
}

const char *dnp_setting_word(int id, unsigned value, char *out, size_t cap) {
    const char *p = dnp_settings[id].words;
    out[0] = 0;
    for (unsigned i = 0; p && *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (i == value) {
            snprintf(out, cap, "%.*s", (int)len, p);
            break;
        }
        if (!bar)
            break;
        p = bar + 1;
    }
    return out;
}

unsigned dnp_setting_default(int id) {
    unsigned v;
    dnp_setting_parse(id, NULL, &v);
    return v;
}

const char *dnp_setting_getenv(int id) {
    return getenv(dnp_settings[id].name);
}

unsigned dnp_setting_env_value(int id) {
    unsigned v;
    dnp_setting_parse(id, dnp_setting_getenv(id), &v);
    return v;
}

/* s with each '|' escaped for a Markdown table cell. */
static const char *md_cell(const char *s, char *out, size_t cap) {
    size_t n = 0;
    for (; *s && n + 3 < cap; s++) {
        if (*s == '|')
            out[n++] = '\\';
        out[n++] = *s;
    }
    out[n] = 0;
    return out;
}

void dnp_setting_doc_row(int id, char *out, size_t cap) {
    const dnp_setting *s = &dnp_settings[id];
    char values[256], v[300], h[600];
    dnp_setting_values(id, values, sizeof values);
    snprintf(out, cap, "| `%s` | %s | %s | %s | %s | %s |\n", s->name, dnp_setting_type_words[s->type],
             md_cell(values, v, sizeof v), *s->def ? s->def : "none", dnp_setting_reader_words[s->reader],
             md_cell(s->help, h, sizeof h));
}
