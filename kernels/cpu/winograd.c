/* winograd.c — the transforms of Winograd's minimal filtering F(2x2, 3x3) (Lavin & Gray,
 * "Fast Algorithms for Convolutional Neural Networks", 2016) for 3x3 convolutions with
 * stride 1 and no dilation on channel-first float32 images.
 *
 * An output tile of 2x2 pixels is Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d Bᵀᵀ) ] A for the 4x4 input tile d
 * at the same place and the 3x3 filter g; summed over the input channels, the product ⊙
 * becomes one matrix product per tile position ξ (16 of them): M[ξ] (F x T) = U[ξ] (F x C)
 * · V[ξ] (C x T), with U the transformed filters and V the transformed input tiles (T
 * tiles). That is 16 multiply-adds per 4 outputs instead of 36: 2.25x fewer FLOPs than
 * im2col + GEMM. The glue (src/ops/cpu/conv.c) runs the products; this file moves data in
 * and out of the transformed domain. The gradients are the adjoints of the same linear
 * maps (exactly the gradients of this forward):
 *   data:   dM = A dY Aᵀ (wino_out_adj), dV[ξ] = U[ξ]ᵀ dM[ξ], dX += B dV Bᵀ (wino_in_adj);
 *   weight: dU[ξ] += dM[ξ] V[ξ]ᵀ, dg = Gᵀ dU G (wino_wt_adj).
 * Layouts: U / dU [16][F][C]; V [16][C][ld] and M [16][F][ld] with tile t = n·th·tw +
 * ty·tw + tx of nimg images in columns [0, nimg·th·tw). Tiles past the image read zeros
 * and their outputs past the output edge are dropped (their gradient is zero).
 * Every loop over tiles runs along tx, contiguous in V / M, so it vectorises (one clone
 * per x86-64 vector width).
 */
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_par.h"

/* Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1],
 * Aᵀ = [1 1 1 0; 0 1 -1 -1]. */

/* G g Gᵀ of the filters i in [0, n): taps g[j][i] (9 rows of stride n) in, U[x][i] (16
 * rows of stride FC) out; unit stride in i, so it vectorises. */
LMX_SIMD_CLONES
static void wt_block(int64_t n, const float *restrict g, float *restrict U, int64_t FC) {
#pragma GCC ivdep /* the 16 rows of U are FC >= n apart */
  for (int64_t i = 0; i < n; i++) {
    float t[4][3]; /* G g */
    for (int j = 0; j < 3; j++) {
      float a = g[j * n + i], b = g[(3 + j) * n + i], c = g[(6 + j) * n + i];
      t[0][j] = a, t[1][j] = 0.5f * (a + b + c), t[2][j] = 0.5f * (a - b + c), t[3][j] = c;
    }
    for (int r = 0; r < 4; r++) { /* (G g) Gᵀ */
      float a = t[r][0], b = t[r][1], c = t[r][2];
      U[(r * 4 + 0) * FC + i] = a;
      U[(r * 4 + 1) * FC + i] = 0.5f * (a + b + c);
      U[(r * 4 + 2) * FC + i] = 0.5f * (a - b + c);
      U[(r * 4 + 3) * FC + i] = c;
    }
  }
}

/* Filters go through blocks of 64: their taps are first moved apart (9 rows of 64), then
 * transformed at unit stride (a scalar loop over the interleaved taps measured 3% of a
 * ResNet-18 training step). */
void lmx_cpu_wino_wt(int64_t F, int64_t C, const float *w, float *U) {
  enum { BLK = 64 };
  int64_t FC = F * C;
  float g[9 * BLK];
  for (int64_t i0 = 0; i0 < FC; i0 += BLK) {
    int64_t n = FC - i0 < BLK ? FC - i0 : BLK;
    for (int64_t i = 0; i < n; i++)
      for (int j = 0; j < 9; j++) g[j * n + i] = w[(i0 + i) * 9 + j];
    wt_block(n, g, U + i0, FC);
  }
}

void lmx_cpu_wino_wt_adj(int64_t F, int64_t C, const float *dU, float *gw, int acc) {
  int64_t FC = F * C;
  for (int64_t i = 0; i < FC; i++) {
    float u[4][4], t[4][3];
    for (int x = 0; x < 16; x++) u[x / 4][x % 4] = dU[x * FC + i];
    for (int r = 0; r < 4; r++) { /* u G: the transpose of (.) Gᵀ */
      float h1 = 0.5f * u[r][1], h2 = 0.5f * u[r][2];
      t[r][0] = u[r][0] + h1 + h2, t[r][1] = h1 - h2, t[r][2] = h1 + h2 + u[r][3];
    }
    float *g = gw + i * 9;
    for (int j = 0; j < 3; j++) { /* Gᵀ (u G) */
      float h1 = 0.5f * t[1][j], h2 = 0.5f * t[2][j];
      float r0 = t[0][j] + h1 + h2, r1 = h1 - h2, r2 = h1 + h2 + t[3][j];
      if (acc) g[j] += r0, g[3 + j] += r1, g[6 + j] += r2;
      else g[j] = r0, g[3 + j] = r1, g[6 + j] = r2;
    }
  }
}

/* Planes go through small scratch planes kept with even and odd columns apart (E[r][k]
 * is column 2k of row r of the zero-padded plane, O[r][k] column 2k + 1; r in [0, 2th + 2),
 * k in [0, tw + 1)): a tile's four columns are then E[tx], O[tx], E[tx + 1], O[tx + 1],
 * so every loop over tx reads and writes at unit stride and vectorises. */
typedef struct {
  float *E, *O, *L; /* even / odd planes (rows of K floats), a line of 2K floats */
  int64_t K, R;
} eo_planes;

static eo_planes eo_of(const lmx_cpu_wino *q, float *buf) {
  eo_planes p;
  p.K = q->tw + 1, p.R = 2 * q->th + 2;
  p.E = buf, p.O = buf + p.R * p.K, p.L = p.O + p.R * p.K;
  return p;
}

/* The line L (2K floats, columns c - pw of image row) split into E row / O row. */
LMX_SIMD_CLONES
static void split_line(const float *restrict L, float *restrict e, float *restrict o,
                       int64_t K) {
  for (int64_t k = 0; k < K; k++) e[k] = L[2 * k], o[k] = L[2 * k + 1];
}

/* The plane x (H x W) zero-padded (ph rows / pw columns in front) into E / O. */
static void to_eo(const lmx_cpu_wino *q, const float *x, const eo_planes *p) {
  int64_t wl = 2 * p->K, tail = wl - q->pw - q->W;
  memset(p->L, 0, (size_t)q->pw * sizeof(float));
  memset(p->L + q->pw + q->W, 0, (size_t)tail * sizeof(float));
  for (int64_t r = 0; r < p->R; r++) {
    int64_t y = r - q->ph;
    float *e = p->E + r * p->K, *o = p->O + r * p->K;
    if (y < 0 || y >= q->H) {
      memset(e, 0, (size_t)p->K * sizeof(float));
      memset(o, 0, (size_t)p->K * sizeof(float));
      continue;
    }
    memcpy(p->L + q->pw, x + y * q->W, (size_t)q->W * sizeof(float));
    split_line(p->L, e, o, p->K);
  }
}

/* One row of tiles: V (stride xs between the 16 positions) <- Bᵀ d B of each tile. */
LMX_SIMD_CLONES
static void in_tiles(int64_t tw, int64_t K, const float *restrict E, const float *restrict O,
                     float *restrict V, int64_t xs) {
  /* Bᵀ d along the rows first: row combinations a_i of rows r0..r3, at even (E) and odd
   * (O) columns; then (Bᵀ d) B along the columns E[tx], O[tx], E[tx + 1], O[tx + 1] */
#define LMX_WIN_ROWS(P, k, a0, a1, a2, a3)                                                  \
  float a0 = P[k] - P[2 * K + k], a1 = P[K + k] + P[2 * K + k];                            \
  float a2 = P[2 * K + k] - P[K + k], a3 = P[K + k] - P[3 * K + k];
#define LMX_WIN_COLS(i, c0, c1, c2, c3)                                                     \
  V[(4 * i) * xs + tx] = c0 - c2, V[(4 * i + 1) * xs + tx] = c1 + c2,                      \
  V[(4 * i + 2) * xs + tx] = c2 - c1, V[(4 * i + 3) * xs + tx] = c1 - c3;
#pragma GCC ivdep /* the 16 streams of V are disjoint (xs >= tw) */
  for (int64_t tx = 0; tx < tw; tx++) {
    LMX_WIN_ROWS(E, tx, e0, e1, e2, e3)
    LMX_WIN_ROWS(O, tx, o0, o1, o2, o3)
    LMX_WIN_ROWS(E, tx + 1, f0, f1, f2, f3)
    LMX_WIN_ROWS(O, tx + 1, p0, p1, p2, p3)
    LMX_WIN_COLS(0, e0, o0, f0, p0)
    LMX_WIN_COLS(1, e1, o1, f1, p1)
    LMX_WIN_COLS(2, e2, o2, f2, p2)
    LMX_WIN_COLS(3, e3, o3, f3, p3)
  }
#undef LMX_WIN_ROWS
#undef LMX_WIN_COLS
}

void lmx_cpu_wino_in(const lmx_cpu_wino *q, int64_t C, int64_t c0, int64_t c1, int64_t nimg,
                     const float *x, float *V, int64_t ld, float *buf) {
  int64_t tiles = q->th * q->tw, xs = C * ld;
  eo_planes p = eo_of(q, buf);
  for (int64_t n = 0; n < nimg; n++)
    for (int64_t c = c0; c < c1; c++) {
      to_eo(q, x + (n * C + c) * q->H * q->W, &p);
      float *v = V + c * ld + n * tiles;
      for (int64_t ty = 0; ty < q->th; ty++)
        in_tiles(q->tw, p.K, p.E + 2 * ty * p.K, p.O + 2 * ty * p.K, v + ty * q->tw, xs);
    }
}

/* One row of tiles of dV added back into E / O (rows 2ty .. 2ty + 3): B dV Bᵀ. Columns
 * 2tx, 2tx + 1 (E[tx], O[tx]) and 2tx + 2, 2tx + 3 (E[tx + 1], O[tx + 1]) go in separate
 * passes, so no pass adds to the same element twice (no dependence between iterations). */
LMX_SIMD_CLONES
static void in_adj_tiles(int64_t tw, int64_t K, const float *restrict V, int64_t xs,
                         float *restrict E, float *restrict O) {
  /* v Bᵀ for row i of the tile: its columns 0..3 */
#define LMX_WIN_H(i, h0, h1, h2, h3)                                                        \
  float h0 = V[(4 * i) * xs + tx], h3 = -V[(4 * i + 3) * xs + tx];                         \
  float h1 = V[(4 * i + 1) * xs + tx] - V[(4 * i + 2) * xs + tx] - h3;                     \
  float h2 = V[(4 * i + 2) * xs + tx] + V[(4 * i + 1) * xs + tx] - h0;
  /* B (.): rows 0..3 of column j (values a, b, c, d of rows 0..3 of the tile) into P */
#define LMX_WIN_V(P, k, a, b, c, d)                                                         \
  P[k] += a, P[K + k] += b - c + d, P[2 * K + k] += c + b - a, P[3 * K + k] -= d;
#pragma GCC ivdep /* E and O rows are K >= tw + 1 apart */
  for (int64_t tx = 0; tx < tw; tx++) {
    LMX_WIN_H(0, a0, a1, a2, a3)
    LMX_WIN_H(1, b0, b1, b2, b3)
    LMX_WIN_H(2, c0, c1, c2, c3)
    LMX_WIN_H(3, d0, d1, d2, d3)
    LMX_WIN_V(E, tx, a0, b0, c0, d0)
    LMX_WIN_V(O, tx, a1, b1, c1, d1)
    (void)a2, (void)a3, (void)b2, (void)b3, (void)c2, (void)c3, (void)d2, (void)d3;
  }
#pragma GCC ivdep
  for (int64_t tx = 0; tx < tw; tx++) {
    LMX_WIN_H(0, a0, a1, a2, a3)
    LMX_WIN_H(1, b0, b1, b2, b3)
    LMX_WIN_H(2, c0, c1, c2, c3)
    LMX_WIN_H(3, d0, d1, d2, d3)
    LMX_WIN_V(E, tx + 1, a2, b2, c2, d2)
    LMX_WIN_V(O, tx + 1, a3, b3, c3, d3)
    (void)a0, (void)a1, (void)b0, (void)b1, (void)c0, (void)c1, (void)d0, (void)d1;
  }
#undef LMX_WIN_H
#undef LMX_WIN_V
}

LMX_SIMD_CLONES
static void join_line(const float *restrict e, const float *restrict o, float *restrict L,
                      int64_t K) {
  for (int64_t k = 0; k < K; k++) L[2 * k] = e[k], L[2 * k + 1] = o[k];
}

void lmx_cpu_wino_in_adj(const lmx_cpu_wino *q, int64_t C, int64_t c0, int64_t c1,
                         int64_t nimg, const float *dV, int64_t ld, float *dx, int acc,
                         float *buf) {
  int64_t tiles = q->th * q->tw, xs = C * ld;
  eo_planes p = eo_of(q, buf);
  for (int64_t n = 0; n < nimg; n++)
    for (int64_t c = c0; c < c1; c++) {
      memset(p.E, 0, (size_t)(2 * p.R * p.K) * sizeof(float)); /* E and O */
      const float *v = dV + c * ld + n * tiles;
      for (int64_t ty = 0; ty < q->th; ty++)
        in_adj_tiles(q->tw, p.K, v + ty * q->tw, xs, p.E + 2 * ty * p.K, p.O + 2 * ty * p.K);
      float *pl = dx + (n * C + c) * q->H * q->W;
      for (int64_t y = 0; y < q->H; y++) {
        int64_t r = y + q->ph;
        float *d = pl + y * q->W;
        const float *s = p.L + q->pw;
        join_line(p.E + r * p.K, p.O + r * p.K, p.L, p.K);
        if (acc)
          for (int64_t i = 0; i < q->W; i++) d[i] += s[i];
        else
          memcpy(d, s, (size_t)q->W * sizeof(float));
      }
    }
}

/* One row of tiles of M out: output rows 2ty (even / odd columns y0e / y0o) and 2ty + 1. */
LMX_SIMD_CLONES
static void out_tiles(int64_t tw, const float *restrict M, int64_t xs, float *restrict y0e,
                      float *restrict y0o, float *restrict y1e, float *restrict y1o) {
  for (int64_t tx = 0; tx < tw; tx++) {
    float s[2][4]; /* Aᵀ m: along the rows */
    for (int j = 0; j < 4; j++) {
      const float *m = M + j * xs + tx;
      float a = m[0], b = m[4 * xs], c = m[8 * xs], d = m[12 * xs];
      s[0][j] = a + b + c, s[1][j] = b - c - d;
    }
    y0e[tx] = s[0][0] + s[0][1] + s[0][2], y0o[tx] = s[0][1] - s[0][2] - s[0][3];
    y1e[tx] = s[1][0] + s[1][1] + s[1][2], y1o[tx] = s[1][1] - s[1][2] - s[1][3];
  }
}

/* d[0, w) (+)= the interleaving of e, o, plus b */
LMX_SIMD_CLONES
static void put_row(float *restrict d, const float *restrict e, const float *restrict o,
                    int64_t w, float b, int acc) {
  int64_t h = w / 2;
  if (acc)
    for (int64_t k = 0; k < h; k++) d[2 * k] += e[k] + b, d[2 * k + 1] += o[k] + b;
  else
    for (int64_t k = 0; k < h; k++) d[2 * k] = e[k] + b, d[2 * k + 1] = o[k] + b;
  if (w & 1) d[w - 1] = (acc ? d[w - 1] : 0.0f) + e[h] + b;
}

void lmx_cpu_wino_out(const lmx_cpu_wino *q, int64_t F, int64_t f0, int64_t f1, int64_t nimg,
                      const float *M, int64_t ld, const float *bias, float *y, int acc,
                      float *buf) {
  int64_t tiles = q->th * q->tw, xs = F * ld, OW = q->OW, vol = q->OH * OW, tw = q->tw;
  float *r[4] = {buf, buf + tw, buf + 2 * tw, buf + 3 * tw};
  for (int64_t n = 0; n < nimg; n++)
    for (int64_t f = f0; f < f1; f++) {
      float *pl = y + (n * F + f) * vol, b = bias ? bias[f] : 0.0f;
      const float *m = M + f * ld + n * tiles;
      for (int64_t ty = 0; ty < q->th; ty++) {
        out_tiles(tw, m + ty * tw, xs, r[0], r[1], r[2], r[3]);
        put_row(pl + 2 * ty * OW, r[0], r[1], OW, b, acc);
        if (2 * ty + 1 < q->OH) put_row(pl + (2 * ty + 1) * OW, r[2], r[3], OW, b, acc);
      }
    }
}

/* dM = A dy Aᵀ for one row of tiles: dy rows 2ty / 2ty + 1 as even / odd columns */
LMX_SIMD_CLONES
static void out_adj_tiles(int64_t tw, const float *restrict y0e, const float *restrict y0o,
                          const float *restrict y1e, const float *restrict y1o,
                          float *restrict dM, int64_t xs) {
#pragma GCC ivdep /* the 16 streams of dM are disjoint (xs >= tw) */
  for (int64_t tx = 0; tx < tw; tx++) {
    float y00 = y0e[tx], y01 = y0o[tx], y10 = y1e[tx], y11 = y1o[tx];
    float c[4][2] = {{y00, y01}, {y00 + y10, y01 + y11}, {y00 - y10, y01 - y11}, {-y10, -y11}};
    for (int r = 0; r < 4; r++) { /* (A y) Aᵀ */
      float a = c[r][0], b = c[r][1], *m = dM + r * 4 * xs + tx;
      m[0] = a, m[xs] = a + b, m[2 * xs] = a - b, m[3 * xs] = -b;
    }
  }
}

void lmx_cpu_wino_out_adj(const lmx_cpu_wino *q, int64_t F, int64_t f0, int64_t f1,
                          int64_t nimg, const float *dy, float *dM, int64_t ld, float *buf) {
  int64_t tiles = q->th * q->tw, xs = F * ld, OW = q->OW, vol = q->OH * OW, tw = q->tw;
  float *r[4] = {buf, buf + tw, buf + 2 * tw, buf + 3 * tw}, *L = buf + 4 * tw;
  L[2 * tw - 1] = 0.0f; /* the column past an odd width */
  for (int64_t n = 0; n < nimg; n++)
    for (int64_t f = f0; f < f1; f++) {
      const float *pl = dy + (n * F + f) * vol;
      float *m = dM + f * ld + n * tiles;
      for (int64_t ty = 0; ty < q->th; ty++) {
        for (int i = 0; i < 2; i++) {
          if (2 * ty + i < q->OH) {
            memcpy(L, pl + (2 * ty + i) * OW, (size_t)OW * sizeof(float));
            split_line(L, r[2 * i], r[2 * i + 1], tw);
          } else {
            memset(r[2 * i], 0, (size_t)(2 * tw) * sizeof(float));
          }
        }
        out_adj_tiles(tw, r[0], r[1], r[2], r[3], m + ty * tw, xs);
      }
    }
}

/* E and O planes and a line (eo_of) cover every function's scratch: out and out_adj use
 * 6tw floats, and (2th + 2)·(tw + 1)·2 >= 4(tw + 1). */
int64_t lmx_cpu_wino_buf_floats(const lmx_cpu_wino *q) {
  return 2 * (2 * q->th + 2) * (q->tw + 1) + 2 * (q->tw + 1);
}

int lmx_cpu_wino_geom(const lmx_cpu_geom *g, lmx_cpu_wino *q) {
  /* normalized 3-D geometry of a 2-D 3x3 convolution, stride 1, no dilation */
  if (g->k != 3 || g->in[0] != 1 || g->kernel[0] != 1 || g->pad[0] != 0) return 0;
  for (int i = 1; i < 3; i++)
    if (g->kernel[i] != 3 || g->stride[i] != 1 || g->dilate[i] != 1 || g->pad[i] > 2) return 0;
  q->H = g->in[1], q->W = g->in[2], q->OH = g->out[1], q->OW = g->out[2];
  q->ph = g->pad[1], q->pw = g->pad[2];
  q->th = (q->OH + 1) / 2, q->tw = (q->OW + 1) / 2;
  return q->OH > 0 && q->OW > 0;
}
