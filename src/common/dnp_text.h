/* dnp_text.h: two small text helpers every parser here needs: an error
 * message into a caller's buffer, and a hex digit's value. */
#ifndef DNP_TEXT_H
#define DNP_TEXT_H

#include <stddef.h>

/* Formats the message into err (errlen bytes; nothing when err is NULL or
 * errlen 0). Returns -1, for `return dnp_fail(...)`. */
int dnp_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The value of a hex digit (either case), or -1. */
int dnp_hex_digit(char c);

#endif
