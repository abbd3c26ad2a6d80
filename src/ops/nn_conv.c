/* nn_conv.c — Convolution and Deconvolution (1-D, 2-D, 3-D by the kernel's length).
 *
 * Layout NCW / NCHW / NCDHW (channel first; the channel-last layouts are accepted as
 * parameters but inference reports them unsupported). With k = len(kernel):
 *   data (N, C, x1..xk), weight (num_filter, C/num_group, k1..kk), bias (num_filter,)
 *   Convolution:   out_i = (x_i + 2 pad_i - (dilate_i (k_i - 1) + 1)) / stride_i + 1
 *   Deconvolution: weight (C, num_filter/num_group, k...),
 *                  out_i = stride_i (x_i - 1) + dilate_i (k_i - 1) + 1 - 2 pad_i + adj_i,
 *                  or target_shape_i when target_shape is given (pad/adj are derived).
 * Empty stride/dilate/pad/adj tuples mean 1/1/0/0 per spatial dim (MXNet's defaults).
 * MXNet 1.9: src/operator/nn/convolution.cc, deconvolution.cc (-inl.h for the params).
 */
#include "op_impl.h"

#define TUNE "None|off|limited_workspace|fastest"
#define LAYOUT "None|NCW|NCHW|NCDHW|NHWC|NDHWC|NWC"

static const lmx_param_field conv_fields[] = {
    LMX_PF(lmx_conv_param, kernel, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "Convolution kernel size: (w,), (h, w) or (d, h, w)."),
    LMX_PF(lmx_conv_param, stride, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Convolution stride. Defaults to 1 for each dimension."),
    LMX_PF(lmx_conv_param, dilate, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Convolution dilate. Defaults to 1 for each dimension."),
    LMX_PF(lmx_conv_param, pad, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Zero pad for convolution. Defaults to no padding."),
    LMX_PF(lmx_conv_param, num_filter, LMX_PT_INT, NULL, NULL, 1, 100000,
           "Convolution filter(channel) number."),
    LMX_PF(lmx_conv_param, num_group, LMX_PT_INT, "1", NULL, 1, 100000,
           "Number of group partitions."),
    LMX_PF(lmx_conv_param, workspace, LMX_PT_INT, "1024", NULL, 0, 1e15,
           "Maximum temporary workspace allowed (MB)."),
    LMX_PF(lmx_conv_param, no_bias, LMX_PT_BOOL, "False", NULL, 0, 0, "Whether to disable bias."),
    LMX_PF(lmx_conv_param, cudnn_tune, LMX_PT_ENUM, "None", TUNE, 0, 0,
           "Whether to pick convolution algo by running performance test."),
    LMX_PF(lmx_conv_param, cudnn_off, LMX_PT_BOOL, "False", NULL, 0, 0, "Turn off cudnn."),
    LMX_PF(lmx_conv_param, layout, LMX_PT_ENUM, "None", LAYOUT, 0, 0,
           "Set layout for input, output and weight."),
};

static const lmx_param_field deconv_fields[] = {
    LMX_PF(lmx_conv_param, kernel, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "Deconvolution kernel size: (w,), (h, w) or (d, h, w)."),
    LMX_PF(lmx_conv_param, stride, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "The stride used for the corresponding convolution."),
    LMX_PF(lmx_conv_param, dilate, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Dilation factor for each dimension of the input."),
    LMX_PF(lmx_conv_param, pad, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "The amount of implicit zero padding added during convolution."),
    LMX_PF(lmx_conv_param, adj, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Adjustment for output shape."),
    LMX_PF(lmx_conv_param, target_shape, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Shape of the output tensor: pad and adj are computed from it."),
    LMX_PF(lmx_conv_param, num_filter, LMX_PT_INT, NULL, NULL, 1, 100000,
           "Number of output filters."),
    LMX_PF(lmx_conv_param, num_group, LMX_PT_INT, "1", NULL, 1, 100000, "Number of groups."),
    LMX_PF(lmx_conv_param, workspace, LMX_PT_INT, "512", NULL, 0, 1e15,
           "Maximum temporary workspace allowed (MB)."),
    LMX_PF(lmx_conv_param, no_bias, LMX_PT_BOOL, "True", NULL, 0, 0, "Whether to disable bias."),
    LMX_PF(lmx_conv_param, cudnn_tune, LMX_PT_ENUM, "None", TUNE, 0, 0,
           "Whether to pick convolution algorithm by running performance test."),
    LMX_PF(lmx_conv_param, cudnn_off, LMX_PT_BOOL, "False", NULL, 0, 0, "Turn off cudnn."),
    LMX_PF(lmx_conv_param, layout, LMX_PT_ENUM, "None", LAYOUT, 0, 0,
           "Set layout for input, output and weight."),
};

static const char *const conv_inputs[] = {"data", "weight", "bias", NULL};

static int conv_num_inputs(const void *p) { return ((const lmx_conv_param *)p)->no_bias ? 2 : 3; }

static void conv_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i >= 0 && i < 3 ? conv_inputs[i] : "?");
}

/* Bound on kernel, stride, dilate, pad and adj entries, so that the output-size
 * arithmetic on checked data dims (at most LMX_SHAPE_MAXSIZE) cannot overflow int64. */
enum { CONV_TUPLE_MAX = 1 << 30 };

/* Checks the tuples against the kernel's length; empty tuples take the defaults. */
static int tuple_or(const lmx_op_ctx *c, const char *name, const lmx_shape *t, int k,
                    int64_t def, int64_t lo, int64_t *out) {
  if (t->ndim > 0 && t->ndim != k)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': expected %d entries like kernel, "
                       "got %d", name, k, t->ndim);
  for (int i = 0; i < k; i++) {
    out[i] = t->ndim > 0 ? t->dim[i] : def;
    if (out[i] < lo || out[i] > CONV_TUPLE_MAX)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': entry %d must be in [%lld, %lld], "
                         "got %lld", name, i, (long long)lo, (long long)CONV_TUPLE_MAX,
                         (long long)out[i]);
  }
  return LMX_OK;
}

typedef struct {
  int k;
  int64_t kernel[3], stride[3], dilate[3], pad[3], adj[3];
} conv_geom;

static int conv_check(const lmx_op_ctx *c, void *param) {
  const lmx_conv_param *p = param;
  int deconv = c->op->params == deconv_fields;
  conv_geom g;
  g.k = p->kernel.ndim;
  if (g.k < 1 || g.k > 3)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'kernel': expected 1 to 3 entries (1-D, 2-D "
                       "or 3-D), got %d", p->kernel.ndim);
  LMX_TRY(tuple_or(c, "kernel", &p->kernel, g.k, 1, 1, g.kernel));
  LMX_TRY(tuple_or(c, "stride", &p->stride, g.k, 1, 1, g.stride));
  LMX_TRY(tuple_or(c, "dilate", &p->dilate, g.k, 1, 1, g.dilate));
  LMX_TRY(tuple_or(c, "pad", &p->pad, g.k, 0, 0, g.pad));
  if (deconv) {
    LMX_TRY(tuple_or(c, "adj", &p->adj, g.k, 0, 0, g.adj));
    for (int i = 0; i < g.k; i++) /* MXNet: adj(x) must be smaller than stride[x] */
      if (g.adj[i] >= g.stride[i])
        return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'adj': entry %d must be smaller than "
                           "stride's (%lld), got %lld", i, (long long)g.stride[i],
                           (long long)g.adj[i]);
    if (p->target_shape.ndim > 0) LMX_TRY(tuple_or(c, "target_shape", &p->target_shape, g.k, 0, 0, g.adj));
  }
  if (p->num_filter % p->num_group != 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "num_filter %lld is not divisible by num_group %lld",
                       (long long)p->num_filter, (long long)p->num_group);
  return LMX_OK;
}

static void conv_geometry(const lmx_conv_param *p, conv_geom *g) {
  g->k = p->kernel.ndim;
  for (int i = 0; i < g->k; i++) {
    g->kernel[i] = p->kernel.dim[i];
    g->stride[i] = p->stride.ndim ? p->stride.dim[i] : 1;
    g->dilate[i] = p->dilate.ndim ? p->dilate.dim[i] : 1;
    g->pad[i] = p->pad.ndim ? p->pad.dim[i] : 0;
    g->adj[i] = p->adj.ndim ? p->adj.dim[i] : 0;
  }
}

static int conv_data_ok(const lmx_op_ctx *c, const lmx_conv_param *p, const lmx_shape *d) {
  if (p->layout > 3)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter 'layout': only channel-first "
                       "layouts (NCW, NCHW, NCDHW) are supported");
  if (d->ndim != p->kernel.ndim + 2) {
    char s[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': a %d-D kernel needs %d-D data "
                       "(N, C, spatial...), got %s", p->kernel.ndim, p->kernel.ndim + 2,
                       lmx_shape_str(d, s));
  }
  if (d->dim[1] && d->dim[1] % p->num_group != 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': %lld channels are not divisible by "
                       "num_group %lld", (long long)d->dim[1], (long long)p->num_group);
  return LMX_OK;
}

static int conv_weights(const lmx_op_ctx *c, const lmx_conv_param *p, lmx_shape *in, int nin,
                        int64_t w0, int64_t w1) {
  lmx_shape w = {p->kernel.ndim + 2, {w0, w1}};
  for (int i = 0; i < p->kernel.ndim; i++) w.dim[2 + i] = p->kernel.dim[i];
  LMX_TRY(lmx_in_assign(c, in, 1, &w));
  if (!p->no_bias && nin > 2) {
    lmx_shape b = LMX_SHP(p->num_filter);
    LMX_TRY(lmx_in_assign(c, in, 2, &b));
  }
  return LMX_OK;
}

static int conv_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_conv_param *p = LMX_PRM(c, lmx_conv_param);
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(conv_data_ok(c, p, &in[0]));
  const lmx_shape *d = &in[0];
  conv_geom g;
  conv_geometry(p, &g);
  LMX_TRY(conv_weights(c, p, in, nin, p->num_filter, d->dim[1] / p->num_group));
  lmx_shape o = {d->ndim, {d->dim[0], p->num_filter}};
  for (int i = 0; i < g.k; i++) {
    int64_t x = d->dim[2 + i], ke = g.dilate[i] * (g.kernel[i] - 1) + 1;
    if (x == 0) continue;
    if (x + 2 * g.pad[i] < ke)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': kernel size %lld (dilated) exceeds "
                         "input size %lld padded to %lld on spatial dim %d", (long long)ke,
                         (long long)x, (long long)(x + 2 * g.pad[i]), i);
    o.dim[2 + i] = (x + 2 * g.pad[i] - ke) / g.stride[i] + 1;
  }
  return lmx_out_assign(c, out, 0, &o);
}

static int deconv_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_conv_param *p = LMX_PRM(c, lmx_conv_param);
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(conv_data_ok(c, p, &in[0]));
  const lmx_shape *d = &in[0];
  conv_geom g;
  conv_geometry(p, &g);
  LMX_TRY(conv_weights(c, p, in, nin, d->dim[1], p->num_filter / p->num_group));
  lmx_shape o = {d->ndim, {d->dim[0], p->num_filter}};
  int has_target = p->target_shape.ndim > 0;
  for (int i = 0; i < g.k; i++) {
    int64_t x = d->dim[2 + i];
    if (has_target && p->target_shape.dim[i] > 0) {
      o.dim[2 + i] = p->target_shape.dim[i];
      continue;
    }
    if (x == 0) continue;
    int64_t span;
    if (__builtin_mul_overflow(g.stride[i], x - 1, &span) || span > LMX_SHAPE_MAXSIZE)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "output size on spatial dim %d is too large "
                         "(stride %lld times input size %lld - 1 overflows)", i,
                         (long long)g.stride[i], (long long)x);
    o.dim[2 + i] = span + g.dilate[i] * (g.kernel[i] - 1) + 1 - 2 * g.pad[i] + g.adj[i];
    if (o.dim[2 + i] <= 0)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "output size %lld on spatial dim %d is not "
                         "positive (pad too large)", (long long)o.dim[2 + i], i);
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_Convolution = {
    .name = "Convolution",
    .doc = "Compute N-D convolution on (N+2)-D input.",
    LMX_PARAMS(conv_fields, lmx_conv_param),
    .param_check = conv_check,
    .num_inputs = conv_num_inputs,
    .input_name = conv_input_name,
    .infer_shape = conv_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

const lmx_op lmx_op_Deconvolution = {
    .name = "Deconvolution",
    .doc = "Computes 1D, 2D or 3D transposed convolution (aka fractionally strided "
           "convolution) of the input tensor.",
    LMX_PARAMS(deconv_fields, lmx_conv_param),
    .param_check = conv_check,
    .num_inputs = conv_num_inputs,
    .input_name = conv_input_name,
    .infer_shape = deconv_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
