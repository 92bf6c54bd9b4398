/* test_docs.c: docs/trace-format.md lists every event as events.def defines it,
 * so a reader written from the document reads what the agent writes. */
#include <stdlib.h>

#include "test.h"
#include "trace_format.h"

TEST(trace_docs_event_table) {
    static const char *nest[] = {"", "start", "finish", "transition"};
    char *doc = test_read_file(DNPROF_SOURCE_DIR "/docs/trace-format.md", NULL);
    ASSERT_NE(doc, NULL);
    for (int k = 0; k < DNP_EV_COUNT; k++) {
        const dnp_event_info *e = &dnp_events[k];
        char row[1024];
        int n = snprintf(row, sizeof row, "| %d | %s | %s | %s | ", k, e->name,
                         dnp_family_words[e->family], nest[e->nest]);
        for (int f = 0; f < e->nfields; f++) {
            int t = e->field_types[f];
            n += snprintf(row + n, sizeof row - (size_t)n, "%s%s %s%s", f ? ", " : "",
                          dnp_field_type_names[t], e->field_names[f],
                          dnp_field_nvalues[t] == 2 ? " (2)" : "");
        }
        snprintf(row + n, sizeof row - (size_t)n, " | %d |\n", e->nvalues);
        if (!strstr(doc, row)) {
            fprintf(stderr, "docs/trace-format.md lacks the row:\n%s", row);
            free(doc);
            return 1;
        }
    }
    free(doc);
    return 0;
}
