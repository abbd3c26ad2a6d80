/* linalg_more_plan.h — what the CPU and the CUDA glue of _linalg_gemm / _linalg_gemm2
 * and khatri_rao (issue 14's small linear algebra) derive from shapes and parameters:
 * the batch of matrices and the product's dims, the Khatri-Rao factors. Shapes only,
 * never data; messages from lmx_op_fail.
 *
 * A tensor of n >= 2 dims holds its matrices with rows on `axis` and columns on the last
 * dim (MXNet's LaMatrixMultMacOpShape): as (outer, rows, mid, cols), with outer the
 * product of the dims before axis and mid of those between axis and the last. Matrix
 * (o, q) starts at element o·rows·mid·cols + q·cols, its rows mid·cols apart.
 */
#ifndef LMX_OPS_LINALG_MORE_PLAN_H
#define LMX_OPS_LINALG_MORE_PLAN_H

#include <stdint.h>

#include "../../kernels/cpu/khatri_rao.h"
#include "op.h"

/* _linalg_gemm's parameters (_linalg_gemm2 has no beta) */
typedef struct {
  int transpose_a, transpose_b;
  double alpha, beta;
  int64_t axis;
} lmx_la_gemm_param;

typedef struct {
  int64_t outer, mid; /* the batch: outer × mid matrices per tensor */
  int64_t m, n, k;    /* op(A) [m,k] · op(B) [k,n] = C [m,n] */
  int64_t ar, ac, br, bc; /* stored rows / cols of A and B */
  int axis;           /* normalised */
} lmx_la_gemm_plan;

/* khatri_rao's parameter (at most LMX_KR_MAX = 16 matrices: kernels/cpu/khatri_rao.h) */
typedef struct {
  int64_t num_args;
} lmx_kr_param;

/* khatri_rao: checks that the n inputs are 2-D with one column count and in[0]'s dtype,
 * fills a (the inputs' data pointers, on whatever device) and the output shape *os. */
int lmx_kr_setup(const lmx_op_ctx *c, const lmx_tensor *in, int n, lmx_kr_args *a,
                 lmx_shape *os);

/* The product of A and B (full shapes) under the parameters; fails naming the input and
 * the dims when the batch dims or the inner dims differ. */
int lmx_plan_la_gemm(const lmx_op_ctx *c, const lmx_shape *a, const lmx_shape *b,
                     lmx_la_gemm_plan *p);
/* The output shape of a plan: A's shape with rows m at axis and n columns last. */
lmx_shape lmx_plan_la_gemm_out(const lmx_shape *a, const lmx_la_gemm_plan *p);

#endif
