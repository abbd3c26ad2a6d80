/* indexing.c — CPU glue of take, Embedding, one_hot and where.
 *
 * Indices may be of any dtype (read through doubles and truncated, like MXNet's casts).
 * take views `a` as [outer, A, inner] around `axis` and copies inner-sized rows:
 * mode clip clamps an index into [0, A), wrap takes it modulo A, raise fails with
 * LMX_ERR_ARG naming the index. Embedding is take on axis 0 of the weight in clip mode.
 * Backward scatters the head gradient into the rows (accumulating repeated indices;
 * WRITE zeroes the gradient first); indices get a zero gradient. one_hot has no
 * gradient; where routes the head gradient to x where the condition is non-zero and to
 * y elsewhere (a 1-D condition selects whole rows of x / y).
 * MXNet 1.9: src/operator/tensor/indexing_op.h, control_flow_op.h.
 */
#include <math.h>
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../index_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

/* Resolves index k of `idx` against a dim of size A; -1 with a message for raise mode. */
static int64_t pick(const lmx_op_ctx *c, const lmx_tensor *idx, int64_t k, int64_t A, int mode,
                    int *rc) {
  double v = lmx_load_f64(idx->data, idx->dtype, k);
  int64_t i = isfinite(v) ? (int64_t)v : 0;
  if (i >= 0 && i < A) return i;
  if (mode == LMX_TAKE_WRAP) return ((i % A) + A) % A;
  if (mode == LMX_TAKE_RAISE) {
    char text[160];
    lmx_take_bad_index_text(text, sizeof text, k, i, A);
    *rc = lmx_op_fail(c, LMX_ERR_ARG, "%s", text);
    return -1;
  }
  return i < 0 ? 0 : A - 1;
}

static int take_fwd(const lmx_op_ctx *c, const lmx_tensor *a, const lmx_tensor *idx,
                    const lmx_tensor *out, int req, int embedding) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  if (req == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  lmx_take_plan t;
  LMX_TRY(lmx_plan_take(c, a, idx, embedding, &t));
  LMX_TRY(lmx_glue_check_size(c, out, t.outer * t.K * t.inner, "output"));
  if (out->dtype != a->dtype) return lmx_cpu_fail_dtype(c, out, "output");
  size_t row = (size_t)t.inner * (size_t)lmx_dtype_size(a->dtype);
  int rc = LMX_OK;
  for (int64_t k = 0; k < t.K; k++) {
    int64_t i = pick(c, idx, k, t.A, t.mode, &rc);
    if (i < 0) return rc;
    for (int64_t o = 0; o < t.outer; o++)
      memcpy((char *)out->data + (size_t)(o * t.K + k) * row,
             (const char *)a->data + (size_t)(o * t.A + i) * row, row);
  }
  return LMX_OK;
}

static int take_bwd(const lmx_op_ctx *c, const lmx_tensor *g, const lmx_tensor *a,
                    const lmx_tensor *idx, const lmx_tensor *ga, int req, int embedding) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_take_plan t;
  LMX_TRY(lmx_plan_take(c, a, idx, embedding, &t));
  LMX_TRY(lmx_cpu_check_float(c, ga, "input gradient"));
  LMX_TRY(lmx_glue_check_like(c, ga, &a->shape, a->dtype, "input gradient"));
  LMX_TRY(lmx_glue_check_size(c, g, t.outer * t.K * t.inner, "output gradient"));
  if (req != LMX_REQ_ADD) lmx_cpu_fill(ga->data, ga->dtype, lmx_glue_size(ga), 0.0);
  size_t es = (size_t)lmx_dtype_size(a->dtype);
  int rc = LMX_OK;
  for (int64_t k = 0; k < t.K; k++) {
    int64_t i = pick(c, idx, k, t.A, t.mode, &rc);
    if (i < 0) return rc;
    for (int64_t o = 0; o < t.outer; o++)
      lmx_cpu_scale(ga->dtype, t.inner, (char *)ga->data + (size_t)((o * t.A + i) * t.inner) * es,
                    (const char *)g->data + (size_t)((o * t.K + k) * t.inner) * es, 1.0, 1);
  }
  return LMX_OK;
}

int lmx_cpu_fwd_take(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  return take_fwd(c, &in[0], &in[1], &out[0], req[0], 0);
}

int lmx_cpu_bwd_take(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  return take_bwd(c, &og[0], &in[0], &in[1], &ig[0], req[0], 0);
}

int lmx_cpu_fwd_Embedding(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (in[1].shape.ndim != 2) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'weight': expected 2-D");
  return take_fwd(c, &in[1], &in[0], &out[0], req[0], 1);
}

int lmx_cpu_bwd_Embedding(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)out, (void)aux;
  if (in[1].shape.ndim != 2) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'weight': expected 2-D");
  lmx_cpu_zero_grad(&ig[0], req[0]);
  return take_bwd(c, &og[0], &in[1], &in[0], &ig[1], req[1], 1);
}

/* ---- one_hot ------------------------------------------------------------------------ */

int lmx_cpu_fwd_one_hot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  const lmx_onehot_param *p = c->param;
  int64_t depth = p->depth, K = lmx_glue_size(&in[0]);
  double on = p->on_value, off = p->off_value;
  LMX_TRY(lmx_glue_check_size(c, &in[0], K, "input 'indices'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], K * depth, "output"));
  if (!lmx_dtype_valid(out[0].dtype)) return lmx_cpu_fail_dtype(c, &out[0], "output");
  lmx_cpu_fill(out[0].data, out[0].dtype, K * depth, off);
  for (int64_t k = 0; k < K; k++) {
    double v = lmx_load_f64(in[0].data, in[0].dtype, k);
    if (v >= 0 && v < (double)depth) lmx_store_f64(out[0].data, out[0].dtype, k * depth + (int64_t)v, on);
  }
  return LMX_OK;
}

/* ---- where -------------------------------------------------------------------------- */

static int where_check(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *n, int64_t *row) {
  LMX_TRY(lmx_cpu_check_float(c, &in[1], "input 'x'"));
  return lmx_plan_where(c, in, n, row);
}

int lmx_cpu_fwd_where(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n, row;
  LMX_TRY(where_check(c, in, &n, &row));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[1].shape, in[1].dtype, "output"));
  int dt = in[1].dtype, acc = req[0] == LMX_REQ_ADD;
  for (int64_t i = 0; i < n; i++) {
    int cond = lmx_load_f64(in[0].data, in[0].dtype, i / row) != 0;
    double v = lmx_load_f64(cond ? in[1].data : in[2].data, dt, i);
    if (acc) v += lmx_load_f64(out[0].data, dt, i);
    lmx_store_f64(out[0].data, dt, i, v);
  }
  return LMX_OK;
}

int lmx_cpu_bwd_where(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)out, (void)aux;
  int64_t n, row;
  LMX_TRY(where_check(c, in, &n, &row));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[1].shape, in[1].dtype, "output gradient"));
  lmx_cpu_zero_grad(&ig[0], req[0]);
  int dt = in[1].dtype;
  for (int s = 1; s <= 2; s++) {
    if (req[s] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[s], &in[1].shape, dt, "input gradient"));
    for (int64_t i = 0; i < n; i++) {
      int cond = lmx_load_f64(in[0].data, in[0].dtype, i / row) != 0;
      double v = (cond == (s == 1)) ? lmx_load_f64(og[0].data, dt, i) : 0.0;
      if (req[s] == LMX_REQ_ADD) v += lmx_load_f64(ig[s].data, dt, i);
      lmx_store_f64(ig[s].data, dt, i, v);
    }
  }
  return LMX_OK;
}
