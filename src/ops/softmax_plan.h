/* softmax_plan.h — the dims that the CPU and the CUDA glue of the softmax family, the
 * loss outputs and PReLU derive from shapes and parameters (src/ops/cpu/activation.c,
 * loss.c and their twins in src/ops/cuda): the [outer, len, inner] split of softmax /
 * log_softmax / SoftmaxActivation, the shape and dtype of use_length's 'length' input,
 * SoftmaxOutput's [outer, k, inner] layout and its data-free normalisations, the
 * regression outputs' and MakeLoss's scales, PReLU's [outer, C, inner] view. They read
 * the op's typed parameters and tensor descriptions only (never data) and fail with
 * lmx_op_fail's "<Op> '<node>': ..." messages; float dtypes are the backend's to check.
 */
#ifndef LMX_OPS_SOFTMAX_PLAN_H
#define LMX_OPS_SOFTMAX_PLAN_H

#include <stdint.h>

#include "op.h"

typedef struct {
  int64_t outer, len, inner;
  double temp;
  int axis;
} lmx_softmax_plan;

/* softmax / log_softmax (activation 0: lmx_softmax_param's axis and temperature, None is
 * 1, 0 refused) or SoftmaxActivation (activation 1: instance = all dims but the first,
 * channel = axis 1) of data shaped s */
int lmx_plan_softmax(const lmx_op_ctx *c, const lmx_shape *s, int activation,
                     lmx_softmax_plan *d);
/* use_length: 'length' must be int32 / int64 (*l64 = int64) shaped like data without the
 * axis ((1,) for 1-D data). Its values are the backend's to check or clamp. */
int lmx_plan_softmax_length(const lmx_op_ctx *c, const lmx_tensor *len, const lmx_shape *ds,
                            const lmx_softmax_plan *d, int *l64);
/* The words of a length `value` at element pos outside [0, len] ("input 'length':
 * element 1 is 5, expected a length in [0, 4]"), written into buf: the CPU glue's
 * message and, through the device's raise word, the GPU's. */
void lmx_softmax_bad_length_text(char *buf, size_t cap, long long pos, long long value,
                                 int64_t len);

typedef struct {
  int64_t outer, k, inner;
} lmx_smo_plan;

/* SoftmaxOutput over data shaped s: multi_output (n, k, rest...), preserve_shape (last
 * axis), else (n, everything else) */
int lmx_plan_smo(const lmx_op_ctx *c, const lmx_shape *s, lmx_smo_plan *d);
/* SoftmaxOutput's divisor for normalization null (1) and batch (outer); 0 for 'valid',
 * which counts labels (the backend reads them) */
double lmx_plan_smo_norm(const lmx_op_ctx *c, const lmx_smo_plan *d);
/* the regression outputs' gradient scale: grad_scale / (label size / label.shape[0]) */
double lmx_plan_reg_scale(const lmx_op_ctx *c, const lmx_shape *label);
/* MakeLoss's gradient for normalization null / batch; 'valid' divides it by a count of
 * the output above valid_thresh (the backend's) */
double lmx_plan_makeloss_value(const lmx_op_ctx *c, const lmx_shape *s);

/* PReLU over in[0] viewed as [dim0, dim1, rest] with gamma in[1] of dim1 or 1 elements */
int lmx_plan_prelu(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *outer, int64_t *C,
                   int64_t *inner);

#endif
