/* ct_internal.h: what calltree.c shares with the other builders of call trees
 * (ct_weighted.c). Not for readers of the trees: calltree.h is theirs. */
#ifndef DNP_CT_INTERNAL_H
#define DNP_CT_INTERNAL_H

#include <stdint.h>

#include "calltree.h"
#include "idmap.h"

/* The hooks' cost to take out of a tree (calltree.c). */
typedef struct hook_fix hook_fix;

/* An empty tree: its root only. 0, or -1 (no memory). */
int ct_tree_init(dnp_ct_tree *tr);
/* The child of parent for func in tree number key (h: its index), made if new. */
int ct_tree_child(dnp_ct_tree *tr, dnp_idmap *h, uint64_t key, uint32_t parent, uint64_t func, uint64_t name,
                  uint32_t *idx);
/* Links the tree, takes out the hooks' cost (fix: NULL for none), repairs open
 * frames' totals, and sets depths. 0, or -1 (no memory). */
int ct_tree_finish(dnp_ct_tree *tr, hook_fix *fix);

/* The view of a tree of samples with async marks (ct_async.c): rebuilt
 * logical or physical, marks gone; *marked counts the marked nodes. 0, or -1
 * (no memory). A tree with no marks is left as it is. */
int ct_async_view(dnp_ct_tree *tr, int physical, int calls, uint64_t *marked);

#endif
