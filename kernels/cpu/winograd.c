/* winograd.c — Winograd's minimal filtering (Lavin & Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2016) for 3x3 convolutions with stride 1 and no dilation
 * on channel-first float32 images: F(2x2, 3x3) and F(4x4, 3x3).
 *
 * An output tile of m x m pixels is Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A for the (m + 2)² input
 * tile d at the same place and the 3x3 filter g; summed over the input channels, the
 * product ⊙ becomes one matrix product per tile position ξ (P = (m + 2)² of them):
 * M[ξ] (F x T) = U[ξ] (F x C) · V[ξ] (C x T), with U the transformed filters and V the
 * transformed input tiles (T tiles). Multiply-adds per output: 16 / 4 for F(2x2) and 36 /
 * 16 for F(4x4), against 9 for im2col + GEMM (2.25x and 4x fewer). The glue
 * (src/ops/cpu/conv_wino.c) runs the products; this file moves data in and out of the
 * transformed domain. The gradients are the adjoints of the same linear maps (exactly the
 * gradients of this forward):
 *   data:   dM = A dY Aᵀ (wino_out_adj), dV[ξ] = U[ξ]ᵀ dM[ξ], dX += B dV Bᵀ (wino_in_adj);
 *   weight: dU[ξ] += dM[ξ] V[ξ]ᵀ, dg = Gᵀ dU G (wino_wt_adj).
 * Layouts: U / dU [P][F][C]; V [P][C][ld] and M [P][F][ld] with tile t = n·th·tw +
 * ty·tw + tx of nimg images in columns [0, nimg·th·tw). Tiles past the image read zeros
 * and their outputs past the output edge are dropped (their gradient is zero).
 *
 * The arithmetic (winograd2.c, winograd4.c) runs over a flat run of tiles: the tiles of a
 * group of images of one channel are first dealt into P rows (row i(m + 2) + j holds
 * element (i, j) of every tile), so each transform is one unit-stride loop of about
 * GROUP_TILES iterations however small the plane (a 4x4 plane has 1 or 4 tiles). Dealing
 * and gathering back are stride-m moves through a zero-padded line.
 */
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_par.h"
#include "winograd_xf.h"

/* tiles a transform runs over at once: images of a channel are grouped up to this many */
enum { GROUP_TILES = 256 };

static const lmx_wino_xf *xf_of(const lmx_cpu_wino *q) {
  return q->m == 4 ? &lmx_wino_xf4 : &lmx_wino_xf2;
}

/* ---- stride-m moves between a line and m (or 2) rows ---------------------------------- */

/* a[k] = L[s·k], b[k] = L[s·k + 1] (s = 2 or 4: the two used of four) */
LMX_SIMD_CLONES
static void deal2(const float *restrict L, int s, float *restrict a, float *restrict b,
                  int64_t n) {
  if (s == 2)
    for (int64_t k = 0; k < n; k++) a[k] = L[2 * k], b[k] = L[2 * k + 1];
  else
    for (int64_t k = 0; k < n; k++) a[k] = L[4 * k], b[k] = L[4 * k + 1];
}

LMX_SIMD_CLONES
static void deal4(const float *restrict L, float *restrict a, float *restrict b,
                  float *restrict c, float *restrict d, int64_t n) {
  for (int64_t k = 0; k < n; k++)
    a[k] = L[4 * k], b[k] = L[4 * k + 1], c[k] = L[4 * k + 2], d[k] = L[4 * k + 3];
}

/* L[m·k + j] = row j [k] (add: +=) for j < m, k < n; rows at stride rs */
LMX_SIMD_CLONES
static void join(int m, const float *restrict R, int64_t rs, float *restrict L, int64_t n,
                 int add) {
  const float *a = R, *b = R + rs, *c = R + 2 * rs, *d = R + 3 * rs;
  if (m == 2 && add)
    for (int64_t k = 0; k < n; k++) L[2 * k] += a[k], L[2 * k + 1] += b[k];
  else if (m == 2)
    for (int64_t k = 0; k < n; k++) L[2 * k] = a[k], L[2 * k + 1] = b[k];
  else if (add)
    for (int64_t k = 0; k < n; k++)
      L[4 * k] += a[k], L[4 * k + 1] += b[k], L[4 * k + 2] += c[k], L[4 * k + 3] += d[k];
  else
    for (int64_t k = 0; k < n; k++)
      L[4 * k] = a[k], L[4 * k + 1] = b[k], L[4 * k + 2] = c[k], L[4 * k + 3] = d[k];
}

/* rows (stride rs) <- the m + 2 tile columns of L: row j [tx] = L[m·tx + j] */
static void deal_cols(int m, const float *L, float *R, int64_t rs, int64_t tw) {
  if (m == 2) deal2(L, 2, R, R + rs, tw);
  else deal4(L, R, R + rs, R + 2 * rs, R + 3 * rs, tw);
  deal2(L + m, m, R + m * rs, R + (m + 1) * rs, tw);
}

/* ---- scratch -------------------------------------------------------------------------- */

typedef struct {
  int64_t gimg, gt; /* images a group, tile columns of the rows */
  int64_t lw;       /* a padded line: m(tw + 1) >= m·tw + 2 floats */
  int64_t floats;   /* in all */
  float *D, *Z, *L; /* P rows of gt; a padded plane of m·th + 2 lines; a line */
} wino_scratch;

static wino_scratch scratch_of(const lmx_cpu_wino *q, float *buf) {
  wino_scratch s;
  int64_t tiles = q->th * q->tw, k = q->m + 2;
  s.gimg = tiles >= GROUP_TILES ? 1 : GROUP_TILES / tiles;
  s.gt = s.gimg * tiles, s.lw = q->m * (q->tw + 1);
  int64_t z = k * k * s.gt, l = z + (q->m * q->th + 2) * s.lw;
  s.floats = l + s.lw;
  s.D = buf, s.Z = buf ? buf + z : NULL, s.L = buf ? buf + l : NULL;
  return s;
}

int64_t lmx_cpu_wino_buf_floats(const lmx_cpu_wino *q) { return scratch_of(q, NULL).floats; }

/* ---- planes to rows and back ---------------------------------------------------------- */

/* The tiles of plane x (H x W, zero-padded) into rows D (stride ds). */
static void gather_in(const lmx_cpu_wino *q, const float *x, float *D, int64_t ds,
                      const wino_scratch *s) {
  int m = q->m, k = m + 2;
  int64_t tw = q->tw;
  memset(s->L, 0, (size_t)s->lw * sizeof(float));
  for (int64_t ty = 0; ty < q->th; ty++)
    for (int i = 0; i < k; i++) {
      int64_t y = m * ty + i - q->ph;
      float *d = D + i * k * ds + ty * tw;
      if (y < 0 || y >= q->H) {
        for (int j = 0; j < k; j++) memset(d + j * ds, 0, (size_t)tw * sizeof(float));
        continue;
      }
      memcpy(s->L + q->pw, x + y * q->W, (size_t)q->W * sizeof(float));
      deal_cols(m, s->L, d, ds, tw);
    }
}

/* dx (H x W) (+)= the tiles in rows D (stride ds; they are overwritten), overlaps summed:
 * each tile row's m + 2 lines go into the padded plane Z. */
static void scatter_in(const lmx_cpu_wino *q, float *D, int64_t ds, float *dx, int acc,
                       const wino_scratch *s) {
  int m = q->m, k = m + 2;
  int64_t tw = q->tw, lw = s->lw;
  memset(s->Z, 0, (size_t)((m * q->th + 2) * lw) * sizeof(float));
  for (int64_t ty = 0; ty < q->th; ty++)
    for (int i = 0; i < k; i++) {
      float *d = D + i * k * ds + ty * tw, *z = s->Z + (m * ty + i) * lw;
      const float *dm = d + m * ds, *dm1 = d + (m + 1) * ds;
      /* columns m and m + 1 of tile tx are columns 0 and 1 of tile tx + 1 */
      for (int64_t t = 1; t < tw; t++) d[t] += dm[t - 1], d[ds + t] += dm1[t - 1];
      join(m, d, ds, z, tw, 1);
      z[m * tw] += dm[tw - 1], z[m * tw + 1] += dm1[tw - 1];
    }
  for (int64_t y = 0; y < q->H; y++) {
    const float *z = s->Z + (y + q->ph) * lw + q->pw;
    float *o = dx + y * q->W;
    if (acc)
      for (int64_t c = 0; c < q->W; c++) o[c] += z[c];
    else
      memcpy(o, z, (size_t)q->W * sizeof(float));
  }
}

/* plane y (OH x OW) (+)= the m² output rows E (stride es) + b, cropped */
static void scatter_out(const lmx_cpu_wino *q, const float *E, int64_t es, float b, float *y,
                        int acc, const wino_scratch *s) {
  int m = q->m;
  int64_t tw = q->tw, OW = q->OW;
  for (int64_t ty = 0; ty < q->th; ty++)
    for (int i = 0; i < m && m * ty + i < q->OH; i++) {
      join(m, E + i * m * es + ty * tw, es, s->L, tw, 0);
      float *o = y + (m * ty + i) * OW;
      const float *l = s->L;
      if (acc)
        for (int64_t c = 0; c < OW; c++) o[c] += l[c] + b;
      else
        for (int64_t c = 0; c < OW; c++) o[c] = l[c] + b;
    }
}

/* the m² output rows E (stride es) <- plane dy (OH x OW), zero past its edges */
static void gather_out(const lmx_cpu_wino *q, const float *dy, float *E, int64_t es,
                       const wino_scratch *s) {
  int m = q->m;
  int64_t tw = q->tw, OW = q->OW;
  memset(s->L, 0, (size_t)s->lw * sizeof(float));
  for (int64_t ty = 0; ty < q->th; ty++)
    for (int i = 0; i < m; i++) {
      float *e = E + i * m * es + ty * tw;
      if (m * ty + i >= q->OH) {
        for (int j = 0; j < m; j++) memset(e + j * es, 0, (size_t)tw * sizeof(float));
        continue;
      }
      memcpy(s->L, dy + (m * ty + i) * OW, (size_t)OW * sizeof(float));
      if (m == 2) deal2(s->L, 2, e, e + es, tw);
      else deal4(s->L, e, e + es, e + 2 * es, e + 3 * es, tw);
    }
}

/* ---- the plane functions -------------------------------------------------------------- */

void lmx_cpu_wino_in(const lmx_cpu_wino *q, int64_t C, int64_t c0, int64_t c1, int64_t nimg,
                     const float *x, float *V, int64_t ld, float *buf) {
  wino_scratch s = scratch_of(q, buf);
  int64_t tiles = q->th * q->tw, HW = q->H * q->W;
  for (int64_t c = c0; c < c1; c++)
    for (int64_t n0 = 0; n0 < nimg; n0 += s.gimg) {
      int64_t cnt = nimg - n0 < s.gimg ? nimg - n0 : s.gimg;
      for (int64_t n = 0; n < cnt; n++)
        gather_in(q, x + ((n0 + n) * C + c) * HW, s.D + n * tiles, s.gt, &s);
      xf_of(q)->in(cnt * tiles, s.D, s.gt, V + c * ld + n0 * tiles, C * ld);
    }
}

void lmx_cpu_wino_in_adj(const lmx_cpu_wino *q, int64_t C, int64_t c0, int64_t c1,
                         int64_t nimg, const float *dV, int64_t ld, float *dx, int acc,
                         float *buf) {
  wino_scratch s = scratch_of(q, buf);
  int64_t tiles = q->th * q->tw, HW = q->H * q->W;
  for (int64_t c = c0; c < c1; c++)
    for (int64_t n0 = 0; n0 < nimg; n0 += s.gimg) {
      int64_t cnt = nimg - n0 < s.gimg ? nimg - n0 : s.gimg;
      xf_of(q)->in_adj(cnt * tiles, dV + c * ld + n0 * tiles, C * ld, s.D, s.gt);
      for (int64_t n = 0; n < cnt; n++)
        scatter_in(q, s.D + n * tiles, s.gt, dx + ((n0 + n) * C + c) * HW, acc, &s);
    }
}

void lmx_cpu_wino_out(const lmx_cpu_wino *q, int64_t F, int64_t f0, int64_t f1, int64_t nimg,
                      const float *M, int64_t ld, const float *bias, float *y, int acc,
                      float *buf) {
  wino_scratch s = scratch_of(q, buf);
  int64_t tiles = q->th * q->tw, vol = q->OH * q->OW;
  for (int64_t f = f0; f < f1; f++)
    for (int64_t n0 = 0; n0 < nimg; n0 += s.gimg) {
      int64_t cnt = nimg - n0 < s.gimg ? nimg - n0 : s.gimg;
      xf_of(q)->out(cnt * tiles, M + f * ld + n0 * tiles, F * ld, s.D, s.gt);
      for (int64_t n = 0; n < cnt; n++)
        scatter_out(q, s.D + n * tiles, s.gt, bias ? bias[f] : 0.0f,
                    y + ((n0 + n) * F + f) * vol, acc, &s);
    }
}

void lmx_cpu_wino_out_adj(const lmx_cpu_wino *q, int64_t F, int64_t f0, int64_t f1,
                          int64_t nimg, const float *dy, float *dM, int64_t ld, float *buf) {
  wino_scratch s = scratch_of(q, buf);
  int64_t tiles = q->th * q->tw, vol = q->OH * q->OW;
  for (int64_t f = f0; f < f1; f++)
    for (int64_t n0 = 0; n0 < nimg; n0 += s.gimg) {
      int64_t cnt = nimg - n0 < s.gimg ? nimg - n0 : s.gimg;
      for (int64_t n = 0; n < cnt; n++)
        gather_out(q, dy + ((n0 + n) * F + f) * vol, s.D + n * tiles, s.gt, &s);
      xf_of(q)->out_adj(cnt * tiles, s.D, s.gt, dM + f * ld + n0 * tiles, F * ld);
    }
}

/* ---- filters -------------------------------------------------------------------------- */

/* Filters go through blocks of 64: their taps are first moved apart (9 rows of 64), then
 * transformed at unit stride (a scalar loop over the interleaved taps measured 3% of a
 * ResNet-18 training step). */
enum { WT_BLK = 64 };

/* The filter transforms go over the threads in blocks of 64 filters from
 * LMX_OMP_MIN_STREAM values written or read when no region is open (batch 1: ResNet-18's
 * 64-channel layer transformed 147k on one core while the other waited). Each block is
 * independent, so the result does not depend on the split. */
static int64_t wt_blocks(int64_t FC) { return (FC + WT_BLK - 1) / WT_BLK; }

static void wt_blk(const lmx_cpu_wino *q, int64_t FC, const float *w, float *U, int64_t i0) {
  float g[9 * WT_BLK];
  int64_t n = FC - i0 < WT_BLK ? FC - i0 : WT_BLK;
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 9; j++) g[j * n + i] = w[(i0 + i) * 9 + j];
  xf_of(q)->wt(n, g, n, U + i0, FC);
}

void lmx_cpu_wino_wt(const lmx_cpu_wino *q, int64_t FC, const float *w, float *U) {
  int64_t P = (q->m + 2) * (q->m + 2);
  LMX_PAR_FOR_WM(wt_blocks(FC), WT_BLK * P, LMX_OMP_MIN_FREE, b,
                 { wt_blk(q, FC, w, U, b * WT_BLK); });
}

static void wt_adj_blk(const lmx_cpu_wino *q, int64_t FC, const float *dU, float *gw, int acc,
                       int64_t i0) {
  float g[9 * WT_BLK];
  int64_t n = FC - i0 < WT_BLK ? FC - i0 : WT_BLK;
  xf_of(q)->wt_adj(n, dU + i0, FC, g, n);
  float *o = gw + i0 * 9;
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 9; j++) o[i * 9 + j] = (acc ? o[i * 9 + j] : 0.0f) + g[j * n + i];
}

void lmx_cpu_wino_wt_adj(const lmx_cpu_wino *q, int64_t FC, const float *dU, float *gw,
                         int acc) {
  int64_t P = (q->m + 2) * (q->m + 2);
  LMX_PAR_FOR_WM(wt_blocks(FC), WT_BLK * P, LMX_OMP_MIN_FREE, b,
                 { wt_adj_blk(q, FC, dU, gw, acc, b * WT_BLK); });
}

int lmx_cpu_wino_geom(const lmx_cpu_geom *g, int m, lmx_cpu_wino *q) {
  /* normalized 3-D geometry of a 2-D 3x3 convolution, stride 1, no dilation */
  if (m != 2 && m != 4) return 0;
  if (g->k != 3 || g->in[0] != 1 || g->kernel[0] != 1 || g->pad[0] != 0) return 0;
  for (int i = 1; i < 3; i++)
    if (g->kernel[i] != 3 || g->stride[i] != 1 || g->dilate[i] != 1 || g->pad[i] > 2) return 0;
  q->H = g->in[1], q->W = g->in[2], q->OH = g->out[1], q->OW = g->out[2];
  q->ph = g->pad[1], q->pw = g->pad[2], q->m = m;
  q->th = (q->OH + m - 1) / m, q->tw = (q->OW + m - 1) / m;
  return q->OH > 0 && q->OW > 0;
}
