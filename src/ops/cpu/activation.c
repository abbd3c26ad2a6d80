/* activation.c — CPU glue of Activation, LeakyReLU, softmax, log_softmax and
 * SoftmaxActivation.
 *
 * Activation maps act_type onto the elementwise kernels (relu, sigmoid, tanh, softrelu,
 * softsign); its gradient uses the output except softsign (input). LeakyReLU's leaky,
 * elu, selu and gelu are elementwise; prelu has a gamma input with one slope per channel
 * (axis 1) or one for all. rrelu in training draws one slope per element, uniform in
 * [lower_bound, upper_bound) from the global generator, into the hidden output 'mask';
 * in inference it uses the mean slope (lower_bound + upper_bound) / 2 (and writes it to
 * the mask, which MXNet leaves unset, so a backward after it is defined). Its backward
 * always reads the mask: gradient g where the output is > 0, else g * mask.
 * softmax / log_softmax work along `axis` with `temperature`; with use_length a second
 * input 'length' (int32 or int64, data's shape without the axis) limits each row to its
 * first length positions and zeroes the rest, in the output and in the gradient; the
 * gradient of 'length' is zeros. Lengths outside [0, axis size] are refused (MXNet reads
 * out of bounds). SoftmaxActivation mode=instance is softmax over all dims but the first,
 * mode=channel over axis 1.
 * MXNet 1.9: src/operator/nn/activation-inl.h, leaky_relu-inl.h, softmax-inl.h.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../../tensor/random.h"
#include "../op_impl.h"
#include "../softmax_plan.h"
#include "cpu_ops.h"

static int check_pair(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_tensor *ref,
                      const char *what) {
  return lmx_glue_check_like(c, t, &ref->shape, ref->dtype, what);
}

/* ---- Activation ----------------------------------------------------------------------- */

int lmx_cpu_act_code(const lmx_op_ctx *c) {
  switch (((const lmx_act_param *)c->param)->act_type) {
    case LMX_ACT_RELU: return LMX_UN_RELU;
    case LMX_ACT_SIGMOID: return LMX_UN_SIGMOID;
    case LMX_ACT_TANH: return LMX_UN_TANH;
    case LMX_ACT_SOFTRELU: return LMX_UN_SOFTRELU;
    case LMX_ACT_SOFTSIGN: return LMX_UN_SOFTSIGN;
    default: return -1;
  }
}

int lmx_cpu_fwd_Activation(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int op = lmx_cpu_act_code(c);
  if (op < 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'act_type': unsupported value");
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'")); /* half: float32 chunks */
  LMX_TRY(check_pair(c, &out[0], &in[0], "output"));
  lmx_cpu_unary(op, in[0].dtype, lmx_glue_size(&in[0]), out[0].data, in[0].data,
                req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_Activation(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int op = lmx_cpu_act_code(c);
  if (op < 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'act_type': unsupported value");
  LMX_TRY(lmx_cpu_check_float_lowp(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(check_pair(c, &og[0], &ig[0], "output gradient"));
  if (op == LMX_UN_SOFTSIGN) LMX_TRY(check_pair(c, &in[0], &ig[0], "input 'data'"));
  else LMX_TRY(check_pair(c, &out[0], &ig[0], "output"));
  lmx_cpu_unary_bwd(op, ig[0].dtype, lmx_glue_size(&ig[0]), ig[0].data, og[0].data,
                    op == LMX_UN_SOFTSIGN ? in[0].data : NULL,
                    op == LMX_UN_SOFTSIGN ? NULL : out[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- LeakyReLU -------------------------------------------------------------------------- */

enum { KIND_PRELU = 100, KIND_RRELU = 101 };

/* The kernel family of the op's act_type; rrelu's *slope is its inference (mean) slope. */
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

/* rrelu forward: the mask (hidden output 1) gets the slopes, then y = xelu(x, mask). */
static int rrelu_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, double mean) {
  int dt = in[0].dtype;
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(check_pair(c, &out[1], &in[0], "output 'mask'"));
  if (req[1] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "mask");
  if (!c->is_train) {
    lmx_cpu_fill(out[1].data, dt, n, mean);
    lmx_cpu_leaky(LMX_LEAKY_LEAKY, dt, n, out[0].data, in[0].data, mean, req[0] == LMX_REQ_ADD);
    return LMX_OK;
  }
  /* MXNet's order: u ~ U[0, 1), then u * (upper - lower), then + lower, in the dtype */
  const lmx_lrelu_param *p = c->param;
  double lo = p->lower_bound, hi = p->upper_bound;
  lmx_rng_fill_uniform(out[1].data, dt, n, 0.0, 1.0);
  lmx_cpu_scalar_op(LMX_SC_MUL, dt, n, out[1].data, out[1].data, hi - lo, 0);
  lmx_cpu_scalar_op(LMX_SC_PLUS, dt, n, out[1].data, out[1].data, lo, 0);
  lmx_cpu_rrelu(dt, n, out[0].data, in[0].data, out[1].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

static int prelu_dims(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *outer, int64_t *C,
                      int64_t *inner) {
  LMX_TRY(lmx_plan_prelu(c, in, outer, C, inner));
  if (in[1].dtype != in[0].dtype || !in[1].data) return lmx_cpu_fail_dtype(c, &in[1], "input 'gamma'");
  return LMX_OK;
}

int lmx_cpu_fwd_LeakyReLU(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  double slope;
  int kind = leaky_kind(c, &slope);
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(check_pair(c, &out[0], &in[0], "output"));
  int acc = req[0] == LMX_REQ_ADD, dt = in[0].dtype;
  if (kind == KIND_RRELU) return rrelu_fwd(c, in, out, req, slope);
  if (kind == KIND_PRELU) {
    int64_t o, C, inner;
    LMX_TRY(prelu_dims(c, in, &o, &C, &inner));
    lmx_cpu_prelu(dt, o, C, inner, out[0].data, in[0].data, in[1].data, lmx_glue_size(&in[1]), acc);
    return LMX_OK;
  }
  lmx_cpu_leaky(kind, dt, lmx_glue_size(&in[0]), out[0].data, in[0].data, slope, acc);
  return LMX_OK;
}

int lmx_cpu_bwd_LeakyReLU(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)aux;
  double slope;
  int kind = leaky_kind(c, &slope);
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(check_pair(c, &og[0], &in[0], "output gradient"));
  int dt = in[0].dtype;
  if (req[0]) LMX_TRY(check_pair(c, &ig[0], &in[0], "gradient of 'data'"));
  if (kind == KIND_RRELU) { /* MXNet: xelu_grad(output, mask) * grad, in either mode */
    if (!req[0]) return LMX_OK;
    LMX_TRY(check_pair(c, &out[0], &in[0], "output"));
    LMX_TRY(check_pair(c, &out[1], &in[0], "output 'mask'"));
    lmx_cpu_rrelu_bwd(dt, lmx_glue_size(&in[0]), ig[0].data, og[0].data, out[0].data,
                      out[1].data, req[0] == LMX_REQ_ADD);
    return LMX_OK;
  }
  if (kind == KIND_PRELU) {
    int64_t o, C, inner;
    LMX_TRY(prelu_dims(c, in, &o, &C, &inner));
    if (req[1]) LMX_TRY(check_pair(c, &ig[1], &in[1], "gradient of 'gamma'"));
    lmx_cpu_prelu_bwd(dt, o, C, inner, req[0] ? ig[0].data : NULL, req[1] ? ig[1].data : NULL,
                      og[0].data, in[0].data, in[1].data, lmx_glue_size(&in[1]),
                      req[0] == LMX_REQ_ADD, req[1] == LMX_REQ_ADD);
    return LMX_OK;
  }
  if (!req[0]) return LMX_OK;
  LMX_TRY(check_pair(c, &out[0], &in[0], "output"));
  lmx_cpu_leaky_bwd(kind, dt, lmx_glue_size(&in[0]), ig[0].data, og[0].data, in[0].data,
                    out[0].data, slope, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- softmax family ----------------------------------------------------------------- */

typedef lmx_softmax_plan sm_dims;

static int sm_dims_of(const lmx_op_ctx *c, const lmx_shape *s, int activation, sm_dims *d) {
  return lmx_plan_softmax(c, s, activation, d);
}

/* use_length: the shared shape / dtype checks, then every value against [0, axis size]
 * (MXNet reads out of bounds). *l64 tells the kernel the width. */
static int sm_check_length(const lmx_op_ctx *c, const lmx_tensor *len, const lmx_shape *ds,
                           const sm_dims *d, int *l64) {
  LMX_TRY(lmx_plan_softmax_length(c, len, ds, d, l64));
  int64_t bad = lmx_cpu_lengths_check(len->data, *l64, d->outer * d->inner, d->len);
  if (bad >= 0) {
    char text[160];
    lmx_softmax_bad_length_text(text, sizeof text, bad,
                                (long long)lmx_load_f64(len->data, len->dtype, bad), d->len);
    return lmx_op_fail(c, LMX_ERR_ARG, "%s", text);
  }
  return LMX_OK;
}

static int sm_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int logm, int activation) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(check_pair(c, &out[0], &in[0], "output"));
  sm_dims d;
  LMX_TRY(sm_dims_of(c, &in[0].shape, activation, &d));
  int acc = req[0] == LMX_REQ_ADD, l64;
  if (!activation && ((const lmx_softmax_param *)c->param)->use_length == 1) {
    LMX_TRY(sm_check_length(c, &in[1], &in[0].shape, &d, &l64));
    lmx_cpu_softmax_len(in[0].dtype, d.outer, d.len, d.inner, out[0].data, in[0].data,
                        in[1].data, l64, d.temp, logm, acc);
    return LMX_OK;
  }
  lmx_cpu_softmax(in[0].dtype, d.outer, d.len, d.inner, out[0].data, in[0].data, d.temp, logm,
                  acc);
  return LMX_OK;
}

static int sm_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *out, const lmx_tensor *ig, const int *req, int logm,
                  int activation) {
  int use_len = !activation && ((const lmx_softmax_param *)c->param)->use_length == 1;
  if (use_len && req[1] != LMX_REQ_NULL) { /* MXNet: 'length' gets a zero gradient */
    LMX_TRY(lmx_glue_check_like(c, &ig[1], &in[1].shape, in[1].dtype, "gradient of 'length'"));
    lmx_cpu_zero_grad(&ig[1], req[1]);
  }
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &out[0], "output"));
  LMX_TRY(check_pair(c, &og[0], &out[0], "output gradient"));
  LMX_TRY(check_pair(c, &ig[0], &out[0], "gradient of 'data'"));
  sm_dims d;
  LMX_TRY(sm_dims_of(c, &out[0].shape, activation, &d));
  int acc = req[0] == LMX_REQ_ADD, l64;
  if (use_len) {
    LMX_TRY(sm_check_length(c, &in[1], &out[0].shape, &d, &l64));
    lmx_cpu_softmax_len_bwd(out[0].dtype, d.outer, d.len, d.inner, ig[0].data, og[0].data,
                            out[0].data, in[1].data, l64, d.temp, logm, acc);
    return LMX_OK;
  }
  lmx_cpu_softmax_bwd(out[0].dtype, d.outer, d.len, d.inner, ig[0].data, og[0].data,
                      out[0].data, d.temp, logm, acc);
  return LMX_OK;
}

#define CPU_SOFTMAX(id, LOGM, ACT)                                                          \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return sm_fwd(c, in, out, req, LOGM, ACT);                                              \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux;                                                                              \
    return sm_bwd(c, og, in, out, ig, req, LOGM, ACT);                                      \
  }

CPU_SOFTMAX(softmax, 0, 0)
CPU_SOFTMAX(log_softmax, 1, 0)
CPU_SOFTMAX(SoftmaxActivation, 0, 1)
