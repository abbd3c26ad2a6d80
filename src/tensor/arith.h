/* arith.h — imperative arithmetic on NDArrays: broadcasting binary ops, scalar ops and
 * dot. Each returns a new array on the operands' context; arguments are checked here
 * (dtype, context, shapes) and the work is done by that device's primitives
 * (src/device/device.h), queued on its stream: a device without the primitive gives
 * LMX_ERR_UNSUPPORTED naming it. */
#ifndef LMX_TENSOR_ARITH_H
#define LMX_TENSOR_ARITH_H

#include "ndarray.h"

int lmx_nd_binary(int op, const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out);
int lmx_nd_scalar(int op, const lmx_ndarray *a, double s, int reverse, lmx_ndarray **out);
int lmx_nd_dot(const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out);

#endif
