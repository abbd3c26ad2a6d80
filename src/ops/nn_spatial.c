/* nn_spatial.c — Pad and UpSampling (channel-first image data).
 *
 * Pad: data 4-D or 5-D; pad_width holds (before, after) for every axis, axis by axis,
 *   "(0, 0, 0, 0, 1, 1, 2, 2)", and must not pad N or C (MXNet: "Current implementation
 *   expects padding on the first two axes to be zero"); output dim i = x_i + before_i +
 *   after_i. Modes constant (constant_value), edge, reflect (each pad < the axis size).
 *   pad_width is kept as MXNet's text (it has up to 10 entries, more than a shape holds)
 *   and parsed by the check into lmx_pad_param's pw[].
 * UpSampling: nearest takes num_args inputs arg0, arg1, ... (N, C_i, H_i, W_i); the output
 *   is (N, C, H_0 scale, W_0 scale) and input i is repeated by (H_0 scale) / H_i along both
 *   axes (that must divide evenly and agree for H and W); multi_input_mode concat stacks
 *   the inputs' channels (C = sum C_i), sum adds them (every C_i equal). bilinear takes
 *   data (N, C, H, W) and weight (C, 1, k, k), k = 2 scale - scale % 2, and is MXNet's
 *   Deconvolution with stride scale, pad ceil((scale - 1) / 2), num_group = num_filter = C
 *   and no bias (num_filter must equal C). MXNet 1.9: src/operator/pad.cc, nn/upsampling.cc.
 */
#include <errno.h>
#include <stdlib.h>

#include "op_impl.h"
#include "spatial.h"

/* ---- Pad ------------------------------------------------------------------------------ */

static const lmx_param_field pad_fields[] = {
    LMX_PF(lmx_pad_param, mode, LMX_PT_ENUM, NULL, LMX_PAD_CHOICES, 0, 0,
           "Padding type to use: constant pads with constant_value, edge with the edge "
           "values, reflect with the reflection of the values about the edge."),
    LMX_PF(lmx_pad_param, pad_width, LMX_PT_STRING, NULL, NULL, 0, 0,
           "Widths of the padding regions applied to the edges of each axis: (before_1, "
           "after_1, ..., before_N, after_N), 2 entries per axis of the data."),
    LMX_PF(lmx_pad_param, constant_value, LMX_PT_FLOAT, "0", NULL, 0, 0,
           "The value used for padding when mode is constant."),
};

static int pad_check(const lmx_op_ctx *c, void *param) {
  lmx_pad_param *p = param;
  const char *s = p->pad_width ? p->pad_width : "";
  int n = 0;
  while (*s == ' ' || *s == '(' || *s == '[') s++;
  while (*s && *s != ')' && *s != ']') {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0 || v > (1LL << 40) || n == LMX_PAD_MAXW)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad_width': expected a tuple of at most "
                         "%d non-negative integers, got '%s'", LMX_PAD_MAXW, p->pad_width);
    p->pw[n++] = v;
    s = end;
    while (*s == ' ') s++;
    if (*s == ',') s++;
    while (*s == ' ') s++;
  }
  if (n % 2 || n < 8)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad_width': expected 8 or 10 entries (a "
                       "before/after pair per axis of 4-D or 5-D data), got %d", n);
  if (p->pw[0] || p->pw[1] || p->pw[2] || p->pw[3])
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad_width': the first two axes (N, C) "
                       "cannot be padded, expected zeros, got (%lld, %lld, %lld, %lld)",
                       (long long)p->pw[0], (long long)p->pw[1], (long long)p->pw[2],
                       (long long)p->pw[3]);
  p->npw = n;
  return LMX_OK;
}

int lmx_pad_plan(const lmx_op_ctx *c, const lmx_shape *d, lmx_shape *o) {
  const lmx_pad_param *p = c->param;
  char s[LMX_SHAPE_STRCAP];
  if (d->ndim != 4 && d->ndim != 5)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 4-D or 5-D data, got %s",
                       lmx_shape_str(d, s));
  if (p->npw != 2 * d->ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'pad_width': %d entries do not fit %d-D "
                       "data %s (expected %d)", p->npw, d->ndim, lmx_shape_str(d, s),
                       2 * d->ndim);
  *o = *d;
  for (int i = 0; i < d->ndim; i++) {
    int64_t b = p->pw[2 * i], a = p->pw[2 * i + 1];
    if (d->dim[i] == 0) { o->dim[i] = 0; continue; }
    if (p->mode == LMX_PAD_REFLECT && (b >= d->dim[i] || a >= d->dim[i]))
      return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'pad_width': reflect padding (%lld, "
                         "%lld) of axis %d must be smaller than its size %lld in %s",
                         (long long)b, (long long)a, i, (long long)d->dim[i],
                         lmx_shape_str(d, s));
    o->dim[i] = d->dim[i] + b + a;
  }
  return LMX_OK;
}

static int pad_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (in[0].ndim <= 0) return LMX_OK;
  lmx_shape o;
  LMX_TRY(lmx_pad_plan(c, &in[0], &o));
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_Pad = {
    .name = "Pad",
    .doc = "Pads an input array with a constant or edge values of the array (4-D and 5-D "
           "data; the first two axes are not padded).",
    LMX_PARAMS(pad_fields, lmx_pad_param),
    .param_check = pad_check,
    .infer_shape = pad_infer_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
};

/* ---- UpSampling ----------------------------------------------------------------------- */

static const lmx_param_field ups_fields[] = {
    LMX_PF(lmx_ups_param, scale, LMX_PT_INT, NULL, NULL, 1, 1e6, "Up sampling scale"),
    LMX_PF(lmx_ups_param, num_filter, LMX_PT_INT, "0", NULL, 0, 1e9,
           "Input filter. Only used by bilinear sample_type. Since bilinear upsampling uses "
           "deconvolution, num_filters is set to the number of channels."),
    LMX_PF(lmx_ups_param, sample_type, LMX_PT_ENUM, NULL, LMX_UPS_CHOICES, 0, 0,
           "upsampling method"),
    LMX_PF(lmx_ups_param, multi_input_mode, LMX_PT_ENUM, "concat", LMX_UPS_MODES, 0, 0,
           "How to handle multiple input. concat means concatenate upsampled images along "
           "the channel dimension. sum means add all images together, only available for "
           "nearest neighbor upsampling."),
    LMX_PF(lmx_ups_param, num_args, LMX_PT_INT, NULL, NULL, 1, 1e6,
           "Number of inputs to be upsampled. For nearest neighbor upsampling, this can be "
           "1-N; the size of output will be(scale*h_0,scale*w_0) and all other inputs will "
           "be upsampled to the same size. For bilinear upsampling this must be 2; 1 input "
           "and 1 weight."),
    LMX_PF(lmx_ups_param, workspace, LMX_PT_INT, "512", NULL, 0, 1e15,
           "Tmp workspace for deconvolution (MB)"),
};

static int ups_check(const lmx_op_ctx *c, void *param) {
  const lmx_ups_param *p = param;
  if (p->sample_type == LMX_UPS_BILINEAR && p->num_args != 2)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'num_args': bilinear upsampling takes 2 "
                       "inputs (data, weight), got %lld", (long long)p->num_args);
  if (p->sample_type == LMX_UPS_BILINEAR && p->multi_input_mode == LMX_UPS_SUM)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'multi_input_mode': 'sum' is only available "
                       "for nearest upsampling, got sample_type 'bilinear'");
  return LMX_OK;
}

static int ups_num_inputs(const void *p) {
  const lmx_ups_param *u = p;
  return u->sample_type == LMX_UPS_BILINEAR ? 2 : (int)u->num_args;
}

static void ups_input_name(const void *p, int i, char *buf, size_t cap) {
  const lmx_ups_param *u = p;
  if (u->sample_type == LMX_UPS_BILINEAR) snprintf(buf, cap, "%s", i == 0 ? "data" : "weight");
  else snprintf(buf, cap, "arg%d", i);
}

int64_t lmx_ups_kernel(int64_t scale) { return 2 * scale - scale % 2; }

void lmx_ups_deconv(const lmx_ups_param *p, int64_t C, lmx_conv_param *d) {
  int64_t k = lmx_ups_kernel(p->scale), pad = (p->scale - 1 + 1) / 2; /* ceil((s - 1) / 2) */
  memset(d, 0, sizeof *d);
  d->kernel = LMX_SHP(k, k);
  d->stride = LMX_SHP(p->scale, p->scale);
  d->dilate = LMX_SHP(1, 1);
  d->pad = LMX_SHP(pad, pad);
  d->adj = LMX_SHP(0, 0);
  d->target_shape.ndim = 0;
  d->num_filter = C, d->num_group = C;
  d->workspace = p->workspace;
  d->no_bias = 1;
}

int lmx_ups_plan(const lmx_op_ctx *c, const lmx_shape *in, int nin, lmx_shape *o) {
  const lmx_ups_param *p = c->param;
  char s[LMX_SHAPE_STRCAP];
  for (int i = 0; i < (p->sample_type == LMX_UPS_BILINEAR ? 1 : nin); i++)
    if (in[i].ndim != 4) {
      char nm[32];
      ups_input_name(p, i, nm, sizeof nm);
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected 4-D data (N, C, H, W), got %s",
                         nm, lmx_shape_str(&in[i], s));
    }
  const lmx_shape *d = &in[0];
  *o = *d;
  o->dim[2] = d->dim[2] * p->scale, o->dim[3] = d->dim[3] * p->scale;
  if (p->sample_type == LMX_UPS_BILINEAR) {
    if (p->num_filter != d->dim[1])
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'num_filter': bilinear upsampling needs "
                         "it equal to the channels of 'data' (%lld), got %lld",
                         (long long)d->dim[1], (long long)p->num_filter);
    return LMX_OK;
  }
  int64_t C = 0;
  for (int i = 0; i < nin; i++) {
    const lmx_shape *x = &in[i];
    if (x->dim[0] != d->dim[0] || x->dim[2] == 0 || x->dim[3] == 0 ||
        o->dim[2] % x->dim[2] || o->dim[3] % x->dim[3] ||
        o->dim[2] / x->dim[2] != o->dim[3] / x->dim[3])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'arg%d': %s does not upsample by a whole "
                         "factor to the output (%lld, *, %lld, %lld)", i, lmx_shape_str(x, s),
                         (long long)o->dim[0], (long long)o->dim[2], (long long)o->dim[3]);
    if (p->multi_input_mode == LMX_UPS_SUM && x->dim[1] != d->dim[1])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'arg%d': multi_input_mode 'sum' needs %lld "
                         "channels like arg0, got %s", i, (long long)d->dim[1],
                         lmx_shape_str(x, s));
    C += x->dim[1];
  }
  if (p->multi_input_mode == LMX_UPS_CONCAT) o->dim[1] = C;
  return LMX_OK;
}

static int ups_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_ups_param *p = LMX_PRM(c, lmx_ups_param);
  int n = p->sample_type == LMX_UPS_BILINEAR ? 1 : nin;
  for (int i = 0; i < n; i++)
    if (!lmx_shape_known(&in[i])) return LMX_OK;
  if (p->sample_type == LMX_UPS_BILINEAR) {
    if (in[0].ndim == 4) {
      int64_t k = lmx_ups_kernel(p->scale);
      lmx_shape w = LMX_SHP(in[0].dim[1], 1, k, k);
      LMX_TRY(lmx_in_assign(c, in, 1, &w));
    }
  }
  lmx_shape o;
  LMX_TRY(lmx_ups_plan(c, in, nin, &o));
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_UpSampling = {
    .name = "UpSampling",
    .doc = "Upsamples the given input data: nearest neighbour (several inputs, concatenated "
           "or summed) or bilinear (a depthwise Deconvolution with a weight input).",
    LMX_PARAMS(ups_fields, lmx_ups_param),
    .param_check = ups_check,
    .num_inputs = ups_num_inputs,
    .input_name = ups_input_name,
    .infer_shape = ups_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
