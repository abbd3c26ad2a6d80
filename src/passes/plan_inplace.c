/* plan_inplace.c — candidate in-place pairs: which output of a node may reuse the
 * storage of which input (MXNet's FInplaceOption, checked against shapes here).
 *
 * A pair (input k, output j) from the operator's descriptor is a candidate when the
 * input is an argument (not an aux state), the two entries have the same number of
 * elements and the same element size, and the input lives on the node's context.
 * Whether the input's storage is really free to take (this node is its last reader,
 * it is a planned buffer and not a bound array) depends on liveness, so plan_memory.c
 * decides during its walk. Backward nodes take the descriptor's backward_inplace
 * pairs {out_grad j, input gradient k}: the gradient may overwrite the out_grad it is
 * computed from, when the gradient is a plain write into a planned buffer (not an
 * accumulation, not an argument's gradient array). Result: a CSR table over node ids,
 * pairs given as {input slot of the node, output index}.
 */
#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "plan.h"

static int candidate(const lmx_plan *p, int n, int k, int j) {
  const lmx_pnode *nd = &p->nodes[n];
  int nk = nd->kind == LMX_PN_BWD ? p->nodes[nd->fwd].nout : lmx_plan_fwd_nargs(p, n);
  if (k < 0 || j < 0 || k >= nk || j >= nd->nout) return 0;
  if (nd->kind == LMX_PN_BWD) {
    int e = nd->out0 + j;
    if (!lmx_plan_consumes_og(p, nd->fwd)) return 0; /* its og slot is a placeholder */
    if (p->req[e] != LMX_REQ_WRITE || p->alias[e] >= 0 || p->grad_arg[e] >= 0) return 0;
  }
  int ein = p->in_entry[nd->in0 + k], eout = nd->out0 + j;
  if (lmx_shape_size(&p->shape[ein]) != lmx_shape_size(&p->shape[eout])) return 0;
  if (lmx_dtype_size(p->dtype[ein]) != lmx_dtype_size(p->dtype[eout])) return 0;
  return p->nodes[p->entry_node[ein]].ctx == nd->ctx;
}

int lmx_pass_inplace(lmx_plan *p, int enabled) {
  int total = 0;
  for (int n = 0; n < p->num_nodes; n++) {
    if (p->nodes[n].kind == LMX_PN_OP) total += p->nodes[n].op->num_inplace;
    if (p->nodes[n].kind == LMX_PN_BWD) total += p->nodes[n].op->num_backward_inplace;
  }
  lmx_free(p->ip_ptr);
  lmx_free(p->ip_pair);
  p->ip_ptr = lmx_calloc((size_t)p->num_nodes + 1, sizeof(int));
  p->ip_pair = lmx_alloc(((size_t)total + 1) * sizeof *p->ip_pair);
  if (!p->ip_ptr || !p->ip_pair)
    return lmx_fail_nomem("in-place pairs", (size_t)(p->num_nodes + total * 2) * sizeof(int));
  int at = 0;
  for (int n = 0; n < p->num_nodes; n++) {
    p->ip_ptr[n] = at;
    const lmx_pnode *nd = &p->nodes[n];
    if (!enabled || (nd->kind != LMX_PN_OP && nd->kind != LMX_PN_BWD)) continue;
    int bwd = nd->kind == LMX_PN_BWD;
    int count = bwd ? nd->op->num_backward_inplace : nd->op->num_inplace;
    for (int i = 0; i < count; i++) {
      const int *pr = bwd ? nd->op->backward_inplace[i] : nd->op->inplace[i];
      int k = pr[0], j = pr[1];
      if (!candidate(p, n, k, j)) continue;
      p->ip_pair[at][0] = k;
      p->ip_pair[at][1] = j;
      at++;
    }
  }
  p->ip_ptr[p->num_nodes] = at;
  return LMX_OK;
}
