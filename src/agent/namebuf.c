/* namebuf.c: namebuf.h. */
#include "namebuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf16.h"

size_t dnp_append(char *s, size_t len, size_t cap, const char *src, size_t n) {
    if (len >= cap)
        return len;
    if (n > cap - 1 - len)
        n = cap - 1 - len;
    memcpy(s + len, src, n);
    s[len + n] = 0;
    return len + n;
}

void nb_add(dnp_namebuf *b, const char *s, size_t n) {
    b->len = dnp_append(b->s, b->len, sizeof b->s, s, n);
}

void nb_puts(dnp_namebuf *b, const char *s) {
    nb_add(b, s, strlen(s));
}

size_t dnp_vappend(char *s, size_t len, size_t cap, const char *fmt, va_list ap) {
    if (len >= cap)
        return len;
    int n = vsnprintf(s + len, cap - len, fmt, ap);
    if (n < 0) {
        s[len] = 0;
        return len;
    }
    return (size_t)n < cap - len ? len + (size_t)n : cap - 1;
}

void nb_printf(dnp_namebuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    b->len = dnp_vappend(b->s, b->len, sizeof b->s, fmt, ap);
    va_end(ap);
}

void nb_wide(dnp_namebuf *b, const WCHAR *w, size_t wcap, ULONG len) {
    char tmp[DNP_NAMEBUF_MAX];
    nb_add(b, tmp, dnp_utf16_name(w, wcap, len, tmp, sizeof tmp));
}
