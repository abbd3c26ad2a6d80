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

/* Validates (0 <= ndim <= LMX_MAX_NDIM, dims >= 0, size fits in int64) and builds;
 * `what` names the caller in the message. */
int lmx_shape_make(lmx_shape *s, const int64_t *dims, int ndim, const char *what);

int64_t lmx_shape_size(const lmx_shape *s);
int lmx_shape_equal(const lmx_shape *a, const lmx_shape *b);
const char *lmx_shape_str(const lmx_shape *s, char *buf);

/* Broadcast a and b into out (NumPy rules); LMX_ERR_SHAPE naming both on mismatch. */
int lmx_shape_broadcast(const lmx_shape *a, const lmx_shape *b, lmx_shape *out,
                        const char *what);

#endif
