/* utf16.h: UTF-16 <-> UTF-8, for the runtime's strings (WCHAR: metadata names,
 * string objects, EventPipe payloads) in the agent and the diagnostics IPC's
 * strings in the front end. Into a caller's buffer, no allocation, no locks:
 * the agent calls it from its callbacks. Surrogate pairs are joined; a lone
 * surrogate, or invalid UTF-8, becomes U+FFFD; truncation never splits a
 * character, and the output is always terminated when cap > 0. */
#ifndef DNP_UTF16_H
#define DNP_UTF16_H

#include <stddef.h>
#include <stdint.h>
#include <uchar.h>

/* n for a string that ends at its first NUL. */
#define DNP_UTF16_NUL ((size_t)-1)

/* n UTF-16 units of s (or up to its NUL: DNP_UTF16_NUL) as UTF-8 into out,
 * at most cap-1 bytes and a NUL. Returns the bytes written, without the NUL. */
size_t dnp_utf16_to_utf8(const char16_t *s, size_t n, char *out, size_t cap);

/* The units of s before its first NUL, at most max. */
size_t dnp_utf16_len(const char16_t *s, size_t max);

/* A string the runtime wrote into w[wcap], len its length with the NUL as the
 * runtime reports it (0 or more than wcap: not to be trusted, w is read up to
 * its NUL within wcap), as UTF-8 into out. Returns the bytes written. */
size_t dnp_utf16_name(const char16_t *w, size_t wcap, size_t len, char *out, size_t cap);

/* n bytes of UTF-8 s as UTF-16 into out, at most cap-1 units and a NUL.
 * Returns the units written, without the NUL. */
size_t dnp_utf8_to_utf16(const char *s, size_t n, char16_t *out, size_t cap);

#endif
