/* manip_more.c — more tensor operators of issue 14: _split_v2 (split by sections or at
 * indices), argmax_channel, and the generators _arange (arange), _eye (eye) and
 * _contrib_arange_like.
 *
 * Descriptors and shape inference; the plans are src/ops/manip_plan.c, the glue
 * src/ops/{cpu,cuda}/manip_more.c. _split_v2's gradient copies each output gradient
 * back into its slice (a missing one counts as zeros). argmax_channel is argmax over
 * the last axis (no gradient, as argmax). The generators have no data inputs except
 * _contrib_arange_like, whose input only gives a shape and a dtype (its gradient is
 * zero, MXNet's MakeZeroGradNodes). Values: start + floor(i / repeat) * step.
 * MXNet 1.9: src/operator/tensor/matrix_op(-inl.h) (SplitParam), broadcast_reduce_op_index.cc
 * (argmax_channel), init_op(-inl.h) (RangeParam, EyeParam, RangeLikeParam).
 */
#include "manip_params.h"
#include "manip_plan.h"
#include "op_impl.h"

enum { G = LMX_NEEDS_OUT_GRADS };

extern const lmx_op lmx_op__arange;

#define SH(s) lmx_shape_str((s), (char[LMX_SHAPE_STRCAP]){0})

static int no_inputs(const void *param) {
  (void)param;
  return 0;
}

static void output_i(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "output%d", i);
}

/* ---- _split_v2 --------------------------------------------------------------------------- */

static const lmx_param_field splitv2_fields[] = {
    LMX_PF(lmx_splitv2_param, indices, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "Indices of splits. The elements should denote the boundaries of at which split "
           "is performed along the `axis`."),
    LMX_PF(lmx_splitv2_param, axis, LMX_PT_INT, "1", NULL, 0, 0, "Axis along which to split."),
    LMX_PF(lmx_splitv2_param, squeeze_axis, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If true, removes the axis with length 1 from the shapes of the output arrays."),
    LMX_PF(lmx_splitv2_param, sections, LMX_PT_INT, "0", NULL, 0, 1e9,
           "Number of sections if equally splitted. Default to 0 which means split by "
           "indices."),
};

static int splitv2_num_outputs(const void *param) {
  const lmx_splitv2_param *p = param;
  return p->sections > 0 ? (int)p->sections : p->indices.ndim > 0 ? p->indices.ndim : 1;
}

static int splitv2_check(const lmx_op_ctx *c, void *param) {
  const lmx_splitv2_param *p = param;
  if (p->sections > 0) return LMX_OK;
  if (p->indices.ndim <= 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'indices': expected at least one index when "
                       "'sections' is 0, got %s", SH(&p->indices));
  for (int i = 0; i < p->indices.ndim; i++)
    if (p->indices.dim[i] < 0 || (i > 0 && p->indices.dim[i] < p->indices.dim[i - 1]))
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'indices': expected non-negative, "
                         "non-decreasing indices, got %s", SH(&p->indices));
  return LMX_OK;
}

/* [begin, end) of output i along an axis of length len; fails when past the end. */
int lmx_splitv2_range(const lmx_op_ctx *c, int i, int64_t len, int64_t *b, int64_t *e) {
  const lmx_splitv2_param *p = c->param;
  if (p->sections > 0) {
    if (len % p->sections)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': the split axis of size %lld is not "
                         "divisible by sections %lld", (long long)len, (long long)p->sections);
    *b = i * (len / p->sections), *e = *b + len / p->sections;
    return LMX_OK;
  }
  *b = p->indices.dim[i];
  *e = i + 1 < p->indices.ndim ? p->indices.dim[i + 1] : len;
  if (*e > len || *b > len)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'indices': index %lld is past the end of "
                       "the split axis of size %lld", (long long)(*b > len ? *b : *e),
                       (long long)len);
  if (*e <= *b)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'indices': output %d would be empty "
                       "([%lld, %lld) of an axis of size %lld)", i, (long long)*b, (long long)*e,
                       (long long)len);
  return LMX_OK;
}

static int splitv2_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  const lmx_splitv2_param *p = LMX_PRM(c, lmx_splitv2_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
  for (int i = 0; i < nout; i++) {
    int64_t b, e;
    LMX_TRY(lmx_splitv2_range(c, i, in[0].dim[a], &b, &e));
    lmx_shape o = in[0];
    o.dim[a] = e - b;
    if (p->squeeze_axis) {
      if (e - b != 1)
        return lmx_op_fail(c, LMX_ERR_SHAPE, "squeeze_axis needs outputs of length 1 on "
                           "axis %d, output %d has %lld", a, i, (long long)(e - b));
      for (int k = a; k + 1 < o.ndim; k++) o.dim[k] = o.dim[k + 1];
      if (--o.ndim == 0) o = LMX_SHP(1);
    }
    LMX_TRY(lmx_out_assign(c, out, i, &o));
  }
  return LMX_OK;
}

const lmx_op lmx_op__split_v2 = {
    .name = "_split_v2",
    .doc = "Splits an array along an axis into `sections` equal parts, or at `indices` "
           "(output i is [indices[i], indices[i+1]) along the axis; the last runs to the end).",
    LMX_PARAMS(splitv2_fields, lmx_splitv2_param),
    .param_check = splitv2_check,
    .num_outputs = splitv2_num_outputs,
    .output_name = output_i,
    .infer_shape = splitv2_infer_shape,
    .backward_needs = G,
};

/* ---- argmax_channel --------------------------------------------------------------------- */

static int argmax_ch_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                 int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_shape o = in[0];
  if (--o.ndim == 0) o = LMX_SHP(1);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_argmax_channel = {
    .name = "argmax_channel",
    .doc = "Returns the index of the maximum along the last axis (in the input's dtype; the "
           "first one on ties).",
    .infer_shape = argmax_ch_infer_shape,
    .flags = LMX_OPF_NO_GRAD,
};

/* ---- generators: _arange, _eye, _contrib_arange_like ------------------------------------- */

#define GEN_CTX(st)                                                                         \
  LMX_PF(st, ctx, LMX_PT_STRING, "", NULL, 0, 0,                                            \
         "Context of output, in format [cpu|gpu|cpu_pinned](n). Only used for imperative "  \
         "calls.")

static const lmx_param_field arange_fields[] = {
    LMX_PF(lmx_arange_param, start, LMX_PT_FLOAT, NULL, NULL, 0, 0,
           "Start of interval. The interval includes this value. The default start value "
           "is 0."),
    LMX_PF(lmx_arange_param, stop, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "End of interval. The interval does not include this value, except in some cases "
           "where step is not an integer and floating point round-off affects the length of "
           "out."),
    LMX_PF(lmx_arange_param, step, LMX_PT_FLOAT, "1", NULL, 0, 0, "Spacing between values."),
    LMX_PF(lmx_arange_param, repeat, LMX_PT_INT, "1", NULL, 1, 1e15,
           "The repeating time of all elements. E.g repeat=3, the element a will be repeated "
           "three times --> a, a, a."),
    LMX_PF(lmx_arange_param, infer_range, LMX_PT_BOOL, "False", NULL, 0, 0,
           "When set to True, infer the stop position from the start, step, repeat, and "
           "output tensor size. (Not supported by luamx: must be False.)"),
    GEN_CTX(lmx_arange_param),
    LMX_PF(lmx_arange_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0,
           "Target data type."),
};

/* Number of values of an arange (before repeat); fails on an empty range. */
int lmx_arange_count(const lmx_op_ctx *c, double start, double stop, double step,
                     int64_t *n) {
  if (step == 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'step': must not be 0");
  double k = ceil((stop - start) / step);
  if (!(k >= 1) || k > 1e15)
    return lmx_op_fail(c, LMX_ERR_ARG, "invalid range (start=%g, stop=%g, step=%g): expected "
                       "1 to 1e15 values, got %g", start, stop, step, k);
  *n = (int64_t)k;
  return LMX_OK;
}

static int arange_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_arange_param *p = LMX_PRM(c, lmx_arange_param);
  if (p->infer_range)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter 'infer_range': True is not "
                       "supported (give 'stop')");
  double start = isnan(p->stop) ? 0 : p->start, stop = isnan(p->stop) ? p->start : p->stop;
  int64_t n;
  LMX_TRY(lmx_arange_count(c, start, stop, p->step, &n));
  if (n > INT64_MAX / p->repeat)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'repeat': %lld values repeated %lld times "
                       "overflow", (long long)n, (long long)p->repeat);
  lmx_shape o = LMX_SHP(n * p->repeat);
  return lmx_out_assign(c, out, 0, &o);
}

static int gen_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                          int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  int dt = c->op == &lmx_op__arange ? LMX_PRM(c, lmx_arange_param)->dtype
                                    : LMX_PRM(c, lmx_eye_param)->dtype;
  return lmx_dtype_assign(c, &out[0], dt < 0 ? LMX_FLOAT32 : dt, "output");
}

const lmx_op lmx_op__arange = {
    .name = "_arange",
    .doc = "Returns evenly spaced values within a given interval (stop None: [0, start)), "
           "each repeated `repeat` times (alias arange).",
    LMX_PARAMS(arange_fields, lmx_arange_param),
    .num_inputs = no_inputs,
    .infer_shape = arange_infer_shape,
    .infer_type = gen_infer_type,
    .flags = LMX_OPF_NO_GRAD,
};

static const lmx_param_field eye_fields[] = {
    LMX_PF(lmx_eye_param, N, LMX_PT_INT, NULL, NULL, 1, 1e15, "Number of rows in the output."),
    LMX_PF(lmx_eye_param, M, LMX_PT_INT, "0", NULL, 0, 1e15,
           "Number of columns in the output. If 0, defaults to N"),
    LMX_PF(lmx_eye_param, k, LMX_PT_INT, "0", NULL, 0, 0,
           "Index of the diagonal. 0 (the default) refers to the main diagonal.A positive "
           "value refers to an upper diagonal.A negative value to a lower diagonal."),
    GEN_CTX(lmx_eye_param),
    LMX_PF(lmx_eye_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0, "Target data type."),
};

static int eye_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_eye_param *p = LMX_PRM(c, lmx_eye_param);
  lmx_shape o = LMX_SHP(p->N, p->M > 0 ? p->M : p->N);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op__eye = {
    .name = "_eye",
    .doc = "Returns a 2-D array with ones on the k-th diagonal and zeros elsewhere (alias eye).",
    LMX_PARAMS(eye_fields, lmx_eye_param),
    .num_inputs = no_inputs,
    .infer_shape = eye_infer_shape,
    .infer_type = gen_infer_type,
    .flags = LMX_OPF_NO_GRAD,
};

static const lmx_param_field arange_like_fields[] = {
    LMX_PF(lmx_arange_like_param, start, LMX_PT_FLOAT, "0", NULL, 0, 0,
           "Start of interval. The interval includes this value. The default start value "
           "is 0."),
    LMX_PF(lmx_arange_like_param, step, LMX_PT_FLOAT, "1", NULL, 0, 0,
           "Spacing between values."),
    LMX_PF(lmx_arange_like_param, repeat, LMX_PT_INT, "1", NULL, 1, 1e15,
           "The repeating time of all elements. E.g repeat=3, the element a will be repeated "
           "three times --> a, a, a."),
    GEN_CTX(lmx_arange_like_param),
    LMX_PF(lmx_arange_like_param, axis, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Arange elements according to the size of a certain axis of input array. The "
           "negative numbers are interpreted counting from the backward. If not provided, "
           "will arange elements according to the input shape."),
};

static int arange_like_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                   int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_arange_like_param *p = LMX_PRM(c, lmx_arange_like_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_shape o = in[0];
  if (p->axis != LMX_PARAM_NONE_INT) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
    o = LMX_SHP(in[0].dim[a]);
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op__contrib_arange_like = {
    .name = "_contrib_arange_like",
    .doc = "Returns start + floor(i / repeat) * step shaped like the input (or like its "
           "`axis`), in the input's dtype. The input only gives a shape: its gradient is zero.",
    LMX_PARAMS(arange_like_fields, lmx_arange_like_param),
    .infer_shape = arange_like_infer_shape,
};
