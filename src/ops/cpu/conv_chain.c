/* conv_chain.c — a Convolution followed by BatchNorm at inference and/or an activation,
 * run as one step (the executor's fusion pass marks such chains: src/exec/fuse.c).
 *
 * BatchNorm with the moving statistics is an affine map per channel, y·s + t with
 * s = gamma / sqrt(moving_var + eps) (gamma read as 1 under fix_gamma) and
 * t = beta - moving_mean·s; the convolution's bias b folds into it (t + b·s). The chain's
 * output z = f(conv(x, w)·s + t), f being the Activation (relu, sigmoid, tanh, softrelu)
 * or clip (MobileNet v2's ReLU6), is written by the convolution kernels through the
 * per-channel epilogue of kernels/cpu/chan_ep.c, plane by plane while each is in cache:
 * neither the convolution's output nor BatchNorm's is written. Declines (returns 0,
 * nothing written; the executor then runs the steps one by one, and their kernels report
 * any error) when BatchNorm normalises with batch statistics (training without
 * use_global_stats), its axis is not the channel axis, an act_type is softsign, the
 * dtypes are not float32 or float64 throughout, a request is not write, more than
 * LMX_CHAIN_MAXC channels, or z shares storage with an input.
 */
#include <math.h>
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "../op_params.h"
#include "cpu_ops.h"

enum { LMX_CHAIN_MAXC = 4096 };

int lmx_cpu_ep_act(const lmx_op_ctx *act, lmx_cpu_ep *ep) {
  ep->act = LMX_CPU_EP_NONE;
  if (!act) return 1;
  if (strcmp(act->op->name, "clip") == 0) {
    const lmx_clip_param *p = act->param;
    ep->act = LMX_CPU_EP_CLIP, ep->lo = p->a_min, ep->hi = p->a_max;
    return 1;
  }
  int code = lmx_cpu_act_code(act);
  if (code != LMX_UN_RELU && code != LMX_UN_SIGMOID && code != LMX_UN_TANH &&
      code != LMX_UN_SOFTRELU)
    return 0;
  ep->act = code;
  return 1;
}

/* A [F] vector of dtype dt apart from z. */
static int vec_ok(const lmx_tensor *v, int64_t F, int dt, const lmx_tensor *z) {
  return v->dtype == dt && lmx_glue_size(v) == F && !lmx_cpu_tensors_overlap(v, z);
}

/* BatchNorm's s and t (with the convolution's bias b, may be NULL) into s[F], t[F]; 0
 * when it normalises with batch statistics or does not fit. */
static int bn_coef(const lmx_op_ctx *bn, const lmx_tensor *bn_in, const lmx_tensor *aux,
                   const lmx_tensor *z, const void *b, int64_t N, int64_t F, double *s,
                   double *t) {
  const lmx_bn_param *p = bn->param;
  int dt = z->dtype;
  int64_t outer, C, inner;
  if ((bn->is_train && !p->use_global_stats) ||
      lmx_norm_plan(bn, z, p->axis, &outer, &C, &inner) != LMX_OK || outer != N || C != F)
    return 0;
  for (int i = 1; i < 3; i++)
    if (!vec_ok(&bn_in[i], F, dt, z) || !vec_ok(&aux[i - 1], F, dt, z)) return 0;
  for (int64_t c = 0; c < F; c++) {
    double g = p->fix_gamma ? 1.0 : lmx_load_f64(bn_in[1].data, dt, c);
    s[c] = g / sqrt(lmx_load_f64(aux[1].data, dt, c) + p->eps);
    t[c] = lmx_load_f64(bn_in[2].data, dt, c) - lmx_load_f64(aux[0].data, dt, c) * s[c];
    if (b) t[c] += lmx_load_f64(b, dt, c) * s[c];
  }
  return 1;
}

int lmx_cpu_conv_chain_forward(const lmx_op_ctx *cv, const lmx_tensor *cv_in,
                               const lmx_op_ctx *bn, const lmx_tensor *bn_in,
                               const lmx_tensor *bn_aux, const lmx_op_ctx *act,
                               const lmx_tensor *z, const int *req) {
  const lmx_conv_param *cp = cv->param;
  int dt = z->dtype, nin = cp->no_bias ? 2 : 3;
  lmx_cpu_ep ep = {0};
  if ((dt != LMX_FLOAT32 && dt != LMX_FLOAT64) ||
      (req[0] != LMX_REQ_WRITE && req[0] != LMX_REQ_INPLACE) ||
      z->shape.ndim < 3 || !lmx_cpu_ep_act(act, &ep))
    return 0;
  int64_t N = z->shape.dim[0], F = z->shape.dim[1], O = 1;
  for (int d = 2; d < z->shape.ndim; d++) O *= z->shape.dim[d];
  if (F > LMX_CHAIN_MAXC || N * F * O == 0) return 0;
  for (int i = 0; i < nin; i++)
    if (cv_in[i].dtype != dt || lmx_cpu_tensors_overlap(z, &cv_in[i])) return 0;
  const void *b = nin == 3 ? cv_in[2].data : NULL;
  if (b && lmx_glue_size(&cv_in[2]) != F) return 0;
  double s[LMX_CHAIN_MAXC], t[LMX_CHAIN_MAXC];
  if (bn) {
    if (!bn_coef(bn, bn_in, bn_aux, z, b, N, F, s, t)) return 0;
    ep.scale = s, ep.shift = t;
  } else if (b) {
    for (int64_t c = 0; c < F; c++) t[c] = lmx_load_f64(b, dt, c);
    ep.shift = t;
  }
  return lmx_cpu_conv_fwd_ep(cv, cv_in, z, &ep) == LMX_OK;
}
