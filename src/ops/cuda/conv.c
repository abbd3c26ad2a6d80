/* conv.c — CUDA glue of Convolution, Deconvolution and Pooling (channel-first, 1-D..3-D).
 *
 * Geometry from nn_plan.c (shared with the CPU glue). Convolution lowers a chunk of nb
 * images at once: one im2col into the workspace col [C·K, nb·O] (image i at columns
 * i·O), then per group one strided-batched GEMM over the chunk's images that writes
 * straight into each image's slice of the output (pat_g[i] [F/G, O] = W_g · col_g[i]:
 * A = W_g shared, B stepping O columns, C stepping F·O), so no layout moves are needed;
 * the bias is a per-channel broadcast kernel. Backward: gdata is col2im of W_gᵀ · pat_g
 * (the same batched form), gW accumulates pat_g[i] · col_g[i]ᵀ image by image (beta 1
 * after the first), gbias a per-channel block sum. Deconvolution is the transpose
 * (forward = the convolution's data gradient, data gradient = the convolution's
 * forward), as on the CPU. nb: as many images as keep col within LMX_CONV_COL_BYTES
 * (sized for float64), at least one. float32, float64, float16 (float32 GEMM compute).
 * Real builds with cuDNN first offer Convolution and Pooling to it (dnn.c: the
 * configurations cudnn_args.c accepts, unless cudnn_off or LUAMX_CUDNN=0); what it
 * refuses runs here (depthwise convolutions on the direct kernels of conv.cu). Deconvolution
 * always runs here.
 * Pooling checks its geometry (lmx_pool_plan) and calls kernels/cuda/pool.cu.
 */
#include <stdio.h>
#include <string.h>

#include "dnn.h"
#include "nn_util.h"
#include "../nn_plan.h"
#include "../op_params.h"

static char *elem(const void *base, int dt, int64_t i) {
  return (char *)base + (size_t)i * (size_t)lmx_dtype_size(dt);
}

enum { LMX_CONV_COL_ELEMS = 8 << 20 }; /* 64 MiB of float64 col at most (unless one image needs more) */

/* images per chunk for image volume C·K·O per col */
static int64_t chunk_of(int64_t N, int64_t CKO) {
  int64_t nb = CKO > 0 ? LMX_CONV_COL_ELEMS / CKO : N;
  return nb < 1 ? 1 : nb > N ? (N > 0 ? N : 1) : nb;
}

static size_t conv_ws(const lmx_op_ctx *c, const lmx_shape *img, const lmx_shape *pat) {
  if (img->ndim < 3 || pat->ndim < 3) return 0;
  const lmx_conv_param *prm = c->param;
  int64_t K = 1, O = 1;
  for (int i = 0; i < prm->kernel.ndim; i++) K *= prm->kernel.dim[i];
  for (int i = 2; i < pat->ndim; i++) O *= pat->dim[i];
  int64_t cko = img->dim[1] * K * O;
  return (size_t)(cko * chunk_of(img->dim[0], cko)) * sizeof(double);
}

size_t lmx_cuda_ws_Convolution(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  return conv_ws(c, &in[0], &out[0]);
}

size_t lmx_cuda_ws_Deconvolution(const lmx_op_ctx *c, const lmx_shape *in,
                                 const lmx_shape *out) {
  return conv_ws(c, &out[0], &in[0]);
}

static int plan(const lmx_op_ctx *c, int deconv, const lmx_tensor *in, const lmx_shape *oshape,
                lmx_conv_dims *d, int64_t *nb) {
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_conv_plan(c, deconv, in, oshape, d));
  *nb = chunk_of(d->N, d->C * d->K * d->O);
  return lmx_glue_check_ws(c, (size_t)(d->C * d->K * d->O * *nb) * (size_t)lmx_dtype_size(d->dt));
}

static int64_t max1(int64_t v) { return v > 0 ? v : 1; }

/* pat[N, F, O] (+)= W_g · im2col(img[N, C, I])_g, a chunk of nb images per call */
static int img_to_pat(const lmx_op_ctx *c, const lmx_conv_dims *d, int64_t nb, const void *w,
                      const void *img, void *pat, int acc) {
  lmx_cu_stream s = LMX_CU_S(c);
  int dt = d->dt;
  int64_t Fg = d->F / d->G;
  for (int64_t n0 = 0; n0 < d->N; n0 += nb) {
    int64_t cnt = d->N - n0 < nb ? d->N - n0 : nb, ld = max1(cnt * d->O);
    LMX_CU_TRY(c, lmx_cu_im2col(s, dt, &d->g, d->C, cnt, elem(img, dt, n0 * d->C * d->I),
                                c->workspace, ld), "lmx_cu_im2col");
    for (int64_t q = 0; q < d->G; q++) {
      lmx_cu_gemm_req r = {dt, 0, 0, Fg, d->O, d->CK, cnt, 1.0, acc ? 1.0 : 0.0,
                           elem(w, dt, q * Fg * d->CK), max1(d->CK), 0,
                           elem(c->workspace, dt, q * d->CK * ld), ld, d->O,
                           elem(pat, dt, (n0 * d->F + q * Fg) * d->O), max1(d->O), d->F * d->O};
      LMX_CU_TRY(c, lmx_cu_gemm_req_run(s, &r), "lmx_cu_gemm_req_run");
    }
  }
  return LMX_OK;
}

/* img[N, C, I] (+)= col2im(W_gᵀ · pat_g), a chunk of nb images per call */
static int pat_to_img(const lmx_op_ctx *c, const lmx_conv_dims *d, int64_t nb, const void *w,
                      const void *pat, void *img, int acc) {
  lmx_cu_stream s = LMX_CU_S(c);
  int dt = d->dt;
  int64_t Fg = d->F / d->G;
  if (!acc) LMX_CU_TRY(c, lmx_cu_bias_rows(s, dt, 1, d->N * d->C * d->I, img, NULL, 0), "fill");
  if (Fg == 0) return LMX_OK; /* no product: nothing to add */
  for (int64_t n0 = 0; n0 < d->N; n0 += nb) {
    int64_t cnt = d->N - n0 < nb ? d->N - n0 : nb, ld = max1(cnt * d->O);
    for (int64_t q = 0; q < d->G; q++) {
      lmx_cu_gemm_req r = {dt, 1, 0, d->CK, d->O, Fg, cnt, 1.0, 0.0,
                           elem(w, dt, q * Fg * d->CK), max1(d->CK), 0,
                           elem(pat, dt, (n0 * d->F + q * Fg) * d->O), max1(d->O), d->F * d->O,
                           elem(c->workspace, dt, q * d->CK * ld), ld, d->O};
      LMX_CU_TRY(c, lmx_cu_gemm_req_run(s, &r), "lmx_cu_gemm_req_run");
    }
    LMX_CU_TRY(c, lmx_cu_col2im(s, dt, &d->g, d->C, cnt, c->workspace,
                                elem(img, dt, n0 * d->C * d->I), ld), "lmx_cu_col2im");
  }
  return LMX_OK;
}

/* gw[F, CK] (+)= Σ_n pat_g[n] · im2col(img)_g[n]ᵀ (im2col once per chunk) */
static int weight_grad(const lmx_op_ctx *c, const lmx_conv_dims *d, int64_t nb,
                       const void *img, const void *pat, void *gw, int acc) {
  lmx_cu_stream s = LMX_CU_S(c);
  int dt = d->dt;
  int64_t Fg = d->F / d->G;
  if (d->N == 0 || d->O == 0) {
    if (!acc) LMX_CU_TRY(c, lmx_cu_bias_rows(s, dt, 1, d->F * d->CK, gw, NULL, 0), "fill");
    return LMX_OK;
  }
  for (int64_t n0 = 0; n0 < d->N; n0 += nb) {
    int64_t cnt = d->N - n0 < nb ? d->N - n0 : nb, ld = cnt * d->O;
    LMX_CU_TRY(c, lmx_cu_im2col(s, dt, &d->g, d->C, cnt, elem(img, dt, n0 * d->C * d->I),
                                c->workspace, ld), "lmx_cu_im2col");
    for (int64_t i = 0; i < cnt; i++)
      for (int64_t q = 0; q < d->G; q++)
        LMX_CU_TRY(c, lmx_cu_gemm_ld(s, dt, 0, 1, Fg, d->CK, d->O, 1.0,
                                     elem(pat, dt, ((n0 + i) * d->F + q * Fg) * d->O), d->O,
                                     elem(c->workspace, dt, q * d->CK * ld + i * d->O), ld,
                                     n0 + i > 0 || acc ? 1.0 : 0.0, elem(gw, dt, q * Fg * d->CK),
                                     max1(d->CK)), "lmx_cu_gemm_ld");
  }
  return LMX_OK;
}

/* Depthwise convolution (num_group == channels > 1) runs the direct kernels of conv.cu
 * where cuDNN does not take it: im2col would lower it to a 1 x K by K x O product per
 * channel. The note says so ("own depthwise kernels (<why not cuDNN>)"). */
static int is_depthwise(const lmx_conv_dims *d) {
  return d->G > 1 && d->G == d->C;
}

static void note_depthwise(const lmx_op_ctx *c) {
  static const char own[] = "own kernels";
  if (!c->note || !c->note_cap || strncmp(c->note, own, sizeof own - 1) != 0) return;
  char rest[160];
  snprintf(rest, sizeof rest, "%s", c->note + sizeof own - 1);
  lmx_cudnn_note(c, "own depthwise kernels%s", rest);
}

static int dw_fwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *in,
                  const lmx_tensor *out, int acc) {
  note_depthwise(c);
  LMX_CU_TRY(c, lmx_cu_dwconv_fwd(LMX_CU_S(c), d->dt, &d->g, d->N, d->C, d->F / d->C,
                                  in[0].data, in[1].data, d->bias ? in[2].data : NULL,
                                  out[0].data, acc), "lmx_cu_dwconv_fwd");
  return LMX_OK;
}

static int dw_bwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *og,
                  const lmx_tensor *in, const lmx_tensor *ig, const int *req) {
  note_depthwise(c);
  lmx_cu_stream s = LMX_CU_S(c);
  int64_t m = d->F / d->C;
  if (req[0])
    LMX_CU_TRY(c, lmx_cu_dwconv_bwd_data(s, d->dt, &d->g, d->N, d->C, m, in[1].data,
                                         og[0].data, ig[0].data, req[0] == LMX_REQ_ADD),
               "lmx_cu_dwconv_bwd_data");
  void *gw = req[1] ? ig[1].data : NULL, *gb = d->bias && req[2] ? ig[2].data : NULL;
  if (gw || gb)
    LMX_CU_TRY(c, lmx_cu_dwconv_bwd_wb(s, d->dt, &d->g, d->N, d->C, m, in[0].data, og[0].data,
                                       gw, gb, req[1] == LMX_REQ_ADD,
                                       d->bias && req[2] == LMX_REQ_ADD),
               "lmx_cu_dwconv_bwd_wb");
  return LMX_OK;
}

static int conv_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, int deconv) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_conv_dims d;
  int64_t nb;
  LMX_TRY(plan(c, deconv, in, &out[0].shape, &d, &nb));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &out[0].shape, d.dt, "output"));
  int acc = req[0] == LMX_REQ_ADD;
  int rc = lmx_cudnn_conv_fwd(c, &d, in, out, acc); /* refuses Deconvolution */
  if (rc != LMX_CUDNN_OWN) return rc;
  if (!deconv && is_depthwise(&d)) return dw_fwd(c, &d, in, out, acc);
  if (!deconv) LMX_TRY(img_to_pat(c, &d, nb, in[1].data, in[0].data, out[0].data, acc));
  else LMX_TRY(pat_to_img(c, &d, nb, in[1].data, in[0].data, out[0].data, acc));
  if (d.bias)
    LMX_CU_TRY(c, lmx_cu_bias_channels(LMX_CU_S(c), d.dt, d.N, deconv ? d.C : d.F,
                                       deconv ? d.I : d.O, out[0].data, in[2].data),
               "lmx_cu_bias_channels");
  return LMX_OK;
}

static int conv_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *ig, const int *req, int deconv) {
  lmx_conv_dims d;
  int64_t nb;
  LMX_TRY(plan(c, deconv, in, &og[0].shape, &d, &nb));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, d.dt, "output gradient"));
  for (int i = 0; i < (d.bias ? 3 : 2); i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, d.dt, "input gradient"));
  int rc = lmx_cudnn_conv_bwd(c, &d, og, in, ig, req); /* refuses Deconvolution */
  if (rc != LMX_CUDNN_OWN) return rc;
  if (!deconv && is_depthwise(&d)) return dw_bwd(c, &d, og, in, ig, req);
  const void *img = deconv ? og[0].data : in[0].data, *pat = deconv ? in[0].data : og[0].data;
  if (req[1]) LMX_TRY(weight_grad(c, &d, nb, img, pat, ig[1].data, req[1] == LMX_REQ_ADD));
  if (req[0]) {
    int acc = req[0] == LMX_REQ_ADD;
    if (!deconv) LMX_TRY(pat_to_img(c, &d, nb, in[1].data, og[0].data, ig[0].data, acc));
    else LMX_TRY(img_to_pat(c, &d, nb, in[1].data, og[0].data, ig[0].data, acc));
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
  int rc = lmx_cudnn_pool_fwd(c, &g, type, incl, &in[0], &out[0], req[0] == LMX_REQ_ADD);
  if (rc != LMX_CUDNN_OWN) return rc;
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
  /* dnn.c refuses lp and checks that the forward output is there */
  int rc = lmx_cudnn_pool_bwd(c, &g, type, incl, &in[0], &out[0], &og[0], &ig[0],
                              req[0] == LMX_REQ_ADD);
  if (rc != LMX_CUDNN_OWN) return rc;
  LMX_CU_TRY(c, lmx_cu_pool_bwd(LMX_CU_S(c), type, pv, in[0].dtype, &g, incl,
                                in[0].shape.dim[0] * in[0].shape.dim[1], ig[0].data,
                                og[0].data, in[0].data, y, req[0] == LMX_REQ_ADD),
             "lmx_cu_pool_bwd");
  return LMX_OK;
}
