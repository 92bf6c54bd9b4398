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

int dnp_has_prefix(const char *s, size_t n, const char *const *prefixes, size_t count) {
    for (size_t i = 0; i < count; i++) {
        size_t k = strlen(prefixes[i]);
        if (n >= k && !strncmp(s, prefixes[i], k))
            return 1;
    }
    return 0;
}

int dnp_is_framework_name(const char *name) {
    static const char *const prefixes[] = {"System.", "Microsoft.", "Internal.", "Interop"};
    return name && dnp_has_prefix(name, strlen(name), prefixes, sizeof prefixes / sizeof prefixes[0]);
}
