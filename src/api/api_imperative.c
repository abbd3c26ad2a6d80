/* api_imperative.c — entry points of the imperative operator calls (argument checks;
 * the work is in src/exec/imperative.c). */
#include "../exec/imperative.h"
#include "api.h"

int lmx_imperative_invoke(const char *op_name, int nkeys, const char *const *keys,
                          const char *const *vals, int nin, lmx_ndarray *const *inputs,
                          int *nout, lmx_ndarray **outputs, int is_train) {
  LMX_ENTER();
  LMX_NEED(op_name, "lmx_imperative_invoke", "op_name");
  LMX_NEED(nout, "lmx_imperative_invoke", "nout");
  if (nkeys < 0 || nin < 0 || *nout < 0)
    return lmx_fail(LMX_ERR_ARG, "lmx_imperative_invoke: negative count");
  if (nkeys > 0) {
    LMX_NEED(keys, "lmx_imperative_invoke", "keys");
    LMX_NEED(vals, "lmx_imperative_invoke", "vals");
  }
  if (nin > 0) LMX_NEED(inputs, "lmx_imperative_invoke", "inputs");
  if (*nout > 0) LMX_NEED(outputs, "lmx_imperative_invoke", "outputs");
  return lmx_imp_invoke(op_name, nkeys, keys, vals, nin, inputs, nout, outputs, is_train);
}

int lmx_imperative_backward(const char *op_name, int nkeys, const char *const *keys,
                            const char *const *vals, int nin, lmx_ndarray *const *inputs,
                            int nout, lmx_ndarray *const *outputs,
                            lmx_ndarray *const *out_grads, lmx_ndarray **in_grads,
                            const int *reqs, int is_train) {
  LMX_ENTER();
  LMX_NEED(op_name, "lmx_imperative_backward", "op_name");
  if (nkeys < 0 || nin < 0 || nout < 0)
    return lmx_fail(LMX_ERR_ARG, "lmx_imperative_backward: negative count");
  if (nkeys > 0) {
    LMX_NEED(keys, "lmx_imperative_backward", "keys");
    LMX_NEED(vals, "lmx_imperative_backward", "vals");
  }
  if (nin > 0) {
    LMX_NEED(inputs, "lmx_imperative_backward", "inputs");
    LMX_NEED(in_grads, "lmx_imperative_backward", "in_grads");
  }
  if (nout > 0) LMX_NEED(outputs, "lmx_imperative_backward", "outputs");
  return lmx_imp_backward(op_name, nkeys, keys, vals, nin, inputs, nout, outputs, out_grads,
                          in_grads, reqs, is_train);
}

int lmx_opcall_new(const char *op_name, int nkeys, const char *const *keys,
                   const char *const *vals, lmx_opcall **out) {
  LMX_ENTER();
  LMX_NEED(op_name, "lmx_opcall_new", "op_name");
  LMX_NEED(out, "lmx_opcall_new", "out");
  if (nkeys < 0) return lmx_fail(LMX_ERR_ARG, "lmx_opcall_new: negative count");
  if (nkeys > 0) {
    LMX_NEED(keys, "lmx_opcall_new", "keys");
    LMX_NEED(vals, "lmx_opcall_new", "vals");
  }
  return lmx_imp_prepare(op_name, nkeys, keys, vals, out);
}

int lmx_opcall_free(lmx_opcall *call) {
  lmx_imp_release(call);
  return LMX_OK;
}

int lmx_opcall_invoke(lmx_opcall *call, int nin, lmx_ndarray *const *inputs, int *nout,
                      lmx_ndarray **outputs, int is_train) {
  LMX_ENTER();
  LMX_NEED(call, "lmx_opcall_invoke", "call");
  LMX_NEED(nout, "lmx_opcall_invoke", "nout");
  if (nin < 0 || *nout < 0) return lmx_fail(LMX_ERR_ARG, "lmx_opcall_invoke: negative count");
  if (nin > 0) LMX_NEED(inputs, "lmx_opcall_invoke", "inputs");
  if (*nout > 0) LMX_NEED(outputs, "lmx_opcall_invoke", "outputs");
  return lmx_imp_call(call, nin, inputs, nout, outputs, is_train);
}

int lmx_opcall_set(lmx_opcall *call, const char *key, double value) {
  LMX_ENTER();
  LMX_NEED(call, "lmx_opcall_set", "call");
  LMX_NEED(key, "lmx_opcall_set", "key");
  return lmx_imp_set(call, key, value);
}
