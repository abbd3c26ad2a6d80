/* plan_graph.c — the plan's graph: a copy of the forward indexed graph plus appended
 * nodes (see plan.h).
 *
 * Invariants: nodes, input tables and the per-entry arrays grow by doubling through
 * lmx_realloc; the per-entry arrays are
 * grown together with the nodes (grow_entries), so a pass may append nodes at any
 * time; new entries start neutral (req WRITE, no alias, storage unset). Released by
 * lmx_plan_release, which accepts a partly built plan.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "plan.h"

static int grow(void **arr, int *cap, int need, size_t elem, const char *what) {
  if (need <= *cap) return LMX_OK;
  int nc = *cap ? *cap : 16;
  while (nc < need) nc *= 2;
  void *q = lmx_realloc(*arr, (size_t)nc * elem);
  if (!q) return lmx_fail_nomem(what, (size_t)nc * elem);
  *arr = q;
  *cap = nc;
  return LMX_OK;
}

/* The per-entry arrays, grown together. */
#define ENTRY_ARRAYS(X) X(entry_node) X(dtype) X(req) X(alias) X(grad_arg) X(sid) \
  X(inplace) X(refs)

static int grow_entries(lmx_plan *p, int need) {
  if (need <= p->cap_entries) return LMX_OK;
  int nc = p->cap_entries ? p->cap_entries : 64;
  while (nc < need) nc *= 2;
  void *q = lmx_realloc(p->shape, (size_t)nc * sizeof(lmx_shape));
  if (!q) return lmx_fail_nomem("executor plan entries", (size_t)nc * sizeof(lmx_shape));
  p->shape = q;
#define GROW_ONE(f)                                                                   \
  q = lmx_realloc(p->f, (size_t)nc * sizeof(int));                                    \
  if (!q) return lmx_fail_nomem("executor plan entries", (size_t)nc * sizeof(int));  \
  p->f = q;
  ENTRY_ARRAYS(GROW_ONE)
#undef GROW_ONE
  for (int e = p->cap_entries; e < nc; e++) {
    memset(&p->shape[e], 0, sizeof p->shape[e]);
    p->entry_node[e] = -1;
    p->dtype[e] = -1;
    p->req[e] = LMX_REQ_WRITE;
    p->alias[e] = -1;
    p->grad_arg[e] = -1;
    p->sid[e] = LMX_SID_NONE;
    p->inplace[e] = -1;
    p->refs[e] = 0;
  }
  p->cap_entries = nc;
  return LMX_OK;
}

int lmx_plan_add_node(lmx_plan *p, int kind, const char *name, const int *in, int nin,
                      int nout, int *id) {
  LMX_TRY(grow((void **)&p->nodes, &p->cap_nodes, p->num_nodes + 1, sizeof(lmx_pnode),
               "executor plan nodes"));
  LMX_TRY(grow((void **)&p->in_entry, &p->cap_in, p->num_in + nin + 1, sizeof(int),
               "executor plan inputs"));
  LMX_TRY(grow_entries(p, p->num_entries + nout + 1));
  char *nm = lmx_strdup(name ? name : "");
  if (!nm) return lmx_fail_nomem("a node name", strlen(name ? name : "") + 1);
  lmx_pnode *n = &p->nodes[p->num_nodes];
  memset(n, 0, sizeof *n);
  n->kind = (unsigned char)kind;
  n->fwd = -1;
  n->like = -1;
  n->name = nm;
  n->in0 = p->num_in;
  n->nin = nin;
  if (nin > 0) memcpy(p->in_entry + p->num_in, in, (size_t)nin * sizeof(int));
  p->num_in += nin;
  n->out0 = p->num_entries;
  n->nout = nout;
  for (int k = 0; k < nout; k++) p->entry_node[p->num_entries + k] = p->num_nodes;
  p->num_entries += nout;
  *id = p->num_nodes++;
  return LMX_OK;
}

static int copy_forward(lmx_plan *p, const lmx_igraph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    const lmx_node *nd = g->nodes[i];
    int nin = g->in_ptr[i + 1] - g->in_ptr[i], id;
    int nout = g->entry_ptr[i + 1] - g->entry_ptr[i];
    LMX_TRY(lmx_plan_add_node(p, nd->op ? LMX_PN_OP : LMX_PN_VAR, nd->name,
                              g->in_entry + g->in_ptr[i], nin, nout, &id));
    p->nodes[id].op = nd->op;
    p->nodes[id].src = nd;
  }
  p->num_fwd_nodes = g->nnodes;
  return LMX_OK;
}

int lmx_plan_from_igraph(lmx_plan *p, const lmx_igraph *g) {
  memset(p, 0, sizeof *p);
  LMX_TRY(copy_forward(p, g));
  p->nargs = g->nargs, p->naux = g->naux, p->nheads = g->nheads;
  size_t na = (size_t)g->nargs + 1, nx = (size_t)g->naux + 1, nh = (size_t)g->nheads + 1;
  p->arg_node = lmx_calloc(na, sizeof(int));
  p->aux_node = lmx_calloc(nx, sizeof(int));
  p->head_entry = lmx_calloc(nh, sizeof(int));
  p->arg_req = lmx_calloc(na, sizeof(int));
  p->arg_grad_zero = lmx_calloc(na, sizeof(int));
  p->head_grad_node = lmx_calloc(nh, sizeof(int));
  if (!p->arg_node || !p->aux_node || !p->head_entry || !p->arg_req || !p->arg_grad_zero ||
      !p->head_grad_node)
    return lmx_fail_nomem("an executor plan", (na * 4 + nx + nh * 2) * sizeof(int));
  for (int i = 0; i < g->nargs; i++) {
    p->arg_node[i] = g->args[i];
    p->nodes[g->args[i]].var_kind = LMX_VAR_ARG;
    p->nodes[g->args[i]].var_index = i;
  }
  for (int i = 0; i < g->naux; i++) {
    p->aux_node[i] = g->aux[i];
    p->nodes[g->aux[i]].var_kind = LMX_VAR_AUX;
    p->nodes[g->aux[i]].var_index = i;
  }
  for (int i = 0; i < g->nheads; i++) {
    p->head_entry[i] = g->heads[i];
    p->head_grad_node[i] = -1;
  }
  p->nctx = 0;
  return LMX_OK;
}

void lmx_plan_release(lmx_plan *p) {
  for (int i = 0; i < p->num_nodes; i++) lmx_free(p->nodes[i].name);
  void *arrays[] = {p->nodes, p->in_entry, p->entry_node, p->arg_node, p->aux_node,
                    p->head_entry, p->arg_req, p->arg_grad_zero, p->head_grad_node,
                    p->shape, p->dtype, p->req, p->alias, p->grad_arg, p->sid, p->inplace,
                    p->refs, p->order, p->ip_ptr, p->ip_pair, p->blk_bytes,
                    p->blk_ctx, p->node_ws};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) lmx_free(arrays[i]);
  memset(p, 0, sizeof *p);
}

/* Gives back the unused tail of a table grown by doubling (kept as it is when the
 * smaller block cannot be had: it is only larger). */
static void fit(void **arr, size_t bytes) {
  void *q = *arr ? lmx_realloc(*arr, bytes ? bytes : 1) : NULL;
  if (q) *arr = q;
}

void lmx_plan_drop_bind_tables(lmx_plan *p) {
  void **tables[] = {(void **)&p->shape, (void **)&p->dtype, (void **)&p->req,
                     (void **)&p->alias, (void **)&p->sid, (void **)&p->inplace,
                     (void **)&p->refs, (void **)&p->ip_ptr, (void **)&p->ip_pair,
                     (void **)&p->blk_bytes, (void **)&p->blk_ctx, (void **)&p->node_ws};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
    lmx_free(*tables[i]);
    *tables[i] = NULL;
  }
  p->cap_entries = 0; /* nothing may append entries any more */
  /* what stays, at its size: up to half of each table was room to grow */
  fit((void **)&p->nodes, (size_t)p->num_nodes * sizeof *p->nodes);
  fit((void **)&p->in_entry, (size_t)p->num_in * sizeof *p->in_entry);
  fit((void **)&p->entry_node, (size_t)p->num_entries * sizeof *p->entry_node);
  fit((void **)&p->grad_arg, (size_t)p->num_entries * sizeof *p->grad_arg);
  p->cap_nodes = p->num_nodes, p->cap_in = p->num_in;
}

int lmx_plan_fwd_nargs(const lmx_plan *p, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  return nd->src && nd->src->op ? lmx_node_num_args(nd->src) : 0;
}

unsigned lmx_plan_bwd_needs(const lmx_op *op, const lmx_node *src) {
  return op->backward_needs_of ? op->backward_needs_of(src->param) : op->backward_needs;
}

int lmx_plan_consumes_og(const lmx_plan *p, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  return !(nd->op->flags & LMX_OPF_LOSS) &&
         (lmx_plan_bwd_needs(nd->op, nd->src) & LMX_NEEDS_OUT_GRADS);
}

int lmx_plan_reads(const lmx_plan *p, int n, int k) {
  const lmx_pnode *nd = &p->nodes[n];
  if (nd->kind != LMX_PN_BWD) return 1;
  const lmx_pnode *f = &p->nodes[nd->fwd];
  unsigned needs = lmx_plan_bwd_needs(nd->op, nd->src);
  if (k < f->nout) return (needs & LMX_NEEDS_OUT_GRADS) != 0;
  if (k < f->nout + f->nin) return (needs & LMX_NEEDS_INPUTS) != 0;
  if (k == f->nout + f->nin && (needs & LMX_NEEDS_NOT_OUT0)) return 0;
  return (needs & LMX_NEEDS_OUTPUTS) != 0;
}

int lmx_plan_ctx_index(lmx_plan *p, int dev_type, int dev_id) {
  for (int i = 0; i < p->nctx; i++)
    if (p->ctx_type[i] == dev_type && p->ctx_id[i] == dev_id) return i;
  if (p->nctx == LMX_PLAN_MAX_CTX) return -1;
  p->ctx_type[p->nctx] = dev_type;
  p->ctx_id[p->nctx] = dev_id;
  return p->nctx++;
}

size_t lmx_plan_entry_bytes(const lmx_plan *p, int e) {
  int64_t n = lmx_shape_size(&p->shape[e]);
  int ds = p->dtype[e] >= 0 ? lmx_dtype_size(p->dtype[e]) : 4;
  return (size_t)n * (size_t)ds;
}
