/* fc_smo.c — the backward of FullyConnected whose output feeds only SoftmaxOutput, in one
 * kernel (the executor fuses the two backward steps: src/exec/fuse.c).
 *
 * Unfused, SoftmaxOutput writes G = (p - onehot(label)) · scale, an [m, n] array (W3's
 * 10000-class output at batch 32 x 60 steps: 77 MB, far past the caches), and
 * FullyConnected reads it back three times: the bias gradient (a column sum), dW = Gᵀ x
 * and dx = G w, each GEMM packing G again. Here G is made one block of columns at a
 * time into a scratch of m x COLS floats, and the three gradients take their
 * share of that block while it is in cache: db[c] (+)= column sums, dW[c, :] (+)= G_cᵀ x,
 * dx (+)= G_c w[c, :] (accumulated over the blocks). p is read once; G never reaches
 * memory. The gradient of one element is the SoftmaxOutput formula of nn.c (label
 * smoothing, use_ignore, labels outside [0, n) give no -1); the column sums add rows in
 * order, as lmx_cpu_sum_rows does. float32 only (the executor fuses nothing else).
 */
#include "cpu_kernels.h"
#include "cpu_par.h"

#include "../../src/tensor/dtype.h"

/* Columns of G per block: a block of W3's 1920 rows is 1.9 MB, in L2 + L3 while the three
 * consumers read it; 128 and 1024 measured slower on W3a (one thread, CPU time). */
enum { COLS = 256 };
/* The block's rows of p are fetched this many rows ahead (a block row is 1 KB, one
 * row of p apart from the next: 3.3 % of W3a's time went to waiting for them). */
enum { FETCH_AHEAD = 4 };

/* G block: g[r, j] for columns c0 .. c0 + w of rows r < m (row stride w). */
LMX_SIMD_CLONES
static void grad_block(const lmx_cpu_fc_smo *a, int64_t c0, int64_t w, float *g) {
  float on = (float)(1.0 - a->alpha);
  float off = (float)(a->n > 1 ? a->alpha / (double)(a->n - 1) : 0.0), sc = (float)a->scale;
  LMX_PAR_FOR_W(a->m, w, r, {
    const float *pr = a->p + r * a->n + c0;
    float *gr = g + r * w;
    if (r + FETCH_AHEAD < a->m) /* rows are n floats apart: the prefetchers miss them */
      for (int64_t j = 0; j < w; j += 16) __builtin_prefetch(pr + FETCH_AHEAD * a->n + j);
    int64_t lab = (int64_t)a->label[r] - c0;
    if (a->use_ignore && (int64_t)a->label[r] == (int64_t)a->ignore) {
      for (int64_t j = 0; j < w; j++) gr[j] = 0;
    } else {
      for (int64_t j = 0; j < w; j++) gr[j] = (pr[j] - off) * sc;
      if (lab >= 0 && lab < w) gr[lab] = (pr[lab] - on) * sc;
    }
  });
}

/* db[j] (+)= Σ_r g[r, j], rows in order; columns split between threads. */
LMX_SIMD_CLONES
static void col_sums(int64_t m, int64_t w, const float *g, float *db, int acc) {
  enum { CH = 32 };
  int64_t nch = (w + CH - 1) / CH;
  LMX_PAR_FOR_W(nch, m * CH, t, {
    int64_t j0 = t * CH, nj = w - j0 < CH ? w - j0 : CH;
    float s[CH];
    for (int64_t j = 0; j < nj; j++) s[j] = acc ? db[j0 + j] : 0.0f;
    for (int64_t r = 0; r < m; r++)
      for (int64_t j = 0; j < nj; j++) s[j] += g[r * w + j0 + j];
    for (int64_t j = 0; j < nj; j++) db[j0 + j] = s[j];
  });
}

void lmx_cpu_fc_smo_bwd(const lmx_cpu_fc_smo *a) {
  int64_t m = a->m, k = a->k, n = a->n;
  for (int64_t c0 = 0; c0 < n; c0 += COLS) {
    int64_t w = n - c0 < COLS ? n - c0 : COLS;
    float *g = a->scratch;
    grad_block(a, c0, w, g);
    if (a->db) col_sums(m, w, g, a->db + c0, a->acc_db);
    if (a->dw && k > 0)
      lmx_cpu_gemm_ld(LMX_FLOAT32, 1, 0, w, k, m, 1.0, g, w, a->x, k, a->acc_dw ? 1.0 : 0.0,
                      a->dw + c0 * k, k);
    if (a->dx && k > 0)
      lmx_cpu_gemm_ld(LMX_FLOAT32, 0, 0, m, k, w, 1.0, g, w, a->w + c0 * k, k,
                      c0 > 0 || a->acc_dx ? 1.0 : 0.0, a->dx, k);
  }
  if (n == 0 && a->dx && !a->acc_dx) lmx_cpu_fill(a->dx, LMX_FLOAT32, m * k, 0.0);
}
