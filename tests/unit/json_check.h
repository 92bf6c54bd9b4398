/* json_check.h: a small strict JSON parser for the tests (RFC 8259: no trailing
 * commas, no leading zeros, escapes and UTF-8 checked), so that the exporters'
 * output is parsed back rather than trusted. */
#ifndef DNP_JSON_CHECK_H
#define DNP_JSON_CHECK_H

#include <stddef.h>

typedef enum jv_type { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_type;

typedef struct jv {
    jv_type type;
    int b;
    double num;
    char *str;          /* JV_STR, decoded, NUL-terminated */
    struct jv **items;  /* JV_ARR, JV_OBJ */
    char **keys;        /* JV_OBJ */
    size_t n;
} jv;

/* Parses the whole text (one value, whitespace around it). NULL with the
 * reason and byte offset in err when it is not valid JSON. */
jv *json_parse(const char *text, size_t len, char *err, size_t errlen);
void json_free(jv *v);

/* The member key of an object, or NULL. */
const jv *json_get(const jv *obj, const char *key);
/* Item i of an array, or NULL. */
const jv *json_at(const jv *arr, size_t i);
/* Convenience: a member's number (or -1), string (or NULL). */
double json_num(const jv *obj, const char *key);
const char *json_str(const jv *obj, const char *key);

#endif
