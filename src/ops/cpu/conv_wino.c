/* conv_wino.c — CPU glue of the Winograd path of Convolution: float32 3x3 kernels with
 * stride 1, no dilation, one group, 2-D (kernels/cpu/winograd.c has the transforms and why
 * they pay: F(2x2, 3x3) does 2.25x, F(4x4, 3x3) 4x fewer multiply-adds than im2col + GEMM).
 *
 * As the GEMM path (conv.c), the batch runs in chunks of nb images, one thread per chunk
 * with its own buffers (V [P][C][nb·tiles], M [P][F][nb·tiles], a weight-gradient
 * partial dU [P][F][C] and a row scratch; P = 16 or 36 positions), the P products of a
 * chunk single-threaded inside the region; a single chunk runs serially with the products
 * on every thread. The filters are transformed once per call into U [P][F][C], shared by
 * the threads. Training backward does both gradients in one chunk loop: x goes to V and dy
 * to dM, the weight products dU += dM Vᵀ read them, then the data products overwrite V
 * with Uᵀ dM, which goes back to the image. Weight partials are summed in thread order
 * (static schedule): the result does not depend on timing.
 *
 * Which convolutions take it: the mode (conv_algo.h: 'auto', 'gemm', 'winograd',
 * 'winograd2', 'winograd4'; from LUAMX_CONV, or mx.runtime.conv_algo). In auto, channels
 * on both sides >= 16 and chunks of lmx_conv_wino_min_tiles() tiles of 2x2 outputs or more
 * (below, see there); 'winograd' and the forced tiles take every convolution they can run. The
 * tile, unless forced: 4x4 when a chunk has LMX_WINO4_MIN_TILES of them, else 2x2.
 */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../../kernels/cpu/cpu_par.h"
#include "../../../kernels/cpu/gemm_route.h"
#include "../../tensor/dtype.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "conv_wino.h"
#include "cpu_ops.h"

/* Auto: the fewest tiles of 2x2 outputs per chunk (one product's columns). Below it the
 * products are too thin and the filter transform too large a share. bench/conv_algo.lua
 * (2 threads; forward / backward against im2col + GEMM, the better tile). AMD EPYC Zen 3
 * (AVX2): 8x8 planes at batch 8 (64 tiles a chunk) 1.1x / 1.35x, 16x16 at batch 1 (64, one
 * chunk) 0.9x / 0.9x, 32x32 at batch 1 (256) 2.0x / 1.1x and every ResNet-18 CIFAR stage at
 * batch 64 1.5-2.3x: 128. Intel Xeon family 6 model 207 (AVX-512), at the shapes with
 * 64-127 tiles a chunk: 16x16 at batch 1 (F(2x2)) 1.07-1.16x / 1.34-1.35x, 8x8 at batch 8
 * 1.23x / 1.19x, 4x4 at batch 32 1.40x / 1.30x: 64 with AVX-512 (the whole ResNet-18 at
 * batch 1 moved by a few % at most: ahead in 11 of 14 alternated pairs, level in 6 more). */
int64_t lmx_conv_wino_min_tiles(int avx512) {
  if (avx512 < 0) avx512 = lmx_gemm_cpu_avx512();
  return avx512 ? 64 : 128;
}
/* Auto and 'winograd': F(4x4, 3x3) when a chunk has this many tiles of 4x4 outputs or more,
 * else F(2x2, 3x3). bench/conv_algo.lua (same machine; speed-up over GEMM of F(2x2) / F(4x4),
 * forward and backward): batch 64, 2 threads (32 images a chunk): 32x32 planes 1.40 / 1.42
 * and 1.32 / 1.43, 16x16 1.39 / 1.71 and 1.57 / 2.11, 8x8 1.69 / 2.12 and 1.85 / 2.28,
 * 4x4 (32 tiles a chunk) 1.47 / 1.48 and 1.35 / 1.62; batch 8: 16x16 (64 tiles) 1.12 /
 * 1.41 and 1.30 / 1.68, 8x8 (16 tiles) 1.10 / 0.92 and 1.35 / 0.83; batch 1: 32x32 (64)
 * 1.55 / 1.96 and 0.97 / 1.07. */
enum { LMX_WINO4_MIN_TILES = 32 };

/* ---- the mode ------------------------------------------------------------------------- */

static const char *const g_names[] = {"auto", "gemm", "winograd", "winograd2", "winograd4"};
enum { N_ALGOS = sizeof g_names / sizeof *g_names };
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_algo;
static const char *g_source = "default (LUAMX_CONV unset)";

static int algo_parse(const char *s) {
  for (int i = 0; s && i < N_ALGOS; i++)
    if (!strcmp(s, g_names[i])) return i;
  return -1;
}

static void algo_init(void) {
  const char *e = getenv("LUAMX_CONV");
  if (!e || !*e) return;
  int a = algo_parse(e);
  if (a < 0) {
    g_source = "LUAMX_CONV not understood (expected auto, gemm, winograd, winograd2 or winograd4): auto";
    return;
  }
  __atomic_store_n(&g_algo, a, __ATOMIC_RELAXED);
  g_source = "LUAMX_CONV";
}

static int algo_now(void) {
  pthread_once(&g_once, algo_init);
  return __atomic_load_n(&g_algo, __ATOMIC_RELAXED);
}

int lmx_conv_algo_parse(const char *name) { return algo_parse(name); }

void lmx_conv_algo_set(int algo) {
  pthread_once(&g_once, algo_init);
  __atomic_store_n(&g_algo, algo, __ATOMIC_RELAXED);
  __atomic_store_n(&g_source, "set by mx.runtime.conv_algo", __ATOMIC_RELAXED);
}

const char *lmx_conv_algo_name(void) { return g_names[algo_now()]; }

const char *lmx_conv_algo_source(void) {
  pthread_once(&g_once, algo_init);
  return __atomic_load_n(&g_source, __ATOMIC_RELAXED);
}

/* ---- the plan ------------------------------------------------------------------------- */

typedef struct {
  lmx_cpu_wino q;
  int m, P;                  /* tile of m x m outputs (2 or 4), P = (m + 2)^2 products */
  int64_t N, C, F, tiles, nb, chunks, ld, buf;
  size_t per_thread, shared; /* floats */
  int threads;               /* chunk threads (1: chunks in turn, transforms split) */
  int team;                  /* omp_get_max_threads() */
} wino_plan;

/* The plan of tile m (2 or 4) for images N x C -> N x F of geometry g; 0 when the
 * geometry is not Winograd's. Chunks of about 512 tiles, no more than the threads share. */
static int plan_tile(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t F, int m,
                     wino_plan *p) {
  p->m = m, p->P = (m + 2) * (m + 2);
  if (!lmx_cpu_wino_geom(g, m, &p->q)) return 0;
  p->N = N, p->C = C, p->F = F, p->tiles = p->q.th * p->q.tw;
  int t = omp_get_max_threads();
  int64_t nb = (512 + p->tiles - 1) / p->tiles, even = (N + t - 1) / t;
  if (nb > even) nb = even;
  if (nb < 1) nb = 1;
  p->nb = nb, p->chunks = (N + nb - 1) / nb, p->ld = nb * p->tiles;
  p->buf = lmx_cpu_wino_buf_floats(&p->q);
  p->per_thread = (size_t)(p->P * (C + F) * p->ld + p->P * F * C);
  p->shared = (size_t)(p->P * F * C + t * p->buf);
  p->threads = t < p->chunks ? t : (int)p->chunks;
  p->team = t;
  return 1;
}

/* The plan under mode algo for images N x C -> N x F of geometry g (normalized); 0 when
 * the Winograd path cannot run it or (auto) should not. Auto's test counts tiles of 2x2
 * outputs whichever tile then runs. */
static int plan_of(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t F, int64_t G,
                   int dt, int algo, wino_plan *p) {
  if (algo == LMX_CONV_GEMM || dt != LMX_FLOAT32 || G != 1 || N <= 0) return 0;
  if (!plan_tile(g, N, C, F, 2, p)) return 0;
  if (algo == LMX_CONV_AUTO && (C < 16 || F < 16 || p->ld < lmx_conv_wino_min_tiles(-1)))
    return 0;
  if (algo == LMX_CONV_WINO2) return 1;
  wino_plan p4;
  if (!plan_tile(g, N, C, F, 4, &p4)) return 0;
  if (algo == LMX_CONV_WINO4 || p4.ld >= LMX_WINO4_MIN_TILES) *p = p4;
  return 1;
}

static size_t plan_bytes(const wino_plan *p) {
  return (p->shared + p->per_thread * (size_t)p->threads) * sizeof(float);
}

/* Sized for either tile: the mode may change between planning and running. */
size_t lmx_conv_wino_ws(const lmx_conv_dims *d) {
  wino_plan p2, p4;
  if (d->deconv || !plan_of(&d->g, d->N, d->C, d->F, d->G, d->dt, LMX_CONV_WINO2, &p2))
    return 0;
  size_t b2 = plan_bytes(&p2);
  if (!plan_of(&d->g, d->N, d->C, d->F, d->G, d->dt, LMX_CONV_WINO4, &p4)) return b2;
  size_t b4 = plan_bytes(&p4);
  return b4 > b2 ? b4 : b2;
}

/* Chunk threads the workspace holds (0: not even one). */
static int fit_threads(wino_plan *p, size_t have) {
  size_t need = p->shared * sizeof(float), per = p->per_thread * sizeof(float);
  if (have < need + per) return 0;
  int64_t t = (int64_t)((have - need) / per);
  if (t < p->threads) p->threads = (int)t;
  return 1;
}

typedef struct {
  float *V, *M, *dU, *buf; /* buf: this thread's row scratch (bufs of the team follow) */
} wino_bufs;

/* U [16 F C], the team's scratch rows, then each chunk thread's V, M and dU. */
static wino_bufs bufs_of(const wino_plan *p, float *ws, int t) {
  wino_bufs b;
  b.buf = ws + p->P * p->F * p->C + (size_t)t * p->buf;
  b.V = ws + p->shared + (size_t)t * p->per_thread;
  b.M = b.V + p->P * p->C * p->ld;
  b.dU = b.M + p->P * p->F * p->ld;
  return b;
}

static int64_t chunk_count(const wino_plan *p, int64_t ch) {
  int64_t n0 = ch * p->nb;
  return n0 + p->nb <= p->N ? p->nb : p->N - n0;
}

/* ---- transforms, split over channels when the chunks run one at a time ---------------- */

enum { XF_IN, XF_IN_ADJ, XF_OUT, XF_OUT_ADJ };
typedef struct {
  const wino_plan *p;
  int kind, acc;
  int64_t cnt;            /* images */
  const float *src, *bias;
  float *dst;
} xform;

static void xform_range(const xform *x, int64_t c0, int64_t c1, float *buf) {
  const wino_plan *p = x->p;
  switch (x->kind) {
  case XF_IN: lmx_cpu_wino_in(&p->q, p->C, c0, c1, x->cnt, x->src, x->dst, p->ld, buf); break;
  case XF_IN_ADJ:
    lmx_cpu_wino_in_adj(&p->q, p->C, c0, c1, x->cnt, x->src, p->ld, x->dst, x->acc, buf);
    break;
  case XF_OUT:
    lmx_cpu_wino_out(&p->q, p->F, c0, c1, x->cnt, x->src, p->ld, x->bias, x->dst, x->acc, buf);
    break;
  default: lmx_cpu_wino_out_adj(&p->q, p->F, c0, c1, x->cnt, x->src, x->dst, p->ld, buf);
  }
}

/* Runs x over all its channels: in this thread (inside a chunk loop of several threads),
 * or split over the team when the chunks run one at a time and the transform is big
 * enough to pay for a fork: LMX_OMP_MIN_STREAM values written or read (a transform is a
 * few adds per value, like a copy; at batch 1 ResNet-18's 64x32x32 layer has 147k, which
 * ran on one core under the general LMX_OMP_MIN). */
static void xform_run(const xform *x, const wino_bufs *b, float *ws) {
  const wino_plan *p = x->p;
  int64_t ch = x->kind == XF_IN || x->kind == XF_IN_ADJ ? p->C : p->F;
  int team = p->threads == 1 ? p->team : 1;
  if (team > ch) team = (int)ch;
  if (team <= 1 || p->P * ch * x->cnt * p->tiles < LMX_OMP_MIN_STREAM) {
    xform_range(x, 0, ch, b->buf);
    return;
  }
#pragma omp parallel num_threads(team)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    xform_range(x, ch * t / n, ch * (t + 1) / n, bufs_of(p, ws, t).buf);
  }
}

/* ---- forward -------------------------------------------------------------------------- */

static void fwd_chunk(const wino_plan *p, const float *x, const float *bias, float *y, int acc,
                      const lmx_cpu_ep *ep, const wino_bufs *b, float *ws, int64_t ch) {
  int64_t n0 = ch * p->nb, cnt = chunk_count(p, ch), cols = cnt * p->tiles;
  const lmx_cpu_wino *q = &p->q;
  xform in = {p, XF_IN, 0, cnt, x + n0 * p->C * q->H * q->W, NULL, b->V};
  xform_run(&in, b, ws);
  lmx_cpu_gemm_sbatch(LMX_FLOAT32, p->P, 0, 0, p->F, cols, p->C, 1.0, ws, p->C, p->F * p->C, b->V,
                      p->ld, p->C * p->ld, 0.0, b->M, p->ld, p->F * p->ld);
  int64_t O = q->OH * q->OW;
  xform out = {p, XF_OUT, acc, cnt, b->M, bias, y + n0 * p->F * O};
  xform_run(&out, b, ws);
  if (!ep) return; /* a fused chain's epilogue while the chunk's planes are in cache */
  if (p->threads > 1)
    for (int64_t r = 0; r < cnt * p->F; r++)
      lmx_cpu_ep_row(LMX_FLOAT32, ep, r % p->F, O, out.dst + r * O, out.dst + r * O);
  else
    lmx_cpu_ep_planes(LMX_FLOAT32, ep, cnt, p->F, O, out.dst);
}

int lmx_conv_wino_fwd(const lmx_conv_dims *d, const void *x, const void *w, const void *bias,
                      void *y, int acc, const lmx_cpu_ep *ep, void *ws, size_t ws_bytes) {
  wino_plan p;
  if (d->deconv || !plan_of(&d->g, d->N, d->C, d->F, d->G, d->dt, algo_now(), &p)) return 0;
  if (!ws || !fit_threads(&p, ws_bytes)) return 0;
  lmx_cpu_wino_wt(&p.q, p.F * p.C, w, ws);
  if (p.threads > 1) {
#pragma omp parallel num_threads(p.threads)
    {
      wino_bufs b = bufs_of(&p, ws, omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
      for (int64_t ch = 0; ch < p.chunks; ch++) fwd_chunk(&p, x, bias, y, acc, ep, &b, ws, ch);
    }
  } else {
    wino_bufs b = bufs_of(&p, ws, 0);
    for (int64_t ch = 0; ch < p.chunks; ch++) fwd_chunk(&p, x, bias, y, acc, ep, &b, ws, ch);
  }
  return 1;
}

/* ---- backward ------------------------------------------------------------------------- */

/* want_w: 0 no weight gradient, 1 the chunk's products overwrite dU (this thread's first
 * chunk), 2 they add to it. */
static void bwd_chunk(const wino_plan *p, const float *x, const float *dy, float *gx, int accx,
                      int want_w, const wino_bufs *b, float *ws, int64_t ch) {
  int64_t n0 = ch * p->nb, cnt = chunk_count(p, ch), cols = cnt * p->tiles;
  const lmx_cpu_wino *q = &p->q;
  int64_t xs = p->C * p->ld, ms = p->F * p->ld, FC = p->F * p->C;
  xform oa = {p, XF_OUT_ADJ, 0, cnt, dy + n0 * p->F * q->OH * q->OW, NULL, b->M};
  xform_run(&oa, b, ws);
  if (want_w) {
    xform in = {p, XF_IN, 0, cnt, x + n0 * p->C * q->H * q->W, NULL, b->V};
    xform_run(&in, b, ws);
    lmx_cpu_gemm_sbatch(LMX_FLOAT32, p->P, 0, 1, p->F, p->C, cols, 1.0, b->M, p->ld, ms, b->V,
                        p->ld, xs, want_w == 2 ? 1.0 : 0.0, b->dU, p->C, FC);
  }
  if (gx) {
    lmx_cpu_gemm_sbatch(LMX_FLOAT32, p->P, 1, 0, p->C, cols, p->F, 1.0, ws, p->C, FC, b->M, p->ld,
                        ms, 0.0, b->V, p->ld, xs);
    xform ia = {p, XF_IN_ADJ, accx, cnt, b->V, NULL, gx + n0 * p->C * q->H * q->W};
    xform_run(&ia, b, ws);
  }
}

int lmx_conv_wino_bwd(const lmx_conv_dims *d, const void *x, const void *w, const void *dy,
                      void *gx, int accx, void *gw, int accw, void *ws, size_t ws_bytes) {
  wino_plan p;
  if (d->deconv || !plan_of(&d->g, d->N, d->C, d->F, d->G, d->dt, algo_now(), &p)) return 0;
  if (!ws || !fit_threads(&p, ws_bytes)) return 0;
  if (gx) lmx_cpu_wino_wt(&p.q, p.F * p.C, w, ws);
  int want_w = gw != NULL;
  /* each thread's first chunk writes its partial, later ones add (no memset of dU, 16 MB
   * a thread for 512 x 512 channels); schedule(static, 1) deals chunk t to thread t first,
   * so with threads <= chunks every thread writes its partial */
  if (p.threads > 1) {
#pragma omp parallel num_threads(p.threads)
    {
      wino_bufs b = bufs_of(&p, ws, omp_get_thread_num());
      int mode = want_w;
#pragma omp for schedule(static, 1) /* fixed chunk -> partial mapping: deterministic sums */
      for (int64_t ch = 0; ch < p.chunks; ch++) {
        bwd_chunk(&p, x, dy, gx, accx, mode, &b, ws, ch);
        mode = want_w ? 2 : 0;
      }
    }
  } else {
    wino_bufs b = bufs_of(&p, ws, 0);
    for (int64_t ch = 0; ch < p.chunks; ch++)
      bwd_chunk(&p, x, dy, gx, accx, want_w && ch > 0 ? 2 : want_w, &b, ws, ch);
  }
  if (want_w) {
    float *sum = bufs_of(&p, ws, 0).dU;
    for (int t = 1; t < p.threads; t++) {
      const float *part = bufs_of(&p, ws, t).dU;
      for (int64_t i = 0; i < p.P * p.F * p.C; i++) sum[i] += part[i];
    }
    lmx_cpu_wino_wt_adj(&p.q, p.F * p.C, sum, gw, accw);
  }
  return 1;
}
