/* test_house.c: issue 16's rules of the house, held by a test rather than by
 * a review: no source file of src/ over 900 lines and no function over 100
 * (split along the seams), no include that climbs out of its layer ("../":
 * targets get include directories instead), and every DNPROF_ name spelled in
 * one file, settings.def (elsewhere: its DNP_ENV_ macro). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"

#ifdef DNPROF_SOURCE_DIR
#define MAX_FILE_LINES 900
#define MAX_FUNCTION_LINES 100

typedef struct house {
    int files, long_files, long_functions, climbing, spelled;
} house;

/* A function's body: from a line that opens a brace at depth 0 to the line
 * that closes it (the project's style: a function's opening brace ends the
 * line of its signature, its closing brace starts a line). Comments and
 * strings may hold braces: they are skipped. */
static void check_c(const char *path, const char *rel, house *h) {
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    h->files++;
    char line[4096];
    int depth = 0, in_comment = 0, start = 0, n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        if (strncmp(line, "#include \"../", 13) == 0) {
            fprintf(stderr, "%s:%d includes across layers: %s", rel, n, line);
            h->climbing++;
        }
        const char *name = strstr(line, "\"DNPROF_");
        if (name && ((name[8] >= 'A' && name[8] <= 'Z') || (name[8] >= '0' && name[8] <= '9')) &&
            strcmp(rel + strlen(rel) - 12, "settings.def") != 0 && strncmp(name, "\"DNPROF_VERSION", 15) != 0) {
            fprintf(stderr, "%s:%d spells a DNPROF_ name: use its DNP_ENV_ macro (settings.def)\n%s", rel, n, line);
            h->spelled++;
        }
        for (const char *c = line; *c; c++) {
            if (in_comment) {
                if (c[0] == '*' && c[1] == '/')
                    in_comment = 0, c++;
                continue;
            }
            if (c[0] == '/' && c[1] == '*') {
                in_comment = 1, c++;
            } else if (c[0] == '/' && c[1] == '/') {
                break;
            } else if (*c == '"' || *c == '\'') {
                char q = *c;
                for (c++; *c && *c != q; c++)
                    if (*c == '\\' && c[1])
                        c++;
                if (!*c)
                    break;
            } else if (*c == '{') {
                if (depth++ == 0)
                    start = n;
            } else if (*c == '}' && depth > 0 && --depth == 0 && n - start > MAX_FUNCTION_LINES &&
                       line[0] == '}') {
                fprintf(stderr, "%s:%d-%d: a function of %d lines (at most %d)\n", rel, start, n, n - start,
                        MAX_FUNCTION_LINES);
                h->long_functions++;
            }
        }
    }
    fclose(f);
    if (n > MAX_FILE_LINES) {
        fprintf(stderr, "%s: %d lines (at most %d): split it along its seams\n", rel, n, MAX_FILE_LINES);
        h->long_files++;
    }
}

static void walk(const char *dir, const char *rel, house *h) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096], sub[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        snprintf(sub, sizeof sub, "%s/%s", rel, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        size_t len = strlen(de->d_name);
        if (S_ISDIR(st.st_mode))
            walk(path, sub, h);
        else if (len > 2 && (!strcmp(de->d_name + len - 2, ".c") || !strcmp(de->d_name + len - 2, ".h") ||
                             (len > 4 && !strcmp(de->d_name + len - 4, ".def"))))
            check_c(path, sub, h);
    }
    closedir(d);
}

TEST(house_rules) {
    char src[2048];
    snprintf(src, sizeof src, "%s/src", DNPROF_SOURCE_DIR);
    house h = {0};
    walk(src, "src", &h);
    ASSERT_GT(h.files, 100);
    ASSERT_EQ(h.long_files, 0);
    ASSERT_EQ(h.long_functions, 0);
    ASSERT_EQ(h.climbing, 0);
    ASSERT_EQ(h.spelled, 0);
    return 0;
}
#endif
