/* linalg_tri_plan.h — what the CPU and the CUDA glue of issue 14's diagonal and triangle
 * operators derive from a shape and the parameters (shapes only, never data; messages
 * from lmx_op_fail): _linalg_extractdiag, _linalg_makediag, _linalg_extracttrian,
 * _linalg_maketrian and _linalg_sumlogdiag, batched over every dim before the matrix
 * (or packed vector) dims. Packing: kernels/cpu/la_tri.h.
 */
#ifndef LMX_OPS_LINALG_TRI_PLAN_H
#define LMX_OPS_LINALG_TRI_PLAN_H

#include <stdint.h>

#include "../../kernels/cpu/la_tri.h"
#include "op.h"

/* the parameters of the four copy operators (the diag ones have no `lower`) */
typedef struct {
  int64_t offset;
  int lower;
} lmx_la_tri_param;

/* which operator */
enum { LMX_LA_EXTRACTDIAG, LMX_LA_MAKEDIAG, LMX_LA_EXTRACTTRIAN, LMX_LA_MAKETRIAN,
       LMX_LA_SUMLOGDIAG };

typedef struct {
  int64_t batch;  /* matrices */
  lmx_la_tri t;   /* the packing (n the matrices' size) */
  int make;       /* the input is packed and the output the matrices */
  lmx_shape out;  /* the output's shape */
} lmx_la_tri_plan;

/* The plan of operator `kind` for input shape *in (its parameter block in c->param; none
 * for sumlogdiag, whose plan has t.n and batch only). Fails naming input 'A', what was
 * expected and what was got. */
int lmx_la_tri_plan_make(const lmx_op_ctx *c, int kind, const lmx_shape *in,
                         lmx_la_tri_plan *p);

#endif
