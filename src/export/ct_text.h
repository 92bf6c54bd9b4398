/* ct_text.h: weighted trees from stacks recorded as text (one frame a line,
 * innermost first: sampled allocations, lock waits), for report and convert.
 * The frames' names are the tree's own names (DNP_CT_OWN_NAMES + i), each
 * text kept once. */
#ifndef DNP_CT_TEXT_H
#define DNP_CT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "calltree.h"
#include "idmap.h"

typedef struct dnp_ct_names {
    char **names; /* own names, numbered from DNP_CT_OWN_NAMES */
    size_t n, cap;
    dnp_idmap h;  /* (FNV-1a of the text, length | probe << 32) -> index */
    dnp_ct_frame *frames; /* dnp_ct_text_add's scratch */
    size_t frames_cap;
} dnp_ct_names;

/* FNV-1a of s[0..n): the key of a text in the reports' tables. */
uint64_t dnp_text_hash(const char *s, size_t n);

/* The own-name number of s[0..n), added if new; 0 when out of memory. */
uint64_t dnp_ct_own_name(dnp_ct_names *nm, const char *s, size_t n);

/* Adds the stack text (innermost first, one frame a line) to ct, outermost
 * first, with leaf (the type allocated, the lock waited on; NULL: none) below
 * its innermost frame. 0, or -1 when out of memory. */
int dnp_ct_text_add(dnp_calltree *ct, dnp_ct_names *nm, const char *text, const char *leaf, uint64_t weight,
                    uint64_t count);

/* After the last stack: hands ct the names (nm keeps them) and finishes it. 0,
 * or -1 when out of memory. */
int dnp_ct_text_finish(dnp_calltree *ct, dnp_ct_names *nm);

void dnp_ct_names_release(dnp_ct_names *nm);

#endif
