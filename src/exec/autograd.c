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
 * their slot per grad_req: write copies it into x.grad (zeros when nothing reached it),
 * add adds it, null skips. Without retain_graph the visited nodes drop their saved
 * arrays and are marked freed, so a second backward fails naming the operator.
 * Recording is paused during backward. Single-threaded per tape, like MXNet's.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "../ops/op.h"
#include "../tensor/dtype.h"
#include "../tensor/ndarray.h"
#include "autograd.h"
#include "imperative.h"

_Thread_local int lmx_ag_recording;
_Thread_local int lmx_ag_training;

enum { NODE_OP = 0, NODE_LEAF = 1, NODE_FUNCTION = 2 };

typedef struct node node;
struct node {
  lmx_ag_ref ref; /* first: arrays point at it */
  int kind;
  const lmx_op *op;
  void *param;
  lmx_opcall *oc;  /* owner of param when not NULL */
  char **kv;       /* nkeys keys then nkeys values, one allocation */
  int nkeys;
  char *name;      /* NULL: automatic (get_symbol) */
  int is_train;
  int freed;       /* saved arrays dropped by a backward without retain_graph */
  int nin, naux, nout, nvis;
  lmx_ndarray **in, **aux, **out; /* references, output views (one allocation) */
  node **src;      /* per input: the producing node (a reference) */
  int *src_idx;
  /* leaves */
  int marked, req;
  lmx_ndarray *grad;
  /* Lua functions (mx.autograd.Function) */
  lmx_autograd_fn fn;
  int64_t fn_id;
  /* backward scratch */
  unsigned epoch, want; /* want == epoch: a variable of mx.autograd.grad */
  int needs, reached;
  lmx_ndarray **slot;
  unsigned char *owned;
};

static unsigned epoch_now;

/* Ids of Lua functions whose nodes died, for Lua to drop (lmx_autograd_function_dead). */
static int64_t *dead_ids;
static int ndead, capdead;

static void node_drop_saved(node *n) {
  int total = n->nin + n->naux + n->nout;
  if (n->in)
    for (int i = 0; i < total; i++) lmx_nd_release(n->in[i]);
  lmx_free(n->in);
  n->in = n->aux = n->out = NULL;
}

static void node_destroy(lmx_ag_ref *r) {
  node *n = (node *)r;
  node_drop_saved(n);
  for (int i = 0; n->src && i < n->nin; i++)
    if (n->src[i]) lmx_ag_ref_release(&n->src[i]->ref);
  lmx_free(n->src); /* src_idx lives in the same block */
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
  lmx_free(n->kv);
  lmx_free(n->name);
  lmx_nd_release(n->grad);
  lmx_free(n);
}

static node *node_new(int kind) {
  node *n = lmx_calloc(1, sizeof *n);
  if (!n) return NULL;
  lmx_ref_init(&n->ref.rc);
  n->ref.destroy = node_destroy;
  n->kind = kind;
  return n;
}

static node *entry_of(const lmx_ndarray *a) { return (node *)a->ag; }

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
  n->in = lmx_calloc((size_t)total + 1, sizeof *n->in);
  n->src = lmx_calloc((size_t)nin + 1, sizeof *n->src + sizeof *n->src_idx);
  if (!n->in || !n->src) return lmx_fail_nomem("an autograd tape node", 0);
  n->src_idx = (int *)(n->src + nin + 1);
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
  node *n = node_new(NODE_OP);
  if (!n) return lmx_fail_nomem("an autograd tape node", sizeof *n);
  n->op = c->op, n->is_train = c->is_train;
  n->nvis = lmx_op_num_visible_outputs(c->op, c->param);
  n->nkeys = c->nkeys;
  size_t bytes = (size_t)(2 * c->nkeys + 1) * sizeof(char *);
  for (int i = 0; i < c->nkeys; i++) bytes += strlen(c->keys[i]) + strlen(c->vals[i]) + 2;
  n->kv = lmx_alloc(bytes);
  int rc = n->kv ? LMX_OK : lmx_fail_nomem("an autograd tape node", bytes);
  if (rc == LMX_OK) {
    char *p = (char *)(n->kv + 2 * c->nkeys + 1);
    for (int i = 0; i < 2 * c->nkeys; i++) {
      const char *s = i < c->nkeys ? c->keys[i] : c->vals[i - c->nkeys];
      size_t len = strlen(s) + 1;
      memcpy(p, s, len);
      n->kv[i] = p, p += len;
    }
    rc = node_save(n, nin, inputs, naux, aux, nout, outs);
  }
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
  node *n = node_new(NODE_FUNCTION);
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
  memcpy(ids, dead_ids + ndead - k, (size_t)k * sizeof *ids);
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
  if (grad && (!lmx_shape_equal(&grad->shape, &a->shape) || grad->dtype != a->dtype))
    return lmx_fail(LMX_ERR_SHAPE, "attach_grad: the gradient array must have the array's "
                    "shape and dtype");
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

/* ---- backward ------------------------------------------------------------------------ */

typedef struct {
  node **v;
  int n, cap;
} nodes;

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
static int topo(int nh, node *const *heads, nodes *order) {
  nodes stack = {0}, child = {0};
  int rc = LMX_OK;
  unsigned ep = ++epoch_now;
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

static int slots_alloc(node *n) {
  int k = n->nout > 0 ? n->nout : 1;
  n->slot = lmx_calloc((size_t)k, sizeof *n->slot);
  n->owned = lmx_calloc((size_t)k, 1);
  if (!n->slot || !n->owned) return lmx_fail_nomem("autograd gradient slots", 0);
  return LMX_OK;
}

static void slots_free(node *n) {
  int k = n->kind == NODE_LEAF ? 1 : n->nout;
  for (int i = 0; n->slot && i < k; i++) lmx_nd_release(n->slot[i]);
  lmx_free(n->slot);
  lmx_free(n->owned);
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

/* Runs the backward of op node n: out grads from its slots (zeros for visible outputs
 * nothing reached), input gradients into the producers' slots. */
static int node_backward(node *n, unsigned ep) {
  lmx_ndarray *og[128] = {NULL}, *ig[128] = {NULL}, *ins[128];
  int req[128], addto[128] = {0}, rc = LMX_OK;
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
      LMX_TRY(lmx_nd_copy(s, n->grad));
    } else {
      LMX_TRY(lmx_ndarray_fill(n->grad, 0.0));
    }
  }
  return LMX_OK;
}

static int check_graph(const nodes *order, int nvar, lmx_ndarray *const *vars) {
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
    if (!vars[v]->ag || entry_of(vars[v])->epoch != epoch_now)
      return lmx_fail(LMX_ERR_ARG, "mx.autograd.grad: variables[%d] is not an input of the "
                      "recorded graph of the heads (call attach_grad on it before recording)",
                      v + 1);
  return LMX_OK;
}

static int run_backward(int nh, node *const *hn, lmx_ndarray *const *heads,
                        lmx_ndarray *const *hg, int nvar, lmx_ndarray *const *vars,
                        lmx_ndarray **var_grads, int retain, nodes *order) {
  LMX_TRY(topo(nh, hn, order));
  unsigned ep = epoch_now;
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
  LMX_TRY(check_graph(order, nvar, vars));
  for (int i = 0; i < order->n; i++) LMX_TRY(slots_alloc(order->v[i]));
  LMX_TRY(head_grads(nh, hn, heads, hg));
  for (int i = order->n - 1; i >= 0; i--) {
    node *n = order->v[i];
    if (n->kind == NODE_LEAF) continue;
    if (n->needs && n->reached) LMX_TRY(node_backward(n, ep));
    if (!retain) node_drop_saved(n), n->freed = 1;
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
  lmx_ag_recording = was;
  return rc;
}

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
  int rc = topo(nh, hn, &order);
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
