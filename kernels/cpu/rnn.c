/* rnn.c — the fused RNN operator (rnn_relu, rnn_tanh, lstm, gru): multi-layer,
 * bidirectional, MXNet's packed parameter layout, inter-layer dropout, forward and backward.
 *
 * Layout of the packed parameters (MXNet 1.9 rnn-inl.h / FusedRNNCell): for each layer,
 * for each direction, Wx (G·H, in) then Wh (G·H, H); after all weights, for each layer
 * and direction, bx (G·H) then bh (G·H). Gate order: lstm i, f, g, o; gru r, z, n.
 * Cells: lstm c = f c' + i g, h = o tanh(c); gru n = tanh(xn + r (Whn h' + bhn)),
 * h = (1 - z) n + z h'; rnn h = act(Wx x + bx + Wh h' + bh).
 *
 * Reserve (the op's hidden output, lmx_cpu_rnn_reserve elements, MXNet's reserve space):
 * what forward leaves for backward, so backward never recomputes the forward:
 *   M  (L-1, T, N, D·H)  dropout masks (0 or 1/(1-p)), filled by the caller   [r->drop]
 *   X  (L-1, T, N, D·H)  the dropped layer outputs, M ⊙ Y, input of the next layer [r->drop]
 *   Y  (L, T, N, D·H)    every layer's output sequence (undropped)
 *   G  (L·D, T, N, G·H)  gate activations; C (L·D, T, N, H) lstm cell states / gru
 *                        Whn h' + bhn
 * Dropout (MXNet's CPU RNN, rnn_impl.h): applied to the output of every layer but the
 * last, on the path into the next layer only; the recurrence, the state outputs and the
 * last layer's output see undropped values. (MXNet scales its stored layer outputs in
 * place, so its backward reads dropped values as h' for dWh; here the recurrence's h'
 * stays the undropped one, which is the gradient of what forward computed.)
 *
 * Forward, per (layer, direction): the input projections of all steps as one GEMM
 * (T·N rows), then one GEMM (N rows) and one vectorised cell per step. Backward, per
 * (layer, direction): one cell and one recurrent GEMM per step; dWh, dWx, the biases and
 * the input gradient are one GEMM / reduction each over all steps. Workspace
 * (lmx_cpu_rnn_ws elements): two (T, N, D·H) gradient sequences, the gate gradients of
 * all steps (two copies for gru, whose recurrent gate gradient differs), one step's
 * recurrent projection and the carried dh / dc.
 */
#include <math.h>
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_math.h"
#include "cpu_par.h"

/* C[m,n] = op(A) op(B) + beta C with leading dimensions (row-major), through gemm.c's
 * router (oneDNN or OpenBLAS by shape, the one-thread rule for small products). */
static void gemm_ld(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  lmx_cpu_gemm_ld(dt, ta, tb, m, n, k, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* out[n] = a[n] m[n] (out may be a). */
static void mul_mask(int dt, int64_t n, void *out, const void *a, const void *m) {
  if (dt == LMX_FLOAT32) {
    float *o = out;
    const float *x = a, *k = m;
    for (int64_t i = 0; i < n; i++) o[i] = x[i] * k[i];
  } else {
    double *o = out;
    const double *x = a, *k = m;
    for (int64_t i = 0; i < n; i++) o[i] = x[i] * k[i];
  }
}

typedef struct {
  const lmx_cpu_rnn *r;
  size_t es;
  int64_t GH, DH, TN, Lm; /* Lm: layers with a dropout mask (L-1 or 0) */
  char *M, *X, *Y, *Gs, *Cs;             /* reserve */
  char *dA, *dB, *dXg, *dHs, *hg, *dh, *dc; /* workspace */
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

static int64_t drop_layers(const lmx_cpu_rnn *r) { return r->drop && r->L > 1 ? r->L - 1 : 0; }

int64_t lmx_cpu_rnn_reserve(const lmx_cpu_rnn *r) {
  int64_t TN = r->T * r->N, DH = r->D * r->H;
  return 2 * drop_layers(r) * TN * DH + r->L * TN * DH + r->L * r->D * TN * (r->G + 1) * r->H;
}

size_t lmx_cpu_rnn_ws(const lmx_cpu_rnn *r) {
  int64_t TN = r->T * r->N, GH = r->G * r->H, DH = r->D * r->H;
  int64_t e = 2 * TN * DH + (r->mode == LMX_RNN_GRU ? 2 : 1) * TN * GH + r->N * GH +
              2 * r->N * r->H;
  return (size_t)e;
}

static void carve(const lmx_cpu_rnn *r, void *rs, void *ws, rnn_ws *w) {
  w->r = r, w->es = (size_t)lmx_dtype_size(r->dt);
  w->GH = r->G * r->H, w->DH = r->D * r->H, w->TN = r->T * r->N, w->Lm = drop_layers(r);
  char *p = rs;
  w->M = p, p = P(p, w, w->Lm * w->TN * w->DH);
  w->X = p, p = P(p, w, w->Lm * w->TN * w->DH);
  w->Y = p, p = P(p, w, r->L * w->TN * w->DH);
  w->Gs = p, p = P(p, w, r->L * r->D * w->TN * w->GH);
  w->Cs = p;
  p = ws;
  w->dA = p, p = P(p, w, w->TN * w->DH);
  w->dB = p, p = P(p, w, w->TN * w->DH);
  w->dXg = p, p = P(p, w, w->TN * w->GH);
  w->dHs = w->dXg; /* lstm / rnn: the recurrent gate gradient is the input one */
  if (r->mode == LMX_RNN_GRU) w->dHs = p, p = P(p, w, w->TN * w->GH);
  w->hg = p, p = P(p, w, r->N * w->GH);
  w->dh = p, p = P(p, w, r->N * r->H);
  w->dc = p;
}

static char *Yl(const rnn_ws *w, int64_t l) { return P(w->Y, w, l * w->TN * w->DH); }
static char *Gld(const rnn_ws *w, int64_t l, int64_t d) {
  return P(w->Gs, w, (l * w->r->D + d) * w->TN * w->GH);
}
static char *Cld(const rnn_ws *w, int64_t l, int64_t d) {
  return P(w->Cs, w, (l * w->r->D + d) * w->TN * w->r->H);
}
/* The input sequence of layer l: x, or the (dropped) output of layer l - 1. */
static const char *layer_in(const rnn_ws *w, int64_t l, const void *x) {
  if (l == 0) return x;
  return w->Lm ? P(w->X, w, (l - 1) * w->TN * w->DH) : Yl(w, l - 1);
}

#include "rnn_cell.h"

/* One (layer, direction) forward over all steps. */
static void layer_fwd(const rnn_ws *w, int64_t l, int64_t d, const void *x, const void *prm,
                      const void *h0, const void *c0) {
  const lmx_cpu_rnn *r = w->r;
  int dt = r->dt;
  int64_t N = r->N, H = r->H, GH = w->GH, DH = w->DH, ind = in_dim(r, l), k = l * r->D + d;
  const char *Wx = P(prm, w, w_ofs(r, l, d)), *Wh = P(Wx, w, GH * ind);
  const char *bx = P(prm, w, b_ofs(r, l, d)), *bh = P(bx, w, GH);
  char *G = Gld(w, l, d), *Cs = Cld(w, l, d), *Y = Yl(w, l);
  gemm_ld(dt, 0, 1, w->TN, GH, ind, layer_in(w, l, x), ind, Wx, ind, 0.0, G, GH);
  for (int64_t s = 0; s < r->T; s++) {
    int64_t t = d == 0 ? s : r->T - 1 - s, tp = d == 0 ? t - 1 : t + 1;
    const char *hp = s == 0 ? P(h0, w, k * N * H) : P(Y, w, tp * N * DH + d * H);
    int64_t ldh = s == 0 ? H : DH;
    const char *cp = s == 0 ? (c0 ? P(c0, w, k * N * H) : NULL) : P(Cs, w, tp * N * H);
    gemm_ld(dt, 0, 1, N, GH, H, hp, ldh, Wh, H, 0.0, w->hg, GH); /* hg = h' Whᵀ */
    cell_fwd(w, P(G, w, t * N * GH), w->hg, bx, bh, hp, ldh, cp, P(Cs, w, t * N * H),
             P(Y, w, t * N * DH + d * H));
  }
}

int lmx_cpu_rnn_fwd(const lmx_cpu_rnn *r, const void *x, const void *prm, const void *h0,
                    const void *c0, void *y, void *hy, void *cy, void *rs, void *ws) {
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64) return -1;
  rnn_ws w;
  carve(r, rs, ws, &w);
  int64_t N = r->N, H = r->H, n = w.TN * w.DH;
  for (int64_t l = 0; l < r->L; l++) {
    for (int64_t d = 0; d < r->D; d++) layer_fwd(&w, l, d, x, prm, h0, c0);
    if (l < w.Lm) /* X = M ⊙ Y: the dropped output feeds layer l + 1 */
      mul_mask(r->dt, n, P(w.X, &w, l * n), Yl(&w, l), P(w.M, &w, l * n));
  }
  if (y) memcpy(y, Yl(&w, r->L - 1), (size_t)n * w.es);
  for (int64_t l = 0; l < r->L; l++)
    for (int64_t d = 0; d < r->D && r->T > 0; d++) {
      int64_t t = d == 0 ? r->T - 1 : 0, k = l * r->D + d;
      for (int64_t b = 0; b < N; b++) {
        if (hy) memcpy(P(hy, &w, (k * N + b) * H), P(Yl(&w, l), &w, (t * N + b) * w.DH + d * H),
                       (size_t)H * w.es);
        if (cy && r->mode == LMX_RNN_LSTM)
          memcpy(P(cy, &w, (k * N + b) * H), P(Cld(&w, l, d), &w, (t * N + b) * H),
                 (size_t)H * w.es);
      }
    }
  return 0;
}

/* Back through time for one (layer, direction); dY holds the gradient of this layer's
 * output (T, N, D·H); writes (d == 0, beta 0) or adds (d == 1, or acc_in) the gradient
 * of the layer's input into dIn (T, N, ind). */
static void layer_bwd(const rnn_ws *w, const lmx_cpu_rnn_grad *gr, int64_t l, int64_t d,
                      const void *x, const void *prm, const void *h0, const void *c0,
                      const char *dY, void *dIn, int acc_in) {
  const lmx_cpu_rnn *r = w->r;
  int dt = r->dt, gru = r->mode == LMX_RNN_GRU;
  int64_t N = r->N, H = r->H, T = r->T, GH = w->GH, DH = w->DH, ind = in_dim(r, l);
  int64_t k = l * r->D + d;
  const char *in = layer_in(w, l, x);
  const char *Wx = P(prm, w, w_ofs(r, l, d)), *Wh = P(Wx, w, GH * ind);
  char *dWx = gr->dw ? P(gr->dw, w, w_ofs(r, l, d)) : NULL, *dWh = dWx ? P(dWx, w, GH * ind) : NULL;
  char *dbx = gr->dw ? P(gr->dw, w, b_ofs(r, l, d)) : NULL, *dbh = dbx ? P(dbx, w, GH) : NULL;
  char *G = Gld(w, l, d), *Cs = Cld(w, l, d), *Y = Yl(w, l);
  const char *hx = P(h0, w, k * N * H);
  if (gr->dhy) memcpy(w->dh, P(gr->dhy, w, k * N * H), (size_t)(N * H) * w->es);
  else memset(w->dh, 0, (size_t)(N * H) * w->es);
  if (gr->dcy && r->mode == LMX_RNN_LSTM) memcpy(w->dc, P(gr->dcy, w, k * N * H), (size_t)(N * H) * w->es);
  else memset(w->dc, 0, (size_t)(N * H) * w->es);
  for (int64_t s = T - 1; s >= 0; s--) {
    int64_t t = d == 0 ? s : T - 1 - s, tp = d == 0 ? t - 1 : t + 1;
    const char *hp = s == 0 ? hx : P(Y, w, tp * N * DH + d * H);
    int64_t ldh = s == 0 ? H : DH;
    const char *cp = r->mode != LMX_RNN_LSTM ? NULL
                     : s == 0 ? P(c0, w, k * N * H) : P(Cs, w, tp * N * H);
    cell_bwd(w, P(G, w, t * N * GH), P(Cs, w, t * N * H), hp, ldh, cp,
             P(dY, w, t * N * DH + d * H), P(w->dXg, w, t * N * GH), P(w->dHs, w, t * N * GH));
    /* dh' = (gru: z ⊙ dh, left by the cell) + dHs_t · Wh */
    gemm_ld(dt, 0, 0, N, H, GH, P(w->dHs, w, t * N * GH), GH, Wh, H, gru ? 1.0 : 0.0, w->dh, H);
  }
  if (gr->dh0) lmx_cpu_scale(dt, N * H, P(gr->dh0, w, k * N * H), w->dh, 1.0, 1);
  if (gr->dc0 && r->mode == LMX_RNN_LSTM) lmx_cpu_scale(dt, N * H, P(gr->dc0, w, k * N * H), w->dc, 1.0, 1);
  if (dWh && T > 0) {
    /* dWh += Σ_t dHs_tᵀ h'_t: h' is the layer's own output one step earlier (in the
     * direction's order), h0 at the first step; one GEMM over the T-1 inner steps. */
    int64_t t0 = d == 0 ? 0 : T - 1, a0 = d == 0 ? 1 : 0, y0 = d == 0 ? 0 : 1;
    gemm_ld(dt, 1, 0, GH, H, (T - 1) * N, P(w->dHs, w, a0 * N * GH), GH,
            P(Y, w, y0 * N * DH + d * H), DH, 1.0, dWh, H);
    gemm_ld(dt, 1, 0, GH, H, N, P(w->dHs, w, t0 * N * GH), GH, hx, H, 1.0, dWh, H);
  }
  if (dbh) lmx_cpu_sum_rows(dt, w->TN, GH, dbh, w->dHs, 1);
  if (dWx) gemm_ld(dt, 1, 0, GH, ind, w->TN, w->dXg, GH, in, ind, 1.0, dWx, ind);
  if (dbx) lmx_cpu_sum_rows(dt, w->TN, GH, dbx, w->dXg, 1);
  if (dIn) gemm_ld(dt, 0, 0, w->TN, ind, GH, w->dXg, GH, Wx, ind, acc_in ? 1.0 : 0.0, dIn, ind);
}

int lmx_cpu_rnn_bwd(const lmx_cpu_rnn *r, const void *x, const void *prm, const void *h0,
                    const void *c0, const void *rs, const lmx_cpu_rnn_grad *gr, void *ws) {
  if (r->dt != LMX_FLOAT32 && r->dt != LMX_FLOAT64) return -1;
  rnn_ws w;
  carve(r, (void *)rs, ws, &w);
  int64_t n = w.TN * w.DH;
  const char *cur = gr->dy;
  if (!cur) memset(w.dA, 0, (size_t)n * w.es), cur = w.dA;
  for (int64_t l = r->L - 1; l >= 0; l--) {
    char *next = cur == w.dA ? w.dB : w.dA; /* gradient of layer l's input (l > 0) */
    for (int64_t d = 0; d < r->D; d++)
      layer_bwd(&w, gr, l, d, x, prm, h0, c0, cur, l > 0 ? (void *)next : gr->dx,
                l == 0 || d > 0);
    if (l == 0) break;
    if (l - 1 < w.Lm) /* through the dropout: the mask of layer l - 1's output */
      mul_mask(r->dt, n, next, next, P(w.M, &w, (l - 1) * n));
    cur = next;
  }
  return 0;
}
