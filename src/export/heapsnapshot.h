/* heapsnapshot.h: a heap snapshot as Chrome DevTools' .heapsnapshot JSON
 * (heapsnapshot.c). */
#ifndef DNP_HEAPSNAPSHOT_H
#define DNP_HEAPSNAPSHOT_H

#include <stdio.h>

#include "heapgraph.h"

/* Writes g (loaded with its addresses, edges kept) to out. 0, or -1 on a write error. */
int dnp_export_heapsnapshot(const dnp_heapgraph *g, FILE *out);

#endif
