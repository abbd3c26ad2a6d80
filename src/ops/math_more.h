/* math_more.h — what the math family's descriptors (math_more.c) share with their CPU
 * and CUDA glue (ops14a): moments' parameters and its reduction plan. */
#ifndef LMX_OPS_MATH_MORE_H
#define LMX_OPS_MATH_MORE_H

#include "op.h"

/* moments: axes (tuple, None = all), keepdims */
typedef struct {
  lmx_shape axes;
  int keepdims;
} lmx_moments_param;

/* hard_sigmoid: y = max(0, min(1, alpha * x + beta)) */
typedef struct {
  double alpha, beta;
} lmx_hsig_param;

/* The reduction of moments over x: ystr[x->ndim] (0 on reduced axes) and the output size
 * (layout_plan.h's lmx_plan_reduce with moments' axes). */
int lmx_math_moments_plan(const lmx_op_ctx *c, const lmx_shape *x, int64_t *ystr,
                          int64_t *ysize);

#endif
