/* elemwise.c — CUDA glue of the elementwise families: unary math, scalar ops, equal-shape
 * binary ops, add_n, _copy, zeros_like / ones_like, clip, Cast (src/ops/cpu/elemwise.c's
 * twin, calling kernels/cuda/elementwise.cu and convert.cu on the call's stream).
 *
 * Same checks and semantics as the CPU glue: every req including ADD on forward
 * outputs, in place allowed (each kernel reads element i before writing it), sizes
 * checked before any launch. The kernels take float32, float64 and float16 (float
 * math); Cast converts between all 7 dtypes. Cast's gradient with req ADD converts the
 * head gradient into the workspace first, then adds it.
 */
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int same_size(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_tensor *ref,
                     const char *what) {
  LMX_TRY(lmx_glue_check_size(c, t, lmx_glue_size(ref), what));
  if (t->dtype != ref->dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", what,
                       lmx_dtype_str(ref->dtype), lmx_dtype_str(t->dtype));
  return LMX_OK;
}

/* ---- unary -------------------------------------------------------------------------- */

static int unary_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  return lmx_cuda_fail(c, lmx_cu_unary(LMX_CU_S(c), op, in[0].dtype, lmx_glue_size(&in[0]),
                                       out[0].data, in[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary");
}

static int unary_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (op == LMX_UN_SIGN || op == LMX_UN_FLOOR || op == LMX_UN_CEIL || op == LMX_UN_ROUND)
    return lmx_cuda_zero_grad(c, &ig[0], req[0]); /* zero gradient: needs nothing */
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(same_size(c, &og[0], &ig[0], "output gradient"));
  if (in[0].data) LMX_TRY(same_size(c, &in[0], &ig[0], "input 'data'"));
  if (out[0].data) LMX_TRY(same_size(c, &out[0], &ig[0], "output"));
  return lmx_cuda_fail(c, lmx_cu_unary_bwd(LMX_CU_S(c), op, ig[0].dtype, n, ig[0].data,
                                           og[0].data, in[0].data, out[0].data,
                                           req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary_bwd");
}

#define CUDA_UNARY(id, OP)                                                                  \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return unary_fwd(c, in, out, req, OP);                                                  \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return unary_bwd(c, og, in, out, ig, req, OP);                                          \
  }

CUDA_UNARY(exp, LMX_UN_EXP)
CUDA_UNARY(log, LMX_UN_LOG)
CUDA_UNARY(sqrt, LMX_UN_SQRT)
CUDA_UNARY(rsqrt, LMX_UN_RSQRT)
CUDA_UNARY(square, LMX_UN_SQUARE)
CUDA_UNARY(abs, LMX_UN_ABS)
CUDA_UNARY(sign, LMX_UN_SIGN)
CUDA_UNARY(sin, LMX_UN_SIN)
CUDA_UNARY(cos, LMX_UN_COS)
CUDA_UNARY(tanh, LMX_UN_TANH)
CUDA_UNARY(sigmoid, LMX_UN_SIGMOID)
CUDA_UNARY(relu, LMX_UN_RELU)
CUDA_UNARY(negative, LMX_UN_NEG)
CUDA_UNARY(reciprocal, LMX_UN_RECIP)
CUDA_UNARY(floor, LMX_UN_FLOOR)
CUDA_UNARY(ceil, LMX_UN_CEIL)
CUDA_UNARY(round, LMX_UN_ROUND)
CUDA_UNARY(_copy, LMX_UN_COPY)

/* ---- scalar ops ----------------------------------------------------------------------- */

static int scalar_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  double s = ((const lmx_scalar_param *)c->param)->scalar;
  return lmx_cuda_fail(c, lmx_cu_scalar_op(LMX_CU_S(c), op, in[0].dtype, lmx_glue_size(&in[0]),
                                           out[0].data, in[0].data, s, req[0] == LMX_REQ_ADD),
                       "lmx_cu_scalar_op");
}

static int scalar_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (op >= LMX_SC_EQ) return lmx_cuda_zero_grad(c, &ig[0], req[0]); /* comparisons */
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(same_size(c, &og[0], &ig[0], "output gradient"));
  if (in[0].data) LMX_TRY(same_size(c, &in[0], &ig[0], "input 'data'"));
  if (out[0].data) LMX_TRY(same_size(c, &out[0], &ig[0], "output"));
  double s = ((const lmx_scalar_param *)c->param)->scalar;
  return lmx_cuda_fail(c, lmx_cu_scalar_bwd(LMX_CU_S(c), op, ig[0].dtype, n, ig[0].data,
                                            og[0].data, in[0].data, out[0].data, s,
                                            req[0] == LMX_REQ_ADD),
                       "lmx_cu_scalar_bwd");
}

#define CUDA_SCALAR(id, OP)                                                                 \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return scalar_fwd(c, in, out, req, OP);                                                 \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return scalar_bwd(c, og, in, out, ig, req, OP);                                         \
  }

CUDA_SCALAR(_plus_scalar, LMX_SC_PLUS)
CUDA_SCALAR(_minus_scalar, LMX_SC_MINUS)
CUDA_SCALAR(_rminus_scalar, LMX_SC_RMINUS)
CUDA_SCALAR(_mul_scalar, LMX_SC_MUL)
CUDA_SCALAR(_div_scalar, LMX_SC_DIV)
CUDA_SCALAR(_rdiv_scalar, LMX_SC_RDIV)
CUDA_SCALAR(_power_scalar, LMX_SC_POW)
CUDA_SCALAR(_rpower_scalar, LMX_SC_RPOW)
CUDA_SCALAR(_maximum_scalar, LMX_SC_MAX)
CUDA_SCALAR(_minimum_scalar, LMX_SC_MIN)
CUDA_SCALAR(_equal_scalar, LMX_SC_EQ)
CUDA_SCALAR(_not_equal_scalar, LMX_SC_NE)
CUDA_SCALAR(_greater_scalar, LMX_SC_GT)
CUDA_SCALAR(_greater_equal_scalar, LMX_SC_GE)
CUDA_SCALAR(_lesser_scalar, LMX_SC_LT)
CUDA_SCALAR(_lesser_equal_scalar, LMX_SC_LE)

/* ---- equal-shape binary --------------------------------------------------------------- */

static int binary_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'lhs'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'lhs'"));
  LMX_TRY(same_size(c, &in[1], &in[0], "input 'rhs'"));
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  return lmx_cuda_fail(c, lmx_cu_ew_binary(LMX_CU_S(c), op, in[0].dtype, lmx_glue_size(&in[0]),
                                           out[0].data, in[0].data, in[1].data,
                                           req[0] == LMX_REQ_ADD),
                       "lmx_cu_ew_binary");
}

static int binary_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *ig, const int *req, int op) {
  static const char *const names[2] = {"gradient of 'lhs'", "gradient of 'rhs'"};
  for (int side = 0; side < 2; side++) {
    if (req[side] == LMX_REQ_NULL) continue;
    int64_t n = lmx_glue_size(&ig[side]);
    LMX_TRY(lmx_cuda_check_float(c, &ig[side], names[side]));
    LMX_TRY(same_size(c, &og[0], &ig[side], "output gradient"));
    LMX_TRY(same_size(c, &in[0], &ig[side], "input 'lhs'"));
    LMX_TRY(same_size(c, &in[1], &ig[side], "input 'rhs'"));
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_ew_binary_bwd(LMX_CU_S(c), op, side, ig[side].dtype, n,
                                                  ig[side].data, og[0].data, in[0].data,
                                                  in[1].data, req[side] == LMX_REQ_ADD),
                          "lmx_cu_ew_binary_bwd"));
  }
  return LMX_OK;
}

#define CUDA_BINARY(id, OP)                                                                 \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return binary_fwd(c, in, out, req, OP);                                                 \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux, (void)out;                                                                   \
    return binary_bwd(c, og, in, ig, req, OP);                                              \
  }

CUDA_BINARY(elemwise_add, LMX_BIN_ADD)
CUDA_BINARY(elemwise_sub, LMX_BIN_SUB)
CUDA_BINARY(elemwise_mul, LMX_BIN_MUL)
CUDA_BINARY(elemwise_div, LMX_BIN_DIV)
CUDA_BINARY(_power, LMX_BIN_POW)
CUDA_BINARY(_maximum, LMX_BIN_MAX)
CUDA_BINARY(_minimum, LMX_BIN_MIN)

/* ---- add_n: out (+)= Σ in[i] in the CPU's order; the output may share input 0 -------- */

enum { ADDN_CHUNK = 64 };

int lmx_cuda_fwd_add_n(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int nin = (int)((const lmx_addn_param *)c->param)->num_args;
  int64_t n = lmx_glue_size(&out[0]);
  LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
  for (int i = 0; i < nin; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "input 'arg%d'", i);
    LMX_TRY(same_size(c, &in[i], &out[0], nm));
  }
  /* host array of device pointers, in chunks (the launcher reads it during the call) */
  const void *ptrs[ADDN_CHUNK];
  for (int i0 = 0; i0 < nin; i0 += ADDN_CHUNK) {
    int m = nin - i0 < ADDN_CHUNK ? nin - i0 : ADDN_CHUNK;
    for (int k = 0; k < m; k++) ptrs[k] = in[i0 + k].data;
    int acc = i0 > 0 || req[0] == LMX_REQ_ADD;
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_sum_n(LMX_CU_S(c), out[0].dtype, n, out[0].data, ptrs, m,
                                          acc),
                          "lmx_cu_sum_n"));
  }
  return LMX_OK;
}

int lmx_cuda_bwd_add_n(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                       const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  int nin = (int)((const lmx_addn_param *)c->param)->num_args;
  for (int i = 0; i < nin; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    LMX_TRY(same_size(c, &og[0], &ig[i], "output gradient"));
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_scale(LMX_CU_S(c), ig[i].dtype, lmx_glue_size(&ig[i]),
                                          ig[i].data, og[0].data, 1.0, req[i] == LMX_REQ_ADD),
                          "lmx_cu_scale"));
  }
  return LMX_OK;
}

/* ---- zeros_like / ones_like (no backward, as on the CPU) ---------------------------------- */

static int fill_like(const lmx_op_ctx *c, const lmx_tensor *out, const int *req, double v) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n = lmx_glue_size(&out[0]);
  if (req[0] == LMX_REQ_ADD) {
    if (v == 0.0) return LMX_OK;
    LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
    return lmx_cuda_fail(c, lmx_cu_scalar_op(LMX_CU_S(c), LMX_SC_PLUS, out[0].dtype, n,
                                             out[0].data, out[0].data, v, 0),
                         "lmx_cu_scalar_op");
  }
  return lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[0].data, out[0].dtype, n, v),
                       "lmx_cu_fill");
}

int lmx_cuda_fwd_zeros_like(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return fill_like(c, out, req, 0.0);
}

int lmx_cuda_fwd_ones_like(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return fill_like(c, out, req, 1.0);
}

/* ---- clip: max with a_min then min with a_max; the gradient passes inside ------------- */

int lmx_cuda_fwd_clip(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(same_size(c, &out[0], &in[0], "output"));
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  const lmx_clip_param *p = c->param;
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cuda_fail(c, lmx_cu_scalar_op(LMX_CU_S(c), LMX_SC_MAX, in[0].dtype, n,
                                            out[0].data, in[0].data, p->a_min, 0),
                        "lmx_cu_scalar_op"));
  return lmx_cuda_fail(c, lmx_cu_scalar_op(LMX_CU_S(c), LMX_SC_MIN, in[0].dtype, n, out[0].data,
                                           out[0].data, p->a_max, 0),
                       "lmx_cu_scalar_op");
}

int lmx_cuda_bwd_clip(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(same_size(c, &og[0], &ig[0], "output gradient"));
  LMX_TRY(same_size(c, &in[0], &ig[0], "input 'data'"));
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  const lmx_clip_param *p = c->param;
  return lmx_cuda_fail(c, lmx_cu_clip_bwd(LMX_CU_S(c), ig[0].dtype, lmx_glue_size(&ig[0]),
                                          ig[0].data, og[0].data, in[0].data, p->a_min,
                                          p->a_max, req[0] == LMX_REQ_ADD),
                       "lmx_cu_clip_bwd");
}

/* ---- Cast: any dtype to any dtype; the gradient casts back ----------------------------- */

size_t lmx_cuda_ws_Cast(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return (size_t)lmx_shape_size(&in[0]) * 8; /* the head gradient in the input's dtype */
}

int lmx_cuda_fwd_Cast(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], lmx_glue_size(&in[0]), "output"));
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  return lmx_cuda_fail(c, lmx_cu_convert(LMX_CU_S(c), out[0].data, out[0].dtype, in[0].data,
                                         in[0].dtype, lmx_glue_size(&in[0])),
                       "lmx_cu_convert");
}

int lmx_cuda_bwd_Cast(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_glue_check_size(c, &og[0], n, "output gradient"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], n, "gradient of 'data'"));
  if (req[0] != LMX_REQ_ADD)
    return lmx_cuda_fail(c, lmx_cu_convert(LMX_CU_S(c), ig[0].data, ig[0].dtype, og[0].data,
                                           og[0].dtype, n),
                         "lmx_cu_convert");
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data' (req 'add')"));
  const void *src = og[0].data;
  if (og[0].dtype != ig[0].dtype) {
    LMX_TRY(lmx_glue_check_ws(c, (size_t)n * (size_t)lmx_dtype_size(ig[0].dtype)));
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_convert(LMX_CU_S(c), c->workspace, ig[0].dtype, og[0].data,
                                            og[0].dtype, n),
                          "lmx_cu_convert"));
    src = c->workspace;
  }
  return lmx_cuda_fail(c, lmx_cu_scale(LMX_CU_S(c), ig[0].dtype, n, ig[0].data, src, 1.0, 1),
                       "lmx_cu_scale");
}
