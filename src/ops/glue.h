/* glue.h — checks shared by the operator glue of every backend (src/ops/cpu,
 * src/ops/cuda): they look only at lmx_tensor descriptions (shape, dtype, whether data
 * is given) and at the call context, never at the data, so they are the same on every
 * device. Each fails with "<Op> '<node>': <what>: expected ..., got ..." (lmx_op_fail).
 * Backend-specific checks (which dtypes a backend's kernels take) stay with the backend
 * (cpu_ops.h: lmx_cpu_check_float, ...).
 */
#ifndef LMX_OPS_GLUE_H
#define LMX_OPS_GLUE_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"

/* Number of elements of t. */
int64_t lmx_glue_size(const lmx_tensor *t);
/* Fails unless t has data (when n > 0) and n elements. */
int lmx_glue_check_size(const lmx_op_ctx *c, const lmx_tensor *t, int64_t n, const char *what);
/* Fails unless t has the given dtype and shape s, and data when s is not empty. */
int lmx_glue_check_like(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_shape *s,
                        int dtype, const char *what);
/* Fails unless the call's workspace holds `bytes`. */
int lmx_glue_check_ws(const lmx_op_ctx *c, size_t bytes);
/* Product of dims [0, axis) and of dims (axis, ndim). */
int64_t lmx_glue_outer(const lmx_shape *s, int axis);
int64_t lmx_glue_inner(const lmx_shape *s, int axis);

#endif
