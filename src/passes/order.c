/* order.c — the execution order: the op list forward() and backward() walk.
 *
 * Nodes are numbered so that every producer precedes its readers, except copy nodes
 * appended by place.c; so the order is node-id order, forward nodes first, backward
 * nodes second, with each placement copy scheduled right before its first reader
 * (gradient copies, which write into a gradient, keep their id order). Keeping
 * id order also keeps the order in which gradient contributions were created, which
 * gradient.c relies on (the first contribution writes, the later ones add).
 * Only nodes that run a kernel or a copy are steps: variables and zeros are not.
 * Invariant: order[0 .. num_fwd_order) are forward steps, the rest backward steps.
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "plan.h"

static int is_step(const lmx_pnode *n) {
  return n->kind == LMX_PN_OP || n->kind == LMX_PN_BWD || n->kind == LMX_PN_COPY;
}

static void emit(lmx_plan *p, char *done, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  for (int k = 0; k < nd->nin; k++) {
    int src = p->entry_node[p->in_entry[nd->in0 + k]];
    if (!done[src] && p->nodes[src].kind == LMX_PN_COPY) emit(p, done, src);
  }
  done[n] = 1;
  p->order[p->num_order++] = n;
}

int lmx_pass_order(lmx_plan *p) {
  lmx_free(p->order);
  p->order = lmx_alloc(((size_t)p->num_nodes + 1) * sizeof(int));
  char *done = lmx_calloc((size_t)p->num_nodes + 1, 1);
  if (!p->order || !done) {
    lmx_free(done);
    return lmx_fail_nomem("the execution order", (size_t)p->num_nodes * 5);
  }
  p->num_order = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int n = 0; n < p->num_nodes; n++) {
      const lmx_pnode *nd = &p->nodes[n];
      if (done[n] || !is_step(nd) || nd->is_bwd != pass) continue;
      /* copies made for a later reader wait for it */
      if (nd->kind == LMX_PN_COPY && p->grad_arg[nd->out0] < 0 && p->alias[nd->out0] < 0)
        continue;
      emit(p, done, n);
    }
    if (pass == 0) p->num_fwd_order = p->num_order;
  }
  /* copies nobody reads (cannot happen by construction) still run last */
  for (int n = 0; n < p->num_nodes; n++)
    if (!done[n] && is_step(&p->nodes[n])) emit(p, done, n);
  lmx_free(done);
  return LMX_OK;
}
