/* fc_smo.c — CPU glue of the fused backward of FullyConnected + SoftmaxOutput (the
 * executor's pairing: src/exec/fuse.c; the kernel: kernels/cpu/fc_smo.c).
 *
 * The fused case: everything float32; SoftmaxOutput over the last axis of FC's [m, n]
 * output (inner 1, the classes are FC's n), out_grad false, its data gradient written
 * (not added); any normalization, smooth_alpha, use_ignore; FullyConnected with or
 * without bias, any req of its gradients. The gradient of the SoftmaxOutput's data
 * (FC's output gradient) is used as scratch: the executor has checked that nothing else
 * reads it. Arrays that overlap (the memory plan may share storage between entries)
 * fall back to the two kernels. Anything else returns 0 and the executor runs the two
 * steps, whose kernels report what is wrong, if anything is.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int is_f32(const lmx_tensor *t) { return t->dtype == LMX_FLOAT32; }

static int apart(const lmx_tensor *a, const lmx_tensor *b) {
  return !lmx_cpu_tensors_overlap(a, b);
}

int lmx_cpu_fc_smo_backward(const lmx_op_ctx *sc, const lmx_tensor *s_in,
                            const lmx_tensor *s_out, const lmx_tensor *s_ig, const int *s_req,
                            const lmx_op_ctx *fc, const lmx_tensor *f_og,
                            const lmx_tensor *f_in, const lmx_tensor *f_ig, const int *f_req) {
  const lmx_smo_param *p = sc->param;
  if (p->out_grad || (s_req[0] != LMX_REQ_WRITE && s_req[0] != LMX_REQ_INPLACE)) return 0;
  if (!is_f32(&s_in[0]) || !is_f32(&s_in[1]) || !is_f32(&s_out[0]) || !is_f32(&s_ig[0]))
    return 0;
  if (f_og[0].data != s_ig[0].data || !is_f32(&f_in[0]) || !is_f32(&f_in[1])) return 0;
  lmx_fc_dims d = {0};
  lmx_smo_plan sd = {0};
  if (lmx_fc_plan(fc, f_in, &d) != LMX_OK || lmx_plan_smo(sc, &s_in[0].shape, &sd) != LMX_OK) {
    lmx_clear_error();
    return 0;
  }
  if (sd.inner != 1 || sd.k != d.n || sd.outer != d.m) return 0;
  if (lmx_glue_size(&s_out[0]) != d.m * d.n || lmx_glue_size(&s_ig[0]) != d.m * d.n ||
      lmx_glue_size(&s_in[1]) != d.m || lmx_glue_size(&f_in[0]) != d.m * d.k)
    return 0;
  int nin = d.bias ? 3 : 2;
  const lmx_tensor *ro[] = {&s_out[0], &s_in[1], &f_in[0], &f_in[1]};
  for (int i = 0; i < nin; i++) {
    if (!f_req[i]) continue;
    if (!is_f32(&f_ig[i]) || lmx_glue_size(&f_ig[i]) != lmx_glue_size(&f_in[i])) return 0;
    if (!apart(&f_ig[i], &s_ig[0])) return 0;
    for (int j = 0; j < 4; j++)
      if (!apart(&f_ig[i], ro[j])) return 0;
  }
  for (int j = 0; j < 4; j++)
    if (!apart(&s_ig[0], ro[j])) return 0;
  lmx_cpu_zero_grad(&s_ig[1], s_req[1]); /* the label's gradient, as the kernel gives it */
  lmx_cpu_fc_smo a = {
      .m = d.m, .k = d.k, .n = d.n,
      .p = s_out[0].data, .label = s_in[1].data, .x = f_in[0].data, .w = f_in[1].data,
      .scratch = s_ig[0].data,
      .dx = f_req[0] ? f_ig[0].data : NULL, .dw = f_req[1] ? f_ig[1].data : NULL,
      .db = d.bias && f_req[2] ? f_ig[2].data : NULL,
      .acc_dx = f_req[0] == LMX_REQ_ADD, .acc_dw = f_req[1] == LMX_REQ_ADD,
      .acc_db = d.bias && f_req[2] == LMX_REQ_ADD,
      .alpha = p->smooth_alpha, .ignore = p->ignore_label, .use_ignore = p->use_ignore,
      .scale = p->grad_scale / lmx_cpu_smo_valid_cnt(sc, &s_in[1], &sd)};
  lmx_cpu_fc_smo_bwd(&a);
  return 1;
}
