/* nn_fc.c — CPU glue of the GEMM operators: FullyConnected, dot, batch_dot.
 *
 * FullyConnected reads data as a matrix [m, k] (flatten: m = dim 0; otherwise every dim
 * but the last), weight [n, k], bias [n], output [m, n]; one sgemm per product, bias
 * added by rows, the bias gradient as a column sum. dot / batch_dot map MXNet's
 * transpose_a / transpose_b onto the GEMM flags: a (..., k) is [m, k] (transposed: a is
 * [k, m] with k = a.shape[0]); b (k, ...) is [k, n] (transposed: [n, k], k = last dim).
 * Gradients are again GEMMs with the flags swapped; req ADD becomes beta = 1.
 * MXNet 1.9: src/operator/nn/fully_connected-inl.h, tensor/dot-inl.h.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

/* ---- FullyConnected ------------------------------------------------------------------- */

typedef struct {
  int64_t m, k, n;
  int bias;
} fc_dims;

static int fc_check(const lmx_op_ctx *c, const lmx_tensor *in, fc_dims *d) {
  const lmx_shape *x = &in[0].shape;
  const lmx_fc_param *p = c->param;
  d->n = p->num_hidden;
  d->bias = !p->no_bias;
  int flatten = p->flatten;
  int64_t size = lmx_glue_size(&in[0]);
  if (x->ndim < 1) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 1-D");
  if (flatten) d->m = x->ndim == 1 ? 1 : x->dim[0];
  else d->m = x->ndim == 1 ? 1 : size / (x->dim[x->ndim - 1] ? x->dim[x->ndim - 1] : 1);
  d->k = d->m ? size / d->m : 0;
  if (!flatten) d->k = x->dim[x->ndim - 1];
  if (d->m * d->k != size)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': cannot be read as a matrix");
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], size, "input 'data'"));
  lmx_shape ws = {2, {d->n, d->k}};
  LMX_TRY(lmx_glue_check_like(c, &in[1], &ws, in[0].dtype, "input 'weight'"));
  if (d->bias) {
    lmx_shape bs = {1, {d->n}};
    LMX_TRY(lmx_glue_check_like(c, &in[2], &bs, in[0].dtype, "input 'bias'"));
  }
  return LMX_OK;
}

int lmx_cpu_fwd_FullyConnected(const lmx_op_ctx *c, const lmx_tensor *in,
                               const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  fc_dims d = {0};
  LMX_TRY(fc_check(c, in, &d));
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  lmx_cpu_fc_fwd(in[0].dtype, d.m, d.k, d.n, out[0].data, in[0].data, in[1].data,
                 d.bias ? in[2].data : NULL, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_FullyConnected(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                               const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                               const lmx_tensor *aux) {
  (void)out, (void)aux;
  fc_dims d = {0};
  LMX_TRY(fc_check(c, in, &d));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.m * d.n, "output gradient"));
  int dt = in[0].dtype, nin = d.bias ? 3 : 2;
  for (int i = 0; i < nin; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  if (req[0]) lmx_cpu_fc_bwd_data(dt, d.m, d.k, d.n, ig[0].data, og[0].data, in[1].data,
                                  req[0] == LMX_REQ_ADD);
  if (req[1]) lmx_cpu_fc_bwd_weight(dt, d.m, d.k, d.n, ig[1].data, og[0].data, in[0].data,
                                    req[1] == LMX_REQ_ADD);
  if (d.bias && req[2])
    lmx_cpu_sum_rows(dt, d.m, d.n, ig[2].data, og[0].data, req[2] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- dot / batch_dot ------------------------------------------------------------------ */

typedef struct {
  int64_t batch, m, n, k;
  int ta, tb;
} mm_dims;

static int mm_check(const lmx_op_ctx *c, const lmx_tensor *in, int batched, mm_dims *d) {
  const lmx_shape *a = &in[0].shape, *b = &in[1].shape;
  const lmx_dot_param *p = c->param;
  d->ta = p->transpose_a;
  d->tb = p->transpose_b;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'lhs'"));
  if (in[1].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'rhs'");
  int64_t sa = lmx_glue_size(&in[0]), sb = lmx_glue_size(&in[1]);
  if (batched) {
    if (a->ndim != 3 || b->ndim != 3 || a->dim[0] != b->dim[0])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' and 'rhs': expected 3-D arrays with "
                         "the same batch size");
    d->batch = a->dim[0];
    d->m = d->ta ? a->dim[2] : a->dim[1];
    d->k = d->ta ? a->dim[1] : a->dim[2];
    d->n = d->tb ? b->dim[1] : b->dim[2];
    int64_t kb = d->tb ? b->dim[2] : b->dim[1];
    if (kb != d->k)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'rhs': expected reduction dim %lld, got %lld",
                         (long long)d->k, (long long)kb);
  } else {
    if (a->ndim < 1 || b->ndim < 1)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' and 'rhs': expected at least 1-D");
    d->batch = 1;
    d->k = d->ta ? a->dim[0] : a->dim[a->ndim - 1];
    d->m = d->k ? sa / d->k : 0;
    int64_t kb = d->tb ? b->dim[b->ndim - 1] : b->dim[0];
    if (kb != d->k)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'rhs': expected reduction dim %lld, got %lld",
                         (long long)d->k, (long long)kb);
    d->n = kb ? sb / kb : 0;
  }
  LMX_TRY(lmx_glue_check_size(c, &in[0], sa, "input 'lhs'"));
  return lmx_glue_check_size(c, &in[1], sb, "input 'rhs'");
}

static int mm_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int batched) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  mm_dims d = {0};
  LMX_TRY(mm_check(c, in, batched, &d));
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.batch * d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  lmx_cpu_batch_gemm(in[0].dtype, d.batch, d.ta, d.tb, d.m, d.n, d.k, in[0].data, in[1].data,
                     out[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

static int mm_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *ig, const int *req, int batched) {
  mm_dims d = {0};
  LMX_TRY(mm_check(c, in, batched, &d));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.batch * d.m * d.n, "output gradient"));
  int dt = in[0].dtype;
  for (int i = 0; i < 2; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  const void *A = in[0].data, *B = in[1].data, *G = og[0].data;
  if (req[0]) { /* dA = G op(B)ᵀ, stored as A is */
    if (!d.ta) lmx_cpu_batch_gemm(dt, d.batch, 0, !d.tb, d.m, d.k, d.n, G, B, ig[0].data,
                                  req[0] == LMX_REQ_ADD);
    else lmx_cpu_batch_gemm(dt, d.batch, d.tb, 1, d.k, d.m, d.n, B, G, ig[0].data,
                            req[0] == LMX_REQ_ADD);
  }
  if (req[1]) { /* dB = op(A)ᵀ G, stored as B is */
    if (!d.tb) lmx_cpu_batch_gemm(dt, d.batch, !d.ta, 0, d.k, d.n, d.m, A, G, ig[1].data,
                                  req[1] == LMX_REQ_ADD);
    else lmx_cpu_batch_gemm(dt, d.batch, 1, d.ta, d.n, d.k, d.m, G, A, ig[1].data,
                            req[1] == LMX_REQ_ADD);
  }
  return LMX_OK;
}

int lmx_cpu_fwd_dot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, const lmx_tensor *aux) {
  (void)aux;
  return mm_fwd(c, in, out, req, 0);
}

int lmx_cpu_bwd_dot(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                    const lmx_tensor *aux) {
  (void)out, (void)aux;
  return mm_bwd(c, og, in, ig, req, 0);
}

int lmx_cpu_fwd_batch_dot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  return mm_fwd(c, in, out, req, 1);
}

int lmx_cpu_bwd_batch_dot(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)out, (void)aux;
  return mm_bwd(c, og, in, ig, req, 1);
}
