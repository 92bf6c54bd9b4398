/* dnp_text.c: dnp_text.h. */
#include "dnp_text.h"

#include <string.h>

#include <stdarg.h>
#include <stdio.h>

int dnp_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int dnp_hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int dnp_is_framework_name(const char *name) {
    static const char *const prefixes[] = {"System.", "Microsoft.", "Internal.", "Interop"};
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}
