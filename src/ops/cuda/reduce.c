/* reduce.c — CUDA glue of the broadcast_* binary ops and the reductions (sum, mean, max,
 * min, prod, norm, argmax, argmin): src/ops/cpu/reduce.c's twin, with the shapes turned
 * into strides by src/ops/layout_plan.c (the functions the CPU glue uses) and the work
 * done by kernels/cuda/strided.cu on the call's stream. Same semantics: operands
 * right-aligned against the output with stride 0 on broadcast axes, gradients summed
 * over them (deterministically), comparisons without gradient; reductions addressed by
 * output strides that are 0 on reduced axes, mean scaled by out_size / in_size, req ADD
 * on a forward output for sum and mean only. float32, float64, float16.
 */
#include "../../tensor/dtype.h"
#include "../layout_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

/* ---- broadcast_* -------------------------------------------------------------------- */

static int bcast_check(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *o) {
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'lhs'"));
  if (in[1].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'rhs'");
  return lmx_plan_bcast_check(c, in, o);
}

static int bcast_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(bcast_check(c, in, &out[0]));
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  int nd = out[0].shape.ndim;
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
  lmx_plan_bcast_strides(&in[0].shape, nd, as);
  lmx_plan_bcast_strides(&in[1].shape, nd, bs);
  return lmx_cuda_fail(c, lmx_cu_bcast_binary(LMX_CU_S(c), op, in[0].dtype, nd, out[0].shape.dim,
                                              out[0].data, in[0].data, as, in[1].data, bs,
                                              req[0] == LMX_REQ_ADD),
                       "lmx_cu_bcast_binary");
}

static int bcast_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *ig, const int *req, int op) {
  if (op >= LMX_BC_EQ) {
    LMX_TRY(lmx_cuda_zero_grad(c, &ig[0], req[0]));
    return lmx_cuda_zero_grad(c, &ig[1], req[1]);
  }
  LMX_TRY(bcast_check(c, in, &og[0]));
  if (og[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &og[0], "output gradient");
  int nd = og[0].shape.ndim;
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
  lmx_plan_bcast_strides(&in[0].shape, nd, as);
  lmx_plan_bcast_strides(&in[1].shape, nd, bs);
  for (int s = 0; s < 2; s++) {
    if (req[s] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[s], &in[s].shape, in[s].dtype, "input gradient"));
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_bcast_binary_grad(LMX_CU_S(c), op, s, in[0].dtype, nd,
                                                      og[0].shape.dim, ig[s].data, s ? bs : as,
                                                      lmx_glue_size(&ig[s]), og[0].data,
                                                      in[0].data, as, in[1].data, bs,
                                                      req[s] == LMX_REQ_ADD),
                          "lmx_cu_bcast_binary_grad"));
  }
  return LMX_OK;
}

#define CUDA_BCAST(id, OP)                                                                  \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return bcast_fwd(c, in, out, req, OP);                                                  \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux, (void)out;                                                                   \
    return bcast_bwd(c, og, in, ig, req, OP);                                               \
  }

CUDA_BCAST(broadcast_add, LMX_BC_ADD)
CUDA_BCAST(broadcast_sub, LMX_BC_SUB)
CUDA_BCAST(broadcast_mul, LMX_BC_MUL)
CUDA_BCAST(broadcast_div, LMX_BC_DIV)
CUDA_BCAST(broadcast_maximum, LMX_BC_MAX)
CUDA_BCAST(broadcast_minimum, LMX_BC_MIN)
CUDA_BCAST(broadcast_power, LMX_BC_POW)
CUDA_BCAST(broadcast_equal, LMX_BC_EQ)
CUDA_BCAST(broadcast_not_equal, LMX_BC_NE)
CUDA_BCAST(broadcast_greater, LMX_BC_GT)
CUDA_BCAST(broadcast_lesser, LMX_BC_LT)

/* ---- reductions ----------------------------------------------------------------------- */

static int is_norm(int kind) { return kind == LMX_RED_NORM1 || kind == LMX_RED_NORM2; }

static int red_kind(const lmx_op_ctx *c, int kind) {
  if (kind == LMX_RED_NORM2 && ((const lmx_norm_param *)c->param)->ord == 1) return LMX_RED_NORM1;
  return kind;
}

static int red_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req, int kind) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  kind = red_kind(c, kind);
  int64_t ystr[LMX_MAX_NDIM], ysize, xsize = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], xsize, "input 'data'"));
  LMX_TRY(lmx_plan_reduce(c, &in[0].shape, is_norm(kind), ystr, &ysize));
  LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  int acc = req[0] == LMX_REQ_ADD;
  if (acc && kind != LMX_RED_SUM && kind != LMX_RED_MEAN) return lmx_cuda_fail_req_add(c, "output");
  double scale = kind == LMX_RED_MEAN && xsize ? (double)ysize / (double)xsize : 1.0;
  return lmx_cuda_fail(c, lmx_cu_reduce(LMX_CU_S(c), kind, in[0].dtype, in[0].shape.ndim,
                                        in[0].shape.dim, in[0].data, out[0].data, ystr, ysize,
                                        scale, acc),
                       "lmx_cu_reduce");
}

static int red_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                   const lmx_tensor *out, const lmx_tensor *ig, const int *req, int kind) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  kind = red_kind(c, kind);
  int64_t ystr[LMX_MAX_NDIM], ysize, xsize = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], xsize, "gradient of 'data'"));
  LMX_TRY(lmx_plan_reduce(c, &ig[0].shape, is_norm(kind), ystr, &ysize));
  LMX_TRY(lmx_glue_check_size(c, &og[0], ysize, "output gradient"));
  if (og[0].dtype != ig[0].dtype) return lmx_cuda_fail_dtype(c, &og[0], "output gradient");
  int linear = kind == LMX_RED_SUM || kind == LMX_RED_MEAN;
  if (!linear) {
    LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, ig[0].dtype, "input 'data'"));
    LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output"));
    if (out[0].dtype != ig[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  }
  double scale = kind == LMX_RED_MEAN && xsize ? (double)ysize / (double)xsize : 1.0;
  return lmx_cuda_fail(c, lmx_cu_reduce_bwd(LMX_CU_S(c), kind, ig[0].dtype, ig[0].shape.ndim,
                                            ig[0].shape.dim, ig[0].data,
                                            linear ? NULL : in[0].data, og[0].data,
                                            linear ? NULL : out[0].data, ystr, scale,
                                            req[0] == LMX_REQ_ADD),
                       "lmx_cu_reduce_bwd");
}

#define CUDA_REDUCE(id, KIND)                                                               \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return red_fwd(c, in, out, req, KIND);                                                  \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return red_bwd(c, og, in, out, ig, req, KIND);                                          \
  }

CUDA_REDUCE(sum, LMX_RED_SUM)
CUDA_REDUCE(mean, LMX_RED_MEAN)
CUDA_REDUCE(max, LMX_RED_MAX)
CUDA_REDUCE(min, LMX_RED_MIN)
CUDA_REDUCE(prod, LMX_RED_PROD)
CUDA_REDUCE(norm, LMX_RED_NORM2)

/* ---- argmax / argmin -------------------------------------------------------------------- */

static int arg_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req, int want_min) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  int64_t size = lmx_glue_size(&in[0]), outer, len, inner;
  LMX_TRY(lmx_plan_arg(c, &in[0].shape, &outer, &len, &inner));
  LMX_TRY(lmx_glue_check_size(c, &in[0], size, "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], outer * inner, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  return lmx_cuda_fail(c, lmx_cu_argmax(LMX_CU_S(c), want_min, in[0].dtype, outer, len, inner,
                                        in[0].data, out[0].data),
                       "lmx_cu_argmax");
}

int lmx_cuda_fwd_argmax(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  return arg_fwd(c, in, out, req, 0);
}

int lmx_cuda_fwd_argmin(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  return arg_fwd(c, in, out, req, 1);
}
