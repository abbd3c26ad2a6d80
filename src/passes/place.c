/* place.c — a context per node (group2ctx) and copy nodes between contexts (MXNet's
 * AssignContext + nnvm PlaceDevice).
 *
 * Rules, in this order:
 *  - variables: the context the binder resolved (their array's, or their
 *    __ctx_group__'s); head-gradient variables and zeros: their forward entry's node's;
 *  - op nodes: their __ctx_group__ mapped through group2ctx; otherwise the context of
 *    their first input's producer; otherwise context 0 (the default);
 *  - backward nodes: their forward node's; gradient copies: their argument's.
 * Then, wherever a node reads an entry produced on another context, the read goes
 * through a copy node "<producer>_<index>_copy" placed on the reader's context (one per
 * (entry, context)), so every kernel reads memory of its own context. Gradients that
 * land in argument arrays are written where the array lives. With one context this pass
 * changes nothing.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "plan.h"

static int group_ctx(const lmx_node *src, int ngroups, const char *const *groups,
                     const int *group_ctx_of) {
  const char *g = src ? lmx_attrs_get(&src->attrs, "__ctx_group__") : NULL;
  if (!g) return -1;
  for (int i = 0; i < ngroups; i++)
    if (strcmp(groups[i], g) == 0) return group_ctx_of[i];
  return -1;
}

static int producer_ctx(const lmx_plan *p, int e) { return p->nodes[p->entry_node[e]].ctx; }

static void assign(lmx_plan *p, const int *arg_ctx, const int *aux_ctx, int ngroups,
                   const char *const *groups, const int *gctx) {
  for (int n = 0; n < p->num_nodes; n++) {
    lmx_pnode *nd = &p->nodes[n];
    int c = 0;
    if (nd->kind == LMX_PN_VAR) {
      if (nd->var_kind == LMX_VAR_ARG) c = arg_ctx ? arg_ctx[nd->var_index] : 0;
      else if (nd->var_kind == LMX_VAR_AUX) c = aux_ctx ? aux_ctx[nd->var_index] : 0;
      else c = producer_ctx(p, nd->like);
    } else if (nd->kind == LMX_PN_ZEROS) {
      c = producer_ctx(p, nd->like);
    } else if (nd->kind == LMX_PN_OP) {
      c = group_ctx(nd->src, ngroups, groups, gctx);
      if (c < 0) c = nd->nin > 0 ? producer_ctx(p, p->in_entry[nd->in0]) : 0;
    } else if (nd->kind == LMX_PN_BWD) {
      c = p->nodes[nd->fwd].ctx;
    } else { /* gradient copy: where the argument lives */
      int a = -1;
      for (int k = 0; k < nd->nout; k++)
        if (p->grad_arg[nd->out0 + k] >= 0) a = p->grad_arg[nd->out0 + k];
      c = a >= 0 ? p->nodes[p->arg_node[a]].ctx : producer_ctx(p, p->in_entry[nd->in0]);
    }
    nd->ctx = c;
  }
}

/* Copy node of entry e on context c: found among the copies made so far, or new. */
static int copy_of(lmx_plan *p, int first_copy, int e, int c, int is_bwd, int *out) {
  for (int n = first_copy; n < p->num_nodes; n++) {
    const lmx_pnode *nd = &p->nodes[n];
    if (nd->kind == LMX_PN_COPY && nd->ctx == c && p->in_entry[nd->in0] == e) {
      *out = nd->out0;
      return LMX_OK;
    }
  }
  const lmx_pnode *src = &p->nodes[p->entry_node[e]];
  char name[200];
  snprintf(name, sizeof name, "%s_%d_copy", src->name, e - src->out0);
  int id;
  LMX_TRY(lmx_plan_add_node(p, LMX_PN_COPY, name, &e, 1, 1, &id));
  p->nodes[id].ctx = c;
  p->nodes[id].is_bwd = (unsigned char)is_bwd;
  *out = p->nodes[id].out0;
  return LMX_OK;
}

int lmx_pass_place(lmx_plan *p, const int *arg_ctx, const int *aux_ctx, int ngroups,
                   const char *const *groups, const int *group_ctx_of) {
  if (p->nctx == 0) p->nctx = 1; /* context 0 is the default one */
  assign(p, arg_ctx, aux_ctx, ngroups, groups, group_ctx_of);
  if (p->nctx == 1) return LMX_OK;
  int nodes0 = p->num_nodes;
  for (int n = 0; n < nodes0; n++) {
    int kind = p->nodes[n].kind;
    if (kind != LMX_PN_OP && kind != LMX_PN_BWD && kind != LMX_PN_COPY) continue;
    for (int k = 0; k < p->nodes[n].nin; k++) {
      int e = p->in_entry[p->nodes[n].in0 + k], c = p->nodes[n].ctx;
      if (producer_ctx(p, e) == c || !lmx_plan_reads(p, n, k)) continue;
      if (kind == LMX_PN_COPY) continue; /* a gradient copy crosses by itself */
      int ce;
      LMX_TRY(copy_of(p, nodes0, e, c, p->nodes[n].is_bwd, &ce));
      p->in_entry[p->nodes[n].in0 + k] = ce;
    }
  }
  return LMX_OK;
}
