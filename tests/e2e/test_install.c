/* test_install.c: an installed dnprof works on its own: `cmake --install` to a
 * prefix outside the source and build trees, the prefix moved elsewhere, then
 * the installed dnprof runs the sample and prints its trace with the source and
 * build trees hidden (a mount namespace lays an empty tmpfs over them when the
 * kernel lets an unprivileged user make one; else they are only unused). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

/* 1 when path is dir or inside it. */
static int inside(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Copies every file of the built sample into dir (sh: cp). */
static int copy_sample(e2e_run *r, const char *dll, const char *dir) {
    char from[PATH_MAX];
    snprintf(from, sizeof from, "%s", dll);
    char *slash = strrchr(from, '/');
    if (slash == NULL)
        return -1;
    strcpy(slash, "/.");
    char *const argv[] = {"cp", "-R", from, (char *)dir, NULL};
    if (e2e_exec(r, argv, NULL) != 0 || r->status != 0)
        return -1;
    return 0;
}

TEST(e2e_installed_runs_alone) {
    e2e_run r;
    ASSERT_EQ(e2e_setup(&r, "e2e_installed_runs_alone"), 0);
    const char *cmake = e2e_env("DNPROF_CMAKE"), *build = e2e_env("DNPROF_BUILD_DIR");
    const char *source = e2e_env("DNPROF_SOURCE_DIR"), *dll = e2e_env("DNPROF_SAMPLE_HELLO");
    ASSERT(cmake);
    ASSERT(build);
    ASSERT(source);
    ASSERT(dll);

    /* A directory outside both trees. */
    const char *tmpdir = getenv("TMPDIR");
    char top[PATH_MAX];
    snprintf(top, sizeof top, "%s/dnprof-install-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    ASSERT_NE(mkdtemp(top), NULL);
    if (inside(top, build) || inside(top, source))
        snprintf(top, sizeof top, "/tmp"), fprintf(stderr, "e2e: TMPDIR is inside the trees\n");
    ASSERT(!inside(top, build));
    ASSERT(!inside(top, source));

    char stage[PATH_MAX + 16], prefix[PATH_MAX + 16], app[PATH_MAX + 16];
    snprintf(stage, sizeof stage, "%s/stage", top);
    snprintf(prefix, sizeof prefix, "%s/moved", top);
    snprintf(app, sizeof app, "%s/app", top);

    char *const install[] = {(char *)cmake, "--install", (char *)build, "--prefix", stage, NULL};
    ASSERT_EQ(e2e_exec(&r, install, NULL), 0);
    ASSERT_STATUS(&r, 0);
    ASSERT_EQ(rename(stage, prefix), 0); /* the installed tree moves as a whole */
    ASSERT_EQ(mkdir(app, 0755), 0);
    ASSERT_EQ(copy_sample(&r, dll, app), 0);

    /* In app, with nothing pointing back at the trees: run, print, env. */
    const char *script =
        "hide=no\n"
        "if unshare --user --map-root-user --mount true 2>/dev/null; then hide=yes; fi\n"
        "run() {\n"
        "  if [ $hide = yes ]; then\n"
        "    unshare --user --map-root-user --mount sh -c '\n"
        "      for d in \"$1\" \"$2\"; do [ -d \"$d\" ] && mount -t tmpfs none \"$d\"; done\n"
        "      [ -z \"$(ls -A \"$2\")\" ] || { echo \"$2 is not hidden\" >&2; exit 99; }\n"
        "      shift 2; exec \"$@\"' sh \"$BUILD\" \"$SOURCE\" \"$@\"\n"
        "  else \"$@\"; fi\n"
        "}\n"
        "echo \"hidden: $hide\" >&2\n"
        "run \"$PREFIX/bin/dnprof\" run --quiet -o \"$APP/app.trace\" -- \"$DOTNET\" \"$APP/hello.dll\" >\"$APP/run.out\" || exit 10\n"
        "run \"$PREFIX/bin/dnprof\" print \"$APP/app.trace\" >\"$APP/print.out\" || exit 11\n"
        "run \"$PREFIX/bin/dnprof\" env >\"$APP/env.out\" || exit 12\n"
        /* the container's entry point (docs/containers.md, from inside): the
         * agent loaded by dnprof env into a program no dnprof process runs */
        "run sh -c 'eval \"$(\"$1\"/bin/dnprof env -o \"$2\"/env-%p.trace)\" && exec \"$3\" \"$2\"/hello.dll' sh "
        "\"$PREFIX\" \"$APP\" \"$DOTNET\" >\"$APP/envrun.out\" || exit 13\n";
    char e_build[PATH_MAX + 16], e_source[PATH_MAX + 16], e_prefix[PATH_MAX + 32], e_app[PATH_MAX + 32],
        e_dotnet[PATH_MAX + 16];
    snprintf(e_build, sizeof e_build, "BUILD=%s", build);
    snprintf(e_source, sizeof e_source, "SOURCE=%s", source);
    snprintf(e_prefix, sizeof e_prefix, "PREFIX=%s", prefix);
    snprintf(e_app, sizeof e_app, "APP=%s", app);
    snprintf(e_dotnet, sizeof e_dotnet, "DOTNET=%s", e2e_dotnet());
    const char *env[] = {e_build, e_source, e_prefix, e_app, e_dotnet, "DNPROF_AGENT", "DNPROF_BIN",
                         "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH", NULL};
    char *const sh[] = {"sh", "-c", (char *)script, NULL};
    pid_t pid = e2e_spawn(sh, env, app, r.out, NULL, r.err);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(e2e_wait(pid, E2E_TIMEOUT_MS, &r.status), 0);
    e2e_show_file("the script's stderr", r.err);
    ASSERT_STATUS(&r, 0);

    /* The program ran under the installed agent and its trace holds it. */
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/run.out", app);
    char *out = e2e_read_file(path, NULL);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, "hello, dnprof\n");
    free(out);
    snprintf(path, sizeof path, "%s/app.trace", app);
    dnp_trace *t = e2e_load(path);
    ASSERT_NE(t, NULL);
    snprintf(path, sizeof path, "%s/hello.dll", app);
    ASSERT_GE(e2e_expect(t, DNP_EV_ModuleLoadFinished, path, "hello"), 0);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Program+Greeter", "Hello"), 0);
    dnp_trace_free(t);

    snprintf(path, sizeof path, "%s/print.out", app);
    out = e2e_read_file(path, NULL);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, "] Initialize ");
    ASSERT_CONTAINS(out, "ClassLoadFinished Hello.Program+Greeter");
    free(out);

    /* The agent it loads is the installed one, found beside it. */
    snprintf(path, sizeof path, "%s/env.out", app);
    out = e2e_read_file(path, NULL);
    ASSERT_NE(out, NULL);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "CORECLR_PROFILER_PATH='%s/lib/dnprof/libdnprof.so'", prefix);
    ASSERT_CONTAINS(out, want);
    free(out);

    /* The program started after `eval "$(dnprof env)"` wrote its own trace. */
    snprintf(path, sizeof path, "%s/envrun.out", app);
    out = e2e_read_file(path, NULL);
    ASSERT_NE(out, NULL);
    ASSERT_CONTAINS(out, "hello, dnprof\n");
    free(out);
    DIR *d = opendir(app);
    ASSERT_NE(d, NULL);
    char trace[PATH_MAX + 300] = "";
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (!strncmp(de->d_name, "env-", 4) && strstr(de->d_name, ".trace"))
            snprintf(trace, sizeof trace, "%s/%s", app, de->d_name);
    closedir(d);
    ASSERT(trace[0]);
    t = e2e_load(trace);
    ASSERT_NE(t, NULL);
    ASSERT_GE(e2e_expect(t, DNP_EV_ClassLoadFinished, "Hello.Program+Greeter", "Hello"), 0);
    dnp_trace_free(t);

    char *const rm[] = {"rm", "-rf", top, NULL};
    ASSERT_EQ(e2e_exec(&r, rm, NULL), 0);
    return 0;
}
