/* index_plan.h — the dims that the CPU and the CUDA glue of take / Embedding, where and
 * the Sequence* operators derive from shapes and parameters (src/ops/cpu/indexing.c,
 * sequence.c and their twins in src/ops/cuda). Each function reads the op's typed
 * parameters and tensor descriptions only (never data), checks every size a kernel
 * relies on, and fails with lmx_op_fail's "<Op> '<node>': ..." messages; dtypes are the
 * backend's to check.
 */
#ifndef LMX_OPS_INDEX_PLAN_H
#define LMX_OPS_INDEX_PLAN_H

#include <stdint.h>

#include "op.h"

/* take (embedding 0: lmx_take_param's axis and mode) or Embedding (embedding 1: axis 0,
 * mode clip) of `a` at `idx`: a viewed as [outer, A, inner] around the axis, K indices,
 * mode an LMX_TAKE_* code. Fails on an empty axis with indices. */
typedef struct {
  int64_t outer, A, inner, K;
  int mode;
} lmx_take_plan;
int lmx_plan_take(const lmx_op_ctx *c, const lmx_tensor *a, const lmx_tensor *idx,
                  int embedding, lmx_take_plan *t);
/* The words of take mode raise's error for index `value` at position pos of a dim of A
 * ("input 'indices': index 9 at position 1 is out of range [0, 6)"), written into buf:
 * the CPU glue's message and, through the device's raise word, the GPU's. */
void lmx_take_bad_index_text(char *buf, size_t cap, long long pos, long long value,
                             int64_t A);

/* where(condition in[0], x in[1], y in[2]): n elements of x; row 1 when the condition has
 * x's size, else the 1-D condition's rows hold row elements each. Checks y against x. */
int lmx_plan_where(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *n, int64_t *row);

/* SequenceMask / Last / Reverse: data in[0] is [T, N, R] (axis 0) or [N, T, R] (axis 1);
 * nin is 2 when the op reads in[1] = sequence_length (of N elements), else 1. */
typedef struct {
  int64_t T, N, R;
  int axis, nin;
} lmx_seq_plan;
int lmx_plan_seq(const lmx_op_ctx *c, const lmx_tensor *in, lmx_seq_plan *g);

#endif
