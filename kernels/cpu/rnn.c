/* rnn.c — the fused RNN operator (rnn_relu, rnn_tanh, lstm, gru): multi-layer,
 * bidirectional, MXNet's packed parameter layout, forward and backward.
 *
 * Layout of the packed parameters (MXNet 1.9 rnn-inl.h / FusedRNNCell): for each layer,
 * for each direction, Wx (G·H, in) then Wh (G·H, H); after all weights, for each layer
 * and direction, bx (G·H) then bh (G·H). Gate order: lstm i, f, g, o; gru r, z, n.
 * Cells: lstm c = f c' + i g, h = o tanh(c); gru n = tanh(xn + r (Whn h' + bhn)),
 * h = (1 - z) n + z h'; rnn h = act(Wx x + bx + Wh h' + bh).
 * Each (layer, direction) first computes the input projections of all steps in one GEMM
 * (T·N rows), then walks time (backwards for direction 1) with one GEMM per step.
 * Backward recomputes the forward into the workspace (the op keeps no state between
 * calls), then runs back through time: per step dWh and the recurrent gradient are GEMMs,
 * and dWx / the input gradient are one GEMM each per (layer, direction).
 * Workspace (elements, lmx_cpu_rnn_ws): every layer's output sequence, per (layer,
 * direction) the gate activations of all steps and one more (T, N, H) sequence (lstm
 * cell states, gru's Whn h' + bhn), and the backward scratch.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_math.h"

/* C[m,n] = alpha op(A) op(B) + beta C with leading dimensions (row-major). */
static void gemm_ld(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0) return;
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if (dt == LMX_FLOAT32)
    cblas_sgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, 1.0f, A, (blasint)lda,
                B, (blasint)ldb, (float)beta, C, (blasint)ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, 1.0, A, (blasint)lda,
                B, (blasint)ldb, beta, C, (blasint)ldc);
}

typedef struct {
  const lmx_cpu_rnn *r;
  size_t es;
  int64_t GH, DH, TN;
  char *Y, *Gs, *Cs, *dYa, *dYb, *dXg, *dHg, *dh, *dc, *tmp;
} rnn_ws;

static char *P(const void *base, const rnn_ws *w, int64_t elems) {
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

int64_t lmx_cpu_rnn_param_size(const lmx_cpu_rnn *r) { return b_ofs(r, r->L, 0); }

size_t lmx_cpu_rnn_ws(const lmx_cpu_rnn *r) {
  int64_t TN = r->T * r->N, GH = r->G * r->H, DH = r->D * r->H;
  int64_t e = r->L * TN * DH + r->L * r->D * (TN * GH + TN * r->H) + 2 * TN * DH + TN * GH +
              r->N * GH + 3 * r->N * r->H;
  return (size_t)e;
}

static void ws_carve(const lmx_cpu_rnn *r, void *base, rnn_ws *w) {
  w->r = r, w->es = (size_t)lmx_dtype_size(r->dt);
  w->GH = r->G * r->H, w->DH = r->D * r->H, w->TN = r->T * r->N;
  char *p = base;
  w->Y = p, p = P(p, w, r->L * w->TN * w->DH);
  w->Gs = p, p = P(p, w, r->L * r->D * w->TN * w->GH);
  w->Cs = p, p = P(p, w, r->L * r->D * w->TN * r->H);
  w->dYa = p, p = P(p, w, w->TN * w->DH);
  w->dYb = p, p = P(p, w, w->TN * w->DH);
  w->dXg = p, p = P(p, w, w->TN * w->GH);
  w->dHg = p, p = P(p, w, r->N * w->GH);
  w->dh = p, p = P(p, w, r->N * r->H);
  w->dc = p, p = P(p, w, r->N * r->H);
  w->tmp = p;
}

static char *Yl(const rnn_ws *w, int64_t l) { return P(w->Y, w, l * w->TN * w->DH); }
static char *Gld(const rnn_ws *w, int64_t l, int64_t d) {
  return P(w->Gs, w, (l * w->r->D + d) * w->TN * w->GH);
}
static char *Cld(const rnn_ws *w, int64_t l, int64_t d) {
  return P(w->Cs, w, (l * w->r->D + d) * w->TN * w->r->H);
}

#include "rnn_cell.h"

/* One (layer, direction) forward over all steps. */
static void layer_fwd(const rnn_ws *w, int64_t l, int64_t d, const void *x, const void *prm,
                      const void *h0, const void *c0) {
  const lmx_cpu_rnn *r = w->r;
  int dt = r->dt;
  int64_t N = r->N, H = r->H, GH = w->GH, DH = w->DH, ind = in_dim(r, l);
  const void *in = l == 0 ? x : Yl(w, l - 1);
  const char *Wx = P(prm, w, w_ofs(r, l, d)), *Wh = P(Wx, w, GH * ind);
  const char *bx = P(prm, w, b_ofs(r, l, d)), *bh = P(bx, w, GH);
  char *G = Gld(w, l, d), *Cs = Cld(w, l, d), *Y = Yl(w, l);
  gemm_ld(dt, 0, 1, w->TN, GH, ind, in, ind, Wx, ind, 0.0, G, GH);
  for (int64_t s = 0; s < r->T; s++) {
    int64_t t = d == 0 ? s : r->T - 1 - s, tp = d == 0 ? t - 1 : t + 1;
    const char *hp = s == 0 ? P(h0, w, (l * r->D + d) * N * H) : P(Y, w, tp * N * DH + d * H);
    int64_t ldh = s == 0 ? H : DH;
    const char *cp = r->mode == LMX_RNN_LSTM
                         ? (s == 0 ? P(c0, w, (l * r->D + d) * N * H) : P(Cs, w, tp * N * H))
                         : NULL;
    gemm_ld(dt, 0, 1, N, GH, H, hp, ldh, Wh, H, 0.0, w->dHg, GH); /* hg = hp Whᵀ */
    cell_fwd(w, P(G, w, t * N * GH), w->dHg, bx, bh, hp, ldh, cp, P(Cs, w, t * N * H),
             P(Y, w, t * N * DH + d * H));
  }
}

int lmx_cpu_rnn_fwd(const lmx_cpu_rnn *r, const void *x, const void *prm, const void *h0,
                    const void *c0, void *y, void *hy, void *cy, void *ws) {
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64) return -1;
  rnn_ws w;
  ws_carve(r, ws, &w);
  for (int64_t l = 0; l < r->L; l++)
    for (int64_t d = 0; d < r->D; d++) layer_fwd(&w, l, d, x, prm, h0, c0);
  int64_t N = r->N, H = r->H;
  if (y) memcpy(y, Yl(&w, r->L - 1), (size_t)(w.TN * w.DH) * w.es);
  for (int64_t l = 0; l < r->L; l++)
    for (int64_t d = 0; d < r->D && r->T > 0; d++) {
      int64_t t = d == 0 ? r->T - 1 : 0, k = l * r->D + d;
      for (int64_t n = 0; n < N; n++) {
        if (hy) memcpy(P(hy, &w, (k * N + n) * H), P(Yl(&w, l), &w, (t * N + n) * w.DH + d * H),
                       (size_t)H * w.es);
        if (cy && r->mode == LMX_RNN_LSTM)
          memcpy(P(cy, &w, (k * N + n) * H), P(Cld(&w, l, d), &w, (t * N + n) * H),
                 (size_t)H * w.es);
      }
    }
  return 0;
}

/* Back through time for one (layer, direction); dYcur holds the gradient of this
 * layer's output; adds the input gradient into dIn (ld = ind). */
static void layer_bwd(const rnn_ws *w, const lmx_cpu_rnn_grad *gr, int64_t l, int64_t d,
                      const void *x, const void *prm, const void *h0, const void *c0,
                      const char *dYcur, void *dIn) {
  const lmx_cpu_rnn *r = w->r;
  int dt = r->dt;
  int64_t N = r->N, H = r->H, GH = w->GH, DH = w->DH, ind = in_dim(r, l), k = l * r->D + d;
  const void *in = l == 0 ? x : Yl(w, l - 1);
  const char *Wx = P(prm, w, w_ofs(r, l, d)), *Wh = P(Wx, w, GH * ind);
  char *dWx = gr->dw ? P(gr->dw, w, w_ofs(r, l, d)) : NULL, *dWh = dWx ? P(dWx, w, GH * ind) : NULL;
  char *dbx = gr->dw ? P(gr->dw, w, b_ofs(r, l, d)) : NULL, *dbh = dbx ? P(dbx, w, GH) : NULL;
  char *G = Gld(w, l, d), *Cs = Cld(w, l, d), *Y = Yl(w, l);
  memset(w->dh, 0, (size_t)(N * H) * w->es);
  memset(w->dc, 0, (size_t)(N * H) * w->es);
  if (gr->dhy) lmx_cpu_scale(dt, N * H, w->dh, P(gr->dhy, w, k * N * H), 1.0, 0);
  if (gr->dcy && r->mode == LMX_RNN_LSTM) lmx_cpu_scale(dt, N * H, w->dc, P(gr->dcy, w, k * N * H), 1.0, 0);
  for (int64_t s = r->T - 1; s >= 0; s--) {
    int64_t t = d == 0 ? s : r->T - 1 - s, tp = d == 0 ? t - 1 : t + 1;
    const char *hp = s == 0 ? P(h0, w, k * N * H) : P(Y, w, tp * N * DH + d * H);
    int64_t ldh = s == 0 ? H : DH;
    const char *cp = r->mode == LMX_RNN_LSTM
                         ? (s == 0 ? P(c0, w, k * N * H) : P(Cs, w, tp * N * H))
                         : NULL;
    cell_bwd(w, P(G, w, t * N * GH), P(Cs, w, t * N * H), hp, ldh, cp,
             P(dYcur, w, t * N * DH + d * H), P(w->dXg, w, t * N * GH));
    if (dWh) gemm_ld(dt, 1, 0, GH, H, N, w->dHg, GH, hp, ldh, 1.0, dWh, H);
    if (dbh) lmx_cpu_sum_rows(dt, N, GH, dbh, w->dHg, 1);
    /* dh <- dh_direct (left in dh by cell_bwd) + dHg · Wh */
    gemm_ld(dt, 0, 0, N, H, GH, w->dHg, GH, Wh, H, 1.0, w->dh, H);
  }
  if (gr->dh0) lmx_cpu_scale(dt, N * H, P(gr->dh0, w, k * N * H), w->dh, 1.0, 1);
  if (gr->dc0 && r->mode == LMX_RNN_LSTM) lmx_cpu_scale(dt, N * H, P(gr->dc0, w, k * N * H), w->dc, 1.0, 1);
  if (dWx) gemm_ld(dt, 1, 0, GH, ind, w->TN, w->dXg, GH, in, ind, 1.0, dWx, ind);
  if (dbx) lmx_cpu_sum_rows(dt, w->TN, GH, dbx, w->dXg, 1);
  if (dIn) gemm_ld(dt, 0, 0, w->TN, ind, GH, w->dXg, GH, Wx, ind, 1.0, dIn, ind);
}

int lmx_cpu_rnn_bwd(const lmx_cpu_rnn *r, const void *x, const void *prm, const void *h0,
                    const void *c0, const lmx_cpu_rnn_grad *gr, void *ws) {
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64) return -1;
  lmx_cpu_rnn_fwd(r, x, prm, h0, c0, NULL, NULL, NULL, ws);
  rnn_ws w;
  ws_carve(r, ws, &w);
  char *cur = w.dYa, *prev = w.dYb;
  size_t ybytes = (size_t)(w.TN * w.DH) * w.es;
  if (gr->dy) memcpy(cur, gr->dy, ybytes);
  else memset(cur, 0, ybytes);
  for (int64_t l = r->L - 1; l >= 0; l--) {
    if (l > 0) memset(prev, 0, ybytes);
    for (int64_t d = 0; d < r->D; d++)
      layer_bwd(&w, gr, l, d, x, prm, h0, c0, cur, l > 0 ? (void *)prev : gr->dx);
    char *t = cur;
    cur = prev, prev = t;
  }
  return 0;
}
