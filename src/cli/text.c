/* text.c: writing strings from a trace, which may hold any bytes, as valid
 * UTF-8 text for a terminal (one event stays one line) or for JSON (jsonstr.h). */
#include <stdio.h>

#include "cli.h"
#include "jsonstr.h"

static void put(FILE *out, const char *str, int quoted) {
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        int n = dnp_utf8_len(s);
        if (n == 0) {
            fputs("\xEF\xBF\xBD", out); /* U+FFFD */
            s++;
            continue;
        }
        unsigned c = *s;
        if (n > 1 || (c >= 0x20 && c != 0x7f && !(quoted && (c == '"' || c == '\\')))) {
            fwrite(s, 1, (size_t)n, out);
        } else if (!dnp_put_short_escape(out, c)) {
            fprintf(out, "\\x%02x", c);
        }
        s += n;
    }
}

void cli_put_text(FILE *out, const char *s, int quoted) {
    put(out, s, quoted);
}

void cli_put_json(FILE *out, const char *s) {
    dnp_json_str(out, s, 0);
}
