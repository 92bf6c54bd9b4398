/* jsonstr.c: UTF-8 validation and JSON strings (jsonstr.h). */
#include "jsonstr.h"

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

void dnp_json_str(FILE *out, const char *str, unsigned flags) {
    if (!str) {
        fputs("null", out);
        return;
    }
    int html_safe = (flags & DNP_JSON_HTML_SAFE) != 0;
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
        } else if (!dnp_put_short_escape(out, c)) {
            if (c < 0x20 || (html_safe && (c == '<' || c == '>' || c == '&')))
                fprintf(out, "\\u%04x", c);
            else
                fputc((int)c, out);
        }
        s += n;
    }
    fputc('"', out);
}
