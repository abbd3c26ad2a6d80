/* bind.c — the binder (configuration step by step) and the bind pipeline.
 *
 * A binder collects what bind / simple_bind need, one call at a time: arrays per
 * argument (by name or position), gradient arrays and requests, aux states, shapes and
 * dtypes (simple_bind), group2ctx entries, a shared executor, options. lmx_exec_bind
 * then runs the pipeline once (MXNet's GraphExecutor::Init / FinishInitGraph):
 *   common-subexpression elimination → indexed graph → gradient → placement → kernels
 *   (every node's device has one: lmx_op_require_kernel) → order → shapes and dtypes →
 *   in-place candidates → memory plan → arrays and steps.
 * Invariants: the binder owns one reference to each array it was given and to the
 * symbol; a failed bind releases everything it made (the executor under construction
 * is released through the same path as a bound one), so a failure leaks nothing and
 * leaves the binder usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "../tensor/dtype.h"
#include "exec.h"

int lmx_binder_create(lmx_symbol *sym, int dev_type, int dev_id, lmx_binder **out) {
  const lmx_device_ops *dev;
  LMX_TRY(lmx_device_lookup(dev_type, dev_id, &dev));
  lmx_binder *b = lmx_calloc(1, sizeof *b);
  if (!b) return lmx_fail_nomem("a binder", sizeof *b);
  int rc = lmx_igraph_build(sym, &b->g);
  if (rc != LMX_OK) {
    lmx_free(b);
    return rc;
  }
  size_t na = (size_t)b->g.nargs + 1, nx = (size_t)b->g.naux + 1;
  b->args = lmx_calloc(na, sizeof *b->args);
  b->grads = lmx_calloc(na, sizeof *b->grads);
  b->aux = lmx_calloc(nx, sizeof *b->aux);
  b->req = lmx_calloc(na, sizeof(int));
  b->req_set = lmx_calloc(na, sizeof(int));
  b->shape = lmx_calloc(na + nx, sizeof(lmx_shape));
  b->dtype = lmx_calloc(na + nx, sizeof(int));
  if (!b->args || !b->grads || !b->aux || !b->req || !b->req_set || !b->shape || !b->dtype) {
    lmx_binder_destroy(b);
    return lmx_fail_nomem("a binder", (na + nx) * (sizeof(lmx_shape) + 32));
  }
  for (size_t i = 0; i < na + nx; i++) b->dtype[i] = -1;
  lmx_sym_retain(sym);
  b->sym = sym;
  b->dev_type = dev_type, b->dev_id = dev_id;
  *out = b;
  return LMX_OK;
}

void lmx_binder_destroy(lmx_binder *b) {
  if (!b) return;
  for (int i = 0; b->args && i < b->g.nargs; i++) lmx_nd_release(b->args[i]);
  for (int i = 0; b->grads && i < b->g.nargs; i++) lmx_nd_release(b->grads[i]);
  for (int i = 0; b->aux && i < b->g.naux; i++) lmx_nd_release(b->aux[i]);
  for (int i = 0; i < b->ngroups; i++) lmx_free(b->groups[i]);
  void *arrays[] = {b->args, b->grads, b->aux, b->req, b->req_set, b->shape, b->dtype,
                    b->groups, b->group_type, b->group_id};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) lmx_free(arrays[i]);
  if (b->shared) lmx_exec_release(b->shared);
  lmx_pool_release(b->pool);
  lmx_sym_release(b->sym);
  lmx_igraph_release(&b->g);
  lmx_free(b);
}

static void list_names(const lmx_binder *b, int aux, char *buf, size_t cap) {
  size_t at = 0;
  int n = aux ? b->g.naux : b->g.nargs;
  buf[0] = '\0';
  for (int i = 0; i < n && at + 1 < cap; i++) {
    const char *nm = b->g.nodes[aux ? b->g.aux[i] : b->g.args[i]]->name;
    int w = snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", nm);
    if (w < 0) break;
    at += (size_t)w;
  }
}

int lmx_binder_find(const lmx_binder *b, const char *name, int index, int aux, int *out) {
  int n = aux ? b->g.naux : b->g.nargs;
  const char *what = aux ? "auxiliary state" : "argument";
  if (!name) {
    if (index < 0 || index >= n)
      return lmx_fail(LMX_ERR_ARG, "bind: %s index %d is out of range (the symbol has %d)",
                      what, index, n);
    *out = index;
    return LMX_OK;
  }
  for (int i = 0; i < n; i++) {
    if (strcmp(b->g.nodes[aux ? b->g.aux[i] : b->g.args[i]]->name, name) == 0) {
      *out = i;
      return LMX_OK;
    }
  }
  char list[512];
  list_names(b, aux, list, sizeof list);
  return lmx_fail(LMX_ERR_NOTFOUND, "bind: unknown %s '%s' (the symbol's %ss: %s)", what,
                  name, what, list);
}

int lmx_binder_group(lmx_binder *b, const char *group, int dev_type, int dev_id) {
  const lmx_device_ops *dev;
  LMX_TRY(lmx_device_lookup(dev_type, dev_id, &dev));
  for (int i = 0; i < b->ngroups; i++) {
    if (strcmp(b->groups[i], group) == 0) {
      b->group_type[i] = dev_type, b->group_id[i] = dev_id;
      return LMX_OK;
    }
  }
  size_t n = (size_t)b->ngroups + 1;
  char **g = lmx_realloc(b->groups, n * sizeof *g);
  if (g) b->groups = g;
  int *t = lmx_realloc(b->group_type, n * sizeof *t);
  if (t) b->group_type = t;
  int *d = lmx_realloc(b->group_id, n * sizeof *d);
  if (d) b->group_id = d;
  char *s = g && t && d ? lmx_strdup(group) : NULL;
  if (!s) return lmx_fail_nomem("a group2ctx entry", n * 16);
  b->groups[b->ngroups] = s;
  b->group_type[b->ngroups] = dev_type;
  b->group_id[b->ngroups] = dev_id;
  b->ngroups++;
  return LMX_OK;
}

/* ---- the pipeline ------------------------------------------------------------------- */

static int arr_ctx(lmx_plan *p, const lmx_ndarray *a, const char *name, int ngroups,
                   const char *what, int *out) {
  int c = lmx_plan_ctx_index(p, a->st->dev_type, a->st->dev_id);
  *out = c;
  if (c < 0) return lmx_fail(LMX_ERR_ARG, "bind: too many contexts (at most %d)", LMX_PLAN_MAX_CTX);
  if (c != 0 && ngroups == 0)
    return lmx_fail(LMX_ERR_DEVICE, "bind: %s '%s' is on %s(%d) but the executor's context is "
                    "%s(%d); all arrays must be in the executor's context unless group2ctx is "
                    "given", what, name, a->st->dev->name, a->st->dev_id,
                    lmx_device_type_name(p->ctx_type[0]), p->ctx_id[0]);
  return LMX_OK;
}

/* Context index of a variable without an array: its __ctx_group__'s, else the default. */
static int var_group_ctx(const lmx_binder *b, lmx_plan *p, const lmx_node *v, const int *gctx) {
  const char *g = lmx_attrs_get(&v->attrs, "__ctx_group__");
  for (int i = 0; g && i < b->ngroups; i++)
    if (strcmp(b->groups[i], g) == 0) return gctx[i];
  (void)p;
  return 0;
}

static int resolve_reqs(const lmx_binder *b, lmx_executor *x, int simple) {
  lmx_plan *p = &x->plan;
  for (int i = 0; i < p->nargs; i++) {
    const char *nm = b->g.nodes[b->g.args[i]]->name;
    if (!b->args[i] && !simple)
      return lmx_fail(LMX_ERR_ARG, "bind: argument '%s' is missing: no array was given for it",
                      nm);
    int req = b->req_set[i] ? b->req[i] : LMX_REQ_WRITE;
    if (!simple && !b->grads[i]) req = LMX_REQ_NULL;
    p->arg_req[i] = req;
  }
  for (int i = 0; i < p->naux && !simple; i++)
    if (!b->aux[i])
      return lmx_fail(LMX_ERR_ARG, "bind: auxiliary state '%s' is missing: no array was given "
                      "for it", b->g.nodes[b->g.aux[i]]->name);
  return LMX_OK;
}

static int place(const lmx_binder *b, lmx_executor *x) {
  lmx_plan *p = &x->plan;
  int gctx[LMX_PLAN_MAX_CTX], na = p->nargs, nx = p->naux;
  lmx_plan_ctx_index(p, b->dev_type, b->dev_id);
  for (int i = 0; i < b->ngroups && i < LMX_PLAN_MAX_CTX; i++) {
    gctx[i] = lmx_plan_ctx_index(p, b->group_type[i], b->group_id[i]);
    if (gctx[i] < 0) return lmx_fail(LMX_ERR_ARG, "bind: too many contexts");
  }
  int *actx = lmx_calloc((size_t)na + (size_t)nx + 1, sizeof(int));
  if (!actx) return lmx_fail_nomem("argument contexts", (size_t)(na + nx) * sizeof(int));
  int rc = LMX_OK;
  for (int i = 0; i < na + nx && rc == LMX_OK; i++) {
    const lmx_node *v = p->nodes[i < na ? p->arg_node[i] : p->aux_node[i - na]].src;
    lmx_ndarray *a = i < na ? b->args[i] : b->aux[i - na];
    if (a) {
      rc = arr_ctx(p, a, v->name, b->ngroups, i < na ? "argument" : "auxiliary state", &actx[i]);
    } else {
      actx[i] = var_group_ctx(b, p, v, gctx);
    }
  }
  if (rc == LMX_OK && b->ngroups > LMX_PLAN_MAX_CTX) rc = lmx_fail(LMX_ERR_ARG, "bind: too many groups");
  if (rc == LMX_OK)
    rc = lmx_pass_place(p, actx, actx + na, b->ngroups, (const char *const *)b->groups, gctx);
  lmx_free(actx);
  return rc;
}

/* Every operator node must have a kernel in its device's table (a backward kernel for
 * backward nodes): "no kernel for Convolution (node 'conv1') on gpu(0)". */
static int check_kernels(const lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  for (int n = 0; n < p->num_nodes; n++) {
    const lmx_pnode *nd = &p->nodes[n];
    if (nd->kind != LMX_PN_OP && nd->kind != LMX_PN_BWD) continue;
    LMX_TRY(lmx_op_require_kernel(nd->op, p->ctx_type[nd->ctx], p->ctx_id[nd->ctx],
                                  nd->src->name, nd->kind == LMX_PN_BWD));
  }
  return LMX_OK;
}

static int seeded_shapes(const lmx_binder *b, lmx_executor *x, const lmx_igraph *g, int simple) {
  lmx_shape *sh = lmx_calloc((size_t)g->nentries + 1, sizeof *sh);
  int *dt = lmx_alloc(((size_t)g->nentries + 1) * sizeof(int));
  if (!sh || !dt) {
    lmx_free(sh);
    lmx_free(dt);
    return lmx_fail_nomem("shape inference", (size_t)g->nentries * sizeof *sh);
  }
  for (int e = 0; e < g->nentries; e++) dt[e] = -1;
  int na = g->nargs, typed = 0; /* MXNet: float32 by default only when no type_dict */
  for (int i = 0; i < na + g->naux; i++) typed |= b->dtype[i] >= 0;
  for (int i = 0; i < na + g->naux; i++) {
    int nid = i < na ? g->args[i] : g->aux[i - na], e = g->entry_ptr[nid];
    lmx_ndarray *a = i < na ? b->args[i] : b->aux[i - na];
    if (a) {
      sh[e] = a->shape, dt[e] = a->dtype;
      continue;
    }
    if (b->shape[i].ndim > 0) sh[e] = b->shape[i];
    if (b->dtype[i] >= 0) dt[e] = b->dtype[i];
    else if (simple && !typed && i < na && !lmx_attrs_get(&g->nodes[nid]->attrs, "__dtype__"))
      dt[e] = LMX_FLOAT32;
  }
  int rc = lmx_pass_shapes(&x->plan, g, sh, dt);
  lmx_free(sh);
  lmx_free(dt);
  return rc;
}

static int share_enabled(const lmx_binder *b) {
  const char *env = getenv("LUAMX_EXEC_NO_SHARE");
  return !b->no_share && !(env && strcmp(env, "1") == 0);
}

/* Arrays simple_bind allocates: zero-filled, on the variable's context. */
static int alloc_missing(const lmx_binder *b, lmx_executor *x) {
  lmx_plan *p = &x->plan;
  for (int i = 0; i < p->nargs + p->naux; i++) {
    int is_arg = i < p->nargs, n = is_arg ? p->arg_node[i] : p->aux_node[i - p->nargs];
    int e = p->nodes[n].out0, c = p->nodes[n].ctx;
    lmx_ndarray **slot = is_arg ? &x->args[i] : &x->aux[i - p->nargs];
    lmx_ndarray *given = is_arg ? b->args[i] : b->aux[i - p->nargs];
    if (given) {
      lmx_ref_inc(&given->rc);
      *slot = given;
    } else {
      LMX_TRY(lmx_nd_create(&p->shape[e], p->dtype[e], p->ctx_type[c], p->ctx_id[c], 1, slot));
    }
    if (!is_arg || p->arg_req[i] == LMX_REQ_NULL) continue;
    if (b->grads[i]) {
      lmx_ref_inc(&b->grads[i]->rc);
      x->grads[i] = b->grads[i];
    } else {
      LMX_TRY(lmx_nd_create(&p->shape[e], p->dtype[e], p->ctx_type[c], p->ctx_id[c], 1,
                            &x->grads[i]));
    }
  }
  return LMX_OK;
}

static int check_grads(const lmx_binder *b, lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  for (int i = 0; i < p->nargs; i++) {
    lmx_ndarray *gr = b->grads[i];
    int e = p->nodes[p->arg_node[i]].out0;
    if (!gr || p->arg_req[i] == LMX_REQ_NULL) continue;
    char s1[LMX_SHAPE_STRCAP], s2[LMX_SHAPE_STRCAP];
    if (!lmx_shape_equal(&gr->shape, &p->shape[e]))
      return lmx_fail(LMX_ERR_SHAPE, "bind: gradient array of argument '%s': expected shape %s, "
                      "got %s", p->nodes[p->arg_node[i]].name, lmx_shape_str(&p->shape[e], s1),
                      lmx_shape_str(&gr->shape, s2));
    if (gr->dtype != p->dtype[e])
      return lmx_fail(LMX_ERR_DTYPE, "bind: gradient array of argument '%s': expected dtype %s, "
                      "got %s", p->nodes[p->arg_node[i]].name, lmx_dtype_str(p->dtype[e]),
                      lmx_dtype_str(gr->dtype));
    int c = p->nodes[p->arg_node[i]].ctx; /* kernels write the gradient on this device */
    if (gr->st->dev_type != p->ctx_type[c] || gr->st->dev_id != p->ctx_id[c])
      return lmx_fail(LMX_ERR_DEVICE, "bind: gradient array of argument '%s' is on %s(%d) but "
                      "the argument is on %s(%d): give a gradient array on %s(%d)",
                      p->nodes[p->arg_node[i]].name, gr->st->dev->name, gr->st->dev_id,
                      lmx_device_type_name(p->ctx_type[c]), p->ctx_id[c],
                      lmx_device_type_name(p->ctx_type[c]), p->ctx_id[c]);
  }
  return LMX_OK;
}

static int keep_config(const lmx_binder *b, lmx_executor *x) {
  x->dev_type = b->dev_type, x->dev_id = b->dev_id;
  x->no_share = b->no_share;
  size_t n = (size_t)b->ngroups + 1;
  x->groups = lmx_calloc(n, sizeof *x->groups);
  x->group_type = lmx_calloc(n, sizeof(int));
  x->group_id = lmx_calloc(n, sizeof(int));
  if (!x->groups || !x->group_type || !x->group_id) return lmx_fail_nomem("group2ctx", n * 16);
  for (int i = 0; i < b->ngroups; i++) {
    x->groups[i] = lmx_strdup(b->groups[i]);
    if (!x->groups[i]) return lmx_fail_nomem("group2ctx", 16);
    x->ngroups = i + 1;
    x->group_type[i] = b->group_type[i], x->group_id[i] = b->group_id[i];
  }
  return LMX_OK;
}

static int names(lmx_executor *x, const lmx_igraph *g) {
  const lmx_plan *p = &x->plan;
  size_t na = (size_t)p->nargs + 1, nx = (size_t)p->naux + 1, nh = (size_t)p->nheads + 1;
  x->arg_names = lmx_calloc(na, sizeof(char *));
  x->aux_names = lmx_calloc(nx, sizeof(char *));
  x->out_names = lmx_calloc(nh, sizeof(char *));
  if (!x->arg_names || !x->aux_names || !x->out_names) return lmx_fail_nomem("names", nh * 8);
  for (int i = 0; i < p->nargs; i++)
    if (!(x->arg_names[i] = lmx_strdup(g->nodes[g->args[i]]->name))) return lmx_fail_nomem("names", 16);
  for (int i = 0; i < p->naux; i++)
    if (!(x->aux_names[i] = lmx_strdup(g->nodes[g->aux[i]]->name))) return lmx_fail_nomem("names", 16);
  for (int i = 0; i < p->nheads; i++) {
    lmx_sbuf sb = LMX_SBUF_INIT;
    lmx_sym_output_name(x->sym, i, &sb);
    x->out_names[i] = sb.failed ? NULL : lmx_strdup(lmx_sbuf_str(&sb));
    lmx_sbuf_release(&sb);
    if (!x->out_names[i]) return lmx_fail_nomem("output names", 16);
  }
  return LMX_OK;
}

static int alloc_exec(const lmx_binder *b, lmx_executor **out) {
  lmx_executor *x = lmx_calloc(1, sizeof *x);
  if (!x) return lmx_fail_nomem("an executor", sizeof *x);
  lmx_ref_init(&x->rc);
  lmx_sym_retain(b->sym);
  x->sym = b->sym;
  *out = x;
  size_t na = (size_t)b->g.nargs + 1, nx = (size_t)b->g.naux + 1;
  x->args = lmx_calloc(na, sizeof *x->args);
  x->grads = lmx_calloc(na, sizeof *x->grads);
  x->aux = lmx_calloc(nx, sizeof *x->aux);
  x->grad_req = lmx_calloc(na, sizeof(int));
  if (!x->args || !x->grads || !x->aux || !x->grad_req)
    return lmx_fail_nomem("an executor", (na * 3 + nx) * sizeof(void *));
  return keep_config(b, x);
}

/* The graph that runs: common subexpressions merged, indexed into g, planned. The plan's
 * nodes point at the bound symbol's nodes (x->sym keeps them), never at the copies CSE
 * made (a copy differs only in its inputs, which the plan has from g), so the merged
 * symbol and its copies go when bind returns: each bucket keeps no second graph. */
static int cse_plan(lmx_binder *b, lmx_executor *x, lmx_igraph *g) {
  lmx_symbol *opt = NULL;
  lmx_cse_origins orig;
  int rc = lmx_pass_cse(b->sym, &opt, &orig);
  if (rc == LMX_OK) rc = lmx_igraph_build(opt, g);
  if (rc == LMX_OK && (g->nargs != b->g.nargs || g->naux != b->g.naux))
    rc = lmx_fail(LMX_ERR_INTERNAL, "bind: common-subexpression elimination changed the "
                  "variables (%d/%d arguments)", g->nargs, b->g.nargs);
  if (rc == LMX_OK) rc = lmx_plan_from_igraph(&x->plan, g);
  for (int i = 0; rc == LMX_OK && i < x->plan.num_fwd_nodes; i++)
    x->plan.nodes[i].src = lmx_cse_origin(&orig, x->plan.nodes[i].src);
  lmx_cse_origins_release(&orig);
  lmx_sym_release(opt);
  return rc;
}

static int pipeline(lmx_binder *b, lmx_executor *x, lmx_igraph *g, int simple) {
  LMX_TRY(cse_plan(b, x, g));
  LMX_TRY(names(x, g));
  LMX_TRY(resolve_reqs(b, x, simple));
  LMX_TRY(lmx_pass_gradient(&x->plan));
  LMX_TRY(place(b, x));
  LMX_TRY(check_kernels(x));
  LMX_TRY(lmx_pass_order(&x->plan));
  LMX_TRY(seeded_shapes(b, x, g, simple));
  LMX_TRY(check_grads(b, x));
  int share = share_enabled(b);
  LMX_TRY(lmx_pass_inplace(&x->plan, share));
  LMX_TRY(lmx_pass_memory(&x->plan, share));
  for (int i = 0; i < x->plan.nargs; i++) x->grad_req[i] = x->plan.arg_req[i];
  LMX_TRY(alloc_missing(b, x));
  if (b->pool) x->pool = b->pool, lmx_pool_retain(b->pool);
  else if (b->shared) x->pool = b->shared->pool, lmx_pool_retain(x->pool);
  else LMX_TRY(lmx_pool_new(&x->pool));
  return lmx_exec_materialize(x);
}

int lmx_exec_bind(lmx_binder *b, int simple, lmx_executor **out) {
  lmx_executor *x = NULL;
  lmx_igraph g;
  memset(&g, 0, sizeof g);
  int rc = alloc_exec(b, &x);
  if (rc == LMX_OK) rc = pipeline(b, x, &g, simple);
  lmx_igraph_release(&g);
  if (rc != LMX_OK) {
    lmx_exec_release(x);
    return rc;
  }
  *out = x;
  return LMX_OK;
}
