/* prettyname.c: compiler-generated method names as what was written (prettyname.h). */
#include "prettyname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRETTY_MAX_DEPTH 8

typedef struct sbuf {
    char *p;
    size_t len, cap; /* cap counts the NUL */
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->cap == 0)
        return;
    size_t room = b->cap - 1 - b->len;
    if (n > room)
        n = room;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_puts(sbuf *b, const char *s) {
    sb_put(b, s, strlen(s));
}

/* The offset of the '>' that closes the '<' at s[0], or n. */
static size_t closing(const char *s, size_t n) {
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>' && --depth == 0)
            return i;
    }
    return n;
}

/* The offset of the last occurrence of sep (1 or 2 chars) outside <...>, or n. */
static size_t last_top(const char *s, size_t n, const char *sep) {
    size_t k = strlen(sep), at = n;
    int depth = 0;
    for (size_t i = 0; i + k <= n; i++) {
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>' && depth > 0)
            depth--;
        else if (depth == 0 && !memcmp(s + i, sep, k))
            at = i;
    }
    return at;
}

static int pretty(const char *s, size_t n, sbuf *out, int depth);

/* "cls::name" made pretty, or name alone when there is no class. */
static void qualified(const char *cls, size_t ncls, const char *name, size_t nname, sbuf *out, int depth) {
    char tmp[1024];
    if (ncls == 0) {
        pretty(name, nname, out, depth + 1);
        return;
    }
    if (ncls + 2 + nname >= sizeof tmp) {
        sb_put(out, cls, ncls);
        sb_puts(out, "::");
        sb_put(out, name, nname);
        return;
    }
    memcpy(tmp, cls, ncls);
    memcpy(tmp + ncls, "::", 2);
    memcpy(tmp + ncls + 2, name, nname);
    pretty(tmp, ncls + 2 + nname, out, depth + 1);
}

/* A lambda's number among its method's lambdas and local functions, as the
 * C# compiler numbers them (mostly, not always, in the source's order): the
 * last number of b__5_1 (a lambda cached in <>c: method 5, lambda 1) or of
 * b__1 (one in a closure's class); 0 when absent. */
static unsigned long lambda_ordinal(const char *rest, size_t n) {
    if (n < 4 || memcmp(rest, "b__", 3) != 0)
        return 0;
    unsigned long value = 0;
    int digits = 0;
    for (size_t i = 3; i < n; i++) {
        if (rest[i] >= '0' && rest[i] <= '9') {
            if (value < 100000000ul)
                value = value * 10 + (unsigned long)(rest[i] - '0');
            digits = 1;
        } else if (rest[i] == '_' && digits) {
            value = 0; /* the method's ordinal: the lambda's follows */
            digits = 0;
        } else {
            break;
        }
    }
    return digits ? value : 0;
}

/* Rewrites s[0..n) into out; returns 1 when it was compiler-generated. */
static int pretty(const char *s, size_t n, sbuf *out, int depth) {
    if (depth > PRETTY_MAX_DEPTH || !memchr(s, '<', n)) {
        sb_put(out, s, n);
        return 0;
    }
    size_t colon = last_top(s, n, "::");
    const char *cls = s, *meth = s;
    size_t ncls = 0, nmeth = n;
    if (colon < n) {
        ncls = colon;
        meth = s + colon + 2;
        nmeth = n - colon - 2;
    }

    /* The class: is its innermost nested class compiler-generated? */
    size_t plus = last_top(cls, ncls, "+");
    const char *seg = plus < ncls ? cls + plus + 1 : cls;
    size_t nseg = plus < ncls ? ncls - plus - 1 : ncls;
    size_t nouter = plus < ncls ? plus : 0;
    if (nseg > 2 && seg[0] == '<') {
        size_t close = closing(seg, nseg);
        if (close + 1 < nseg) {
            char kind = seg[close + 1];
            if (close == 1) { /* <>c, <>c__DisplayClass0_0: holds lambdas */
                ncls = nouter;
            } else if (kind == 'd') { /* <Foo>d__3: async or iterator state machine */
                qualified(cls, nouter, seg + 1, close - 1, out, depth);
                int move_next = nmeth >= 8 && !memcmp(meth, "MoveNext", 8) &&
                                (nmeth == 8 || meth[8] == '<');
                sb_puts(out, move_next ? " (async)" : " (iterator)");
                return 1;
            }
        }
    }

    /* The method: a lambda, a local function, top-level statements? */
    if (nmeth > 2 && meth[0] == '<') {
        size_t close = closing(meth, nmeth);
        if (close + 1 == nmeth && close == 5 && !memcmp(meth + 1, "Main", 4)) {
            /* <Main>: the compiler's entry point of an async Main, which waits for its task */
            qualified(cls, ncls, "Main", 4, out, depth);
            sb_puts(out, " (entry point)");
            return 1;
        }
        if (close > 1 && close + 1 < nmeth) {
            const char *inner = meth + 1;
            size_t ninner = close - 1;
            const char *rest = meth + close + 1;
            size_t nrest = nmeth - close - 1;
            if (rest[0] == 'b') {
                unsigned long ordinal = lambda_ordinal(rest, nrest);
                if (ordinal > 0) { /* the method's second lambda and on: "lambda 2 in" */
                    char num[32];
                    snprintf(num, sizeof num, "lambda %lu in ", ordinal + 1);
                    sb_puts(out, num);
                } else {
                    sb_puts(out, "lambda in ");
                }
                qualified(cls, ncls, inner, ninner, out, depth);
                return 1;
            }
            if (rest[0] == 'g' && nrest > 3 && !memcmp(rest, "g__", 3)) {
                const char *local = rest + 3;
                size_t nlocal = strcspn(local, "|");
                if (nlocal > nrest - 3)
                    nlocal = nrest - 3;
                sb_put(out, local, nlocal);
                sb_puts(out, " (local function in ");
                qualified(cls, ncls, inner, ninner, out, depth);
                sb_puts(out, ")");
                return 1;
            }
            if (rest[0] == '$') {
                qualified(cls, ncls, inner, ninner, out, depth);
                return 1;
            }
        }
    }
    sb_put(out, s, n);
    return 0;
}

int dnp_pretty_name(const char *raw, char *out, size_t len) {
    sbuf b = {out, 0, len};
    if (len)
        out[0] = 0;
    if (!raw)
        return 0;
    return pretty(raw, strlen(raw), &b, 0);
}

/* Each line of text made pretty, in a new string (free it); NULL if no memory. */
static char *pretty_lines(const char *text) {
    size_t cap = strlen(text) + 64, len = 0;
    char *out = malloc(cap);
    for (const char *p = text; out && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char raw[2048], name[2048];
        snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw ? n : sizeof raw - 1), p);
        dnp_pretty_name(raw, name, sizeof name);
        size_t k = strlen(name);
        if (len + k + 2 > cap) {
            char *more = realloc(out, cap = (len + k + 2) * 2);
            if (!more)
                free(out);
            out = more;
            if (!out)
                break;
        }
        memcpy(out + len, name, k);
        len += k;
        if (nl)
            out[len++] = '\n';
        out[len] = 0;
        p += n + (nl ? 1 : 0);
    }
    if (out && !*text)
        out[0] = 0;
    return out;
}

void dnp_pretty_story_emit(void *ctx, const dnp_story *s, const dnp_stories *all) {
    const dnp_pretty_emit *pe = ctx;
    dnp_story c = *s;
    char site[2048], catcher[2048], name[2048];
    char *stack = s->stack ? pretty_lines(s->stack) : NULL;
    size_t nsteps = s->steps ? s->nsteps : 0;
    dnp_story_step *steps = nsteps ? malloc(nsteps * sizeof *steps) : NULL;
    char **own = nsteps ? calloc(nsteps, sizeof *own) : NULL; /* the names rewritten */
    int oom = (s->stack && !stack) || (nsteps && (!steps || !own));
    for (size_t k = 0; k < nsteps && !oom; k++) {
        steps[k] = s->steps[k];
        if (steps[k].function && dnp_pretty_name(steps[k].function, name, sizeof name)) {
            own[k] = strdup(name);
            oom = !own[k];
            steps[k].function = own[k];
        }
    }
    if (!oom) {
        c.stack = stack ? stack : s->stack;
        if (s->throw_site) {
            dnp_pretty_name(s->throw_site, site, sizeof site);
            c.throw_site = site;
        }
        if (s->catcher) {
            dnp_pretty_name(s->catcher, catcher, sizeof catcher);
            c.catcher = catcher;
        }
        if (nsteps)
            c.steps = steps;
    }
    pe->emit(pe->ctx, oom ? s : &c, all); /* out of memory: as recorded rather than not at all */
    for (size_t k = 0; own && k < nsteps; k++)
        free(own[k]);
    free(own);
    free(steps);
    free(stack);
}
