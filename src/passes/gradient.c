/* gradient.c — builds the backward graph (MXNet's src/nnvm/gradient.cc, executor side).
 *
 * For every forward op node that has to pass a gradient on, one backward node
 * "<fwd>_backward" runs the operator's backward kernel. Its inputs are the forward
 * node's [out_grads, inputs, outputs]; its outputs are the gradients of the forward
 * node's arguments.
 *
 * Which nodes: need_entry[e] says that someone wants the gradient of entry e: an
 * argument with grad_req != null, or an output of a node that needs a backward node and
 * reads its out_grads. A node needs a backward node when some argument entry of it needs
 * a gradient and the op is not a gradient cut (LMX_OPF_NO_GRAD: BlockGrad), and when it
 * has a gradient to start from: it ignores out_grads (loss ops: LMX_OPF_LOSS, or no
 * LMX_NEEDS_OUT_GRADS), or some output received a contribution. So zero gradients never
 * cost a node: everything upstream of a cut is pruned, as MXNet's zero propagation does.
 *
 * Heads: head i gets a head-gradient variable "_head_grad_<i>" only when its gradient is
 * wanted (the head is not a loss op's output, not behind a cut), so a symbol whose heads
 * are all losses needs no out_grads in backward().
 *
 * Summing: contributions to one gradient are accumulated in place. The first one (in
 * execution order, which is creation order here) writes (req WRITE, or the argument's
 * own req when it is the argument's gradient array), every later one adds (req ADD)
 * into the same storage (alias[] / grad_arg[]). No ElementWiseSum node and no extra
 * buffer: n contributions cost one buffer. A head-gradient variable that is itself an
 * argument's gradient, or that is not the first contribution (the same entry listed as
 * two heads), goes through a copy node (the only copies gradient.c makes).
 * Arguments with grad_req write and no contribution get zeros (arg_grad_zero); with add
 * they are left alone; with null nothing is computed for them at all.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "plan.h"

typedef struct {
  char *need_entry; /* forward entries */
  char *need_node;  /* forward nodes */
  int *first;       /* forward entry -> first contribution entry, or -1 */
} grad_state;


static void mark_needs(const lmx_plan *p, grad_state *s) {
  for (int i = 0; i < p->nargs; i++)
    if (p->arg_req[i] != LMX_REQ_NULL) s->need_entry[p->nodes[p->arg_node[i]].out0] = 1;
  for (int n = 0; n < p->num_fwd_nodes; n++) {
    const lmx_pnode *nd = &p->nodes[n];
    if (nd->kind != LMX_PN_OP || (nd->op->flags & LMX_OPF_NO_GRAD)) continue;
    int na = lmx_plan_fwd_nargs(p, n), need = 0;
    for (int k = 0; k < na; k++) need |= s->need_entry[p->in_entry[nd->in0 + k]];
    s->need_node[n] = (char)need;
    if (need && lmx_plan_consumes_og(p, n))
      for (int j = 0; j < nd->nout; j++) s->need_entry[nd->out0 + j] = 1;
  }
}

/* Argument index when forward entry t is an argument variable, else -1. */
static int arg_of(const lmx_plan *p, int t) {
  const lmx_pnode *n = &p->nodes[p->entry_node[t]];
  return n->kind == LMX_PN_VAR && n->var_kind == LMX_VAR_ARG ? n->var_index : -1;
}

/* Registers entry c as a contribution to the gradient of forward entry t: the first
 * writes, later ones add into the first's storage (or into the argument's gradient). */
static int contribute(lmx_plan *p, grad_state *s, int c, int t) {
  int a = arg_of(p, t);
  if ((a >= 0 || s->first[t] >= 0) && p->nodes[p->entry_node[c]].kind == LMX_PN_VAR) {
    /* a head gradient that is an argument's gradient, or a second head gradient of one
     * entry (a head listed twice): a copy node writes / adds it where it belongs */
    char name[160];
    snprintf(name, sizeof name, "%s_0_copy", p->nodes[p->entry_node[c]].name);
    int id;
    LMX_TRY(lmx_plan_add_node(p, LMX_PN_COPY, name, &c, 1, 1, &id));
    p->nodes[id].is_bwd = 1;
    c = p->nodes[id].out0;
  }
  if (a >= 0) {
    p->grad_arg[c] = a;
    p->req[c] = s->first[t] < 0 ? p->arg_req[a] : LMX_REQ_ADD;
  } else if (s->first[t] >= 0) {
    p->alias[c] = s->first[t];
    p->req[c] = LMX_REQ_ADD;
  } else {
    p->req[c] = LMX_REQ_WRITE;
  }
  if (s->first[t] < 0) s->first[t] = c;
  return LMX_OK;
}

static int add_head_grads(lmx_plan *p, grad_state *s) {
  for (int i = 0; i < p->nheads; i++) {
    int t = p->head_entry[i];
    if (!s->need_entry[t]) continue;
    char name[48];
    snprintf(name, sizeof name, "_head_grad_%d", i);
    int id;
    LMX_TRY(lmx_plan_add_node(p, LMX_PN_VAR, name, NULL, 0, 1, &id));
    lmx_pnode *v = &p->nodes[id];
    v->var_kind = LMX_VAR_HEADGRAD;
    v->var_index = i;
    v->like = t;
    v->is_bwd = 1;
    p->head_grad_node[i] = id;
    LMX_TRY(contribute(p, s, v->out0, t));
  }
  return LMX_OK;
}

/* The out_grad input of a backward node for forward output out_e: the first
 * contribution, or a zeros node when nothing reached it. A backward that does not read
 * its output gradients (loss ops) gets the forward output itself as a placeholder: the
 * slot is not read (lmx_plan_reads), so it costs no buffer. Before, each executor held
 * a zero-filled array the size of the output (73 MB for W3's softmax at length 60). */
static int og_entry(lmx_plan *p, grad_state *s, int fwd, int out_e, int *e) {
  if (s->first[out_e] >= 0) {
    *e = s->first[out_e];
    return LMX_OK;
  }
  if (!lmx_plan_consumes_og(p, fwd)) {
    *e = out_e;
    return LMX_OK;
  }
  int id;
  LMX_TRY(lmx_plan_add_node(p, LMX_PN_ZEROS, "zeros", NULL, 0, 1, &id));
  p->nodes[id].like = out_e;
  p->nodes[id].is_bwd = 1;
  *e = p->nodes[id].out0;
  return LMX_OK;
}

static int add_backward_node(lmx_plan *p, grad_state *s, int n) {
  const lmx_pnode f = p->nodes[n]; /* a copy: p->nodes may move */
  int nin = 2 * f.nout + f.nin, na = lmx_plan_fwd_nargs(p, n);
  int *in = lmx_alloc((size_t)nin * sizeof(int) + 1);
  if (!in) return lmx_fail_nomem("backward node inputs", (size_t)nin * sizeof(int));
  int rc = LMX_OK;
  for (int j = 0; j < f.nout && rc == LMX_OK; j++) rc = og_entry(p, s, n, f.out0 + j, &in[j]);
  for (int k = 0; k < f.nin; k++) in[f.nout + k] = p->in_entry[f.in0 + k];
  for (int j = 0; j < f.nout; j++) in[f.nout + f.nin + j] = f.out0 + j;
  char name[160];
  snprintf(name, sizeof name, "%s_backward", f.name);
  int id = -1;
  if (rc == LMX_OK) rc = lmx_plan_add_node(p, LMX_PN_BWD, name, in, nin, na, &id);
  lmx_free(in);
  LMX_TRY(rc);
  lmx_pnode *b = &p->nodes[id];
  b->op = f.op;
  b->src = f.src;
  b->fwd = n;
  b->is_bwd = 1;
  int out0 = b->out0;
  for (int k = 0; k < na; k++) {
    int t = p->in_entry[f.in0 + k];
    if (s->need_entry[t]) LMX_TRY(contribute(p, s, out0 + k, t));
    else p->req[out0 + k] = LMX_REQ_NULL;
  }
  return LMX_OK;
}

static int has_gradient(const lmx_plan *p, const grad_state *s, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  if (!lmx_plan_consumes_og(p, n)) return 1;
  for (int j = 0; j < nd->nout; j++)
    if (s->first[nd->out0 + j] >= 0) return 1;
  return 0;
}

static int build(lmx_plan *p, grad_state *s) {
  mark_needs(p, s);
  LMX_TRY(add_head_grads(p, s));
  for (int n = p->num_fwd_nodes - 1; n >= 0; n--) {
    if (!s->need_node[n] || !has_gradient(p, s, n)) continue;
    LMX_TRY(add_backward_node(p, s, n));
  }
  for (int a = 0; a < p->nargs; a++) {
    int e = p->nodes[p->arg_node[a]].out0;
    p->arg_grad_zero[a] = p->arg_req[a] == LMX_REQ_WRITE && s->first[e] < 0;
  }
  return LMX_OK;
}

int lmx_pass_gradient(lmx_plan *p) {
  int any = 0;
  for (int i = 0; i < p->nargs; i++) any |= p->arg_req[i] != LMX_REQ_NULL;
  p->has_backward = any;
  if (!any) return LMX_OK;
  int nfe = p->num_entries;
  grad_state s = {lmx_calloc((size_t)nfe + 1, 1), lmx_calloc((size_t)p->num_fwd_nodes + 1, 1),
                  lmx_alloc(((size_t)nfe + 1) * sizeof(int))};
  int rc = LMX_OK;
  if (!s.need_entry || !s.need_node || !s.first) {
    rc = lmx_fail_nomem("the gradient pass", (size_t)nfe * 6);
  } else {
    for (int e = 0; e < nfe; e++) s.first[e] = -1;
    rc = build(p, &s);
  }
  lmx_free(s.need_entry);
  lmx_free(s.need_node);
  lmx_free(s.first);
  return rc;
}
