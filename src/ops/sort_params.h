/* sort_params.h — the parameter block of topk, sort and argsort (src/ops/sort.c), shared by
 * that descriptor file and the CPU / CUDA glue (src/ops/{cpu,cuda}/sort.c). sort and
 * argsort declare only axis / is_ascend (/ dtype); the rest stays zero. */
#ifndef LMX_OPS_SORT_PARAMS_H
#define LMX_OPS_SORT_PARAMS_H

#include "op.h"

/* ret_typ, in MXNet's choice order */
enum { LMX_TOPK_BOTH, LMX_TOPK_INDICES, LMX_TOPK_MASK, LMX_TOPK_VALUE };
#define LMX_TOPK_CHOICES "both|indices|mask|value"

typedef struct {
  int64_t axis; /* OPT_INT: None sorts the flattened array */
  int64_t k;    /* topk; < 1: the whole axis */
  int ret_typ;  /* LMX_TOPK_* (topk) */
  int is_ascend;
  int dtype; /* of the indices (topk, argsort) */
} lmx_sort_param;

/* The row geometry of one call: x as [outer, n, inner] around the axis (None: [1, size, 1]),
 * k picked per row, what is returned (LMX_TOPK_*) and the order. Checks x and its first
 * nout outputs (bwd: output gradients) against it. */
typedef struct {
  int64_t outer, n, inner, k;
  int mode, asc;
} lmx_sort_plan;
int lmx_sort_make_plan(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *out,
                       int nout, int bwd, lmx_sort_plan *p);

#endif
