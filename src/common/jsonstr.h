/* jsonstr.h: strings from a trace, which may hold any bytes, written as JSON:
 * the one UTF-8 check and the one JSON string writer of the front end and the
 * exporters (the agent does not link them). */
#ifndef DNP_JSONSTR_H
#define DNP_JSONSTR_H

#include <stdio.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one
 * (overlong forms, surrogates and code points above U+10FFFF are not). s is
 * NUL-terminated, so a sequence cut short stops at the NUL. */
int dnp_utf8_len(const unsigned char *s);

/* The two-character escape of c, as JSON and C write it (\" \\ \n \r \t):
 * 1 after writing it, or 0 (nothing written) when c has none. Shared with
 * the front end's text writer (cli_put_text). */
static inline int dnp_put_short_escape(FILE *out, unsigned c) {
    static const char from[] = "\"\\\n\r\t", to[] = "\"\\nrt";
    for (int i = 0; from[i]; i++)
        if (c == (unsigned char)from[i]) {
            fputc('\\', out);
            fputc(to[i], out);
            return 1;
        }
    return 0;
}

/* '<', '>' and '&' escaped too, for JSON inside an HTML <script>. */
#define DNP_JSON_HTML_SAFE 1u

/* s as a JSON string in double quotes, or null for NULL. Invalid UTF-8 becomes
 * \ufffd, control characters \n \r \t or \u00XX; everything else is copied. */
void dnp_json_str(FILE *out, const char *s, unsigned flags);

#endif
