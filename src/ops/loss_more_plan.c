/* loss_more_plan.c — shape plans of softmax_cross_entropy and _contrib_div_sqrt_dim,
 * shared by the CPU and CUDA glue (loss_more_plan.h). */
#include "loss_more_plan.h"

#include "op_impl.h"

int lmx_plan_sce(const lmx_op_ctx *c, const lmx_shape *data, const lmx_shape *label,
                 int64_t *n, int64_t *k) {
  if (data->ndim != 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 2-D (batch, classes), got "
                       "%d-D", data->ndim);
  if (data->dim[1] <= 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least one class, got "
                       "%lld", (long long)data->dim[1]);
  lmx_shape l = LMX_SHP(data->dim[0]);
  if (label->ndim != 1 || label->dim[0] != data->dim[0])
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'label': expected shape (%lld,), got %d-D "
                       "with first dim %lld", (long long)l.dim[0], label->ndim,
                       (long long)(label->ndim > 0 ? label->dim[0] : 0));
  *n = data->dim[0];
  *k = data->dim[1];
  return LMX_OK;
}

int lmx_plan_div_sqrt_dim(const lmx_op_ctx *c, const lmx_shape *s, double *alpha) {
  if (s->ndim < 1 || s->dim[s->ndim - 1] <= 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 1-D with a last "
                       "dim > 0, got %d-D", s->ndim);
  *alpha = 1.0 / sqrt((double)s->dim[s->ndim - 1]);
  return LMX_OK;
}

int lmx_plan_svm(const lmx_op_ctx *c, const lmx_shape *data, const lmx_shape *label,
                 int64_t *n, int64_t *k) {
  if (data->ndim < 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 1-D, got 0-D");
  *k = data->dim[data->ndim - 1];
  *n = 1;
  for (int i = 0; i + 1 < data->ndim; i++) *n *= data->dim[i];
  int64_t nl = lmx_shape_size(label);
  if (nl != *n)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'label': expected %lld elements (data's "
                       "shape without the last axis), got %lld", (long long)*n, (long long)nl);
  return LMX_OK;
}

int lmx_plan_klreg(const lmx_op_ctx *c, const lmx_shape *data, const lmx_shape *avg,
                   int64_t *n, int64_t *k) {
  if (data->ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 2-D (batch, "
                       "units), got %d-D", data->ndim);
  int64_t rest = 1;
  for (int i = 1; i < data->ndim; i++) rest *= data->dim[i];
  if (rest != data->dim[1])
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected (batch, units) (MXNet "
                       "averages the flattened (batch, %lld) view into moving_avg of %lld), "
                       "got %d-D", (long long)rest, (long long)data->dim[1], data->ndim);
  if (avg->ndim != 1 || avg->dim[0] != data->dim[1])
    return lmx_op_fail(c, LMX_ERR_SHAPE, "aux state 'moving_avg': expected shape (%lld,), "
                       "got %d-D with first dim %lld", (long long)data->dim[1], avg->ndim,
                       (long long)(avg->ndim > 0 ? avg->dim[0] : 0));
  *n = data->dim[0];
  *k = data->dim[1];
  return LMX_OK;
}
