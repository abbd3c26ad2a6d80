/* imperative.c — one operator on NDArrays: parse parameters, infer shapes and dtypes,
 * allocate what the caller did not give, run the kernel of the inputs' device.
 *
 * A call is self-contained: a `call` struct holds the op, its parsed parameters, the
 * tensors handed to the kernel and every temporary (hidden outputs, aux states the
 * caller did not pass, the workspace), and call_end releases them on every path, so a
 * failure leaves the caller's arrays and out-slots untouched except for arrays the
 * caller supplied as outputs (which a kernel may have partly written).
 * Aux states: inputs beyond the op's input count are its aux states (MXNet's NDArray
 * convention: BatchNorm(data, gamma, beta, moving_mean, moving_var)), updated in place
 * in training; without them, temporaries (moving_var = 1, others 0) are used and
 * dropped. Outputs: *nout is the caller's capacity; with room for every output the
 * hidden ones (Dropout's mask, BatchNorm's mean/var) come back too, otherwise only the
 * visible ones.
 * Device: a call runs where its inputs are. Every input (and every array the caller
 * passes as output or gradient) must be on one context, else LMX_ERR_DEVICE naming the
 * argument and both contexts; an op without inputs runs on its first given output's
 * context, else on cpu(0). Arrays the call creates live on that context; the kernel is
 * that device's (kernel.h): "no kernel for <Op> on gpu(0)" when its table has none.
 * Prepared calls (lmx_opcall) keep the parsed parameters, so repeated calls of one op
 * with the same parameters (optimizer updates, every step) parse nothing and, with
 * every output given, allocate nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/refcount.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "../ops/op.h"
#include "../tensor/dtype.h"
#include "../tensor/ndarray.h"
#include "autograd.h"
#include "imperative.h"

enum { IMP_MAX = 64 };

typedef struct {
  const lmx_op *op;
  int opid;            /* lmx_op_index(op) */
  const lmx_kernel *k; /* the op's row in the call's device's kernel table */
  void *param;
  int owns_param; /* 0 when the parameters belong to a prepared call (lmx_opcall) */
  lmx_op_ctx c;
  int nin, nout, naux, nvis;
  int ntmp;
  /* what autograd records: the parameter strings and the prepared call (or NULL) */
  int nkeys;
  const char *const *keys, *const *vals;
  lmx_opcall *oc;
  /* the per-slot arrays (about 33 KB): call_init zeroes only the fields above, and
   * call_setup the slots the op uses, so a call of a small op stays cheap */
  lmx_shape is[IMP_MAX], os[IMP_MAX], as[IMP_MAX];
  int it[IMP_MAX], ot[IMP_MAX], at[IMP_MAX];
  lmx_ndarray *tmp[IMP_MAX * 2]; /* arrays this call allocated and must release */
  lmx_ndarray *aux[IMP_MAX];
  lmx_tensor tin[IMP_MAX], tout[IMP_MAX], taux[IMP_MAX];
} call;

/* Zeroes the call's fixed fields (not the per-slot arrays: see call_setup). */
static void call_init(call *k) { memset(k, 0, offsetof(call, is)); }

/* Fails with "<Op>: <message>" (imperative calls have no node name). */
static int ifail(const call *k, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ifail(const call *k, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return lmx_fail(status, "%s: %s", k->op ? k->op->name : "operator", msg);
}

static lmx_tensor tensor_of(lmx_ndarray *a) {
  lmx_tensor t = {NULL, {0, {0}}, -1};
  if (!a) return t;
  t.data = lmx_nd_ptr(a), t.shape = a->shape, t.dtype = a->dtype;
  return t;
}

static void call_end(call *k) {
  for (int i = 0; i < k->ntmp; i++) lmx_nd_release(k->tmp[i]);
  if (k->param && k->owns_param) lmx_op_params_free(k->op, k->param);
}

static int fail_ctx(const call *k, int status, const char *fmt, const char *what, int i)
    __attribute__((format(printf, 3, 0)));
static int fail_ctx(const call *k, int status, const char *fmt, const char *what, int i) {
  return ifail(k, status, fmt, what, i);
}

/* Fails unless array `what` i is on the call's context. */
static int check_ctx(const call *k, lmx_ndarray *a, const char *what, int i) {
  if (!a) return fail_ctx(k, LMX_ERR_ARG, "%s %d is NULL", what, i);
  if (a->st->dev_type != k->c.dev_type || a->st->dev_id != k->c.dev_id)
    return ifail(k, LMX_ERR_DEVICE, "%s %d is on %s(%d), but the call runs on %s(%d) (where "
                 "input 0 is): copy it there first", what, i, a->st->dev->name, a->st->dev_id,
                 lmx_device_type_name(k->c.dev_type), k->c.dev_id);
  return LMX_OK;
}

/* The call's context: input 0's, else the first given output's, else cpu(0); its device
 * table, stream and kernel row. */
static int call_device(call *k, int nin, lmx_ndarray *const *inputs, lmx_ndarray *const *outs,
                       int nouts) {
  const lmx_ndarray *a = nin > 0 ? inputs[0] : NULL;
  for (int i = 0; !a && outs && i < nouts; i++) a = outs[i];
  if (nin > 0 && !a) return fail_ctx(k, LMX_ERR_ARG, "%s %d is NULL", "input", 0);
  k->c.dev_type = a ? a->st->dev_type : LMX_CPU;
  k->c.dev_id = a ? a->st->dev_id : 0;
  const lmx_device_ops *dev;
  LMX_TRY(lmx_device_lookup(k->c.dev_type, k->c.dev_id, &dev));
  k->c.dev = dev;
  k->c.stream = lmx_device_stream(dev, k->c.dev_id);
  k->k = lmx_op_kernel_at(k->opid, k->c.dev_type);
  if (!k->k) return lmx_op_require_kernel(k->op, k->c.dev_type, k->c.dev_id, NULL, 0);
  return LMX_OK;
}

/* Checks the inputs of an op whose parameters are parsed (k->op, k->param set); outs
 * (nouts of them, may be NULL) are the caller's output arrays, which place an op without
 * inputs. */
static int call_setup(call *k, int nin, lmx_ndarray *const *inputs, lmx_ndarray *const *outs,
                      int nouts, int is_train) {
  k->c = (lmx_op_ctx){.op = k->op, .param = k->param, .is_train = is_train};
  k->nin = lmx_op_num_inputs(k->op, k->param);
  k->nout = lmx_op_num_outputs(k->op, k->param);
  k->naux = lmx_op_num_aux(k->op, k->param);
  k->nvis = lmx_op_num_visible_outputs(k->op, k->param);
  if (k->nin > IMP_MAX || k->nout > IMP_MAX || k->naux > IMP_MAX)
    return ifail(k, LMX_ERR_UNSUPPORTED, "too many inputs or outputs");
  /* the slots the op uses start zeroed, as the whole struct once did */
  memset(k->is, 0, sizeof k->is[0] * (size_t)k->nin);
  memset(k->os, 0, sizeof k->os[0] * (size_t)k->nout);
  memset(k->as, 0, sizeof k->as[0] * (size_t)k->naux);
  memset(k->aux, 0, sizeof k->aux[0] * (size_t)k->naux);
  memset(k->tin, 0, sizeof k->tin[0] * (size_t)k->nin);
  memset(k->tout, 0, sizeof k->tout[0] * (size_t)k->nout);
  memset(k->taux, 0, sizeof k->taux[0] * (size_t)k->naux);
  if (nin != k->nin && nin != k->nin + k->naux)
    return ifail(k, LMX_ERR_ARG, "expected %d inputs%s, got %d", k->nin,
                       k->naux ? " (or with its aux states appended)" : "", nin);
  LMX_TRY(call_device(k, nin, inputs, outs, nouts));
  for (int i = 0; i < nin; i++) {
    LMX_TRY(check_ctx(k, inputs[i], "input", i));
    if (i < k->nin) k->is[i] = inputs[i]->shape, k->it[i] = inputs[i]->dtype;
  }
  for (int i = 0; i < k->nout; i++) k->ot[i] = -1;
  for (int i = 0; i < k->naux; i++) {
    k->at[i] = -1;
    if (nin > k->nin) k->as[i] = inputs[k->nin + i]->shape, k->at[i] = inputs[k->nin + i]->dtype;
  }
  return LMX_OK;
}

/* Looks the op up, parses parameters, checks the inputs. */
static int call_begin(call *k, const char *op_name, int nkeys, const char *const *keys,
                      const char *const *vals, int nin, lmx_ndarray *const *inputs,
                      lmx_ndarray *const *outs, int nouts, int is_train) {
  call_init(k);
  k->op = lmx_op_find(op_name);
  if (!k->op) return lmx_fail(LMX_ERR_NOTFOUND, "unknown operator '%s'", op_name);
  k->opid = lmx_op_index(k->op);
  LMX_TRY(lmx_op_params_parse(k->op, NULL, keys, vals, nkeys, &k->param));
  k->owns_param = 1;
  k->nkeys = nkeys, k->keys = keys, k->vals = vals;
  return call_setup(k, nin, inputs, outs, nouts, is_train);
}

static int infer(call *k) {
  LMX_TRY(lmx_op_infer_shape(&k->c, k->is, k->nin, k->os, k->nout, k->as, k->naux));
  LMX_TRY(lmx_op_infer_type(&k->c, k->it, k->nin, k->ot, k->nout, k->at, k->naux));
  for (int i = 0; i < k->nout; i++)
    if ((k->os[i].ndim > 0 && !lmx_shape_known(&k->os[i])) || k->ot[i] < 0)
      return fail_ctx(k, LMX_ERR_SHAPE, "%s %d: shape or dtype could not be inferred", "output", i);
  return LMX_OK;
}

static int new_tmp(call *k, const lmx_shape *s, int dt, double fill, lmx_ndarray **out) {
  int rc = lmx_nd_create(s, dt, k->c.dev_type, k->c.dev_id, 1, out);
  if (rc != LMX_OK) return lmx_fail_prefix(rc, "%s: ", k->op->name);
  k->tmp[k->ntmp++] = *out;
  if (fill != 0.0) LMX_TRY(lmx_ndarray_fill(*out, fill));
  return LMX_OK;
}

/* Aux tensors: the caller's (inputs beyond nin) or temporaries. */
static int setup_aux(call *k, int nin, lmx_ndarray *const *inputs) {
  for (int i = 0; i < k->naux; i++) {
    if (nin > k->nin) {
      k->aux[i] = inputs[k->nin + i];
    } else {
      char name[64];
      lmx_op_aux_name(k->op, k->param, i, name, sizeof name);
      int one = k->op->aux_init ? strstr(k->op->aux_init[i], "one") != NULL
                                : strstr(name, "var") != NULL;
      LMX_TRY(new_tmp(k, &k->as[i], k->at[i], one ? 1.0 : 0.0, &k->aux[i]));
    }
    if (!lmx_shape_equal(&k->aux[i]->shape, &k->as[i]) || k->aux[i]->dtype != k->at[i])
      return fail_ctx(k, LMX_ERR_SHAPE, "%s %d: shape or dtype does not match the inferred one",
                      "aux state", i);
    k->taux[i] = tensor_of(k->aux[i]);
  }
  for (int i = 0; i < k->nin; i++) k->tin[i] = tensor_of(inputs[i]);
  if (k->k->workspace) { /* scratch on the call's device, released by call_end */
    int dts[2 * IMP_MAX];
    for (int i = 0; i < k->nin; i++) dts[i] = k->it[i];
    for (int j = 0; j < k->nout; j++) dts[k->nin + j] = k->ot[j];
    k->c.dtypes = dts;
    size_t b = k->k->workspace(&k->c, k->is, k->os);
    k->c.dtypes = NULL;
    if (b) {
      lmx_shape ws = {1, {(int64_t)b}};
      lmx_ndarray *w;
      LMX_TRY(lmx_nd_create(&ws, LMX_UINT8, k->c.dev_type, k->c.dev_id, 0, &w));
      k->tmp[k->ntmp++] = w;
      k->c.workspace = lmx_nd_ptr(w);
      k->c.workspace_bytes = b;
    }
  }
  return LMX_OK;
}

/* Output arrays: the caller's (checked against inference) or new ones. fresh[i] marks
 * arrays allocated for slot i < ret (released on failure, handed over on success). */
static int setup_outputs(call *k, int ret, lmx_ndarray **outputs, lmx_ndarray **res,
                         int *fresh) {
  for (int i = 0; i < k->nout; i++) {
    fresh[i] = 0;
    if (i < ret && outputs[i]) {
      LMX_TRY(check_ctx(k, outputs[i], "output", i));
      if (!lmx_shape_equal(&outputs[i]->shape, &k->os[i]) || outputs[i]->dtype != k->ot[i]) {
        char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
        return ifail(k, LMX_ERR_SHAPE, "output %d: expected %s %s, got %s %s", i,
                           lmx_shape_str(&k->os[i], a), lmx_dtype_str(k->ot[i]),
                           lmx_shape_str(&outputs[i]->shape, b), lmx_dtype_str(outputs[i]->dtype));
      }
      res[i] = outputs[i];
    } else if (i < ret) {
      /* not zero-filled: the kernel writes every element (req write), as executors'
       * reused buffers already require */
      int rc = lmx_nd_create(&k->os[i], k->ot[i], k->c.dev_type, k->c.dev_id, 0, &res[i]);
      if (rc != LMX_OK) return lmx_fail_prefix(rc, "%s: output %d: ", k->op->name, i);
      fresh[i] = 1;
    } else {
      LMX_TRY(new_tmp(k, &k->os[i], k->ot[i], 0.0, &res[i]));
    }
    k->tout[i] = tensor_of(res[i]);
  }
  return LMX_OK;
}

/* Infers, binds outputs and aux states, and runs the forward kernel of a begun call.
 * Allocates nothing when the caller gives every output and the op needs neither a
 * workspace nor temporary aux states. */
/* Takes (take = 1) or drops a reference on each non-NULL array, around the kernels of an
 * op that calls back into the host: a callback that frees one of the caller's arrays
 * then leaves it alive until the call is over. */
static void hold(const call *k, lmx_ndarray *const *a, int n, int take) {
  if (!(k->op->flags & LMX_OPF_CALLS_HOST)) return;
  for (int i = 0; a && i < n; i++) {
    if (!a[i]) continue;
    if (take) lmx_ref_inc(&a[i]->rc);
    else lmx_nd_release(a[i]);
  }
}

static int run_forward(call *k, int nin, lmx_ndarray *const *inputs, int *nout,
                       lmx_ndarray **outputs) {
  /* not zero-initialised (1.3 KB a call): fresh[] is cleared for the op's outputs below,
   * res[i] is read only where fresh[i] is set, given[] only up to ngiven */
  lmx_ndarray *res[IMP_MAX];
  int fresh[IMP_MAX], ret = 0, req[IMP_MAX];
  int ngiven = *nout < IMP_MAX ? *nout : IMP_MAX; /* the caller's output arrays */
  lmx_ndarray *given[IMP_MAX];
  for (int i = 0; i < ngiven; i++) given[i] = outputs[i];
  memset(fresh, 0, sizeof fresh[0] * (size_t)k->nout); /* nout <= IMP_MAX (call_setup) */
  hold(k, inputs, nin, 1), hold(k, given, ngiven, 1); /* infer may call the host too */
  int rc = infer(k);
  if (rc == LMX_OK) {
    ret = *nout >= k->nout ? k->nout : k->nvis;
    if (*nout < k->nvis)
      rc = ifail(k, LMX_ERR_ARG, "outputs: room for %d arrays, the op has %d visible "
                 "outputs", *nout, k->nvis);
  }
  if (rc == LMX_OK) rc = setup_outputs(k, ret, outputs, res, fresh);
  if (rc == LMX_OK) rc = setup_aux(k, nin, inputs);
  if (__builtin_expect(lmx_ag_recording, 0) && rc == LMX_OK)
    rc = lmx_ag_check_outputs(k->op, k->nin, inputs, ret, outputs);
  if (rc == LMX_OK) {
    for (int i = 0; i < k->nout; i++) req[i] = LMX_REQ_WRITE;
    lmx_device_note_op(k->c.dev, k->c.dev_id, k->c.op->name, NULL);
    rc = k->k->forward(&k->c, k->tin, k->tout, req, k->taux);
  }
  if (__builtin_expect(lmx_ag_recording, 0) && rc == LMX_OK) { /* mx.autograd.record */
    lmx_ag_call r = {k->op, k->param, k->oc, k->nkeys, k->keys, k->vals, k->c.is_train};
    rc = lmx_ag_record(&r, k->nin, inputs, k->naux, k->aux, k->nout, res, ret);
    if (rc == LMX_OK && !k->oc) k->owns_param = 0; /* the tape node owns it now */
  }
  for (int i = 0; i < ret; i++) {
    if (!fresh[i]) continue;
    if (rc == LMX_OK) outputs[i] = res[i];
    else lmx_nd_release(res[i]);
  }
  hold(k, inputs, nin, 0), hold(k, given, ngiven, 0);
  if (rc == LMX_OK) *nout = ret;
  return rc;
}

int lmx_imp_invoke(const char *op_name, int nkeys, const char *const *keys,
                   const char *const *vals, int nin, lmx_ndarray *const *inputs, int *nout,
                   lmx_ndarray **outputs, int is_train) {
  call k;
  int rc = call_begin(&k, op_name, nkeys, keys, vals, nin, inputs, outputs, *nout, is_train);
  if (rc == LMX_OK) rc = run_forward(&k, nin, inputs, nout, outputs);
  call_end(&k);
  return rc;
}

/* ---- prepared calls: parameters parsed once, then invoked many times ---------------- */

struct lmx_opcall {
  lmx_refcount rc;
  const lmx_op *op;
  int opid;
  void *param;
  int nkeys;   /* the parameter strings, for autograd's tape (mx.autograd.get_symbol) */
  char **kv;   /* keys then values, 2 * nkeys strings in one allocation */
};

/* Copies n keys and values into one allocation: kv[0..n-1] keys, kv[n..2n-1] values. */
char **lmx_imp_kv_copy(int n, const char *const *keys, const char *const *vals) {
  size_t bytes = (size_t)(2 * n + 1) * sizeof(char *);
  for (int i = 0; i < n; i++) bytes += strlen(keys[i]) + strlen(vals[i]) + 2;
  char **kv = lmx_alloc(bytes);
  if (!kv) return NULL;
  char *p = (char *)(kv + 2 * n + 1);
  for (int i = 0; i < 2 * n; i++) {
    const char *src = i < n ? keys[i] : vals[i - n];
    size_t len = strlen(src) + 1;
    memcpy(p, src, len);
    kv[i] = p, p += len;
  }
  kv[2 * n] = NULL;
  return kv;
}

int lmx_imp_prepare(const char *op_name, int nkeys, const char *const *keys,
                    const char *const *vals, lmx_opcall **out) {
  const lmx_op *op = lmx_op_find(op_name);
  if (!op) return lmx_fail(LMX_ERR_NOTFOUND, "unknown operator '%s'", op_name);
  lmx_opcall *oc = lmx_alloc(sizeof *oc);
  if (!oc) return lmx_fail_nomem("a prepared operator call", sizeof *oc);
  int rc = lmx_op_params_parse(op, NULL, keys, vals, nkeys, &oc->param);
  if (rc != LMX_OK) {
    lmx_free(oc);
    return rc;
  }
  oc->nkeys = nkeys;
  oc->kv = lmx_imp_kv_copy(nkeys, keys, vals);
  if (!oc->kv) {
    lmx_op_params_free(op, oc->param);
    lmx_free(oc);
    return lmx_fail_nomem("a prepared operator call", sizeof *oc);
  }
  lmx_ref_init(&oc->rc);
  oc->op = op;
  oc->opid = lmx_op_index(op);
  *out = oc;
  return LMX_OK;
}

void lmx_imp_retain(lmx_opcall *oc) { lmx_ref_inc(&oc->rc); }

void lmx_imp_release(lmx_opcall *oc) {
  if (oc && lmx_ref_dec(&oc->rc)) {
    if (oc->param) lmx_op_params_free(oc->op, oc->param);
    lmx_free(oc->kv);
    lmx_free(oc);
  }
}

int lmx_imp_set(lmx_opcall *oc, const char *key, double value) {
  return lmx_op_params_set_number(oc->op, oc->param, key, value);
}

int lmx_imp_call(lmx_opcall *oc, int nin, lmx_ndarray *const *inputs, int *nout,
                 lmx_ndarray **outputs, int is_train) {
  call k;
  call_init(&k);
  k.op = oc->op;
  k.opid = oc->opid;
  k.param = oc->param;
  k.oc = oc, k.nkeys = oc->nkeys;
  k.keys = (const char *const *)oc->kv, k.vals = (const char *const *)oc->kv + oc->nkeys;
  int rc = call_setup(&k, nin, inputs, outputs, *nout, is_train);
  if (rc == LMX_OK) rc = run_forward(&k, nin, inputs, nout, outputs);
  call_end(&k);
  return rc;
}

/* Head gradients: the caller's, ones for a missing visible one (autograd's default),
 * none (data NULL) for hidden outputs and for loss ops. */
static int setup_out_grads(call *k, int nout, lmx_ndarray *const *out_grads, lmx_tensor *og) {
  int loss = (k->op->flags & LMX_OPF_LOSS) != 0;
  for (int i = 0; i < k->nout; i++) {
    lmx_ndarray *g = out_grads && i < nout ? out_grads[i] : NULL;
    og[i] = (lmx_tensor){NULL, k->os[i], k->ot[i]};
    if (g) {
      LMX_TRY(check_ctx(k, g, "output gradient", i));
      if (!lmx_shape_equal(&g->shape, &k->os[i]) || g->dtype != k->ot[i])
        return fail_ctx(k, LMX_ERR_SHAPE, "%s %d: shape or dtype differs from the output",
                        "output gradient", i);
      og[i] = tensor_of(g);
    } else if (!loss && i < k->nvis) {
      LMX_TRY(new_tmp(k, &k->os[i], k->ot[i], 1.0, &g));
      og[i] = tensor_of(g);
    }
  }
  return LMX_OK;
}

static int setup_in_grads(call *k, lmx_ndarray **in_grads, const int *reqs, lmx_ndarray **res,
                          int *fresh, lmx_tensor *ig, int *req) {
  for (int i = 0; i < k->nin; i++) {
    req[i] = reqs ? reqs[i] : LMX_REQ_WRITE;
    fresh[i] = 0, res[i] = NULL;
    ig[i] = (lmx_tensor){NULL, k->is[i], k->it[i]};
    if (req[i] < LMX_REQ_NULL || req[i] > LMX_REQ_ADD)
      return fail_ctx(k, LMX_ERR_ARG, "%s %d: unknown req", "input gradient", i);
    if (req[i] == LMX_REQ_NULL) continue;
    if (in_grads[i]) {
      LMX_TRY(check_ctx(k, in_grads[i], "input gradient", i));
      if (!lmx_shape_equal(&in_grads[i]->shape, &k->is[i]) || in_grads[i]->dtype != k->it[i])
        return fail_ctx(k, LMX_ERR_SHAPE, "%s %d: shape or dtype differs from the input",
                        "input gradient", i);
      res[i] = in_grads[i];
    } else {
      /* zeros only for req add: req write overwrites every element */
      LMX_TRY(lmx_nd_create(&k->is[i], k->it[i], k->c.dev_type, k->c.dev_id,
                            req[i] == LMX_REQ_ADD, &res[i]));
      fresh[i] = 1;
    }
    ig[i] = tensor_of(res[i]);
  }
  return LMX_OK;
}

static int check_bwd_outputs(call *k, int nout, lmx_ndarray *const *outputs) {
  if (k->op->flags & LMX_OPF_NO_GRAD)
    return ifail(k, LMX_ERR_UNSUPPORTED, "no gradient (the op cuts it)");
  if (!k->k->backward)
    return lmx_op_require_kernel(k->op, k->c.dev_type, k->c.dev_id, NULL, 1);
  if (nout != k->nout && nout != k->nvis)
    return ifail(k, LMX_ERR_ARG, "expected %d outputs (or the %d visible ones), got %d",
                       k->nout, k->nvis, nout);
  if (nout < k->nout && (k->op->backward_needs & LMX_NEEDS_OUTPUTS))
    return ifail(k, LMX_ERR_ARG, "backward needs all %d outputs, hidden ones included "
                       "(invoke with room for %d outputs), got %d", k->nout, k->nout, nout);
  for (int i = 0; i < k->nout; i++) {
    k->tout[i] = (lmx_tensor){NULL, k->os[i], k->ot[i]};
    if (i >= nout) continue;
    LMX_TRY(check_ctx(k, outputs[i], "output", i));
    if (!lmx_shape_equal(&outputs[i]->shape, &k->os[i]) || outputs[i]->dtype != k->ot[i])
      return fail_ctx(k, LMX_ERR_SHAPE, "%s %d: shape or dtype differs from the inferred one",
                      "output", i);
    k->tout[i] = tensor_of(outputs[i]);
  }
  return LMX_OK;
}

/* Runs the backward kernel of a call whose parameters are set (call_begin / call_setup
 * done, rc its status) and ends the call. */
static int backward_run(call *k, int rc, int nin, lmx_ndarray *const *inputs, int nout,
                        lmx_ndarray *const *outputs, lmx_ndarray *const *out_grads,
                        lmx_ndarray **in_grads, const int *reqs) {
  lmx_ndarray *res[IMP_MAX];
  lmx_tensor og[IMP_MAX], ig[IMP_MAX];
  int fresh[IMP_MAX] = {0}, req[IMP_MAX];
  int held = rc == LMX_OK, ng = held ? (nin < IMP_MAX ? nin : IMP_MAX) : 0;
  lmx_ndarray *given[IMP_MAX] = {NULL}; /* the caller's gradient arrays */
  for (int i = 0; held && i < ng; i++) given[i] = in_grads[i];
  if (held) { /* infer and the kernel may call the host */
    hold(k, inputs, nin, 1), hold(k, outputs, nout, 1), hold(k, given, ng, 1);
    hold(k, out_grads, out_grads ? nout : 0, 1);
  }
  if (rc == LMX_OK) rc = infer(k);
  if (rc == LMX_OK) rc = check_bwd_outputs(k, nout, outputs);
  if (rc == LMX_OK) rc = setup_out_grads(k, nout, out_grads, og);
  if (rc == LMX_OK) rc = setup_in_grads(k, in_grads, reqs, res, fresh, ig, req);
  if (rc == LMX_OK) rc = setup_aux(k, nin, inputs);
  if (rc == LMX_OK) lmx_device_note_op(k->c.dev, k->c.dev_id, k->c.op->name, NULL);
  if (rc == LMX_OK) rc = k->k->backward(&k->c, og, k->tin, k->tout, ig, req, k->taux);
  if (held) {
    hold(k, inputs, nin, 0), hold(k, outputs, nout, 0), hold(k, given, ng, 0);
    hold(k, out_grads, out_grads ? nout : 0, 0);
  }
  for (int i = 0; i < k->nin && i < IMP_MAX; i++) {
    if (!fresh[i]) continue;
    if (rc == LMX_OK) in_grads[i] = res[i];
    else lmx_nd_release(res[i]);
  }
  call_end(k);
  return rc;
}

int lmx_imp_backward(const char *op_name, int nkeys, const char *const *keys,
                     const char *const *vals, int nin, lmx_ndarray *const *inputs, int nout,
                     lmx_ndarray *const *outputs, lmx_ndarray *const *out_grads,
                     lmx_ndarray **in_grads, const int *reqs, int is_train) {
  call k;
  int rc = call_begin(&k, op_name, nkeys, keys, vals, nin, inputs, outputs, nout, is_train);
  return backward_run(&k, rc, nin, inputs, nout, outputs, out_grads, in_grads, reqs);
}

int lmx_imp_backward_op(const lmx_op *op, void *param, int nin, lmx_ndarray *const *inputs,
                        int nout, lmx_ndarray *const *outputs, lmx_ndarray *const *out_grads,
                        lmx_ndarray **in_grads, const int *reqs, int is_train) {
  call k;
  call_init(&k);
  k.op = op;
  k.opid = lmx_op_index(op);
  k.param = param;
  int rc = call_setup(&k, nin, inputs, outputs, nout, is_train);
  return backward_run(&k, rc, nin, inputs, nout, outputs, out_grads, in_grads, reqs);
}
