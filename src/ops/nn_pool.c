/* nn_pool.c — Pooling (max / avg / sum / lp; 1-D, 2-D, 3-D by the kernel's length).
 *
 * data (N, C, x1..xk) -> (N, C, y1..yk) with, per spatial dim (stride 1 and pad 0 when
 * the tuples are empty):
 *   valid: y = floor((x + 2p - k) / s) + 1
 *   full:  y = ceil((x + 2p - k) / s) + 1
 *   same:  y = ceil(x / s), and pad must be 0 (MXNet: "Same pooling convention disables
 *          the use of pad parameter"); the windows start at o*s with no padding in front
 *          and the last ones are clipped at the end (src/ops/cpu/conv.c, kernels/cpu/pool.c)
 * and, in every convention, kernel <= x + 2p. MXNet 1.9 accepts 'same' for 1-D data only
 * (PoolingShape checks ndim 3); here 2-D and 3-D apply the same rule to every dim.
 * global_pool: every y is 1 and kernel may be omitted (then the data's ndim decides k).
 * MXNet 1.9: src/operator/nn/pooling.cc, pooling-inl.h, pool.h.
 */
#include "op_impl.h"

enum { CONV_VALID = 0, CONV_FULL = 1, CONV_SAME = 2 };

static const lmx_param_field pool_fields[] = {
    LMX_PF(lmx_pool_param, kernel, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Pooling kernel size: (y, x) or (d, y, x)."),
    LMX_PF(lmx_pool_param, pool_type, LMX_PT_ENUM, "max", LMX_POOLT_CHOICES, 0, 0,
           "Pooling type to be applied."),
    LMX_PF(lmx_pool_param, global_pool, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Ignore kernel size, do global pooling based on current input feature map."),
    LMX_PF(lmx_pool_param, cudnn_off, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Turn off cudnn pooling and use MXNet pooling operator."),
    LMX_PF(lmx_pool_param, pooling_convention, LMX_PT_ENUM, "valid", LMX_POOLC_CHOICES, 0, 0,
           "Pooling convention to be applied."),
    LMX_PF(lmx_pool_param, stride, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Stride for pooling: (y, x) or (d, y, x). Defaults to 1 for each dimension."),
    LMX_PF(lmx_pool_param, pad, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Pad for pooling: (y, x) or (d, y, x). Defaults to no padding."),
    LMX_PF(lmx_pool_param, p_value, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Value of p for Lp pooling, can be 1 or 2, required for Lp Pooling."),
    LMX_PF(lmx_pool_param, count_include_pad, LMX_PT_OPT_BOOL, "None", NULL, 0, 0,
           "Only used for AvgPool: whether padded values count in the divisor (default True)."),
    LMX_PF(lmx_pool_param, layout, LMX_PT_ENUM, "None", "None|NCW|NCHW|NCDHW|NHWC|NDHWC|NWC", 0, 0,
           "Set layout for input and output."),
};

enum { POOL_TUPLE_MAX = 1 << 30 };

static int pool_check(const lmx_op_ctx *c, void *param) {
  const lmx_pool_param *p = param;
  int k = p->kernel.ndim;
  if (!p->global_pool && (k < 1 || k > 3))
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'kernel': expected 1 to 3 entries (or "
                       "global_pool=True), got %d", k);
  if (p->stride.ndim > 0 && k > 0 && p->stride.ndim != k)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'stride': expected %d entries like kernel, "
                       "got %d", k, p->stride.ndim);
  if (p->pad.ndim > 0 && k > 0 && p->pad.ndim != k)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad': expected %d entries like kernel, "
                       "got %d", k, p->pad.ndim);
  for (int i = 0; i < k; i++)
    if (p->kernel.dim[i] < 1)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'kernel': entries must be >= 1, got %lld",
                         (long long)p->kernel.dim[i]);
  for (int i = 0; i < p->stride.ndim; i++)
    if (p->stride.dim[i] < 1)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'stride': entries must be >= 1, got %lld",
                         (long long)p->stride.dim[i]);
  /* Bounded so that the output-size arithmetic on checked dims cannot overflow int64. */
  const lmx_shape *tuples[] = {&p->kernel, &p->stride, &p->pad};
  static const char *const tnames[] = {"kernel", "stride", "pad"};
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < tuples[t]->ndim; i++)
      if (tuples[t]->dim[i] > POOL_TUPLE_MAX)
        return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': entries must be <= %lld, got %lld",
                           tnames[t], (long long)POOL_TUPLE_MAX, (long long)tuples[t]->dim[i]);
  for (int i = 0; i < p->pad.ndim; i++) {
    if (p->pad.dim[i] < 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad': entries must be >= 0, got %lld",
                         (long long)p->pad.dim[i]);
    if (p->pooling_convention == CONV_SAME && !p->global_pool && p->pad.dim[i] != 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad': pooling_convention 'same' takes no "
                         "padding (expected 0), got %lld", (long long)p->pad.dim[i]);
  }
  if (p->pool_type == 3 && p->p_value != LMX_PARAM_NONE_INT && p->p_value != 1 &&
      p->p_value != 2)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'p_value': expected 1 or 2, got %lld",
                       (long long)p->p_value);
  return LMX_OK;
}

static int64_t pool_dim(const lmx_pool_param *p, int i, int64_t x) {
  int64_t k = p->kernel.dim[i];
  int64_t s = p->stride.ndim ? p->stride.dim[i] : 1, pd = p->pad.ndim ? p->pad.dim[i] : 0;
  switch (p->pooling_convention) {
  case CONV_FULL: return (x + 2 * pd - k + s - 1) / s + 1;
  case CONV_SAME: return (x + s - 1) / s;
  default: return (x + 2 * pd - k) / s + 1;
  }
}

static int pool_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_pool_param *p = LMX_PRM(c, lmx_pool_param);
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  char s[LMX_SHAPE_STRCAP];
  if (p->layout > 3)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter 'layout': only channel-first "
                       "layouts (NCW, NCHW, NCDHW) are supported");
  int k = p->global_pool ? d->ndim - 2 : p->kernel.ndim;
  if (d->ndim < 3 || d->ndim > 5 || d->ndim != k + 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected %s-D data (N, C, "
                       "spatial...), got %s",
                       p->global_pool ? "3- to 5" : (k == 1 ? "3" : k == 2 ? "4" : "5"),
                       lmx_shape_str(d, s));
  lmx_shape o = *d;
  for (int i = 0; i < k; i++) {
    int64_t x = d->dim[2 + i];
    if (p->global_pool) { o.dim[2 + i] = 1; continue; }
    if (x == 0) continue;
    int64_t pd = p->pad.ndim ? p->pad.dim[i] : 0;
    if (p->kernel.dim[i] > x + 2 * pd)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': kernel size %lld exceeds input "
                         "size %lld padded to %lld on spatial dim %d of %s",
                         (long long)p->kernel.dim[i], (long long)x, (long long)(x + 2 * pd), i,
                         lmx_shape_str(d, s));
    o.dim[2 + i] = pool_dim(p, i, x);
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_Pooling = {
    .name = "Pooling",
    .doc = "Performs pooling on the input.",
    LMX_PARAMS(pool_fields, lmx_pool_param),
    .param_check = pool_check,
    .infer_shape = pool_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};
