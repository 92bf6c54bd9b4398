/* attach_blob.c: the attach request's client data (attach_blob.h). */
#include "attach_blob.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dnp_text.h"
#include "settings.h"
#include "trace_format.h"

static void put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static uint16_t get_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}

typedef struct blob_out {
    uint8_t *buf;
    size_t cap, len;
    int failed;
} blob_out;

static void put_field(blob_out *o, uint16_t tag, const void *data, size_t n) {
    if (o->failed || n > 0xffff || o->len + 4 + n > o->cap) {
        o->failed = 1;
        return;
    }
    put_u16(o->buf + o->len, tag);
    put_u16(o->buf + o->len + 2, (uint16_t)n);
    if (n)
        memcpy(o->buf + o->len + 4, data, n);
    o->len += 4 + n;
}

static void put_text(blob_out *o, uint16_t tag, const char *s, size_t max) {
    size_t n = strnlen(s, max);
    if (n >= max) {
        o->failed = 1;
        return;
    }
    if (n)
        put_field(o, tag, s, n);
}

static void put_number(blob_out *o, uint16_t tag, uint32_t v) {
    uint8_t b[4];
    dnp_put_u32le(b, v);
    if (v)
        put_field(o, tag, b, 4);
}

/* Every field of the blob, once: its tag, the setting it carries (its row of
 * settings.def, which gives its type and bounds) or -1 for the blob's own,
 * whether it is text or a u32, where it lives in dnp_attach_blob, and its name
 * in messages. */
typedef struct blob_field {
    uint16_t tag;
    int setting;
    uint8_t text;  /* 1: text, its buffer of size bytes; 0: u32 */
    size_t offset, size;
    const char *name;
} blob_field;

#define SIZE_OF(member) sizeof(((dnp_attach_blob *)0)->member)
/* The blob's own fields: text, or a u32 (the array of size -1 stops the build
 * if member is not 4 bytes). */
#define TEXT_FIELD(tag, member, name) {tag, -1, 1, offsetof(dnp_attach_blob, member), SIZE_OF(member), name}
#define U32_FIELD(tag, member, name)                                                                       \
    {tag, -1, 0, offsetof(dnp_attach_blob, member),                                                        \
     sizeof(uint32_t) + 0 * sizeof(char[SIZE_OF(member) == 4 ? 1 : -1]), name}
/* A setting's field: text for a string or a path, else a u32; settings_checked
 * holds the table to that. */
#define SETTING_FIELD(tag, sym, member, name)                                                              \
    {tag, DNP_SET_##sym, SIZE_OF(member) != 4, offsetof(dnp_attach_blob, member), SIZE_OF(member), name}

static const blob_field fields[] = {
    SETTING_FIELD(DNP_BLOB_EVENTS, EVENTS, events, "events"),
    SETTING_FIELD(DNP_BLOB_OUTPUT, OUTPUT, output, "output path"),
    SETTING_FIELD(DNP_BLOB_FLUSH_MS, FLUSH_MS, flush_ms, "flush period"),
    TEXT_FIELD(DNP_BLOB_CONTROL_DIR, control_dir, "control directory"),
    U32_FIELD(DNP_BLOB_TRIGGER_PID, trigger_pid, "trigger pid"),
    SETTING_FIELD(DNP_BLOB_ALLOC, ALLOC, alloc, "alloc setting"),
    SETTING_FIELD(DNP_BLOB_EXC_STACKS, EXC_STACKS, exc_stacks, "exception stacks flag"),
    SETTING_FIELD(DNP_BLOB_SAMPLE, SAMPLE, sample, "sampling mode"),
    SETTING_FIELD(DNP_BLOB_SAMPLE_RATE, SAMPLE_RATE, sample_rate, "sampling rate"),
    SETTING_FIELD(DNP_BLOB_LOCKS, LOCKS, locks, "locks mode"),
    SETTING_FIELD(DNP_BLOB_GC, GC, gc, "gc setting"),
    SETTING_FIELD(DNP_BLOB_THREADPOOL, THREADPOOL, threadpool, "threadpool setting"),
    SETTING_FIELD(DNP_BLOB_EVERY, EVERY, every_ms, "window period"),
    SETTING_FIELD(DNP_BLOB_WINDOW_DIR, WINDOW_DIR, window_dir, "window directory"),
    SETTING_FIELD(DNP_BLOB_WINDOW_KEEP, WINDOW_KEEP, window_keep, "windows kept"),
    SETTING_FIELD(DNP_BLOB_TRACE, TRACE, trace, "trace patterns"),
    U32_FIELD(DNP_BLOB_HOST_PID, host_pid, "host pid"),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static int settings_checked(char *err, size_t errlen);

static const blob_field *field_of(unsigned tag) {
    for (size_t i = 0; i < NFIELDS; i++)
        if (fields[i].tag == tag)
            return &fields[i];
    return NULL;
}

long dnp_attach_blob_encode(const dnp_attach_blob *b, uint8_t *buf, size_t cap) {
    blob_out o = {buf, cap < DNP_BLOB_MAX ? cap : DNP_BLOB_MAX, DNP_BLOB_HEADER_SIZE, 0};
    if (o.cap < DNP_BLOB_HEADER_SIZE || settings_checked(NULL, 0) < 0)
        return -1;
    for (size_t i = 0; i < NFIELDS; i++) {
        const char *at = (const char *)b + fields[i].offset;
        if (fields[i].text)
            put_text(&o, fields[i].tag, at, fields[i].size);
        else
            put_number(&o, fields[i].tag, *(const uint32_t *)(const void *)at);
    }
    if (o.failed)
        return -1;
    memcpy(buf, DNP_BLOB_MAGIC, 4);
    put_u16(buf + 4, DNP_BLOB_VERSION);
    put_u16(buf + 6, DNP_BLOB_HEADER_SIZE);
    dnp_put_u32le(buf + 8, (uint32_t)o.len);
    return (long)o.len;
}

static const char *tag_name(unsigned tag) {
    const blob_field *f = field_of(tag);
    return f ? f->name : "field";
}

/* Copies a text field: no NUL inside, shorter than its buffer. */
static int get_text(const uint8_t *p, size_t n, char *dst, size_t cap, unsigned tag, char *err,
                    size_t errlen) {
    if (n >= cap)
        return dnp_fail(err, errlen, "the %s is %zu bytes, more than %zu", tag_name(tag), n, cap - 1);
    if (memchr(p, 0, n))
        return dnp_fail(err, errlen, "the %s holds a NUL byte", tag_name(tag));
    memcpy(dst, p, n);
    dst[n] = 0;
    return 0;
}

/* A setting's u32 outside its row's values (0 is its default): 1 with err. */
static int out_of_bounds(const blob_field *f, const dnp_attach_blob *b, char *err, size_t errlen) {
    if (f->setting < 0 || f->text)
        return 0;
    const dnp_setting *s = &dnp_settings[f->setting];
    uint32_t v = *(const uint32_t *)(const void *)((const char *)b + f->offset);
    unsigned max = s->type == DNP_SETTING_BOOL ? 1 : s->max;
    if (v == 0 || (v >= s->min && v <= max))
        return 0;
    char values[128];
    dnp_setting_values(f->setting, values, sizeof values);
    dnp_fail(err, errlen, "the %s %u is out of range for %s (%s)", f->name, (unsigned)v, s->name, values);
    return 1;
}

/* The table's types are those of the blob's fields: text for a string or a
 * path, a u32 for the others (once, on the first parse or encode). */
static int settings_checked(char *err, size_t errlen) {
    for (size_t i = 0; i < NFIELDS; i++) {
        if (fields[i].setting < 0)
            continue;
        dnp_setting_type t = dnp_settings[fields[i].setting].type;
        if ((t == DNP_SETTING_STRING || t == DNP_SETTING_PATH) != fields[i].text)
            return dnp_fail(err, errlen, "the %s field is not of its setting's type", fields[i].name);
    }
    return 0;
}

int dnp_attach_blob_parse(const void *data, size_t len, dnp_attach_blob *out, char *err,
                          size_t errlen) {
    const uint8_t *p = data;
    memset(out, 0, sizeof *out);
    if (settings_checked(err, errlen) < 0)
        return -1;
    if (!p || len == 0)
        return dnp_fail(err, errlen, "no client data (the request did not come from dnprof attach)");
    if (len < DNP_BLOB_HEADER_SIZE || memcmp(p, DNP_BLOB_MAGIC, 4) != 0)
        return dnp_fail(err, errlen, "the client data is not dnprof's (%zu bytes, no DNPA header)", len);
    unsigned version = get_u16(p + 4), hsize = get_u16(p + 6);
    uint32_t total = dnp_get_u32le(p + 8);
    if (version != DNP_BLOB_VERSION)
        return dnp_fail(err, errlen,
                    "the client data is version %u, this agent reads version %u: use the dnprof "
                    "that came with this agent",
                    version, DNP_BLOB_VERSION);
    if (total != len)
        return dnp_fail(err, errlen, "the client data says it is %u bytes, %zu arrived", (unsigned)total,
                    len);
    if (hsize < DNP_BLOB_HEADER_SIZE || hsize > len || len > DNP_BLOB_MAX)
        return dnp_fail(err, errlen, "the client data has a bad header size %u (blob of %zu bytes)",
                    hsize, len);

    uint64_t seen = 0;
    _Static_assert(NFIELDS <= 64, "a bit for each field");
    size_t off = hsize;
    while (off < len) {
        if (len - off < 4)
            return dnp_fail(err, errlen, "a field header is cut short at byte %zu", off);
        unsigned tag = get_u16(p + off);
        size_t n = get_u16(p + off + 2);
        off += 4;
        if (n > len - off)
            return dnp_fail(err, errlen, "the %s (tag %u) says %zu bytes, only %zu are left",
                        tag_name(tag), tag, n, len - off);
        const uint8_t *v = p + off;
        off += n;
        const blob_field *f = field_of(tag);
        if (!f)
            continue; /* a newer front end's field */
        uint64_t bit = 1ull << (f - fields); /* every field once, whatever its tag */
        if (seen & bit)
            return dnp_fail(err, errlen, "the %s (tag %u) appears twice", tag_name(tag), tag);
        seen |= bit;
        char *at = (char *)out + f->offset;
        if (f->text) {
            if (get_text(v, n, at, f->size, tag, err, errlen) < 0)
                return -1;
        } else {
            if (n != 4)
                return dnp_fail(err, errlen, "the %s is %zu bytes, not 4", f->name, n);
            *(uint32_t *)(void *)at = dnp_get_u32le(v);
        }
    }
    if (out->output[0] != '/')
        return dnp_fail(err, errlen, "the output path is %s", out->output[0] ? "not absolute" : "missing");
    if (out->control_dir[0] != '/')
        return dnp_fail(err, errlen, "the control directory is %s",
                    out->control_dir[0] ? "not absolute" : "missing");
    for (size_t i = 0; i < NFIELDS; i++)
        if (out_of_bounds(&fields[i], out, err, errlen))
            return -1;
    return 0;
}
