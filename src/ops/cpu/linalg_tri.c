/* linalg_tri.c — CPU glue of the diagonal / triangle operators and sumlogdiag
 * (descriptors in src/ops/linalg_tri.c, shapes in linalg_tri_plan.h, kernels in
 * kernels/cpu/la_tri.c). float32 and float64, as MXNet's linalg family.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../linalg_tri_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int plan(const lmx_op_ctx *c, int kind, const lmx_tensor *a, lmx_la_tri_plan *p) {
  LMX_TRY(lmx_cpu_check_float(c, a, "input 'A'"));
  return lmx_la_tri_plan_make(c, kind, &a->shape, p);
}

/* forward of the copies: A -> out; backward: out's gradient -> A's (the backward reads
 * no input: `a` is A's gradient then, which has A's shape and dtype) */
static int tri_run(const lmx_op_ctx *c, int kind, const lmx_tensor *a, const lmx_tensor *src,
                   const lmx_tensor *dst, int req, int bwd) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, kind, a, &p));
  int dt = a->dtype;
  const lmx_shape *ss = bwd ? &p.out : &a->shape, *ds = bwd ? &a->shape : &p.out;
  LMX_TRY(lmx_glue_check_like(c, src, ss, dt, bwd ? "output gradient" : "input 'A'"));
  LMX_TRY(lmx_glue_check_like(c, dst, ds, dt, bwd ? "gradient of 'A'" : "output"));
  /* forward make and backward of extract build matrices from vectors */
  int make = p.make != bwd;
  void *P = make ? src->data : dst->data, *F = make ? dst->data : src->data;
  lmx_cpu_la_tri(dt, p.batch, &p.t, P, F, make, req == LMX_REQ_ADD);
  return LMX_OK;
}

#define TRI_GLUE(id, kind)                                                                  \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return tri_run(c, kind, &in[0], &in[0], &out[0], req[0], 0);                                \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)in, (void)out, (void)aux;                                                         \
    return tri_run(c, kind, &ig[0], &og[0], &ig[0], req[0], 1);                                 \
  }
TRI_GLUE(_linalg_extractdiag, LMX_LA_EXTRACTDIAG)
TRI_GLUE(_linalg_makediag, LMX_LA_MAKEDIAG)
TRI_GLUE(_linalg_extracttrian, LMX_LA_EXTRACTTRIAN)
TRI_GLUE(_linalg_maketrian, LMX_LA_MAKETRIAN)

int lmx_cpu_fwd__linalg_sumlogdiag(const lmx_op_ctx *c, const lmx_tensor *in,
                                   const lmx_tensor *out, const int *req,
                                   const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, LMX_LA_SUMLOGDIAG, &in[0], &p));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, in[0].dtype, "input 'A'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p.out, in[0].dtype, "output"));
  lmx_cpu_sumlogdiag(in[0].dtype, p.batch, p.t.n, in[0].data, out[0].data,
                     req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd__linalg_sumlogdiag(const lmx_op_ctx *c, const lmx_tensor *og,
                                   const lmx_tensor *in, const lmx_tensor *out,
                                   const lmx_tensor *ig, const int *req, const lmx_tensor *aux) {
  (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, LMX_LA_SUMLOGDIAG, &in[0], &p));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, dt, "input 'A'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &p.out, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'A'"));
  lmx_cpu_sumlogdiag_bwd(dt, p.batch, p.t.n, in[0].data, og[0].data, ig[0].data,
                         req[0] == LMX_REQ_ADD);
  return LMX_OK;
}
