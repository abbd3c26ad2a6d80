/* activation.c — CUDA glue of Activation, LeakyReLU, softmax, log_softmax and
 * SoftmaxActivation (src/ops/cpu/activation.c's twin, on the call's stream).
 *
 * Activation maps act_type onto K1's elementwise kernels (lmx_cu_unary, the CPU's op
 * codes); its gradient reads the output, softsign's the input. LeakyReLU's leaky, elu,
 * selu, gelu and prelu run kernels/cuda/nn.cu's kernels; rrelu in training draws its
 * slopes (hidden output 'mask') from the counter-based generator (uniform in
 * [lower_bound, upper_bound), key from lmx_rng_device_key: reproducible from a seed, not
 * the CPU's draws), in inference it uses the mean slope as the CPU does. The softmax
 * family's dims come from src/ops/softmax_plan.c (shared with the CPU glue); with
 * use_length the lengths are clamped into [0, axis size] on the device and the first
 * out-of-range one is recorded in the device's raise word, reported with the CPU's
 * message at the next synchronisation (checking them here would need one).
 * float32, float64 and float16 (float math).
 */
#include "../../tensor/random.h"
#include "../op_impl.h"
#include "../softmax_plan.h"
#include "k1_glue.h"

static int act_code(const lmx_op_ctx *c) {
  switch (((const lmx_act_param *)c->param)->act_type) {
    case LMX_ACT_RELU: return LMX_UN_RELU;
    case LMX_ACT_SIGMOID: return LMX_UN_SIGMOID;
    case LMX_ACT_TANH: return LMX_UN_TANH;
    case LMX_ACT_SOFTRELU: return LMX_UN_SOFTRELU;
    case LMX_ACT_SOFTSIGN: return LMX_UN_SOFTSIGN;
    default: return -1;
  }
}

int lmx_cuda_fwd_Activation(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int op = act_code(c);
  if (op < 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'act_type': unsupported value");
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_unary(LMX_CU_S(c), op, in[0].dtype, lmx_glue_size(&in[0]),
                                       out[0].data, in[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary");
}

int lmx_cuda_bwd_Activation(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int op = act_code(c);
  if (op < 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'act_type': unsupported value");
  int soft = op == LMX_UN_SOFTSIGN, dt = ig[0].dtype;
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], lmx_glue_size(&ig[0]), "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &ig[0].shape, dt, "output gradient"));
  if (soft) LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, dt, "input 'data'"));
  else LMX_TRY(lmx_glue_check_like(c, &out[0], &ig[0].shape, dt, "output"));
  return lmx_cuda_fail(c, lmx_cu_unary_bwd(LMX_CU_S(c), op, dt, lmx_glue_size(&ig[0]),
                                           ig[0].data, og[0].data, soft ? in[0].data : NULL,
                                           soft ? NULL : out[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary_bwd");
}

/* ---- LeakyReLU -------------------------------------------------------------------------- */

enum { KIND_PRELU = 100, KIND_RRELU = 101 };

/* the kernel family of act_type; rrelu's *slope is its inference (mean) slope */
static int leaky_kind(const lmx_op_ctx *c, double *slope) {
  const lmx_lrelu_param *p = c->param;
  *slope = p->slope;
  switch (p->act_type) {
    case LMX_LRELU_ELU: return LMX_LEAKY_ELU;
    case LMX_LRELU_SELU: return LMX_LEAKY_SELU;
    case LMX_LRELU_GELU: return LMX_LEAKY_GELU;
    case LMX_LRELU_PRELU: return KIND_PRELU;
    case LMX_LRELU_RRELU: *slope = (p->lower_bound + p->upper_bound) / 2; return KIND_RRELU;
    default: return LMX_LEAKY_LEAKY;
  }
}

static int like(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_tensor *ref, const char *w) {
  return lmx_glue_check_like(c, t, &ref->shape, ref->dtype, w);
}

static int rrelu_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, double mean) {
  int dt = in[0].dtype, acc = req[0] == LMX_REQ_ADD;
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(like(c, &out[1], &in[0], "output 'mask'"));
  if (req[1] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "mask");
  if (!c->is_train) {
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[1].data, dt, n, mean), "lmx_cu_fill"));
    return lmx_cuda_fail(c, lmx_cu_leaky(LMX_CU_S(c), LMX_LEAKY_LEAKY, dt, n, out[0].data,
                                         in[0].data, mean, acc),
                         "lmx_cu_leaky");
  }
  const lmx_lrelu_param *p = c->param;
  uint64_t seed, offset;
  lmx_rng_device_key(lmx_philox_blocks(dt == LMX_FLOAT64, n), &seed, &offset);
  LMX_TRY(lmx_cuda_fail(c, lmx_cu_random_uniform(LMX_CU_S(c), dt, n, out[1].data, p->lower_bound,
                                                 p->upper_bound, seed, offset),
                        "lmx_cu_random_uniform"));
  return lmx_cuda_fail(c, lmx_cu_rrelu(LMX_CU_S(c), dt, n, out[0].data, in[0].data, out[1].data,
                                       acc),
                       "lmx_cu_rrelu");
}

static int prelu_dims(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *o, int64_t *C,
                      int64_t *inner) {
  LMX_TRY(lmx_plan_prelu(c, in, o, C, inner));
  if (in[1].dtype != in[0].dtype || !in[1].data) return lmx_cuda_fail_dtype(c, &in[1], "input 'gamma'");
  return LMX_OK;
}

int lmx_cuda_fwd_LeakyReLU(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  double slope;
  int kind = leaky_kind(c, &slope);
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(like(c, &out[0], &in[0], "output"));
  int acc = req[0] == LMX_REQ_ADD, dt = in[0].dtype;
  if (kind == KIND_RRELU) return rrelu_fwd(c, in, out, req, slope);
  if (kind == KIND_PRELU) {
    int64_t o, C, inner;
    LMX_TRY(prelu_dims(c, in, &o, &C, &inner));
    return lmx_cuda_fail(c, lmx_cu_prelu(LMX_CU_S(c), dt, o, C, inner, out[0].data, in[0].data,
                                         in[1].data, lmx_glue_size(&in[1]), acc),
                         "lmx_cu_prelu");
  }
  return lmx_cuda_fail(c, lmx_cu_leaky(LMX_CU_S(c), kind, dt, lmx_glue_size(&in[0]), out[0].data,
                                       in[0].data, slope, acc),
                       "lmx_cu_leaky");
}

int lmx_cuda_bwd_LeakyReLU(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)aux;
  double slope;
  int kind = leaky_kind(c, &slope);
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(like(c, &og[0], &in[0], "output gradient"));
  int dt = in[0].dtype, acc = req[0] == LMX_REQ_ADD;
  int64_t n = lmx_glue_size(&in[0]);
  if (req[0]) LMX_TRY(like(c, &ig[0], &in[0], "gradient of 'data'"));
  if (kind == KIND_RRELU) {
    if (!req[0]) return LMX_OK;
    LMX_TRY(like(c, &out[0], &in[0], "output"));
    LMX_TRY(like(c, &out[1], &in[0], "output 'mask'"));
    return lmx_cuda_fail(c, lmx_cu_rrelu_bwd(LMX_CU_S(c), dt, n, ig[0].data, og[0].data,
                                             out[0].data, out[1].data, acc),
                         "lmx_cu_rrelu_bwd");
  }
  if (kind == KIND_PRELU) {
    int64_t o, C, inner;
    LMX_TRY(prelu_dims(c, in, &o, &C, &inner));
    if (req[1]) LMX_TRY(like(c, &ig[1], &in[1], "gradient of 'gamma'"));
    return lmx_cuda_fail(c, lmx_cu_prelu_bwd(LMX_CU_S(c), dt, o, C, inner,
                                             req[0] ? ig[0].data : NULL,
                                             req[1] ? ig[1].data : NULL, og[0].data, in[0].data,
                                             in[1].data, lmx_glue_size(&in[1]), acc,
                                             req[1] == LMX_REQ_ADD),
                         "lmx_cu_prelu_bwd");
  }
  if (!req[0]) return LMX_OK;
  LMX_TRY(like(c, &out[0], &in[0], "output"));
  return lmx_cuda_fail(c, lmx_cu_leaky_bwd(LMX_CU_S(c), kind, dt, n, ig[0].data, og[0].data,
                                           in[0].data, out[0].data, slope, acc),
                       "lmx_cu_leaky_bwd");
}

/* ---- softmax family ----------------------------------------------------------------- */

static int use_length(const lmx_op_ctx *c, int activation) {
  return !activation && ((const lmx_softmax_param *)c->param)->use_length == 1;
}

static int sm_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int logm, int activation) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(like(c, &out[0], &in[0], "output"));
  lmx_softmax_plan d;
  LMX_TRY(lmx_plan_softmax(c, &in[0].shape, activation, &d));
  int acc = req[0] == LMX_REQ_ADD, l64;
  if (use_length(c, activation)) {
    LMX_TRY(lmx_plan_softmax_length(c, &in[1], &in[0].shape, &d, &l64));
    lmx_cu_raise bad;
    LMX_TRY(lmx_cuda_raise_for(c, lmx_softmax_bad_length_text, d.len, &bad));
    return lmx_cuda_fail(c, lmx_cu_softmax_len(LMX_CU_S(c), in[0].dtype, d.outer, d.len, d.inner,
                                               out[0].data, in[0].data, in[1].data, l64, d.temp,
                                               logm, acc, bad),
                         "lmx_cu_softmax_len");
  }
  return lmx_cuda_fail(c, lmx_cu_softmax(LMX_CU_S(c), in[0].dtype, d.outer, d.len, d.inner,
                                         out[0].data, in[0].data, d.temp, logm, acc),
                       "lmx_cu_softmax");
}

static int sm_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *out, const lmx_tensor *ig, const int *req, int logm,
                  int activation) {
  int ul = use_length(c, activation);
  if (ul && req[1] != LMX_REQ_NULL) { /* MXNet: 'length' gets a zero gradient */
    LMX_TRY(lmx_glue_check_like(c, &ig[1], &in[1].shape, in[1].dtype, "gradient of 'length'"));
    LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  }
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], lmx_glue_size(&out[0]), "output"));
  LMX_TRY(like(c, &og[0], &out[0], "output gradient"));
  LMX_TRY(like(c, &ig[0], &out[0], "gradient of 'data'"));
  lmx_softmax_plan d;
  LMX_TRY(lmx_plan_softmax(c, &out[0].shape, activation, &d));
  int acc = req[0] == LMX_REQ_ADD, l64;
  if (ul) {
    LMX_TRY(lmx_plan_softmax_length(c, &in[1], &out[0].shape, &d, &l64));
    lmx_cu_raise bad;
    LMX_TRY(lmx_cuda_raise_for(c, lmx_softmax_bad_length_text, d.len, &bad));
    return lmx_cuda_fail(c, lmx_cu_softmax_len_bwd(LMX_CU_S(c), out[0].dtype, d.outer, d.len,
                                                   d.inner, ig[0].data, og[0].data, out[0].data,
                                                   in[1].data, l64, d.temp, logm, acc, bad),
                         "lmx_cu_softmax_len_bwd");
  }
  return lmx_cuda_fail(c, lmx_cu_softmax_bwd(LMX_CU_S(c), out[0].dtype, d.outer, d.len, d.inner,
                                             ig[0].data, og[0].data, out[0].data, d.temp, logm,
                                             acc),
                       "lmx_cu_softmax_bwd");
}

#define CUDA_SOFTMAX(id, LOGM, ACT)                                                          \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                        const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                               \
    return sm_fwd(c, in, out, req, LOGM, ACT);                                               \
  }                                                                                          \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                        const lmx_tensor *aux) {                                             \
    (void)aux;                                                                               \
    return sm_bwd(c, og, in, out, ig, req, LOGM, ACT);                                       \
  }

CUDA_SOFTMAX(softmax, 0, 0)
CUDA_SOFTMAX(log_softmax, 1, 0)
CUDA_SOFTMAX(SoftmaxActivation, 0, 1)
