/* manip.c — CUDA glue of the tensor-manipulation operators of src/ops/manip.c
 * (src/ops/cpu/manip.c's twin): the same plans (src/ops/manip_plan.c) run on the
 * strided-copy, reduction and fill launchers of kernels/cuda/strided.cu and convert.cu.
 * tile, repeat and the broadcast_to family read x with stride 0 along the replica axes;
 * their gradient is a deterministic sum over those axes (lmx_cu_reduce). stack,
 * reshape_like, slice_like and diag copy both ways. shape_array / size_array fill each
 * int64 element with its value. Forward copies move any dtype; gradients and req ADD take
 * float32 / float64 / float16.
 */
#include "../../tensor/dtype.h"
#include "../manip_params.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static char *at(const lmx_tensor *t, int64_t elems) {
  return (char *)t->data + (size_t)elems * (size_t)lmx_dtype_size(t->dtype);
}

static int zero_all(const lmx_op_ctx *c, const lmx_tensor *t) {
  return lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), t->data, t->dtype, lmx_glue_size(t), 0.0),
                       "lmx_cu_fill");
}

static int copy_rc(const lmx_op_ctx *c, int rc, const lmx_tensor *t, const char *what,
                   const char *kernel) {
  if (rc == -1)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: req 'add' and gradients need float32, float64 "
                       "or float16 on the GPU, got %s", what, lmx_dtype_str(t->dtype));
  return lmx_cuda_fail(c, rc, kernel);
}

/* ---- replication: tile, repeat, broadcast_to / broadcast_axis / broadcast_like ---------- */

static int rep_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_rep v;
  LMX_TRY(lmx_mplan_replicate(c, &in[0], &out[0], 0, &v));
  int rc = lmx_cu_strided_copy(LMX_CU_S(c), out[0].dtype, v.nd, v.shape, out[0].data, v.dstr,
                               in[0].data, v.sstr, req[0] == LMX_REQ_ADD);
  return copy_rc(c, rc, &out[0], "output", "lmx_cu_strided_copy");
}

static int rep_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *ig,
                   const int *req, int nin) {
  for (int i = 1; i < nin; i++) LMX_TRY(lmx_cuda_zero_grad(c, &ig[i], req[i]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_rep v;
  LMX_TRY(lmx_mplan_replicate(c, &ig[0], &og[0], 1, &v));
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "input gradient"));
  int rc = lmx_cu_reduce(LMX_CU_S(c), LMX_RED_SUM, ig[0].dtype, v.nd, v.shape, og[0].data,
                         ig[0].data, v.sstr, lmx_glue_size(&ig[0]), 1.0, req[0] == LMX_REQ_ADD);
  return copy_rc(c, rc, &ig[0], "input gradient", "lmx_cu_reduce");
}

#define CUDA_REP(id, NIN)                                                                   \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return rep_fwd(c, in, out, req);                                                        \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)in, (void)out, (void)aux;                                                         \
    return rep_bwd(c, og, ig, req, NIN);                                                    \
  }

CUDA_REP(tile, 1)
CUDA_REP(repeat, 1)
CUDA_REP(broadcast_to, 1)
CUDA_REP(broadcast_axis, 1)
CUDA_REP(broadcast_like, 2)

/* ---- copies: stack, reshape_like, slice_like, diag ---------------------------------------- */

static int copy_one(const lmx_op_ctx *c, int i, const lmx_tensor *x, const lmx_tensor *y,
                    int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_copy p;
  LMX_TRY(lmx_mplan_copy_of(c, i, x, y, 0, &p));
  if (p.zero_y && req != LMX_REQ_ADD) LMX_TRY(zero_all(c, y));
  int rc = lmx_cu_strided_copy(LMX_CU_S(c), y->dtype, p.nd, p.shape, at(y, p.yoff), p.ystr,
                               at(x, p.xoff), p.xstr, req == LMX_REQ_ADD);
  return copy_rc(c, rc, y, "output", "lmx_cu_strided_copy");
}

static int copy_back(const lmx_op_ctx *c, int i, const lmx_tensor *gx, const lmx_tensor *gy,
                     int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_mplan_copy p;
  LMX_TRY(lmx_mplan_copy_of(c, i, gx, gy, 1, &p));
  LMX_TRY(lmx_cuda_check_float(c, gx, "input gradient"));
  if (p.zero_x && req != LMX_REQ_ADD) LMX_TRY(zero_all(c, gx));
  int rc = lmx_cu_strided_copy(LMX_CU_S(c), gx->dtype, p.nd, p.shape, at(gx, p.xoff), p.xstr,
                               at(gy, p.yoff), p.ystr, req == LMX_REQ_ADD);
  return copy_rc(c, rc, gx, "input gradient", "lmx_cu_strided_copy");
}

#define CUDA_COPY(id, NIN)                                                                  \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return copy_one(c, 0, &in[0], &out[0], req[0]);                                         \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)in, (void)out, (void)aux;                                                         \
    for (int i = 1; i < NIN; i++) LMX_TRY(lmx_cuda_zero_grad(c, &ig[i], req[i]));           \
    return copy_back(c, 0, &ig[0], &og[0], req[0]);                                         \
  }

CUDA_COPY(reshape_like, 2)
CUDA_COPY(slice_like, 2)
CUDA_COPY(diag, 1)

int lmx_cuda_fwd_stack(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  int n = (int)((const lmx_stack_param *)c->param)->num_args;
  for (int i = 0; i < n; i++) LMX_TRY(copy_one(c, i, &in[i], &out[0], req[0]));
  return LMX_OK;
}

int lmx_cuda_bwd_stack(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                       const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  int n = (int)((const lmx_stack_param *)c->param)->num_args;
  for (int i = 0; i < n; i++) LMX_TRY(copy_back(c, i, &ig[i], &og[0], req[i]));
  return LMX_OK;
}

/* ---- shape_array / size_array: one fill launch per element (at most LMX_MAX_NDIM) ------ */

static int shape_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  int64_t v[LMX_MAX_NDIM];
  int n;
  LMX_TRY(lmx_mplan_shape_values(c, &in[0], &out[0], v, &n));
  for (int k = 0; k < n; k++)
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), at(&out[0], k), LMX_INT64, 1, (double)v[k]),
                          "lmx_cu_fill"));
  return LMX_OK;
}

int lmx_cuda_fwd_shape_array(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                             const int *req, const lmx_tensor *aux) {
  (void)aux;
  return shape_fwd(c, in, out, req);
}

int lmx_cuda_fwd_size_array(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  return shape_fwd(c, in, out, req);
}
