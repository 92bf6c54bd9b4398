/* export_common.c: what the exporters and the report share: names and thread
 * labels (export.h); JSON strings are src/common/jsonstr.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "prettyname.h"

const char *dnp_export_name(const dnp_calltree *ct, uint64_t func, uint64_t name, char *buf, size_t len) {
    const char *raw = name >= DNP_CT_OWN_NAMES && name - DNP_CT_OWN_NAMES < ct->nown_names
                          ? ct->own_names[name - DNP_CT_OWN_NAMES]
                          : dnp_trace_string(ct->t, name);
    if (!raw || !*raw) {
        snprintf(buf, len, "<function 0x%llx>", (unsigned long long)func);
        return buf;
    }
    dnp_pretty_name(raw, buf, len);
    return buf;
}

void dnp_export_thread_label(const dnp_ct_tree *tr, char *buf, size_t len) {
    if (!tr->os_tid && !tr->thread)
        snprintf(buf, len, "all threads");
    else if (tr->thread && tr->name)
        snprintf(buf, len, "thread %u (%s)", tr->thread, tr->name);
    else if (tr->thread)
        snprintf(buf, len, "thread %u (tid %llu)", tr->thread, (unsigned long long)tr->os_tid);
    else if (tr->name) /* a native thread, by its OS tid and name */
        snprintf(buf, len, "thread %llu (%s)", (unsigned long long)tr->os_tid, tr->name);
    else
        snprintf(buf, len, "thread tid %llu", (unsigned long long)tr->os_tid);
}

void dnp_export_thread_object(FILE *out, int comma, const char *head, const dnp_ct_tree *tr, int html_safe) {
    char label[512];
    dnp_export_thread_label(tr, label, sizeof label);
    fputs(comma ? ",\n" : "\n", out);
    fputs(head, out);
    dnp_export_json_str(out, label, html_safe);
}

int dnp_export_end(FILE *out, int rc) {
    if (fflush(out) != 0 || ferror(out))
        rc = -1;
    if (rc != 0 && !errno)
        errno = EIO;
    return rc ? -1 : 0;
}

const char *dnp_program_file(const char *cmdline, char *out, size_t cap) {
    char first[512] = "", second[512] = "";
    if (sscanf(cmdline ? cmdline : "", "%511s %511s", first, second) < 1)
        first[0] = 0;
    const char *exe = strrchr(first, '/') ? strrchr(first, '/') + 1 : first;
    const char *dll = strrchr(second, '/') ? strrchr(second, '/') + 1 : second;
    size_t n = strlen(dll);
    snprintf(out, cap, "%s", !strcmp(exe, "dotnet") && n > 4 && !strcmp(dll + n - 4, ".dll") ? dll : exe);
    return out;
}
