/* namebuf.h: a bounded buffer that names are built in (names.c, il.c):
 * appends that truncate rather than overflow, always NUL-terminated. */
#ifndef DNP_NAMEBUF_H
#define DNP_NAMEBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "com.h"

#define DNP_NAMEBUF_MAX 2048

typedef struct dnp_namebuf {
    char s[DNP_NAMEBUF_MAX];
    size_t len; /* s[len] is the NUL; start with {0} or {"", 0} */
} dnp_namebuf;

/* Appends src[n] to s[len], cut to what s[cap] holds (s stays
 * NUL-terminated); the new length. */
size_t dnp_append(char *s, size_t len, size_t cap, const char *src, size_t n);
/* Appends fmt's text to s[len], cut to what s[cap] holds (s stays
 * NUL-terminated); the new length. */
size_t dnp_vappend(char *s, size_t len, size_t cap, const char *fmt, va_list ap);

void nb_add(dnp_namebuf *b, const char *s, size_t n);
void nb_puts(dnp_namebuf *b, const char *s);
void nb_printf(dnp_namebuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A name the runtime wrote into w[wcap], len units with its NUL (dnp_utf16_name). */
void nb_wide(dnp_namebuf *b, const WCHAR *w, size_t wcap, ULONG len);

#endif
