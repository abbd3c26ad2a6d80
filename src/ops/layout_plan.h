/* layout_plan.h — the index arithmetic that the CPU and the CUDA glue of the broadcast,
 * reduction and layout operators share: operand strides of a broadcast, the output
 * strides of a reduction, a transpose's permutation, a slice's offset and strides, the
 * [rows, width] views of Concat / SliceChannel. Each function reads the op's typed
 * parameters and tensor descriptions only (never data), checks what a kernel could
 * crash on, and fails with lmx_op_fail's "<Op> '<node>': ..." messages. Strides are in
 * elements, over C-order shapes.
 */
#ifndef LMX_OPS_LAYOUT_PLAN_H
#define LMX_OPS_LAYOUT_PLAN_H

#include <stdint.h>

#include "op.h"

/* st[nd] <- C-order strides of shape[nd] */
void lmx_plan_contig_strides(int nd, const int64_t *shape, int64_t *st);

/* st[nd] <- strides of an operand of shape s right-aligned against nd output dims, 0
 * along every axis where its dim is 1 (or missing). */
void lmx_plan_bcast_strides(const lmx_shape *s, int nd, int64_t *st);

/* Fails unless in[0] and in[1] broadcast to o's shape, and every data pointer is given
 * for its size (dtypes are the backend's to check). */
int lmx_plan_bcast_check(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *o);

/* Reduction over x: ystr[x->ndim] (0 on reduced axes, C-order over the kept ones) and
 * the output size, from the op's lmx_red_param (is_norm = 0) or lmx_norm_param. */
int lmx_plan_reduce(const lmx_op_ctx *c, const lmx_shape *x, int is_norm, int64_t *ystr,
                    int64_t *ysize);

/* argmax / argmin: x viewed as [outer, len, inner] around the lmx_arg_param axis (all of
 * x as one row when the axis is None); fails on an empty searched axis. */
int lmx_plan_arg(const lmx_op_ctx *c, const lmx_shape *x, int64_t *outer, int64_t *len,
                 int64_t *inner);

/* transpose (swap = 0, lmx_transpose_param) or SwapAxis (swap = 1, lmx_swap_param):
 * perm[k] = the input axis feeding output axis k. */
int lmx_plan_perm(const lmx_op_ctx *c, int swap, int nd, int *perm);

/* slice (axis_mode = 0, lmx_slice_param) or slice_axis (1, lmx_slice_axis_param) of x
 * into y: y[i] = x[off + Σ i_k ps[k]]. Fails when y's dims or dtype do not fit x, or the
 * slice leaves x. */
int lmx_plan_slice(const lmx_op_ctx *c, int axis_mode, const lmx_tensor *x, const lmx_tensor *y,
                   int64_t *off, int64_t *ps);

/* reverse (lmx_reverse_param) of x into y (same shape and dtype): y[i] = x[off + Σ i_k ps[k]],
 * ps[k] negative on the reversed axes. */
int lmx_plan_reverse(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                     int64_t *off, int64_t *ps);

/* Concat: `whole` (the output, or the output gradient) viewed as [rows, W], each of the
 * num_args inputs as [rows, w_i] at column Σ w_<i; checks dims, dtypes and sizes. */
int lmx_plan_concat(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *whole,
                    int64_t *rows, int64_t *W);

/* SliceChannel: `whole` viewed as [rows, W], output i as [rows, w] at column i w. */
int lmx_plan_split(const lmx_op_ctx *c, const lmx_tensor *whole, int64_t *rows, int64_t *W,
                   int64_t *w);

#endif
