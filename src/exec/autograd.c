/* autograd.c — the imperative tape: MXNet's autograd on NDArrays.
 *
 * While a thread records (lmx_ag_recording), every successful imperative call
 * (src/exec/imperative.c) appends a node: the operator descriptor, its parsed
 * parameters (the prepared call's, retained, or handed over), the parameter strings
 * (for get_symbol), references to its inputs and aux states and views of its outputs
 * (so the values backward reads stay alive however the caller's handles are released),
 * and for each input the entry that produced it. Each output array handed to the caller
 * points back at the node (lmx_ndarray.ag, reference counted): the graph lives exactly
 * as long as some array reachable from it. The node keeps its outputs as views, which
 * hold no entry, so nothing cycles.
 * Inputs that have no entry get a constant leaf (a variable without gradient), so the
 * recorded graph is complete for get_symbol. attach_grad makes an array a marked leaf
 * with its own gradient array and grad_req.
 *
 * Backward walks the nodes reachable from the heads in reverse topological order and
 * runs each op's backward kernel (the executors' kernels, through lmx_imp_backward_op)
 * with the recorded is_train. Per output the gradient arrives in a slot: the first
 * contribution is stored (written by the kernel into a fresh array), later ones are
 * accumulated by the kernel itself with req add into the owned slot, or added with
 * elemwise_add when one call feeds the same entry twice. Marked leaves finally receive
 * their slot per grad_req: write copies it into x.grad (zeros when nothing reached it;
 * when no recorded call saved x.grad, the slot is x.grad itself, written by the kernels:
 * autograd_backward.c), add adds it, null skips. Without retain_graph the visited nodes drop their saved
 * arrays and are marked freed, so a second backward fails naming the operator.
 * Recording is paused during backward. Single-threaded per tape, like MXNet's.
 * Files: this one records and keeps variables; autograd_backward.c runs backward;
 * autograd_export.c lists a graph for get_symbol; autograd_tape.h is their node.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "../ops/op.h"
#include "../tensor/dtype.h"
#include "../tensor/ndarray.h"
#include "autograd_tape.h"
#include "imperative.h"

_Thread_local int lmx_ag_recording;
_Thread_local int lmx_ag_training;

_Atomic unsigned lmx_ag_epoch;

/* Ids of Lua functions whose nodes died, for Lua to drop (lmx_autograd_function_dead). */
static int64_t *dead_ids;
static int ndead, capdead;

void lmx_ag_node_drop_saved(node *n) {
  int total = n->nin + n->naux + n->nout;
  if (n->in)
    for (int i = 0; i < total; i++) lmx_nd_release(n->in[i]);
  if (!n->packed) lmx_free(n->in);
  n->in = n->aux = n->out = NULL;
}

/* Frees one node; the references it drops may doom more nodes (node_destroy). */
static void node_free(node *n) {
  lmx_ag_node_drop_saved(n);
  for (int i = 0; n->src && i < n->nin; i++)
    if (n->src[i]) lmx_ag_ref_release(&n->src[i]->ref);
  if (!n->packed) lmx_free(n->src); /* src_idx lives in the same block */
  if (n->oc) lmx_imp_release(n->oc);
  else if (n->param) lmx_op_params_free(n->op, n->param);
  if (n->kind == NODE_FUNCTION) {
    if (ndead == capdead) {
      int cap = capdead ? capdead * 2 : 16;
      int64_t *p = lmx_realloc(dead_ids, (size_t)cap * sizeof *p);
      if (p) dead_ids = p, capdead = cap;
    }
    if (ndead < capdead) dead_ids[ndead++] = n->fn_id;
  }
  if (!n->kv_borrowed) lmx_free(n->kv);
  lmx_free(n->name);
  lmx_nd_release(n->grad);
  lmx_free(n);
}

/* A node whose last reference went. Freeing it releases its inputs' producers, which
 * can free theirs in turn: a chain of a million recorded calls would recurse a million
 * frames deep and overflow the stack. So the first destroy on a thread frees nodes from
 * a list until it is empty, and destroys that happen meanwhile only join the list. */
static _Thread_local node *t_doomed;
static _Thread_local int t_freeing;

static void node_destroy(lmx_ag_ref *r) {
  node *n = (node *)r;
  n->doomed_next = t_doomed, t_doomed = n;
  if (t_freeing) return;
  t_freeing = 1;
  while (t_doomed) {
    node *d = t_doomed;
    t_doomed = d->doomed_next;
    node_free(d);
  }
  t_freeing = 0;
}

static node *node_new(int kind) {
  node *n = lmx_calloc(1, sizeof *n);
  if (!n) return NULL;
  lmx_ref_init(&n->ref.rc);
  n->ref.destroy = node_destroy;
  n->kind = kind;
  return n;
}

/* A node with room for the saved arrays of nin inputs, naux aux states and nout outputs
 * and the inputs' producers in the same allocation (one block per recorded call). */
static node *node_new_packed(int kind, int nin, int naux, int nout) {
  size_t total = (size_t)nin + (size_t)naux + (size_t)nout + 1;
  size_t bytes = sizeof(node) + total * sizeof(lmx_ndarray *) +
                 ((size_t)nin + 1) * (sizeof(node *) + sizeof(int));
  node *n = lmx_calloc(1, bytes);
  if (!n) return NULL;
  lmx_ref_init(&n->ref.rc);
  n->ref.destroy = node_destroy;
  n->kind = kind;
  n->packed = 1;
  n->in = (lmx_ndarray **)(n + 1);
  n->src = (node **)(n->in + total);
  n->src_idx = (int *)(n->src + nin + 1);
  return n;
}

/* Makes n (output idx) the entry of a, taking one new reference. */
static void set_entry(lmx_ndarray *a, node *n, int idx) {
  lmx_ref_inc(&n->ref.rc);
  lmx_ag_ref_release(a->ag);
  a->ag = &n->ref, a->ag_index = idx;
}

static int view_of(lmx_ndarray *a, lmx_ndarray **out) {
  return lmx_nd_view(a, &a->shape, a->offset, out);
}

/* Views of the saved arrays and each input's producer (a constant leaf when none). */
static int node_save(node *n, int nin, lmx_ndarray *const *inputs, int naux,
                     lmx_ndarray *const *aux, int nout, lmx_ndarray *const *outs) {
  int total = nin + naux + nout;
  n->nin = nin, n->naux = naux, n->nout = nout;
  if (!n->packed) {
    n->in = lmx_calloc((size_t)total + 1, sizeof *n->in);
    n->src = lmx_calloc((size_t)nin + 1, sizeof *n->src + sizeof *n->src_idx);
    if (!n->in || !n->src) return lmx_fail_nomem("an autograd tape node", 0);
    n->src_idx = (int *)(n->src + nin + 1);
  }
  n->aux = n->in + nin, n->out = n->aux + naux;
  for (int i = 0; i < nin + naux; i++) { /* inputs and aux states: a reference each */
    n->in[i] = i < nin ? inputs[i] : aux[i - nin];
    if (n->in[i]) lmx_ref_inc(&n->in[i]->rc);
  }
  for (int i = nin + naux; i < total; i++) /* outputs: views (they point back at n) */
    if (outs[i - nin - naux]) LMX_TRY(view_of(outs[i - nin - naux], &n->in[i]));
  for (int i = 0; i < nin; i++) {
    lmx_ndarray *a = inputs[i];
    if (!a->ag) {
      node *leaf = node_new(NODE_LEAF);
      if (!leaf) return lmx_fail_nomem("an autograd leaf", sizeof *leaf);
      set_entry(a, leaf, 0);
      lmx_ag_ref_release(&leaf->ref); /* the array holds it now */
    }
    n->src[i] = entry_of(a), n->src_idx[i] = a->ag_index;
    lmx_ref_inc(&n->src[i]->ref.rc);
  }
  return LMX_OK;
}

int lmx_ag_record(const lmx_ag_call *c, int nin, lmx_ndarray *const *inputs, int naux,
                  lmx_ndarray *const *aux, int nout, lmx_ndarray *const *outs, int nret) {
  node *n = node_new_packed(NODE_OP, nin, naux, nout);
  if (!n) return lmx_fail_nomem("an autograd tape node", sizeof *n);
  n->op = c->op, n->is_train = c->is_train;
  n->nvis = lmx_op_num_visible_outputs(c->op, c->param);
  n->nkeys = c->nkeys;
  if (c->oc) { /* a prepared call's strings: the node retains the call (below) */
    n->kv = (char **)c->keys, n->kv_borrowed = 1;
  } else {
    n->kv = lmx_imp_kv_copy(c->nkeys, c->keys, c->vals);
  }
  int rc = n->kv ? LMX_OK : lmx_fail_nomem("an autograd tape node's parameters", 0);
  if (rc == LMX_OK) rc = node_save(n, nin, inputs, naux, aux, nout, outs);
  if (rc != LMX_OK) { /* the caller keeps its parameters */
    node_destroy(&n->ref);
    return rc;
  }
  if (c->oc) lmx_imp_retain(c->oc), n->oc = c->oc;
  n->param = c->param;
  for (int i = 0; i < nret; i++) set_entry(outs[i], n, i);
  lmx_ag_ref_release(&n->ref); /* the outputs hold it now */
  return LMX_OK;
}

int lmx_ag_check_outputs(const lmx_op *op, int nin, lmx_ndarray *const *inputs, int nret,
                         lmx_ndarray *const *outs) {
  for (int i = 0; i < nret; i++) {
    if (!outs[i]) continue;
    int clash = 0;
    for (int j = 0; j < nin; j++) clash |= outs[i]->st == inputs[j]->st;
    node *n = entry_of(outs[i]);
    if (clash || (n && n->kind == NODE_LEAF && n->marked))
      return lmx_fail(LMX_ERR_STATE, "%s: output %d writes into %s while recording; in-place "
                      "operations are not recorded (expected a new output array: leave out "
                      "`out`, or pause recording)", op->name, i + 1,
                      clash ? "the storage of an input" : "a variable (attach_grad)");
  }
  return LMX_OK;
}

int lmx_ag_function_record(int nin, lmx_ndarray *const *inputs, int nout,
                           lmx_ndarray *const *outputs, lmx_autograd_fn fn, int64_t id) {
  node *n = node_new_packed(NODE_FUNCTION, nin, 0, nout);
  if (!n) return lmx_fail_nomem("an autograd tape node", sizeof *n);
  n->fn = fn, n->fn_id = id, n->nvis = nout, n->is_train = lmx_ag_training;
  int rc = node_save(n, nin, inputs, 0, NULL, nout, outputs);
  if (rc != LMX_OK) {
    n->kind = NODE_OP; /* not registered with Lua yet: no dead id */
    node_destroy(&n->ref);
    return rc;
  }
  for (int i = 0; i < nout; i++) set_entry(outputs[i], n, i);
  lmx_ag_ref_release(&n->ref);
  return LMX_OK;
}

int lmx_ag_function_dead(int64_t *ids, int cap, int *n) {
  int k = ndead < cap ? ndead : cap;
  if (k > 0) memcpy(ids, dead_ids + ndead - k, (size_t)k * sizeof *ids);
  ndead -= k;
  *n = k;
  return LMX_OK;
}

int lmx_ag_set_state(int recording, int training, int *was_recording, int *was_training) {
  if (was_recording) *was_recording = lmx_ag_recording;
  if (was_training) *was_training = lmx_ag_training;
  if (recording >= 0) lmx_ag_recording = recording != 0;
  if (training >= 0) lmx_ag_training = training != 0;
  return LMX_OK;
}

int lmx_ag_mark(lmx_ndarray *a, int req, lmx_ndarray *grad) {
  if (req < LMX_REQ_NULL || req > LMX_REQ_ADD || req == LMX_REQ_INPLACE)
    return lmx_fail(LMX_ERR_ARG, "attach_grad: grad_req: expected 'write', 'add' or 'null', "
                    "got code %d", req);
  if (grad && (!lmx_shape_equal(&grad->shape, &a->shape) || grad->dtype != a->dtype)) {
    char e[LMX_SHAPE_STRCAP], g[LMX_SHAPE_STRCAP];
    return lmx_fail(LMX_ERR_SHAPE, "mark_variables: gradient: expected shape %s %s (the "
                    "variable's), got %s %s", lmx_shape_str(&a->shape, e),
                    lmx_dtype_str(a->dtype), lmx_shape_str(&grad->shape, g),
                    lmx_dtype_str(grad->dtype));
  }
  node *leaf = node_new(NODE_LEAF);
  if (!leaf) return lmx_fail_nomem("an autograd leaf", sizeof *leaf);
  if (grad) {
    lmx_ref_inc(&grad->rc);
  } else {
    int rc = lmx_nd_create(&a->shape, a->dtype, a->st->dev_type, a->st->dev_id, 1, &grad);
    if (rc != LMX_OK) {
      node_destroy(&leaf->ref);
      return rc;
    }
  }
  leaf->marked = 1, leaf->req = req, leaf->grad = grad;
  set_entry(a, leaf, 0);
  lmx_ag_ref_release(&leaf->ref);
  return LMX_OK;
}

int lmx_ag_get_grad(lmx_ndarray *a, lmx_ndarray **grad, int *req) {
  node *n = entry_of(a);
  *grad = NULL;
  if (req) *req = -1;
  if (!n || n->kind != NODE_LEAF || !n->marked) return LMX_OK;
  if (req) *req = n->req;
  if (n->grad) lmx_ref_inc(&n->grad->rc), *grad = n->grad;
  return LMX_OK;
}

int lmx_ag_info(lmx_ndarray *a, int *kind, const char **op_name) {
  node *n = entry_of(a);
  *kind = !n ? -1 : n->kind == NODE_LEAF ? (n->marked ? 1 : 2) : n->kind == NODE_OP ? 0 : 3;
  if (op_name) *op_name = n && n->kind == NODE_OP ? n->op->name : NULL;
  return LMX_OK;
}

int lmx_ag_detach(lmx_ndarray *a, lmx_ndarray **out) { return view_of(a, out); }

int lmx_ag_set_name(lmx_ndarray *a, const char *name) {
  node *n = entry_of(a);
  if (!n) {
    LMX_TRY(lmx_ag_mark(a, LMX_REQ_NULL, NULL));
    n = entry_of(a);
    n->marked = 0;
    lmx_nd_release(n->grad);
    n->grad = NULL;
  }
  size_t len = strlen(name) + 1;
  char *s = lmx_alloc(len);
  if (!s) return lmx_fail_nomem("a node name", len);
  memcpy(s, name, len);
  lmx_free(n->name);
  n->name = s;
  return LMX_OK;
}

/* ---- the walk (backward and export) ------------------------------------------------ */

static int push(nodes *l, node *n) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 64;
    node **p = lmx_realloc(l->v, (size_t)cap * sizeof *p);
    if (!p) return lmx_fail_nomem("the autograd walk", (size_t)cap * sizeof *p);
    l->v = p, l->cap = cap;
  }
  l->v[l->n++] = n;
  return LMX_OK;
}

/* Post-order (inputs first) of the nodes reachable from the heads, with an explicit
 * stack (deep chains must not overflow the C stack). Marks them with a fresh epoch. */
int lmx_ag_topo(int nh, node *const *heads, nodes *order, unsigned *epoch) {
  nodes stack = {0}, child = {0};
  int rc = LMX_OK;
  unsigned ep = atomic_fetch_add(&lmx_ag_epoch, 1) + 1; /* threads walk their own tapes */
  if (epoch) *epoch = ep;
  for (int h = 0; h < nh && rc == LMX_OK; h++) {
    if (heads[h]->epoch == ep) continue;
    heads[h]->epoch = ep;
    rc = push(&stack, heads[h]);
    if (rc == LMX_OK) rc = push(&child, NULL);
    while (rc == LMX_OK && stack.n > 0) {
      node *n = stack.v[stack.n - 1];
      intptr_t i = (intptr_t)child.v[child.n - 1];
      if (i < n->nin && n->src) {
        child.v[child.n - 1] = (node *)(i + 1);
        node *s = n->src[i];
        if (s->epoch != ep) {
          s->epoch = ep;
          rc = push(&stack, s);
          if (rc == LMX_OK) rc = push(&child, NULL);
        }
      } else {
        stack.n--, child.n--;
        rc = push(order, n);
      }
    }
  }
  lmx_free(stack.v);
  lmx_free(child.v);
  return rc;
}
