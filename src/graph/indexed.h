/* indexed.h — a dense, numbered view of a symbol's graph (nnvm's IndexedGraph).
 *
 * Nodes are numbered 0..nnodes-1 in post-order DFS (every node after its inputs, so
 * ascending order is a topological order); output entries are numbered through
 * entry_ptr (node i owns entries entry_ptr[i] .. entry_ptr[i+1]-1, MXNet's
 * node_row_ptr). Inputs are a CSR table of entry ids. Passes keep their results in
 * arrays indexed by node or entry id: no string lookups in passes.
 * The indexed graph holds one reference to every node, so it stays valid on its own.
 */
#ifndef LMX_GRAPH_INDEXED_H
#define LMX_GRAPH_INDEXED_H

#include "graph.h"

typedef struct {
  int nnodes;
  lmx_node **nodes;  /* nodes[i], one reference each */
  int *in_ptr;       /* nnodes + 1 */
  int *in_entry;     /* in_ptr[nnodes] entry ids */
  int *entry_ptr;    /* nnodes + 1 */
  int nentries;
  int *heads;        /* nheads entry ids */
  int nheads;
  int *args, nargs;  /* node ids of arguments, list_arguments() order */
  int *aux, naux;    /* node ids of auxiliary states, list_auxiliary_states() order */
} lmx_igraph;

int lmx_igraph_build(const lmx_symbol *s, lmx_igraph *g);
void lmx_igraph_release(lmx_igraph *g);
/* Entry id of output `index` of node `nid`. */
static inline int lmx_igraph_entry(const lmx_igraph *g, int nid, int index) {
  return g->entry_ptr[nid] + index;
}

#endif
