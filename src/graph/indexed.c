/* indexed.c — builds the dense indexed graph (see indexed.h).
 *
 * Invariant: for every node i and input k, the input's node id is < i (DFS post-order),
 * and every entry id is < nentries. Arguments/aux follow list_arguments() and
 * list_auxiliary_states() (a variable is aux when some op uses it past its arguments).
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "indexed.h"

static int alloc_arrays(lmx_igraph *g, int nin) {
  size_t n = (size_t)g->nnodes + 1;
  g->in_ptr = lmx_calloc(n, sizeof(int));
  g->entry_ptr = lmx_calloc(n, sizeof(int));
  g->in_entry = lmx_calloc((size_t)nin + 1, sizeof(int));
  g->args = lmx_calloc(n, sizeof(int));
  g->aux = lmx_calloc(n, sizeof(int));
  if (!g->in_ptr || !g->entry_ptr || !g->in_entry || !g->args || !g->aux)
    return lmx_fail_nomem("an indexed graph", n * 5 * sizeof(int));
  return LMX_OK;
}

static int fill(lmx_igraph *g, const lmx_symbol *s, lmx_ptrmap *ids) {
  int nin = 0;
  for (int i = 0; i < g->nnodes; i++) {
    LMX_TRY(lmx_ptrmap_put(ids, g->nodes[i], i));
    nin += g->nodes[i]->ninputs;
  }
  LMX_TRY(alloc_arrays(g, nin));
  char *mut = lmx_calloc((size_t)g->nnodes + 1, 1);
  if (!mut) return lmx_fail_nomem("an indexed graph", (size_t)g->nnodes);
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const lmx_node *nd = g->nodes[i];
    g->entry_ptr[i + 1] = g->entry_ptr[i] + lmx_node_num_outputs(nd);
    int na = lmx_node_num_args(nd);
    for (int j = 0; j < nd->ninputs; j++) {
      int src = lmx_ptrmap_get(ids, nd->inputs[j].node);
      g->in_entry[k++] = g->entry_ptr[src] + nd->inputs[j].index;
      if (j >= na) mut[src] = 1;
    }
    g->in_ptr[i + 1] = k;
  }
  g->nentries = g->entry_ptr[g->nnodes];
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i]->op) continue;
    if (mut[i]) g->aux[g->naux++] = i;
    else g->args[g->nargs++] = i;
  }
  lmx_free(mut);
  g->heads = lmx_calloc((size_t)s->nout + 1, sizeof(int));
  if (!g->heads) return lmx_fail_nomem("an indexed graph", (size_t)s->nout * sizeof(int));
  for (int h = 0; h < s->nout; h++)
    g->heads[h] = g->entry_ptr[lmx_ptrmap_get(ids, s->out[h].node)] + s->out[h].index;
  g->nheads = s->nout;
  return LMX_OK;
}

int lmx_igraph_build(const lmx_symbol *s, lmx_igraph *g) {
  memset(g, 0, sizeof *g);
  LMX_TRY(lmx_dfs(s->out, s->nout, &g->nodes, &g->nnodes));
  for (int i = 0; i < g->nnodes; i++) lmx_node_retain(g->nodes[i]);
  lmx_ptrmap ids = {0};
  int rc = fill(g, s, &ids);
  lmx_ptrmap_release(&ids);
  if (rc != LMX_OK) lmx_igraph_release(g);
  return rc;
}

void lmx_igraph_release(lmx_igraph *g) {
  for (int i = 0; i < g->nnodes; i++) lmx_node_release(g->nodes[i]);
  lmx_free(g->nodes);
  lmx_free(g->in_ptr);
  lmx_free(g->in_entry);
  lmx_free(g->entry_ptr);
  lmx_free(g->heads);
  lmx_free(g->args);
  lmx_free(g->aux);
  memset(g, 0, sizeof *g);
}
