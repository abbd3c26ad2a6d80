/* matrix.c — CUDA glue of the layout operators: Concat, SliceChannel, the Reshape family
 * (Reshape, Flatten, expand_dims, squeeze), transpose, SwapAxis, slice, slice_axis
 * (src/ops/cpu/matrix.c's twin). Every one is a strided copy (kernels/cuda/strided.cu)
 * planned by src/ops/layout_plan.c exactly as on the CPU: Concat / SliceChannel copy
 * column blocks of [rows, W] views, transpose permutes source strides, slices offset and
 * scale them. Gradients copy back, accumulating for req ADD (SliceChannel and the slices
 * first zero the whole input gradient for WRITE). Forward copies move any dtype;
 * accumulation takes float32 / float64 / float16. A missing head gradient of a
 * SliceChannel output counts as zeros.
 */
#include "../../tensor/dtype.h"
#include "../layout_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static char *at(const lmx_tensor *t, int64_t elems) {
  return (char *)t->data + (size_t)elems * (size_t)lmx_dtype_size(t->dtype);
}

static int copy_rc(const lmx_op_ctx *c, int rc, int dt, int acc) {
  if (rc == -1 && acc)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "req 'add' needs float32, float64 or float16 on the "
                       "GPU, got %s", lmx_dtype_str(dt));
  return lmx_cuda_fail(c, rc, "lmx_cu_strided_copy");
}

/* dst[rows, w] at column col of a [rows, W] matrix (+)= src[rows, w] (to_big), or the
 * reverse (from the big matrix into a [rows, w] one). */
static int block_copy(const lmx_op_ctx *c, int dt, int64_t rows, int64_t w, int64_t W,
                      int64_t col, void *big, const void *small, int to_big, int acc) {
  int64_t shape[2] = {rows, w}, sbig[2] = {W, 1}, ssmall[2] = {w, 1};
  size_t es = (size_t)lmx_dtype_size(dt);
  char *b = (char *)big + (size_t)col * es;
  int rc = to_big ? lmx_cu_strided_copy(LMX_CU_S(c), dt, 2, shape, b, sbig, small, ssmall, acc)
                  : lmx_cu_strided_copy(LMX_CU_S(c), dt, 2, shape, (void *)small, ssmall, b,
                                        sbig, acc);
  return copy_rc(c, rc, dt, acc);
}

static int zero_all(const lmx_op_ctx *c, const lmx_tensor *t) {
  return lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), t->data, t->dtype, lmx_glue_size(t), 0.0),
                       "lmx_cu_fill");
}

/* ---- Concat ----------------------------------------------------------------------------- */

int lmx_cuda_fwd_Concat(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t rows, W, col = 0;
  LMX_TRY(lmx_plan_concat(c, in, &out[0], &rows, &W));
  int nin = (int)((const lmx_concat_param *)c->param)->num_args;
  for (int i = 0; i < nin; i++) {
    int64_t w = rows ? lmx_glue_size(&in[i]) / rows : 0;
    LMX_TRY(block_copy(c, out[0].dtype, rows, w, W, col, out[0].data, in[i].data, 1,
                       req[0] == LMX_REQ_ADD));
    col += w;
  }
  return LMX_OK;
}

int lmx_cuda_bwd_Concat(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  int64_t rows, W, col = 0;
  LMX_TRY(lmx_plan_concat(c, ig, &og[0], &rows, &W));
  int nin = (int)((const lmx_concat_param *)c->param)->num_args;
  for (int i = 0; i < nin; i++) {
    int64_t w = rows ? lmx_glue_size(&ig[i]) / rows : 0;
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(block_copy(c, og[0].dtype, rows, w, W, col, og[0].data, ig[i].data, 0,
                         req[i] == LMX_REQ_ADD));
    col += w;
  }
  return LMX_OK;
}

/* ---- SliceChannel ----------------------------------------------------------------------- */

int lmx_cuda_fwd_SliceChannel(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  int64_t rows, W, w, k = ((const lmx_split_param *)c->param)->num_outputs;
  LMX_TRY(lmx_plan_split(c, &in[0], &rows, &W, &w));
  for (int64_t i = 0; i < k; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_size(c, &out[i], rows * w, "output"));
    if (out[i].dtype != in[0].dtype)
      return lmx_op_fail(c, LMX_ERR_DTYPE, "output: expected %s, got %s",
                         lmx_dtype_str(in[0].dtype), lmx_dtype_str(out[i].dtype));
    LMX_TRY(block_copy(c, in[0].dtype, rows, w, W, i * w, in[0].data, out[i].data, 0,
                       req[i] == LMX_REQ_ADD));
  }
  return LMX_OK;
}

int lmx_cuda_bwd_SliceChannel(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t rows, W, w, k = ((const lmx_split_param *)c->param)->num_outputs;
  LMX_TRY(lmx_plan_split(c, &ig[0], &rows, &W, &w));
  if (req[0] != LMX_REQ_ADD) LMX_TRY(zero_all(c, &ig[0]));
  for (int64_t i = 0; i < k; i++) {
    if (!og[i].data) continue; /* no head gradient: zeros */
    LMX_TRY(lmx_glue_check_size(c, &og[i], rows * w, "output gradient"));
    if (og[i].dtype != ig[0].dtype)
      return lmx_op_fail(c, LMX_ERR_DTYPE, "output gradient: expected %s, got %s",
                         lmx_dtype_str(ig[0].dtype), lmx_dtype_str(og[i].dtype));
    /* WRITE: the zeroed gradient receives each block by a copy (blocks do not overlap) */
    int acc = req[0] == LMX_REQ_ADD;
    LMX_TRY(block_copy(c, ig[0].dtype, rows, w, W, i * w, ig[0].data, og[i].data, 1, acc));
  }
  return LMX_OK;
}

/* ---- Reshape family: same elements, new shape ------------------------------------------- */

static int copy_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], lmx_glue_size(&in[0]), "output"));
  if (out[0].dtype != in[0].dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "output: expected %s, got %s",
                       lmx_dtype_str(in[0].dtype), lmx_dtype_str(out[0].dtype));
  if (out[0].data == in[0].data && req[0] != LMX_REQ_ADD) return LMX_OK; /* in place */
  int acc = req[0] == LMX_REQ_ADD;
  if (acc) LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data' (req 'add')"));
  return lmx_cuda_fail(c, lmx_cu_scale(LMX_CU_S(c), in[0].dtype, lmx_glue_size(&in[0]),
                                       out[0].data, in[0].data, 1.0, acc),
                       "lmx_cu_scale");
}

static int copy_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *ig,
                    const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_tensor g = og[0];
  g.shape = ig[0].shape;
  LMX_TRY(lmx_glue_check_size(c, &og[0], lmx_glue_size(&ig[0]), "output gradient"));
  int r = req[0];
  return copy_fwd(c, &g, ig, &r);
}

#define CUDA_COPYOP(id)                                                                     \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return copy_fwd(c, in, out, req);                                                       \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux, (void)in, (void)out;                                                         \
    return copy_bwd(c, og, ig, req);                                                        \
  }

CUDA_COPYOP(Reshape)
CUDA_COPYOP(Flatten)
CUDA_COPYOP(expand_dims)
CUDA_COPYOP(squeeze)

/* ---- transpose / SwapAxis ----------------------------------------------------------------- */

static int permute(const lmx_op_ctx *c, int swap, const lmx_tensor *x, const lmx_tensor *y,
                   int req, int backward) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  int nd = x->shape.ndim, perm[LMX_MAX_NDIM];
  LMX_TRY(lmx_plan_perm(c, swap, nd, perm));
  int64_t xs[LMX_MAX_NDIM], ys[LMX_MAX_NDIM], ps[LMX_MAX_NDIM];
  lmx_shape ysh = {nd, {0}};
  for (int k = 0; k < nd; k++) ysh.dim[k] = x->shape.dim[perm[k]];
  LMX_TRY(lmx_glue_check_like(c, y, &ysh, x->dtype, backward ? "output gradient" : "output"));
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), backward ? "input gradient" : "input"));
  lmx_plan_contig_strides(nd, x->shape.dim, xs);
  lmx_plan_contig_strides(nd, ysh.dim, ys);
  for (int k = 0; k < nd; k++) ps[k] = xs[perm[k]];
  int acc = req == LMX_REQ_ADD, rc;
  if (!backward)
    rc = lmx_cu_strided_copy(LMX_CU_S(c), x->dtype, nd, ysh.dim, y->data, ys, x->data, ps, acc);
  else
    rc = lmx_cu_strided_copy(LMX_CU_S(c), x->dtype, nd, ysh.dim, x->data, ps, y->data, ys, acc);
  return copy_rc(c, rc, x->dtype, acc);
}

int lmx_cuda_fwd_transpose(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  return permute(c, 0, &in[0], &out[0], req[0], 0);
}

int lmx_cuda_bwd_transpose(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return permute(c, 0, &ig[0], &og[0], req[0], 1);
}

int lmx_cuda_fwd_SwapAxis(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  return permute(c, 1, &in[0], &out[0], req[0], 0);
}

int lmx_cuda_bwd_SwapAxis(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return permute(c, 1, &ig[0], &og[0], req[0], 1);
}

/* ---- slice / slice_axis --------------------------------------------------------------- */

static int slice_run(const lmx_op_ctx *c, int axis_mode, const lmx_tensor *x,
                     const lmx_tensor *y, int req, int backward) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  int nd = x->shape.ndim;
  int64_t off, ys[LMX_MAX_NDIM], ps[LMX_MAX_NDIM];
  LMX_TRY(lmx_plan_slice(c, axis_mode, x, y, &off, ps));
  lmx_plan_contig_strides(nd, y->shape.dim, ys);
  int acc = req == LMX_REQ_ADD, rc;
  if (!backward) {
    rc = lmx_cu_strided_copy(LMX_CU_S(c), x->dtype, nd, y->shape.dim, y->data, ys, at(x, off),
                             ps, acc);
  } else {
    if (!acc) LMX_TRY(zero_all(c, x));
    rc = lmx_cu_strided_copy(LMX_CU_S(c), x->dtype, nd, y->shape.dim, at(x, off), ps, y->data,
                             ys, acc);
  }
  return copy_rc(c, rc, x->dtype, acc);
}

int lmx_cuda_fwd_slice(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  return slice_run(c, 0, &in[0], &out[0], req[0], 0);
}

int lmx_cuda_bwd_slice(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                       const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return slice_run(c, 0, &ig[0], &og[0], req[0], 1);
}

int lmx_cuda_fwd_slice_axis(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  return slice_run(c, 1, &in[0], &out[0], req[0], 0);
}

int lmx_cuda_bwd_slice_axis(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return slice_run(c, 1, &ig[0], &og[0], req[0], 1);
}

/* ---- reverse: a strided copy with negative strides on the reversed axes; the gradient
 * is the output gradient reversed the same way. -------------------------------------- */

static int reverse_run(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  int nd = x->shape.ndim;
  int64_t off, ys[LMX_MAX_NDIM], ps[LMX_MAX_NDIM];
  LMX_TRY(lmx_plan_reverse(c, x, y, &off, ps));
  lmx_plan_contig_strides(nd, y->shape.dim, ys);
  int acc = req == LMX_REQ_ADD;
  int rc = lmx_cu_strided_copy(LMX_CU_S(c), x->dtype, nd, y->shape.dim, y->data, ys, at(x, off),
                               ps, acc);
  return copy_rc(c, rc, x->dtype, acc);
}

int lmx_cuda_fwd_reverse(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  return reverse_run(c, &in[0], &out[0], req[0]);
}

int lmx_cuda_bwd_reverse(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return reverse_run(c, &og[0], &ig[0], req[0]);
}
