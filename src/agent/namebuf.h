/* namebuf.h: a bounded buffer that names and values are built in (names.c,
 * il.c, calls_args.c), over the caller's storage: appends that truncate
 * rather than overflow, always NUL-terminated. */
#ifndef DNP_NAMEBUF_H
#define DNP_NAMEBUF_H

#include <stddef.h>

#include "com.h"

#define DNP_NAMEBUF_MAX 2048

typedef struct dnp_namebuf {
    char *s;    /* the storage, cap bytes, s[len] the NUL */
    size_t len, cap;
} dnp_namebuf;

/* A buffer over the char array arr, which must hold a NUL at arr[0]. */
#define DNP_NAMEBUF_ON(arr) ((dnp_namebuf){(arr), 0, sizeof(arr)})

void nb_add(dnp_namebuf *b, const char *s, size_t n);
void nb_puts(dnp_namebuf *b, const char *s);
void nb_printf(dnp_namebuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A name the runtime wrote into w[wcap], len units with its NUL (dnp_utf16_name). */
void nb_wide(dnp_namebuf *b, const WCHAR *w, size_t wcap, ULONG len);

#endif
