/* linalg_blas_plan.h — shapes and parameters of issue 14's Cholesky and triangular
 * operators of MXNet's linalg family (ops14g), shared by the descriptors and the CPU
 * glue: _linalg_potrf, _linalg_potri, _linalg_trmm, _linalg_trsm, _linalg_syrk. The
 * matrices are the last two dims, batched over the leading dims (equal in both inputs).
 * Shapes only, never data; messages from lmx_op_fail.
 */
#ifndef LMX_OPS_LINALG_BLAS_PLAN_H
#define LMX_OPS_LINALG_BLAS_PLAN_H

#include <stdint.h>

#include "op.h"

/* potrf, potri */
typedef struct {
  int lower;
} lmx_la_chol_param;

/* trmm, trsm */
typedef struct {
  int transpose, rightside, lower;
  double alpha;
} lmx_la_trmm_param;

/* syrk */
typedef struct {
  int transpose;
  double alpha;
} lmx_la_syrk_param;

enum { LMX_LA_POTRF, LMX_LA_POTRI, LMX_LA_TRMM, LMX_LA_TRSM, LMX_LA_SYRK };

typedef struct {
  int64_t batch;  /* matrices */
  int64_t n;      /* A's size (potrf, potri, trmm, trsm); syrk: the output's */
  int64_t m, k;   /* B's rows and cols (trmm, trsm); syrk: A's */
  lmx_shape out;  /* the output's shape */
} lmx_la_blas_plan;

/* The plan of operator `kind` for input shapes in[0] (A) and, for trmm / trsm, in[1]
 * (B), with the parameter block in c->param. */
int lmx_la_blas_plan_make(const lmx_op_ctx *c, int kind, const lmx_shape *in,
                          lmx_la_blas_plan *p);

#endif
