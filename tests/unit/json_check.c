/* json_check.c: a strict JSON parser for the tests (json_check.h). */
#include "json_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jp {
    const char *s, *end;
    const char *start;
    char *err;
    size_t errlen;
    int depth;
} jp;

static jv *fail(jp *p, const char *what) {
    if (p->err && !p->err[0])
        snprintf(p->err, p->errlen, "%s at byte %zu", what, (size_t)(p->s - p->start));
    return NULL;
}

static void ws(jp *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static jv *jv_new(jv_type t) {
    jv *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

static int add(jv *v, jv *item, char *key) {
    jv **items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items)
        return -1;
    v->items = items;
    if (v->type == JV_OBJ) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys)
            return -1;
        v->keys = keys;
        keys[v->n] = key;
    }
    items[v->n++] = item;
    return 0;
}

static int hex4(jp *p, unsigned *out) {
    if (p->end - p->s < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    p->s += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned c) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | c >> 6);
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12);
        o[1] = (char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18);
    o[1] = (char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (char)(0x80 | (c >> 6 & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Length of a valid UTF-8 sequence at s, 0 if invalid. */
static int utf8_ok(const unsigned char *s, const unsigned char *end) {
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (n == 0 || end - s < n)
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)))
        return 0;
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)))
        return 0;
    return n;
}

static char *string(jp *p) {
    p->s++; /* the quote */
    size_t cap = 64, n = 0;
    char *o = malloc(cap);
    while (o) {
        if (p->s >= p->end) {
            fail(p, "string not closed");
            break;
        }
        if (n + 8 > cap) {
            char *g = realloc(o, cap *= 2);
            if (!g)
                break;
            o = g;
        }
        unsigned char c = (unsigned char)*p->s;
        if (c == '"') {
            p->s++;
            o[n] = 0;
            return o;
        }
        if (c < 0x20) {
            fail(p, "control character in a string");
            break;
        }
        if (c == '\\') {
            p->s++;
            if (p->s >= p->end) {
                fail(p, "escape cut short");
                break;
            }
            char e = *p->s++;
            const char *map = e ? strchr("\"\"\\\\//b\bf\fn\nr\rt\t", e) : NULL;
            if (e == 'u') {
                unsigned u;
                if (hex4(p, &u) != 0) {
                    fail(p, "bad \\u escape");
                    break;
                }
                if (u >= 0xD800 && u < 0xDC00) {
                    unsigned lo;
                    if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' || (p->s += 2, hex4(p, &lo)) != 0 ||
                        lo < 0xDC00 || lo > 0xDFFF) {
                        fail(p, "lone surrogate");
                        break;
                    }
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                } else if (u >= 0xDC00 && u < 0xE000) {
                    fail(p, "lone surrogate");
                    break;
                }
                n += put_utf8(o + n, u);
            } else if (map && ((map - "\"\"\\\\//b\bf\fn\nr\rt\t") % 2) == 0) {
                o[n++] = map[1];
            } else {
                fail(p, "bad escape");
                break;
            }
            continue;
        }
        int k = utf8_ok((const unsigned char *)p->s, (const unsigned char *)p->end);
        if (!k) {
            fail(p, "invalid UTF-8");
            break;
        }
        memcpy(o + n, p->s, (size_t)k);
        n += (size_t)k;
        p->s += k;
    }
    free(o);
    return NULL;
}

static jv *value(jp *p);

static jv *number(jp *p) {
    const char *q = p->s;
    if (q < p->end && *q == '-')
        q++;
    if (q >= p->end)
        return fail(p, "bad number");
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        while (q < p->end && *q >= '0' && *q <= '9')
            q++;
    } else {
        return fail(p, "bad number");
    }
    if (q < p->end && *q == '.') {
        q++;
        if (q >= p->end || *q < '0' || *q > '9')
            return fail(p, "bad fraction");
        while (q < p->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < p->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < p->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= p->end || *q < '0' || *q > '9')
            return fail(p, "bad exponent");
        while (q < p->end && *q >= '0' && *q <= '9')
            q++;
    }
    char buf[64];
    size_t len = (size_t)(q - p->s);
    if (len >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, p->s, len);
    buf[len] = 0;
    jv *v = jv_new(JV_NUM);
    if (v)
        v->num = strtod(buf, NULL);
    p->s = q;
    return v;
}

static jv *container(jp *p, int obj) {
    jv *v = jv_new(obj ? JV_OBJ : JV_ARR);
    if (!v)
        return NULL;
    if (++p->depth > 100000) {
        json_free(v);
        return fail(p, "nested too deep");
    }
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
        p->s++;
        p->depth--;
        return v;
    }
    for (;;) {
        char *key = NULL;
        ws(p);
        if (obj) {
            if (p->s >= p->end || *p->s != '"') {
                json_free(v);
                return fail(p, "object key expected");
            }
            if (!(key = string(p))) {
                json_free(v);
                return NULL;
            }
            ws(p);
            if (p->s >= p->end || *p->s != ':') {
                free(key);
                json_free(v);
                return fail(p, "':' expected");
            }
            p->s++;
        }
        jv *item = value(p);
        if (!item || add(v, item, key) != 0) {
            free(key);
            json_free(item);
            json_free(v);
            return NULL;
        }
        ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
            p->s++;
            p->depth--;
            return v;
        }
        json_free(v);
        return fail(p, obj ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static jv *value(jp *p) {
    ws(p);
    if (p->s >= p->end)
        return fail(p, "value expected");
    char c = *p->s;
    if (c == '{' || c == '[')
        return container(p, c == '{');
    if (c == '"') {
        char *s = string(p);
        if (!s)
            return NULL;
        jv *v = jv_new(JV_STR);
        if (!v) {
            free(s);
            return NULL;
        }
        v->str = s;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return number(p);
    static const struct { const char *word; jv_type t; int b; } words[] = {
        {"true", JV_BOOL, 1}, {"false", JV_BOOL, 0}, {"null", JV_NULL, 0}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(p->end - p->s) >= n && !memcmp(p->s, words[i].word, n)) {
            p->s += n;
            jv *v = jv_new(words[i].t);
            if (v)
                v->b = words[i].b;
            return v;
        }
    }
    return fail(p, "unexpected character");
}

jv *json_parse(const char *text, size_t len, char *err, size_t errlen) {
    jp p = {text, text + len, text, err, errlen, 0};
    if (err && errlen)
        err[0] = 0;
    jv *v = value(&p);
    if (!v)
        return NULL;
    ws(&p);
    if (p.s != p.end) {
        json_free(v);
        return fail(&p, "text after the value");
    }
    return v;
}

void json_free(jv *v) {
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        json_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const jv *json_get(const jv *obj, const char *key) {
    if (!obj || obj->type != JV_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return obj->items[i];
    return NULL;
}

const jv *json_at(const jv *arr, size_t i) {
    return arr && (arr->type == JV_ARR || arr->type == JV_OBJ) && i < arr->n ? arr->items[i] : NULL;
}

double json_num(const jv *obj, const char *key) {
    const jv *v = json_get(obj, key);
    return v && v->type == JV_NUM ? v->num : -1;
}

const char *json_str(const jv *obj, const char *key) {
    const jv *v = json_get(obj, key);
    return v && v->type == JV_STR ? v->str : NULL;
}
