/* namebuf.c: namebuf.h. */
#include "namebuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf16.h"

void nb_add(dnp_namebuf *b, const char *s, size_t n) {
    if (n > sizeof b->s - 1 - b->len)
        n = sizeof b->s - 1 - b->len;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void nb_puts(dnp_namebuf *b, const char *s) {
    nb_add(b, s, strlen(s));
}

void nb_printf(dnp_namebuf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        nb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void nb_wide(dnp_namebuf *b, const WCHAR *w, size_t wcap, ULONG len) {
    char tmp[DNP_NAMEBUF_MAX];
    nb_add(b, tmp, dnp_utf16_name(w, wcap, len, tmp, sizeof tmp));
}
