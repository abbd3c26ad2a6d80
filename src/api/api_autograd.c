/* api_autograd.c — entry points of the imperative tape (argument checks; the work is in
 * src/exec/autograd.c). */
#include "../exec/autograd.h"
#include "../tensor/ndarray.h"
#include "api.h"

int lmx_autograd_set_state(int recording, int training, int *was_recording, int *was_training) {
  LMX_ENTER();
  return lmx_ag_set_state(recording, training, was_recording, was_training);
}

int lmx_autograd_mark(lmx_ndarray *arr, int req, lmx_ndarray *grad) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_autograd_mark", "arr");
  return lmx_ag_mark(arr, req, grad);
}

int lmx_autograd_get_grad(lmx_ndarray *arr, lmx_ndarray **grad, int *req) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_autograd_get_grad", "arr");
  LMX_NEED(grad, "lmx_autograd_get_grad", "grad");
  return lmx_ag_get_grad(arr, grad, req);
}

int lmx_autograd_info(lmx_ndarray *arr, int *kind, const char **op_name) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_autograd_info", "arr");
  LMX_NEED(kind, "lmx_autograd_info", "kind");
  return lmx_ag_info(arr, kind, op_name);
}

int lmx_autograd_detach(lmx_ndarray *arr, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_autograd_detach", "arr");
  LMX_NEED(out, "lmx_autograd_detach", "out");
  return lmx_ag_detach(arr, out);
}

int lmx_autograd_set_name(lmx_ndarray *arr, const char *name) {
  LMX_ENTER();
  LMX_NEED(arr, "lmx_autograd_set_name", "arr");
  LMX_NEED(name, "lmx_autograd_set_name", "name");
  return lmx_ag_set_name(arr, name);
}

/* Takes (take = 1) or drops a reference on each non-NULL array. */
static void hold(lmx_ndarray *const *a, int n, int take) {
  for (int i = 0; a && i < n; i++) {
    if (!a[i]) continue;
    if (take) lmx_ref_inc(&a[i]->rc);
    else lmx_nd_release(a[i]);
  }
}

int lmx_autograd_backward(int nh, lmx_ndarray *const *heads, lmx_ndarray *const *head_grads,
                          int nvar, lmx_ndarray *const *vars, lmx_ndarray **var_grads,
                          int retain_graph, int is_train) {
  LMX_ENTER();
  if (nh < 1) return lmx_fail(LMX_ERR_ARG, "backward: expected at least one head, got %d", nh);
  if (nvar < 0) return lmx_fail(LMX_ERR_ARG, "backward: negative variable count");
  LMX_NEED(heads, "lmx_autograd_backward", "heads");
  for (int i = 0; i < nh; i++)
    if (!heads[i]) return lmx_fail(LMX_ERR_ARG, "backward: head %d is NULL", i + 1);
  if (nvar > 0) {
    LMX_NEED(vars, "lmx_autograd_backward", "vars");
    LMX_NEED(var_grads, "lmx_autograd_backward", "var_grads");
    for (int i = 0; i < nvar; i++) {
      if (!vars[i]) return lmx_fail(LMX_ERR_ARG, "mx.autograd.grad: variable %d is NULL", i + 1);
      var_grads[i] = NULL;
    }
  }
  /* Backward may call back into Lua (mx.autograd.Function, Custom operators), which may
   * release the caller's heads, head gradients or variables: hold them meanwhile. */
  hold(heads, nh, 1), hold(head_grads, nh, 1), hold(vars, nvar, 1);
  int rc = lmx_ag_backward(nh, heads, head_grads, nvar, vars, var_grads, retain_graph, is_train);
  hold(heads, nh, 0), hold(head_grads, nh, 0), hold(vars, nvar, 0);
  return rc;
}

int lmx_autograd_function_record(int nin, lmx_ndarray *const *inputs, int nout,
                                 lmx_ndarray *const *outputs, lmx_autograd_fn fn, int64_t id) {
  LMX_ENTER();
  LMX_NEED(fn, "lmx_autograd_function_record", "fn");
  if (nin < 0 || nout < 1)
    return lmx_fail(LMX_ERR_ARG, "mx.autograd.Function: expected inputs and at least one output");
  if (nin > 0) LMX_NEED(inputs, "lmx_autograd_function_record", "inputs");
  LMX_NEED(outputs, "lmx_autograd_function_record", "outputs");
  for (int i = 0; i < nin; i++) LMX_NEED(inputs[i], "lmx_autograd_function_record", "inputs[i]");
  for (int i = 0; i < nout; i++) LMX_NEED(outputs[i], "lmx_autograd_function_record", "outputs[i]");
  return lmx_ag_function_record(nin, inputs, nout, outputs, fn, id);
}

int lmx_autograd_function_dead(int64_t *ids, int cap, int *n) {
  LMX_ENTER();
  LMX_NEED(n, "lmx_autograd_function_dead", "n");
  if (cap > 0) LMX_NEED(ids, "lmx_autograd_function_dead", "ids");
  return lmx_ag_function_dead(ids, cap < 0 ? 0 : cap, n);
}

int lmx_autograd_export(int nh, lmx_ndarray *const *heads, lmx_ag_graph **out) {
  LMX_ENTER();
  LMX_NEED(heads, "lmx_autograd_export", "heads");
  LMX_NEED(out, "lmx_autograd_export", "out");
  for (int i = 0; i < nh; i++)
    if (!heads[i]) return lmx_fail(LMX_ERR_ARG, "get_symbol: head %d is NULL", i + 1);
  return lmx_ag_export(nh, heads, out);
}

int lmx_autograd_graph_free(lmx_ag_graph *g) {
  lmx_ag_graph_free(g);
  return LMX_OK;
}

int lmx_autograd_graph_size(const lmx_ag_graph *g, int *nnodes, int *nheads,
                            const int **head_node, const int **head_index) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_autograd_graph_size", "g");
  LMX_NEED(nnodes && nheads && head_node && head_index, "lmx_autograd_graph_size", "outputs");
  return lmx_ag_graph_size(g, nnodes, nheads, head_node, head_index);
}

int lmx_autograd_graph_node(const lmx_ag_graph *g, int i, const char **op, const char **name,
                            int *nkeys, const char *const **keys, const char *const **vals,
                            int *nin, const int **in_node, const int **in_index) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_autograd_graph_node", "g");
  LMX_NEED(op && name && nkeys && keys && vals && nin && in_node && in_index,
           "lmx_autograd_graph_node", "outputs");
  return lmx_ag_graph_node(g, i, op, name, nkeys, keys, vals, nin, in_node, in_index);
}
