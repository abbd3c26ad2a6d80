/* conv.c — CPU glue of Convolution, Deconvolution and Pooling (channel-first, 1-D..3-D).
 *
 * Convolution lowers a chunk of nb images (nb·O >= 256 columns) to col[C·K, nb·O]
 * (im2col) and runs one GEMM per group: pat[g] = W[g] · col[g], then moves the chunk's
 * columns into the NCHW output, adding the bias on the way (no second pass). Chunks are
 * small on purpose: col (C·K x 256+ floats, ~0.5 MiB for LeNet's conv2) then stays in L2
 * between im2col, the GEMM and col2im; 1024-column chunks (2 MiB) measured slower in
 * bench/ops.lua, and the GEMMs are not smaller than OpenBLAS's own blocking. Chunks are
 * independent, so with two or more they run in parallel, one thread per chunk with its
 * own buffers, scheduled dynamically where chunks write disjoint outputs (a core taken
 * by another process then gets fewer chunks instead of stalling the barrier) and
 * statically where they add into per-thread weight partials (so the sums, and the
 * results, do not depend on timing); the GEMMs inside run single-threaded
 * (OpenBLAS's OpenMP build uses one thread inside a parallel region, so the pools never
 * nest). A single chunk runs serially with BLAS using every thread. Backward: gW
 * accumulates pat[g] · col[g]ᵀ into a private per-thread partial (summed at the end: no
 * races), gdata is col2im of W[g]ᵀ · pat[g], gbias a sum. When both gW and gdata are
 * wanted (training) one chunk loop does both: pat is moved into its chunk matrix once and
 * the data-gradient GEMM overwrites col right after the weight GEMM has read it.
 * Deconvolution is the transpose: its forward is convolution's data gradient and its data
 * gradient is convolution's forward.
 * Workspace (descriptor .workspace = lmx_cpu_ws_<op>): per thread col, pat and a
 * weight-sized partial, sized for float64 and omp_get_max_threads() threads; at run time
 * the thread count is capped by what the workspace holds.
 * Depthwise convolution (num_group == channels) skips all of this for the direct kernels
 * of kernels/cpu/dwconv.c (no workspace). A float32 3x3 stride-1 convolution may take the
 * Winograd path instead (conv_wino.c; the workspace is sized for both paths).
 * Pooling checks its geometry (valid / full / same, global_pool) and calls kernels/cpu/pool.c.
 * float16/bfloat16 calls of all three run the float32 code on float32 twins in the
 * workspace, rounding each result once (lowp_stage.c).
 * MXNet 1.9: src/operator/nn/convolution-inl.h, deconvolution-inl.h, pooling.cc, pool.h.
 */
#include <omp.h>
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "conv_wino.h"
#include "cpu_ops.h"

typedef struct {
  lmx_cpu_geom g;       /* "convolution view": in = the larger image, out = the patches */
  int64_t N, C, F, G;   /* images, image channels, patch-side channels, groups */
  int64_t CK, O, I;     /* per group: (C/G)*K rows of col; out volume; image volume */
  int64_t nb, chunks;   /* images per chunk (GEMMs span a chunk), number of chunks */
  int dt, deconv, bias;
  size_t per_thread;    /* workspace bytes per thread */
  int threads;
  lmx_conv_dims d;      /* as lmx_conv_plan made it (the Winograd path takes it) */
} conv_plan;

/* Images per chunk: enough that a GEMM spans >= 256 output columns (see the top). */
static int64_t chunk_of(int64_t N, int64_t O) {
  int64_t nb = O > 0 ? (256 + O - 1) / O : 1;
  return nb < 1 ? 1 : nb > N ? (N > 0 ? N : 1) : nb;
}

/* Workspace elements per thread: col [C·K, nb·O], pat [F, nb·O], weight partial [F, CK]. */
static int64_t per_thread_elems(int64_t C, int64_t K, int64_t F, int64_t CKg, int64_t O,
                                int64_t nb) {
  return C * K * nb * O + F * nb * O + F * CKg;
}

static int conv_plan_of(const lmx_op_ctx *c, int deconv, const lmx_tensor *in,
                        const lmx_shape *oshape, conv_plan *p) {
  lmx_conv_dims d;
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_conv_plan(c, deconv, in, oshape, &d)); /* shared with the CUDA glue */
  p->d = d;
  p->g = d.g, p->N = d.N, p->C = d.C, p->F = d.F, p->G = d.G, p->CK = d.CK, p->O = d.O;
  p->I = d.I, p->dt = d.dt, p->deconv = d.deconv, p->bias = d.bias;
  int64_t K = d.K;
  size_t es = (size_t)lmx_dtype_size(p->dt);
  p->nb = chunk_of(p->N, p->O);
  p->chunks = p->N > 0 ? (p->N + p->nb - 1) / p->nb : 0;
  p->per_thread = (size_t)per_thread_elems(p->C, K, p->F, p->CK, p->O, p->nb) * es;
  size_t have = c->workspace ? c->workspace_bytes : 0;
  p->threads = p->per_thread ? (int)(have / p->per_thread) : 1;
  if (p->threads > omp_get_max_threads()) p->threads = omp_get_max_threads();
  if (p->threads > p->chunks) p->threads = p->chunks > 0 ? (int)p->chunks : 1;
  if (p->threads < 1) return lmx_glue_check_ws(c, p->per_thread);
  return LMX_OK;
}

static size_t conv_ws(const lmx_op_ctx *c, const lmx_shape *img, const lmx_shape *pat) {
  if (img->ndim < 3 || pat->ndim < 3) return 0;
  const lmx_conv_param *prm = c->param;
  int64_t G = prm->num_group, K = 1, O = 1;
  const lmx_shape ks = prm->kernel;
  for (int i = 0; i < ks.ndim; i++) K *= ks.dim[i];
  for (int i = 2; i < pat->ndim; i++) O *= pat->dim[i];
  int64_t C = img->dim[1], F = pat->dim[1], N = img->dim[0];
  int64_t nb = chunk_of(N, O), chunks = N > 0 ? (N + nb - 1) / nb : 1;
  int64_t per = per_thread_elems(C, K, F, (G > 0 ? C / G : C) * K, O, nb);
  int64_t t = omp_get_max_threads();
  if (t > chunks) t = chunks > 0 ? chunks : 1;
  return (size_t)per * sizeof(double) * (size_t)t;
}

static int is_depthwise(const lmx_conv_param *prm, int64_t C);

/* The larger of the GEMM path's and the Winograd path's workspaces (the latter whenever
 * the geometry allows it, whatever the mode: the mode may change after binding). */
static size_t conv_ws_f32(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  if (in[0].ndim >= 3 && is_depthwise(c->param, in[0].dim[1])) return 0; /* direct kernels */
  size_t ws = conv_ws(c, &in[0], &out[0]), wino = 0;
  lmx_conv_dims d;
  if (in[0].ndim == 4 && out[0].ndim == 4 &&
      lmx_conv_dims_of(c, 0, &in[0], &out[0], LMX_FLOAT32, &d) == LMX_OK)
    wino = lmx_conv_wino_ws(&d);
  return wino > ws ? wino : ws;
}

/* float16/bfloat16 calls add float32 twins of their tensors (lowp_stage.c) */
size_t lmx_cpu_ws_Convolution(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  return lmx_cpu_lowp_ws(c, in, out, conv_ws_f32);
}

static size_t deconv_ws_f32(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  return conv_ws(c, &out[0], &in[0]);
}

size_t lmx_cpu_ws_Deconvolution(const lmx_op_ctx *c, const lmx_shape *in,
                                const lmx_shape *out) {
  return lmx_cpu_lowp_ws(c, in, out, deconv_ws_f32);
}

static char *elem(const void *base, int dt, int64_t i) {
  return (char *)base + (size_t)i * (size_t)lmx_dtype_size(dt);
}

/* This thread's buffers: col [C·K, nb·O], pat [F, nb·O], wpart [F, CK]. */
typedef struct {
  char *col, *pat, *wpart;
  int64_t ld; /* nb·O: row stride of col and pat */
} conv_bufs;

static conv_bufs thread_bufs(const conv_plan *p, void *ws) {
  conv_bufs b;
  int64_t K = p->g.kernel[0] * p->g.kernel[1] * p->g.kernel[2];
  b.ld = p->nb * p->O;
  b.col = (char *)ws + (size_t)omp_get_thread_num() * p->per_thread;
  b.pat = elem(b.col, p->dt, p->C * K * b.ld);
  b.wpart = elem(b.pat, p->dt, p->F * b.ld);
  return b;
}

/* Images [n0, n0 + cnt) of x (N, ch, vol) to / from the chunk matrix m [ch, ld] (image i
 * at columns i·vol). */
static void chunk_move(const conv_plan *p, int64_t n0, int64_t cnt, int64_t ch, int64_t vol,
                       void *x, void *m, int64_t ld, int to_chunk, int acc) {
  for (int64_t i = 0; i < cnt; i++)
    for (int64_t k = 0; k < ch; k++) {
      char *a = elem(x, p->dt, ((n0 + i) * ch + k) * vol), *b = elem(m, p->dt, k * ld + i * vol);
      if (to_chunk) memcpy(b, a, (size_t)vol * (size_t)lmx_dtype_size(p->dt));
      else lmx_cpu_scale(p->dt, vol, a, b, 1.0, acc);
    }
}

static void im2col_chunk(const conv_plan *p, const void *img, int64_t n0, int64_t cnt,
                         const conv_bufs *b) {
  lmx_cpu_im2col(p->dt, &p->g, p->C, cnt, elem(img, p->dt, n0 * p->C * p->I), b->col, b->ld);
}

/* A 1x1 kernel with stride 1 and no padding: im2col of one image is the image itself. */
static int pointwise(const conv_plan *p) {
  for (int i = 0; i < 3; i++)
    if (p->g.kernel[i] != 1 || p->g.stride[i] != 1 || p->g.pad[i] != 0) return 0;
  return p->I == p->O;
}

/* One image (a chunk of one: batch 1, or images of 256+ output columns): the GEMMs write
 * its output rows (ld O) in place, with beta 1 for acc, and the bias is added there; a
 * pointwise convolution reads the image as its col, so nothing is copied at all. */
static void img_to_pat_one(const conv_plan *p, const void *w, const void *img, void *pat,
                           int acc, const void *bias, const lmx_cpu_ep *ep,
                           const conv_bufs *b, int64_t n) {
  int dt = p->dt;
  int64_t Fg = p->F / p->G, ld = p->O;
  const char *col = elem(img, dt, n * p->C * p->I);
  if (!pointwise(p)) im2col_chunk(p, img, n, 1, b), col = b->col, ld = b->ld;
  char *out = elem(pat, dt, n * p->F * p->O);
  for (int64_t g = 0; g < p->G; g++)
    lmx_cpu_gemm_ld(dt, 0, 0, Fg, p->O, p->CK, 1.0, elem(w, dt, g * Fg * p->CK), p->CK,
                    elem(col, dt, g * p->CK * ld), ld, acc ? 1.0 : 0.0,
                    elem(out, dt, g * Fg * p->O), p->O);
  if (ep) lmx_cpu_ep_planes(dt, ep, 1, p->F, p->O, out);
  else if (bias)
    for (int64_t f = 0; f < p->F; f++)
      lmx_cpu_scalar_op(LMX_SC_PLUS, dt, p->O, elem(out, dt, f * p->O), elem(out, dt, f * p->O),
                        lmx_load_f64(bias, dt, f), 0);
}

/* pat (N, F, O) (+)= W_g · im2col(img)_g (+ bias[f] when bias is given), a chunk of images
 * per GEMM; the bias is added while the chunk is moved out, not in a second pass. */
static void img_to_pat_chunk(const conv_plan *p, const void *w, const void *img, void *pat,
                             int acc, const void *bias, const lmx_cpu_ep *ep, void *ws,
                             int64_t ch) {
  int dt = p->dt;
  int64_t Fg = p->F / p->G;
  conv_bufs b = thread_bufs(p, ws);
  int64_t n0 = ch * p->nb, cnt = n0 + p->nb <= p->N ? p->nb : p->N - n0, cols = cnt * p->O;
  if (cnt == 1) {
    img_to_pat_one(p, w, img, pat, acc, bias, ep, &b, n0);
    return;
  }
  im2col_chunk(p, img, n0, cnt, &b);
  for (int64_t g = 0; g < p->G; g++)
    lmx_cpu_gemm_ld(dt, 0, 0, Fg, cols, p->CK, 1.0, elem(w, dt, g * Fg * p->CK), p->CK,
                    elem(b.col, dt, g * p->CK * b.ld), b.ld, 0.0, elem(b.pat, dt, g * Fg * b.ld),
                    b.ld);
  if (ep) { /* each row from the chunk into its place through the epilogue */
    for (int64_t i = 0; i < cnt; i++)
      for (int64_t f = 0; f < p->F; f++)
        lmx_cpu_ep_row(dt, ep, f, p->O, elem(pat, dt, ((n0 + i) * p->F + f) * p->O),
                       elem(b.pat, dt, f * b.ld + i * p->O));
    return;
  }
  if (!bias) {
    chunk_move(p, n0, cnt, p->F, p->O, pat, b.pat, b.ld, 0, acc);
    return;
  }
  for (int64_t i = 0; i < cnt; i++)
    for (int64_t f = 0; f < p->F; f++)
      lmx_cpu_scalar_op(LMX_SC_PLUS, dt, p->O, elem(pat, dt, ((n0 + i) * p->F + f) * p->O),
                        elem(b.pat, dt, f * b.ld + i * p->O), lmx_load_f64(bias, dt, f), acc);
}

/* The chunk loops open a parallel region only with more than one thread: a region made a
 * team of one by an if-clause still counts as a level, and the GEMMs inside then run on
 * one thread (gemm.c), where with no region they use every thread. */
static void img_to_pat(const conv_plan *p, const void *w, const void *img, void *pat, int acc,
                       const void *bias, const lmx_cpu_ep *ep, void *ws) {
  if (p->threads > 1) {
#pragma omp parallel for num_threads(p->threads) schedule(dynamic, 1)
    for (int64_t ch = 0; ch < p->chunks; ch++)
      img_to_pat_chunk(p, w, img, pat, acc, bias, ep, ws, ch);
  } else {
    for (int64_t ch = 0; ch < p->chunks; ch++)
      img_to_pat_chunk(p, w, img, pat, acc, bias, ep, ws, ch);
  }
}

/* One chunk's data gradient: col_g = W_gᵀ · pat_g (b->pat already holds the chunk), then
 * col2im into images [n0, n0 + cnt) of img, which are zeroed first unless acc. */
static void chunk_dgrad(const conv_plan *p, const void *w, const conv_bufs *b, int64_t n0,
                        int64_t cnt, void *img, int acc) {
  int dt = p->dt;
  int64_t Fg = p->F / p->G, cols = cnt * p->O;
  for (int64_t g = 0; g < p->G; g++)
    lmx_cpu_gemm_ld(dt, 1, 0, p->CK, cols, Fg, 1.0, elem(w, dt, g * Fg * p->CK), p->CK,
                    elem(b->pat, dt, g * Fg * b->ld), b->ld, 0.0,
                    elem(b->col, dt, g * p->CK * b->ld), b->ld);
  void *im = elem(img, dt, n0 * p->C * p->I);
  if (!acc) memset(im, 0, (size_t)(cnt * p->C * p->I) * (size_t)lmx_dtype_size(dt));
  lmx_cpu_col2im(dt, &p->g, p->C, cnt, b->col, im, b->ld);
}

/* One chunk's weight gradient: wpart_g += pat_g · col_gᵀ (both chunk matrices filled). */
static void chunk_wgrad(const conv_plan *p, const conv_bufs *b, int64_t cols) {
  int dt = p->dt;
  int64_t Fg = p->F / p->G;
  for (int64_t g = 0; g < p->G; g++)
    lmx_cpu_gemm_ld(dt, 0, 1, Fg, p->CK, cols, 1.0, elem(b->pat, dt, g * Fg * b->ld), b->ld,
                    elem(b->col, dt, g * p->CK * b->ld), b->ld, 1.0,
                    elem(b->wpart, dt, g * Fg * p->CK), p->CK);
}

/* gw (+)= the sum of the per-thread partials. */
static void sum_partials(const conv_plan *p, void *ws, void *gw, int acc) {
  int64_t K = p->g.kernel[0] * p->g.kernel[1] * p->g.kernel[2];
  for (int t = 0; t < p->threads; t++) {
    char *part = elem((char *)ws + (size_t)t * p->per_thread, p->dt,
                      p->C * K * p->nb * p->O + p->F * p->nb * p->O);
    lmx_cpu_scale(p->dt, p->F * p->CK, gw, part, 1.0, acc || t > 0);
  }
}

static void pat_to_img_chunk(const conv_plan *p, const void *w, const void *pat, void *img,
                             int acc, void *ws, int64_t ch) {
  conv_bufs b = thread_bufs(p, ws);
  int64_t n0 = ch * p->nb, cnt = n0 + p->nb <= p->N ? p->nb : p->N - n0;
  chunk_move(p, n0, cnt, p->F, p->O, (void *)pat, b.pat, b.ld, 1, 0);
  chunk_dgrad(p, w, &b, n0, cnt, img, acc);
}

/* img (N, C, I) (+)= col2im(W_gᵀ · pat_g), a chunk of images per GEMM. */
static void pat_to_img(const conv_plan *p, const void *w, const void *pat, void *img, int acc,
                       void *ws) {
  if (p->threads > 1) {
#pragma omp parallel for num_threads(p->threads) schedule(dynamic, 1)
    for (int64_t ch = 0; ch < p->chunks; ch++) pat_to_img_chunk(p, w, pat, img, acc, ws, ch);
  } else {
    for (int64_t ch = 0; ch < p->chunks; ch++) pat_to_img_chunk(p, w, pat, img, acc, ws, ch);
  }
}

static void weight_grad_chunk(const conv_plan *p, const void *w, const void *img,
                              const void *pat, void *gimg, int acc_img, const conv_bufs *b,
                              int64_t ch) {
  int64_t n0 = ch * p->nb, cnt = n0 + p->nb <= p->N ? p->nb : p->N - n0;
  im2col_chunk(p, img, n0, cnt, b);
  chunk_move(p, n0, cnt, p->F, p->O, (void *)pat, b->pat, b->ld, 1, 0);
  chunk_wgrad(p, b, cnt * p->O);
  if (gimg) chunk_dgrad(p, w, b, n0, cnt, gimg, acc_img);
}

/* gw (F, CK) (+)= Σ pat_g · im2col(img)_gᵀ over the batch and, when gimg is given (the
 * convolution's training case), gimg (+)= col2im(W_gᵀ · pat_g) in the same chunk loop:
 * pat is moved into its chunk matrix once for both GEMMs, and the data-gradient GEMM
 * overwrites col right after the weight GEMM has read it, while it is still in cache.
 * Weight sums go to private per-thread partials (no races), added up at the end. */
static void weight_grad(const conv_plan *p, const void *w, const void *img, const void *pat,
                        void *gw, int acc, void *gimg, int acc_img, void *ws) {
  size_t wbytes = (size_t)(p->F * p->CK) * (size_t)lmx_dtype_size(p->dt);
  if (p->threads > 1) {
#pragma omp parallel num_threads(p->threads)
    {
      conv_bufs b = thread_bufs(p, ws);
      memset(b.wpart, 0, wbytes);
#pragma omp for schedule(static) /* fixed chunk -> partial mapping: deterministic sums */
      for (int64_t ch = 0; ch < p->chunks; ch++)
        weight_grad_chunk(p, w, img, pat, gimg, acc_img, &b, ch);
    }
  } else {
    conv_bufs b = thread_bufs(p, ws);
    memset(b.wpart, 0, wbytes);
    for (int64_t ch = 0; ch < p->chunks; ch++)
      weight_grad_chunk(p, w, img, pat, gimg, acc_img, &b, ch);
  }
  sum_partials(p, ws, gw, acc);
}

/* y[N, ch, vol] += b[ch] (Deconvolution's forward bias) */
static void add_channel_bias(int dt, int64_t N, int64_t ch, int64_t vol, void *y, const void *b) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < ch; k++) {
      double v = lmx_load_f64(b, dt, k);
      lmx_cpu_scalar_op(LMX_SC_PLUS, dt, vol, elem(y, dt, (n * ch + k) * vol),
                        elem(y, dt, (n * ch + k) * vol), v, 0);
    }
}

/* gb[ch] (+)= Σ over n and vol of g[N, ch, vol] */
static void channel_sum(int dt, int64_t N, int64_t ch, int64_t vol, void *gb, const void *g,
                        int acc) {
  for (int64_t k = 0; k < ch; k++) {
    double s = acc ? lmx_load_f64(gb, dt, k) : 0.0;
    for (int64_t n = 0; n < N; n++) s += lmx_cpu_sum(dt, vol, elem(g, dt, (n * ch + k) * vol));
    lmx_store_f64(gb, dt, k, s);
  }
}

/* Depthwise convolution (num_group == channels > 1, a small kernel) runs the direct
 * kernels of kernels/cpu/dwconv.c: the per-group GEMMs would be 1 x K by K x O products.
 * No workspace. *dw = 1 when it applies (then it has run, or failed). */
static int is_depthwise(const lmx_conv_param *prm, int64_t C) {
  int64_t K = 1;
  for (int i = 0; i < prm->kernel.ndim; i++) K *= prm->kernel.dim[i];
  return prm->num_group > 1 && prm->num_group == C && K <= LMX_CPU_DW_MAXK;
}

static int dw_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, const lmx_cpu_ep *ep, int *dw) {
  *dw = 0;
  if (in[0].shape.ndim < 3 || !is_depthwise(c->param, in[0].shape.dim[1])) return LMX_OK;
  *dw = 1;
  lmx_conv_dims d;
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_conv_plan(c, 0, in, &out[0].shape, &d));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &out[0].shape, d.dt, "output"));
  lmx_cpu_dwconv_fwd(d.dt, &d.g, d.N, d.C, d.F / d.C, in[0].data, in[1].data,
                     d.bias && !ep ? in[2].data : NULL, out[0].data, req[0] == LMX_REQ_ADD, ep);
  return LMX_OK;
}

static int dw_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *ig, const int *req, int *dw) {
  *dw = 0;
  if (in[0].shape.ndim < 3 || !is_depthwise(c->param, in[0].shape.dim[1])) return LMX_OK;
  *dw = 1;
  lmx_conv_dims d;
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_conv_plan(c, 0, in, &og[0].shape, &d));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, d.dt, "output gradient"));
  for (int i = 0; i < (d.bias ? 3 : 2); i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, d.dt, "input gradient"));
  int64_t m = d.F / d.C;
  if (req[0])
    lmx_cpu_dwconv_bwd_data(d.dt, &d.g, d.N, d.C, m, in[1].data, og[0].data, ig[0].data,
                            req[0] == LMX_REQ_ADD);
  void *gw = req[1] ? ig[1].data : NULL, *gb = d.bias && req[2] ? ig[2].data : NULL;
  if (gw || gb)
    lmx_cpu_dwconv_bwd_wb(d.dt, &d.g, d.N, d.C, m, in[0].data, og[0].data, gw, gb,
                          req[1] == LMX_REQ_ADD, d.bias && req[2] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ep (Convolution only, req write): the per-channel epilogue of a fused chain, which
 * holds the bias (chan_ep.c, conv_chain.c). */
static int conv_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, int deconv, const lmx_cpu_ep *ep) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int dw = 0;
  if (!deconv) LMX_TRY(dw_fwd(c, in, out, req, ep, &dw));
  if (dw) return LMX_OK;
  conv_plan p;
  LMX_TRY(conv_plan_of(c, deconv, in, &out[0].shape, &p));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &out[0].shape, p.dt, "output"));
  int acc = req[0] == LMX_REQ_ADD; /* the GEMMs accumulate; the bias is added either way */
  const void *bias = p.bias && !ep ? in[2].data : NULL;
  if (!deconv && lmx_conv_wino_fwd(&p.d, in[0].data, in[1].data, bias, out[0].data, acc, ep,
                                   c->workspace, c->workspace_bytes))
    return LMX_OK;
  if (!deconv) {
    img_to_pat(&p, in[1].data, in[0].data, out[0].data, acc, bias, ep, c->workspace);
    return LMX_OK;
  }
  pat_to_img(&p, in[1].data, in[0].data, out[0].data, acc, c->workspace);
  if (p.bias)
    add_channel_bias(p.dt, p.N, p.C, p.I, out[0].data, in[2].data);
  return LMX_OK;
}

static int conv_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *ig, const int *req, int deconv) {
  int dw = 0;
  if (!deconv) LMX_TRY(dw_bwd(c, og, in, ig, req, &dw));
  if (dw) return LMX_OK;
  conv_plan p;
  LMX_TRY(conv_plan_of(c, deconv, in, &og[0].shape, &p));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, p.dt, "output gradient"));
  for (int i = 0; i < (p.bias ? 3 : 2); i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, p.dt, "input gradient"));
  const void *img = deconv ? og[0].data : in[0].data, *pat = deconv ? in[0].data : og[0].data;
  int rest[3] = {0, 0, p.bias ? req[2] : 0};
  if (!deconv && (req[0] || req[1]) &&
      lmx_conv_wino_bwd(&p.d, in[0].data, in[1].data, og[0].data, req[0] ? ig[0].data : NULL,
                        req[0] == LMX_REQ_ADD, req[1] ? ig[1].data : NULL,
                        req[1] == LMX_REQ_ADD, c->workspace, c->workspace_bytes))
    req = rest; /* only the bias gradient is left */
  int fuse = !deconv && req[0] && req[1]; /* both gradients in one chunk loop */
  if (req[1]) weight_grad(&p, in[1].data, img, pat, ig[1].data, req[1] == LMX_REQ_ADD,
                          fuse ? ig[0].data : NULL, req[0] == LMX_REQ_ADD, c->workspace);
  if (req[0] && !fuse) {
    if (!deconv) pat_to_img(&p, in[1].data, og[0].data, ig[0].data, req[0] == LMX_REQ_ADD,
                            c->workspace);
    else img_to_pat(&p, in[1].data, og[0].data, ig[0].data, req[0] == LMX_REQ_ADD, NULL,
                    NULL, c->workspace);
  }
  if (p.bias && req[2])
    channel_sum(p.dt, p.N, deconv ? p.C : p.F, deconv ? p.I : p.O, ig[2].data, og[0].data,
                req[2] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_fwd_Convolution(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  if (lmx_cpu_is_lowp(in[0].dtype) && req[0] != LMX_REQ_NULL)
    return lmx_cpu_lowp_fwd(c, lmx_cpu_fwd_Convolution, conv_ws_f32, in, out, req, aux);
  return conv_fwd(c, in, out, req, 0, NULL);
}

int lmx_cpu_conv_fwd_ep(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const lmx_cpu_ep *ep) {
  static const int write[1] = {LMX_REQ_WRITE};
  return conv_fwd(c, in, out, write, 0, ep);
}

int lmx_cpu_bwd_Convolution(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  if (lmx_cpu_is_lowp(in[0].dtype))
    return lmx_cpu_lowp_bwd(c, lmx_cpu_bwd_Convolution, conv_ws_f32, og, in, out, ig, req, aux);
  return conv_bwd(c, og, in, ig, req, 0);
}

int lmx_cpu_fwd_Deconvolution(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  if (lmx_cpu_is_lowp(in[0].dtype) && req[0] != LMX_REQ_NULL)
    return lmx_cpu_lowp_fwd(c, lmx_cpu_fwd_Deconvolution, deconv_ws_f32, in, out, req, aux);
  return conv_fwd(c, in, out, req, 1, NULL);
}

int lmx_cpu_bwd_Deconvolution(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  if (lmx_cpu_is_lowp(in[0].dtype))
    return lmx_cpu_lowp_bwd(c, lmx_cpu_bwd_Deconvolution, deconv_ws_f32, og, in, out, ig, req,
                            aux);
  return conv_bwd(c, og, in, ig, req, 1);
}

/* ---- Pooling ------------------------------------------------------------------------ */

/* Pooling geometry (valid / full / same, global_pool) is shared with the CUDA glue:
 * lmx_pool_plan (nn_plan.c). */
static int pool_plan(const lmx_op_ctx *c, const lmx_shape *x, const lmx_shape *y,
                     lmx_cpu_geom *g, int *type, int *include_pad, int *pv) {
  return lmx_pool_plan(c, x, y, g, type, include_pad, pv);
}

size_t lmx_cpu_ws_Pooling(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  return lmx_cpu_lowp_ws(c, in, out, NULL); /* float16/bfloat16: float32 twins */
}

int lmx_cpu_fwd_Pooling(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (lmx_cpu_is_lowp(in[0].dtype))
    return lmx_cpu_lowp_fwd(c, lmx_cpu_fwd_Pooling, NULL, in, out, req, aux);
  lmx_cpu_geom g;
  int type, incl, pv;
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'"));
  LMX_TRY(pool_plan(c, &in[0].shape, &out[0].shape, &g, &type, &incl, &pv));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &out[0].shape, in[0].dtype, "output"));
  lmx_cpu_pool(type, pv, in[0].dtype, &g, incl, in[0].shape.dim[0] * in[0].shape.dim[1],
               in[0].data, out[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_Pooling(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (lmx_cpu_is_lowp(in[0].dtype))
    return lmx_cpu_lowp_bwd(c, lmx_cpu_bwd_Pooling, NULL, og, in, out, ig, req, aux);
  lmx_cpu_geom g;
  int type, incl, pv;
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'"));
  LMX_TRY(pool_plan(c, &in[0].shape, &og[0].shape, &g, &type, &incl, &pv));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, in[0].dtype, "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, in[0].dtype, "output gradient"));
  if (type == LMX_POOL_LP)
    LMX_TRY(lmx_glue_check_like(c, &out[0], &og[0].shape, in[0].dtype, "output"));
  /* req WRITE: the kernels write every element of the gradient (no memset here) */
  lmx_cpu_pool_bwd(type, pv, in[0].dtype, &g, incl, in[0].shape.dim[0] * in[0].shape.dim[1],
                   ig[0].data, og[0].data, in[0].data, type == LMX_POOL_LP ? out[0].data : NULL,
                   req[0] == LMX_REQ_ADD);
  return LMX_OK;
}
