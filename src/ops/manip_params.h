/* manip_params.h — the parameter structs of the tensor-manipulation operators of
 * src/ops/manip.c (tile, repeat, stack, the broadcast_to family, reshape_like,
 * slice_like, diag), shared by that descriptor file, src/ops/manip_plan.c and the glue
 * of every backend. Same conventions as op_params.h (one field per MXNet parameter,
 * OPT_INT None = LMX_PARAM_NONE_INT, SHAPE / OPT_INTS ndim -1 = None).
 */
#ifndef LMX_OPS_MANIP_PARAMS_H
#define LMX_OPS_MANIP_PARAMS_H

#include <stdint.h>

#include "op.h"

typedef struct { /* tile */
  lmx_shape reps;
} lmx_tile_param;

typedef struct { /* repeat */
  int64_t repeats;
  int64_t axis; /* OPT_INT: None repeats the flattened array */
} lmx_repeat_param;

typedef struct { /* stack */
  int64_t axis, num_args;
} lmx_stack_param;

typedef struct { /* broadcast_to */
  lmx_shape shape;
} lmx_bto_param;

typedef struct { /* broadcast_axis (broadcast_axes) */
  lmx_shape axis, size;
} lmx_baxis_param;

typedef struct { /* broadcast_like */
  lmx_shape lhs_axes, rhs_axes; /* OPT_INTS: ndim -1 = None */
} lmx_blike_param;

typedef struct { /* reshape_like: OPT_INT each */
  int64_t lhs_begin, lhs_end, rhs_begin, rhs_end;
} lmx_rlike_param;

typedef struct { /* slice_like */
  lmx_shape axes;
} lmx_slike_param;

typedef struct { /* diag */
  int64_t k, axis1, axis2;
} lmx_diag_param;

/* ---- manip_more.c ---------------------------------------------------------------------- */

typedef struct { /* _split_v2 */
  lmx_shape indices;
  int64_t axis;
  int squeeze_axis;
  int64_t sections;
} lmx_splitv2_param;

typedef struct { /* _arange */
  double start, stop; /* stop: OPT_FLOAT, NaN = None */
  double step;
  int64_t repeat;
  int infer_range;
  char *ctx;
  int dtype;
} lmx_arange_param;

typedef struct { /* _eye */
  int64_t N, M, k;
  char *ctx;
  int dtype;
} lmx_eye_param;

typedef struct { /* _contrib_arange_like */
  double start, step;
  int64_t repeat;
  char *ctx;
  int64_t axis; /* OPT_INT */
} lmx_arange_like_param;

/* ---- manip_pick.c --------------------------------------------------------------------- */

enum { LMX_PICK_CLIP, LMX_PICK_WRAP };
#define LMX_PICK_CHOICES "clip|wrap"
typedef struct { /* pick */
  int64_t axis; /* OPT_INT */
  int keepdims;
  int mode; /* LMX_PICK_* */
} lmx_pick_param;

typedef struct { /* cumsum (_np_cumsum) */
  int64_t axis; /* OPT_INT: None scans the flattened array */
  int dtype;    /* -1: the input's */
} lmx_cumsum_param;

typedef struct { /* scatter_nd (manip_nd.c) */
  lmx_shape shape;
} lmx_scatter_nd_param;

#endif
