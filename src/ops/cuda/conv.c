/* conv.c — CUDA glue of Convolution, Deconvolution and Pooling (channel-first, 1-D..3-D).
 *
 * Geometry from nn_plan.c (shared with the CPU glue). Convolution lowers one image at a
 * time: im2col into the workspace col [C·K, O], then one GEMM per group straight into the
 * image's slice of the output (pat_g [F/G, O] = W_g · col_g), so no layout moves are
 * needed; the bias is a per-channel broadcast kernel. Backward: gdata is col2im of
 * W_gᵀ · pat_g per image, gW accumulates pat_g · col_gᵀ over the images (beta 1 after the
 * first), gbias a per-channel block sum. Deconvolution is the transpose (forward = the
 * convolution's data gradient, data gradient = the convolution's forward), as on the CPU.
 * Workspace: col for one image, sized for float64. float32, float64, float16 (float32
 * GEMM compute). cuDNN is not used yet.
 * Pooling checks its geometry (lmx_pool_plan) and calls kernels/cuda/pool.cu.
 */
#include "nn_util.h"
#include "../nn_plan.h"
#include "../op_params.h"

static char *elem(const void *base, int dt, int64_t i) {
  return (char *)base + (size_t)i * (size_t)lmx_dtype_size(dt);
}

static size_t conv_ws(const lmx_op_ctx *c, const lmx_shape *img, const lmx_shape *pat) {
  if (img->ndim < 3 || pat->ndim < 3) return 0;
  const lmx_conv_param *prm = c->param;
  int64_t K = 1, O = 1;
  for (int i = 0; i < prm->kernel.ndim; i++) K *= prm->kernel.dim[i];
  for (int i = 2; i < pat->ndim; i++) O *= pat->dim[i];
  return (size_t)(img->dim[1] * K * O) * sizeof(double);
}

size_t lmx_cuda_ws_Convolution(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  return conv_ws(c, &in[0], &out[0]);
}

size_t lmx_cuda_ws_Deconvolution(const lmx_op_ctx *c, const lmx_shape *in,
                                 const lmx_shape *out) {
  return conv_ws(c, &out[0], &in[0]);
}

static int plan(const lmx_op_ctx *c, int deconv, const lmx_tensor *in, const lmx_shape *oshape,
                lmx_conv_dims *d) {
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_conv_plan(c, deconv, in, oshape, d));
  return lmx_glue_check_ws(c, (size_t)(d->C * d->K * d->O) * (size_t)lmx_dtype_size(d->dt));
}

/* pat[N, F, O] (+)= W_g · im2col(img[N, C, I])_g per image and group */
static int img_to_pat(const lmx_op_ctx *c, const lmx_conv_dims *d, const void *w,
                      const void *img, void *pat, int acc) {
  lmx_cu_stream s = LMX_CU_S(c);
  int dt = d->dt;
  int64_t Fg = d->F / d->G;
  for (int64_t n = 0; n < d->N; n++) {
    LMX_CU_TRY(c, lmx_cu_im2col(s, dt, &d->g, d->C, 1, elem(img, dt, n * d->C * d->I),
                                c->workspace, d->O > 0 ? d->O : 1), "lmx_cu_im2col");
    for (int64_t q = 0; q < d->G; q++)
      LMX_CU_TRY(c, lmx_cu_gemm_ld(s, dt, 0, 0, Fg, d->O, d->CK, 1.0, elem(w, dt, q * Fg * d->CK),
                                   d->CK > 0 ? d->CK : 1, elem(c->workspace, dt, q * d->CK * d->O),
                                   d->O > 0 ? d->O : 1, acc ? 1.0 : 0.0,
                                   elem(pat, dt, (n * d->F + q * Fg) * d->O), d->O > 0 ? d->O : 1),
                 "lmx_cu_gemm_ld");
  }
  return LMX_OK;
}

/* img[N, C, I] (+)= col2im(W_gᵀ · pat_g) per image */
static int pat_to_img(const lmx_op_ctx *c, const lmx_conv_dims *d, const void *w,
                      const void *pat, void *img, int acc) {
  lmx_cu_stream s = LMX_CU_S(c);
  int dt = d->dt;
  int64_t Fg = d->F / d->G, ld = d->O > 0 ? d->O : 1;
  if (!acc) LMX_CU_TRY(c, lmx_cu_bias_rows(s, dt, 1, d->N * d->C * d->I, img, NULL, 0), "fill");
  for (int64_t n = 0; n < d->N; n++) {
    for (int64_t q = 0; q < d->G; q++)
      LMX_CU_TRY(c, lmx_cu_gemm_ld(s, dt, 1, 0, d->CK, d->O, Fg, 1.0,
                                   elem(w, dt, q * Fg * d->CK), d->CK > 0 ? d->CK : 1,
                                   elem(pat, dt, (n * d->F + q * Fg) * d->O), ld, 0.0,
                                   elem(c->workspace, dt, q * d->CK * d->O), ld),
                 "lmx_cu_gemm_ld");
    if (Fg == 0) /* no product wrote col: nothing to add */
      continue;
    LMX_CU_TRY(c, lmx_cu_col2im(s, dt, &d->g, d->C, 1, c->workspace,
                                elem(img, dt, n * d->C * d->I), ld), "lmx_cu_col2im");
  }
  return LMX_OK;
}

/* gw[F, CK] (+)= Σ_n pat_g · im2col(img)_gᵀ */
static int weight_grad(const lmx_op_ctx *c, const lmx_conv_dims *d, const void *img,
                       const void *pat, void *gw, int acc) {
  lmx_cu_stream s = LMX_CU_S(c);
  int dt = d->dt;
  int64_t Fg = d->F / d->G, ld = d->O > 0 ? d->O : 1;
  if (d->N == 0 || d->O == 0) {
    if (!acc) LMX_CU_TRY(c, lmx_cu_bias_rows(s, dt, 1, d->F * d->CK, gw, NULL, 0), "fill");
    return LMX_OK;
  }
  for (int64_t n = 0; n < d->N; n++) {
    LMX_CU_TRY(c, lmx_cu_im2col(s, dt, &d->g, d->C, 1, elem(img, dt, n * d->C * d->I),
                                c->workspace, ld), "lmx_cu_im2col");
    for (int64_t q = 0; q < d->G; q++)
      LMX_CU_TRY(c, lmx_cu_gemm_ld(s, dt, 0, 1, Fg, d->CK, d->O, 1.0,
                                   elem(pat, dt, (n * d->F + q * Fg) * d->O), ld,
                                   elem(c->workspace, dt, q * d->CK * d->O), ld,
                                   n > 0 || acc ? 1.0 : 0.0, elem(gw, dt, q * Fg * d->CK),
                                   d->CK > 0 ? d->CK : 1), "lmx_cu_gemm_ld");
  }
  return LMX_OK;
}

static int conv_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, int deconv) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_conv_dims d;
  LMX_TRY(plan(c, deconv, in, &out[0].shape, &d));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &out[0].shape, d.dt, "output"));
  int acc = req[0] == LMX_REQ_ADD;
  if (!deconv) LMX_TRY(img_to_pat(c, &d, in[1].data, in[0].data, out[0].data, acc));
  else LMX_TRY(pat_to_img(c, &d, in[1].data, in[0].data, out[0].data, acc));
  if (d.bias)
    LMX_CU_TRY(c, lmx_cu_bias_channels(LMX_CU_S(c), d.dt, d.N, deconv ? d.C : d.F,
                                       deconv ? d.I : d.O, out[0].data, in[2].data),
               "lmx_cu_bias_channels");
  return LMX_OK;
}

static int conv_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *ig, const int *req, int deconv) {
  lmx_conv_dims d;
  LMX_TRY(plan(c, deconv, in, &og[0].shape, &d));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, d.dt, "output gradient"));
  for (int i = 0; i < (d.bias ? 3 : 2); i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, d.dt, "input gradient"));
  const void *img = deconv ? og[0].data : in[0].data, *pat = deconv ? in[0].data : og[0].data;
  if (req[1]) LMX_TRY(weight_grad(c, &d, img, pat, ig[1].data, req[1] == LMX_REQ_ADD));
  if (req[0]) {
    int acc = req[0] == LMX_REQ_ADD;
    if (!deconv) LMX_TRY(pat_to_img(c, &d, in[1].data, og[0].data, ig[0].data, acc));
    else LMX_TRY(img_to_pat(c, &d, in[1].data, og[0].data, ig[0].data, acc));
  }
  if (d.bias && req[2])
    LMX_CU_TRY(c, lmx_cu_sum_channels(LMX_CU_S(c), d.dt, d.N, deconv ? d.C : d.F,
                                      deconv ? d.I : d.O, ig[2].data, og[0].data,
                                      req[2] == LMX_REQ_ADD), "lmx_cu_sum_channels");
  return LMX_OK;
}

int lmx_cuda_fwd_Convolution(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                             const int *req, const lmx_tensor *aux) {
  (void)aux;
  return conv_fwd(c, in, out, req, 0);
}

int lmx_cuda_bwd_Convolution(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                             const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                             const lmx_tensor *aux) {
  (void)out, (void)aux;
  return conv_bwd(c, og, in, ig, req, 0);
}

int lmx_cuda_fwd_Deconvolution(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                               const int *req, const lmx_tensor *aux) {
  (void)aux;
  return conv_fwd(c, in, out, req, 1);
}

int lmx_cuda_bwd_Deconvolution(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                               const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                               const lmx_tensor *aux) {
  (void)out, (void)aux;
  return conv_bwd(c, og, in, ig, req, 1);
}

/* ---- Pooling ------------------------------------------------------------------------ */

int lmx_cuda_fwd_Pooling(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_cpu_geom g;
  int type, incl, pv;
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_pool_plan(c, &in[0].shape, &out[0].shape, &g, &type, &incl, &pv));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &out[0].shape, in[0].dtype, "output"));
  LMX_CU_TRY(c, lmx_cu_pool(LMX_CU_S(c), type, pv, in[0].dtype, &g, incl,
                            in[0].shape.dim[0] * in[0].shape.dim[1], in[0].data, out[0].data,
                            req[0] == LMX_REQ_ADD), "lmx_cu_pool");
  return LMX_OK;
}

int lmx_cuda_bwd_Pooling(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_cpu_geom g;
  int type, incl, pv;
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_pool_plan(c, &in[0].shape, &og[0].shape, &g, &type, &incl, &pv));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, in[0].dtype, "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "input gradient"));
  const void *y = NULL;
  if (type == LMX_POOL_LP) {
    LMX_TRY(lmx_glue_check_like(c, &out[0], &og[0].shape, in[0].dtype, "output"));
    y = out[0].data;
  }
  LMX_CU_TRY(c, lmx_cu_pool_bwd(LMX_CU_S(c), type, pv, in[0].dtype, &g, incl,
                                in[0].shape.dim[0] * in[0].shape.dim[1], ig[0].data,
                                og[0].data, in[0].data, y, req[0] == LMX_REQ_ADD),
             "lmx_cu_pool_bwd");
  return LMX_OK;
}
