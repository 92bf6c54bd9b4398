/* dnp_text.h: small text helpers: an error message into a caller's buffer, a
 * hex digit's value, whether a text starts with one of some prefixes, and
 * whether a name is the framework's. */
#ifndef DNP_TEXT_H
#define DNP_TEXT_H

#include <stddef.h>

/* Formats the message into err (errlen bytes; nothing when err is NULL or
 * errlen 0). Returns -1, for `return dnp_fail(...)`. */
int dnp_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The value of a hex digit (either case), or -1. */
int dnp_hex_digit(char c);

/* Whether s[0..n) starts with one of the count prefixes. */
int dnp_has_prefix(const char *s, size_t n, const char *const *prefixes, size_t count);

/* Whether a method or class name (namespace first) is the framework's:
 * System.*, Microsoft.*, Internal.*, Interop*. The one test every part uses:
 * --calls' default filter, the exception stories, the reports. */
int dnp_is_framework_name(const char *name);

#endif
