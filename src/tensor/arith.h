/* arith.h — imperative arithmetic on NDArrays: broadcasting binary ops, scalar ops and
 * dot. Each returns a new array; arguments are checked here (dtype, context, shapes) and
 * the work is done by kernels/cpu. GPU arrays are refused until CUDA kernels land. */
#ifndef LMX_TENSOR_ARITH_H
#define LMX_TENSOR_ARITH_H

#include "ndarray.h"

int lmx_nd_binary(int op, const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out);
int lmx_nd_scalar(int op, const lmx_ndarray *a, double s, int reverse, lmx_ndarray **out);
int lmx_nd_dot(const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out);

#endif
