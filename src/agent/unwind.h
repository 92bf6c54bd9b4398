/* unwind.h: native frames by their unwind tables (docs/sampling.md, "Native
 * code"). The call-frame information compilers emit (.eh_frame, found through
 * .eh_frame_hdr) is parsed off the signal path, when a sample first needs a
 * library's (unwind_cfi.c), into one compact table per library: sorted rows of (start of
 * a pc range -> how to find the CFA, the return address and the caller's frame
 * pointer). The signal handler only reads those tables, and the stack only
 * inside the thread's bounds (unwind.c). The machine's DWARF numbers are
 * arch_unwind.h's. */
#ifndef DNP_UNWIND_H
#define DNP_UNWIND_H

#include <stddef.h>
#include <stdint.h>

enum { UNW_CFA_SP = 0, UNW_CFA_FP = 1, UNW_CFA_NONE = 2 }; /* NONE: no row covers the pc */
enum { UNW_R_SAME = 0, UNW_R_AT = 1, UNW_R_UNDEF = 2, UNW_R_UNKNOWN = 3 };

typedef struct unw_row {
    uint32_t pc;      /* from the library's load bias; the row holds up to the next row */
    int32_t cfa_off;  /* CFA = (SP or FP) + cfa_off */
    uint8_t cfa_reg;  /* UNW_CFA_* */
    uint8_t rules;    /* the return address's rule | the frame pointer's << 4 (UNW_R_*) */
    int8_t ra_w, fp_w; /* UNW_R_AT: saved at CFA + 8 * w */
} unw_row;

typedef struct unw_lib {
    uint64_t lo, hi;   /* its executable segments, absolute: what the index is sorted by */
    uint64_t fde_lo, fde_hi; /* the absolute addresses its FDEs cover, once parsed */
    uint64_t seg_lo, seg_hi; /* the loaded segment that holds .eh_frame_hdr: reads stay inside */
    uint64_t bias;     /* l_addr */
    uint64_t hdr;      /* where its .eh_frame_hdr is mapped (with bias, its identity) */
    unw_row *rows;
    uint32_t nrows;    /* 0 until parsed: published last (release), read first (acquire) */
    uint32_t *funcs;   /* function starts (the FDEs' initial locations), from bias, sorted */
    uint32_t nfuncs;
    uint32_t fdes, bad_fdes; /* FDEs read; of which stopped at what the parser does not know */
    uint32_t dbg_fdes; /* of which from .debug_frame (the file's, or its separate debug file's) */
    uint64_t parse_ns;
    uint8_t seen;      /* found by the last dl_iterate_phdr */
    uint8_t wanted;    /* a handler met it unparsed (written by handlers, relaxed) */
    uint8_t tried;     /* parsed, or found to have no table this parser reads */
    uint8_t cached;    /* its table came from the cache on disk (unwind_cache.c) */
    void *map;         /* the cache file mapped, which rows and funcs point into (NULL: both its own) */
    size_t map_len;
    char name[80];     /* the file's base name */
    char path[256];    /* the file, for its .debug_frame ("" for none) */
    uint8_t build_id[20], build_id_len; /* its GNU build ID, from the loaded notes */
} unw_lib;

typedef struct unw_index {
    uint32_t n;
    const unw_lib *lib[]; /* by lo */
} unw_index;

/* The registers a step reads and writes. */
typedef struct unw_frame {
    uint64_t pc, sp, fp;
    /* the link register where it still holds the frame's return address: the
     * interrupted one at the walk's first frame and after a signal frame (arm64;
     * 0 elsewhere, and after any other step) */
    uint64_t lr;
    /* set by a step through a signal frame: pc is an interrupted pc (looked up as a leaf), not a
     * return address; unwind_native puts it in the trampoline's place in ip[] and says where in
     * signal_at (0 none) */
    uint32_t interrupted, signal_at;
} unw_frame;

/* What a walk through native code ended on. */
enum {
    UNW_OK = 0,
    UNW_NOT_NATIVE, /* a pc in no table (managed code, stubs): go on by frame pointers from fp */
    UNW_NO_ROW,     /* native code that no row covers, or a rule the walk cannot follow: stopped */
    UNW_BAD_STACK,  /* the rule points outside the stack, or does not move up: stopped */
    UNW_END,        /* the outermost frame (its return address is undefined) */
    UNW_DEPTH       /* the record is full */
};

/* ---- the parser (unwind_cfi.c), sampler thread only ---- */

/* The rows of one object whose .eh_frame_hdr is mapped at hdr, reading only
 * inside [lo, hi) (the segment that holds it). 0, or -1 when the header is not
 * one this parser reads (out is then empty). */
int unw_parse(const uint8_t *hdr, uint64_t seg_lo, uint64_t seg_hi, uint64_t bias, unw_lib *out);
/* The same, with a .debug_frame section too ([dbg, dbg + dbg_len), read
 * whole; hdr may be NULL): its FDEs fill what .eh_frame's do not cover. */
int unw_parse2(const uint8_t *hdr, uint64_t seg_lo, uint64_t seg_hi, const uint8_t *dbg, size_t dbg_len, uint64_t bias,
               unw_lib *out);

/* The .debug_frame of a loaded object, found as GDB finds separate debug
 * files (unwind_debug.c): in the file itself, else in
 * /usr/lib/debug/.build-id/xx/rest.debug by its build ID, else by its
 * .gnu_debuglink next to it, in its .debug directory, or under
 * /usr/lib/debug. A read-only mapping of the file that holds it. */
typedef struct unw_dbg {
    const uint8_t *sec;
    size_t len;
    void *map;
    size_t map_len;
    char from[256]; /* the file it was found in */
} unw_dbg;
int unw_debug_frame(const char *path, const uint8_t *build_id, size_t id_len, unw_dbg *out); /* 0 or -1 */
/* The same search for any section (symbols.c: a stripped library's .symtab in
 * its debug file, as `dotnet-symbol` puts libcoreclr.so.dbg next to it). */
int unw_debug_section(const char *path, const uint8_t *build_id, size_t id_len, const char *want, unw_dbg *out);
void unw_debug_close(unw_dbg *d);
void unw_lib_free(unw_lib *l);

/* Parsed tables kept on disk between runs, by build ID (unwind_cache.c):
 * where ("" for nowhere; set before the sampler thread starts), the table of
 * l from there (0, or -1: parse it), and a table just parsed put there. dbg is
 * the separate file l's .debug_frame came from, NULL for none. */
struct stat;
void unwind_cache_dir(const char *dir);
int unw_cache_load(const unw_lib *l, const struct stat *dbg, unw_lib *out);
void unw_cache_store(const unw_lib *l, const struct stat *dbg, const unw_lib *t);
/* How many tables came from the cache. */
uint32_t unwind_cached(void);

/* Small files of the same directory, read whole and written whole (aside, then
 * renamed): what async stacks learn of a CoreLib build, by its MVID
 * (async_corelib.c). name: a file name, put after the agent's build ID. Read:
 * its length (at most cap bytes), or -1 (none, not ours, too long, no
 * directory). Any thread. */
int cache_file_enabled(void); /* 1: there is a directory that can keep them (made if missing) */
long cache_file_read(const char *name, void *buf, size_t cap);
void cache_file_write(const char *name, const void *buf, size_t len);
/* The GNU build ID among a loaded object's notes, into out: its length, 0 none. */
struct dl_phdr_info;
size_t unw_note_build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap);

/* The loaded objects (dl_iterate_phdr): new ones indexed, gone ones dropped,
 * the index the handler reads published again; the tables a handler asked for
 * since the last call (or, with all, every table) parsed. Cheap when nothing
 * was loaded, unloaded or asked for. Sampler thread only.
 *
 * Lazily, because a process maps far more native code than it runs while
 * sampled: of the 16 libraries of a small .NET program, its samples touch 3 or
 * 4 (the runtime, the JIT, libc), and parsing them all took 16 ms of its
 * start. A sample that meets a library not parsed yet walks it as code without
 * a table (frame pointers and the stack heuristics, counted as guesses). */
void unwind_refresh(int all);
/* Forgets every table (the sampler's stop; no handler may run). */
void unwind_release(void);
/* The table of the object that holds pc, on the sampler thread; NULL none. */
const unw_lib *unwind_lib_of(uint64_t pc);
/* The start of the function that holds pc, from bias (its FDE): 0 or -1. */
int unwind_func_start(const unw_lib *l, uint64_t pc, uint64_t *off);
/* Figures for the trace's note: objects parsed, objects with a table (parsed
 * or not yet), rows, bytes, parse time, FDEs the parser stopped at, FDEs
 * read from .debug_frame. */
void unwind_totals(uint32_t *libs, uint32_t *known, uint64_t *rows, uint64_t *bytes, uint64_t *ns, uint32_t *bad,
                   uint32_t *dbg);

/* ---- the walk (unwind.c), async-signal-safe ---- */

/* The index, held until unwind_leave (the sampler thread frees no table while
 * a handler holds it); NULL when there are no tables. */
const unw_index *unwind_enter(void);
void unwind_leave(void);

/* The table's library of pc, NULL none. */
const unw_lib *unwind_find(const unw_index *ix, uint64_t pc);
/* The row that holds pc in l, NULL none. */
const unw_row *unwind_row(const unw_lib *l, uint64_t pc);

/* One step from f (leaf: f->pc is an interrupted pc, else a return address)
 * to its caller, reading the stack only inside [lo, limit) (safe: 1 through
 * process_vm_readv, MEMREAD_VIEW from the sampler thread's copy of another
 * thread's stack, memread.h). UNW_OK, or why not. */
int unwind_step(const unw_index *ix, unw_frame *f, int leaf, uint64_t lo, uint64_t limit, int safe);

/* ra: the return address a signal handler was called with, the kernel's
 * trampoline, kept the first time it is one (arch_sigreturn_at): a walk that
 * meets it outside every library goes through the signal frame. Called from
 * the sampler's handler. */
void unwind_learn_sigtramp(uint64_t ra);

/* Steps from f (its pc already ip[n - 1]) through native code, appending each
 * caller to ip[] (at most max), up to the first frame that is not native code
 * with a table (UNW_NOT_NATIVE: *f is that frame's, its pc the last one
 * appended) or to why it stopped. *n is updated. Through a signal frame the
 * interrupted pc takes the trampoline's place (f->signal_at says where). */
int unwind_native(const unw_index *ix, uint64_t *ip, uint32_t *n, uint32_t max, unw_frame *f, int leaf,
                  uint64_t lo, uint64_t limit, int safe);

/* Reads one word at a, inside [lo, limit): 0 or -1. */
int unwind_read(uint64_t a, uint64_t lo, uint64_t limit, int safe, uint64_t *out);

#endif
