/* api_executor.c — binder and executor entry points (argument checks; work in src/exec). */
#include <string.h>

#include "../core/alloc.h"
#include "../exec/exec.h"
#include "../tensor/dtype.h"
#include "api.h"

static int check_req(const char *fn, int req) {
  if (req == LMX_GRAD_NULL || req == LMX_GRAD_WRITE || req == LMX_GRAD_ADD) return LMX_OK;
  return lmx_fail(LMX_ERR_ARG, "%s: grad_req must be null (0), write (1) or add (3), got %d",
                  fn, req);
}

int lmx_binder_new(lmx_symbol *sym, int dev_type, int dev_id, lmx_binder **out) {
  LMX_ENTER();
  LMX_NEED(sym, "lmx_binder_new", "sym");
  LMX_NEED(out, "lmx_binder_new", "out");
  return lmx_binder_create(sym, dev_type, dev_id, out);
}

int lmx_binder_free(lmx_binder *b) {
  lmx_binder_destroy(b);
  return LMX_OK;
}

static void replace(lmx_ndarray **slot, lmx_ndarray *a) {
  if (a) lmx_ref_inc(&a->rc);
  lmx_nd_release(*slot);
  *slot = a;
}

int lmx_binder_set_arg(lmx_binder *b, const char *name, int index, lmx_ndarray *arr,
                       lmx_ndarray *grad, int req) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_arg", "b");
  LMX_TRY(check_req("lmx_binder_set_arg", req));
  int i;
  LMX_TRY(lmx_binder_find(b, name, index, 0, &i));
  replace(&b->args[i], arr);
  replace(&b->grads[i], grad);
  b->req[i] = req;
  b->req_set[i] = 1;
  return LMX_OK;
}

int lmx_binder_set_grad_req(lmx_binder *b, const char *name, int index, int req) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_grad_req", "b");
  LMX_TRY(check_req("lmx_binder_set_grad_req", req));
  if (!name && index == -1) {
    for (int i = 0; i < b->g.nargs; i++) b->req[i] = req, b->req_set[i] = 1;
    return LMX_OK;
  }
  int i;
  LMX_TRY(lmx_binder_find(b, name, index, 0, &i));
  b->req[i] = req;
  b->req_set[i] = 1;
  return LMX_OK;
}

int lmx_binder_set_aux(lmx_binder *b, const char *name, int index, lmx_ndarray *arr) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_aux", "b");
  int i;
  LMX_TRY(lmx_binder_find(b, name, index, 1, &i));
  replace(&b->aux[i], arr);
  return LMX_OK;
}

/* Position of a named argument (0..nargs-1) or aux state (nargs..) in shape/dtype. */
static int find_any(lmx_binder *b, const char *name, int *slot) {
  int i;
  for (int i2 = 0; i2 < b->g.naux; i2++) {
    if (strcmp(b->g.nodes[b->g.aux[i2]]->name, name) == 0) {
      *slot = b->g.nargs + i2;
      return LMX_OK;
    }
  }
  LMX_TRY(lmx_binder_find(b, name, -1, 0, &i));
  *slot = i;
  return LMX_OK;
}

int lmx_binder_set_shape(lmx_binder *b, const char *name, const int64_t *dims, int ndim) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_shape", "b");
  LMX_NEED(name, "lmx_binder_set_shape", "name");
  if (ndim > 0) LMX_NEED(dims, "lmx_binder_set_shape", "dims");
  int slot;
  LMX_TRY(find_any(b, name, &slot));
  lmx_shape s;
  LMX_TRY(lmx_shape_make(&s, dims, ndim, name));
  b->shape[slot] = s;
  return LMX_OK;
}

int lmx_binder_set_dtype(lmx_binder *b, const char *name, int dtype) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_dtype", "b");
  LMX_NEED(name, "lmx_binder_set_dtype", "name");
  if (!lmx_dtype_valid(dtype))
    return lmx_fail(LMX_ERR_ARG, "lmx_binder_set_dtype: '%s': unknown dtype code %d", name, dtype);
  int slot;
  LMX_TRY(find_any(b, name, &slot));
  b->dtype[slot] = dtype;
  return LMX_OK;
}

int lmx_binder_set_group(lmx_binder *b, const char *group, int dev_type, int dev_id) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_group", "b");
  LMX_NEED(group, "lmx_binder_set_group", "group");
  return lmx_binder_group(b, group, dev_type, dev_id);
}

int lmx_binder_set_shared(lmx_binder *b, lmx_executor *exe) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_shared", "b");
  if (exe) lmx_exec_retain(exe);
  if (b->shared) lmx_exec_release(b->shared);
  b->shared = exe;
  return LMX_OK;
}

int lmx_binder_set_option(lmx_binder *b, int option, int value) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_set_option", "b");
  if (option != LMX_BIND_NO_SHARE)
    return lmx_fail(LMX_ERR_ARG, "lmx_binder_set_option: unknown option %d", option);
  b->no_share = value != 0;
  return LMX_OK;
}

int lmx_binder_bind(lmx_binder *b, lmx_executor **out) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_bind", "b");
  LMX_NEED(out, "lmx_binder_bind", "out");
  return lmx_exec_bind(b, 0, out);
}

int lmx_binder_simple_bind(lmx_binder *b, lmx_executor **out) {
  LMX_ENTER();
  LMX_NEED(b, "lmx_binder_simple_bind", "b");
  LMX_NEED(out, "lmx_binder_simple_bind", "out");
  return lmx_exec_bind(b, 1, out);
}

int lmx_executor_free(lmx_executor *exe) {
  lmx_exec_release(exe);
  return LMX_OK;
}

int lmx_executor_retain(lmx_executor *exe) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_retain", "exe");
  lmx_exec_retain(exe);
  return LMX_OK;
}

/* forward and backward hold a reference while they run: a callback (monitor, gradient
 * hook, custom operator) that frees the executor only drops the caller's reference, and
 * the executor goes when the step returns. */
int lmx_executor_forward(lmx_executor *exe, int is_train) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_forward", "exe");
  lmx_exec_retain(exe);
  int rc = lmx_exec_forward(exe, is_train != 0);
  lmx_exec_release(exe);
  return rc;
}

int lmx_executor_backward(lmx_executor *exe, lmx_ndarray *const *head_grads, int n,
                          int is_train) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_backward", "exe");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_executor_backward: n must be >= 0, got %d", n);
  if (n > 0) LMX_NEED(head_grads, "lmx_executor_backward", "head_grads");
  lmx_exec_retain(exe);
  int rc = lmx_exec_backward(exe, head_grads, n, is_train != 0);
  lmx_exec_release(exe);
  return rc;
}

static int list_len(const lmx_executor *exe, int what, const char *fn, int *n) {
  if (what == LMX_EXEC_ARGS) *n = exe->plan.nargs;
  else if (what == LMX_EXEC_OUTPUTS) *n = exe->plan.nheads;
  else if (what == LMX_EXEC_AUX) *n = exe->plan.naux;
  else return lmx_fail(LMX_ERR_ARG, "%s: unknown list %d", fn, what);
  return LMX_OK;
}

static int item(const lmx_executor *exe, int what, int i, const char *fn) {
  int n = 0;
  LMX_TRY(list_len(exe, what, fn, &n));
  if (i < 0 || i >= n)
    return lmx_fail(LMX_ERR_ARG, "%s: index %d is out of range (%d items)", fn, i, n);
  return LMX_OK;
}

int lmx_executor_count(const lmx_executor *exe, int what, int *n) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_count", "exe");
  LMX_NEED(n, "lmx_executor_count", "n");
  return list_len(exe, what, "lmx_executor_count", n);
}

int lmx_executor_name(const lmx_executor *exe, int what, int i, const char **name) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_name", "exe");
  LMX_NEED(name, "lmx_executor_name", "name");
  LMX_TRY(item(exe, what, i, "lmx_executor_name"));
  *name = what == LMX_EXEC_ARGS ? exe->arg_names[i]
        : what == LMX_EXEC_AUX  ? exe->aux_names[i] : exe->out_names[i];
  return LMX_OK;
}

int lmx_executor_array(lmx_executor *exe, int what, int i, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_array", "exe");
  LMX_NEED(out, "lmx_executor_array", "out");
  LMX_TRY(item(exe, what, i, "lmx_executor_array"));
  lmx_ndarray *a = what == LMX_EXEC_ARGS ? exe->args[i]
                 : what == LMX_EXEC_AUX  ? exe->aux[i] : exe->ent[exe->plan.head_entry[i]];
  lmx_ref_inc(&a->rc);
  *out = a;
  return LMX_OK;
}

int lmx_executor_grad(lmx_executor *exe, int i, lmx_ndarray **out, int *req) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_grad", "exe");
  LMX_NEED(out, "lmx_executor_grad", "out");
  LMX_TRY(item(exe, LMX_EXEC_ARGS, i, "lmx_executor_grad"));
  lmx_ndarray *g = exe->grad_req[i] == LMX_GRAD_NULL ? NULL : exe->grads[i];
  if (g) lmx_ref_inc(&g->rc);
  *out = g;
  if (req) *req = exe->grad_req[i];
  return LMX_OK;
}

int lmx_executor_copy_params(lmx_executor *exe, const char *const *names,
                             lmx_ndarray *const *arrays, int n, int aux, int allow_extra) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_copy_params", "exe");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_executor_copy_params: n must be >= 0, got %d", n);
  if (n > 0) {
    LMX_NEED(names, "lmx_executor_copy_params", "names");
    LMX_NEED(arrays, "lmx_executor_copy_params", "arrays");
  }
  for (int i = 0; i < n; i++)
    if (!names[i] || !arrays[i])
      return lmx_fail(LMX_ERR_ARG, "lmx_executor_copy_params: names[%d] and arrays[%d] must "
                      "not be NULL", i, i);
  return lmx_exec_copy_params(exe, names, arrays, n, aux != 0, allow_extra != 0);
}

int lmx_executor_reshape(lmx_executor *exe, int partial_shaping, int allow_up_sizing, int n,
                         const char *const *names, const int64_t *dims, const int *ndims,
                         lmx_executor **out) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_reshape", "exe");
  LMX_NEED(out, "lmx_executor_reshape", "out");
  if (n < 0) return lmx_fail(LMX_ERR_ARG, "lmx_executor_reshape: n must be >= 0, got %d", n);
  if (n > 0) {
    LMX_NEED(names, "lmx_executor_reshape", "names");
    LMX_NEED(ndims, "lmx_executor_reshape", "ndims");
  }
  lmx_shape *sh = lmx_calloc((size_t)n + 1, sizeof *sh);
  if (!sh) return lmx_fail_nomem("reshape shapes", (size_t)n * sizeof *sh);
  int rc = LMX_OK, at = 0;
  for (int i = 0; i < n && rc == LMX_OK; i++) {
    if (!names[i]) rc = lmx_fail(LMX_ERR_ARG, "lmx_executor_reshape: names[%d] is NULL", i);
    else rc = lmx_shape_make(&sh[i], dims ? dims + at : NULL, ndims[i], names[i]);
    at += ndims[i] > 0 ? ndims[i] : 0;
  }
  if (rc == LMX_OK)
    rc = lmx_exec_reshape(exe, partial_shaping != 0, allow_up_sizing != 0, n, names, sh, out);
  lmx_free(sh);
  return rc;
}

int lmx_executor_set_monitor(lmx_executor *exe, lmx_monitor_fn fn, void *user, int monitor_all) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_set_monitor", "exe");
  return lmx_exec_set_monitor(exe, fn, user, monitor_all);
}

int lmx_executor_grad_final(const lmx_executor *exe, int *steps, int n, int *num_steps) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_grad_final", "exe");
  if (n < 0 || (n > 0 && !steps))
    return lmx_fail(LMX_ERR_ARG, "lmx_executor_grad_final: bad steps list (n = %d)", n);
  for (int a = 0; a < n && a < exe->plan.nargs; a++) steps[a] = exe->grad_final[a];
  for (int a = exe->plan.nargs; a < n; a++) steps[a] = -2;
  if (num_steps) *num_steps = exe->nbwd_steps;
  return LMX_OK;
}

int lmx_executor_set_grad_hook(lmx_executor *exe, lmx_grad_final_fn fn, void *user) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_set_grad_hook", "exe");
  exe->hook = fn;
  exe->hook_user = fn ? user : NULL;
  return LMX_OK;
}

int lmx_executor_debug_str(lmx_executor *exe, const char **text) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_debug_str", "exe");
  LMX_NEED(text, "lmx_executor_debug_str", "text");
  return lmx_exec_debug_str(exe, text);
}

int lmx_executor_memory(const lmx_executor *exe, int64_t *planned, int64_t *naive,
                        int64_t *pool) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_memory", "exe");
  if (planned) *planned = (int64_t)exe->plan.planned_bytes;
  if (naive) *naive = (int64_t)exe->plan.naive_bytes;
  if (pool) *pool = exe->pool ? (int64_t)exe->pool->bytes : 0;
  return LMX_OK;
}

int lmx_executor_optimized_symbol(lmx_executor *exe, lmx_symbol **out) {
  LMX_ENTER();
  LMX_NEED(exe, "lmx_executor_optimized_symbol", "exe");
  LMX_NEED(out, "lmx_executor_optimized_symbol", "out");
  /* made again (the executor keeps no merged copy of its graph: bind.c) */
  lmx_symbol *opt;
  LMX_TRY(lmx_pass_cse(exe->sym, &opt, NULL));
  int rc = lmx_sym_copy(opt, out);
  lmx_sym_release(opt);
  return rc;
}
