/* norm_more.h — the row view of InstanceNorm, GroupNorm and L2Normalization
 * (nn_norm_more.c), shared by the CPU and CUDA glue.
 *
 * Data is read as rows: row (o, i), o < outer, i < inner, holds the len elements
 * x[(o * len + l) * inner + i]; its statistics sit at o * inner + i. Rows with the same
 * o % na share gamma[o % na] and beta[o % na] (na = C for InstanceNorm, num_groups for
 * GroupNorm).
 */
#ifndef LMX_OPS_NORM_MORE_H
#define LMX_OPS_NORM_MORE_H

#include "op.h"

enum { LMX_RN_L2 = 0, LMX_RN_INSTANCE = 1, LMX_RN_GROUP = 2 };

typedef struct {
  int64_t outer, len, inner, na; /* rows (o, i); row length; groups of gamma/beta */
} lmx_rownorm;

/* The rows of data d for `kind` (c->param is that op's parameters); fails naming the op
 * when the channels do not split into num_groups. */
int lmx_rownorm_plan(const lmx_op_ctx *c, int kind, const lmx_shape *d, lmx_rownorm *r);

#endif
