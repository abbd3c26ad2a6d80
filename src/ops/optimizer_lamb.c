/* optimizer_lamb.c — LAMB's fused update in MXNet 1.9's two phases (issue 17):
 * lamb_update_phase1, lamb_update_phase2 and the multi-precision mp_lamb_update_phase1,
 * mp_lamb_update_phase2 (MXNet 1.9: src/operator/optimizer_op.cc, optimizer_op-inl.h).
 *
 * phase1 (weight, grad, mean, var) -> g: mean and var update in place (LMX_OPF_UPDATE);
 *   g = m/(sqrt(v)+epsilon) + wd*weight with m, v bias-corrected when bias_correction.
 * phase2 (weight, g, r1, r2) -> the new weight, normally written over weight: r1 = ||weight||
 *   and r2 = ||g|| are one-element arrays (mx.nd.norm's); r1 is clamped to lower_bound /
 *   upper_bound (each when >= 0, as MXNet's kernel), the step is lr*r1/r2*g, or lr*g when
 *   r1 or r2 is 0.
 * mp_ variants: weight and grad float16, mean, var, weight32 (the master copy), g, r1, r2
 *   float32. mp phase1 reads the weight decay term from weight32; mp phase2 updates
 *   weight32 in place and writes it rounded to the float16 output. (MXNet 1.9's
 *   MPLambUpdatePhaseTwoKernel only writes the output and leaves weight32 as it was, which
 *   its own documentation, "weight32 = weight32 - lr * g", and multi_mp_lamb_update
 *   contradict; luamx follows the documented rule, so the master copy trains.)
 * Formulas: kernels/cpu/optim_lamb.c; glue: src/ops/cpu|cuda/optimizer_lamb.c.
 */
#include "op_impl.h"

static const lmx_param_field lamb1_fields[] = {
    LMX_PF(lmx_lamb1_param, beta1, LMX_PT_FLOAT, "0.9", NULL, 0, 0,
           "The decay rate for the 1st moment estimates."),
    LMX_PF(lmx_lamb1_param, beta2, LMX_PT_FLOAT, "0.999", NULL, 0, 0,
           "The decay rate for the 2nd moment estimates."),
    LMX_PF(lmx_lamb1_param, epsilon, LMX_PT_FLOAT, "1e-06", NULL, 0, 0,
           "A small constant for numerical stability."),
    LMX_PF(lmx_lamb1_param, t, LMX_PT_INT, NULL, NULL, 0, 0, "Index update count."),
    LMX_PF(lmx_lamb1_param, bias_correction, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Whether to use bias correction."),
    LMX_PF(lmx_lamb1_param, wd, LMX_PT_FLOAT, NULL, NULL, 0, 0,
           "Weight decay augments the objective function with a regularization term that "
           "penalizes large weights. The penalty scales with the square of the magnitude of "
           "each weight."),
    LMX_PF(lmx_lamb1_param, rescale_grad, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Rescale gradient to grad = rescale_grad*grad."),
    LMX_PF(lmx_lamb1_param, clip_gradient, LMX_PT_FLOAT, "-1.0", NULL, 0, 0,
           "Clip gradient to the range of [-clip_gradient, clip_gradient] If clip_gradient "
           "<= 0, gradient clipping is turned off. grad = max(min(grad, clip_gradient), "
           "-clip_gradient)."),
};
static const lmx_param_field lamb2_fields[] = {
    LMX_PF(lmx_lamb2_param, lr, LMX_PT_FLOAT, NULL, NULL, 0, 0, "Learning rate"),
    LMX_PF(lmx_lamb2_param, lower_bound, LMX_PT_FLOAT, "-1.0", NULL, 0, 0,
           "Lower limit of norm of weight. If lower_bound <= 0, Lower limit is not set"),
    LMX_PF(lmx_lamb2_param, upper_bound, LMX_PT_FLOAT, "-1.0", NULL, 0, 0,
           "Upper limit of norm of weight. If upper_bound <= 0, Upper limit is not set"),
};

static const char *const in_p1[] = {"weight", "grad", "mean", "var", NULL};
static const char *const in_mp_p1[] = {"weight", "grad", "mean", "var", "weight32", NULL};
static const char *const in_p2[] = {"weight", "g", "r1", "r2", NULL};
static const char *const in_mp_p2[] = {"weight", "g", "r1", "r2", "weight32", NULL};
static const int inplace_00[][2] = {{0, 0}};

/* r1, r2: one element each (MXNet checks their first dim is 1); the rest as weight. */
static int p2_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  static const char *const rn[] = {"input 'r1'", "input 'r2'"};
  lmx_shape one = LMX_SHP(1);
  for (int i = 2; i <= 3; i++) {
    if (in[i].ndim <= 0) {
      in[i] = one;
    } else if (lmx_shape_known(&in[i]) && lmx_shape_size(&in[i]) != 1) {
      char b[LMX_SHAPE_STRCAP];
      return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected one element (shape (1,)), got shape %s",
                         rn[i - 2], lmx_shape_str(&in[i], b));
    }
  }
  /* weight, g (and weight32) and the output share one shape: merged, then written back */
  (void)nout;
  static const int ids[] = {0, 1, 4};
  int k = nin > 4 ? 3 : 2;
  lmx_shape m = {0, {0}};
  for (int j = 0; j < k; j++) {
    if (in[ids[j]].ndim <= 0) continue;
    LMX_TRY(lmx_in_assign(c, in, ids[j], &m));
    m = in[ids[j]];
  }
  if (out[0].ndim > 0) {
    LMX_TRY(lmx_out_assign(c, out, 0, &m));
    m = out[0];
  }
  for (int j = 0; j < k; j++) LMX_TRY(lmx_in_assign(c, in, ids[j], &m));
  return lmx_out_assign(c, out, 0, &m);
}

/* phase1: weight, grad float16; mean, var, weight32 and g float32 (MXNet's MPLambPhaseOneType) */
static int mp_p1_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                            int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  static const char *const nm[] = {"input 'weight'", "input 'grad'", "input 'mean'",
                                   "input 'var'", "input 'weight32'"};
  for (int i = 0; i < 5; i++)
    LMX_TRY(lmx_dtype_assign(c, &in[i], i < 2 ? LMX_FLOAT16 : LMX_FLOAT32, nm[i]));
  return lmx_dtype_assign(c, &out[0], LMX_FLOAT32, "output 'output'");
}

/* phase2: weight and the output float16; g, r1, r2, weight32 float32 */
static int mp_p2_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                            int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  static const char *const nm[] = {"input 'weight'", "input 'g'", "input 'r1'", "input 'r2'",
                                   "input 'weight32'"};
  for (int i = 0; i < 5; i++)
    LMX_TRY(lmx_dtype_assign(c, &in[i], i < 1 ? LMX_FLOAT16 : LMX_FLOAT32, nm[i]));
  return lmx_dtype_assign(c, &out[0], LMX_FLOAT16, "output 'output'");
}

#define P1_DOC(PRE, W)                                                                        \
  PRE " it performs the following operations and returns g:\n"                              \
      "  grad = rescale_grad * grad, clipped to [-clip_gradient, clip_gradient] when "      \
      "clip_gradient >= 0\n"                                                                \
      "  mean = beta1 * mean + (1 - beta1) * grad\n"                                        \
      "  var = beta2 * var + (1 - beta2) * grad^2\n"                                        \
      "  if bias_correction: mean_hat = mean / (1 - beta1^t), var_hat = var / (1 - "         \
      "beta2^t), g = mean_hat / (sqrt(var_hat) + epsilon) + wd * " W "\n"                   \
      "  else: g = mean / (sqrt(var) + epsilon) + wd * " W "\n"                             \
      "mean and var are updated in place. Link to paper: https://arxiv.org/pdf/1904.00962.pdf"
#define P2_DOC(PRE, UPD)                                                                      \
  PRE " it performs the following operations and updates the weight:\n"                     \
      "  if lower_bound >= 0: r1 = max(r1, lower_bound)\n"                                  \
      "  if upper_bound >= 0: r1 = min(r1, upper_bound)\n"                                  \
      "  if r1 == 0 or r2 == 0: lr = lr, else lr = lr * (r1 / r2)\n"                        \
      "  " UPD "\n"                                                                         \
      "r1 = norm(weight) and r2 = norm(g) are one-element arrays. Link to paper: "          \
      "https://arxiv.org/pdf/1904.00962.pdf"

const lmx_op lmx_op_lamb_update_phase1 = {
    .name = "lamb_update_phase1",
    .doc = P1_DOC("Phase I of lamb update", "weight"),
    LMX_PARAMS(lamb1_fields, lmx_lamb1_param),
    .inputs = in_p1,
    .flags = LMX_OPF_UPDATE | LMX_OPF_NO_GRAD,
};
const lmx_op lmx_op_mp_lamb_update_phase1 = {
    .name = "mp_lamb_update_phase1",
    .doc = P1_DOC("Mixed Precision version of Phase I of lamb update (float16 weight and grad, "
                  "float32 mean, var, weight32 and g)", "weight32"),
    LMX_PARAMS(lamb1_fields, lmx_lamb1_param),
    .inputs = in_mp_p1,
    .infer_type = mp_p1_infer_type,
    .flags = LMX_OPF_UPDATE | LMX_OPF_NO_GRAD,
};
const lmx_op lmx_op_lamb_update_phase2 = {
    .name = "lamb_update_phase2",
    .doc = P2_DOC("Phase II of lamb update", "weight = weight - lr * g"),
    LMX_PARAMS(lamb2_fields, lmx_lamb2_param),
    .inputs = in_p2,
    .infer_shape = p2_infer_shape,
    .inplace = inplace_00,
    .num_inplace = 1,
    .flags = LMX_OPF_UPDATE | LMX_OPF_NO_GRAD,
};
const lmx_op lmx_op_mp_lamb_update_phase2 = {
    .name = "mp_lamb_update_phase2",
    .doc = P2_DOC("Mixed Precision version Phase II of lamb update (float16 weight, float32 g, "
                  "r1, r2 and weight32)",
                  "weight32 = weight32 - lr * g (in place); weight (float16) = weight32"),
    LMX_PARAMS(lamb2_fields, lmx_lamb2_param),
    .inputs = in_mp_p2,
    .infer_shape = p2_infer_shape,
    .infer_type = mp_p2_infer_type,
    .inplace = inplace_00,
    .num_inplace = 1,
    .flags = LMX_OPF_UPDATE | LMX_OPF_NO_GRAD,
};
