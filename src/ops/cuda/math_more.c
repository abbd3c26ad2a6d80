/* math_more.c — CUDA glue of the math family (ops14a; src/ops/cpu/math_more.c's twin,
 * calling kernels/cuda/math.cu on the call's stream; formulas in kernels/cpu/math_fns.h).
 *
 * Each operator names its forward row and gradient row(s) of math_fns.h; rows
 * LMX_MF_ZERO mean "no gradient" (zeros, needing nothing). Unary and scalar gradients
 * read (g, x, y), binary ones (g, lhs, rhs). Every req is honoured, ADD on forward
 * outputs included; in place is safe (element i is read before it is written).
 * A broadcast op's gradient maps d(op)/d(side) · g over the output shape into the
 * workspace, then sums it over the axes that side was broadcast along (lmx_cu_reduce).
 * nansum / nanprod reduce a NaN-free copy in the workspace; moments reduces the mean, then
 * the squared deviations (workspace) for var. dtypes: float32, float64, float16.
 */
#include "../math_more.h"
#include "../../../kernels/cpu/math_fns.h"
#include "../../tensor/dtype.h"
#include "../layout_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int same_size(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_tensor *ref,
                     const char *what) {
  LMX_TRY(lmx_glue_check_size(c, t, lmx_glue_size(ref), what));
  if (t->dtype != ref->dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", what, lmx_dtype_str(ref->dtype),
                       lmx_dtype_str(t->dtype));
  return LMX_OK;
}

static double scalar_of(const lmx_op_ctx *c, int with_scalar) {
  return with_scalar ? ((const lmx_scalar_param *)c->param)->scalar : 0.0;
}

/* ---- unary and scalar: out = f(x[, s]); gx (+)= grad(g, x, y[, s]) -------------------- */

static int map1_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, int fn, int with_scalar) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  return lmx_cuda_fail(
      c,
      lmx_cu_math(LMX_CU_S(c), fn, in[0].dtype, lmx_glue_size(&in[0]), out[0].data, in[0].data,
                  NULL, NULL, scalar_of(c, with_scalar), req[0] == LMX_REQ_ADD),
      "lmx_cu_math");
}

static int map1_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *out, const lmx_tensor *ig, const int *req, int fn,
                    int with_scalar) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (fn == LMX_MF_ZERO) return lmx_cuda_zero_grad(c, &ig[0], req[0]);
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(same_size(c, &og[0], &ig[0], "output gradient"));
  if (in[0].data) LMX_TRY(same_size(c, &in[0], &ig[0], "input 'data'"));
  if (out[0].data) LMX_TRY(same_size(c, &out[0], &ig[0], "output"));
  return lmx_cuda_fail(
      c,
      lmx_cu_math(LMX_CU_S(c), fn, ig[0].dtype, n, ig[0].data, og[0].data, in[0].data, out[0].data,
                  scalar_of(c, with_scalar), req[0] == LMX_REQ_ADD),
      "lmx_cu_math");
}

#define CUDA_MAP1(id, FWD, BWD, SC)                                                       \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out, \
                        const int *req, const lmx_tensor *aux) {                          \
    (void)aux;                                                                            \
    return map1_fwd(c, in, out, req, LMX_MF_##FWD, SC);                                   \
  }                                                                                       \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,  \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,      \
                        const lmx_tensor *aux) {                                          \
    (void)aux;                                                                            \
    return map1_bwd(c, og, in, out, ig, req, LMX_MF_##BWD, SC);                           \
  }

CUDA_MAP1(log1p, LOG1P, LOG1P_B, 0)
CUDA_MAP1(expm1, EXPM1, EXPM1_B, 0)
CUDA_MAP1(log2, LOG2, LOG2_B, 0)
CUDA_MAP1(log10, LOG10, LOG10_B, 0)
CUDA_MAP1(cbrt, CBRT, CBRT_B, 0)
CUDA_MAP1(rcbrt, RCBRT, RCBRT_B, 0)
CUDA_MAP1(degrees, DEGREES, DEGREES_B, 0)
CUDA_MAP1(radians, RADIANS, RADIANS_B, 0)
CUDA_MAP1(tan, TAN, TAN_B, 0)
CUDA_MAP1(arcsin, ARCSIN, ARCSIN_B, 0)
CUDA_MAP1(arccos, ARCCOS, ARCCOS_B, 0)
CUDA_MAP1(arctan, ARCTAN, ARCTAN_B, 0)
CUDA_MAP1(sinh, SINH, SINH_B, 0)
CUDA_MAP1(cosh, COSH, COSH_B, 0)
CUDA_MAP1(arcsinh, ARCSINH, ARCSINH_B, 0)
CUDA_MAP1(arccosh, ARCCOSH, ARCCOSH_B, 0)
CUDA_MAP1(arctanh, ARCTANH, ARCTANH_B, 0)
CUDA_MAP1(erf, ERF, ERF_B, 0)
CUDA_MAP1(erfinv, ERFINV, ERFINV_B, 0)
CUDA_MAP1(gamma, GAMMA, GAMMA_B, 0)
CUDA_MAP1(gammaln, GAMMALN, GAMMALN_B, 0)
CUDA_MAP1(fix, FIX, ZERO, 0)
CUDA_MAP1(rint, RINT, ZERO, 0)
CUDA_MAP1(trunc, TRUNC, ZERO, 0)
CUDA_MAP1(softsign, SOFTSIGN, SOFTSIGN_B, 0)
CUDA_MAP1(logical_not, NOT, ZERO, 0)
CUDA_MAP1(_logical_and_scalar, AND_S, ZERO, 1)
CUDA_MAP1(_logical_or_scalar, OR_S, ZERO, 1)
CUDA_MAP1(_logical_xor_scalar, XOR_S, ZERO, 1)
CUDA_MAP1(_hypot_scalar, HYPOT_S, HYPOT_S_B, 1)
CUDA_MAP1(_mod_scalar, MOD_S, MOD_L, 1)
CUDA_MAP1(_rmod_scalar, RMOD_S, RMOD_S_B, 1)
CUDA_MAP1(smooth_l1, SMOOTH_L1, SMOOTH_L1_B, 1)

/* ---- equal-shape binary: out = f(lhs, rhs); g_side (+)= grad(g, lhs, rhs) ------------- */

static int map2_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, int fn) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'lhs'"));
  LMX_TRY(same_size(c, &in[1], &in[0], "input 'rhs'"));
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'lhs'"));
  return lmx_cuda_fail(c,
                       lmx_cu_math(LMX_CU_S(c), fn, in[0].dtype, lmx_glue_size(&in[0]), out[0].data,
                                   in[0].data, in[1].data, NULL, 0, req[0] == LMX_REQ_ADD),
                       "lmx_cu_math");
}

static int map2_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *ig, const int *req, const int fn[2]) {
  static const char *const names[2] = {"gradient of 'lhs'", "gradient of 'rhs'"};
  for (int side = 0; side < 2; side++) {
    if (req[side] == LMX_REQ_NULL) continue;
    if (fn[side] == LMX_MF_ZERO) {
      LMX_TRY(lmx_cuda_zero_grad(c, &ig[side], req[side]));
      continue;
    }
    int64_t n = lmx_glue_size(&ig[side]);
    LMX_TRY(same_size(c, &og[0], &ig[side], "output gradient"));
    LMX_TRY(same_size(c, &in[0], &ig[side], "input 'lhs'"));
    LMX_TRY(same_size(c, &in[1], &ig[side], "input 'rhs'"));
    LMX_TRY(lmx_cuda_check_float(c, &ig[side], names[side]));
    LMX_TRY(
        lmx_cuda_fail(c,
                      lmx_cu_math(LMX_CU_S(c), fn[side], ig[side].dtype, n, ig[side].data,
                                  og[0].data, in[0].data, in[1].data, 0, req[side] == LMX_REQ_ADD),
                      "lmx_cu_math"));
  }
  return LMX_OK;
}

#define CUDA_MAP2(id, FWD, GL, GR)                                                        \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out, \
                        const int *req, const lmx_tensor *aux) {                          \
    (void)aux;                                                                            \
    return map2_fwd(c, in, out, req, LMX_MF_##FWD);                                       \
  }                                                                                       \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,  \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,      \
                        const lmx_tensor *aux) {                                          \
    (void)aux, (void)out;                                                                 \
    return map2_bwd(c, og, in, ig, req, (const int[2]){LMX_MF_##GL, LMX_MF_##GR});        \
  }

CUDA_MAP2(_equal, EQ, ZERO, ZERO)
CUDA_MAP2(_not_equal, NE, ZERO, ZERO)
CUDA_MAP2(_greater, GT, ZERO, ZERO)
CUDA_MAP2(_greater_equal, GE, ZERO, ZERO)
CUDA_MAP2(_lesser, LT, ZERO, ZERO)
CUDA_MAP2(_lesser_equal, LE, ZERO, ZERO)
CUDA_MAP2(_logical_and, AND, ZERO, ZERO)
CUDA_MAP2(_logical_or, OR, ZERO, ZERO)
CUDA_MAP2(_logical_xor, XOR, ZERO, ZERO)
CUDA_MAP2(_hypot, HYPOT, HYPOT_L, HYPOT_R)
CUDA_MAP2(_mod, MOD, MOD_L, MOD_R)

/* ---- broadcasting ------------------------------------------------------------------------ */

static int bc_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out, const int *req,
                  int fn) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_plan_bcast_check(c, in, &out[0]));
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'lhs'"));
  if (in[1].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'rhs'");
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  int nd = out[0].shape.ndim;
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
  lmx_plan_bcast_strides(&in[0].shape, nd, as);
  lmx_plan_bcast_strides(&in[1].shape, nd, bs);
  return lmx_cuda_fail(
      c,
      lmx_cu_math_strided(LMX_CU_S(c), fn, in[0].dtype, nd, out[0].shape.dim, out[0].data,
                          (const void *[3]){in[0].data, in[1].data, NULL},
                          (const int64_t *[3]){as, bs, NULL}, 0, req[0] == LMX_REQ_ADD),
      "lmx_cu_math_strided");
}

static int bc_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *ig, const int *req, const int fn[2]) {
  if (fn[0] == LMX_MF_ZERO && fn[1] == LMX_MF_ZERO) {
    LMX_TRY(lmx_cuda_zero_grad(c, &ig[0], req[0]));
    return lmx_cuda_zero_grad(c, &ig[1], req[1]);
  }
  LMX_TRY(lmx_plan_bcast_check(c, in, &og[0]));
  LMX_TRY(lmx_cuda_check_float(c, &og[0], "output gradient"));
  if (in[0].dtype != og[0].dtype) return lmx_cuda_fail_dtype(c, &in[0], "input 'lhs'");
  if (in[1].dtype != og[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'rhs'");
  int nd = og[0].shape.ndim, dt = og[0].dtype;
  int64_t n = lmx_glue_size(&og[0]);
  LMX_TRY(lmx_glue_check_ws(c, (size_t)n * lmx_dtype_size(dt)));
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM], gs[LMX_MAX_NDIM];
  lmx_plan_bcast_strides(&in[0].shape, nd, as);
  lmx_plan_bcast_strides(&in[1].shape, nd, bs);
  lmx_plan_contig_strides(nd, og[0].shape.dim, gs);
  for (int s = 0; s < 2; s++) {
    if (req[s] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[s], &in[s].shape, in[s].dtype, "input gradient"));
    LMX_TRY(
        lmx_cuda_fail(c,
                      lmx_cu_math_strided(LMX_CU_S(c), fn[s], dt, nd, og[0].shape.dim, c->workspace,
                                          (const void *[3]){og[0].data, in[0].data, in[1].data},
                                          (const int64_t *[3]){gs, as, bs}, 0, 0),
                      "lmx_cu_math_strided"));
    LMX_TRY(lmx_cuda_fail(
        c,
        lmx_cu_reduce(LMX_CU_S(c), LMX_RED_SUM, dt, nd, og[0].shape.dim, c->workspace, ig[s].data,
                      s ? bs : as, lmx_glue_size(&ig[s]), 1.0, req[s] == LMX_REQ_ADD),
        "lmx_cu_reduce"));
  }
  return LMX_OK;
}

/* the gradient's scratch: one output-sized array (8 bytes an element covers every dtype) */
static size_t bc_ws(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)in;
  return (size_t)lmx_shape_size(&out[0]) * 8;
}

#define CUDA_BCAST(id, FWD, GL, GR)                                                          \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                        const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                               \
    return bc_fwd(c, in, out, req, LMX_MF_##FWD);                                            \
  }                                                                                          \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                        const lmx_tensor *aux) {                                             \
    (void)aux, (void)out;                                                                    \
    return bc_bwd(c, og, in, ig, req, (const int[2]){LMX_MF_##GL, LMX_MF_##GR});             \
  }                                                                                          \
  size_t lmx_cuda_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {  \
    return LMX_MF_##GL == LMX_MF_ZERO ? 0 : bc_ws(c, in, out); /* no gradient: no scratch */ \
  }

CUDA_BCAST(broadcast_greater_equal, GE, ZERO, ZERO)
CUDA_BCAST(broadcast_lesser_equal, LE, ZERO, ZERO)
CUDA_BCAST(broadcast_logical_and, AND, ZERO, ZERO)
CUDA_BCAST(broadcast_logical_or, OR, ZERO, ZERO)
CUDA_BCAST(broadcast_logical_xor, XOR, ZERO, ZERO)
CUDA_BCAST(broadcast_hypot, HYPOT, HYPOT_L, HYPOT_R)
CUDA_BCAST(broadcast_mod, MOD, MOD_L, MOD_R)

/* ---- nansum / nanprod: NaN replaced (0 / 1) into the workspace, then reduced --------- */

static int nanred_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, int kind) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t ystr[LMX_MAX_NDIM], ysize, xsize = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], xsize, "input 'data'"));
  LMX_TRY(lmx_plan_reduce(c, &in[0].shape, 0, ystr, &ysize));
  LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  int acc = req[0] == LMX_REQ_ADD;
  if (acc && kind != LMX_RED_SUM) return lmx_cuda_fail_req_add(c, "output");
  LMX_TRY(lmx_glue_check_ws(c, (size_t)xsize * (size_t)lmx_dtype_size(in[0].dtype)));
  LMX_TRY(lmx_cuda_fail(
      c,
      lmx_cu_math(LMX_CU_S(c), kind == LMX_RED_SUM ? LMX_MF_NAN_TO_0 : LMX_MF_NAN_TO_1, in[0].dtype,
                  xsize, c->workspace, in[0].data, NULL, NULL, 0, 0),
      "lmx_cu_math"));
  LMX_TRY(
      lmx_cuda_fail(c,
                    lmx_cu_reduce(LMX_CU_S(c), kind, in[0].dtype, in[0].shape.ndim, in[0].shape.dim,
                                  c->workspace, out[0].data, ystr, ysize, 1.0, acc),
                    "lmx_cu_reduce"));
  return LMX_OK;
}

/* gx[i] (+)= f(g[ystr walk], x[i], y[ystr walk]): 0 where x is NaN */
static int nanred_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req, int fn) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t ystr[LMX_MAX_NDIM], ysize, xstr[LMX_MAX_NDIM];
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_plan_reduce(c, &ig[0].shape, 0, ystr, &ysize));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, ig[0].dtype, "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &og[0], ysize, "output gradient"));
  if (out[0].data) LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output"));
  lmx_plan_contig_strides(ig[0].shape.ndim, ig[0].shape.dim, xstr);
  LMX_TRY(lmx_cuda_fail(
      c,
      lmx_cu_math_strided(LMX_CU_S(c), fn, ig[0].dtype, ig[0].shape.ndim, ig[0].shape.dim,
                          ig[0].data, (const void *[3]){og[0].data, in[0].data, out[0].data},
                          (const int64_t *[3]){ystr, xstr, ystr}, 0, req[0] == LMX_REQ_ADD),
      "lmx_cu_math_strided"));
  return LMX_OK;
}

static size_t in_sized_ws(const lmx_shape *in) {
  return (size_t)lmx_shape_size(&in[0]) * 8;
}

int lmx_cuda_fwd_nansum(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  return nanred_fwd(c, in, out, req, LMX_RED_SUM);
}
int lmx_cuda_bwd_nansum(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  (void)aux;
  return nanred_bwd(c, og, in, out, ig, req, LMX_MF_NANSUM_B);
}
size_t lmx_cuda_ws_nansum(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return in_sized_ws(in);
}
int lmx_cuda_fwd_nanprod(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  return nanred_fwd(c, in, out, req, LMX_RED_PROD);
}
int lmx_cuda_bwd_nanprod(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  (void)aux;
  return nanred_bwd(c, og, in, out, ig, req, LMX_MF_NANPROD_B);
}
size_t lmx_cuda_ws_nanprod(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return in_sized_ws(in);
}

/* ---- moments: mean, then the mean of (x - mean)^2 (squares in the workspace) --------- */

int lmx_cuda_fwd_moments(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output 'mean'");
  if (req[1] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output 'var'");
  int64_t ystr[LMX_MAX_NDIM], ysize, xstr[LMX_MAX_NDIM], xsize = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_math_moments_plan(c, &in[0].shape, ystr, &ysize));
  LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output 'mean'"));
  LMX_TRY(lmx_glue_check_size(c, &out[1], ysize, "output 'var'"));
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output 'mean'");
  if (out[1].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[1], "output 'var'");
  LMX_TRY(lmx_glue_check_ws(c, (size_t)xsize * (size_t)lmx_dtype_size(in[0].dtype)));
  int nd = in[0].shape.ndim, dt = in[0].dtype;
  const int64_t *shape = in[0].shape.dim;
  double scale = xsize ? (double)ysize / (double)xsize : 1.0;
  /* the mean is needed for var even when req[0] is NULL: out[0] holds it either way */
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_reduce(LMX_CU_S(c), LMX_RED_MEAN, dt, nd, shape, in[0].data,
                                      out[0].data, ystr, ysize, scale, 0),
                        "lmx_cu_reduce"));
  if (req[1] == LMX_REQ_NULL) return LMX_OK;
  lmx_plan_contig_strides(nd, shape, xstr);
  LMX_TRY(
      lmx_cuda_fail(c,
                    lmx_cu_math_strided(LMX_CU_S(c), LMX_MF_SQ_DIFF, dt, nd, shape, c->workspace,
                                        (const void *[3]){in[0].data, out[0].data, NULL},
                                        (const int64_t *[3]){xstr, ystr, NULL}, 0, 0),
                    "lmx_cu_math_strided"));
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_reduce(LMX_CU_S(c), LMX_RED_MEAN, dt, nd, shape, c->workspace,
                                      out[1].data, ystr, ysize, scale, 0),
                        "lmx_cu_reduce"));
  return LMX_OK;
}

/* gx (+)= g_mean / N + g_var * 2 (x - mean) / N, N the reduced count */
int lmx_cuda_bwd_moments(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t ystr[LMX_MAX_NDIM], ysize, xstr[LMX_MAX_NDIM], xsize = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_math_moments_plan(c, &ig[0].shape, ystr, &ysize));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, ig[0].dtype, "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output 'mean'"));
  if (og[0].data) LMX_TRY(lmx_glue_check_size(c, &og[0], ysize, "gradient of 'mean'"));
  if (og[1].data) LMX_TRY(lmx_glue_check_size(c, &og[1], ysize, "gradient of 'var'"));
  int nd = ig[0].shape.ndim, dt = ig[0].dtype, acc = req[0] == LMX_REQ_ADD;
  const int64_t *shape = ig[0].shape.dim;
  double inv_n = ysize ? (double)ysize / (double)xsize : 0.0;
  lmx_plan_contig_strides(nd, shape, xstr);
  /* the mean's term (zeros without a head gradient), then the var's added */
  LMX_TRY(lmx_cuda_fail(
      c,
      lmx_cu_math_strided(LMX_CU_S(c), og[0].data ? LMX_MF_SCALE : LMX_MF_ZERO, dt, nd, shape,
                          ig[0].data, (const void *[3]){og[0].data, NULL, NULL},
                          (const int64_t *[3]){ystr, NULL, NULL}, inv_n, acc),
      "lmx_cu_math_strided"));
  if (og[1].data)
    LMX_TRY(
        lmx_cuda_fail(c,
                      lmx_cu_math_strided(LMX_CU_S(c), LMX_MF_VAR_B, dt, nd, shape, ig[0].data,
                                          (const void *[3]){og[1].data, in[0].data, out[0].data},
                                          (const int64_t *[3]){ystr, xstr, ystr}, inv_n, 1),
                      "lmx_cu_math_strided"));
  return LMX_OK;
}

size_t lmx_cuda_ws_moments(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return in_sized_ws(in);
}

/* ---- hard_sigmoid: alpha x, then clamp(. + beta, 0, 1); req ADD goes via the workspace */

int lmx_cuda_fwd_hard_sigmoid(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_hsig_param *p = c->param;
  int64_t n = lmx_glue_size(&in[0]);
  int dt = in[0].dtype, acc = req[0] == LMX_REQ_ADD;
  LMX_TRY(lmx_glue_check_size(c, &in[0], n, "input 'data'"));
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  if (acc) LMX_TRY(lmx_glue_check_ws(c, (size_t)n * (size_t)lmx_dtype_size(dt)));
  void *dst = acc ? c->workspace : out[0].data;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_math(LMX_CU_S(c), LMX_MF_SCALE, dt, n, dst, in[0].data, NULL, NULL, p->alpha, 0),
      "lmx_cu_math"));
  LMX_TRY(lmx_cuda_fail(
      c, lmx_cu_math(LMX_CU_S(c), LMX_MF_CLAMP01_PLUS, dt, n, dst, dst, NULL, NULL, p->beta, 0),
      "lmx_cu_math"));
  if (!acc) return LMX_OK;
  return lmx_cuda_fail(
      c, lmx_cu_math(LMX_CU_S(c), LMX_MF_SCALE, dt, n, out[0].data, dst, NULL, NULL, 1.0, 1),
      "lmx_cu_math");
}

int lmx_cuda_bwd_hard_sigmoid(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)aux, (void)in;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(same_size(c, &og[0], &ig[0], "output gradient"));
  LMX_TRY(same_size(c, &out[0], &ig[0], "output"));
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  return lmx_cuda_fail(
      c,
      lmx_cu_math(LMX_CU_S(c), LMX_MF_HSIG_B, ig[0].dtype, n, ig[0].data, og[0].data, NULL,
                  out[0].data, ((const lmx_hsig_param *)c->param)->alpha, req[0] == LMX_REQ_ADD),
      "lmx_cu_math");
}

size_t lmx_cuda_ws_hard_sigmoid(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return in_sized_ws(in);
}

/* ---- softmin: softmax's glue on -data (workspace); its gradient is softmax's with the
 * temperature negated (linear in 1/temperature, no exponential) ------------------------- */

int lmx_cuda_fwd_softmin(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_glue_check_size(c, &in[0], n, "input 'data'"));
  LMX_TRY(lmx_glue_check_ws(c, (size_t)n * (size_t)lmx_dtype_size(in[0].dtype)));
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_cuda_fail(c,
                        lmx_cu_math(LMX_CU_S(c), LMX_MF_SCALE, in[0].dtype, n, c->workspace,
                                    in[0].data, NULL, NULL, -1.0, 0),
                        "lmx_cu_math"));
  lmx_tensor neg[2] = {in[0], {0}};
  neg[0].data = c->workspace;
  if (((const lmx_softmax_param *)c->param)->use_length == 1) neg[1] = in[1];
  return lmx_cuda_fwd_softmax(c, neg, out, req, aux);
}

int lmx_cuda_bwd_softmin(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  lmx_softmax_param p = *(const lmx_softmax_param *)c->param;
  p.temperature = isnan(p.temperature) ? -1.0 : -p.temperature;
  lmx_op_ctx s = *c;
  s.param = &p;
  return lmx_cuda_bwd_softmax(&s, og, in, out, ig, req, aux);
}

size_t lmx_cuda_ws_softmin(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return in_sized_ws(in);
}
