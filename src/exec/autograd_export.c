/* autograd_export.c — the recorded graph behind some heads as a plain node list for
 * mx.autograd.get_symbol: topological order (inputs first), each node's operator,
 * name (variables without one become var0, var1, ...), parameter strings and inputs as
 * (node index, output index). The export holds a reference to every node, so it stays
 * valid whatever happens to the arrays.
 */
#include <stdio.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/op.h"
#include "autograd_tape.h"

/* ---- export (get_symbol) ------------------------------------------------------------ */

struct lmx_ag_graph {
  int n, nh;
  node **v;
  int *head_node, *head_index;
  int *in_node, *in_index; /* concatenated per node; offsets in off */
  int *off;
  char (*auto_name)[32];
};

void lmx_ag_graph_free(lmx_ag_graph *g) {
  if (!g) return;
  for (int i = 0; i < g->n; i++) lmx_ag_ref_release(&g->v[i]->ref);
  lmx_free(g->v);
  lmx_free(g->head_node);
  lmx_free(g->head_index);
  lmx_free(g->in_node);
  lmx_free(g->in_index);
  lmx_free(g->off);
  lmx_free(g->auto_name);
  lmx_free(g);
}

int lmx_ag_export(int nh, lmx_ndarray *const *heads, lmx_ag_graph **out) {
  node *hn[256];
  if (nh > 256 || nh < 1) return lmx_fail(LMX_ERR_ARG, "get_symbol: 1 to 256 heads, got %d", nh);
  for (int h = 0; h < nh; h++) {
    hn[h] = entry_of(heads[h]);
    if (!hn[h])
      return lmx_fail(LMX_ERR_STATE, "get_symbol: head %d was not computed inside "
                      "mx.autograd.record (expected a recorded array)", h + 1);
    if (hn[h]->kind == NODE_FUNCTION)
      return lmx_fail(LMX_ERR_UNSUPPORTED, "get_symbol: head %d comes from an "
                      "mx.autograd.Function, which has no symbolic form", h + 1);
  }
  nodes order = {0};
  int rc = lmx_ag_topo(nh, hn, &order, NULL);
  lmx_ag_graph *g = lmx_calloc(1, sizeof *g);
  if (rc == LMX_OK && !g) rc = lmx_fail_nomem("a recorded graph", sizeof *g);
  if (rc != LMX_OK) {
    lmx_free(order.v);
    lmx_free(g);
    return rc;
  }
  g->v = order.v, g->n = order.n, g->nh = nh;
  int total = 0, nleaf = 0;
  for (int i = 0; i < g->n; i++) {
    node *n = g->v[i];
    lmx_ref_inc(&n->ref.rc);
    n->needs = i; /* index within the export (scratch field) */
    total += n->nin;
    if (n->kind == NODE_FUNCTION) rc = lmx_fail(LMX_ERR_UNSUPPORTED, "get_symbol: the graph "
                                                "contains an mx.autograd.Function, which has no symbolic form");
  }
  g->head_node = lmx_calloc((size_t)nh, sizeof(int));
  g->head_index = lmx_calloc((size_t)nh, sizeof(int));
  g->in_node = lmx_calloc((size_t)total + 1, sizeof(int));
  g->in_index = lmx_calloc((size_t)total + 1, sizeof(int));
  g->off = lmx_calloc((size_t)g->n + 1, sizeof(int));
  g->auto_name = lmx_calloc((size_t)g->n + 1, sizeof *g->auto_name);
  if (rc == LMX_OK && (!g->head_node || !g->head_index || !g->in_node || !g->in_index ||
                       !g->off || !g->auto_name))
    rc = lmx_fail_nomem("a recorded graph", 0);
  if (rc != LMX_OK) {
    lmx_ag_graph_free(g);
    return rc;
  }
  int at = 0;
  for (int i = 0; i < g->n; i++) {
    node *n = g->v[i];
    g->off[i] = at;
    for (int j = 0; j < n->nin; j++, at++)
      g->in_node[at] = n->src[j]->needs, g->in_index[at] = n->src_idx[j];
    if (n->kind == NODE_LEAF && !n->name) snprintf(g->auto_name[i], 32, "var%d", nleaf);
    if (n->kind == NODE_LEAF) nleaf++;
  }
  g->off[g->n] = at;
  for (int h = 0; h < nh; h++) g->head_node[h] = hn[h]->needs, g->head_index[h] = heads[h]->ag_index;
  *out = g;
  return LMX_OK;
}

int lmx_ag_graph_size(const lmx_ag_graph *g, int *nnodes, int *nheads, const int **head_node,
                      const int **head_index) {
  *nnodes = g->n, *nheads = g->nh, *head_node = g->head_node, *head_index = g->head_index;
  return LMX_OK;
}

int lmx_ag_graph_node(const lmx_ag_graph *g, int i, const char **op, const char **name,
                      int *nkeys, const char *const **keys, const char *const **vals,
                      int *nin, const int **in_node, const int **in_index) {
  if (i < 0 || i >= g->n)
    return lmx_fail(LMX_ERR_ARG, "get_symbol: node %d out of range (0..%d)", i, g->n - 1);
  node *n = g->v[i];
  *op = n->kind == NODE_OP ? n->op->name : NULL;
  *name = n->name ? n->name : n->kind == NODE_LEAF ? g->auto_name[i] : NULL;
  *nkeys = n->kind == NODE_OP ? n->nkeys : 0;
  *keys = (const char *const *)n->kv;
  *vals = n->kv ? (const char *const *)n->kv + n->nkeys : NULL;
  *nin = n->nin;
  *in_node = g->in_node + g->off[i];
  *in_index = g->in_index + g->off[i];
  return LMX_OK;
}
