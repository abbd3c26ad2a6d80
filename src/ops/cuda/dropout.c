/* dropout.c — CUDA glue of Dropout (the Dropout part of src/ops/cpu/norm.c), composed of
 * K1's kernels on the call's stream: the mask (0 or 1/(1-p), full data shape) is drawn by
 * lmx_cu_dropout_mask from the counter-based generator (Philox, key from
 * lmx_rng_device_key: a seed gives the same masks on every run, not the CPU's), made
 * constant along `axes` by an in-place strided copy from index 0 of those axes (every
 * element reads a position that only ever rewrites its own value), and applied with an
 * elementwise multiply. Outside training (mode 'training') or with p = 0 the mask is ones
 * and the output a copy. Backward multiplies the head gradient by the mask.
 * float32, float64 and float16.
 */
#include "../../tensor/random.h"
#include "../layout_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int share_mask(const lmx_op_ctx *c, const lmx_tensor *m) {
  const lmx_shape axes = ((const lmx_dropout_param *)c->param)->axes;
  if (axes.ndim <= 0) return LMX_OK;
  int nd = m->shape.ndim;
  int64_t st[LMX_MAX_NDIM], src[LMX_MAX_NDIM];
  lmx_plan_contig_strides(nd, m->shape.dim, st);
  for (int d = 0; d < nd; d++) src[d] = st[d];
  for (int k = 0; k < axes.ndim; k++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axes", axes.dim[k], nd, &a));
    src[a] = 0;
  }
  return lmx_cuda_fail(c, lmx_cu_strided_copy(LMX_CU_S(c), m->dtype, nd, m->shape.dim, m->data,
                                              st, m->data, src, 0),
                       "lmx_cu_strided_copy");
}

int lmx_cuda_fwd_Dropout(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  int dt = in[0].dtype;
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], n, "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, dt, "output"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &in[0].shape, dt, "output 'mask'"));
  if (req[1] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "mask");
  const lmx_dropout_param *prm = c->param;
  double p = prm->p;
  int acc = req[0] == LMX_REQ_ADD;
  if (!((c->is_train || prm->mode == LMX_DROPOUT_ALWAYS) && p > 0)) {
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[1].data, dt, n, 1.0), "lmx_cu_fill"));
    if (!req[0]) return LMX_OK;
    return lmx_cuda_fail(c, lmx_cu_scale(LMX_CU_S(c), dt, n, out[0].data, in[0].data, 1.0, acc),
                         "lmx_cu_scale");
  }
  if (p >= 1) { /* every draw is below p: the CPU's mask of zeros */
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[1].data, dt, n, 0.0), "lmx_cu_fill"));
  } else {
    uint64_t seed, offset;
    lmx_rng_device_key(lmx_philox_blocks(dt == LMX_FLOAT64, n), &seed, &offset);
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_dropout_mask(LMX_CU_S(c), dt, n, out[1].data, p, seed,
                                                 offset),
                          "lmx_cu_dropout_mask"));
    LMX_TRY(share_mask(c, &out[1]));
  }
  if (!req[0]) return LMX_OK;
  return lmx_cuda_fail(c, lmx_cu_ew_binary(LMX_CU_S(c), LMX_BIN_MUL, dt, n, out[0].data,
                                           in[0].data, out[1].data, acc),
                       "lmx_cu_ew_binary");
}

int lmx_cuda_bwd_Dropout(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  (void)in, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int dt = ig[0].dtype;
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &ig[0].shape, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &ig[0].shape, dt, "output 'mask'"));
  return lmx_cuda_fail(c, lmx_cu_ew_binary(LMX_CU_S(c), LMX_BIN_MUL, dt, n, ig[0].data,
                                           og[0].data, out[1].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_ew_binary");
}
