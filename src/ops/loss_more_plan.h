/* loss_more_plan.h — what the CPU and the CUDA glue of issue 14's losses derive from
 * shapes alone (src/ops/cpu/loss_more.c and its twin in src/ops/cuda): the (batch,
 * classes) of softmax_cross_entropy and _contrib_div_sqrt_dim's scale. They read tensor
 * shapes only (never data) and fail with lmx_op_fail's "<Op> '<node>': ..." messages.
 */
#ifndef LMX_OPS_LOSS_MORE_PLAN_H
#define LMX_OPS_LOSS_MORE_PLAN_H

#include <stdint.h>

#include "op.h"

/* SVMOutput's parameters */
typedef struct {
  double margin, regularization_coefficient;
  int use_linear;
} lmx_svm_param;

/* softmax_cross_entropy: data (n, k) with k > 0, label (n,) */
int lmx_plan_sce(const lmx_op_ctx *c, const lmx_shape *data, const lmx_shape *label,
                 int64_t *n, int64_t *k);
/* _contrib_div_sqrt_dim: *alpha = 1 / sqrt(s.shape[-1]); s at least 1-D with a last dim > 0 */
int lmx_plan_div_sqrt_dim(const lmx_op_ctx *c, const lmx_shape *s, double *alpha);

/* IdentityAttachKLSparseReg's parameters */
typedef struct {
  double sparseness_target, penalty, momentum;
} lmx_klreg_param;

/* IdentityAttachKLSparseReg: data (n, k, 1...) as MXNet's (n, k) view, moving_avg (k,) */
int lmx_plan_klreg(const lmx_op_ctx *c, const lmx_shape *data, const lmx_shape *avg,
                   int64_t *n, int64_t *k);

/* SVMOutput: data viewed as (n, k) = (prod(shape[:-1]), shape[-1]), label n elements */
int lmx_plan_svm(const lmx_op_ctx *c, const lmx_shape *data, const lmx_shape *label,
                 int64_t *n, int64_t *k);

#endif
