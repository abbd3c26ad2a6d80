/* manip_plan.h — the index arithmetic of the tensor-manipulation operators (manip.c)
 * that the CPU and the CUDA glue share, like layout_plan.h for the layout operators.
 * Each plan reads the op's parameters and the tensors' descriptions (never data),
 * checks dims, dtypes and sizes a kernel could crash on, and fails with lmx_op_fail's
 * "<Op> '<node>': ..." messages. Strides are in elements.
 *
 * Replication (tile, repeat, broadcast_to, broadcast_axis, broadcast_like): the output y
 * is walked as a view of at most LMX_MAX_NDIM dims (replica axes and data axes, size-1
 * axes dropped and neighbours merged) in which x is read with strides sstr, 0 along the
 * replica axes: forward y = strided copy, backward gx = the sum of gy over the replica
 * axes (a reduction whose output strides are sstr).
 *
 * Copies (reshape_like, slice_like, diag, stack's input i): y[yoff + i·ystr] =
 * x[xoff + i·xstr] over `shape`. zero_y: the copy writes only part of y (1-D diag), so
 * forward zeroes y first; zero_x: the copy reads only part of x (slice_like, n-D diag),
 * so backward zeroes gx first. Backward is the same walk in the other direction.
 */
#ifndef LMX_OPS_MANIP_PLAN_H
#define LMX_OPS_MANIP_PLAN_H

#include <stdint.h>

#include "op.h"

typedef struct {
  int nd;
  int64_t shape[LMX_MAX_NDIM], sstr[LMX_MAX_NDIM], dstr[LMX_MAX_NDIM];
} lmx_mplan_rep;

/* x: the input (or its gradient), y: the output (or its gradient); bwd names them so. */
int lmx_mplan_replicate(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                        lmx_mplan_rep *v);

typedef struct {
  int nd;
  int64_t shape[LMX_MAX_NDIM];
  int64_t xoff, xstr[LMX_MAX_NDIM], yoff, ystr[LMX_MAX_NDIM];
  int zero_y, zero_x;
} lmx_mplan_copy;

/* The copy of input i (stack's arg i; 0 otherwise) into y. */
int lmx_mplan_copy_of(const lmx_op_ctx *c, int i, const lmx_tensor *x, const lmx_tensor *y,
                      int bwd, lmx_mplan_copy *p);

/* shape_array / size_array: the int64 values of the output (n of them, n <= LMX_MAX_NDIM),
 * checked against y's size and dtype. */
int lmx_mplan_shape_values(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                           int64_t *vals, int *n);

/* _split_v2: [begin, end) of output i along an axis of length len (manip_more.c). */
int lmx_splitv2_range(const lmx_op_ctx *c, int i, int64_t len, int64_t *b, int64_t *e);
/* Number of values of an arange before repeat; fails on an empty range (manip_more.c). */
int lmx_arange_count(const lmx_op_ctx *c, double start, double stop, double step, int64_t *n);

/* _arange / _contrib_arange_like: y[i] = start + floor(i / repeat) * step, i < n (checked
 * against y's size). */
typedef struct {
  double start, step;
  int64_t repeat, n;
} lmx_mplan_range;
int lmx_mplan_range_of(const lmx_op_ctx *c, const lmx_tensor *y, lmx_mplan_range *r);

/* _eye: y (rows x cols) gets ones at y[off + i·stride], i < len (len may be 0), zeros
 * elsewhere. */
int lmx_mplan_eye(const lmx_op_ctx *c, const lmx_tensor *y, int64_t *off, int64_t *len,
                  int64_t *stride);

/* argmax_channel: x as [outer, len] rows over its last axis, y of outer elements. */
int lmx_mplan_argmax_channel(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                             int64_t *outer, int64_t *len);

/* pick: data as [outer, A, inner] around the axis; index and out (or their gradients)
 * hold outer·inner elements, out in data's dtype. */
int lmx_mplan_pick(const lmx_op_ctx *c, const lmx_tensor *data, const lmx_tensor *index,
                   const lmx_tensor *out, int bwd, int64_t *outer, int64_t *A, int64_t *inner);
/* cumsum: x and y (or their gradients) as [outer, len, inner] around the axis (None: one
 * row of all elements). */
int lmx_mplan_cumsum(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                     int64_t *outer, int64_t *len, int64_t *inner);

/* gather_nd / scatter_nd: `big` is the indexed array (gather_nd's data, scatter_nd's
 * output, or their gradients), `small` the gathered one ([nY, inner]), idx (M, Y...):
 * M and the first M dims of big, nY = Y0·...·Yk, inner = the rest of big. */
int lmx_mplan_nd(const lmx_op_ctx *c, const lmx_tensor *big, const lmx_tensor *idx,
                 const lmx_tensor *small, int *M, int64_t *dims, int64_t *nY, int64_t *inner);

#endif
