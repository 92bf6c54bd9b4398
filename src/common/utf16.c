/* utf16.c: UTF-16 <-> UTF-8 (utf16.h). */
#include "utf16.h"

#include <string.h>

#define REPLACEMENT 0xFFFDu

static int is_high(uint32_t c) {
    return c >= 0xD800 && c <= 0xDBFF;
}

static int is_low(uint32_t c) {
    return c >= 0xDC00 && c <= 0xDFFF;
}

/* c as UTF-8 into enc; its length. */
static size_t utf8_encode(uint32_t c, uint8_t enc[4]) {
    if (c < 0x80) {
        enc[0] = (uint8_t)c;
        return 1;
    }
    if (c < 0x800) {
        enc[0] = (uint8_t)(0xC0 | (c >> 6));
        enc[1] = (uint8_t)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        enc[0] = (uint8_t)(0xE0 | (c >> 12));
        enc[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        enc[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    enc[0] = (uint8_t)(0xF0 | (c >> 18));
    enc[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    enc[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    enc[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

size_t dnp_utf16_to_utf8(const char16_t *s, size_t n, char *out, size_t cap) {
    size_t o = 0;
    if (cap == 0)
        return 0;
    int to_nul = n == DNP_UTF16_NUL;
    for (size_t i = 0; to_nul ? s[i] != 0 : i < n; i++) {
        uint32_t c = s[i];
        if (is_high(c) && (to_nul || i + 1 < n) && is_low(s[i + 1])) {
            c = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00u);
            i++;
        } else if (is_high(c) || is_low(c)) {
            c = REPLACEMENT;
        }
        uint8_t enc[4];
        size_t k = utf8_encode(c, enc);
        if (k > cap - 1 - o)
            break;
        memcpy(out + o, enc, k);
        o += k;
    }
    out[o] = 0;
    return o;
}

size_t dnp_utf16_len(const char16_t *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n])
        n++;
    return n;
}

size_t dnp_utf16_name(const char16_t *w, size_t wcap, size_t len, char *out, size_t cap) {
    size_t n = len && len <= wcap ? len - 1 : dnp_utf16_len(w, wcap);
    return dnp_utf16_to_utf8(w, n, out, cap);
}

/* The code point at s[*i] (n bytes in all), *i moved past it; U+FFFD for a
 * byte that starts no valid sequence (overlong, a surrogate, past U+10FFFF,
 * cut short), which then takes that byte only. */
static uint32_t utf8_next(const uint8_t *s, size_t n, size_t *i) {
    uint32_t c = s[*i];
    size_t extra = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
    if (c < 0x80 || extra == 0 || extra >= n - *i) {
        (*i)++;
        return c < 0x80 ? c : REPLACEMENT;
    }
    uint32_t v = c & (0x3Fu >> extra);
    for (size_t k = 1; k <= extra; k++) {
        uint8_t b = s[*i + k];
        if ((b & 0xC0) != 0x80) {
            (*i)++;
            return REPLACEMENT;
        }
        v = v << 6 | (b & 0x3F);
    }
    static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
    if (v < least[extra] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        (*i)++;
        return REPLACEMENT;
    }
    *i += extra + 1;
    return v;
}

size_t dnp_utf8_to_utf16(const char *s, size_t n, char16_t *out, size_t cap) {
    size_t o = 0;
    if (cap == 0)
        return 0;
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        uint32_t c = utf8_next(p, n, &i);
        size_t k = c >= 0x10000 ? 2 : 1;
        if (k > cap - 1 - o)
            break;
        if (k == 2) {
            c -= 0x10000;
            out[o++] = (char16_t)(0xD800 + (c >> 10));
            out[o++] = (char16_t)(0xDC00 + (c & 0x3FF));
        } else {
            out[o++] = (char16_t)c;
        }
    }
    out[o] = 0;
    return o;
}
