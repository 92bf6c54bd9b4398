/* unwind_cfi.c: the call-frame information of the loaded objects, parsed into
 * compact tables (unwind.h), on the sampler thread only: never in a signal
 * handler. The subset compilers and assemblers emit: .eh_frame through
 * .eh_frame_hdr's binary-search table; CIE and FDE ('z', 'R', 'P', 'L', 'S'
 * augmentations); DW_CFA_def_cfa*, offset*, restore*, undefined, same_value,
 * register, advance_loc*, set_loc, remember/restore_state, GNU_args_size; the
 * DW_EH_PE pointer encodings. Only the CFA, the return address and the frame
 * pointer are followed; a rule the walk could not follow (a CFA by expression
 * or by another register, as in PLT entries and stack realignment) becomes a
 * row that stops the walk. Reads stay inside the segment that holds the header. */
#include "unwind.h"

#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arch_unwind.h"

/* ---- reading ---- */

typedef struct cur {
    const uint8_t *p, *end;
    int bad;
} cur;

static uint64_t rd(cur *c, unsigned n) {
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

/* Skips n bytes, or marks the cursor bad when fewer are left (a hostile
 * length never moves the pointer past the end). */
static void skip(cur *c, uint64_t n) {
    if (c->bad || n > (uint64_t)(c->end - c->p))
        c->bad = 1;
    else
        c->p += n;
}

static uint64_t uleb(cur *c) {
    uint64_t v = 0;
    for (unsigned s = 0; s < 64; s += 7) {
        uint64_t b = rd(c, 1);
        v |= (b & 0x7f) << s;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t sleb(cur *c) {
    uint64_t v = 0;
    unsigned s = 0;
    uint64_t b;
    do {
        b = rd(c, 1);
        v |= (b & 0x7f) << s;
        s += 7;
    } while ((b & 0x80) && s < 64 && !c->bad);
    if (s < 64 && (b & 0x40))
        v |= ~0ull << s;
    return (int64_t)v;
}

/* A DW_EH_PE-encoded pointer; base for datarel (the header's start). */
static uint64_t enc_ptr(cur *c, uint8_t enc, uint64_t datarel) {
    if (enc == 0xff)
        return 0;
    uint64_t at = (uint64_t)(uintptr_t)c->p, v;
    switch (enc & 0x0f) {
    case 0x00: v = rd(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = rd(c, 2); break;
    case 0x03: v = rd(c, 4); break;
    case 0x04: v = rd(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd(c, 4); break;
    case 0x0c: v = rd(c, 8); break;
    default: c->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    case 0x30: v += datarel; break;
    default: c->bad = 1; return 0; /* textrel, funcrel, aligned: not emitted on Linux */
    }
    if (enc & 0x80) /* indirect: the personality; its value is not needed */
        v = 0;
    return v;
}

/* ---- the rules ---- */

typedef struct rule {
    uint8_t kind; /* UNW_R_* */
    int64_t off;
} rule;

typedef struct cstate {
    int64_t cfa_reg; /* DWARF number, -1 by expression */
    int64_t cfa_off;
    rule ra, fp;
} cstate;

typedef struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc, has_z;
    uint8_t dbg; /* from .debug_frame: its addresses are the file's, from the load bias */
    const uint8_t *insn, *insn_end;
} cie;

/* The rows are mapped, not malloc'd: sized from the FDE count and populated
 * by the kernel in one call (MAP_POPULATE), where touching them page by page
 * took a fault per 4 KiB, in a VM a trip to the host each (about 900 for the
 * libraries of a .NET process). */
typedef struct rows {
    unw_row *r;
    size_t n, cap;
    int oom;
} rows;

static size_t rows_bytes(size_t cap) {
    size_t page = 4096;
    return (cap * sizeof(unw_row) + page - 1) / page * page;
}

static int rows_grow(rows *rs, size_t cap) {
    void *g = rs->r ? mremap(rs->r, rows_bytes(rs->cap), rows_bytes(cap), MREMAP_MAYMOVE)
                    : mmap(NULL, rows_bytes(cap), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                           -1, 0);
    if (g == MAP_FAILED)
        return -1;
    rs->r = g;
    rs->cap = rows_bytes(cap) / sizeof(unw_row);
    return 0;
}

static void rows_free(unw_row *r, size_t n) {
    if (r)
        munmap(r, rows_bytes(n));
}

static unw_row to_row(const cstate *s, uint32_t pc) {
    unw_row w;
    memset(&w, 0, sizeof w);
    w.pc = pc;
    w.cfa_reg = s->cfa_reg == ARCH_DW_SP ? UNW_CFA_SP : s->cfa_reg == ARCH_DW_FP ? UNW_CFA_FP : UNW_CFA_NONE;
    if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX)
        w.cfa_reg = UNW_CFA_NONE;
    w.cfa_off = w.cfa_reg == UNW_CFA_NONE ? 0 : (int32_t)s->cfa_off;
    uint8_t ra = s->ra.kind, fp = s->fp.kind;
    if (ra == UNW_R_AT && (s->ra.off % 8 || s->ra.off / 8 < INT8_MIN || s->ra.off / 8 > INT8_MAX))
        ra = UNW_R_UNKNOWN;
    if (fp == UNW_R_AT && (s->fp.off % 8 || s->fp.off / 8 < INT8_MIN || s->fp.off / 8 > INT8_MAX))
        fp = UNW_R_UNKNOWN;
    w.rules = (uint8_t)(ra | fp << 4);
    w.ra_w = ra == UNW_R_AT ? (int8_t)(s->ra.off / 8) : 0;
    w.fp_w = fp == UNW_R_AT ? (int8_t)(s->fp.off / 8) : 0;
    return w;
}

static int same_rules(const unw_row *a, const unw_row *b) {
    return a->cfa_reg == b->cfa_reg && a->cfa_off == b->cfa_off && a->rules == b->rules && a->ra_w == b->ra_w &&
           a->fp_w == b->fp_w;
}

/* Appends a row starting at pc: replaces a row at the same pc, is dropped
 * before the last (overlapping FDEs) or when it says what the last one says. */
static void emit(rows *rs, unw_row w) {
    if (rs->n && w.pc < rs->r[rs->n - 1].pc)
        return;
    if (rs->n && w.pc == rs->r[rs->n - 1].pc) {
        rs->r[--rs->n] = w;
        if (rs->n && same_rules(&rs->r[rs->n - 1], &w))
            return;
        rs->n++;
        return;
    }
    if (rs->n && same_rules(&rs->r[rs->n - 1], &w))
        return;
    if (rs->n == rs->cap && rows_grow(rs, rs->cap ? rs->cap * 2 : 1024) != 0) {
        rs->oom = 1;
        return;
    }
    rs->r[rs->n++] = w;
}

static void set_rule(cstate *s, uint64_t reg, uint8_t kind, int64_t off) {
    rule r = {kind, off};
    if (reg == ARCH_DW_RA)
        s->ra = r;
    else if (reg == ARCH_DW_FP)
        s->fp = r;
}

static void restore_rule(cstate *s, const cstate *init, uint64_t reg) {
    if (reg == ARCH_DW_RA)
        s->ra = init->ra;
    else if (reg == ARCH_DW_FP)
        s->fp = init->fp;
}

#define STATE_STACK 16

/* Runs one CFA program. With rs, each advance emits the row of the range
 * that ends (loc is the FDE's pc as an offset from bias, end its end). 0, or
 * -1 at an instruction it does not know (the rest of the FDE then stops walks). */
/* A factored offset times the CIE's data alignment, in the wrapping arithmetic
 * of uint64_t (a hostile table's product overflows; its rule is then
 * nonsense, which set_rule and the walk refuse, but never undefined). */
static int64_t scaled(uint64_t v, int64_t align) {
    return (int64_t)(v * (uint64_t)align);
}

static int run_cfa(cur *c, const cie *ci, cstate *s, const cstate *init, rows *rs, uint64_t *loc, uint64_t end,
                   uint64_t bias) {
    cstate stack[STATE_STACK];
    unsigned depth = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = (uint8_t)rd(c, 1), lo6 = op & 0x3f;
        uint64_t adv = 0, reg;
        int64_t off;
        switch (op >> 6) {
        case 1: adv = lo6 * ci->code_align; goto advance;
        case 2: set_rule(s, lo6, UNW_R_AT, scaled(uleb(c), ci->data_align)); continue;
        case 3: restore_rule(s, init, lo6); continue;
        default: break;
        }
        switch (op) {
        case 0x00: continue; /* nop */
        case 0x01: { /* set_loc */
            uint64_t to = enc_ptr(c, ci->fde_enc, 0) - (ci->dbg ? 0 : bias);
            adv = to > *loc ? to - *loc : 0;
            goto advance;
        }
        case 0x02: adv = rd(c, 1) * ci->code_align; goto advance;
        case 0x03: adv = rd(c, 2) * ci->code_align; goto advance;
        case 0x04: adv = rd(c, 4) * ci->code_align; goto advance;
        case 0x05: reg = uleb(c); set_rule(s, reg, UNW_R_AT, scaled(uleb(c), ci->data_align)); continue;
        case 0x06: restore_rule(s, init, uleb(c)); continue;
        case 0x07: set_rule(s, uleb(c), UNW_R_UNDEF, 0); continue;
        case 0x08: set_rule(s, uleb(c), UNW_R_SAME, 0); continue;
        case 0x09: reg = uleb(c); uleb(c); set_rule(s, reg, UNW_R_UNKNOWN, 0); continue; /* register */
        case 0x0a:
            if (depth == STATE_STACK)
                return -1;
            stack[depth++] = *s;
            continue;
        case 0x0b:
            if (!depth)
                return -1;
            *s = stack[--depth]; /* the CFA rule too, as GCC's and LLVM's unwinders restore it */
            continue;
        case 0x0c: s->cfa_reg = (int64_t)uleb(c); s->cfa_off = (int64_t)uleb(c); continue;
        case 0x0d: s->cfa_reg = (int64_t)uleb(c); continue;
        case 0x0e: s->cfa_off = (int64_t)uleb(c); continue;
        case 0x0f: skip(c, uleb(c)); s->cfa_reg = -1; continue; /* def_cfa_expression */
        case 0x10: reg = uleb(c); skip(c, uleb(c)); set_rule(s, reg, UNW_R_UNKNOWN, 0); continue;
        case 0x11: reg = uleb(c); set_rule(s, reg, UNW_R_AT, scaled((uint64_t)sleb(c), ci->data_align)); continue;
        case 0x12: s->cfa_reg = (int64_t)uleb(c); s->cfa_off = scaled((uint64_t)sleb(c), ci->data_align); continue;
        case 0x13: s->cfa_off = scaled((uint64_t)sleb(c), ci->data_align); continue;
        case 0x14: reg = uleb(c); uleb(c); set_rule(s, reg, UNW_R_UNKNOWN, 0); continue; /* val_offset */
        case 0x15: reg = uleb(c); sleb(c); set_rule(s, reg, UNW_R_UNKNOWN, 0); continue;
        case 0x16: reg = uleb(c); skip(c, uleb(c)); set_rule(s, reg, UNW_R_UNKNOWN, 0); continue;
        case 0x2e: uleb(c); continue; /* GNU_args_size */
        case 0x2f: reg = uleb(c); off = scaled(0 - uleb(c), ci->data_align); set_rule(s, reg, UNW_R_AT, off); continue;
        default: return -1;
        }
    advance:
        if (rs && *loc < end && adv) {
            emit(rs, to_row(s, (uint32_t)*loc));
        }
        *loc += adv;
    }
    if (c->p > c->end)
        c->bad = 1;
    return c->bad ? -1 : 0;
}

/* Opens the CIE or FDE at p (inside [seg, end)): c reads its body, after its
 * length, which is at least min bytes. 0 or -1. */
static int entry_open(cur *c, const uint8_t *p, const uint8_t *end, uint64_t min) {
    *c = (cur){p, end, 0};
    uint64_t len = rd(c, 4);
    if (len == 0xffffffffu)
        len = rd(c, 8);
    if (c->bad || len > (uint64_t)(end - c->p) || len < min)
        return -1;
    c->end = c->p + len;
    return 0;
}

/* The CIE at p (inside [seg, end)); dbg: of .debug_frame, whose CIE id is
 * 0xffffffff and whose version 4 says the sizes of addresses and segments.
 * 0 or -1. */
static int read_cie(const uint8_t *p, const uint8_t *end, cie *ci, cstate *init, int dbg) {
    cur c;
    if (entry_open(&c, p, end, 4) < 0)
        return -1;
    const uint8_t *e = c.end;
    if (rd(&c, 4) != (dbg ? 0xffffffffu : 0u))
        return -1; /* not a CIE */
    unsigned ver = (unsigned)rd(&c, 1);
    const char *aug = (const char *)c.p;
    while (c.p < e && *c.p)
        c.p++;
    if (c.p >= e)
        return -1;
    c.p++;
    memset(ci, 0, sizeof *ci);
    ci->dbg = (uint8_t)dbg;
    if (aug[0] == 'e' && aug[1] == 'h')
        rd(&c, 8);
    if (dbg && ver >= 4 && (rd(&c, 1) != 8 || rd(&c, 1) != 0))
        return -1; /* addresses of another size, or segments */
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = ver == 1 ? rd(&c, 1) : uleb(&c);
    ci->fde_enc = 0; /* absptr */
    if (aug[0] == 'z') {
        ci->has_z = 1;
        uint64_t alen = uleb(&c);
        if (c.bad || alen > (uint64_t)(c.end - c.p))
            return -1;
        const uint8_t *after = c.p + alen;
        for (const char *a = aug + 1; *a && !c.bad; a++) {
            if (*a == 'R')
                ci->fde_enc = (uint8_t)rd(&c, 1);
            else if (*a == 'L')
                rd(&c, 1);
            else if (*a == 'P')
                enc_ptr(&c, (uint8_t)rd(&c, 1), 0);
            else if (*a != 'S' && *a != 'B' && *a != 'G')
                break;
        }
        c.p = after;
    } else if (aug[0]) {
        return -1;
    }
    if (c.bad || c.p > e || ci->ra_reg != ARCH_DW_RA)
        return -1;
    ci->insn = c.p;
    ci->insn_end = e;
    init->cfa_reg = ARCH_DW_SP;
    init->cfa_off = ARCH_UNW_INIT_CFA_OFF;
    init->ra.kind = ARCH_UNW_INIT_RA_KIND;
    init->ra.off = ARCH_UNW_INIT_RA_OFF;
    init->fp.kind = UNW_R_SAME;
    init->fp.off = 0;
    cur ic = {ci->insn, ci->insn_end, 0};
    uint64_t loc = 0;
    cstate dummy = *init;
    if (run_cfa(&ic, ci, init, &dummy, NULL, &loc, 0, 0) != 0)
        return -1;
    return 0;
}

/* The FDE at p: its rows into rs, its start into *start. 0, or -1 when it
 * stopped at what the parser does not know (its rows up to there are kept,
 * the rest stop the walk). */
static int read_fde(const uint8_t *p, const uint8_t *seg, const uint8_t *end, uint64_t bias, rows *rs,
                    uint64_t *start, uint64_t *stop, int dbg) {
    cur c;
    if (entry_open(&c, p, end, 8) < 0)
        return -1;
    const uint8_t *e = c.end, *idp = c.p;
    uint64_t id = rd(&c, 4); /* .eh_frame: back to the CIE; .debug_frame: the CIE's offset in the section */
    const uint8_t *cp = dbg ? seg + id : idp - id;
    if (dbg ? id >= (uint64_t)(end - seg) : id == 0 || id > (uint64_t)(idp - seg))
        return -1;
    cie ci;
    cstate init;
    if (read_cie(cp, end, &ci, &init, dbg) != 0)
        return -1;
    uint64_t pc = enc_ptr(&c, ci.fde_enc, 0);
    uint64_t range = enc_ptr(&c, (uint8_t)(ci.fde_enc & 0x0f), 0);
    if (dbg)
        pc += bias; /* the file's address: where it is loaded */
    if (c.bad || pc < bias || pc - bias + range > UINT32_MAX || !range)
        return -1;
    if (ci.has_z)
        skip(&c, uleb(&c));
    if (c.bad || c.p > e)
        return -1;
    uint64_t loc = pc - bias, fend = loc + range;
    *start = loc;
    *stop = fend;
    cstate s = init;
    int rc = run_cfa(&c, &ci, &s, &init, rs, &loc, fend, bias);
    if (loc < fend)
        emit(rs, to_row(&s, (uint32_t)loc));
    if (rc != 0 && loc < fend) { /* what follows is not known: no row */
        cstate none = s;
        none.cfa_reg = -1;
        emit(rs, to_row(&none, (uint32_t)loc));
    }
    cstate gap = s;
    gap.cfa_reg = -1; /* past its end: no row until the next FDE */
    emit(rs, to_row(&gap, (uint32_t)fend));
    return rc;
}

static int by_u32(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- a library's FDEs, in order ---- */

/* An FDE of .debug_frame: where it starts (from the load bias) and where it is. */
typedef struct fde_ref {
    uint64_t loc;
    const uint8_t *p;
} fde_ref;

static int by_loc(const void *x, const void *y) {
    const fde_ref *a = x, *b = y;
    return a->loc < b->loc ? -1 : a->loc > b->loc;
}

/* The FDEs of a .debug_frame section, by start: *n of them (NULL, 0: none).
 * Entries of 64-bit DWARF are skipped; the section is in no order. */
static fde_ref *dbg_collect(const uint8_t *sec, size_t len, uint32_t *n) {
    const uint8_t *p = sec, *end = sec + len;
    fde_ref *refs = NULL;
    uint32_t cap = 0;
    *n = 0;
    while (end - p >= 8) {
        cur h = {p, end, 0};
        uint64_t elen = rd(&h, 4);
        if (elen == 0xffffffffu) { /* 64-bit DWARF: not read, stepped over */
            elen = rd(&h, 8);
            if (h.bad || elen > (uint64_t)(end - h.p))
                break;
            p = h.p + elen;
            continue;
        }
        if (elen > (uint64_t)(end - h.p))
            break;
        const uint8_t *next = h.p + elen;
        uint64_t id = elen >= 4 ? rd(&h, 4) : 0xffffffffu;
        cie ci;
        cstate init;
        if (id != 0xffffffffu && id < len && read_cie(sec + id, end, &ci, &init, 1) == 0) {
            uint64_t loc = enc_ptr(&h, ci.fde_enc, 0);
            if (!h.bad && loc <= UINT32_MAX) {
                if (*n == cap) {
                    uint32_t c2 = cap ? cap * 2 : 256;
                    fde_ref *g = realloc(refs, c2 * sizeof *g);
                    if (!g)
                        break;
                    refs = g;
                    cap = c2;
                }
                refs[(*n)++] = (fde_ref){loc, p};
            }
        }
        p = next;
    }
    if (*n)
        qsort(refs, *n, sizeof *refs, by_loc);
    return refs;
}

/* What one parse builds. */
typedef struct build {
    rows rs;
    uint32_t *funcs, nf;
    uint64_t lo, hi, last_stop;
    unw_lib *out;
} build;

static void take_fde(build *b, const uint8_t *p, const uint8_t *seg, const uint8_t *end, uint64_t bias, int dbg) {
    uint64_t start = 0, stop = 0;
    b->out->fdes++;
    if (read_fde(p, seg, end, bias, &b->rs, &start, &stop, dbg) != 0)
        b->out->bad_fdes++;
    if (stop > start) {
        b->funcs[b->nf++] = (uint32_t)start;
        b->lo = start + bias < b->lo ? start + bias : b->lo;
        b->hi = stop + bias > b->hi ? stop + bias : b->hi;
        b->last_stop = stop > b->last_stop ? stop : b->last_stop;
    }
}

int unw_parse(const uint8_t *hdr, uint64_t seg_lo, uint64_t seg_hi, uint64_t bias, unw_lib *out) {
    return unw_parse2(hdr, seg_lo, seg_hi, NULL, 0, bias, out);
}

int unw_parse2(const uint8_t *hdr, uint64_t seg_lo, uint64_t seg_hi, const uint8_t *dbg, size_t dbg_len, uint64_t bias,
               unw_lib *out) {
    uint64_t t0 = now_ns();
    memset(out, 0, sizeof *out);
    const uint8_t *seg = (const uint8_t *)(uintptr_t)seg_lo, *end = (const uint8_t *)(uintptr_t)seg_hi;
    cur c = {hdr, end, 0};
    uint64_t count = 0, base = (uint64_t)(uintptr_t)hdr;
    uint8_t tab_enc = 0;
    if (hdr) {
        if (hdr < seg || hdr + 4 > end)
            return -1;
        unsigned ver = (unsigned)rd(&c, 1);
        uint8_t ptr_enc = (uint8_t)rd(&c, 1), cnt_enc = (uint8_t)rd(&c, 1);
        tab_enc = (uint8_t)rd(&c, 1);
        enc_ptr(&c, ptr_enc, base); /* .eh_frame itself: the table says where each FDE is */
        count = enc_ptr(&c, cnt_enc, base);
        /* the binary-search table: (initial location, FDE address), datarel sdata4 */
        if (c.bad || ver != 1 || tab_enc != 0x3b || count > (uint64_t)(end - c.p) / 8)
            return -1;
    }
    uint32_t ndbg = 0;
    fde_ref *dref = dbg ? dbg_collect(dbg, dbg_len, &ndbg) : NULL;
    build b = {{NULL, 0, 0, 0}, NULL, 0, UINT64_MAX, 0, 0, out};
    if (count + ndbg == 0 || !(b.funcs = malloc((count + ndbg) * sizeof *b.funcs)) ||
        rows_grow(&b.rs, (count + ndbg) * 8) != 0) { /* 6-8 rows an FDE in the runtime's libraries */
        free(b.funcs);
        free(dref);
        return -1;
    }
    /* .eh_frame's FDEs in the table's order; .debug_frame's merged in by
     * start, each only where no FDE before it reaches (.eh_frame's first) */
    uint32_t j = 0;
    for (uint64_t i = 0; i < count && !b.rs.oom; i++) {
        uint64_t at = enc_ptr(&c, tab_enc, base) - bias;
        const uint8_t *fp = (const uint8_t *)(uintptr_t)enc_ptr(&c, tab_enc, base);
        for (; j < ndbg && dref[j].loc < at; j++)
            if (dref[j].loc >= b.last_stop)
                take_fde(&b, dref[j].p, dbg, dbg + dbg_len, bias, 1);
        if (c.bad || fp < seg || fp + 8 > end) {
            out->fdes++;
            out->bad_fdes++;
            continue;
        }
        take_fde(&b, fp, seg, end, bias, 0);
    }
    for (; j < ndbg && !b.rs.oom; j++)
        if (dref[j].loc >= b.last_stop)
            take_fde(&b, dref[j].p, dbg, dbg + dbg_len, bias, 1);
    free(dref);
    if (b.rs.oom || !b.rs.n || !b.nf) {
        rows_free(b.rs.r, b.rs.cap);
        free(b.funcs);
        return -1;
    }
    qsort(b.funcs, b.nf, sizeof *b.funcs, by_u32);
    if (rows_bytes(b.rs.n) < rows_bytes(b.rs.cap)) /* the tail's pages back */
        munmap((char *)b.rs.r + rows_bytes(b.rs.n), rows_bytes(b.rs.cap) - rows_bytes(b.rs.n));
    out->rows = b.rs.r;
    out->nrows = (uint32_t)b.rs.n;
    out->funcs = b.funcs;
    out->nfuncs = b.nf;
    out->lo = out->fde_lo = b.lo;
    out->hi = out->fde_hi = b.hi;
    out->bias = bias;
    out->hdr = hdr ? base : 0;
    out->dbg_fdes = ndbg;
    out->parse_ns = now_ns() - t0;
    return 0;
}

void unw_lib_free(unw_lib *l) {
    if (l->map) {
        munmap(l->map, l->map_len);
    } else {
        rows_free(l->rows, l->nrows);
        free(l->funcs);
    }
    memset(l, 0, sizeof *l);
}

/* ---- the loaded objects ---- */

#define MAX_LIBS 512

static unw_lib *g_libs[MAX_LIBS];
static uint32_t g_nlibs;
static unsigned long long g_adds = ~0ull, g_subs = ~0ull;
extern _Atomic(const unw_index *) unwind_index_ptr; /* unwind.c */
extern atomic_uint unwind_readers;

static unw_lib *lib_known(uint64_t bias, uint64_t hdr) {
    for (uint32_t i = 0; i < g_nlibs; i++)
        if (g_libs[i]->bias == bias && g_libs[i]->hdr == hdr)
            return g_libs[i];
    return NULL;
}

/* The GNU build ID among the object's loaded notes: its length (0 none). */
size_t unw_note_build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap) {
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_NOTE)
            continue;
        const uint8_t *n = (const uint8_t *)(uintptr_t)(info->dlpi_addr + p->p_vaddr), *end = n + p->p_memsz;
        while (end - n >= 12) {
            uint32_t namesz, descsz, type;
            memcpy(&namesz, n, 4);
            memcpy(&descsz, n + 4, 4);
            memcpy(&type, n + 8, 4);
            uint64_t at = 12 + (((uint64_t)namesz + 3) & ~3ull), next = at + (((uint64_t)descsz + 3) & ~3ull);
            if (next > (uint64_t)(end - n))
                break;
            if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && memcmp(n + 12, "GNU", 4) == 0 && descsz >= 2 &&
                descsz <= cap) {
                memcpy(out, n + at, descsz);
                return descsz;
            }
            n += next;
        }
    }
    return 0;
}

static int on_object(struct dl_phdr_info *info, size_t size, void *data) {
    int *first = data;
    if (*first) {
        *first = 0;
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs &&
            info->dlpi_adds == g_adds && info->dlpi_subs == g_subs)
            return 1; /* nothing loaded or unloaded since the last look */
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
            g_adds = info->dlpi_adds;
            g_subs = info->dlpi_subs;
        }
    }
    const ElfW(Phdr) *eh = NULL;
    for (unsigned i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &info->dlpi_phdr[i];
    /* an object without .eh_frame_hdr is kept too: its file may have a .debug_frame */
    uint64_t hdr = eh ? info->dlpi_addr + eh->p_vaddr : 0;
    unw_lib *known = lib_known(info->dlpi_addr, hdr);
    if (known) {
        known->seen = 1;
        return 0;
    }
    if (g_nlibs == MAX_LIBS)
        return 0;
    /* the loaded segment that holds the header (reads stay inside it), and the
     * executable ones (what the index knows the library by until it is parsed) */
    uint64_t seg_lo = 0, seg_hi = 0, lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uint64_t a = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && hdr && hdr >= a && hdr < a + p->p_memsz && (p->p_flags & PF_R)) {
            seg_lo = a;
            seg_hi = a + p->p_filesz;
        }
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && p->p_memsz) {
            lo = a < lo ? a : lo;
            hi = a + p->p_memsz > hi ? a + p->p_memsz : hi;
        }
    }
    unw_lib *l = calloc(1, sizeof *l);
    if (!l)
        return 0;
    l->bias = info->dlpi_addr;
    l->hdr = hdr;
    l->seg_lo = seg_lo;
    l->seg_hi = seg_hi;
    l->lo = lo;
    l->hi = hi;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "main";
    const char *slash = strrchr(name, '/');
    strncpy(l->name, slash ? slash + 1 : name, sizeof l->name - 1);
    if (name[0] == '/')
        snprintf(l->path, sizeof l->path, "%s", name);
    else if (!info->dlpi_name || !info->dlpi_name[0]) { /* the program itself */
        ssize_t n = readlink("/proc/self/exe", l->path, sizeof l->path - 1);
        l->path[n > 0 ? n : 0] = 0;
    }
    l->build_id_len = (uint8_t)unw_note_build_id(info, l->build_id, sizeof l->build_id);
    /* no table this parser reads (neither an .eh_frame_hdr in memory nor a file to look in): never indexed */
    l->tried = (hdr ? !seg_hi : !l->path[0]) || hi <= lo;
    l->seen = 1;
    g_libs[g_nlibs++] = l;
    return 0;
}

/* Parses l's table in place while handlers may read l: everything but the
 * row count first, the count last (release); a handler that still reads 0
 * walks the library as code without a table. 1 when a table was published. */
static int lib_parse(unw_lib *l) {
    unw_lib t;
    memset(&t, 0, sizeof t);
    __atomic_store_n(&l->tried, 1, __ATOMIC_RELAXED);
    unw_dbg d;
    int dbg = unw_debug_frame(l->path, l->build_id, l->build_id_len, &d) == 0;
    struct stat dst;
    const struct stat *dbg_id = dbg && stat(d.from, &dst) == 0 ? &dst : NULL;
    int rc = dbg && !dbg_id ? -1 : unw_cache_load(l, dbg_id, &t);
    l->cached = rc == 0;
    if (rc != 0) {
        rc = dbg || l->hdr ? unw_parse2((const uint8_t *)(uintptr_t)l->hdr, l->seg_lo, l->seg_hi,
                                        dbg ? d.sec : NULL, dbg ? d.len : 0, l->bias, &t)
                           : -1;
        if (rc == 0 && (!dbg || dbg_id))
            unw_cache_store(l, dbg_id, &t);
    }
    if (dbg)
        unw_debug_close(&d);
    if (rc != 0) {
        l->fdes = t.fdes;
        l->bad_fdes = t.bad_fdes;
        return 0;
    }
    l->rows = t.rows;
    l->funcs = t.funcs;
    l->map = t.map;
    l->map_len = t.map_len;
    l->nfuncs = t.nfuncs;
    l->fde_lo = t.fde_lo > l->lo ? t.fde_lo : l->lo;
    l->fde_hi = t.fde_hi < l->hi ? t.fde_hi : l->hi;
    l->fdes = t.fdes;
    l->bad_fdes = t.bad_fdes;
    l->dbg_fdes = t.dbg_fdes;
    l->parse_ns = t.parse_ns;
    __atomic_store_n(&l->nrows, t.nrows, __ATOMIC_RELEASE);
    return 1;
}

static int by_lo(const void *x, const void *y) {
    const unw_lib *a = *(const unw_lib *const *)x, *b = *(const unw_lib *const *)y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Waits until no handler holds the index it read before the last publish:
 * 1, or 0 after 100 ms (a thread stopped inside its handler: what it may
 * still read is then kept, not freed). */
static int quiesce(void) {
    for (int i = 0; i < 10000; i++) {
        if (!atomic_load(&unwind_readers))
            return 1;
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

void unwind_refresh(int all) {
    int first = 1;
    for (uint32_t i = 0; i < g_nlibs; i++)
        g_libs[i]->seen = 0;
    uint32_t before = g_nlibs;
    int same = dl_iterate_phdr(on_object, &first) == 1; /* nothing loaded or unloaded */
    for (uint32_t i = 0; i < g_nlibs; i++) {
        unw_lib *l = g_libs[i];
        if (same)
            l->seen = 1;
        if (l->seen && !l->tried && (all || __atomic_load_n(&l->wanted, __ATOMIC_RELAXED)))
            lib_parse(l);
    }
    if (same)
        return; /* the index holds every library already */
    unw_index *ix = malloc(sizeof *ix + MAX_LIBS * sizeof ix->lib[0]);
    if (!ix)
        return;
    unw_lib *gone[MAX_LIBS];
    uint32_t ngone = 0, keep = 0;
    ix->n = 0;
    for (uint32_t i = 0; i < g_nlibs; i++) {
        if (!g_libs[i]->seen) {
            gone[ngone++] = g_libs[i];
            continue;
        }
        g_libs[keep++] = g_libs[i];
        if (!g_libs[i]->tried || g_libs[i]->nrows)
            ix->lib[ix->n++] = g_libs[i];
    }
    g_nlibs = keep;
    if (!ngone && keep == before) {
        free(ix); /* a reload that changed nothing we read */
        return;
    }
    qsort(ix->lib, ix->n, sizeof ix->lib[0], by_lo);
    const unw_index *old = atomic_exchange(&unwind_index_ptr, ix);
    if (!quiesce())
        return; /* the old index and the gone tables stay: a handler may still read them */
    free((void *)old);
    for (uint32_t i = 0; i < ngone; i++) {
        unw_lib_free(gone[i]);
        free(gone[i]);
    }
}

void unwind_release(void) {
    const unw_index *old = atomic_exchange(&unwind_index_ptr, NULL);
    if (!quiesce()) { /* a handler still inside: the tables stay, forgotten */
        g_nlibs = 0;
        g_adds = g_subs = ~0ull;
        return;
    }
    free((void *)old);
    for (uint32_t i = 0; i < g_nlibs; i++) {
        unw_lib_free(g_libs[i]);
        free(g_libs[i]);
    }
    g_nlibs = 0;
    g_adds = g_subs = ~0ull;
}

const unw_lib *unwind_lib_of(uint64_t pc) {
    return unwind_find(atomic_load(&unwind_index_ptr), pc);
}

int unwind_func_start(const unw_lib *l, uint64_t pc, uint64_t *off) {
    if (!l || pc < l->bias || pc - l->bias > UINT32_MAX || !l->nfuncs)
        return -1;
    uint32_t a = (uint32_t)(pc - l->bias);
    size_t lo = 0, hi = l->nfuncs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->funcs[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    *off = l->funcs[lo - 1];
    return 0;
}

uint32_t unwind_cached(void) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < g_nlibs; i++)
        n += g_libs[i]->nrows && g_libs[i]->cached;
    return n;
}

void unwind_totals(uint32_t *libs, uint32_t *known, uint64_t *rows, uint64_t *bytes, uint64_t *ns, uint32_t *bad,
                   uint32_t *dbg) {
    *libs = *known = *dbg = 0;
    *rows = *bytes = *ns = 0;
    *bad = 0;
    for (uint32_t i = 0; i < g_nlibs; i++) {
        const unw_lib *l = g_libs[i];
        *known += !l->tried || l->nrows;
        if (!l->nrows)
            continue;
        (*libs)++;
        *rows += l->nrows;
        *bytes += (uint64_t)l->nrows * sizeof(unw_row) + (uint64_t)l->nfuncs * 4u + sizeof *l;
        *ns += l->parse_ns;
        *bad += l->bad_fdes;
        *dbg += l->dbg_fdes;
    }
}
