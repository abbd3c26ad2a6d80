/* rnn.cu — the fused RNN operator on the device, a step-for-step port of
 * kernels/cpu/rnn.c (read its top comment for the packed parameters, the reserve
 * M / X / Y / G / C and the workspace): the same carving of the same buffers, the same
 * GEMMs (through cu_gemm.h, so cuBLAS on hardware and the derived OpenBLAS call in the
 * simulator) and the cell math of kernels/cpu/rnn_cell.h as one-thread-per-(n, j)
 * kernels. Per (layer, direction) forward: one GEMM for the input projections of all
 * steps, then per step one recurrent GEMM and one cell kernel; backward: one cell kernel
 * and one recurrent GEMM per step, then dWh, dWx, the bias sums and the input gradient
 * over all steps at once. Copies and fills between buffers are small kernels (k_rows),
 * so everything stays queued on the one stream. Errors are sticky: the first non-zero
 * code stops the sequence and is returned.
 */
#include <math.h>

#include "cu_gemm.h"
#include "cu_rnn.h"
#include "cu_util.cuh"

typedef struct {
  const lmx_cpu_rnn *r;
  lmx_cu_stream s;
  size_t es;
  int64_t GH, DH, TN, Lm;
  char *M, *X, *Y, *Gs, *Cs;
  char *dA, *dB, *dXg, *dHs, *hg, *dh, *dc;
  int rc;
} rws;

static char *P(const void *base, const rws *w, int64_t elems) {
  return (char *)base + (size_t)elems * w->es;
}
static int64_t in_dim(const lmx_cpu_rnn *r, int64_t l) { return l == 0 ? r->In : r->D * r->H; }
static int64_t w_ofs(const lmx_cpu_rnn *r, int64_t l, int64_t d) {
  int64_t o = 0, GH = r->G * r->H;
  for (int64_t k = 0; k < l * r->D + d; k++) o += GH * (in_dim(r, k / r->D) + r->H);
  return o;
}
static int64_t b_ofs(const lmx_cpu_rnn *r, int64_t l, int64_t d) {
  return w_ofs(r, r->L, 0) + (l * r->D + d) * 2 * r->G * r->H;
}

static void carve(const lmx_cpu_rnn *r, lmx_cu_stream s, void *rs, void *ws, rws *w) {
  w->r = r, w->s = s, w->rc = 0, w->es = r->dt == LMX_FLOAT32 ? 4 : 8;
  w->GH = r->G * r->H, w->DH = r->D * r->H, w->TN = r->T * r->N;
  w->Lm = r->drop && r->L > 1 ? r->L - 1 : 0;
  char *p = (char *)rs;
  w->M = p, p = P(p, w, w->Lm * w->TN * w->DH);
  w->X = p, p = P(p, w, w->Lm * w->TN * w->DH);
  w->Y = p, p = P(p, w, r->L * w->TN * w->DH);
  w->Gs = p, p = P(p, w, r->L * r->D * w->TN * w->GH);
  w->Cs = p;
  p = (char *)ws;
  w->dA = p, p = P(p, w, w->TN * w->DH);
  w->dB = p, p = P(p, w, w->TN * w->DH);
  w->dXg = p, p = P(p, w, w->TN * w->GH);
  w->dHs = w->dXg;
  if (r->mode == LMX_RNN_GRU) w->dHs = p, p = P(p, w, w->TN * w->GH);
  w->hg = p, p = P(p, w, r->N * w->GH);
  w->dh = p, p = P(p, w, r->N * r->H);
  w->dc = p;
}

static char *Yl(const rws *w, int64_t l) { return P(w->Y, w, l * w->TN * w->DH); }
static char *Gld(const rws *w, int64_t l, int64_t d) {
  return P(w->Gs, w, (l * w->r->D + d) * w->TN * w->GH);
}
static char *Cld(const rws *w, int64_t l, int64_t d) {
  return P(w->Cs, w, (l * w->r->D + d) * w->TN * w->r->H);
}
static const char *layer_in(const rws *w, int64_t l, const void *x) {
  if (l == 0) return (const char *)x;
  return w->Lm ? P(w->X, w, (l - 1) * w->TN * w->DH) : Yl(w, l - 1);
}

/* ---- small kernels ------------------------------------------------------------------- */

/* dst[r*ldd + j] = (acc ? dst : 0) + (src ? src[r*lds + j] : 0) (mask: times m[r*lds + j]) */
template <typename T>
__global__ void k_rows(int64_t rows, int64_t cols, T *dst, int64_t ldd, const T *src,
                       int64_t lds, const T *m, int acc) {
  LMX_CU_GRID_LOOP(e, rows * cols) {
    int64_t r = e / cols, j = e % cols;
    T v = src ? src[r * lds + j] : (T)0;
    if (m) v *= m[r * lds + j];
    dst[r * ldd + j] = acc ? dst[r * ldd + j] + v : v;
  }
}

template <typename T> __device__ static inline T sig(T v) { return 1 / (1 + exp(-v)); }

template <typename T>
__global__ void k_lstm_fwd(int64_t N, int64_t H, int64_t ldy, T *g, const T *hg, const T *bx,
                           const T *bh, const T *cp, T *c, T *h) {
  LMX_CU_GRID_LOOP(e, N * H) {
    int64_t n = e / H, j = e % H;
    T *gn = g + n * 4 * H;
    const T *hn = hg + n * 4 * H;
    T i = sig(gn[j] + hn[j] + (bx[j] + bh[j]));
    T f = sig(gn[H + j] + hn[H + j] + (bx[H + j] + bh[H + j]));
    T gg = tanh(gn[2 * H + j] + hn[2 * H + j] + (bx[2 * H + j] + bh[2 * H + j]));
    T o = sig(gn[3 * H + j] + hn[3 * H + j] + (bx[3 * H + j] + bh[3 * H + j]));
    T cv = f * (cp ? cp[n * H + j] : (T)0) + i * gg;
    gn[j] = i, gn[H + j] = f, gn[2 * H + j] = gg, gn[3 * H + j] = o;
    c[n * H + j] = cv;
    h[n * ldy + j] = o * tanh(cv);
  }
}

template <typename T>
__global__ void k_gru_fwd(int64_t N, int64_t H, int64_t ldy, T *g, const T *hg, const T *bx,
                          const T *bh, const T *hp, int64_t ldh, T *c, T *h) {
  LMX_CU_GRID_LOOP(e, N * H) {
    int64_t n = e / H, j = e % H;
    T *gn = g + n * 3 * H;
    const T *hn = hg + n * 3 * H;
    T rr = sig(gn[j] + hn[j] + (bx[j] + bh[j]));
    T z = sig(gn[H + j] + hn[H + j] + (bx[H + j] + bh[H + j]));
    T hl = hn[2 * H + j] + bh[2 * H + j];
    T nn = tanh(gn[2 * H + j] + bx[2 * H + j] + rr * hl);
    gn[j] = rr, gn[H + j] = z, gn[2 * H + j] = nn;
    c[n * H + j] = hl;
    h[n * ldy + j] = (1 - z) * nn + z * hp[n * ldh + j];
  }
}

template <typename T>
__global__ void k_rnn_fwd(int64_t N, int64_t H, int64_t ldy, int tanh_act, T *g, const T *hg,
                          const T *bx, const T *bh, T *h) {
  LMX_CU_GRID_LOOP(e, N * H) {
    int64_t n = e / H, j = e % H;
    T a = g[n * H + j] + hg[n * H + j] + (bx[j] + bh[j]);
    a = tanh_act ? tanh(a) : a > 0 ? a : (T)0;
    g[n * H + j] = h[n * ldy + j] = a;
  }
}

template <typename T>
__global__ void k_lstm_bwd(int64_t N, int64_t H, int64_t ldy, const T *g, const T *c,
                           const T *cp, const T *dy, const T *dh, T *dc, T *dx) {
  LMX_CU_GRID_LOOP(e, N * H) {
    int64_t n = e / H, j = e % H;
    const T *gn = g + n * 4 * H;
    T *dxn = dx + n * 4 * H;
    T i = gn[j], f = gn[H + j], gg = gn[2 * H + j], o = gn[3 * H + j];
    T dhv = dh[n * H + j] + dy[n * ldy + j], tc = tanh(c[n * H + j]);
    T dct = dc[n * H + j] + dhv * o * (1 - tc * tc);
    dxn[j] = dct * gg * i * (1 - i);
    dxn[H + j] = dct * (cp ? cp[n * H + j] : (T)0) * f * (1 - f);
    dxn[2 * H + j] = dct * i * (1 - gg * gg);
    dxn[3 * H + j] = dhv * tc * o * (1 - o);
    dc[n * H + j] = dct * f;
  }
}

template <typename T>
__global__ void k_gru_bwd(int64_t N, int64_t H, int64_t ldy, const T *g, const T *c,
                          const T *hp, int64_t ldh, const T *dy, T *dh, T *dx, T *dH) {
  LMX_CU_GRID_LOOP(e, N * H) {
    int64_t n = e / H, j = e % H;
    const T *gn = g + n * 3 * H;
    T *dxn = dx + n * 3 * H, *dHn = dH + n * 3 * H;
    T rr = gn[j], z = gn[H + j], nn = gn[2 * H + j], hl = c[n * H + j];
    T dhv = dh[n * H + j] + dy[n * ldy + j];
    T dan = dhv * (1 - z) * (1 - nn * nn);
    T dr = dan * hl * rr * (1 - rr), dz = dhv * (hp[n * ldh + j] - nn) * z * (1 - z);
    dxn[j] = dHn[j] = dr;
    dxn[H + j] = dHn[H + j] = dz;
    dxn[2 * H + j] = dan;
    dHn[2 * H + j] = dan * rr;
    dh[n * H + j] = dhv * z;
  }
}

template <typename T>
__global__ void k_rnn_bwd(int64_t N, int64_t H, int64_t ldy, int tanh_act, const T *g,
                          const T *dy, const T *dh, T *dx) {
  LMX_CU_GRID_LOOP(e, N * H) {
    int64_t n = e / H, j = e % H;
    T gv = g[n * H + j], d = dh[n * H + j] + dy[n * ldy + j];
    dx[n * H + j] = tanh_act ? d * (1 - gv * gv) : gv > 0 ? d : (T)0;
  }
}

/* ---- launch helpers (sticky error in w->rc) ------------------------------------------ */

#define DT_LAUNCH(w, kern, n, ...)                                                         \
  do {                                                                                     \
    if ((w)->rc || (n) <= 0) break;                                                        \
    if ((w)->r->dt == LMX_FLOAT32) {                                                       \
      typedef float T;                                                                     \
      LMX_LAUNCH(kern<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, (w)->s, __VA_ARGS__);       \
    } else {                                                                               \
      typedef double T;                                                                    \
      LMX_LAUNCH(kern<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, (w)->s, __VA_ARGS__);       \
    }                                                                                      \
    (w)->rc = lmx_cu_last_error();                                                         \
  } while (0)

static void rows(rws *w, int64_t nr, int64_t nc, void *dst, int64_t ldd, const void *src,
                 int64_t lds, const void *m, int acc) {
  DT_LAUNCH(w, k_rows, nr * nc, nr, nc, (T *)dst, ldd, (const T *)src, lds, (const T *)m, acc);
}

/* the CPU's gemm_ld: nothing at all (not even the beta scaling) when a dim is 0 */
static void gemm(rws *w, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (w->rc || m <= 0 || n <= 0 || k <= 0) return;
  w->rc = lmx_cu_gemm_ld(w->s, w->r->dt, ta, tb, m, n, k, 1.0, A, lda, B, ldb, beta, C, ldc);
}

static void cell_fwd(rws *w, void *g, const void *hg, const void *bx, const void *bh,
                     const void *hp, int64_t ldh, const void *cp, void *c, void *h) {
  const lmx_cpu_rnn *r = w->r;
  int64_t N = r->N, H = r->H, ldy = w->DH;
  if (r->mode == LMX_RNN_LSTM)
    DT_LAUNCH(w, k_lstm_fwd, N * H, N, H, ldy, (T *)g, (const T *)hg, (const T *)bx,
              (const T *)bh, (const T *)cp, (T *)c, (T *)h);
  else if (r->mode == LMX_RNN_GRU)
    DT_LAUNCH(w, k_gru_fwd, N * H, N, H, ldy, (T *)g, (const T *)hg, (const T *)bx,
              (const T *)bh, (const T *)hp, ldh, (T *)c, (T *)h);
  else
    DT_LAUNCH(w, k_rnn_fwd, N * H, N, H, ldy, r->mode == LMX_RNN_TANH, (T *)g, (const T *)hg,
              (const T *)bx, (const T *)bh, (T *)h);
}

static void cell_bwd(rws *w, const void *g, const void *c, const void *hp, int64_t ldh,
                     const void *cp, const void *dy, void *dxg, void *dhs) {
  const lmx_cpu_rnn *r = w->r;
  int64_t N = r->N, H = r->H, ldy = w->DH;
  if (r->mode == LMX_RNN_LSTM)
    DT_LAUNCH(w, k_lstm_bwd, N * H, N, H, ldy, (const T *)g, (const T *)c, (const T *)cp,
              (const T *)dy, (const T *)w->dh, (T *)w->dc, (T *)dxg);
  else if (r->mode == LMX_RNN_GRU)
    DT_LAUNCH(w, k_gru_bwd, N * H, N, H, ldy, (const T *)g, (const T *)c, (const T *)hp, ldh,
              (const T *)dy, (T *)w->dh, (T *)dxg, (T *)dhs);
  else
    DT_LAUNCH(w, k_rnn_bwd, N * H, N, H, ldy, r->mode == LMX_RNN_TANH, (const T *)g,
              (const T *)dy, (const T *)w->dh, (T *)dxg);
}

/* ---- forward ------------------------------------------------------------------------- */

static void layer_fwd(rws *w, int64_t l, int64_t d, const void *x, const void *prm,
                      const void *h0, const void *c0) {
  const lmx_cpu_rnn *r = w->r;
  int64_t N = r->N, H = r->H, GH = w->GH, DH = w->DH, ind = in_dim(r, l), k = l * r->D + d;
  const char *Wx = P(prm, w, w_ofs(r, l, d)), *Wh = P(Wx, w, GH * ind);
  const char *bx = P(prm, w, b_ofs(r, l, d)), *bh = P(bx, w, GH);
  char *G = Gld(w, l, d), *Cs = Cld(w, l, d), *Y = Yl(w, l);
  gemm(w, 0, 1, w->TN, GH, ind, layer_in(w, l, x), ind, Wx, ind, 0.0, G, GH);
  for (int64_t s = 0; s < r->T && !w->rc; s++) {
    int64_t t = d == 0 ? s : r->T - 1 - s, tp = d == 0 ? t - 1 : t + 1;
    const char *hp = s == 0 ? P(h0, w, k * N * H) : P(Y, w, tp * N * DH + d * H);
    int64_t ldh = s == 0 ? H : DH;
    const char *cp = s == 0 ? (c0 ? P(c0, w, k * N * H) : NULL) : P(Cs, w, tp * N * H);
    if (H > 0) gemm(w, 0, 1, N, GH, H, hp, ldh, Wh, H, 0.0, w->hg, GH);
    else rows(w, 1, N * GH, w->hg, 0, NULL, 0, NULL, 0);
    cell_fwd(w, P(G, w, t * N * GH), w->hg, bx, bh, hp, ldh, cp, P(Cs, w, t * N * H),
             P(Y, w, t * N * DH + d * H));
  }
}

int lmx_cu_rnn_fwd(lmx_cu_stream s, const lmx_cpu_rnn *r, const void *x, const void *prm,
                   const void *h0, const void *c0, void *y, void *hy, void *cy, void *rs,
                   void *ws) {
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64) return -1;
  rws w;
  carve(r, s, rs, ws, &w);
  int64_t N = r->N, H = r->H, n = w.TN * w.DH;
  for (int64_t l = 0; l < r->L; l++) {
    for (int64_t d = 0; d < r->D; d++) layer_fwd(&w, l, d, x, prm, h0, c0);
    if (l < w.Lm) rows(&w, 1, n, P(w.X, &w, l * n), 0, Yl(&w, l), 0, P(w.M, &w, l * n), 0);
  }
  if (y) rows(&w, 1, n, y, 0, Yl(&w, r->L - 1), 0, NULL, 0);
  for (int64_t l = 0; l < r->L; l++)
    for (int64_t d = 0; d < r->D && r->T > 0; d++) {
      int64_t t = d == 0 ? r->T - 1 : 0, k = l * r->D + d;
      if (hy) rows(&w, N, H, P(hy, &w, k * N * H), H, P(Yl(&w, l), &w, t * N * w.DH + d * H), w.DH, NULL, 0);
      if (cy && r->mode == LMX_RNN_LSTM)
        rows(&w, N, H, P(cy, &w, k * N * H), H, P(Cld(&w, l, d), &w, t * N * H), H, NULL, 0);
    }
  return w.rc;
}

/* ---- backward ------------------------------------------------------------------------ */

static void layer_bwd(rws *w, const lmx_cpu_rnn_grad *gr, int64_t l, int64_t d, const void *x,
                      const void *prm, const void *h0, const void *c0, const char *dY,
                      void *dIn, int acc_in) {
  const lmx_cpu_rnn *r = w->r;
  int gru = r->mode == LMX_RNN_GRU, lstm = r->mode == LMX_RNN_LSTM;
  int64_t N = r->N, H = r->H, T = r->T, GH = w->GH, DH = w->DH, ind = in_dim(r, l);
  int64_t k = l * r->D + d;
  const char *in = layer_in(w, l, x);
  const char *Wx = P(prm, w, w_ofs(r, l, d)), *Wh = P(Wx, w, GH * ind);
  char *dWx = gr->dw ? P(gr->dw, w, w_ofs(r, l, d)) : NULL, *dWh = dWx ? P(dWx, w, GH * ind) : NULL;
  char *dbx = gr->dw ? P(gr->dw, w, b_ofs(r, l, d)) : NULL, *dbh = dbx ? P(dbx, w, GH) : NULL;
  char *G = Gld(w, l, d), *Cs = Cld(w, l, d), *Y = Yl(w, l);
  const char *hx = P(h0, w, k * N * H);
  rows(w, 1, N * H, w->dh, 0, gr->dhy ? P(gr->dhy, w, k * N * H) : NULL, 0, NULL, 0);
  rows(w, 1, N * H, w->dc, 0, gr->dcy && lstm ? P(gr->dcy, w, k * N * H) : NULL, 0, NULL, 0);
  for (int64_t s = T - 1; s >= 0 && !w->rc; s--) {
    int64_t t = d == 0 ? s : T - 1 - s, tp = d == 0 ? t - 1 : t + 1;
    const char *hp = s == 0 ? hx : P(Y, w, tp * N * DH + d * H);
    int64_t ldh = s == 0 ? H : DH;
    const char *cp = !lstm ? NULL : s == 0 ? (c0 ? P(c0, w, k * N * H) : NULL) : P(Cs, w, tp * N * H);
    cell_bwd(w, P(G, w, t * N * GH), P(Cs, w, t * N * H), hp, ldh, cp,
             P(dY, w, t * N * DH + d * H), P(w->dXg, w, t * N * GH), P(w->dHs, w, t * N * GH));
    if (GH > 0) gemm(w, 0, 0, N, H, GH, P(w->dHs, w, t * N * GH), GH, Wh, H, gru ? 1.0 : 0.0, w->dh, H);
  }
  if (gr->dh0) rows(w, 1, N * H, P(gr->dh0, w, k * N * H), 0, w->dh, 0, NULL, 1);
  if (gr->dc0 && lstm) rows(w, 1, N * H, P(gr->dc0, w, k * N * H), 0, w->dc, 0, NULL, 1);
  if (dWh && T > 0) {
    int64_t t0 = d == 0 ? 0 : T - 1, a0 = d == 0 ? 1 : 0, y0 = d == 0 ? 0 : 1;
    gemm(w, 1, 0, GH, H, (T - 1) * N, P(w->dHs, w, a0 * N * GH), GH,
         P(Y, w, y0 * N * DH + d * H), DH, 1.0, dWh, H);
    gemm(w, 1, 0, GH, H, N, P(w->dHs, w, t0 * N * GH), GH, hx, H, 1.0, dWh, H);
  }
  if (dbh && !w->rc) w->rc = lmx_cu_sum_rows(w->s, r->dt, w->TN, GH, dbh, w->dHs, 1);
  if (dWx) gemm(w, 1, 0, GH, ind, w->TN, w->dXg, GH, in, ind, 1.0, dWx, ind);
  if (dbx && !w->rc) w->rc = lmx_cu_sum_rows(w->s, r->dt, w->TN, GH, dbx, w->dXg, 1);
  if (dIn) gemm(w, 0, 0, w->TN, ind, GH, w->dXg, GH, Wx, ind, acc_in ? 1.0 : 0.0, dIn, ind);
}

int lmx_cu_rnn_bwd(lmx_cu_stream s, const lmx_cpu_rnn *r, const void *x, const void *prm,
                   const void *h0, const void *c0, const void *rs, const lmx_cpu_rnn_grad *gr,
                   void *ws) {
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64) return -1;
  rws w;
  carve(r, s, (void *)rs, ws, &w);
  int64_t n = w.TN * w.DH;
  const char *cur = (const char *)gr->dy;
  if (!cur) rows(&w, 1, n, w.dA, 0, NULL, 0, NULL, 0), cur = w.dA;
  for (int64_t l = r->L - 1; l >= 0 && !w.rc; l--) {
    char *next = cur == w.dA ? w.dB : w.dA;
    for (int64_t d = 0; d < r->D; d++)
      layer_bwd(&w, gr, l, d, x, prm, h0, c0, cur, l > 0 ? (void *)next : gr->dx,
                l == 0 || d > 0);
    if (l == 0) break;
    if (l - 1 < w.Lm) rows(&w, 1, n, next, 0, next, 0, P(w.M, &w, (l - 1) * n), 0);
    cur = next;
  }
  return w.rc;
}
