/* executor.c — running a bound executor: forward, backward, parameter copies, release.
 *
 * forward(is_train) walks steps [0, nfwd_steps), backward walks the rest; each step
 * calls one kernel with the arguments steps.c precomputed, so neither allocates: the
 * only work besides kernels is copying head gradients into the executor's buffers and
 * zero-filling argument gradients that nothing reaches (grad_req write only).
 * Write requests are honoured exactly: write overwrites, add accumulates (nothing ever
 * zeroes an add gradient), null leaves the array untouched (no step writes to it).
 * Every kernel is called from the calling thread, in plan order, whatever context it is
 * placed on (a GPU kernel is queued on its device's stream, c->stream), so monitor
 * callbacks fire on the calling thread too. Array work outside kernels (gradient add,
 * zero fills) goes through the array's device table (src/device/device.h).
 * Errors name the operator and node (kernels' messages), the head, the argument.
 * Gradient hook: when one is set, backward calls it before the first backward step
 * with the arguments whose gradients no step writes, and after every step that makes
 * some gradient final with those arguments (steps.c's lists; the call allocates
 * nothing). It runs on the calling thread between two steps; the dist kvstore starts
 * the all-reduce of those gradients from it while the earlier layers' backward runs.
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "exec.h"

void lmx_exec_retain(lmx_executor *x) { lmx_ref_inc(&x->rc); }

static void free_names(char **names, int n) {
  for (int i = 0; names && i < n; i++) lmx_free(names[i]);
  lmx_free(names);
}

void lmx_exec_release(lmx_executor *x) {
  if (!x || !lmx_ref_dec(&x->rc)) return;
  lmx_plan *p = &x->plan;
  for (int e = 0; x->ent && e < p->num_entries; e++) lmx_nd_release(x->ent[e]);
  for (int i = 0; x->args && i < p->nargs; i++) lmx_nd_release(x->args[i]);
  for (int i = 0; x->grads && i < p->nargs; i++) lmx_nd_release(x->grads[i]);
  for (int i = 0; x->aux && i < p->naux; i++) lmx_nd_release(x->aux[i]);
  for (int i = 0; x->head_grads && i < p->nheads; i++) lmx_nd_release(x->head_grads[i]);
  for (int c = 0; c < LMX_PLAN_MAX_CTX; c++) lmx_nd_release(x->ws[c]);
  free_names(x->mon_out, p->num_entries);
  free_names(x->mon_in, p->num_in);
  free_names(x->arg_names, p->nargs);
  free_names(x->aux_names, p->naux);
  free_names(x->out_names, p->nheads);
  free_names(x->groups, x->ngroups);
  void *arrays[] = {x->ent, x->args, x->grads, x->aux, x->head_grads, x->grad_req,
                    x->steps, x->notes, x->tens, x->args_buf, x->slots, x->reqs,
                    x->group_type, x->group_id,
                    x->grad_final, x->final_at, x->final_args};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) lmx_free(arrays[i]);
  lmx_plan_release(p);
  lmx_pool_release(x->pool);
  lmx_sym_release(x->sym);
  lmx_sbuf_release(&x->text);
  lmx_free(x);
}

static int no_kernel(const lmx_xstep *s, const char *dir) {
  return lmx_fail(LMX_ERR_UNSUPPORTED, "%s '%s': no %s kernel on %s(%d)", s->c.op->name,
                  s->c.node, dir, lmx_device_type_name(s->c.dev_type), s->c.dev_id);
}

/* A copy between contexts (group2ctx); with req add, the source is brought to the
 * target's device first when it lives elsewhere, then added there by the device's
 * `add` primitive. */
static int run_copy(const lmx_xstep *s) {
  if (s->req[0] == LMX_REQ_NULL) return LMX_OK;
  if (s->req[0] != LMX_REQ_ADD) return lmx_nd_copy(s->src, s->dst);
  const lmx_storage *d = s->dst->st, *src = s->src->st;
  if (s->src->dtype != s->dst->dtype || d->dev_type != src->dev_type || d->dev_id != src->dev_id)
    return lmx_fail(LMX_ERR_UNSUPPORTED, "gradient copy with req add from %s(%d) %s to %s(%d) "
                    "%s: expected one device and one dtype", src->dev->name, src->dev_id,
                    lmx_dtype_str(s->src->dtype), d->dev->name, d->dev_id,
                    lmx_dtype_str(s->dst->dtype));
  return lmx_device_add(d->dev, d->dev_id, s->dst->dtype, lmx_nd_size(s->dst),
                        lmx_nd_ptr(s->dst), lmx_nd_ptr(s->src));
}

/* The step's kernel arguments, in the kernel's order (a copy per argument: each entry's
 * tensor is kept once, however many steps read it). */
static const lmx_tensor *gather(lmx_executor *x, const lmx_xstep *s) {
  for (int k = 0; k < s->nt; k++) x->args_buf[k] = x->tens[s->slot[k]];
  return x->args_buf;
}

static int run_step(lmx_executor *x, lmx_xstep *s, int is_train) {
  if (x->mon && x->mon_all) lmx_monitor_before(x, s);
  int rc;
  s->c.is_train = is_train;
  if (s->kind != LMX_STEP_COPY) /* an asynchronous fault names the last op (GPU) */
    lmx_device_note_op(s->c.dev, s->c.dev_id, s->c.op->name, s->c.node);
  if (s->fuse && lmx_exec_run_fused(x, s)) return LMX_OK; /* fuse.c: a pair as one kernel */
  if (s->kind == LMX_STEP_OP) {
    if (!s->fwd) return no_kernel(s, "forward");
    const lmx_tensor *t = gather(x, s);
    rc = s->fwd(&s->c, t, t + s->nargs, s->req, t + s->nargs + s->nout);
  } else if (s->kind == LMX_STEP_BWD) {
    if (!s->bwd) return no_kernel(s, "backward");
    const lmx_tensor *og = gather(x, s), *in = og + s->nout, *out = in + s->nargs;
    const lmx_tensor *ig = out + s->nout, *aux = ig + s->nargs;
    rc = s->bwd(&s->c, og, in, out, ig, s->req, aux);
  } else {
    rc = run_copy(s);
  }
  if (rc == LMX_OK && x->mon) lmx_monitor_after(x, s);
  return rc;
}

int lmx_exec_forward(lmx_executor *x, int is_train) {
  x->forward_done = 0;
  for (int i = 0; i < x->nfwd_steps; i++) LMX_TRY(run_step(x, &x->steps[i], is_train));
  x->forward_done = 1;
  return LMX_OK;
}

static int check_head_grads(const lmx_executor *x, lmx_ndarray *const *hg, int n) {
  const lmx_plan *p = &x->plan;
  if (n > p->nheads)
    return lmx_fail(LMX_ERR_ARG, "backward: got %d out_grads but the executor has %d output%s",
                    n, p->nheads, p->nheads == 1 ? "" : "s");
  for (int i = 0; i < p->nheads; i++) {
    if (p->head_grad_node[i] < 0) continue;
    const lmx_ndarray *g = i < n ? hg[i] : NULL;
    const lmx_ndarray *want = x->head_grads[i];
    if (!g)
      return lmx_fail(LMX_ERR_ARG, "backward: out_grads[%d] for output '%s' is required: the "
                      "output is not a loss operator's. If you are attempting to minimize the "
                      "output as an objective, pass it through MakeLoss", i + 1, x->out_names[i]);
    if (!lmx_shape_equal(&g->shape, &want->shape)) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_SHAPE, "backward: out_grads[%d] for output '%s': expected shape %s,"
                      " got %s", i + 1, x->out_names[i], lmx_shape_str(&want->shape, a),
                      lmx_shape_str(&g->shape, b));
    }
  }
  return LMX_OK;
}

int lmx_exec_backward(lmx_executor *x, lmx_ndarray *const *hg, int n, int is_train) {
  const lmx_plan *p = &x->plan;
  if (!p->has_backward) return LMX_OK; /* every grad_req is null: nothing to compute */
  if (!x->forward_done)
    return lmx_fail(LMX_ERR_STATE, "backward: run forward (is_train = true) before backward");
  LMX_TRY(check_head_grads(x, hg, n));
  for (int i = 0; i < p->nheads; i++)
    if (p->head_grad_node[i] >= 0) LMX_TRY(lmx_nd_copy(hg[i], x->head_grads[i]));
  for (int a = 0; a < p->nargs; a++) {
    lmx_ndarray *g = x->grads[a];
    if (!p->arg_grad_zero[a] || !g) continue;
    LMX_TRY(lmx_device_fill(g->st->dev, g->st->dev_id, lmx_nd_ptr(g), g->dtype, lmx_nd_size(g),
                            0.0));
  }
  if (!x->hook) {
    for (int i = x->nfwd_steps; i < x->nsteps; i++) LMX_TRY(run_step(x, &x->steps[i], is_train));
    return LMX_OK;
  }
  for (int s = -1; s < x->nbwd_steps; s++) {
    if (s >= 0) LMX_TRY(run_step(x, &x->steps[x->nfwd_steps + s], is_train));
    int b = x->final_at[s + 1], e = x->final_at[s + 2];
    if (b == e) continue;
    lmx_clear_error();
    int rc = x->hook(s, x->final_args + b, e - b, x->hook_user);
    if (rc != LMX_OK)
      return lmx_errmsg()[0] ? rc
                             : lmx_fail(rc, "backward: the gradient hook failed after step %d", s);
  }
  return LMX_OK;
}

static int find_name(char **names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

int lmx_exec_copy_params(lmx_executor *x, const char *const *names, lmx_ndarray *const *arrays,
                         int n, int aux, int allow_extra) {
  char **list = aux ? x->aux_names : x->arg_names;
  lmx_ndarray **dst = aux ? x->aux : x->args;
  int cnt = aux ? x->plan.naux : x->plan.nargs;
  for (int i = 0; i < n; i++) { /* check everything before copying anything */
    int k = find_name(list, cnt, names[i]);
    if (k < 0 && allow_extra) continue;
    if (k < 0)
      return lmx_fail(LMX_ERR_NOTFOUND, "copy_params_from: Find name \"%s\" that is not in the "
                      "%s", names[i], aux ? "auxiliary states" : "arguments");
    if (!lmx_shape_equal(&arrays[i]->shape, &dst[k]->shape)) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_SHAPE, "copy_params_from: '%s': expected shape %s, got %s",
                      names[i], lmx_shape_str(&dst[k]->shape, a), lmx_shape_str(&arrays[i]->shape, b));
    }
  }
  for (int i = 0; i < n; i++) {
    int k = find_name(list, cnt, names[i]);
    if (k >= 0) LMX_TRY(lmx_nd_copy(arrays[i], dst[k]));
  }
  return LMX_OK;
}
