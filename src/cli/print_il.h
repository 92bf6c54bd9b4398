/* print_il.h: an ILBody event's body for dnprof print (print_il.c, docs/il.md). */
#ifndef DNP_PRINT_IL_H
#define DNP_PRINT_IL_H

#include <stdio.h>

#include "trace_reader.h"

/* The body as text lines, each ending in '\n' (a header line, one per
 * clause, one per instruction, and "IL error: ..." when the bytes are cut
 * short or corrupt): a malloc'd string, NULL when out of memory. */
char *il_listing_text(const dnp_trace *t, const dnp_trace_event *e);

/* The body as the ,"il":{...} member of the event's JSON object: header
 * fields, sizes, clauses, instructions (offset, opcode, operand), error. */
void il_put_json(FILE *out, const dnp_trace *t, const dnp_trace_event *e);

#endif
