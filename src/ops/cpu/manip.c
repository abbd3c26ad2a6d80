/* manip.c — CPU glue of the tensor-manipulation operators of src/ops/manip.c: tile,
 * repeat, the broadcast_to family (strided copies that read x with stride 0 along the
 * replica axes; the gradient sums the output gradient over them with the reduction
 * kernel), stack, reshape_like, slice_like, diag (strided copies both ways; the
 * gradient of the shape-only second input is zero), shape_array and size_array (int64
 * values written from the shape). Plans: src/ops/manip_plan.c. Forward copies move any
 * dtype; gradients and req ADD need float32 / float64.
 */
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../manip_params.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static char *at(const lmx_tensor *t, int64_t elems) {
  return (char *)t->data + (size_t)elems * (size_t)lmx_dtype_size(t->dtype);
}

static void zero_all(const lmx_tensor *t) {
  memset(t->data, 0, (size_t)lmx_glue_size(t) * (size_t)lmx_dtype_size(t->dtype));
}

static int copy_rc(const lmx_op_ctx *c, int rc, const lmx_tensor *t, const char *what) {
  return rc < 0 ? lmx_op_fail(c, LMX_ERR_DTYPE, "%s: req 'add' and gradients need float32 or "
                              "float64, got %s", what, lmx_dtype_str(t->dtype))
                : LMX_OK;
}

/* ---- replication: tile, repeat, broadcast_to / broadcast_axis / broadcast_like ---------- */

static int rep_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_rep v;
  LMX_TRY(lmx_mplan_replicate(c, &in[0], &out[0], 0, &v));
  int rc = lmx_cpu_strided_copy(out[0].dtype, v.nd, v.shape, out[0].data, v.dstr, in[0].data,
                                v.sstr, req[0] == LMX_REQ_ADD);
  return copy_rc(c, rc, &out[0], "output");
}

static int rep_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *ig,
                   const int *req, int nin) {
  for (int i = 1; i < nin; i++) lmx_cpu_zero_grad(&ig[i], req[i]); /* shape-only input */
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_rep v;
  LMX_TRY(lmx_mplan_replicate(c, &ig[0], &og[0], 1, &v));
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "input gradient"));
  return copy_rc(c, lmx_cpu_reduce(LMX_RED_SUM, ig[0].dtype, v.nd, v.shape, og[0].data,
                                   ig[0].data, v.sstr, lmx_glue_size(&ig[0]), 1.0,
                                   req[0] == LMX_REQ_ADD),
                 &ig[0], "input gradient");
}

#define CPU_REP(id, NIN)                                                                    \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return rep_fwd(c, in, out, req);                                                        \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)in, (void)out, (void)aux;                                                         \
    return rep_bwd(c, og, ig, req, NIN);                                                    \
  }

CPU_REP(tile, 1)
CPU_REP(repeat, 1)
CPU_REP(broadcast_to, 1)
CPU_REP(broadcast_axis, 1)
CPU_REP(broadcast_like, 2)

/* ---- copies: stack, reshape_like, slice_like, diag ---------------------------------------- */

static int copy_one(const lmx_op_ctx *c, int i, const lmx_tensor *x, const lmx_tensor *y,
                    int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_copy p;
  LMX_TRY(lmx_mplan_copy_of(c, i, x, y, 0, &p));
  if (p.zero_y && req != LMX_REQ_ADD) zero_all(y);
  int rc = lmx_cpu_strided_copy(y->dtype, p.nd, p.shape, at(y, p.yoff), p.ystr, at(x, p.xoff),
                                p.xstr, req == LMX_REQ_ADD);
  return copy_rc(c, rc, y, "output");
}

static int copy_back(const lmx_op_ctx *c, int i, const lmx_tensor *gx, const lmx_tensor *gy,
                     int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_copy p;
  LMX_TRY(lmx_mplan_copy_of(c, i, gx, gy, 1, &p));
  LMX_TRY(lmx_cpu_check_float(c, gx, "input gradient"));
  if (p.zero_x && req != LMX_REQ_ADD) zero_all(gx);
  int rc = lmx_cpu_strided_copy(gx->dtype, p.nd, p.shape, at(gx, p.xoff), p.xstr,
                                at(gy, p.yoff), p.ystr, req == LMX_REQ_ADD);
  return copy_rc(c, rc, gx, "input gradient");
}

#define CPU_COPY(id, NIN)                                                                   \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return copy_one(c, 0, &in[0], &out[0], req[0]);                                         \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)in, (void)out, (void)aux;                                                         \
    for (int i = 1; i < NIN; i++) lmx_cpu_zero_grad(&ig[i], req[i]);                        \
    return copy_back(c, 0, &ig[0], &og[0], req[0]);                                         \
  }

CPU_COPY(reshape_like, 2)
CPU_COPY(slice_like, 2)
CPU_COPY(diag, 1)

int lmx_cpu_fwd_stack(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  int n = (int)((const lmx_stack_param *)c->param)->num_args;
  for (int i = 0; i < n; i++) LMX_TRY(copy_one(c, i, &in[i], &out[0], req[0]));
  return LMX_OK;
}

int lmx_cpu_bwd_stack(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  int n = (int)((const lmx_stack_param *)c->param)->num_args;
  for (int i = 0; i < n; i++) LMX_TRY(copy_back(c, i, &ig[i], &og[0], req[i]));
  return LMX_OK;
}

/* ---- shape_array / size_array --------------------------------------------------------- */

static int shape_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  int64_t v[LMX_MAX_NDIM];
  int n;
  LMX_TRY(lmx_mplan_shape_values(c, &in[0], &out[0], v, &n));
  memcpy(out[0].data, v, (size_t)n * sizeof v[0]);
  return LMX_OK;
}

int lmx_cpu_fwd_shape_array(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  return shape_fwd(c, in, out, req);
}

int lmx_cpu_fwd_size_array(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  return shape_fwd(c, in, out, req);
}
