/* test_config_seal.c: issue 10 item 2. Everything the agent obeys comes from
 * agent_config, filled from the environment at start-up (config.c) or from the
 * attach blob (attach.c): no other file of the agent reads the environment,
 * which after an attach is the target's, not what dnprof attach asked for
 * (the settings table's readers, dnp_setting_getenv and dnp_setting_env_value,
 * included). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#ifdef DNPROF_SOURCE_DIR
TEST(agent_config_sealed) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/src/agent", DNPROF_SOURCE_DIR);
    DIR *d = opendir(dir);
    ASSERT_NE(d, NULL);
    int files = 0, bad = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t n = strlen(de->d_name);
        if (n < 3 || strcmp(de->d_name + n - 2, ".c") != 0 || strcmp(de->d_name, "config.c") == 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        ASSERT_NE(f, NULL);
        files++;
        char line[4096];
        for (int ln = 1; fgets(line, sizeof line, f); ln++)
            if (strstr(line, "getenv(") || strstr(line, "**environ") || strstr(line, "dnp_setting_env_value(")) {
                fprintf(stderr, "%s:%d reads the environment: take it from agent_config (config.c)\n%s", path,
                        ln, line);
                bad++;
            }
        fclose(f);
    }
    closedir(d);
    ASSERT_GT(files, 10);
    ASSERT_EQ(bad, 0);
    return 0;
}
#endif

/* issue 16 item 2: the front end reads an event's values by name
 * (e->v[DNP_V(Event, field)]), never by position, so that a field moved in
 * events.def moves every reader with it and one removed breaks the build. */
#ifdef DNPROF_SOURCE_DIR
static int positional_reads(const char *sub, int *files) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", DNPROF_SOURCE_DIR, sub);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int bad = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t n = strlen(de->d_name);
        if (n < 3 || strcmp(de->d_name + n - 2, ".c") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        (*files)++;
        char line[4096];
        for (int ln = 1; fgets(line, sizeof line, f); ln++)
            for (const char *p = line; (p = strstr(p, "v[")) != NULL; p += 2)
                if (p >= line + 2 && (p[-1] == '.' || (p[-1] == '>' && p[-2] == '-')) && p[2] >= '0' &&
                    p[2] <= '9') {
                    fprintf(stderr, "%s:%d reads an event's value by position: use DNP_V(Event, field)\n%s",
                            path, ln, line);
                    bad++;
                    break;
                }
        fclose(f);
    }
    closedir(d);
    return bad;
}

TEST(event_fields_by_name) {
    int files = 0;
    ASSERT_EQ(positional_reads("src/cli", &files), 0);
    ASSERT_EQ(positional_reads("src/export", &files), 0);
    ASSERT_GT(files, 30);
    return 0;
}
#endif
