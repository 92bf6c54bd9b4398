/* test_settings.c: the table of DNPROF_ variables (settings.def): its one
 * parser, its one message shape, and docs/settings.md, which shows every row
 * as the table has it. */
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "test.h"

TEST(settings_parse_values) {
    unsigned v;
    ASSERT_EQ(dnp_setting_parse(DNP_SET_FLUSH_MS, "20", &v), 0);
    ASSERT_EQ(v, 20);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_FLUSH_MS, NULL, &v), 0);
    ASSERT_EQ(v, 50);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_FLUSH_MS, "60000", &v), -1);
    ASSERT_EQ(v, 50);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_FLUSH_MS, "20ms", &v), -1);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_FLUSH_MS, "-5", &v), -1);
    /* One bound of the sampling rate, for the front end and the agent. */
    ASSERT_EQ(dnp_setting_parse(DNP_SET_SAMPLE_RATE, "10000", &v), 0);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_SAMPLE_RATE, "10001", &v), -1);
    ASSERT_EQ(v, 100);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_SAMPLE, "wall", &v), 0);
    ASSERT_EQ(v, 2);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_SAMPLE, "walls", &v), -1);
    ASSERT_EQ(v, 1); /* cpu, as before the table */
    ASSERT_EQ(dnp_setting_parse(DNP_SET_CALLS, "counts", &v), 0);
    ASSERT_EQ(v, 4);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_CALLS, "bogus", &v), -1);
    ASSERT_EQ(v, DNP_CALLS_SAMPLED); /* "1", as before the table */
    ASSERT_EQ(dnp_setting_parse(DNP_SET_CALLS, "timed", &v), 0);
    ASSERT_EQ(v, DNP_CALLS_TIMED);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_ALLOC, "1", &v), 0);
    ASSERT_EQ(v, 1);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_ALLOC, "", &v), 0);
    ASSERT_EQ(v, 0);
    ASSERT_EQ(dnp_setting_parse(DNP_SET_ALLOC, "yes", &v), -1);
    ASSERT_EQ(v, 0);
    char w[16];
    ASSERT_STREQ(dnp_setting_word(DNP_SET_SAMPLE, 3, w, sizeof w), "suspend");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_SAMPLE, 9, w, sizeof w), "");
    return 0;
}

TEST(settings_bad_value_message) {
    char msg[512];
    dnp_setting_bad_text(DNP_SET_FLUSH_MS, "abc", msg, sizeof msg);
    ASSERT_STREQ(msg, "DNPROF_FLUSH_MS='abc' is not a period from 1 to 59999 ms; using 50 ms");
    dnp_setting_bad_text(DNP_SET_CALLS, "bogus", msg, sizeof msg);
    ASSERT_STREQ(msg, "DNPROF_CALLS='bogus' is not a calls mode (0, timed, args, timeline, counts, 1); using 1");
    return 0;
}

TEST(settings_find) {
    ASSERT_EQ(dnp_setting_find("DNPROF_SAMPLE=cpu", 13), DNP_SET_SAMPLE);
    ASSERT_EQ(dnp_setting_find("DNPROF_SAMPEL", 13), -1);
    for (int i = 0; i < DNP_SET_COUNT; i++) {
        ASSERT_EQ(strncmp(dnp_settings[i].name, "DNPROF_", 7), 0);
        ASSERT_EQ(dnp_setting_find(dnp_settings[i].name, strlen(dnp_settings[i].name)), i);
        unsigned v;
        /* every default and every on_bad is a value of its own setting */
        ASSERT_EQ(dnp_setting_parse(i, dnp_settings[i].def, &v), 0);
        ASSERT_EQ(dnp_setting_parse(i, dnp_settings[i].on_bad, &v), 0);
    }
    return 0;
}

#ifdef DNPROF_SOURCE_DIR
TEST(settings_docs_table) {
    char *doc = test_read_file(DNPROF_SOURCE_DIR "/docs/settings.md", NULL);
    ASSERT_NE(doc, NULL);
    int missing = 0, rows = 0;
    for (int i = 0; i < DNP_SET_COUNT; i++) {
        char row[1024];
        dnp_setting_doc_row(i, row, sizeof row);
        if (!strstr(doc, row)) {
            fprintf(stderr, "docs/settings.md lacks the row:\n%s", row);
            missing++;
        }
    }
    /* and no row the table does not have */
    for (const char *p = doc; (p = strstr(p, "\n| `DNPROF_")) != NULL; p++)
        rows++;
    free(doc);
    ASSERT_EQ(missing, 0);
    ASSERT_EQ(rows, DNP_SET_COUNT);
    return 0;
}
#endif

/* The mode values both halves act on are the words' indices in the table. */
TEST(settings_mode_values_are_the_words) {
    char w[32];
    ASSERT_STREQ(dnp_setting_word(DNP_SET_SAMPLE, DNP_SAMPLE_CPU, w, sizeof w), "cpu");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_SAMPLE, DNP_SAMPLE_WALL, w, sizeof w), "wall");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_SAMPLE, DNP_SAMPLE_SUSPEND, w, sizeof w), "suspend");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_CALLS, DNP_CALLS_TIMED, w, sizeof w), "timed");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_CALLS, DNP_CALLS_SAMPLED, w, sizeof w), "1");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_CALLS, DNP_CALLS_ARGS, w, sizeof w), "args");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_CALLS, DNP_CALLS_TIMELINE, w, sizeof w), "timeline");
    ASSERT_STREQ(dnp_setting_word(DNP_SET_CALLS, DNP_CALLS_COUNTS, w, sizeof w), "counts");
    unsigned v;
    ASSERT_EQ(dnp_setting_parse(DNP_SET_SAMPLE, "wall", &v), 0);
    ASSERT_EQ(v, DNP_SAMPLE_WALL);
    return 0;
}
