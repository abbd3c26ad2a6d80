/* softmax_plan.c — shared dims of the softmax family, loss outputs and PReLU glue (see
 * softmax_plan.h). */
#include "softmax_plan.h"

#include <math.h>
#include <stdio.h>

#include "../core/status.h"
#include "../tensor/shape.h"
#include "../tensor/dtype.h"
#include "glue.h"
#include "op_impl.h"
#include "op_params.h"

int lmx_plan_softmax(const lmx_op_ctx *c, const lmx_shape *s, int activation,
                     lmx_softmax_plan *d) {
  int axis;
  if (activation) {
    int channel = ((const lmx_smact_param *)c->param)->mode == LMX_SMACT_CHANNEL;
    axis = channel ? 1 : 0;
    if (channel && s->ndim < 2)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': mode 'channel' needs at least 2-D");
    d->temp = 1.0;
    if (!channel) { /* instance: over everything but the first dim */
      d->axis = 0;
      d->outer = s->ndim ? s->dim[0] : 1;
      d->len = d->outer ? lmx_shape_size(s) / d->outer : 0;
      d->inner = 1;
      return LMX_OK;
    }
  } else {
    const lmx_softmax_param *p = c->param;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, s->ndim, &axis));
    d->temp = isnan(p->temperature) ? 1.0 : p->temperature; /* None: 1 */
    if (d->temp == 0.0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'temperature': must not be 0");
  }
  d->axis = axis;
  d->outer = lmx_glue_outer(s, axis);
  d->len = s->dim[axis];
  d->inner = lmx_glue_inner(s, axis);
  return LMX_OK;
}

int lmx_plan_softmax_length(const lmx_op_ctx *c, const lmx_tensor *len, const lmx_shape *ds,
                            const lmx_softmax_plan *d, int *l64) {
  if (len->dtype != LMX_INT32 && len->dtype != LMX_INT64)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "input 'length': expected int32 or int64, got %s",
                       lmx_dtype_str(len->dtype));
  lmx_shape e = *ds;
  for (int i = d->axis; i + 1 < e.ndim; i++) e.dim[i] = e.dim[i + 1];
  e.ndim = ds->ndim == 1 ? 1 : ds->ndim - 1;
  if (ds->ndim == 1) e.dim[0] = 1;
  LMX_TRY(lmx_glue_check_like(c, len, &e, len->dtype, "input 'length'"));
  *l64 = len->dtype == LMX_INT64;
  return LMX_OK;
}

int lmx_plan_smo(const lmx_op_ctx *c, const lmx_shape *s, lmx_smo_plan *d) {
  const lmx_smo_param *p = c->param;
  int64_t size = lmx_shape_size(s);
  if (s->ndim < 1) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 1-D");
  if (p->multi_output) {
    if (s->ndim < 2)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': multi_output needs at least 2-D");
    d->outer = s->dim[0], d->k = s->dim[1], d->inner = lmx_glue_inner(s, 1);
  } else if (p->preserve_shape) {
    d->k = s->dim[s->ndim - 1], d->outer = d->k ? size / d->k : 0, d->inner = 1;
  } else {
    d->outer = s->ndim == 1 ? 1 : s->dim[0], d->inner = 1;
    d->k = d->outer ? size / d->outer : 0;
  }
  return LMX_OK;
}

double lmx_plan_smo_norm(const lmx_op_ctx *c, const lmx_smo_plan *d) {
  const lmx_smo_param *p = c->param;
  if (p->normalization == LMX_NORM_BATCH) return (double)d->outer;
  return p->normalization == LMX_NORM_VALID ? 0.0 : 1.0;
}

double lmx_plan_reg_scale(const lmx_op_ctx *c, const lmx_shape *ls) {
  int64_t lead = ls->ndim > 0 ? ls->dim[0] : 1;
  double num_output = lead ? (double)lmx_shape_size(ls) / (double)lead : 1.0;
  return ((const lmx_reg_param *)c->param)->grad_scale / (num_output > 0 ? num_output : 1.0);
}

double lmx_plan_makeloss_value(const lmx_op_ctx *c, const lmx_shape *s) {
  const lmx_makeloss_param *p = c->param;
  double v = p->grad_scale;
  if (p->normalization == LMX_NORM_BATCH)
    v /= (double)(s->ndim > 0 && s->dim[0] > 0 ? s->dim[0] : 1);
  return v;
}

int lmx_plan_prelu(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *outer, int64_t *C,
                   int64_t *inner) {
  const lmx_shape *s = &in[0].shape;
  *outer = s->ndim > 0 ? s->dim[0] : 1;
  *C = s->ndim > 1 ? s->dim[1] : 1;
  *inner = lmx_glue_inner(s, 1);
  int64_t ng = lmx_glue_size(&in[1]);
  if (ng != 1 && ng != *C)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'gamma': expected %lld or 1 elements, got %lld",
                       (long long)*C, (long long)ng);
  return LMX_OK;
}

void lmx_softmax_bad_length_text(char *buf, size_t cap, long long pos, long long value,
                                 int64_t len) {
  snprintf(buf, cap, "input 'length': element %lld is %lld, expected a length in [0, %lld]",
           pos, value, (long long)len);
}
