/* autograd_backward.c — backward over the tape (design: src/exec/autograd.c): the
 * reachable nodes in reverse topological order, each op's backward kernel through
 * lmx_imp_backward_op with its recorded is_train, gradients gathered per output in
 * slots (the first contribution stored, later ones accumulated with req add or
 * elemwise_add), marked leaves finished per grad_req, saved arrays dropped unless
 * retain_graph. Recording is paused while it runs.
 * Variables with grad_req write whose x.grad no recorded call saved (and no other
 * variable or head gradient shares) get their first contribution written by the kernel
 * straight into x.grad, later ones added there: no slot array and no final copy. As in
 * MXNet, a backward that fails part way may then leave such an x.grad partly written.
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "../ops/op.h"
#include "../tensor/dtype.h"
#include "autograd_tape.h"
#include "imperative.h"

static int slots_alloc(node *n) {
  int k = n->nout > 0 ? n->nout : 1;
  n->slot = lmx_calloc((size_t)k, sizeof *n->slot + 1); /* owned[] after the slots */
  if (!n->slot) return lmx_fail_nomem("autograd gradient slots", 0);
  n->owned = (unsigned char *)(n->slot + k);
  return LMX_OK;
}

static void slots_free(node *n) {
  int k = n->kind == NODE_LEAF ? 1 : n->nout;
  for (int i = 0; n->slot && i < k; i++) lmx_nd_release(n->slot[i]);
  lmx_free(n->slot); /* owned[] lives in the same block */
  n->slot = NULL, n->owned = NULL;
}

static int add_into(lmx_ndarray *dst, lmx_ndarray *g) {
  lmx_ndarray *in[2] = {dst, g}, *out[1] = {dst};
  int nout = 1;
  return lmx_imp_invoke("elemwise_add", 0, NULL, NULL, 2, in, &nout, out, 0);
}

static int fresh_copy(lmx_ndarray *src, lmx_ndarray **out) {
  LMX_TRY(lmx_nd_create(&src->shape, src->dtype, src->st->dev_type, src->st->dev_id, 0, out));
  int rc = lmx_nd_copy(src, *out);
  if (rc != LMX_OK) lmx_nd_release(*out);
  return rc;
}

/* Adds gradient g (a reference the callee takes; owned: the slot may be written) into
 * slot i of n. */
static int deliver(node *n, int i, lmx_ndarray *g, int owned) {
  n->reached = 1;
  if (!n->slot[i]) {
    n->slot[i] = g, n->owned[i] = (unsigned char)owned;
    return LMX_OK;
  }
  int rc = LMX_OK;
  if (!n->owned[i]) {
    lmx_ndarray *c;
    rc = fresh_copy(n->slot[i], &c);
    if (rc == LMX_OK) lmx_nd_release(n->slot[i]), n->slot[i] = c, n->owned[i] = 1;
  }
  if (rc == LMX_OK) rc = add_into(n->slot[i], g);
  lmx_nd_release(g);
  return rc;
}

static const char *node_what(const node *n) {
  return n->kind == NODE_FUNCTION ? "mx.autograd.Function" : n->op->name;
}

/* ---- direct gradients: variables whose kernels write into x.grad ------------------ */

typedef struct {
  const lmx_storage *st;
  int count, saved;
} st_mark;

/* The slot of storage st in the open-addressed table t (capacity cap, a power of 2). */
static st_mark *st_find(st_mark *t, size_t cap, const lmx_storage *st) {
  size_t i = (size_t)(((uintptr_t)st >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
  while (t[i].st && t[i].st != st) i = (i + 1) & (cap - 1);
  return &t[i];
}

static void st_saw(st_mark *t, size_t cap, const lmx_ndarray *a) {
  if (!a) return;
  st_mark *m = st_find(t, cap, a->st);
  if (m->st) m->saved = 1;
}

/* Marks n->direct on the write variables among order whose gradient array no saved
 * array, head gradient or other variable's gradient shares storage with. */
static int plan_direct(const nodes *order, int nh, lmx_ndarray *const *hg) {
  int m = 0, any = 0;
  for (int i = 0; i < order->n; i++) {
    node *n = order->v[i];
    n->direct = n->kind == NODE_LEAF && n->marked && n->needs && n->req == LMX_REQ_WRITE &&
                n->grad;
    any |= n->direct;
    m += n->kind == NODE_LEAF && n->marked && n->grad;
  }
  if (!any) return LMX_OK;
  size_t cap = 16;
  while (cap < (size_t)m * 2) cap *= 2;
  st_mark *t = lmx_calloc(cap, sizeof *t);
  if (!t) return lmx_fail_nomem("the autograd walk", cap * sizeof *t);
  for (int i = 0; i < order->n; i++) { /* every variable's gradient, whatever its req */
    node *n = order->v[i];
    if (n->kind != NODE_LEAF || !n->marked || !n->grad) continue;
    st_mark *s = st_find(t, cap, n->grad->st);
    s->st = n->grad->st, s->count++;
  }
  for (int i = 0; i < order->n; i++) {
    node *n = order->v[i];
    for (int j = 0; n->in && j < n->nin + n->naux + n->nout; j++) st_saw(t, cap, n->in[j]);
  }
  for (int h = 0; hg && h < nh; h++) st_saw(t, cap, hg[h]);
  for (int i = 0; i < order->n; i++) {
    node *n = order->v[i];
    if (!n->direct) continue;
    const st_mark *s = st_find(t, cap, n->grad->st);
    n->direct = s->count == 1 && !s->saved;
  }
  lmx_free(t);
  return LMX_OK;
}

/* Runs the backward of op node n: out grads from its slots (zeros for visible outputs
 * nothing reached), input gradients into the producers' slots. */
static int node_backward(node *n, unsigned ep) {
  lmx_ndarray *og[128] = {NULL}, *ig[128] = {NULL}, *ins[128];
  int req[128], addto[128] = {0}, direct[128] = {0}, rc = LMX_OK;
  if (n->nin + n->naux > 128 || n->nout > 128)
    return lmx_fail(LMX_ERR_UNSUPPORTED, "backward: %s: too many inputs", node_what(n));
  int loss = n->kind == NODE_OP && (n->op->flags & LMX_OPF_LOSS);
  for (int i = 0; i < n->nvis && rc == LMX_OK; i++) {
    og[i] = n->slot[i];
    if (!og[i] && !loss) { /* a visible output nothing depends on: zero gradient */
      rc = lmx_nd_create(&n->out[i]->shape, n->out[i]->dtype, n->out[i]->st->dev_type,
                         n->out[i]->st->dev_id, 1, &n->slot[i]);
      og[i] = n->slot[i], n->owned[i] = 1;
    }
  }
  for (int i = 0; i < n->nin && rc == LMX_OK; i++) {
    node *s = n->src[i];
    req[i] = s->epoch == ep && s->needs ? LMX_REQ_WRITE : LMX_REQ_NULL;
    if (req[i] == LMX_REQ_NULL) continue;
    int dup = 0;
    for (int j = 0; j < i; j++)
      if (n->src[j] == s && n->src_idx[j] == n->src_idx[i] && req[j] != LMX_REQ_NULL) dup = 1;
    lmx_ndarray *cur = s->slot[n->src_idx[i]];
    if (!dup && cur && s->owned[n->src_idx[i]] && n->kind == NODE_OP) {
      req[i] = LMX_REQ_ADD, ig[i] = cur, addto[i] = 1; /* the kernel accumulates */
    } else if (!dup && !cur && s->direct && n->kind == NODE_OP) {
      ig[i] = s->grad, direct[i] = 1; /* the kernel writes x.grad itself */
    }
  }
  if (rc != LMX_OK) return rc;
  for (int i = 0; i < n->nin + n->naux; i++) ins[i] = n->in[i];
  if (n->kind == NODE_OP) {
    rc = lmx_imp_backward_op(n->op, n->param, n->nin + n->naux, ins, n->nout, n->out, og, ig,
                             req, n->is_train);
  } else {
    for (int i = 0; i < n->nout; i++)
      if (!og[i]) return lmx_fail(LMX_ERR_ARG, "backward: mx.autograd.Function: output %d "
                                  "has no gradient", i);
    rc = n->fn(n->fn_id, n->nout, og, n->nin, ig);
    if (rc != LMX_OK) {
      for (int i = 0; i < n->nin; i++) lmx_nd_release(ig[i]);
      return lmx_fail(LMX_ERR_STATE, "backward: mx.autograd.Function: its backward failed");
    }
    for (int i = 0; i < n->nin && rc == LMX_OK; i++) {
      if (req[i] == LMX_REQ_NULL) {
        lmx_nd_release(ig[i]), ig[i] = NULL;
        continue;
      }
      if (!ig[i] || !lmx_shape_equal(&ig[i]->shape, &n->in[i]->shape)) {
        char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
        rc = lmx_fail(LMX_ERR_SHAPE, "backward: mx.autograd.Function: backward must return "
                      "a gradient of shape %s for input %d, got %s", lmx_shape_str(&n->in[i]->shape, a),
                      i + 1, ig[i] ? lmx_shape_str(&ig[i]->shape, b) : "nothing");
      }
    }
    if (rc != LMX_OK) {
      for (int i = 0; i < n->nin; i++) lmx_nd_release(ig[i]);
      return rc;
    }
  }
  for (int i = 0; i < n->nin; i++) {
    if (req[i] == LMX_REQ_NULL || addto[i]) {
      if (addto[i]) n->src[i]->reached = 1;
      continue;
    }
    if (direct[i]) { /* x.grad holds it: later contributions add there */
      if (rc == LMX_OK) {
        node *s = n->src[i];
        lmx_ref_inc(&s->grad->rc);
        s->slot[0] = s->grad, s->owned[0] = 1, s->reached = 1;
      }
      continue;
    }
    if (rc == LMX_OK) rc = deliver(n->src[i], n->src_idx[i], ig[i], 1);
    else lmx_nd_release(ig[i]);
  }
  return rc;
}

static int head_grads(int nh, node *const *hn, lmx_ndarray *const *heads,
                      lmx_ndarray *const *head_grads) {
  for (int h = 0; h < nh; h++) {
    lmx_ndarray *g = head_grads ? head_grads[h] : NULL;
    node *n = hn[h];
    int idx = heads[h]->ag_index;
    if (g) {
      if (!lmx_shape_equal(&g->shape, &heads[h]->shape) || g->dtype != heads[h]->dtype) {
        char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
        return lmx_fail(LMX_ERR_SHAPE, "backward: head_grads[%d]: expected shape %s %s (the "
                        "head's), got %s %s", h + 1, lmx_shape_str(&heads[h]->shape, a),
                        lmx_dtype_str(heads[h]->dtype), lmx_shape_str(&g->shape, b),
                        lmx_dtype_str(g->dtype));
      }
      lmx_ref_inc(&g->rc);
      LMX_TRY(deliver(n, idx, g, 0));
    } else if (n->kind == NODE_OP && (n->op->flags & LMX_OPF_LOSS)) {
      n->reached = 1;
    } else {
      LMX_TRY(lmx_nd_create(&heads[h]->shape, heads[h]->dtype, heads[h]->st->dev_type,
                            heads[h]->st->dev_id, 0, &g));
      int rc = lmx_ndarray_fill(g, 1.0);
      if (rc == LMX_OK) rc = deliver(n, idx, g, 1);
      else lmx_nd_release(g);
      LMX_TRY(rc);
    }
  }
  return LMX_OK;
}

/* Leaves: x.grad per grad_req, or the gradients asked for (var_grads). */
static int finish_leaves(const nodes *order, int nvar, lmx_ndarray *const *vars,
                         lmx_ndarray **var_grads) {
  if (nvar > 0) {
    for (int v = 0; v < nvar; v++) {
      node *n = entry_of(vars[v]);
      lmx_ndarray *s = n->slot ? n->slot[vars[v]->ag_index] : NULL;
      if (s) {
        lmx_ref_inc(&s->rc), var_grads[v] = s;
      } else {
        LMX_TRY(lmx_nd_create(&vars[v]->shape, vars[v]->dtype, vars[v]->st->dev_type,
                              vars[v]->st->dev_id, 1, &var_grads[v]));
      }
    }
    return LMX_OK;
  }
  for (int i = 0; i < order->n; i++) {
    node *n = order->v[i];
    if (n->kind != NODE_LEAF || !n->marked || n->req == LMX_REQ_NULL || !n->grad) continue;
    lmx_ndarray *s = n->slot[0];
    if (n->req == LMX_REQ_ADD) {
      if (s) LMX_TRY(add_into(n->grad, s));
    } else if (s) {
      if (s != n->grad) LMX_TRY(lmx_nd_copy(s, n->grad));
    } else {
      LMX_TRY(lmx_ndarray_fill(n->grad, 0.0));
    }
  }
  return LMX_OK;
}

static int check_graph(const nodes *order, int nvar, lmx_ndarray *const *vars, unsigned ep) {
  for (int i = 0; i < order->n; i++) {
    node *n = order->v[i];
    if (n->kind != NODE_LEAF && n->freed)
      return lmx_fail(LMX_ERR_STATE, "backward: the recorded graph through %s was freed by an "
                      "earlier backward; pass retain_graph = true to the first one to run "
                      "backward twice", node_what(n));
    if (n->kind == NODE_OP && !(n->op->flags & LMX_OPF_NO_GRAD) && n->needs) {
      int dev = n->nout > 0 && n->out[0] ? n->out[0]->st->dev_type : LMX_CPU;
      const lmx_kernel *k = lmx_op_kernel_at(lmx_op_index(n->op), dev);
      if (!k || !k->backward)
        return lmx_fail(LMX_ERR_UNSUPPORTED, "backward: %s has no backward (gradient) "
                        "kernel; expected an operator with a backward between the heads and "
                        "the variables", n->op->name);
    }
  }
  for (int v = 0; v < nvar; v++)
    if (!vars[v]->ag || entry_of(vars[v])->epoch != ep)
      return lmx_fail(LMX_ERR_ARG, "mx.autograd.grad: variables[%d] is not an input of the "
                      "recorded graph of the heads (call attach_grad on it before recording)",
                      v + 1);
  return LMX_OK;
}

static int run_backward(int nh, node *const *hn, lmx_ndarray *const *heads,
                        lmx_ndarray *const *hg, int nvar, lmx_ndarray *const *vars,
                        lmx_ndarray **var_grads, int retain, nodes *order) {
  unsigned ep;
  LMX_TRY(lmx_ag_topo(nh, hn, order, &ep));
  for (int i = 0; i < order->n; i++) { /* inputs come first in the order */
    node *n = order->v[i];
    n->reached = 0;
    if (n->kind == NODE_LEAF) {
      n->needs = nvar > 0 ? 0 : n->marked && n->req != LMX_REQ_NULL;
    } else {
      n->needs = 0;
      if (!(n->kind == NODE_OP && (n->op->flags & LMX_OPF_NO_GRAD)))
        for (int j = 0; j < n->nin; j++) n->needs |= n->src[j]->needs;
    }
  }
  if (nvar > 0) { /* mx.autograd.grad: only the variables asked for */
    for (int v = 0; v < nvar; v++)
      if (vars[v]->ag) entry_of(vars[v])->want = ep;
    for (int i = 0; i < order->n; i++) {
      node *n = order->v[i];
      n->needs = n->want == ep;
      if (n->kind == NODE_LEAF || n->needs) continue;
      if (!(n->kind == NODE_OP && (n->op->flags & LMX_OPF_NO_GRAD)))
        for (int j = 0; j < n->nin; j++) n->needs |= n->src[j]->needs;
    }
  }
  LMX_TRY(check_graph(order, nvar, vars, ep));
  for (int i = 0; i < order->n; i++) order->v[i]->direct = 0;
  if (nvar == 0) LMX_TRY(plan_direct(order, nh, hg));
  for (int i = 0; i < order->n; i++) LMX_TRY(slots_alloc(order->v[i]));
  LMX_TRY(head_grads(nh, hn, heads, hg));
  for (int i = order->n - 1; i >= 0; i--) {
    node *n = order->v[i];
    if (n->kind == NODE_LEAF) continue;
    if (n->needs && n->reached) LMX_TRY(node_backward(n, ep));
    if (!retain) lmx_ag_node_drop_saved(n), n->freed = 1;
  }
  (void)retain;
  return finish_leaves(order, nvar, vars, var_grads);
}

int lmx_ag_backward(int nh, lmx_ndarray *const *heads, lmx_ndarray *const *hg, int nvar,
                    lmx_ndarray *const *vars, lmx_ndarray **var_grads, int retain,
                    int is_train) {
  (void)is_train; /* each node runs with the is_train it was recorded with */
  node *hn[256];
  if (nh > 256) return lmx_fail(LMX_ERR_ARG, "backward: at most 256 heads, got %d", nh);
  for (int h = 0; h < nh; h++) {
    hn[h] = entry_of(heads[h]);
    if (!hn[h] || hn[h]->kind == NODE_LEAF)
      return lmx_fail(LMX_ERR_STATE, "backward: head %d is not the result of a recorded "
                      "operation (expected an array computed inside mx.autograd.record from "
                      "arrays with attach_grad)", h + 1);
  }
  int was = lmx_ag_recording;
  lmx_ag_recording = 0;
  nodes order = {0};
  int rc = run_backward(nh, hn, heads, hg, nvar, vars, var_grads, retain, &order);
  for (int i = 0; i < order.n; i++) slots_free(order.v[i]);
  lmx_free(order.v);
  for (int v = 0; rc != LMX_OK && v < nvar; v++) /* a failed call hands out nothing */
    lmx_nd_release(var_grads[v]), var_grads[v] = NULL;
  lmx_ag_recording = was;
  return rc;
}
