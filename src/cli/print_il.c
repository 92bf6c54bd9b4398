/* print_il.c: an ILBody event's body for dnprof print (docs/il.md): its
 * header, clauses and disassembly as text lines under the event, or as the
 * "il" object of its JSON. The bytes and the tokens' names come from the
 * trace; the parsing and the opcodes from the trace layer (il_body.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "il_body.h"
#include "print_il.h"

typedef struct il_view {
    uint8_t *bytes;
    long n;              /* bytes recorded; -1: the blob is not hex */
    uint64_t reported;   /* GetILFunctionBody's size */
    uint32_t hr;
    const char *tokens;
    dnp_il_header h;
    dnp_il_clause *clauses;
    int parsed;          /* dnp_il_parse's result */
    char err[256];
} il_view;

static void view_open(il_view *v, const dnp_trace *t, const dnp_trace_event *e) {
    memset(v, 0, sizeof *v);
    const char *hex = dnp_trace_string(t, e->v[DNP_V(ILBody, body)]);
    v->reported = e->v[DNP_V(ILBody, reportedSize)];
    v->hr = (uint32_t)e->v[DNP_V(ILBody, hrStatus)];
    v->tokens = dnp_trace_string(t, e->v[DNP_V(ILBody, tokens)]);
    size_t len = hex ? strlen(hex) / 2 : 0;
    v->bytes = malloc(len ? len : 1);
    v->n = v->bytes ? dnp_hex_decode(hex ? hex : "", v->bytes, len) : -1;
    v->parsed = -1;
    if (v->n < 0) {
        snprintf(v->err, sizeof v->err, "%s", v->bytes ? "the body's bytes are not hex" : "out of memory");
        return;
    }
    if (v->n == 0) {
        snprintf(v->err, sizeof v->err, "no body recorded");
        return;
    }
    dnp_il_parse(v->bytes, (size_t)v->n, &v->h, NULL, 0, NULL, 0);
    v->clauses = calloc(v->h.nclauses ? v->h.nclauses : 1, sizeof *v->clauses);
    if (v->clauses)
        v->parsed = dnp_il_parse(v->bytes, (size_t)v->n, &v->h, v->clauses, v->h.nclauses, v->err, sizeof v->err);
}

static void view_close(il_view *v) {
    free(v->bytes);
    free(v->clauses);
}

static const char *namer(void *ctx, uint32_t token, char *buf, size_t cap) {
    return dnp_il_token_name(ctx, token, buf, cap);
}

/* What differs between the sizes: the header's, the runtime's, the trace's. */
static void size_note(const il_view *v, char *out, size_t cap) {
    out[0] = 0;
    if (v->n >= 0 && (uint64_t)v->n < v->reported)
        snprintf(out, cap, "only %ld of the runtime's %llu bytes recorded", v->n, (unsigned long long)v->reported);
    else if (v->parsed == 0 && v->h.body_size != v->reported)
        snprintf(out, cap, "the header gives %u bytes, the runtime %llu", v->h.body_size,
                 (unsigned long long)v->reported);
}

/* ---- text ---- */

static void clause_text(FILE *out, const il_view *v, const dnp_il_clause *c) {
    const char *w = dnp_il_clause_word(c->kind);
    char name[512];
    fprintf(out, "try IL_%04x..IL_%04x ", c->try_offset, c->try_offset + c->try_length);
    if (w)
        fputs(w, out);
    else
        fprintf(out, "flags=0x%x", c->kind);
    if (c->kind == DNP_IL_CATCH) {
        const char *s = dnp_il_token_name(v->tokens, c->extra, name, sizeof name);
        fputc(' ', out);
        if (s)
            cli_put_text(out, s, 0);
        else
            fprintf(out, "0x%08x", c->extra);
    } else if (c->kind == DNP_IL_FILTER) {
        fprintf(out, " IL_%04x", c->extra);
    }
    fprintf(out, " handler IL_%04x..IL_%04x%s\n", c->handler_offset, c->handler_offset + c->handler_length,
            c->fat ? "" : " (small)");
}

char *il_listing_text(const dnp_trace *t, const dnp_trace_event *e) {
    char *buf = NULL, note[160], line[4096];
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return NULL;
    il_view v;
    view_open(&v, t, e);
    if (v.hr >> 31) {
        const char *hr = dnp_hresult_name(v.hr);
        fprintf(out, "IL: GetILFunctionBody failed: %s 0x%08x\n", hr ? hr : "error", v.hr);
    } else if (v.h.header_size) {
        fprintf(out, "IL %s maxstack=%u codesize=%u locals=", v.h.fat ? "fat" : "tiny", v.h.max_stack,
                v.h.code_size);
        fprintf(out, v.h.local_sig ? "0x%08x" : "none", v.h.local_sig);
        fprintf(out, " initlocals=%s clauses=%zu bodysize=%u", v.h.init_locals ? "yes" : "no", v.h.nclauses,
                v.h.body_size);
        size_note(&v, note, sizeof note);
        fprintf(out, note[0] ? " (%s)\n" : "\n", note);
    }
    for (size_t i = 0; v.clauses && i < v.h.nclauses && v.parsed == 0; i++)
        clause_text(out, &v, &v.clauses[i]);
    if (v.h.header_size && (uint64_t)v.h.header_size + v.h.code_size <= (uint64_t)v.n) {
        dnp_il_insn in;
        char derr[256];
        int rc;
        const uint8_t *code = v.bytes + v.h.header_size;
        for (uint32_t off = 0; (rc = dnp_il_decode(code, v.h.code_size, off, &in, derr, sizeof derr)) > 0;
             off += in.size) {
            dnp_il_insn_text(&in, namer, (void *)v.tokens, line, sizeof line);
            cli_put_text(out, line, 0);
            fputc('\n', out);
        }
        if (rc < 0)
            fprintf(out, "IL error: %s\n", derr);
    }
    if (v.err[0] && !(v.hr >> 31))
        fprintf(out, "IL error: %s\n", v.err);
    view_close(&v);
    fclose(out);
    return buf;
}

/* ---- JSON ---- */

static void json_token(FILE *out, const il_view *v, const char *key, uint32_t token) {
    char name[1024];
    fprintf(out, ",\"%s\":\"0x%08x\",\"%sName\":", key, token, key);
    cli_put_json(out, dnp_il_token_name(v->tokens, token, name, sizeof name));
}

static void json_clauses(FILE *out, const il_view *v) {
    fputs(",\"clauses\":[", out);
    for (size_t i = 0; v->clauses && v->parsed == 0 && i < v->h.nclauses; i++) {
        const dnp_il_clause *c = &v->clauses[i];
        const char *w = dnp_il_clause_word(c->kind);
        fprintf(out, "%s{\"kind\":", i ? "," : "");
        cli_put_json(out, w ? w : "unknown");
        fprintf(out, ",\"flags\":%u,\"tryOffset\":%u,\"tryLength\":%u,\"handlerOffset\":%u,\"handlerLength\":%u,"
                     "\"format\":\"%s\"",
                c->kind, c->try_offset, c->try_length, c->handler_offset, c->handler_length,
                c->fat ? "fat" : "small");
        if (c->kind == DNP_IL_CATCH)
            json_token(out, v, "classToken", c->extra);
        else if (c->kind == DNP_IL_FILTER)
            fprintf(out, ",\"filterOffset\":%u", c->extra);
        fputc('}', out);
    }
    fputc(']', out);
}

/* A number JSON can hold exactly, else a string. */
static void json_int(FILE *out, int64_t i) {
    if (i > -(1ll << 53) && i < (1ll << 53))
        fprintf(out, "%lld", (long long)i);
    else
        fprintf(out, "\"%lld\"", (long long)i);
}

static void json_operand(FILE *out, const il_view *v, const dnp_il_insn *in) {
    dnp_il_operand k = (dnp_il_operand)in->op->operand;
    fprintf(out, ",\"operandKind\":\"%s\",\"operand\":", dnp_il_operand_words[k]);
    switch (k) {
    case DNP_ILO_R4:
    case DNP_ILO_R8:
        fprintf(out, isfinite(in->r) ? "%.17g" : "\"%g\"", in->r);
        break;
    case DNP_ILO_SWITCH:
        fputc('[', out);
        for (uint32_t i = 0; i < (uint64_t)in->i; i++) {
            fputs(i ? "," : "", out);
            json_int(out, dnp_il_switch_target(in, i));
        }
        fputc(']', out);
        break;
    case DNP_ILO_METHOD:
    case DNP_ILO_FIELD:
    case DNP_ILO_TYPE:
    case DNP_ILO_STRING:
    case DNP_ILO_SIG:
    case DNP_ILO_TOK: {
        char name[1024];
        fprintf(out, "\"0x%08x\",\"name\":", in->token);
        cli_put_json(out, dnp_il_token_name(v->tokens, in->token, name, sizeof name));
        break;
    }
    default: json_int(out, in->i); break; /* numbers, locals, arguments, branch targets */
    }
}

static void json_code(FILE *out, const il_view *v, char *err, size_t errlen) {
    fputs(",\"instructions\":[", out);
    if (v->h.header_size && (uint64_t)v->h.header_size + v->h.code_size <= (uint64_t)v->n) {
        dnp_il_insn in;
        const uint8_t *code = v->bytes + v->h.header_size;
        for (uint32_t off = 0; dnp_il_decode(code, v->h.code_size, off, &in, err, errlen) > 0; off += in.size) {
            fprintf(out, "%s{\"offset\":%u,\"size\":%u,\"opcode\":\"%s\"", off ? "," : "", in.offset, in.size,
                    in.op->name);
            if (in.op->operand != DNP_ILO_NONE)
                json_operand(out, v, &in);
            fputc('}', out);
        }
    }
    fputc(']', out);
}

void il_put_json(FILE *out, const dnp_trace *t, const dnp_trace_event *e) {
    il_view v;
    char note[160], derr[256] = "";
    view_open(&v, t, e);
    fputs(",\"il\":{", out);
    if (v.h.header_size) {
        fprintf(out, "\"format\":\"%s\",\"headerSize\":%u,\"flags\":\"0x%03x\",\"maxStack\":%u,\"codeSize\":%u,"
                     "\"localVarSigTok\":\"0x%08x\",\"initLocals\":%s,\"moreSects\":%s,\"bodySize\":%u,",
                v.h.fat ? "fat" : "tiny", v.h.header_size, v.h.flags, v.h.max_stack, v.h.code_size, v.h.local_sig,
                v.h.init_locals ? "true" : "false", v.h.more_sects ? "true" : "false", v.h.body_size);
    }
    size_note(&v, note, sizeof note);
    fprintf(out, "\"recordedSize\":%ld,\"reportedSize\":%llu,\"sizeNote\":", v.n < 0 ? 0 : v.n,
            (unsigned long long)v.reported);
    cli_put_json(out, note[0] ? note : NULL);
    json_clauses(out, &v);
    json_code(out, &v, derr, sizeof derr);
    fputs(",\"error\":", out);
    cli_put_json(out, v.err[0] && !(v.hr >> 31) ? v.err : derr[0] ? derr : NULL);
    fputc('}', out);
    view_close(&v);
}
