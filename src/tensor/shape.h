/* shape.h — array shapes: up to LMX_MAX_NDIM int64 dims, row-major.
 *
 * In shape inference a dim of 0 means "unknown" and ndim 0 means "nothing known" (MXNet's
 * legacy convention); for arrays, ndim 0 is a scalar of size 1. lmx_shape_str formats
 * "(2,3)" into a caller buffer so messages never allocate.
 */
#ifndef LMX_TENSOR_SHAPE_H
#define LMX_TENSOR_SHAPE_H

#include <stdint.h>

#include "../luamx.h"

typedef struct {
  int ndim;
  int64_t dim[LMX_MAX_NDIM];
} lmx_shape;

enum { LMX_SHAPE_STRCAP = LMX_MAX_NDIM * 22 + 4 };

/* The largest element count a shape may describe: sizes times a dtype size (at most 8)
 * and offsets in bytes still fit in int64. */
#define LMX_SHAPE_MAXSIZE (INT64_MAX / 16)

/* Validates (0 <= ndim <= LMX_MAX_NDIM, dims >= 0, and the product of the nonzero dims at
 * most LMX_SHAPE_MAXSIZE, so every sub-shape a reduction, slice or view derives has a
 * size that fits too) and builds; `what` names the caller in the message. */
int lmx_shape_make(lmx_shape *s, const int64_t *dims, int ndim, const char *what);

/* The same validation for a shape built in place (derived by an operator, read from a
 * file); LMX_ERR_SHAPE naming `what`. */
int lmx_shape_check(const lmx_shape *s, const char *what);

/* *out = a * b for counts a, b >= 0; returns nonzero (out untouched) when the product
 * exceeds LMX_SHAPE_MAXSIZE or an operand is negative. */
int lmx_shape_mul(int64_t a, int64_t b, int64_t *out);

/* Element count; 0 when any dim is 0. For a checked shape it never overflows; for an
 * unchecked one whose nonzero dims overflow it returns INT64_MAX, which every allocation
 * refuses. */
int64_t lmx_shape_size(const lmx_shape *s);
int lmx_shape_equal(const lmx_shape *a, const lmx_shape *b);
const char *lmx_shape_str(const lmx_shape *s, char *buf);

/* Broadcast a and b into out (NumPy rules); LMX_ERR_SHAPE naming both on mismatch. */
int lmx_shape_broadcast(const lmx_shape *a, const lmx_shape *b, lmx_shape *out,
                        const char *what);

#endif
