/* settings.h: dnprof's environment variables, from the one table of them
 * (settings.def): the agent reads them (src/agent/config.c), the front end
 * writes them (dnprof run, env) and lists them (dnprof env --list), and
 * docs/settings.md shows them (a unit test keeps it equal to the table). */
#ifndef DNP_SETTINGS_H
#define DNP_SETTINGS_H

#include <stddef.h>

typedef enum {
    DNP_SETTING_BOOL,   /* "0" or "" off, "1" on */
    DNP_SETTING_ENUM,   /* one of its words; the value is the word's index */
    DNP_SETTING_UINT,   /* a decimal number from min to max */
    DNP_SETTING_STRING,
    DNP_SETTING_PATH,
} dnp_setting_type;

typedef enum {
    DNP_SETTING_AGENT, /* read by the agent */
    DNP_SETTING_RUN,   /* read by the agent, set by dnprof run */
    DNP_SETTING_FRONT, /* read by dnprof itself */
} dnp_setting_reader;

typedef struct dnp_setting {
    const char *name; /* DNP_ENV_FLUSH_MS */
    dnp_setting_type type;
    dnp_setting_reader reader;
    const char *def, *on_bad; /* as text; "" for none */
    unsigned min, max;
    const char *words; /* ENUM: "a|b|c", by value */
    const char *unit, *what, *help;
} dnp_setting;

/* The values of the two ENUM rows that the agent and the readers of its traces
 * both act on (a trace's SampleConfig mode, CallsConfig mode): the index of
 * each word in settings.def's row ("0|cpu|wall|suspend",
 * "0|timed|args|timeline|counts|1"; tests/unit/test_settings.c holds them equal).
 * DNP_CALLS_TIMED is 1 because a trace from before the sampled times had
 * CallsConfig mode 1 for the calls it timed one by one. */
enum { DNP_SAMPLE_OFF, DNP_SAMPLE_CPU, DNP_SAMPLE_WALL, DNP_SAMPLE_SUSPEND };
enum { DNP_CALLS_OFF, DNP_CALLS_TIMED, DNP_CALLS_ARGS, DNP_CALLS_TIMELINE, DNP_CALLS_COUNTS, DNP_CALLS_SAMPLED };

/* DNP_SET_EVENTS, DNP_SET_OUTPUT, ...: the rows, in the table's order. */
enum {
#define DNP_SETTING(sym, ...) DNP_SET_##sym,
#include "settings.def"
#undef DNP_SETTING
    DNP_SET_COUNT
};

extern const dnp_setting dnp_settings[DNP_SET_COUNT];

/* The words of the table's types and readers ("bool", "agent", ...). */
extern const char *const dnp_setting_type_words[];
extern const char *const dnp_setting_reader_words[];

/* The row of the variable whose name is the first len bytes of name, or -1. */
int dnp_setting_find(const char *name, size_t len);

/* text as the value of setting id: BOOL 0 or 1, ENUM the word's index, UINT the
 * number; NULL or "" is the default (0 where there is none). STRING and PATH
 * have no value (0). Returns 0, or -1 when text is no valid value: *value is
 * then the table's on_bad. */
int dnp_setting_parse(int id, const char *text, unsigned *value);

/* The one line that says text is not a valid value of id, and what is used:
 * NAME='abc' is not a period from 1 to 59999 ms; using 50 ms (tests/unit/test_settings.c). */
void dnp_setting_bad_text(int id, const char *text, char *out, size_t cap);

/* What id takes, for lists and messages: "1-59999 ms", "0|cpu|wall|suspend",
 * "0|1", "path", "text". */
void dnp_setting_values(int id, char *out, size_t cap);

/* Setting id's row of the Markdown table in docs/settings.md ("| `NAME` |
 * type | values | default | read by | meaning |" and a newline), into out:
 * dnprof env --list --markdown prints the table, a unit test holds the docs
 * to it. */
void dnp_setting_doc_row(int id, char *out, size_t cap);

/* The word of an ENUM's value ("wall" for DNP_ENV_SAMPLE's 2), into out; "" when
 * the value has no word. */
const char *dnp_setting_word(int id, unsigned value, char *out, size_t cap);

/* The value of id's default (50 for DNP_ENV_FLUSH_MS): where a value of 0 means
 * "the default", this is the one place it comes from. */
unsigned dnp_setting_default(int id);

/* The variable's value in this process's environment, NULL when unset. The
 * agent reads the environment only in src/agent/config.c (test_config_seal.c). */
const char *dnp_setting_getenv(int id);

/* dnp_setting_parse of the environment's value; a bad value is the table's
 * on_bad, silently (for the front end's own settings). */
unsigned dnp_setting_env_value(int id);

#endif
