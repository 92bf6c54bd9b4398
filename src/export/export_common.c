/* export_common.c: what the exporters and the report share: names, JSON strings,
 * thread labels (export.h). */
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

int dnp_utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4 || (s[1] & 0xC0) != 0x80)
        return 0;
    if (c < 0xE0)
        return 2;
    if ((s[2] & 0xC0) != 0x80)
        return 0;
    if (c < 0xF0) {
        if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))
            return 0;
        return 3;
    }
    if ((s[3] & 0xC0) != 0x80 || (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
        return 0;
    return 4;
}

void dnp_export_json_str(FILE *out, const char *str, int html_safe) {
    if (!str) {
        fputs("null", out);
        return;
    }
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    while (*s) {
        int n = dnp_utf8_len(s);
        unsigned c = *s;
        if (n == 0) {
            fputs("\\ufffd", out);
            s++;
            continue;
        }
        if (n > 1) {
            fwrite(s, 1, (size_t)n, out);
        } else if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
        } else if (c == '\n') {
            fputs("\\n", out);
        } else if (c == '\t') {
            fputs("\\t", out);
        } else if (c < 0x20 || (html_safe && (c == '<' || c == '>' || c == '&'))) {
            fprintf(out, "\\u%04x", c);
        } else {
            fputc((int)c, out);
        }
        s += n;
    }
    fputc('"', out);
}

void dnp_export_thread_label(const dnp_ct_tree *tr, char *buf, size_t len) {
    if (!tr->os_tid && !tr->thread)
        snprintf(buf, len, "all threads");
    else if (tr->thread && tr->name)
        snprintf(buf, len, "thread %u (%s)", tr->thread, tr->name);
    else if (tr->thread)
        snprintf(buf, len, "thread %u (tid %llu)", tr->thread, (unsigned long long)tr->os_tid);
    else
        snprintf(buf, len, "thread tid %llu", (unsigned long long)tr->os_tid);
}
